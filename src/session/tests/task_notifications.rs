//! Tasks told of by the server (`notifications/tasks` on a 2026-07-28 listen, and the session
//! era's `notifications/tasks/status`): a listen names the running tasks when the server
//! declares the extension; a notification ends a task without a poll; the tasks the
//! acknowledgement names are polled only at the ceiling, until it no longer names them; a
//! burst of tasks costs a few listens, not one each; a server that refuses task ids keeps its
//! other notifications; what is not a task of ours is skipped; listens replaced in quick
//! succession leave none open and no task told of by a listen gone; a stream of progress
//! messages is recorded once per poll floor.

use super::task_findings::{exp_task, session_era};
use super::*;
use crate::protocol::as_sent::AsSent;
use crate::protocol::tasks::EXTENSION;
use crate::tasks::TaskStatus;

const MS: Duration = Duration::from_millis(1);
const CEILING: Duration = Duration::from_secs(5);

fn settings() -> Settings {
    Settings {
        call_timeout: Duration::from_secs(120),
        task_poll_ceiling: CEILING,
        ..super::settings()
    }
}

/// A Ready 2026-07-28 connection to a server whose capabilities are `caps`.
fn modern_with(caps: Value) -> Harness {
    let mut h = Harness::new(&modern_http(), settings());
    let mut negotiated = modern(Duration::from_secs(3600));
    negotiated.capabilities = AsSent::from_object(caps.as_object().unwrap().clone()).unwrap();
    h.open(negotiated, false, Vec::new());
    assert_eq!(h.state(), "ready");
    h
}

/// A server that declares the extension (and nothing else to listen for).
fn tasks_server() -> Harness {
    modern_with(json!({"tools": {}, "extensions": {EXTENSION: {}}}))
}

fn created(id: &str, interval_ms: u64) -> Value {
    json!({"resultType": "task", "taskId": id, "status": "working", "ttlMs": 600000,
           "pollIntervalMs": interval_ms})
}

fn task(id: &str, status: &str, interval_ms: u64) -> Value {
    json!({"taskId": id, "status": status, "ttlMs": 600000, "pollIntervalMs": interval_ms,
           "createdAt": "2026-12-06T10:00:00Z", "lastUpdatedAt": "2026-12-06T10:00:00Z"})
}

fn completed(id: &str) -> Value {
    let mut done = task(id, "completed", 500);
    done["result"] = json!({"content": [{"type": "text", "text": "done"}], "isError": false});
    done
}

fn of<'a>(written: &'a [Value], method: &str) -> Vec<&'a Value> {
    written.iter().filter(|m| m["method"] == method).collect()
}

/// The listens among `written`: their ids and the task ids each names.
fn listens(written: &[Value]) -> Vec<(u64, Vec<String>)> {
    of(written, "subscriptions/listen")
        .into_iter()
        .map(|m| {
            let ids = m["params"]["notifications"]["taskIds"]
                .as_array()
                .map(|ids| {
                    ids.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            (m["id"].as_u64().expect("our ids are numbers"), ids)
        })
        .collect()
}

fn acknowledge(h: &mut Harness, id: u64, tasks: &[&str]) {
    h.send(json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id},
                   "notifications": {"taskIds": tasks}}
    }));
}

fn notify(h: &mut Harness, method: &str, params: Value) {
    h.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
}

/// Starts a call that the server answers with task `id`; returns its answer and the listen
/// (id, named tasks) written after it, if any.
fn task_call(h: &mut Harness, id: &str) -> (Rc<Answer>, Vec<(u64, Vec<String>)>) {
    let answer = h.call(tool("job"));
    let sent = h.written();
    let call = of(&sent, "tools/call");
    let call = call.last().expect("the call went out");
    h.answer(call, created(id, 500));
    (answer, listens(&h.written()))
}

