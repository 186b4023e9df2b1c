//! Change notifications in the 2026-07-28 revision: `Subscribe` and the tool-list cache are
//! served by one `subscriptions/listen` stream, re-established after every reconnect or
//! respawn, re-opened when the server ends it, and a stream lost by error is a lost connection.

use std::time::Duration;

use mcp_supervisor::protocol::era::Era as ClientEra;
use mcp_supervisor::{CallTool, ServerConfig, ServerEvent, Subscribe};
use nix::sys::signal::Signal;
use serde_json::json;

use crate::common::http_server::{Era, TestHttpServer};
use crate::common::*;

const CLOCK: &str = "demo://clock";

fn updates(events: &Events) -> usize {
    events
        .all()
        .iter()
        .filter(|e| matches!(e, ServerEvent::ResourceUpdated { .. }))
        .count()
}

#[actix::test]
async fn updates_keep_arriving_across_a_kill_and_respawn() {
    let dir = tempdir();
    let (sup, events) =
        start_supervisor(quick_settings(), [demo_in("modern", "clock", &path(&dir))]);
    events.ready("clock", 1).await;
    assert_eq!(status(&sup, "clock").await.era, Some(ClientEra::Modern));
    sup.send(Subscribe {
        server: "clock".into(),
        uri: CLOCK.into(),
    })
    .await
    .unwrap()
    .expect("acknowledged by the server");
    let notify = || CallTool::new("clock", "notify", json!({"kind": "resource_updated"}));
    sup.send(notify()).await.unwrap().unwrap();
    events.resource_updated(CLOCK, Duration::from_secs(5)).await;

    kill(
        status(&sup, "clock").await.pid.expect("a pid"),
        Signal::SIGKILL,
    );
    events.ready("clock", 2).await;
    // The new process knows nothing: the listen was sent again with the subscription.
    sup.send(notify()).await.unwrap().unwrap();
    events
        .wait_count(
            "an update after the respawn",
            2,
            Duration::from_secs(5),
            |e| matches!(e, ServerEvent::ResourceUpdated { .. }),
        )
        .await;
    let log = event_log(&path(&dir), "clock");
    let listens = log.iter().filter(|l| l.starts_with("listen ")).count();
    assert!(listens >= 2, "{log:?}");
}

#[actix::test]
async fn tool_list_changes_come_through_the_listen_stream() {
    let dir = tempdir();
    let (sup, events) =
        start_supervisor(quick_settings(), [demo_in("modern", "tools", &path(&dir))]);
    events.ready("tools", 1).await;
    let notify = CallTool::new("tools", "notify", json!({"kind": "tools_changed"}));
    sup.send(notify).await.unwrap().unwrap();
    let changed = events
        .wait_count("tools changed", 1, Duration::from_secs(10), |e| {
            matches!(e, ServerEvent::ToolsChanged { .. })
        })
        .await;
    assert!(matches!(changed, ServerEvent::ToolsChanged { added, .. } if added == ["extra"]));
}

#[actix::test]
async fn a_listen_the_server_ends_is_opened_again() {
    let dir = tempdir();
    let config = demo_in("modern", "short", &path(&dir)).env("DEMO_LISTEN_END_AFTER_MS", "100");
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.ready("short", 1).await;
    sup.send(Subscribe {
        server: "short".into(),
        uri: CLOCK.into(),
    })
    .await
    .unwrap()
    .unwrap();
    let path = path(&dir);
    until("the listen ended and was opened again", || {
        let log = event_log(&path, "short");
        log.iter().filter(|l| l.starts_with("listen-end")).count() >= 1
            && log.iter().filter(|l| l.starts_with("listen ")).count() >= 3
    })
    .await;
    // Still delivering, on the same connection.
    let before = updates(&events);
    let notify = CallTool::new("short", "notify", json!({"kind": "resource_updated"}));
    sup.send(notify).await.unwrap().unwrap();
    events
        .wait_count(
            "an update on the reopened listen",
            before + 1,
            Duration::from_secs(5),
            |e| matches!(e, ServerEvent::ResourceUpdated { .. }),
        )
        .await;
    assert_eq!(status(&sup, "short").await.counters.reconnects, 0);
}

#[actix::test]
async fn over_http_a_listen_cut_is_a_lost_connection_and_comes_back() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    let (sup, events) =
        start_supervisor(quick_settings(), [ServerConfig::http("web", server.url())]);
    events.ready("web", 1).await;
    sup.send(Subscribe {
        server: "web".into(),
        uri: "demo://res".into(),
    })
    .await
    .unwrap()
    .expect("acknowledged");
    // The listen with the new filter replaced the first one, which is closed once the new one
    // is acknowledged (the server notices the close a moment later).
    let stats = server.stats();
    until("one listen open", move || stats.open_listens() == 1).await;
    let notify = CallTool::new("web", "notify_resource", json!({"uri": "demo://res"}));
    sup.send(notify.clone()).await.unwrap().unwrap();
    events
        .resource_updated("demo://res", Duration::from_secs(5))
        .await;

    server.faults().cut_listens();
    events.ready("web", 2).await;
    until("the listen is open again", || {
        server.stats().open_listens() == 1
    })
    .await;
    sup.send(notify).await.unwrap().unwrap();
    events
        .wait_count("an update after the cut", 2, Duration::from_secs(5), |e| {
            matches!(e, ServerEvent::ResourceUpdated { .. })
        })
        .await;
}
