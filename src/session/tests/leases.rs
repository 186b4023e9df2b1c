//! Leases (a task store shared by replicas): a replica polls only the tasks whose lease it
//! holds, and only while its leases hold; a task another replica polls is followed here for
//! its callers, its outcome taken from the store; a lost lease stops the polls, a taken-over
//! one starts them.

use super::*;
use crate::session::{LeaseTend, Restored};
use crate::tasks::{TaskHandle, TaskStatus};

const MS: Duration = Duration::from_millis(1);

fn leased_session() -> Harness {
    let mut h = Harness::new(&modern_http(), settings());
    h.connect_modern(Duration::from_secs(3600));
    h.session.lease_tasks();
    h
}

fn created(id: &str) -> Value {
    json!({"resultType": "task", "taskId": id, "status": "working", "ttlMs": 600000,
           "pollIntervalMs": 100})
}

fn polled(id: &str, status: &str) -> Value {
    let mut polled = json!({"resultType": "complete", "taskId": id, "status": status,
                            "ttlMs": 600000, "pollIntervalMs": 100});
    if status == "completed" {
        polled["result"] = json!({"content": [{"type": "text", "text": "done"}]});
    }
    polled
}

fn polls(h: &Harness) -> Vec<Value> {
    h.written()
        .into_iter()
        .filter(|m| m["method"] == "tasks/get")
        .collect()
}

impl Harness {
    /// The driver tended the leases: `tend`, with the leases held for `hold` from now.
    fn tend(&mut self, hold: Option<Duration>, mut tend: LeaseTend) {
        tend.hold_until = hold.map(|hold| self.now + hold);
        self.session.leases_tended(tend, self.now);
        self.drive();
    }

    /// A `tools/call` the server answers with task `id`: its caller's answer. A caller that
    /// does not `wait` is answered with the task's handle at once (`StartTask`).
    fn start_job(&mut self, id: &str, wait: bool) -> Rc<Answer> {
        let mut request = tool("job");
        request.options.start_task = !wait;
        let answer = self.call(request);
        let sent = self.written();
        self.answer(&sent[0], created(id));
        answer
    }
}

#[test]
fn no_poll_goes_out_before_the_leases_are_renewed_nor_once_they_may_have_lapsed() {
    let mut h = leased_session();
    let answer = h.start_job("t-1", true);
    h.advance(300 * MS);
    assert!(polls(&h).is_empty(), "not renewed yet: not polled");
    let status = h.session.status(h.now);
    assert_eq!(status.task_leases_hold_for, Some(Duration::ZERO));
    h.tend(Some(Duration::from_secs(1)), LeaseTend::default());
    let lapse = h.now + Duration::from_secs(1);
    assert_eq!(
        h.session.status(h.now).task_leases_hold_for,
        Some(Duration::from_secs(1))
    );
    h.advance(10 * MS);
    let poll = polls(&h);
    assert_eq!(poll.len(), 1, "due, and the leases hold");
    h.answer(&poll[0], polled("t-1", "working"));
    // No renewal answers (the database is down): the polls stop before the leases lapse.
    h.tend(None, LeaseTend::default());
    let (mut sent, mut last) = (0, None);
    for _ in 0..30 {
        h.advance(100 * MS);
        for poll in polls(&h) {
            (sent, last) = (sent + 1, Some(h.now));
            h.answer(&poll, polled("t-1", "working"));
        }
    }
    assert!(sent >= 2, "polled while the leases hold: {sent}");
    // (Seen at the end of the step of the loop they went out in.)
    assert!(
        last.is_some_and(|at| at <= lapse + 100 * MS),
        "and never after: the last at {:?} past the lapse",
        last.map(|at| at.saturating_duration_since(lapse))
    );
    assert_eq!(
        h.session.status(h.now).task_leases_hold_for,
        Some(Duration::ZERO)
    );
    assert!(answer.take().is_none(), "the caller still waits");
    h.tend(Some(Duration::from_secs(1)), LeaseTend::default());
    h.advance(MS);
    let poll = polls(&h);
    assert_eq!(poll.len(), 1, "renewed: polled again at once");
    h.answer(&poll[0], polled("t-1", "completed"));
    assert!(matches!(answer.take(), Some(Ok(_))));
}