#[test]
fn a_notification_ends_the_task_with_no_poll() {
    let mut h = tasks_server();
    assert!(
        listens(&h.written()).is_empty(),
        "nothing to listen for yet"
    );
    let (answer, opened) = task_call(&mut h, "t-1");
    let [(listen, named)] = &opened[..] else {
        panic!("one listen: {opened:?}")
    };
    assert_eq!(named, &["t-1"]);
    acknowledge(&mut h, *listen, &["t-1"]);
    h.advance(100 * MS);
    notify(&mut h, "notifications/tasks", completed("t-1"));
    let result = answer.take().expect("answered").expect("the result");
    assert_eq!(result["content"][0]["text"], "done");
    h.advance(Duration::from_secs(30));
    assert!(
        of(&h.written(), "tasks/get").is_empty(),
        "no poll for a task told of"
    );
}

#[test]
fn a_task_told_of_is_polled_only_at_the_ceiling_and_at_its_pace_once_it_is_not() {
    let mut h = tasks_server();
    let (_answer, opened) = task_call(&mut h, "t");
    acknowledge(&mut h, opened[0].0, &["t"]);
    // The first poll keeps its time: a change before the acknowledgement was told of by none.
    h.advance(560 * MS);
    let poll = polls_of(&h.written(), "t");
    assert_eq!(poll.len(), 1, "{poll:?}");
    let mut working = task("t", "working", 500);
    working["resultType"] = json!("complete");
    h.answer(&poll[0], working.clone());
    h.advance(CEILING - 100 * MS);
    assert!(
        of(&h.written(), "tasks/get").is_empty(),
        "told of: polled no sooner than the ceiling"
    );
    h.advance(CEILING / 10 + 200 * MS);
    let poll = polls_of(&h.written(), "t");
    assert_eq!(poll.len(), 1, "the safety net's poll");
    h.answer(&poll[0], working);
    // The server ends the listen: no one tells of the task now, so it is asked at its pace.
    h.send(json!({"jsonrpc": "2.0", "id": opened[0].0, "result": {}}));
    h.advance(560 * MS);
    assert_eq!(
        of(&h.written(), "tasks/get").len(),
        1,
        "polled at the server's interval again"
    );
}

#[test]
fn a_burst_of_tasks_costs_a_listen_per_acknowledgement_not_one_each() {
    let mut h = tasks_server();
    let (_first, opened) = task_call(&mut h, "t-0");
    let [(first, _)] = &opened[..] else {
        panic!("{opened:?}")
    };
    let mut answers = Vec::new();
    for i in 1..=20 {
        let (answer, more) = task_call(&mut h, &format!("t-{i}"));
        assert!(more.is_empty(), "none while the first waits: {more:?}");
        answers.push(answer);
    }
    acknowledge(&mut h, *first, &["t-0"]);
    let opened = listens(&h.written());
    let [(second, named)] = &opened[..] else {
        panic!("one listen after the acknowledgement: {opened:?}")
    };
    assert_eq!(named.len(), 21, "every running task: {named:?}");
    acknowledge(&mut h, *second, &["t-0", "t-7"]);
    let written = h.written();
    assert!(listens(&written).is_empty(), "{written:?}");
    assert!(
        written.iter().any(|m| m["abandon"] == *first),
        "the replaced listen is let go: {written:?}"
    );
    // A task learnt once the listen is in force is named by a new one at once.
    let (_late, opened) = task_call(&mut h, "t-late");
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert!(opened[0].1.contains(&"t-late".to_owned()));
    // The tasks it covered are told of; t-7's end reaches its caller.
    notify(&mut h, "notifications/tasks", completed("t-7"));
    assert!(matches!(answers[6].take(), Some(Ok(_))));
}

