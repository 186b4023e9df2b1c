//! Over Streamable HTTP, against the in-tree server's `job`: every task request carries
//! `Mcp-Name: <taskId>` (the server refuses one that does not), polls keep to the server's
//! interval, and each way a task ends reaches the caller as what it is.

use std::time::Duration;

use actix::prelude::*;
use mcp_supervisor::{
    AwaitTask, CallTool, CancelTask, ErrorKind, GetTask, ListTasks, ServerConfig, StartTask,
    Supervisor, TaskStart, TaskStatus,
};
use serde_json::json;

use crate::common::http_server::{Era, TestHttpServer};
use crate::common::*;

async fn supervise(server: &TestHttpServer) -> Addr<Supervisor> {
    let (sup, events) =
        start_supervisor(quick_settings(), [ServerConfig::http("web", server.url())]);
    events.ready("web", 1).await;
    sup
}

#[actix::test]
async fn a_job_run_as_a_task_answers_the_call_with_its_result() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    server.faults().task_poll_ms(100);
    let sup = supervise(&server).await;
    let call = CallTool::new("web", "job", json!({"ms": 600, "text": "built"}))
        .timeout(Duration::from_secs(10));
    let result = sup.send(call).await.unwrap().expect("the task's result");
    assert_eq!(text_of(&result), "built");
    let polls = server.stats().seen_posts("tasks/get");
    assert!(!polls.is_empty(), "it was polled");
    // 600 ms at one poll per 100 ms (or more): at most 7 polls.
    assert!(polls.len() <= 7, "{} polls", polls.len());
    for poll in &polls {
        let header = poll.headers.iter().find(|(k, _)| k == "mcp-name");
        assert_eq!(header.map(|(_, v)| v.as_str()), Some("job-1"));
    }
    assert_eq!(server.stats().task_polls("job-1"), polls.len());
}

#[actix::test]
async fn with_tasks_turned_off_the_job_runs_in_its_request() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    let mut settings = quick_settings();
    settings.tasks = false;
    let (sup, events) = start_supervisor(settings, [ServerConfig::http("web", server.url())]);
    events.ready("web", 1).await;
    let call = CallTool::new("web", "job", json!({"ms": 100, "text": "inline"}));
    let result = sup.send(call).await.unwrap().expect("the result");
    assert_eq!(text_of(&result), "inline");
    assert!(server.stats().seen_posts("tasks/get").is_empty());
}

#[actix::test]
async fn a_call_whose_deadline_passes_leaves_its_task_running_and_awaitable() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    let sup = supervise(&server).await;
    let call = CallTool::new("web", "job", json!({"ms": 1500, "text": "late"}))
        .timeout(Duration::from_millis(300));
    let error = sup.send(call).await.unwrap().expect_err("timed out");
    assert_eq!(error.kind(), ErrorKind::Timeout);
    let handle = error.task().expect("the task is named").clone();
    assert_eq!(handle.tool, "job");
    assert!(server.stats().seen_posts("tasks/cancel").is_empty());
    let listed = sup.send(ListTasks::new("web")).await.unwrap().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].handle.task_id, handle.task_id);
    let result = sup
        .send(AwaitTask::new(handle).timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("the result, later");
    assert_eq!(text_of(&result), "late");
}

#[actix::test]
async fn a_started_task_is_asked_about_cancelled_and_awaited() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    let sup = supervise(&server).await;
    let start = StartTask::new("web", "job", json!({"ms": 60000}));
    let TaskStart::Running(handle) = sup.send(start).await.unwrap().expect("started") else {
        panic!("a task")
    };
    let info = sup
        .send(GetTask::new(handle.clone()))
        .await
        .unwrap()
        .expect("its state");
    assert_eq!(info.status, TaskStatus::Working);
    assert_eq!(info.handle.ttl, Some(Duration::from_secs(600)));
    sup.send(CancelTask::new(handle.clone()))
        .await
        .unwrap()
        .expect("acknowledged");
    let error = sup
        .send(AwaitTask::new(handle).timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect_err("cancelled");
    assert_eq!(error.kind(), ErrorKind::Cancelled);
}

#[actix::test]
async fn a_task_the_server_forgot_is_an_unknown_outcome() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    server.faults().task_poll_ms(200);
    let sup = supervise(&server).await;
    let call = CallTool::new("web", "job", json!({"ms": 60000})).timeout(Duration::from_secs(10));
    let pending = sup.send(call);
    until("the task is polled", || {
        !server.stats().seen_posts("tasks/get").is_empty()
    })
    .await;
    server.faults().forget_tasks();
    let error = pending.await.unwrap().expect_err("lost");
    assert_eq!(error.kind(), ErrorKind::OutcomeUnknown);
    assert!(error.to_string().contains("Task not found"), "{error}");
}
