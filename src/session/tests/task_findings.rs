//! The findings of an independent review of the tasks work, each a regression test of its
//! fix: the session era's tasks followed from a handle or a store, an outcome delivered once
//! without a store, a started task that asks at once, a waiter admitted and swept, an outage
//! that is no loss, the spec's shapes of a created task and of a `tasks/get`, `tasks/result`
//! as the call's own answer, and a task id escaped in a message.

use std::collections::BTreeSet;

use super::*;
use crate::protocol::as_sent::AsSent;
use crate::session::testing::Options;
use crate::tasks::{TaskHandle, TaskStatus};

const MS: Duration = Duration::from_millis(1);

fn handle(id: &str) -> TaskHandle {
    TaskHandle::new("demo", id, "job", std::time::SystemTime::now())
}

fn modern_session() -> Harness {
    let mut h = Harness::new(&modern_http(), settings());
    h.connect_modern(Duration::from_secs(3600));
    h
}

fn created(id: &str, interval_ms: u64) -> Value {
    json!({"resultType": "task", "taskId": id, "status": "working", "ttlMs": 600000,
           "pollIntervalMs": interval_ms})
}

fn completed(id: &str) -> Value {
    json!({"resultType": "complete", "taskId": id, "status": "completed", "ttlMs": 600000,
           "pollIntervalMs": 100, "result": {"content": [{"type": "text", "text": "done"}]}})
}

/// A 2025-11-25 session whose server takes task-augmented tools/call, tool `job` optional.
pub(super) fn session_era() -> Harness {
    let mut h = Harness::new(&legacy_stdio(), settings());
    let mut negotiated = legacy();
    let caps = json!({"tools": {}, "tasks": {"list": {}, "cancel": {},
                      "requests": {"tools": {"call": {}}}}});
    negotiated.capabilities = AsSent::from_object(caps.as_object().unwrap().clone()).unwrap();
    let (tools, _) = crate::protocol::lifecycle::parse_tools_page(
        "demo",
        json!({"tools": [{"name": "job", "inputSchema": {"type": "object"},
                          "execution": {"taskSupport": "optional"}}]}),
    )
    .unwrap();
    h.open(negotiated, false, tools);
    h
}

pub(super) fn exp_task(id: &str, status: &str) -> Value {
    json!({"taskId": id, "status": status, "ttl": 600000, "pollInterval": 5000,
           "createdAt": "2025-11-25T10:00:00Z", "lastUpdatedAt": "2025-11-25T10:00:00Z"})
}

fn of<'a>(written: &'a [Value], method: &str) -> Vec<&'a Value> {
    written.iter().filter(|m| m["method"] == method).collect()
}

fn start_task() -> CallRequest {
    let mut start = tool("job");
    start.options.start_task = true;
    start
}

/// A session-era task restored from a store (no flavour recorded) is read in its era's shape,
/// and its outcome fetched with `tasks/result`.
#[test]
fn a_session_era_task_restored_from_a_store_ends_with_its_result() {
    let mut h = session_era();
    h.session.restore_tasks(
        vec![Restored::Running {
            handle: handle("t"),
            status: TaskStatus::Working,
            poll_interval: Some(Duration::from_secs(5)),
            answered: BTreeSet::new(),
        }],
        h.now,
    );
    h.drive();
    h.advance(MS);
    let poll = h.written();
    h.answer(&poll[0], exp_task("t", "completed"));
    let fetch = h.written();
    assert_eq!(fetch[0]["method"], "tasks/result", "{fetch:?}");
    h.answer(
        &fetch[0],
        json!({"content": [{"type": "text", "text": "done"}]}),
    );
    assert!(!h
        .persisted
        .iter()
        .any(|w| matches!(w, TaskWrite::Forgotten { .. })));
    let waiter = Rc::new(Answer::default());
    h.session
        .await_task(handle("t"), None, waiter.clone(), h.now);
    h.drive();
    let result = waiter.take().expect("kept").expect("the result");
    assert_eq!(result["content"][0]["text"], "done");
}

/// A session-era handle followed by AwaitTask keeps to the interval the server asks for.
#[test]
fn a_session_era_handle_followed_keeps_to_its_poll_interval() {
    let mut h = session_era();
    let waiter = Rc::new(Answer::default());
    h.session.await_task(
        handle("t"),
        Some(Duration::from_secs(60)),
        waiter.clone(),
        h.now,
    );
    h.drive();
    let mut polls = Vec::new();
    for _ in 0..3 {
        loop {
            h.advance(10 * MS);
            if let Some(p) = of(&h.written(), "tasks/get").first().cloned().cloned() {
                polls.push((h.now, p));
                break;
            }
        }
        let p = polls.last().unwrap().1.clone();
        h.answer(&p, exp_task("t", "working"));
    }
    let gaps: Vec<Duration> = polls.windows(2).map(|w| w[1].0 - w[0].0).collect();
    assert!(
        gaps.iter().all(|g| *g >= Duration::from_secs(5)),
        "{gaps:?}"
    );
}