#[test]
fn a_server_that_refuses_task_ids_is_asked_once_more_without_them() {
    let mut h = modern_with(json!({"tools": {"listChanged": true}, "extensions": {EXTENSION: {}}}));
    let opened = listens(&h.written());
    let [(first, named)] = &opened[..] else {
        panic!("{opened:?}")
    };
    assert!(named.is_empty(), "no task yet");
    acknowledge(&mut h, *first, &[]);
    let (_answer, opened) = task_call(&mut h, "t");
    let [(named_listen, named)] = &opened[..] else {
        panic!("{opened:?}")
    };
    assert_eq!(named, &["t"]);
    h.send(json!({"jsonrpc": "2.0", "id": named_listen,
                  "error": {"code": -32602, "message": "too many task ids"}}));
    h.advance(Duration::from_secs(2));
    let opened = listens(&h.written());
    let [(again, named)] = &opened[..] else {
        panic!("asked once more: {opened:?}")
    };
    assert!(named.is_empty(), "without task ids: {named:?}");
    acknowledge(&mut h, *again, &[]);
    // Further tasks do not ask for a listen on this connection, and are polled.
    let (_other, opened) = task_call(&mut h, "u");
    assert!(opened.is_empty(), "{opened:?}");
    h.advance(600 * MS);
    assert!(!of(&h.written(), "tasks/get").is_empty());
}

#[test]
fn no_task_is_named_to_a_server_without_the_extension_or_with_tasks_turned_off() {
    let mut h = modern_with(json!({"tools": {}}));
    let (_answer, opened) = task_call(&mut h, "t");
    assert!(opened.is_empty(), "{opened:?}");

    let mut h = Harness::new(
        &modern_http(),
        Settings {
            tasks: false,
            ..settings()
        },
    );
    let mut negotiated = modern(Duration::from_secs(3600));
    let caps = json!({"tools": {"listChanged": true}, "extensions": {EXTENSION: {}}});
    negotiated.capabilities = AsSent::from_object(caps.as_object().unwrap().clone()).unwrap();
    h.open(negotiated, false, Vec::new());
    let opened = listens(&h.written());
    assert_eq!(opened.len(), 1);
    assert!(opened[0].1.is_empty());
}

#[test]
fn a_reconnect_to_a_server_that_tells_of_nothing_polls_the_task_at_its_pace() {
    let mut h = tasks_server();
    let (answer, opened) = task_call(&mut h, "t");
    acknowledge(&mut h, opened[0].0, &["t"]);
    h.lose("the server restarted");
    h.reconnect(Era::Modern);
    // (The harness reconnects with default capabilities: a server that declares nothing.)
    assert!(listens(&h.written()).is_empty());
    h.advance(560 * MS);
    let poll = polls_of(&h.written(), "t");
    assert_eq!(
        poll.len(),
        1,
        "polled at its pace on a connection that tells of nothing"
    );
    let mut done = completed("t");
    done["resultType"] = json!("complete");
    h.answer(&poll[0], done);
    assert!(matches!(answer.take(), Some(Ok(_))));
}

#[test]
fn what_is_not_a_task_of_ours_is_skipped() {
    let mut h = tasks_server();
    let (answer, opened) = task_call(&mut h, "t");
    acknowledge(&mut h, opened[0].0, &["t", "not-asked-for"]);
    notify(&mut h, "notifications/tasks", completed("someone-elses"));
    notify(
        &mut h,
        "notifications/tasks",
        json!({"taskId": "t", "status": "finished"}),
    );
    notify(&mut h, "notifications/tasks", json!("t"));
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/tasks"}));
    // A stream of notifications that change nothing moves nothing.
    let due = h.session.poll_timeout();
    for _ in 0..1000 {
        notify(&mut h, "notifications/tasks", task("t", "working", 500));
    }
    assert_eq!(h.session.poll_timeout(), due);
    assert!(answer.take().is_none(), "the task runs");
    notify(&mut h, "notifications/tasks", completed("t"));
    assert!(matches!(answer.take(), Some(Ok(_))));
    assert!(
        h.emitted
            .iter()
            .all(|e| !matches!(e, ServerEvent::Notification { .. })),
        "task notifications are the session's, not the application's"
    );
}

