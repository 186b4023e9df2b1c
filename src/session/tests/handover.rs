//! A replaced generation hands over what it need not finish itself: the calls that wait for a
//! connection go to the new generation (never sent, or safe to send again: nothing runs
//! twice), and so do the tasks when the new generation reaches the same server; the calls
//! written on the old connection finish there; a draining generation whose connection breaks
//! stops instead of reconnecting.

use super::*;
use crate::session::handover::Handover;

const HOUR: Duration = Duration::from_secs(3600);
const MS: Duration = Duration::from_millis(1);

/// The handovers the session gave its driver, taken.
fn handovers(h: &mut Harness) -> Vec<Handover> {
    let (handed, other) = std::mem::take(&mut h.other)
        .into_iter()
        .partition::<Vec<_>, _>(|c| matches!(c, Command::HandOver(_)));
    h.other = other;
    handed
        .into_iter()
        .filter_map(|c| match c {
            Command::HandOver(handover) => Some(handover),
            _ => None,
        })
        .collect()
}

/// The new generation of `old`'s server, Ready in `era`, sharing its request ids.
fn next_generation(old: &Harness, config: &ServerConfig, era: Era) -> Harness {
    let mut next = Harness::with_ids(config, settings(), old.session.ids.clone());
    next.now = old.now;
    match era {
        Era::Legacy => next.connect_legacy(),
        Era::Modern => next.connect_modern(HOUR),
    }
    next
}

/// The new generation of `old`'s server, Ready in `era`, having taken `handover`.
fn taking_over(old: &Harness, config: &ServerConfig, era: Era, handover: Handover) -> Harness {
    let mut next = next_generation(old, config, era);
    next.session.take_over(handover, true, next.now);
    next.drive();
    next
}

fn config_of(era: Era) -> ServerConfig {
    match era {
        Era::Legacy => legacy_stdio(),
        Era::Modern => modern_http(),
    }
}

fn text(value: &Value) -> &str {
    value["content"][0]["text"].as_str().unwrap_or_default()
}

fn echo(text: &str) -> CallRequest {
    call(
        "tools/call",
        Some(json!({"name": "echo", "arguments": {"text": text}})),
    )
}

fn echoed(request: &Value) -> Value {
    let said = request["params"]["arguments"]["text"].clone();
    json!({"content": [{"type": "text", "text": said}], "isError": false})
}

#[test]
fn calls_waiting_on_a_reconnecting_generation_are_sent_by_the_new_one() {
    both_eras(|old, era| {
        // A safe method written when the connection broke: put back to be sent again.
        let listed = old.call(call("tools/list", None));
        // A tool call written then: it may have run, so it is answered, not moved.
        let risky = old.call(tool("charge"));
        assert_eq!(old.written().len(), 2);
        old.lose("killed");
        assert_eq!(kind(&risky), Some(ErrorKind::OutcomeUnknown));
        // Calls made while it reconnects wait for a connection.
        let waiting: Vec<Rc<Answer>> = (0..4).map(|i| old.call(echo(&format!("w{i}")))).collect();
        assert!(old.written().is_empty());

        old.session.drain(false, old.now);
        old.drive();
        assert_eq!(old.state(), "stopped", "nothing left to finish: it stops");
        assert_eq!(old.session.pending_calls(), 0);
        let mut handed = handovers(old);
        assert_eq!(handed.len(), 1);
        assert_eq!(
            handed[0].calls(),
            5,
            "the re-sendable list and the four echoes"
        );

        let mut next = taking_over(old, &config_of(era), era, handed.remove(0));
        let sent = next.written();
        let methods: Vec<&str> = sent.iter().filter_map(|m| m["method"].as_str()).collect();
        assert_eq!(
            methods,
            [
                "tools/list",
                "tools/call",
                "tools/call",
                "tools/call",
                "tools/call"
            ],
            "oldest first: {sent:?}"
        );
        for request in &sent {
            let result = match request["method"].as_str() {
                Some("tools/list") => json!({"tools": []}),
                _ => echoed(request),
            };
            next.answer(request, result);
        }
        assert!(listed.take().expect("answered").is_ok());
        for (i, answer) in waiting.iter().enumerate() {
            let result = answer.take().expect("answered").expect("a result");
            assert_eq!(text(&result), format!("w{i}"));
        }
        assert_eq!(next.counters().calls_ok, 5);
    });
}