#[test]
fn a_task_another_replica_polls_is_awaited_here_and_its_outcome_taken_from_the_store() {
    let mut h = leased_session();
    h.elsewhere = true;
    h.tend(Some(Duration::from_secs(60)), LeaseTend::default());
    let waiter = Rc::new(Answer::default());
    let handle = TaskHandle::new("demo", "t-9", "job", std::time::SystemTime::now());
    h.session.await_task(handle, None, waiter.clone(), h.now);
    h.drive();
    h.advance(Duration::from_secs(2));
    assert!(polls(&h).is_empty(), "another replica polls it");
    let infos = h.session.task_infos(h.now);
    assert!(infos[0].elsewhere, "{infos:?}");
    assert_eq!(h.session.tasks_followed_elsewhere(), vec!["t-9".to_owned()]);
    assert!(h.session.tasks_polled_here().is_empty());
    let persisted = h.persisted.len();
    h.tend(
        Some(Duration::from_secs(60)),
        LeaseTend {
            ended: vec![("t-9".into(), Ok(json!({"content": []})))],
            ..LeaseTend::default()
        },
    );
    assert_eq!(waiter.take().unwrap().unwrap(), json!({"content": []}));
    assert_eq!(
        h.persisted[persisted..],
        [TaskWrite::Delivered {
            task_id: "t-9".into()
        }],
        "taken from the store once; its end was recorded there already"
    );
}

#[test]
fn a_lost_lease_stops_the_polls_and_a_task_taken_over_is_polled() {
    let mut h = leased_session();
    h.tend(Some(Duration::from_secs(60)), LeaseTend::default());
    let answer = h.start_job("t-1", true);
    let started = h.start_job("t-2", false);
    assert!(
        matches!(started.take(), Some(Ok(_))),
        "answered with its handle"
    );
    h.advance(150 * MS);
    for poll in polls(&h) {
        let id = poll["params"]["taskId"].as_str().unwrap().to_owned();
        h.answer(&poll, polled(&id, "working"));
    }
    let mut here = h.session.tasks_polled_here();
    here.sort();
    assert_eq!(here, ["t-1", "t-2"]);
    // Another replica took both over (this one was stalled past its leases).
    h.tend(
        Some(Duration::from_secs(60)),
        LeaseTend {
            lost: vec!["t-1".into(), "t-2".into()],
            ..LeaseTend::default()
        },
    );
    h.advance(Duration::from_secs(1));
    assert!(polls(&h).is_empty(), "polled elsewhere now");
    assert_eq!(
        h.session.tasks_followed_elsewhere(),
        vec!["t-1".to_owned()],
        "t-2, which nobody here waits for, is forgotten"
    );
    // That replica died in turn: this one takes t-1 back.
    let handle = TaskHandle::new("demo", "t-1", "job", std::time::SystemTime::now());
    h.tend(
        Some(Duration::from_secs(60)),
        LeaseTend {
            taken: vec![Restored::Running {
                handle,
                status: TaskStatus::Working,
                poll_interval: Some(Duration::from_millis(100)),
                answered: Default::default(),
            }],
            ..LeaseTend::default()
        },
    );
    h.advance(MS);
    let poll = polls(&h);
    assert_eq!(poll.len(), 1, "{poll:?}");
    assert_eq!(poll[0]["params"]["taskId"], "t-1");
    h.answer(&poll[0], polled("t-1", "completed"));
    assert!(
        matches!(answer.take(), Some(Ok(_))),
        "its caller here gets it"
    );
}

#[test]
fn a_task_the_shared_store_cannot_record_is_answered_at_once_not_at_the_deadline() {
    let mut h = leased_session();
    h.tend(Some(Duration::from_secs(60)), LeaseTend::default());
    h.unrecorded = true;
    let waiting = h.start_job("t-1", true);
    let started = h.start_job("t-2", false);
    for answer in [waiting, started] {
        let Some(Err(error)) = answer.take() else {
            panic!("answered at once, with an error")
        };
        assert_eq!(error.kind(), ErrorKind::OutcomeUnknown, "{error}");
        assert!(error.to_string().contains("could not record"), "{error}");
    }
    h.advance(Duration::from_secs(2));
    assert!(polls(&h).is_empty(), "not followed");
    assert!(h.session.task_infos(h.now).is_empty());
    // A call that needs no store goes on as ever.
    let echo = h.call(tool("echo"));
    let sent = h.written();
    h.answer(&sent[0], json!({"content": []}));
    assert!(matches!(echo.take(), Some(Ok(_))));
}

#[test]
fn a_poll_whose_timer_fires_after_the_leases_lapsed_is_not_sent() {
    // The actor was busy (a renewal that blocked on the database) past the leases' end: the
    // poll that was due before it does not go out late.
    let mut h = leased_session();
    h.tend(Some(Duration::from_secs(1)), LeaseTend::default());
    let _answer = h.start_job("t-1", true);
    let due = h.session.poll_timeout().expect("a poll is planned");
    assert!(due < h.now + Duration::from_secs(1));
    h.now += Duration::from_secs(3);
    h.session.handle_timeout(h.now);
    h.drive();
    assert!(polls(&h).is_empty(), "sent after the leases' end");
    h.tend(Some(Duration::from_secs(1)), LeaseTend::default());
    h.advance(MS);
    assert_eq!(polls(&h).len(), 1, "renewed: sent");
}