/// 2025-11-25: `notifications/tasks/status` saying a task completed has its result fetched
/// at once, not at the next poll.
#[test]
fn a_session_era_status_notification_fetches_the_result_at_once() {
    let mut h = session_era();
    let answer = h.call(tool("job"));
    let sent = h.written();
    h.answer(&sent[0], json!({"task": exp_task("t", "working")}));
    h.advance(10 * MS);
    notify(
        &mut h,
        "notifications/tasks/status",
        exp_task("t", "completed"),
    );
    let fetch = h.written();
    assert_eq!(of(&fetch, "tasks/result").len(), 1, "{fetch:?}");
    assert!(of(&fetch, "tasks/get").is_empty(), "{fetch:?}");
    h.answer(
        of(&fetch, "tasks/result")[0],
        json!({"content": [{"type": "text", "text": "done"}]}),
    );
    let result = answer.take().expect("answered").expect("the result");
    assert_eq!(result["content"][0]["text"], "done");
    // The extension's notification does not speak for a session-era task.
    let answer = h.call(tool("job"));
    let sent = h.written();
    h.answer(&sent[0], json!({"task": exp_task("u", "working")}));
    notify(&mut h, "notifications/tasks", completed("u"));
    assert!(answer.take().is_none());
}

/// The requests given up among `written` (over HTTP, a cancellation closes the stream).
fn cancelled(written: &[Value]) -> Vec<Value> {
    written
        .iter()
        .filter_map(|m| m.get("abandon").cloned())
        .collect()
}

/// Polls of task `id` among `written`.
fn polls_of(written: &[Value], id: &str) -> Vec<Value> {
    of(written, "tasks/get")
        .into_iter()
        .filter(|m| m["params"]["taskId"] == id)
        .cloned()
        .collect()
}

/// The first poll of task `id` (which keeps its time, 500 ms) is answered `working`.
fn first_poll_working(h: &mut Harness, id: &str) {
    h.advance(560 * MS);
    let poll = polls_of(&h.written(), id);
    assert_eq!(poll.len(), 1, "{poll:?}");
    let mut working = task(id, "working", 500);
    working["resultType"] = json!("complete");
    h.answer(&poll[0], working);
}

#[test]
fn a_reconnect_to_a_server_that_tells_names_the_running_tasks_again() {
    let mut h = tasks_server();
    let (_answer, opened) = task_call(&mut h, "t");
    acknowledge(&mut h, opened[0].0, &["t"]);
    h.lose("the server restarted");
    h.await_attempt();
    let mut negotiated = modern(Duration::from_secs(3600));
    let caps = json!({"tools": {}, "extensions": {EXTENSION: {}}});
    negotiated.capabilities = AsSent::from_object(caps.as_object().unwrap().clone()).unwrap();
    h.open(negotiated, false, Vec::new());
    let opened = listens(&h.written());
    let [(_, named)] = &opened[..] else {
        panic!("one listen on the new connection: {opened:?}")
    };
    assert_eq!(named, &["t"]);
}

#[test]
fn a_replaced_listen_that_ends_first_leaves_its_tasks_to_their_pace() {
    let mut h = tasks_server();
    let (_t, opened) = task_call(&mut h, "t");
    let first = opened[0].0;
    acknowledge(&mut h, first, &["t"]);
    first_poll_working(&mut h, "t");
    // A second task: a listen naming both replaces the first, which keeps delivering until
    // the new one is acknowledged...
    let (_u, opened) = task_call(&mut h, "u");
    let [(_, named)] = &opened[..] else {
        panic!("{opened:?}")
    };
    assert_eq!(named, &["t", "u"]);
    // ...but the server ends the first one before: nothing tells of `t` now.
    h.send(json!({"jsonrpc": "2.0", "id": first, "result": {}}));
    h.advance(600 * MS);
    let written = h.written();
    assert_eq!(
        polls_of(&written, "t").len(),
        1,
        "polled at its pace, not the ceiling's"
    );
    assert!(cancelled(&written).is_empty(), "the new listen stays");
}