#[test]
fn a_call_written_before_the_drain_finishes_on_the_old_connection() {
    both_eras(|old, era| {
        let written = old.call(echo("old"));
        let request = old.written().remove(0);
        old.session.drain(false, old.now);
        old.drive();
        assert!(
            handovers(old).is_empty(),
            "nothing waits: nothing is handed"
        );
        assert_eq!(old.state(), "ready", "it drains on its connection");
        old.answer(&request, echoed(&request));
        let result = written.take().expect("answered").expect("a result");
        assert_eq!(text(&result), "old");
        assert_eq!(old.session.pending_calls(), 0, "drained");
        let _ = era;
    });
}

#[test]
fn a_draining_generation_whose_connection_breaks_hands_over_and_does_not_reconnect() {
    both_eras(|old, era| {
        let listed = old.call(call("tools/list", None));
        let risky = old.call(tool("charge"));
        assert_eq!(old.written().len(), 2);
        old.session.drain(false, old.now);
        old.drive();
        old.lose("killed while draining");
        assert_eq!(
            kind(&risky),
            Some(ErrorKind::OutcomeUnknown),
            "it may have run: never re-sent"
        );
        assert_eq!(old.state(), "stopped");
        old.advance(Duration::from_secs(60));
        assert!(old.pending.is_none(), "no reconnect attempt");
        let mut handed = handovers(old);
        assert_eq!(handed.len(), 1);
        assert_eq!(handed[0].calls(), 1, "the list, safe to send again");

        let mut next = taking_over(old, &config_of(era), era, handed.remove(0));
        let sent = next.written();
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0]["method"], "tools/list");
        next.answer(&sent[0], json!({"tools": []}));
        assert!(listed.take().expect("answered").is_ok());
    });
}

#[test]
fn handed_calls_keep_their_deadlines() {
    both_eras(|old, era| {
        old.lose("killed");
        let waiting = old.call(echo("late").timeout(Duration::from_secs(2)));
        old.advance(1500 * MS);
        old.session.drain(false, old.now);
        old.drive();
        let handed = handovers(old).remove(0);
        // A new generation that is not Ready yet: the call waits there.
        let mut next = Harness::with_ids(&config_of(era), settings(), old.session.ids.clone());
        next.now = old.now;
        next.session.take_over(handed, true, next.now);
        next.drive();
        next.advance(499 * MS);
        assert!(waiting.take().is_none(), "within its deadline");
        next.advance(2 * MS);
        assert_eq!(
            kind(&waiting),
            Some(ErrorKind::Unavailable),
            "never sent: safe to make again"
        );
    });
}

#[test]
fn a_generation_that_is_stopped_answers_what_it_is_handed() {
    let mut old = Harness::new(&legacy_stdio(), settings());
    old.connect_legacy();
    old.lose("killed");
    let waiting = old.call(echo("nobody"));
    old.session.drain(false, old.now);
    old.drive();
    let handed = handovers(&mut old).remove(0);
    let mut next = next_generation(&old, &legacy_stdio(), Era::Legacy);
    next.session.stop(next.now);
    next.session.take_over(handed, true, next.now);
    next.drive();
    assert_eq!(kind(&waiting), Some(ErrorKind::Stopped));
}

#[test]
fn at_the_drain_time_a_safe_call_goes_to_the_new_generation_and_a_tool_call_is_outcome_unknown() {
    both_eras(|old, era| {
        let listed = old.call(call("tools/list", None));
        let risky = old.call(tool("charge"));
        assert_eq!(old.written().len(), 2);
        old.session.drain(false, old.now);
        old.drive();
        // The drain time is up: the driver stops the session.
        old.session.stop(old.now);
        old.drive();
        assert_eq!(
            kind(&risky),
            Some(ErrorKind::OutcomeUnknown),
            "it may have run"
        );
        let mut handed = handovers(old);
        assert_eq!(handed.len(), 1);
        assert_eq!(handed[0].calls(), 1, "the list, safe to send again");
        let mut next = taking_over(old, &config_of(era), era, handed.remove(0));
        let sent = next.written();
        assert_eq!(sent[0]["method"], "tools/list", "{sent:?}");
        next.answer(&sent[0], json!({"tools": []}));
        assert!(listed.take().expect("answered").is_ok());
    });
}

#[test]
fn a_draining_generation_refuses_to_reconnect() {
    both_eras(|old, _| {
        old.session.drain(false, old.now);
        old.drive();
        let refused = old.session.reconnect(old.now).expect_err("replaced");
        assert_eq!(refused.kind(), ErrorKind::Unavailable, "{refused}");
        old.drive();
        assert!(old.pending.is_none(), "no attempt");
    });
}

mod tasks {
    use super::*;

