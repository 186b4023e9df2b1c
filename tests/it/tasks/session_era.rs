//! The 2025-11-25 revision's experimental tasks, against the demo server in the session era:
//! a `tools/call` of a tool whose `execution.taskSupport` allows it goes out task-augmented,
//! the task is polled with `tasks/get`, its outcome fetched with `tasks/result`, and the
//! server's question during the task answered through the request handler.

use std::time::Duration;

use actix::prelude::*;
use mcp_supervisor::{
    AwaitTask, CallTool, ErrorKind, RpcError, ServerEvent, ServerRequest, Supervisor, TaskStatus,
};
use serde_json::{json, Value};

use crate::common::*;

struct Yes;

impl Actor for Yes {
    type Context = Context<Self>;
}

impl Handler<ServerRequest> for Yes {
    type Result = Result<Value, RpcError>;
    fn handle(&mut self, _: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        Ok(json!({"action": "accept", "content": {"ok": true}}))
    }
}

fn supervise(dir: &std::path::Path) -> (Addr<Supervisor>, Events) {
    let (events, recipient) = Events::start();
    let sup = Supervisor::builder()
        .settings(quick_settings())
        .server(demo_in("legacy", "old", dir).env("DEMO_LIST_TASKS", "1"))
        .subscriber(recipient)
        .request_handler(Yes.start().recipient(), json!({"elicitation": {}}))
        .start()
        .unwrap();
    (sup, events)
}

fn job(args: Value) -> CallTool {
    CallTool::new("old", "long_job", args).timeout(Duration::from_secs(20))
}

#[actix::test]
async fn a_task_augmented_call_is_polled_and_its_result_fetched() {
    let dir = tempdir();
    let (sup, events) = supervise(&path(&dir));
    events.ready("old", 1).await;
    let result = sup
        .send(job(json!({"ms": 300, "poll_ms": 30, "ask": true})))
        .await
        .unwrap()
        .expect("the result, through tasks/result");
    assert_eq!(text_of(&result), "done");
    let statuses: Vec<TaskStatus> = events
        .all()
        .iter()
        .filter_map(|e| match e {
            ServerEvent::TaskChanged { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(statuses.first(), Some(&TaskStatus::Working), "{statuses:?}");
    assert_eq!(
        statuses.last(),
        Some(&TaskStatus::Completed),
        "{statuses:?}"
    );
    let failed = sup
        .send(job(json!({"ms": 50, "poll_ms": 20, "fail": true})))
        .await
        .unwrap()
        .expect_err("failed");
    assert_eq!(failed.kind(), ErrorKind::Rpc);
    assert!(failed.to_string().contains("the job failed"), "{failed}");
}

#[actix::test]
async fn a_session_era_task_whose_call_timed_out_is_awaited_later() {
    let dir = tempdir();
    let (sup, events) = supervise(&path(&dir));
    events.ready("old", 1).await;
    let call = CallTool::new("old", "long_job", json!({"ms": 800, "poll_ms": 50}))
        .timeout(Duration::from_millis(200));
    let error = sup.send(call).await.unwrap().expect_err("timed out");
    let handle = error.task().expect("the task is named").clone();
    let result = sup
        .send(AwaitTask::new(handle).timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("the result");
    assert_eq!(text_of(&result), "done");
}

#[actix::test]
async fn a_tool_that_may_not_run_as_a_task_is_called_plainly() {
    let dir = tempdir();
    let (sup, events) = supervise(&path(&dir));
    events.ready("old", 1).await;
    let echo = CallTool::new("old", "echo", json!({"text": "plain"}));
    let result = sup.send(echo).await.unwrap().expect("a result");
    assert_eq!(text_of(&result), "plain");
    assert!(!events
        .all()
        .iter()
        .any(|e| matches!(e, ServerEvent::TaskChanged { .. })));
}
