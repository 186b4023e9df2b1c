//! The modern era's streams: a call's stream without event ids (a cut loses it), and
//! `subscriptions/listen` (acknowledgement, deliveries, graceful end, cut, client close).

use serde_json::json;

use super::client::*;
use crate::common::http_server::{Era, TestHttpServer};
use crate::common::until;

#[actix::test]
async fn a_call_streams_progress_without_event_ids_and_a_cut_loses_it() {
    let server = TestHttpServer::start_with(Era::Dual).await;
    let url = server.url();
    let slow = call(1, "slow", json!({"seconds": 0.1, "steps": 2}))
        .meta("progressToken", Some(json!("p1")));
    let mut sse = slow.send(&url).await.sse();
    let events = sse.rest().await;
    assert_eq!(sse.end, Some(End::Closed));
    assert_eq!(
        events.len(),
        3,
        "two progress notifications, then the answer"
    );
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events[0]["params"]["progressToken"], "p1");
    assert_eq!(events[2]["result"]["resultType"], "complete");
    assert_eq!(text(&events[2]), "done");
    assert!(
        !sse.raw.lines().any(|l| l.starts_with("id:")),
        "no event ids: {}",
        sse.raw
    );

    // A cut stream: the first progress notification, then the connection drops; the tool
    // still runs to its end, nothing can resume the answer.
    server.faults().drop_sse_after(Some(1));
    let raw = call(2, "slow", json!({"seconds": 0.1, "steps": 2}))
        .meta("progressToken", Some(json!("p2")))
        .send_raw(server.port())
        .await
        .expect("the raw answer");
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.contains("notifications/progress"), "{raw}");
    assert!(!raw.contains("\"result\""), "the answer is lost: {raw}");
    assert!(!raw.ends_with("0\r\n\r\n"), "cut, not ended: {raw}");
    let stats = server.stats();
    until("the cut call's tool ends", || stats.tool_calls("slow") == 2).await;

    // JSON answers by the same switch as the legacy era.
    server.faults().json_responses(true);
    let answer = call(3, "echo", json!({"text": "plain"})).send(&url).await;
    assert!(answer.content_type().starts_with("application/json"));
    assert_eq!(text(&answer.json().await), "plain");
    server.stop().await;
}

#[actix::test]
async fn a_listen_is_acknowledged_carries_its_notifications_and_ends_gracefully() {
    let server = TestHttpServer::start_with(Era::Dual).await;
    let url = server.url();
    let stats = server.stats();
    let filter = json!({
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourceSubscriptions": ["test://r"],
    });
    let listen = Req::modern(
        json!("L1"),
        "subscriptions/listen",
        json!({"notifications": filter}),
    );
    let answer = listen.send(&url).await;
    assert_eq!(answer.status, 200);
    let mut sse = answer.sse();
    let ack = sse.next().await.expect("the acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://r"]}),
        "prompts are not honoured: the server has no prompts"
    );
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], "L1");
    assert_eq!(stats.open_listens(), 1);

    // A modern notify_resource reaches the listen; an unsubscribed uri does not (the
    // tools_changed after it is the next event).
    let notify = |id, uri: &str| call(id, "notify_resource", json!({"uri": uri}));
    notify(2, "test://other").send(&url).await.response().await;
    notify(3, "test://r").send(&url).await.response().await;
    let updated = sse.next().await.expect("the update");
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "test://r");
    assert_eq!(updated["params"]["_meta"][SUBSCRIPTION_ID], "L1");
    server.faults().tools_changed();
    let changed = sse.next().await.expect("list_changed");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(changed["params"]["_meta"][SUBSCRIPTION_ID], "L1");

    // The server ends it: the listen's result, then the end of the stream.
    server.faults().end_listens();
    let end = sse.next().await.expect("the listen's result");
    assert_eq!(end["id"], "L1");
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(end["result"]["_meta"][SUBSCRIPTION_ID], "L1");
    assert_eq!(sse.next().await, None);
    assert_eq!(sse.end, Some(End::Closed));
    assert_eq!(stats.open_listens(), 0);

    // A numeric id stays a number; a listen ends by itself after its lifetime; one the client
    // closes stops counting as open.
    server.faults().end_listens_after(Some(50));
    let numbered = Req::modern(
        json!(7),
        "subscriptions/listen",
        json!({"notifications": {}}),
    );
    let mut sse = numbered.send(&url).await.sse();
    let ack = sse.next().await.expect("ack");
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], 7);
    assert_eq!(ack["params"]["notifications"], json!({}));
    let end = sse.next().await.expect("the result after the lifetime");
    assert_eq!(end["result"]["_meta"][SUBSCRIPTION_ID], 7);
    assert_eq!(sse.next().await, None);
    // On the wire: the result, then the terminating chunk.
    let raw = numbered
        .send_raw(server.port())
        .await
        .expect("the raw answer");
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.contains("\"result\""), "{raw}");
    assert!(raw.ends_with("\r\n0\r\n\r\n"), "a clean end: {raw}");
    server.faults().end_listens_after(None);
    let mut sse = listen.send(&url).await.sse();
    sse.next().await.expect("ack");
    until("one open listen", || stats.open_listens() == 1).await;
    drop(sse);
    until("the closed listen is gone", || stats.open_listens() == 0).await;
    // A cut listen ends without a result or the terminating chunk.
    let raw = listen.send_raw(server.port());
    until("the raw listen is open", || stats.open_listens() == 1).await;
    server.faults().cut_listens();
    let raw = raw.await.expect("the raw answer");
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.contains("acknowledged"), "{raw}");
    assert!(!raw.contains("\"result\""), "{raw}");
    assert!(!raw.ends_with("0\r\n\r\n"), "cut, not ended: {raw}");
    assert_eq!(stats.listens_opened(), 5);

    // An invalid filter is refused.
    let bad = Req::modern(
        json!(8),
        "subscriptions/listen",
        json!({"notifications": 1}),
    );
    assert_eq!(error_code(&bad.send(&url).await.json().await), Some(-32602));
    server.stop().await;
}
