//! What happens while a connection is being made: notifications the server sends before the
//! handshake is over, and subscriptions the application makes meanwhile. Neither is lost. In
//! the 2026-07-28 revision the subscriptions travel in the listen stream, which is opened once
//! the connection is Ready: the same promises hold.

use std::time::Duration;

use mcp_supervisor::Subscribe;
use serde_json::json;

use super::{opening, subscribing};
use crate::common::*;
use crate::in_both_eras;

/// A `resources/updated` sent right after the handshake's re-subscribe (before the connection
/// is handed to the actor) used to be dropped as "ignored during handshake".
async fn a_notification_during_the_handshake_reaches_subscribers() {
    let script = json!({"rules": [
        {"method": subscribing(), "do": [
            {"default": true},
            {"notify": "notifications/resources/updated", "params": {"uri": "demo://x"}}
        ]},
        // The first connection dies at once, so the second handshake re-subscribes.
        {"method": "tools/call", "nth": 1, "do": [{"exit": 1}]}
    ]});
    let (sup, events) = start_supervisor(quick_settings(), [hostile("note", script)]);
    events.ready("note", 1).await;
    sup.send(Subscribe {
        server: "note".into(),
        uri: "demo://x".into(),
    })
    .await
    .unwrap()
    .expect("subscribed");
    events
        .resource_updated("demo://x", Duration::from_secs(5))
        .await;
    let crash = mcp_supervisor::Call::new("note", "tools/call", Some(json!({"name": "echo"})));
    let _ = sup.send(crash).await.unwrap();
    events.ready("note", 2).await;
    // The update after the second handshake's re-subscribe arrives too.
    events
        .wait_count("two updates", 2, Duration::from_secs(5), |e| {
            matches!(e, mcp_supervisor::ServerEvent::ResourceUpdated { .. })
        })
        .await;
}

/// A `Subscribe` made while the first handshake runs was kept but never sent: the handshake
/// had already taken its copy of the set. It is sent once the handshake is done.
async fn a_subscription_made_during_a_handshake_is_sent_after_it() {
    let script = json!({"rules": [
        {"method": opening(), "do": [{"sleep_ms": 300}, {"default": true}]},
        {"method": subscribing(), "do": [
            {"default": true},
            {"notify": "notifications/resources/updated", "params": {"uri": "demo://late"}}
        ]}
    ]});
    let (sup, events) = start_supervisor(quick_settings(), [hostile("late", script)]);
    sup.send(Subscribe {
        server: "late".into(),
        uri: "demo://late".into(),
    })
    .await
    .unwrap()
    .expect("kept for the connection");
    events
        .resource_updated("demo://late", Duration::from_secs(5))
        .await;
    assert_eq!(status(&sup, "late").await.subscriptions, ["demo://late"]);
}

in_both_eras!(
    a_notification_during_the_handshake_reaches_subscribers,
    a_subscription_made_during_a_handshake_is_sent_after_it,
);