    fn created(id: &str, interval_ms: u64) -> Value {
        json!({"resultType": "task", "taskId": id, "status": "working", "ttlMs": 600000,
               "pollIntervalMs": interval_ms, "createdAt": "2026-12-02T10:00:00Z",
               "lastUpdatedAt": "2026-12-02T10:00:00Z"})
    }

    fn completed(id: &str) -> Value {
        json!({"resultType": "complete", "taskId": id, "status": "completed", "ttlMs": 600000,
               "createdAt": "2026-12-02T10:00:00Z", "lastUpdatedAt": "2026-12-02T10:00:00Z",
               "result": {"content": [{"type": "text", "text": "done"}], "isError": false}})
    }

    fn polls(written: &[Value]) -> Vec<&Value> {
        written
            .iter()
            .filter(|m| m["method"] == "tasks/get")
            .collect()
    }

    /// After `after`, `next` asks task `id` once (`why` if not), and its completion answers
    /// the caller of `answer` with the task's result.
    fn polled_once_to_completion(
        next: &mut Harness,
        id: &str,
        after: Duration,
        why: &str,
        answer: &Answer,
    ) {
        next.advance(after);
        let sent = next.written();
        let asked = polls(&sent);
        assert_eq!(asked.len(), 1, "{why}: {sent:?}");
        assert_eq!(asked[0]["params"]["taskId"], id);
        next.answer(asked[0], completed(id));
        let result = answer.take().expect("answered").expect("the task's result");
        assert_eq!(text(&result), "done");
    }

    /// A running task with a caller waiting for it, on a 2026-07-28 connection.
    fn running_task() -> (Harness, Rc<Answer>) {
        let mut old = Harness::new(&modern_http(), settings());
        old.connect_modern(HOUR);
        let answer = old.call(tool("job"));
        let sent = old.written();
        old.answer(&sent[0], created("t-1", 500));
        assert!(answer.take().is_none(), "the task runs");
        (old, answer)
    }

    #[test]
    fn the_tasks_go_to_a_new_generation_of_the_same_server_and_end_there() {
        let (mut old, answer) = running_task();
        old.advance(100 * MS);
        old.session.drain(true, old.now);
        old.drive();
        assert_eq!(old.session.pending_calls(), 0, "its caller went along");
        let mut handed = handovers(&mut old);
        assert_eq!(handed.len(), 1);
        assert_eq!(handed[0].calls(), 1);
        old.advance(Duration::from_secs(5));
        assert!(polls(&old.written()).is_empty(), "no longer polled here");

        let mut next = taking_over(&old, &modern_http(), Era::Modern, handed.remove(0));
        next.written(); // The listen naming the task.
        polled_once_to_completion(
            &mut next,
            "t-1",
            400 * MS,
            "polled when it was due",
            &answer,
        );
    }

    #[test]
    fn a_task_whose_poll_was_out_is_asked_at_once_by_the_new_generation() {
        let (mut old, answer) = running_task();
        old.advance(600 * MS);
        assert_eq!(polls(&old.written()).len(), 1, "a poll is out");
        old.session.drain(true, old.now);
        old.drive();
        let handed = handovers(&mut old).remove(0);
        let mut next = taking_over(&old, &modern_http(), Era::Modern, handed);
        polled_once_to_completion(&mut next, "t-1", MS, "asked at once", &answer);
    }

    #[test]
    fn the_tasks_stay_when_the_new_generation_reaches_another_server() {
        let (mut old, answer) = running_task();
        old.session.drain(false, old.now);
        old.drive();
        assert!(handovers(&mut old).is_empty());
        assert_eq!(old.session.pending_calls(), 1, "its caller waits here");
        old.advance(600 * MS);
        let sent = old.written();
        let asked = polls(&sent);
        assert_eq!(asked.len(), 1, "still polled here: {sent:?}");
        old.answer(asked[0], completed("t-1"));
        assert!(answer.take().expect("answered").is_ok());
        assert_eq!(old.session.pending_calls(), 0);
    }

    fn asking(id: &str) -> Value {
        json!({"resultType": "complete", "taskId": id, "status": "input_required",
               "ttlMs": 600000, "pollIntervalMs": 100, "createdAt": "2026-12-02T10:00:00Z",
               "lastUpdatedAt": "2026-12-02T10:00:00Z",
               "inputRequests": {"confirm": {"method": "elicitation/create",
                                             "params": {"message": "go on?"}}}})
    }

