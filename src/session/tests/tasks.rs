//! Tasks (the Tasks extension of 2026-07-28): a `tools/call` the server answers with a task is
//! answered with the task's end, polled as often as the server asks; input is asked once per
//! key; a deadline that passes leaves the task running and names it; a task the server forgot
//! is an unknown outcome.

use super::*;
use crate::protocol::tasks::EXTENSION;
use crate::session::testing::Options;
use crate::tasks::TaskHandle;
use crate::tasks::TaskStatus;

const HOUR: Duration = Duration::from_secs(3600);
const MS: Duration = Duration::from_millis(1);

fn modern_session(settings: Settings) -> Harness {
    let mut h = Harness::new(&modern_http(), settings);
    h.connect_modern(HOUR);
    h
}

fn task(id: &str, status: &str, interval_ms: u64) -> Value {
    json!({"taskId": id, "status": status, "ttlMs": 600000, "pollIntervalMs": interval_ms,
           "createdAt": "2026-12-02T10:00:00Z", "lastUpdatedAt": "2026-12-02T10:00:00Z"})
}

fn created(id: &str, interval_ms: u64) -> Value {
    let mut created = task(id, "working", interval_ms);
    created["resultType"] = json!("task");
    created
}

fn polled(id: &str, status: &str, interval_ms: u64) -> Value {
    let mut polled = task(id, status, interval_ms);
    polled["resultType"] = json!("complete");
    polled
}

/// The requests of `method` among `written`.
fn of<'a>(written: &'a [Value], method: &str) -> Vec<&'a Value> {
    written.iter().filter(|m| m["method"] == method).collect()
}