#[test]
fn an_outcome_delivered_without_a_store_is_not_delivered_again() {
    let mut h = modern_session();
    let started = h.call(start_task());
    let sent = h.written();
    h.answer(&sent[0], created("t", 100));
    assert!(started.take().is_some());
    h.advance(120 * MS);
    let poll = h.written();
    h.answer(&poll[0], completed("t"));
    let first = Rc::new(Answer::default());
    h.session
        .await_task(handle("t"), None, first.clone(), h.now);
    h.drive();
    assert!(matches!(first.take(), Some(Ok(_))));
    let second = Rc::new(Answer::default());
    h.session
        .await_task(handle("t"), None, second.clone(), h.now);
    h.drive();
    h.advance(MS);
    assert!(of(&h.written(), "tasks/get").is_empty(), "not asked again");
    let error = second
        .take()
        .expect("answered")
        .expect_err("delivered already");
    assert_eq!(error.kind(), ErrorKind::OutcomeUnknown);
    assert!(error.to_string().contains("delivered already"), "{error}");
}

/// 2025-11-25: `tasks/result` answers as the call would have: a `-32602` is the tool's.
#[test]
fn a_session_era_tasks_result_error_is_the_calls_own() {
    let mut h = session_era();
    let answer = h.call(tool("job"));
    let sent = h.written();
    assert!(sent[0]["params"]["task"].is_object(), "{}", sent[0]);
    h.answer(&sent[0], json!({"task": exp_task("t", "working")}));
    h.advance(Duration::from_millis(5600));
    let poll = h.written();
    h.answer(&poll[0], exp_task("t", "failed"));
    let fetch = h.written();
    assert_eq!(fetch[0]["method"], "tasks/result");
    h.send(json!({"jsonrpc": "2.0", "id": fetch[0]["id"],
                  "error": {"code": -32602, "message": "Invalid arguments: `n` must be > 0"}}));
    let error = answer.take().unwrap().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Rpc, "{error}");
}

/// 2025-11-25: on input_required, `tasks/result` is asked for at once (servers may hold their
/// questions for it), once, and the task is polled on beside it.
#[test]
fn a_session_era_task_that_needs_input_asks_for_its_result_once() {
    let mut h = session_era();
    let _answer = h.call(tool("job").timeout(Duration::from_secs(120)));
    let sent = h.written();
    h.answer(&sent[0], json!({"task": exp_task("t", "working")}));
    let mut methods = Vec::new();
    for _ in 0..3000 {
        h.advance(10 * MS);
        for m in h.written() {
            methods.push(m["method"].as_str().unwrap_or("").to_owned());
            if m["method"] == "tasks/get" {
                h.answer(&m, exp_task("t", "input_required"));
            }
        }
    }
    assert_eq!(
        methods.iter().filter(|m| *m == "tasks/result").count(),
        1,
        "{methods:?}"
    );
    assert!(
        methods.iter().filter(|m| *m == "tasks/get").count() >= 3,
        "{methods:?}"
    );
}

#[test]
fn a_task_id_is_escaped_in_a_timeouts_message() {
    let mut h = modern_session();
    let answer = h.call(tool("job").timeout(Duration::from_secs(1)));
    let sent = h.written();
    h.answer(&sent[0], created("a\nFORGED LOG LINE \u{1b}[31m", 500));
    h.advance(Duration::from_millis(1100));
    let error = answer.take().unwrap().unwrap_err();
    let text = error.to_string();
    assert!(!text.contains('\n') && !text.contains('\u{1b}'), "{text:?}");
    assert_eq!(
        error.task().map(|t| t.task_id.as_str()),
        Some("a\nFORGED LOG LINE \u{1b}[31m"),
        "the handle keeps the id as the server gave it"
    );
}

/// The extension's own example answers a `tasks/get` with `resultType: "task"`.
#[test]
fn a_tasks_get_answered_with_result_type_task_is_read() {
    let mut h = modern_session();
    let answer = h.call(tool("job"));
    let sent = h.written();
    h.answer(&sent[0], created("t", 100));
    h.advance(120 * MS);
    let poll = h.written();
    let failed = json!({"resultType": "task", "taskId": "t", "status": "failed",
        "ttlMs": 3600000, "statusMessage": "Tool execution failed: API rate limit exceeded",
        "error": {"code": -32603, "message": "API rate limit exceeded"}});
    h.answer(&poll[0], failed);
    let error = answer.take().unwrap().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Rpc, "{error}");
    assert!(
        error.to_string().contains("API rate limit exceeded"),
        "{error}"
    );
}

