//! Tasks the server tells of, against the demo server in both eras: a task's end reaches its
//! caller from the server's notification (`notifications/tasks` on a listen that names the
//! task in 2026-07-28, `notifications/tasks/status` in 2025-11-25) long before any poll would
//! have found it: the polls here are a minute apart, the caller's patience 20 s.

use std::time::Duration;

use mcp_supervisor::{CallTool, Supervisor};
use serde_json::json;

use crate::common::*;

async fn answered_by_the_notification(era: &str) {
    let dir = tempdir();
    let mut settings = quick_settings();
    settings.task_poll_floor = Duration::from_secs(60);
    settings.task_poll_ceiling = Duration::from_secs(60);
    let (events, recipient) = Events::start();
    let server = demo_in(era, "demo", &path(&dir)).env("DEMO_LIST_TASKS", "1");
    let sup = Supervisor::builder()
        .settings(settings)
        .server(server)
        .subscriber(recipient)
        .start()
        .unwrap();
    events.ready("demo", 1).await;
    let call = CallTool::new("demo", "long_job", json!({"ms": 300, "poll_ms": 20}))
        .timeout(Duration::from_secs(20));
    let result = sup.send(call).await.unwrap().expect("the result");
    assert_eq!(text_of(&result), "done", "{era}");
}

#[actix::test]
async fn the_extensions_notification_ends_the_wait() {
    answered_by_the_notification("modern").await;
}

#[actix::test]
async fn the_session_eras_status_notification_ends_the_wait() {
    answered_by_the_notification("legacy").await;
}