#[test]
fn a_task_is_polled_as_the_server_asks_until_it_completes_and_the_caller_gets_the_result() {
    let mut h = modern_session(settings());
    let answer = h.call(tool("job"));
    let sent = h.written();
    let declared = &sent[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert_eq!(declared["extensions"][EXTENSION], json!({}), "{}", sent[0]);
    h.answer(&sent[0], created("t-1", 500));
    assert!(answer.take().is_none(), "the task runs");
    h.advance(499 * MS);
    assert!(
        h.written().is_empty(),
        "not polled before the interval asked for"
    );
    h.advance(51 * MS);
    let poll = h.written();
    assert_eq!(poll.len(), 1, "{poll:?}");
    assert_eq!(poll[0]["method"], "tasks/get");
    assert_eq!(poll[0]["params"]["taskId"], "t-1");
    h.answer(&poll[0], polled("t-1", "working", 500));
    h.advance(550 * MS);
    let poll = h.written();
    let mut done = polled("t-1", "completed", 500);
    done["result"] = json!({"content": [{"type": "text", "text": "done"}], "isError": false});
    h.answer(&poll[0], done);
    let result = answer.take().expect("answered").expect("the tool's result");
    assert_eq!(result["content"][0]["text"], "done");
    h.advance(Duration::from_secs(5));
    assert!(
        of(&h.written(), "tasks/get").is_empty(),
        "an ended task is not polled"
    );
    assert_eq!(h.counters().calls_ok, 1 + 2, "the call and its two polls");
}

#[test]
fn a_tool_error_a_failure_and_a_cancellation_each_reach_the_caller_as_what_they_are() {
    let mut h = modern_session(settings());
    let ends = [
        (
            "completed",
            json!({"result": {"content": [], "isError": true}}),
        ),
        (
            "failed",
            json!({"error": {"code": -32603, "message": "the job failed"}}),
        ),
        (
            "cancelled",
            json!({"statusMessage": "stopped by the operator"}),
        ),
    ];
    for (status, extra) in ends {
        let answer = h.call(tool("job"));
        let sent = h.written();
        h.answer(&sent[0], created(status, 100));
        h.advance(120 * MS);
        let poll = h.written();
        let mut end = polled(status, status, 100);
        for (k, v) in extra.as_object().unwrap() {
            end[k] = v.clone();
        }
        h.answer(&poll[0], end);
        match (status, answer.take().expect("answered")) {
            ("completed", Ok(result)) => assert_eq!(result["isError"], true),
            ("failed", Err(e)) => {
                assert_eq!(e.kind(), ErrorKind::Rpc);
                assert!(e.to_string().contains("the job failed"), "{e}");
            }
            ("cancelled", Err(e)) => {
                assert_eq!(e.kind(), ErrorKind::Cancelled);
                assert!(e.to_string().contains("stopped by the operator"), "{e}");
            }
            (status, other) => panic!("{status}: {other:?}"),
        }
    }
}

#[test]
fn a_task_for_a_method_that_has_none_is_an_invalid_response() {
    let mut h = modern_session(settings());
    let answer = h.call(call("prompts/get", Some(json!({"name": "p"}))));
    let sent = h.written();
    h.answer(&sent[0], created("t", 100));
    assert_eq!(kind(&answer), Some(ErrorKind::InvalidResponse));
    h.advance(Duration::from_secs(1));
    assert!(of(&h.written(), "tasks/get").is_empty());
}

#[test]
fn with_tasks_turned_off_the_extension_is_not_declared() {
    let mut h = modern_session(Settings {
        tasks: false,
        ..settings()
    });
    h.call(tool("job"));
    let sent = h.written();
    let declared = &sent[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert!(declared.get("extensions").is_none(), "{}", sent[0]);
}

#[test]
fn input_is_asked_once_per_key_and_answered_with_tasks_update() {
    let mut h = modern_session(settings());
    let answer = h.call(tool("job"));
    let sent = h.written();
    h.answer(&sent[0], created("t", 100));
    let mut asking = polled("t", "input_required", 100);
    asking["inputRequests"] = json!({"confirm": {"method": "elicitation/create",
                                                 "params": {"message": "go on?"}}});
    h.advance(120 * MS);
    let poll = h.written();
    h.answer(&poll[0], asking.clone());
    let Some(Command::AskInput(ask)) = h.other.pop() else {
        panic!("the application is asked: {:?}", h.other)
    };
    assert_eq!(ask.requests.len(), 1);
    // The next poll, before the application answered, shows the same key: not asked again.
    h.advance(120 * MS);
    let poll = h.written();
    h.answer(&poll[0], asking.clone());
    assert!(h.other.is_empty(), "asked twice: {:?}", h.other);
    let answered = vec![(
        "confirm".to_owned(),
        "elicitation/create".to_owned(),
        Ok(json!({"action": "accept", "content": {"ok": true}})),
    )];
    h.session
        .input_answered(ask, InputAnswers::Answered(answered), h.now);
    h.drive();
    let update = h.written();
    assert_eq!(update.len(), 1, "{update:?}");
    assert_eq!(update[0]["method"], "tasks/update");
    assert_eq!(update[0]["params"]["taskId"], "t");
    assert_eq!(
        update[0]["params"]["inputResponses"]["confirm"]["content"]["ok"],
        true
    );
    h.answer(&update[0], json!({"resultType": "complete"}));
    // A poll that still shows the key (the server is eventually consistent): not answered
    // again.
    h.advance(120 * MS);
    let poll = h.written();
    h.answer(&poll[0], asking);
    assert!(h.other.is_empty(), "answered twice: {:?}", h.other);
    h.advance(120 * MS);
    let poll = h.written();
    let mut done = polled("t", "completed", 100);
    done["result"] = json!({"content": []});
    h.answer(&poll[0], done);
    assert!(matches!(answer.take(), Some(Ok(_))));
}

#[test]
fn input_nobody_can_answer_ends_the_wait_with_why() {
    let mut h = modern_session(settings());
    let answer = h.call(tool("job"));
    let sent = h.written();
    h.answer(&sent[0], created("t", 100));
    h.advance(120 * MS);
    let poll = h.written();
    let mut asking = polled("t", "input_required", 100);
    asking["inputRequests"] = json!({"confirm": {"method": "elicitation/create"}});
    h.answer(&poll[0], asking);
    let Some(Command::AskInput(ask)) = h.other.pop() else {
        panic!("asked")
    };
    h.session
        .input_answered(ask, InputAnswers::NoHandler, h.now);
    h.drive();
    let Some(Err(error)) = answer.take() else {
        panic!("answered with an error")
    };
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(error.to_string().contains("for task t"), "{error}");
}

#[test]
fn a_deadline_that_passes_while_the_task_runs_names_the_task_and_cancels_nothing() {
    let mut h = modern_session(settings());
    let answer = h.call(tool("job").timeout(Duration::from_secs(2)));
    let sent = h.written();
    h.answer(&sent[0], created("t-9", 500));
    h.advance(Duration::from_millis(2100));
    let Some(Err(error)) = answer.take() else {
        panic!("answered with an error")
    };
    assert_eq!(error.kind(), ErrorKind::Timeout);
    let handle = error.task().expect("the task is named");
    assert_eq!(
        (handle.task_id.as_str(), handle.tool.as_str()),
        ("t-9", "job")
    );
    assert_eq!(handle.ttl, Some(Duration::from_secs(600)));
    let written = h.written();
    assert!(of(&written, "tasks/cancel").is_empty(), "{written:?}");
    assert!(
        of(&written, "notifications/cancelled").is_empty(),
        "{written:?}"
    );
    // The task runs on, and is still polled.
    assert!(!of(&written, "tasks/get").is_empty(), "{written:?}");
}

#[test]
fn polls_go_on_over_the_next_connection() {
    let mut h = modern_session(settings());
    let answer = h.call(tool("job"));
    let sent = h.written();
    h.answer(&sent[0], created("t", 200));
    h.lose("the server restarted");
    h.reconnect(Era::Modern);
    h.advance(Duration::from_millis(500));
    let polls: Vec<Value> = of(&h.written(), "tasks/get").into_iter().cloned().collect();
    assert!(!polls.is_empty(), "polled on the new connection");
    let mut done = polled("t", "completed", 200);
    done["result"] = json!({"content": []});
    h.answer(polls.last().unwrap(), done);
    assert!(matches!(answer.take(), Some(Ok(_))));
}

#[test]
fn a_task_the_server_no_longer_knows_is_an_unknown_outcome() {
    let mut h = modern_session(settings());
    let answer = h.call(tool("job"));
    let sent = h.written();
    h.answer(&sent[0], created("t", 100));
    h.advance(120 * MS);
    let poll = h.written();
    h.send(json!({"jsonrpc": "2.0", "id": poll[0]["id"],
                  "error": {"code": -32602, "message": "Failed to retrieve task: Task not found"}}));
    let Some(Err(error)) = answer.take() else {
        panic!("answered with an error")
    };
    assert_eq!(error.kind(), ErrorKind::OutcomeUnknown);
    assert!(error.to_string().contains("task `t`"), "{error}");
    assert!(error.to_string().contains("Task not found"), "{error}");
    h.advance(Duration::from_secs(5));
    assert!(of(&h.written(), "tasks/get").is_empty(), "not polled again");
}

#[test]
fn polls_keep_to_the_servers_interval_within_the_floor_and_the_ceiling() {
    let floor = Duration::from_millis(300);
    let ceiling = Duration::from_secs(2);
    let mut h = modern_session(Settings {
        task_poll_floor: floor,
        task_poll_ceiling: ceiling,
        call_timeout: Duration::from_secs(120),
        ..settings()
    });
    // Asked for 1 s, then for nothing between polls (10 ms: the floor holds), then for an
    // hour (the ceiling holds).
    let _answer = h.call(tool("job"));
    let sent = h.written();
    h.answer(&sent[0], created("t", 1000));
    let mut polls = Vec::new();
    let mut last = h.now;
    for (interval, rounds) in [(1000, 5), (10, 5), (3_600_000, 5)] {
        for _ in 0..rounds {
            let poll = loop {
                h.advance(10 * MS);
                if let Some(poll) = of(&h.written(), "tasks/get").first().cloned().cloned() {
                    break poll;
                }
            };
            polls.push(h.now - last);
            last = h.now;
            h.answer(&poll, polled("t", "working", interval));
        }
    }
    // Each wait is the interval asked for (or its bound), plus at most a tenth and a tick.
    let expected = |asked: Duration| asked.clamp(floor, ceiling);
    let asked_before = [
        1000, 1000, 1000, 1000, 1000, 1000, 10, 10, 10, 10, 10, 3_600_000, 3_600_000, 3_600_000,
        3_600_000,
    ];
    for (wait, asked) in polls.iter().zip(asked_before) {
        let low = expected(Duration::from_millis(asked));
        assert!(
            *wait >= low && *wait <= low + low / 10 + 10 * MS,
            "waited {wait:?} after asking for {asked} ms: {polls:?}"
        );
    }
}

fn start(name: &str) -> CallRequest {
    let mut request = tool(name);
    request.options.start_task = true;
    request
}

fn handle(id: &str) -> TaskHandle {
    TaskHandle::new("demo", id, "job", std::time::SystemTime::now())
}

fn completed(id: &str) -> Value {
    let mut done = polled(id, "completed", 100);
    done["result"] = json!({"content": [{"type": "text", "text": "done"}]});
    done
}

#[test]
fn a_started_task_answers_with_its_handle_at_once_and_is_awaited_later() {
    let mut h = modern_session(settings());
    let started = h.call(start("job"));
    let sent = h.written();
    h.answer(&sent[0], created("t-1", 100));
    let answer = started.take().expect("answered at once").expect("a task");
    assert_eq!(answer, json!({"task": "t-1", "tool": "job"}));
    // Nobody waits, and the task is polled all the same; it ends, and its outcome is kept.
    h.advance(120 * MS);
    let poll = h.written();
    assert_eq!(poll[0]["method"], "tasks/get");
    h.answer(&poll[0], completed("t-1"));
    let infos = h.session.task_infos(h.now);
    assert_eq!(infos.len(), 1);
    assert_eq!(infos[0].status, TaskStatus::Completed);
    let waiter = Rc::new(crate::session::testing::Answer::default());
    h.session
        .await_task(handle("t-1"), None, waiter.clone(), h.now);
    h.drive();
    let result = waiter.take().expect("at once").expect("the result");
    assert_eq!(result["content"][0]["text"], "done");
    assert!(h.session.task_infos(h.now).is_empty(), "delivered once");
}

#[test]
fn awaiting_a_running_task_waits_for_its_end_within_its_own_timeout() {
    let mut h = modern_session(settings());
    let started = h.call(start("job"));
    let sent = h.written();
    h.answer(&sent[0], created("t", 1000));
    assert!(started.take().is_some());
    let short = Rc::new(crate::session::testing::Answer::default());
    h.session.await_task(
        handle("t"),
        Some(Duration::from_millis(300)),
        short.clone(),
        h.now,
    );
    h.drive();
    h.advance(Duration::from_millis(350));
    let Some(Err(error)) = short.take() else {
        panic!("timed out")
    };
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert_eq!(error.task().map(|t| t.task_id.as_str()), Some("t"));
    let long = Rc::new(crate::session::testing::Answer::default());
    h.session.await_task(handle("t"), None, long.clone(), h.now);
    h.drive();
    h.advance(Duration::from_millis(800));
    let poll = h.written();
    assert_eq!(of(&poll, "tasks/get").len(), 1, "{poll:?}");
    h.answer(&poll[0], completed("t"));
    assert!(matches!(long.take(), Some(Ok(_))));
}

#[test]
fn a_handle_this_session_never_saw_is_asked_about_at_once() {
    // A handle kept across a restart of the application: the new session follows it.
    let mut h = modern_session(settings());
    let waiter = Rc::new(crate::session::testing::Answer::default());
    h.session
        .await_task(handle("old"), None, waiter.clone(), h.now);
    h.drive();
    h.advance(MS);
    let poll = h.written();
    assert_eq!(poll.len(), 1, "{poll:?}");
    assert_eq!(poll[0]["params"]["taskId"], "old");
    h.answer(&poll[0], completed("old"));
    assert!(matches!(waiter.take(), Some(Ok(_))));
    // And one the server forgot (it restarted without keeping it) is an unknown outcome.
    let lost = Rc::new(crate::session::testing::Answer::default());
    h.session
        .await_task(handle("gone"), None, lost.clone(), h.now);
    h.drive();
    h.advance(MS);
    let poll = h.written();
    h.send(json!({"jsonrpc": "2.0", "id": poll[0]["id"],
                  "error": {"code": -32602, "message": "Task not found"}}));
    assert_eq!(kind(&lost), Some(ErrorKind::OutcomeUnknown));
}

#[test]
fn a_started_task_that_ended_in_its_first_answer_answers_with_its_result_once() {
    let mut h = modern_session(settings());
    let started = h.call(start("job"));
    let sent = h.written();
    let mut done = completed("t");
    done["resultType"] = json!("task");
    h.answer(&sent[0], done);
    let result = started.take().expect("answered").expect("the result");
    assert_eq!(result["content"][0]["text"], "done");
    assert!(h.session.task_infos(h.now).is_empty(), "not kept as well");
}

/// What the store is asked to record, in order: the task before anyone hears of it, each input
/// key before it is answered, the end, and the delivery before the caller has it.
#[test]
fn each_step_is_recorded_before_what_depends_on_it() {
    let mut h = modern_session(settings());
    let started = h.call(start("job"));
    let sent = h.written();
    h.answer(&sent[0], created("t", 100));
    assert!(matches!(
        h.persisted.as_slice(),
        [TaskWrite::Created { handle, .. }] if handle.task_id == "t"
    ));
    assert!(started.take().is_some(), "answered once it was recorded");
    let waiter = Rc::new(crate::session::testing::Answer::default());
    h.session
        .await_task(handle("t"), None, waiter.clone(), h.now);
    h.drive();
    h.advance(120 * MS);
    let poll = h.written();
    let mut asking = polled("t", "input_required", 100);
    asking["inputRequests"] = json!({"confirm": {"method": "elicitation/create"}});
    h.answer(&poll[0], asking);
    assert!(matches!(
        h.persisted.last(),
        Some(TaskWrite::InputAnswered { keys, .. }) if keys == &["confirm"]
    ));
    let Some(Command::AskInput(_)) = h.other.pop() else {
        panic!("asked after it was recorded")
    };
    h.advance(120 * MS);
    let poll = h.written();
    h.answer(&poll[0], completed("t"));
    let steps: Vec<&str> = h
        .persisted
        .iter()
        .map(|w| match w {
            TaskWrite::Created { .. } => "created",
            TaskWrite::Status { .. } => "status",
            TaskWrite::InputAnswered { .. } => "input",
            TaskWrite::Ended { .. } => "ended",
            TaskWrite::Delivered { .. } => "delivered",
            TaskWrite::Forgotten { .. } => "forgotten",
        })
        .collect();
    assert_eq!(steps, ["created", "status", "input", "ended", "delivered"]);
    assert!(matches!(waiter.take(), Some(Ok(_))));
}

#[test]
fn the_status_lists_running_tasks_and_subscribers_hear_each_change() {
    let mut h = modern_session(settings());
    let answer = h.call(tool("job"));
    let sent = h.written();
    h.answer(&sent[0], created("t", 100));
    let status = h.session.status(h.now);
    assert_eq!(status.tasks.len(), 1);
    assert_eq!(status.tasks[0].handle.task_id, "t");
    assert_eq!(status.tasks[0].status, TaskStatus::Working);
    assert!(status.tasks[0].next_poll_in.is_some());
    h.advance(120 * MS);
    let poll = h.written();
    let mut asking = polled("t", "input_required", 100);
    asking["inputRequests"] = json!({"confirm": {"method": "elicitation/create"}});
    asking["statusMessage"] = json!("needs a yes");
    h.answer(&poll[0], asking);
    h.advance(120 * MS);
    let poll = h.written();
    h.answer(&poll[0], completed("t"));
    assert!(matches!(answer.take(), Some(Ok(_))));
    let changes: Vec<(TaskStatus, Option<String>)> = h
        .emitted
        .iter()
        .filter_map(|e| match e {
            ServerEvent::TaskChanged {
                task_id,
                tool,
                status,
                message,
                ..
            } => {
                assert_eq!((task_id.as_str(), tool.as_str()), ("t", "job"));
                Some((*status, message.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        changes,
        [
            (TaskStatus::Working, None),
            (TaskStatus::InputRequired, Some("needs a yes".to_owned())),
            (TaskStatus::Completed, None),
        ]
    );
    assert!(h.session.status(h.now).tasks.is_empty());
}
