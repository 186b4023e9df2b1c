//! Subscriptions a server never confirms: the session era's `resources/subscribe` left
//! unanswered, the 2026-07-28 revision's listen stream never acknowledged. Either way the
//! `Subscribe` is answered by the call timeout, and the subscription is kept.

use std::time::{Duration, Instant};

use mcp_supervisor::{ErrorKind, Subscribe};
use serde_json::json;

use super::subscribing;
use crate::common::*;
use crate::in_both_eras;

async fn a_subscription_the_server_never_confirms_is_answered_by_its_deadline() {
    let script = json!({"rules": [{"method": subscribing(), "do": []}]});
    let mut settings = quick_settings();
    settings.call_timeout = Duration::from_secs(1);
    let (sup, events) = start_supervisor(settings, [hostile("mute", script)]);
    events.ready("mute", 1).await;
    let asked = Instant::now();
    let subscribe = Subscribe {
        server: "mute".into(),
        uri: "demo://x".into(),
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), sup.send(subscribe)).await;
    let error = answer
        .expect("answered, not left waiting")
        .unwrap()
        .expect_err("never confirmed");
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(asked.elapsed() >= Duration::from_secs(1), "not before it");
    let status = status(&sup, "mute").await;
    assert_eq!(status.subscriptions, ["demo://x"], "kept for the next try");
    assert_eq!(status.state.name(), "ready");
}

in_both_eras!(a_subscription_the_server_never_confirms_is_answered_by_its_deadline);