#[test]
fn a_listen_replaced_before_its_acknowledgement_hands_on_the_one_it_was_to_replace() {
    let mut h =
        modern_with(json!({"resources": {"subscribe": true}, "extensions": {EXTENSION: {}}}));
    let (_t, opened) = task_call(&mut h, "t");
    let first = opened[0].0;
    acknowledge(&mut h, first, &["t"]);
    first_poll_working(&mut h, "t");
    let (_u, opened) = task_call(&mut h, "u");
    let [(second, _)] = opened[..] else {
        panic!("{opened:?}")
    };
    // A subscription changed before the second's acknowledgement replaces it outright.
    let subscribed = Rc::new(Answer::default());
    h.session
        .subscribe("demo://a".to_owned(), subscribed.clone(), h.now);
    h.drive();
    let written = h.written();
    let opened = listens(&written);
    let [(third, ref named)] = opened[..] else {
        panic!("{opened:?}")
    };
    assert_eq!(named, &["t", "u"]);
    assert_eq!(
        cancelled(&written),
        [json!(second)],
        "only the unacknowledged one"
    );
    // `t` is still told of by the first, which goes once the third is acknowledged.
    h.advance(CEILING / 2);
    assert!(polls_of(&h.written(), "t").is_empty());
    acknowledge(&mut h, third, &["t", "u"]);
    assert_eq!(
        cancelled(&h.written()),
        [json!(first)],
        "not left open, unowned"
    );
    assert!(matches!(subscribed.take(), Some(Ok(_))));
}

#[test]
fn an_acknowledged_listen_that_fails_later_is_not_taken_for_a_refusal_of_task_ids() {
    let mut h = modern_with(json!({"tools": {"listChanged": true}, "extensions": {EXTENSION: {}}}));
    let opened = listens(&h.written());
    acknowledge(&mut h, opened[0].0, &[]);
    let (_t, opened) = task_call(&mut h, "t");
    let first = opened[0].0;
    acknowledge(&mut h, first, &["t"]);
    h.send(json!({"jsonrpc": "2.0", "id": first,
                  "error": {"code": -32603, "message": "internal error"}}));
    h.advance(Duration::from_secs(2));
    assert!(
        listens(&h.written()).is_empty(),
        "an error after the acknowledgement ends listening on this connection"
    );
}

/// A server that streams progress text in its notifications costs the store a write per poll
/// floor (100 ms), not one per notification; the newest text is shown all the same, and is
/// recorded with the next change of status.
#[test]
fn a_stream_of_progress_messages_is_recorded_once_per_poll_floor() {
    let mut h = tasks_server();
    let (_answer, opened) = task_call(&mut h, "t");
    acknowledge(&mut h, opened[0].0, &["t"]);
    first_poll_working(&mut h, "t");
    let statuses = |h: &Harness| {
        h.persisted
            .iter()
            .filter(|w| matches!(w, TaskWrite::Status { .. }))
            .count()
    };
    let before = statuses(&h);
    for percent in 0..1000 {
        let mut progress = task("t", "working", 500);
        progress["statusMessage"] = json!(format!("{percent}%"));
        notify(&mut h, "notifications/tasks", progress);
        h.advance(MS);
    }
    let written = statuses(&h) - before;
    assert!(
        (9..=11).contains(&written),
        "1,000 messages over 1 s: {written} status writes"
    );
    let mut asking = task("t", "input_required", 500);
    asking["statusMessage"] = json!("999%");
    asking["inputRequests"] = json!({"confirm": {"method": "elicitation/create"}});
    notify(&mut h, "notifications/tasks", asking);
    let last_status = h
        .persisted
        .iter()
        .rev()
        .find(|w| matches!(w, TaskWrite::Status { .. }));
    assert!(
        matches!(last_status, Some(TaskWrite::Status { status: TaskStatus::InputRequired, message: Some(m), .. }) if m == "999%"),
        "{last_status:?}"
    );
}