/// A server unreachable for ten minutes does not make us give a started task up.
#[test]
fn an_outage_is_not_the_loss_of_a_task() {
    let mut h = modern_session();
    let started = h.call(start_task());
    let sent = h.written();
    h.answer(&sent[0], created("t", 1000));
    assert!(started.take().is_some());
    h.lose("the network is down");
    for _ in 0..600 {
        h.advance(Duration::from_secs(1));
        if h.pending.is_some() {
            h.fail_attempt(Error::connection("demo", "connection refused"), None);
        }
    }
    assert!(
        !h.persisted
            .iter()
            .any(|w| matches!(w, TaskWrite::Forgotten { .. })),
        "{:?}",
        h.persisted.last()
    );
    assert_eq!(h.session.task_infos(h.now).len(), 1, "still followed");
}

/// AwaitTask takes a place among the calls: refused beyond `max_in_flight`, and let go when
/// its caller leaves.
#[test]
fn an_await_is_admitted_and_let_go_when_its_caller_leaves() {
    let mut h = Harness::new(
        &modern_http(),
        Settings {
            max_in_flight: 4,
            ..settings()
        },
    );
    h.connect_modern(Duration::from_secs(3600));
    let started = h.call(start_task());
    let sent = h.written();
    h.answer(&sent[0], created("t", 60_000));
    assert!(started.take().is_some());
    let mut refused = 0;
    for _ in 0..10 {
        let waiter = Rc::new(Answer::default());
        h.session.await_task(
            handle("t"),
            Some(Duration::from_secs(3600)),
            waiter.clone(),
            h.now,
        );
        h.drive();
        if matches!(waiter.take(), Some(Err(e)) if e.kind() == ErrorKind::Overloaded) {
            refused += 1;
        }
        waiter.leave();
    }
    assert_eq!(refused, 6, "four admitted");
    h.advance(Duration::from_secs(2));
    assert_eq!(
        h.session.pending_calls(),
        0,
        "the callers that left were let go"
    );
    let call = h.call(tool("other"));
    let sent = h.written();
    h.answer(&sent[0], json!({"content": []}));
    assert!(matches!(call.take(), Some(Ok(_))));
}

/// A StartTask whose task needs input in its first answer has the application asked.
#[test]
fn a_started_task_that_asks_at_once_is_answered() {
    let mut h = modern_session();
    let started = h.call(start_task());
    let sent = h.written();
    let mut seed = created("t", 100);
    seed["status"] = json!("input_required");
    seed["inputRequests"] = json!({"confirm": {"method": "elicitation/create",
                                               "params": {"message": "go on?"}}});
    h.answer(&sent[0], seed);
    assert!(started.take().is_some());
    let asked = h
        .other
        .iter()
        .filter(|c| matches!(c, Command::AskInput(_)))
        .count();
    assert_eq!(asked, 1);
}

/// A CreateTaskResult need not inline what its status brings: the task is followed.
#[test]
fn a_created_task_without_its_detail_is_followed() {
    let mut h = modern_session();
    let answer = h.call(tool("job"));
    let sent = h.written();
    let mut seed = created("t", 100);
    seed["status"] = json!("input_required");
    h.answer(&sent[0], seed);
    assert!(answer.take().is_none(), "waiting for the task");
    h.advance(Duration::from_millis(120));
    assert_eq!(of(&h.written(), "tasks/get").len(), 1);
}

/// Two followers of one task (a replacement's two generations, or two processes on one
/// store): what the store says the other recorded first is not done again here — its input
/// keys are not asked, its outcome is not delivered twice.
#[test]
fn what_another_follower_recorded_first_is_not_done_again() {
    let mut h = modern_session();
    h.refusing = true;
    let answer = h.call(tool("job"));
    let sent = h.written();
    h.answer(&sent[0], created("t", 100));
    h.advance(120 * MS);
    let poll = h.written();
    let mut asking = completed("t");
    asking["status"] = json!("input_required");
    asking.as_object_mut().unwrap().remove("result");
    asking["inputRequests"] = json!({"approve_payment": {"method": "elicitation/create"}});
    h.answer(&poll[0], asking);
    assert!(
        !h.other.iter().any(|c| matches!(c, Command::AskInput(_))),
        "asked although another follower answers it: {:?}",
        h.other
    );
    h.advance(120 * MS);
    let poll = h.written();
    h.answer(&poll[0], completed("t"));
    let error = answer
        .take()
        .expect("answered")
        .expect_err("taken by the other");
    assert_eq!(error.kind(), ErrorKind::OutcomeUnknown);
    assert!(error.to_string().contains("another follower"), "{error}");
}
