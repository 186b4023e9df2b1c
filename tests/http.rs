//! The Streamable HTTP transport against the in-tree HTTP test server and its fault switches:
//! sessions that the server forgets, streams cut mid-call, a server that goes away, refused
//! credentials.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::{Actor, Addr, Context, Handler, Recipient};
use common::http_server::{GetMode, SessionGone, TestHttpServer};
use common::*;
use mcp_supervisor::*;
use serde_json::json;

fn start(config: ServerConfig) -> (Addr<Supervisor>, Events) {
    let (events, recipient) = Events::start();
    let sup = Supervisor::builder()
        .settings(quick_settings())
        .server(config)
        .subscriber(recipient)
        .start()
        .unwrap();
    (sup, events)
}

fn echo(text: &str) -> CallTool {
    CallTool::new("web", "echo", json!({ "text": text })).timeout(Duration::from_secs(10))
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn status(sup: &Addr<Supervisor>) -> ServerStatus {
    sup.send(GetStatus::server("web"))
        .await
        .unwrap()
        .unwrap()
        .remove(0)
}

#[actix::test]
async fn calls_succeed_with_session_version_and_configured_headers() {
    let server = TestHttpServer::start().await;
    let config = ServerConfig::http("web", server.url()).bearer_token("t0ken");
    let (sup, events) = start(config);
    events.ready("web", 1).await;

    let result = sup.send(echo("over http")).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "over http");
    let headers = server.stats().last_headers();
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("authorization").as_deref(), Some("Bearer t0ken"));
    assert_eq!(get("mcp-protocol-version").as_deref(), Some("2025-11-25"));
    assert!(get("mcp-session-id").is_some());

    let st = status(&sup).await;
    assert_eq!(st.transport, "http");
    assert_eq!(st.tool_count(), 4);
    assert_eq!(st.server_info.unwrap().name, "test-http-server");
    // The credentials never show in Debug output.
    assert!(!format!(
        "{:?}",
        ServerConfig::http("web", server.url()).bearer_token("t0ken")
    )
    .contains("t0ken"));

    sup.send(Shutdown).await.unwrap();
    assert_eq!(
        server.stats().deletes(),
        1,
        "the session is deleted on shutdown"
    );
    server.stop().await;
}

/// The server forgets its sessions (as after a restart): the next call succeeds after a
/// transparent re-initialize, and a subscription made before keeps delivering updates.
async fn forgotten_session_is_rebuilt(answer: SessionGone) {
    let server = TestHttpServer::start().await;
    let (sup, events) = start(ServerConfig::http("web", server.url()));
    events.ready("web", 1).await;
    sup.send(Subscribe {
        server: "web".into(),
        uri: "test://r".into(),
    })
    .await
    .unwrap()
    .unwrap();

    server.faults().forget_sessions(answer);
    let result = sup.send(echo("again")).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "again");
    assert_eq!(server.stats().posts("initialize"), 2);
    assert_eq!(
        server.stats().tool_calls("echo"),
        1,
        "the rejected call was run once, after re-initialize"
    );
    assert_eq!(server.stats().posts("resources/subscribe"), 2);

    // The server drops updates while no GET stream is open: wait for the new session's.
    events.ready("web", 2).await;
    let stats = server.stats();
    until("the new session's GET stream", || stats.gets() >= 2).await;
    let notify = CallTool::new("web", "notify_resource", json!({"uri": "test://r"}));
    sup.send(notify).await.unwrap().unwrap();
    events
        .wait_count(
            "resources/updated",
            1,
            Duration::from_secs(10),
            |e| matches!(e, ServerEvent::ResourceUpdated { uri, .. } if uri == "test://r"),
        )
        .await;
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn forgotten_session_404() {
    forgotten_session_is_rebuilt(SessionGone::NotFound).await;
}

#[actix::test]
async fn forgotten_session_400() {
    forgotten_session_is_rebuilt(SessionGone::BadRequest).await;
}

struct Stamps(Arc<Mutex<Vec<Instant>>>);

impl Actor for Stamps {
    type Context = Context<Self>;
}

impl Handler<Progress> for Stamps {
    type Result = ();
    fn handle(&mut self, _: Progress, _: &mut Context<Self>) {
        self.0.lock().unwrap().push(Instant::now());
    }
}

