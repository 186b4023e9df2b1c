//! The Streamable HTTP transport against the in-tree HTTP test server and its fault switches:
//! sessions that the server forgets, streams cut mid-call, a server that goes away, refused
//! credentials.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::http_server::{GetMode, SessionGone, TestHttpServer};
use crate::common::*;
use crate::in_both_eras;
use actix::{Actor, Addr, Context, Handler, Recipient};
use mcp_supervisor::*;
use serde_json::json;

/// Runs an ad-hoc actix-web server on a loopback port: its port and the handle to stop it.
/// (A macro: `HttpServer`'s generic bounds are not worth spelling out in a function.)
macro_rules! serve {
    ($server:expr) => {{
        let server = $server
            .workers(1)
            .bind(("127.0.0.1", 0))
            .expect("bind a loopback port");
        let port = server.addrs()[0].port();
        let running = server.run();
        let handle = running.handle();
        actix::spawn(running);
        (port, handle)
    }};
}

fn start(config: ServerConfig) -> (Addr<Supervisor>, Events) {
    start_supervisor(quick_settings(), [config])
}

fn echo(text: &str) -> CallTool {
    CallTool::new("web", "echo", json!({ "text": text })).timeout(Duration::from_secs(10))
}

async fn web_status(sup: &Addr<Supervisor>) -> ServerStatus {
    status(sup, "web").await
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

    let st = web_status(&sup).await;
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
        .resource_updated("test://r", Duration::from_secs(10))
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
    assert_eq!(web_status(&sup).await.counters.reconnects, 0);
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

async fn calls_during_a_three_second_outage_succeed_or_fail_at_their_deadline() {
    let server = http_server().await;
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
    let server = http_server_on(port).await;
    let result = patient.await.unwrap().unwrap();
    assert_eq!(text_of(&result), "patient");
    events.ready("web", 2).await;
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

async fn refused_credentials_fail_at_once_without_a_reconnect_storm() {
    let server = http_server().await;
    server.faults().status_override(Some(401));
    let (sup, events) = start(ServerConfig::http("web", server.url()));
    events.state("web", "failed", 1).await;
    let st = web_status(&sup).await;
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
    let server = http_server().await;
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
    assert_eq!(web_status(&sup).await.counters.reconnects, 0);
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
async fn a_server_error_fails_that_call_by_its_retry_rules_and_keeps_the_session() {
    let server = TestHttpServer::start().await;
    let (sup, events) = start(ServerConfig::http("web", server.url()));
    events.ready("web", 1).await;
    // (503 and 429 say "not processed, overloaded": tests/it/hostile/http/.)
    server.faults().status_override(Some(500));
    // tools/call on an untrusted server: it may have run, so it is not re-sent.
    let err = sup.send(echo("x")).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    // A safe method is re-sent once, meets the 503 again, and is given up.
    let posts = server.stats().posts("tools/list");
    let err = sup.send(ListTools::new("web")).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert_eq!(
        server.stats().posts("tools/list") - posts,
        2,
        "sent, then re-sent once"
    );

    server.faults().status_override(None);
    let listed = sup.send(ListTools::new("web")).await.unwrap().unwrap();
    assert_eq!(listed.tools.len(), 4);
    let st = web_status(&sup).await;
    assert_eq!(
        st.counters.reconnects, 0,
        "one failed request does not cost the session"
    );
    assert_eq!(server.stats().posts("initialize"), 1);
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

async fn a_json_answer_slower_than_the_default_timeout_still_arrives() {
    let server = http_server().await;
    server.faults().json_responses(true);
    // Every answer is delayed by 1.5 s below, the liveness ping's too: give it time.
    let config = ServerConfig::http("web", server.url())
        .call_timeout(Duration::from_millis(300))
        .connect_timeout(Duration::from_millis(300))
        .ping_timeout(Duration::from_secs(5));
    let (sup, events) = start(config);
    events.ready("web", 1).await;
    server.faults().delay_ms(1500);
    // The call's own timeout is what counts, not the server's defaults.
    let slow = echo("patient").timeout(Duration::from_secs(10));
    assert_eq!(text_of(&sup.send(slow).await.unwrap().unwrap()), "patient");
    // A call that times out costs neither the session nor the other calls.
    let hasty = sup.send(echo("hasty").timeout(Duration::from_millis(200)));
    let patient = sup.send(echo("patient 2").timeout(Duration::from_secs(10)));
    assert_eq!(hasty.await.unwrap().unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(text_of(&patient.await.unwrap().unwrap()), "patient 2");
    assert_eq!(web_status(&sup).await.counters.reconnects, 0);
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn a_get_stream_that_ends_at_once_is_not_reopened_in_a_loop() {
    use actix_web::{web, App, HttpResponse, HttpServer};
    // A server whose GET stream says `retry: 0` and ends at once, every time.
    let gets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = gets.clone();
    let server = HttpServer::new(move || {
        let counter = counter.clone();
        App::new()
            .route(
                "/mcp",
                web::get().to(move || {
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    async {
                        HttpResponse::Ok()
                            .content_type("text/event-stream")
                            .body("retry: 0\n\n")
                    }
                }),
            )
            .route(
                "/mcp",
                web::post().to(|body: web::Bytes| async move {
                    let request: serde_json::Value =
                        serde_json::from_slice(&body).unwrap_or_default();
                    match request["method"].as_str() {
                        Some("initialize") => HttpResponse::Ok().json(json!({
                            "jsonrpc": "2.0", "id": request["id"],
                            "result": {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "serverInfo": {"name": "closer", "version": "0"}}
                        })),
                        _ => HttpResponse::Accepted().finish(),
                    }
                }),
            )
    });
    let (port, handle) = serve!(server);

    let (sup, events) = start(ServerConfig::http(
        "web",
        format!("http://127.0.0.1:{port}/mcp"),
    ));
    events.ready("web", 1).await;
    // Backing off from 100 ms, five empty streams take about 3 s; then it stops trying.
    until("the GET stream to be given up", || {
        gets.load(std::sync::atomic::Ordering::SeqCst) >= 5
    })
    .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let total = gets.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        total <= 6,
        "{total} GETs: the stream must not be reopened in a loop"
    );
    sup.send(Shutdown).await.unwrap();
    handle.stop(false).await;
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
    });
    let (port, handle) = serve!(server);

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

/// A server request whose id equals the id of our call in flight: our answer to it must never
/// be mistaken for our call, whatever HTTP status the server gives that answer.
#[actix::test]
async fn an_answer_to_a_server_request_is_never_mistaken_for_our_call() {
    use actix_web::{web, App, HttpResponse, HttpServer};
    use std::sync::atomic::{AtomicUsize, Ordering};
    for answer_status in [200u16, 400, 404] {
        let tool_posts = Arc::new(AtomicUsize::new(0));
        let counter = tool_posts.clone();
        let server = HttpServer::new(move || {
            let counter = counter.clone();
            App::new()
                .route(
                    "/mcp",
                    web::post().to(move |body: web::Bytes| {
                        let counter = counter.clone();
                        async move {
                            let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                            match request["method"].as_str() {
                                Some("initialize") => HttpResponse::Ok()
                                    .insert_header(("mcp-session-id", "abc"))
                                    .json(json!({
                                        "jsonrpc": "2.0", "id": request["id"],
                                        "result": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                   "serverInfo": {"name": "asker", "version": "0"}}
                                    })),
                                Some("tools/call") => {
                                    counter.fetch_add(1, Ordering::SeqCst);
                                    // Ask the client something with the same id as its call,
                                    // then answer the call a little later.
                                    let id = request["id"].clone();
                                    let ask = json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"});
                                    let done = json!({"jsonrpc": "2.0", "id": id,
                                                      "result": {"content": [{"type": "text", "text": "done"}]}});
                                    let events = futures_util::stream::unfold(0, move |n| {
                                        let (ask, done) = (ask.clone(), done.clone());
                                        async move {
                                            let event = match n {
                                                0 => format!("data: {ask}\n\n"),
                                                1 => {
                                                    tokio::time::sleep(Duration::from_millis(500)).await;
                                                    format!("data: {done}\n\n")
                                                }
                                                _ => return None,
                                            };
                                            Some((Ok::<_, std::io::Error>(bytes::Bytes::from(event)), n + 1))
                                        }
                                    });
                                    HttpResponse::Ok().content_type("text/event-stream").streaming(events)
                                }
                                Some(_) => HttpResponse::Accepted().finish(),
                                // Our answer to roots/list.
                                None => HttpResponse::build(
                                    actix_web::http::StatusCode::from_u16(answer_status).unwrap(),
                                )
                                .finish(),
                            }
                        }
                    }),
                )
                .route("/mcp", web::get().to(|| async { HttpResponse::MethodNotAllowed().finish() }))
        });
        let (port, handle) = serve!(server);

        let (sup, events) = start(ServerConfig::http(
            "web",
            format!("http://127.0.0.1:{port}/mcp"),
        ));
        events.ready("web", 1).await;
        let outcome = sup
            .send(CallTool::new("web", "x", json!({})).timeout(Duration::from_secs(10)))
            .await
            .unwrap();
        match (answer_status, outcome) {
            // A 404 says the session is gone: the call in flight may have run.
            (404, Err(e)) => assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}"),
            (_, Ok(result)) => assert_eq!(text_of(&result), "done"),
            (status, Err(e)) => panic!("HTTP {status} on our answer failed our call: {e}"),
        }
        assert_eq!(
            tool_posts.load(Ordering::SeqCst),
            1,
            "HTTP {answer_status}: the tool was sent once"
        );
        sup.send(Shutdown).await.unwrap();
        handle.stop(false).await;
    }
}

#[actix::test]
async fn an_unreachable_server_fails_with_the_real_reason() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config =
        ServerConfig::http("web", format!("http://127.0.0.1:{port}/mcp")).max_connect_retries(0);
    let (sup, events) = start(config);
    events.state("web", "failed", 1).await;
    let err = web_status(&sup).await.last_error.unwrap();
    assert_eq!(err.kind(), ErrorKind::InvalidConnection);
    assert!(
        err.to_string()
            .contains("cannot connect to http://127.0.0.1"),
        "{err}"
    );
    sup.send(Shutdown).await.unwrap();
}

// These tests are blind to the protocol era: once per era (the server speaks only that one).
in_both_eras!(
    calls_during_a_three_second_outage_succeed_or_fail_at_their_deadline,
    refused_credentials_fail_at_once_without_a_reconnect_storm,
    a_json_answer_slower_than_the_default_timeout_still_arrives,
);

/// More calls in flight on one HTTP server than awc's default pool (100 connections) held:
/// the liveness check after a timeout must not queue behind the calls it judges, or a healthy
/// server is declared dead and every call in flight answered `outcome_unknown`, most of them
/// never sent. Every call is answered by the server, and the connection stays.
#[actix::test]
async fn three_hundred_calls_in_flight_do_not_starve_the_liveness_check() {
    use crate::common::http_server::Era;
    for era in [Era::Legacy, Era::Modern] {
        let server = TestHttpServer::start_with(era).await;
        let (sup, events) = start(ServerConfig::http("web", server.url()));
        events.ready("web", 1).await;
        let slow = |seconds: f64, timeout| {
            CallTool::new("web", "slow", json!({ "seconds": seconds }))
                .timeout(Duration::from_secs(timeout))
        };
        let calls: Vec<_> = (0..300).map(|_| sup.send(slow(2.0, 20))).collect();
        // Sent at once (a request to the supervisor goes out when polled).
        let calls = actix::spawn(futures_util::future::join_all(calls));
        while web_status(&sup).await.pending_calls < 300 {
            tokio::task::yield_now().await;
        }
        // One call times out, which starts the liveness check while the 300 are in flight.
        let hasty = sup.send(slow(10.0, 1)).await.unwrap().unwrap_err();
        assert_eq!(hasty.kind(), ErrorKind::Timeout, "{era:?}: {hasty}");
        for (i, call) in calls.await.unwrap().into_iter().enumerate() {
            let result = call.unwrap();
            assert!(result.is_ok(), "{era:?}: call {i}: {result:?}");
        }
        let st = web_status(&sup).await;
        assert_eq!(st.counters.reconnects, 0, "{era:?}: {:?}", st.last_error);
        assert_eq!(
            server.stats().tool_calls("slow"),
            301,
            "{era:?}: each sent once"
        );
        sup.send(Shutdown).await.unwrap();
        server.stop().await;
    }
}

/// A 2026-07-28 server with nothing open to it (no listen stream) dies while idle, and comes
/// back at the same address: the first call's request meets a closed connection and a refused
/// one — it never reached a server — so it waits through the reconnects and goes out once the
/// server is back, within its deadline, whatever its retry policy. Meanwhile the server is not
/// shown Ready on the strength of a cached discovery that reached nobody (it has no tools, so a
/// reconnect that reuses the discovery asks it nothing): at most once, then the discovery is
/// dropped and every attempt asks. (The server's death is a relay in front of it that closes
/// every connection and stops listening.)
#[actix::test]
async fn a_call_to_an_idle_modern_server_that_died_goes_out_when_it_is_back() {
    use crate::common::cutting_proxy::CuttingProxy;
    use crate::common::http_server::{Canned, Era, Target};
    let server = TestHttpServer::start_with(Era::Modern).await;
    // A server with no change notifications to listen for: nothing stays open to it.
    let discover = Canned::status(200)
        .header("content-type", "application/json")
        .body(concat!(
            r#"{"jsonrpc":"2.0","id":{id},"result":{"resultType":"complete","#,
            r#""supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":3600000}}"#
        ));
    server
        .faults()
        .canned(Target::Post("server/discover".into()), discover);
    let proxy = CuttingProxy::start(server.port()).await;
    let port = proxy.port;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (sup, events) = start(ServerConfig::http("web", url));
    events.ready("web", 1).await;
    assert_eq!(
        status(&sup, "web").await.era,
        Some(mcp_supervisor::protocol::era::Era::Modern)
    );
    proxy.stop().await;

    let call = CallTool::new("web", "counter", json!({}))
        .retry(RetryPolicy::Never)
        .timeout(Duration::from_secs(15));
    let call = sup.send(call);
    // The refused request is noticed (nothing else would tell): the server is down, and
    // attempt after attempt says so.
    events.state("web", "reconnecting", 4).await;
    let readys = events
        .states("web")
        .iter()
        .filter(|s| **s == "ready")
        .count();
    assert!(readys <= 2, "{:?}", events.states("web"));
    let proxy = CuttingProxy::start_on(port, server.port()).await;
    let result = call.await.unwrap().expect("sent once the server was back");
    assert_eq!(text_of(&result), "1");
    assert_eq!(server.stats().tool_calls("counter"), 1);
    let st = status(&sup, "web").await;
    assert_eq!(
        st.counters.calls_resent, 0,
        "never sent before: not a re-send"
    );
    sup.send(Shutdown).await.unwrap();
    drop(proxy);
    server.stop().await;
}

/// A connection serves the next request (an SSE answer is read to its end, which gives the
/// connection back to the pool: each call used to open a new one), if it was idle no longer
/// than `http_idle_timeout` (default 4 s, below the 5 s of common servers), so that a request
/// is not sent on one the server is closing at that moment (a `tools/call` lost so has an
/// unknown outcome). The pauses are the scenario (a connection left idle), not a
/// synchronisation.
#[actix::test]
async fn a_connection_is_reused_unless_idle_longer_than_http_idle_timeout() {
    let server = TestHttpServer::start().await;
    let idle = Duration::from_millis(300);
    for (idle_timeout, new_connections) in [(None, 0), (Some(Duration::from_millis(100)), 3)] {
        let mut config = ServerConfig::http("web", server.url());
        if let Some(timeout) = idle_timeout {
            config = config.http_idle_timeout(timeout);
        }
        let (sup, events) = start(config);
        events.ready("web", 1).await;
        sup.send(echo("warm")).await.unwrap().unwrap();
        let before = server.stats().connections();
        for _ in 0..3 {
            tokio::time::sleep(idle).await;
            sup.send(echo("after a pause")).await.unwrap().unwrap();
        }
        assert_eq!(
            server.stats().connections() - before,
            new_connections,
            "three calls {idle:?} apart with http_idle_timeout {idle_timeout:?}"
        );
        sup.send(Shutdown).await.unwrap();
    }
    server.stop().await;
}

/// A server that keeps an answer's stream open after the answer: the call is answered at its
/// answer, the stream is dropped after a short wait (its connection with it), and the
/// server's next answers are not waited on (each then costs its connection).
#[actix::test]
async fn an_answer_stream_kept_open_is_answered_at_once_and_not_waited_on_again() {
    use crate::common::http_server::{Body, Canned, Target};
    let (logs, _guard) = logs::capture(tracing::Level::DEBUG);
    let server = TestHttpServer::start().await;
    let (sup, events) = start(ServerConfig::http("web", server.url()));
    events.ready("web", 1).await;
    sup.send(echo("warm")).await.unwrap().unwrap();
    server.faults().canned(
        Target::Post("tools/call".into()),
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .stream(Body::Repeat {
                chunk: br#"data: {"jsonrpc":"2.0","id":{id},"result":{"content":[{"type":"text","text":"held"}]}}

"#
                .to_vec(),
                count: Some(1),
                every: Duration::ZERO,
                hold: true,
            })
            .times(1),
    );
    let result = sup.send(echo("held")).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "held");
    until("the held stream given up", || {
        logs.lines()
            .iter()
            .any(|line| line.contains("stayed open after its answer"))
    })
    .await;
    let before = server.stats().connections();
    for _ in 0..3 {
        sup.send(echo("next")).await.unwrap().unwrap();
    }
    assert_eq!(
        server.stats().connections() - before,
        3,
        "each answer's stream dropped at its answer"
    );
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}
