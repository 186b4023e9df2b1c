//! The legacy HTTP+SSE transport (2024-11-05) against the in-tree SSE test server: calls and a
//! server notification over it, a stream cut mid-call, a server that goes away and comes back,
//! `auto` finding the legacy transport behind a URL, `type: "sse"` in an `mcpServers` file,
//! and an endpoint of another origin refused.

use std::time::Duration;

use crate::common::sse_server::SseTestServer;
use crate::common::*;
use actix::Addr;
use mcp_supervisor::*;
use serde_json::json;

fn start(config: ServerConfig) -> (Addr<Supervisor>, Events) {
    start_supervisor(quick_settings(), [config])
}

fn echo(text: &str) -> CallTool {
    CallTool::new("old", "echo", json!({ "text": text })).timeout(Duration::from_secs(10))
}

fn hang() -> CallTool {
    CallTool::new("old", "hang", json!({})).timeout(Duration::from_secs(10))
}

#[actix::test]
async fn calls_and_a_notification_go_over_the_legacy_transport() {
    let server = SseTestServer::start().await;
    let (sup, events) = start(ServerConfig::sse("old", server.url()));
    events.ready("old", 1).await;

    let result = sup.send(echo("over sse")).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "over sse");
    let log = CallTool::new("old", "log", json!({ "text": "a note" }));
    let result = sup.send(log).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "logged");
    events
        .wait_count(
            "the log notification",
            1,
            Duration::from_secs(10),
            |e| matches!(e, ServerEvent::Log { params, .. } if params["data"] == "a note"),
        )
        .await;

    let st = status(&sup, "old").await;
    assert_eq!(st.transport, "sse");
    assert_eq!(st.tool_count(), 3);
    assert_eq!(st.server_info.unwrap().name, "test-sse-server");
    assert_eq!(st.era, Some(mcp_supervisor::protocol::era::Era::Legacy));
    assert_eq!(server.gets(), 1);
    assert_eq!(
        server.refused_posts(),
        0,
        "nothing is POSTed to the SSE URL"
    );
    assert_eq!(
        server.posts("server/discover"),
        0,
        "no modern probe over SSE"
    );
    // Each POST's acknowledgement is read to its end, so its connection serves the next POST
    // (each opened its own before).
    let before = server.connections();
    for _ in 0..3 {
        sup.send(echo("again")).await.unwrap().unwrap();
    }
    assert_eq!(server.connections(), before, "the POSTs' connection reused");
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn a_stream_cut_mid_call_resends_an_idempotent_call_after_the_reconnect() {
    let server = SseTestServer::start().await;
    let (sup, events) = start(ServerConfig::sse("old", server.url()));
    events.ready("old", 1).await;
    server.faults().cut_on_call("hang");

    let call = hang().retry(RetryPolicy::Always);
    let result = sup.send(call).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "done");
    assert_eq!(server.tool_calls("hang"), 2, "sent, cut, sent again");
    assert_eq!(server.gets(), 2);
    assert_eq!(server.posts("initialize"), 2);
    events.ready("old", 2).await;
    assert_eq!(status(&sup, "old").await.counters.reconnects, 1);
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn a_stream_cut_mid_call_makes_a_tool_call_outcome_unknown() {
    let server = SseTestServer::start().await;
    let (sup, events) = start(ServerConfig::sse("old", server.url()));
    events.ready("old", 1).await;
    server.faults().cut_on_call("hang");

    let err = sup.send(hang()).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    assert_eq!(server.tool_calls("hang"), 1, "never run twice by us");
    // The connection comes back, and works.
    events.ready("old", 2).await;
    let result = sup.send(echo("after")).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "after");
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn calls_made_while_the_server_is_down_wait_and_succeed_once_it_is_back() {
    let server = SseTestServer::start().await;
    let port = server.port();
    let (sup, events) = start(ServerConfig::sse("old", server.url()));
    events.ready("old", 1).await;
    server.stop().await;
    events.state("old", "reconnecting", 1).await;

    let patient = sup.send(echo("patient").timeout(Duration::from_secs(20)));
    let server = SseTestServer::start_on(port).await;
    let result = patient.await.unwrap().unwrap();
    assert_eq!(text_of(&result), "patient");
    events.ready("old", 2).await;
    assert_eq!(status(&sup, "old").await.transport, "sse");
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

/// A URL of an `auto` server that refuses Streamable HTTP's POST with `status` is spoken to
/// over the legacy transport, and a reconnect goes straight to it.
async fn auto_falls_back_to_sse(status_code: u16) {
    let server = SseTestServer::start().await;
    server.faults().refuse_post_with(status_code);
    let (sup, events) = start(ServerConfig::http("old", server.url()));
    events.ready("old", 1).await;

    let result = sup.send(echo("found")).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "found");
    assert_eq!(status(&sup, "old").await.transport, "sse");
    let refused = server.refused_posts();
    assert!(refused >= 1, "Streamable HTTP was tried first");

    server.faults().cut_streams();
    events.ready("old", 2).await;
    let result = sup.send(echo("again")).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "again");
    assert_eq!(
        server.refused_posts(),
        refused,
        "the reconnect remembered the legacy transport"
    );
    assert_eq!(server.gets(), 2);
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn auto_falls_back_to_sse_on_404() {
    auto_falls_back_to_sse(404).await;
}

#[actix::test]
async fn auto_falls_back_to_sse_on_405() {
    auto_falls_back_to_sse(405).await;
}

#[actix::test]
async fn type_sse_in_an_mcp_servers_file() {
    let server = SseTestServer::start().await;
    let file = json!({ "mcpServers": { "old": { "type": "sse", "url": server.url() } } });
    let configs = ServerConfig::from_mcp_servers_json(&file.to_string()).unwrap();
    assert_eq!(configs[0].transport().kind(), "sse");
    let (sup, events) = start_supervisor(quick_settings(), configs);
    events.ready("old", 1).await;
    let result = sup.send(echo("from a file")).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "from a file");
    assert_eq!(server.refused_posts(), 0);
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn an_endpoint_of_another_origin_is_refused() {
    let server = SseTestServer::start().await;
    // Another host name for the same server: a POST there would be seen.
    let elsewhere = format!(
        "http://localhost:{}/messages?sessionId={{id}}",
        server.port()
    );
    server.faults().endpoint(&elsewhere);
    let config = ServerConfig::sse("old", server.url()).max_connect_retries(0);
    let (sup, events) = start(config);
    let failed = events.state("old", "failed", 1).await;
    let Some(ServerState::Failed { error, .. }) = state_of(&failed, "old") else {
        panic!("{failed:?}");
    };
    assert!(error.to_string().contains("another origin"), "{error}");
    assert_eq!(
        server.all_posts(),
        0,
        "nothing was sent to the other origin"
    );
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}