#[actix::test]
async fn a_stream_cut_mid_call_is_resumed_after_the_servers_retry_delay() {
    let server = TestHttpServer::start().await;
    let (sup, events) = start(ServerConfig::http("web", server.url()));
    events.ready("web", 1).await;
    server.faults().retry_ms(Some(500));
    server.faults().drop_sse_after(Some(1));

    let stamps = Arc::new(Mutex::new(Vec::new()));
    let progress: Recipient<Progress> = Stamps(stamps.clone()).start().recipient();
    let slow = CallTool::new("web", "slow", json!({"seconds": 0.2, "steps": 2}))
        .timeout(Duration::from_secs(10))
        .on_progress(progress);
    let result = sup.send(slow).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "done");
    assert_eq!(server.stats().resumed_gets(), 1);
    assert_eq!(server.stats().tool_calls("slow"), 1, "resumed, not re-sent");

    // Progress 1 came on the POST stream just before it was cut (the server cuts 50 ms after
    // its last event); progress 2 came on the resumed GET, `retry: 500` later.
    let stamps = stamps.lock().unwrap().clone();
    assert_eq!(stamps.len(), 2);
    let gap = stamps[1] - stamps[0];
    assert!(
        gap >= Duration::from_millis(450) && gap <= Duration::from_millis(700),
        "{gap:?}"
    );
    assert_eq!(status(&sup).await.counters.reconnects, 0);
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn calls_during_a_three_second_outage_succeed_or_fail_at_their_deadline() {
    let server = TestHttpServer::start().await;
    let port = server.port();
    let (sup, events) = start(ServerConfig::http("web", server.url()));
    events.ready("web", 1).await;
    server.stop().await;
    events.state("web", "reconnecting", 1).await;

    let outage = Instant::now();
    let patient = sup.send(echo("patient").timeout(Duration::from_secs(15)));
    let hasty = sup.send(echo("hasty").timeout(Duration::from_secs(1)));
    let err = hasty.await.unwrap().unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable | ErrorKind::Timeout),
        "{err}"
    );
    let waited = outage.elapsed();
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_millis(1500),
        "{waited:?}"
    );

    // The outage lasts three seconds, then the server is back on the same port.
    tokio::time::sleep(Duration::from_secs(3).saturating_sub(outage.elapsed())).await;
    let server = TestHttpServer::start_on(port).await;
    let result = patient.await.unwrap().unwrap();
    assert_eq!(text_of(&result), "patient");
    events.ready("web", 2).await;
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn refused_credentials_fail_at_once_without_a_reconnect_storm() {
    let server = TestHttpServer::start().await;
    server.faults().status_override(Some(401));
    let (sup, events) = start(ServerConfig::http("web", server.url()));
    events.state("web", "failed", 1).await;
    let st = status(&sup).await;
    let err = st.last_error.unwrap();
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert!(err.to_string().contains("401"), "{err}");
    let err = sup.send(echo("x")).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(
        server.stats().requests(),
        1,
        "one refused initialize, no retries"
    );
    sup.send(Shutdown).await.unwrap();
    server.stop().await;

    // Credentials refused mid-session: that call fails, the connection stays.
    let server = TestHttpServer::start().await;
    let (sup, events) = start(ServerConfig::http("web", server.url()));
    events.ready("web", 1).await;
    let before = server.stats().requests();
    server.faults().status_override(Some(403));
    let err = sup.send(echo("x")).await.unwrap().unwrap_err();
    assert!(
        matches!(err, Error::Unauthorized { status: 403, .. }),
        "{err}"
    );
    assert!(
        server.stats().requests() - before <= 2,
        "{}",
        server.stats().requests() - before
    );
    server.faults().status_override(None);
    assert_eq!(text_of(&sup.send(echo("ok")).await.unwrap().unwrap()), "ok");
    assert_eq!(status(&sup).await.counters.reconnects, 0);
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn json_answers_keepalives_and_no_get_stream_are_fine() {
    for mode in [GetMode::MethodNotAllowed, GetMode::Conflict] {
        let server = TestHttpServer::start().await;
        server.faults().get_stream(mode);
        server.faults().json_responses(true);
        server.faults().keepalive_ms(Some(20));
        let (sup, events) = start(ServerConfig::http("web", server.url()));
        events.ready("web", 1).await;
        for i in 0..5 {
            let text = format!("json {i}");
            assert_eq!(
                text_of(&sup.send(echo(&text)).await.unwrap().unwrap()),
                text
            );
        }
        assert_eq!(server.stats().gets(), 1, "{mode:?}: no GET loop");
        server.faults().json_responses(false);
        let slow = CallTool::new("web", "slow", json!({"seconds": 0.2, "steps": 2}));
        assert_eq!(text_of(&sup.send(slow).await.unwrap().unwrap()), "done");
        sup.send(Shutdown).await.unwrap();
        server.stop().await;
    }
}

#[actix::test]
async fn a_server_error_reconnects_and_the_call_follows_its_retry_rules() {
    let server = TestHttpServer::start().await;
    let (sup, events) = start(ServerConfig::http("web", server.url()));
    events.ready("web", 1).await;
    server.faults().status_override(Some(503));
    // tools/call on an untrusted server: may have run, not re-sent.
    let err = sup.send(echo("x")).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    server.faults().status_override(None);
    events.ready("web", 2).await;
    // A safe method in flight across the same kind of failure is re-sent.
    let listed = sup.send(ListTools::new("web")).await.unwrap().unwrap();
    assert_eq!(listed.tools.len(), 4);
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn a_malformed_answer_is_an_invalid_response_not_a_hang() {
    use actix_web::{web, App, HttpResponse, HttpServer};
    // A server that initializes properly, then answers every request with broken JSON.
    let server = HttpServer::new(|| {
        App::new().route(
            "/mcp",
            web::post().to(|body: web::Bytes| async move {
                let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                match request["method"].as_str() {
                    Some("initialize") => HttpResponse::Ok().json(json!({
                        "jsonrpc": "2.0", "id": request["id"],
                        "result": {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "serverInfo": {"name": "broken", "version": "0"}}
                    })),
                    Some(m) if m.starts_with("notifications/") => HttpResponse::Accepted().finish(),
                    _ => HttpResponse::Ok()
                        .content_type("application/json")
                        .body("{not json"),
                }
            }),
        )
    })
    .workers(1)
    .bind(("127.0.0.1", 0))
    .unwrap();
    let port = server.addrs()[0].port();
    let running = server.run();
    let handle = running.handle();
    actix::spawn(running);

    let (sup, events) = start(ServerConfig::http(
        "web",
        format!("http://127.0.0.1:{port}/mcp"),
    ));
    events.ready("web", 1).await;
    let started = Instant::now();
    let err = sup.send(echo("x")).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidResponse, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered at once, not at the deadline"
    );
    sup.send(Shutdown).await.unwrap();
    handle.stop(false).await;
}