    #[test]
    fn a_task_created_while_the_old_generation_drains_goes_to_the_new_one() {
        let mut old = Harness::new(&modern_http(), settings());
        old.connect_modern(HOUR);
        let answer = old.call(tool("job"));
        let sent = old.written();
        old.session.drain(true, old.now);
        old.drive();
        assert!(
            handovers(&mut old).is_empty(),
            "the call is on the old connection"
        );
        // Its answer, a task, comes on the old connection after the drain began.
        old.answer(&sent[0], created("t-2", 500));
        let handed = handovers(&mut old);
        assert_eq!(handed.len(), 1, "handed over as soon as it is learnt");
        assert_eq!(old.session.pending_calls(), 0);
        let mut next = taking_over(
            &old,
            &modern_http(),
            Era::Modern,
            handed.into_iter().next().unwrap(),
        );
        polled_once_to_completion(
            &mut next,
            "t-2",
            600 * MS,
            "polled when it was due",
            &answer,
        );
    }

    #[test]
    fn a_task_whose_question_is_being_answered_goes_once_its_answer_is_sent() {
        let (mut old, answer) = running_task();
        old.advance(600 * MS);
        let poll = old.written();
        old.answer(polls(&poll)[0], asking("t-1"));
        let Some(Command::AskInput(ask)) = old.other.pop() else {
            panic!("the application is asked: {:?}", old.other)
        };
        old.session.drain(true, old.now);
        old.drive();
        assert!(
            handovers(&mut old).is_empty(),
            "not while its answer is awaited"
        );
        assert_eq!(
            old.session.pending_calls(),
            1,
            "its caller waits here for now"
        );
        let answered = vec![(
            "confirm".to_owned(),
            "elicitation/create".to_owned(),
            Ok(json!({"action": "accept", "content": {"ok": true}})),
        )];
        old.session
            .input_answered(ask, InputAnswers::Answered(answered), old.now);
        old.drive();
        let update = old.written();
        assert_eq!(
            update[0]["method"], "tasks/update",
            "answered on the old connection"
        );
        let handed = handovers(&mut old);
        assert_eq!(handed.len(), 1, "then handed over");
        let mut next = taking_over(
            &old,
            &modern_http(),
            Era::Modern,
            handed.into_iter().next().unwrap(),
        );
        next.advance(150 * MS);
        let sent = next.written();
        let asked = polls(&sent);
        assert_eq!(asked.len(), 1, "polled when it was due: {sent:?}");
        // The server still shows the question (the update is on its way): not asked again.
        next.answer(asked[0], asking("t-1"));
        assert!(
            !next.other.iter().any(|c| matches!(c, Command::AskInput(_))),
            "asked twice: {:?}",
            next.other
        );
        next.advance(200 * MS);
        let sent = next.written();
        next.answer(polls(&sent)[0], completed("t-1"));
        assert!(answer.take().expect("answered").is_ok());
    }

    #[test]
    fn a_stdio_generation_keeps_its_tasks_until_it_stops_then_hands_them_over() {
        let stdio = ServerConfig::stdio("demo", "unused");
        let mut old = Harness::new(&stdio, settings());
        old.connect_modern(HOUR);
        let answer = old.call(tool("job"));
        let sent = old.written();
        old.answer(&sent[0], created("t-1", 500));
        old.session.drain(true, old.now);
        old.drive();
        assert!(handovers(&mut old).is_empty(), "its process runs the task");
        old.advance(600 * MS);
        assert_eq!(polls(&old.written()).len(), 1, "polled here meanwhile");
        // The drain time is up.
        old.session.stop(old.now);
        old.drive();
        let handed = handovers(&mut old);
        assert_eq!(handed.len(), 1);
        let mut next = taking_over(
            &old,
            &stdio,
            Era::Modern,
            handed.into_iter().next().unwrap(),
        );
        polled_once_to_completion(
            &mut next,
            "t-1",
            MS,
            "the poll that was out is asked anew",
            &answer,
        );
    }

    #[test]
    fn tasks_that_reach_a_generation_of_another_server_are_lost_for_their_callers() {
        let (mut old, answer) = running_task();
        old.session.drain(true, old.now);
        old.drive();
        let handed = handovers(&mut old).remove(0);
        let mut next = next_generation(&old, &modern_http(), Era::Modern);
        next.session.take_over(handed, false, next.now);
        next.drive();
        let error = answer.take().expect("answered").expect_err("lost");
        assert_eq!(error.kind(), ErrorKind::OutcomeUnknown, "{error}");
        assert!(error.to_string().contains("t-1"), "{error}");
        next.advance(Duration::from_secs(5));
        assert!(polls(&next.written()).is_empty(), "not followed");
    }
}
