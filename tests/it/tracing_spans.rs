//! The spans a service's traces get from us: one `mcp.connect` per connection attempt, with
//! its outcome, era and protocol version when it ends, and one `mcp.call` per call, a child of
//! the span the caller was in when it made the call. Each test captures its own thread's spans
//! (`common::logs`), so the other tests' servers of the same names do not show up.

use std::time::Duration;

use crate::common::logs::{set_thread_default, LogCapture};
use crate::common::*;
use mcp_supervisor::*;
use serde_json::json;
use tracing::dispatcher::DefaultGuard;
use tracing_subscriber::fmt::format::FmtSpan;

/// Everything this thread's subscriber writes, with each span's fields as it closes.
struct Captured(LogCapture);

impl Captured {
    /// Captures this thread's spans until the guard drops.
    fn start() -> (Captured, DefaultGuard) {
        let captured = LogCapture::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_span_events(FmtSpan::CLOSE)
            .with_writer(move || writer.clone())
            .finish();
        (Captured(captured), set_thread_default(subscriber))
    }

    /// The lines that report a closed `name` span of `server`.
    fn closed(&self, name: &str, server: &str) -> Vec<String> {
        self.0
            .lines()
            .into_iter()
            .filter(|l| {
                l.contains(&format!("{name}{{")) && l.contains(&format!("server={server} "))
            })
            .filter(|l| l.contains(": close "))
            .collect()
    }

    fn connect_spans(&self, server: &str) -> Vec<String> {
        self.closed("mcp.connect", server)
    }
}

#[actix::test]
async fn each_connection_attempt_is_a_span_with_its_outcome() {
    let (captured, _guard) = Captured::start();
    let dir = tempdir();
    let missing = ServerConfig::stdio("missing", "/nonexistent/mcp-server");
    let mut settings = quick_settings();
    settings.max_reconnect_attempts = Some(1);
    let (sup, events) = start_supervisor(settings, [demo("demo", dir.path()), missing]);
    events.ready("demo", 1).await;
    until("the missing server's first attempt ended", || {
        !captured.connect_spans("missing").is_empty()
    })
    .await;
    sup.send(Shutdown).await.unwrap();

    let ready = captured.connect_spans("demo");
    assert_eq!(ready.len(), 1, "{ready:?}");
    for field in [
        "attempt=1",
        "transport=\"stdio\"",
        "outcome=\"ready\"",
        "era=\"legacy\"",
        "protocol_version=\"2025-11-25\"",
        "duration_ms=",
    ] {
        assert!(ready[0].contains(field), "{field} in {}", ready[0]);
    }
    let failed = &captured.connect_spans("missing")[0];
    assert!(
        failed.contains("outcome=\"invalid_connection\""),
        "{failed}"
    );
    assert!(
        !failed.contains("era="),
        "no era without a connection: {failed}"
    );
}

#[actix::test]
async fn each_call_is_a_span_under_the_callers_span() {
    let (captured, _guard) = Captured::start();
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), [demo("spans", dir.path())]);
    events.ready("spans", 1).await;
    let request = tracing::info_span!("request", route = "/tools/echo");
    // Made inside the request's span, sent (and awaited) outside it: the call's span still
    // belongs to the request.
    let echo = request.in_scope(|| {
        CallTool::new("spans", "echo", json!({"text": "hi"})).timeout(Duration::from_secs(10))
    });
    sup.send(echo).await.unwrap().expect("answered");
    let missing =
        CallTool::new("spans", "no_such_tool", json!({})).timeout(Duration::from_secs(10));
    let _ = sup.send(missing).await.unwrap();
    sup.send(Shutdown).await.unwrap();
    drop(request);

    let calls = captured.closed("mcp.call", "spans");
    let echo = calls
        .iter()
        .find(|l| l.contains("tool=\"echo\""))
        .unwrap_or_else(|| panic!("no echo span in {calls:?}"));
    assert!(
        echo.contains("request{route=\"/tools/echo\"}:mcp.call{"),
        "a child of the caller's span: {echo}"
    );
    for field in [
        "method=tools/call",
        "request_id=",
        "outcome=\"ok\"",
        "duration_ms=",
    ] {
        assert!(echo.contains(field), "{field} in {echo}");
    }
    let failed = calls
        .iter()
        .find(|l| l.contains("tool=\"no_such_tool\""))
        .unwrap_or_else(|| panic!("no span of the failed call in {calls:?}"));
    assert!(
        !failed.contains("request{"),
        "made outside any span: {failed}"
    );
    assert!(!failed.contains("outcome=\"ok\""), "{failed}");
}

/// `RUST_LOG=mcp_supervisor=debug` alone, without span-close events, shows one line per
/// finished call: server, method, tool, outcome and duration.
#[actix::test]
async fn each_finished_call_is_one_debug_event() {
    let (logs, _guard) = crate::common::logs::capture(tracing::Level::DEBUG);
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), [demo("events", dir.path())]);
    events.ready("events", 1).await;
    let echo = CallTool::new("events", "echo", json!({"text": "hi"}));
    sup.send(echo).await.unwrap().expect("answered");
    let missing = CallTool::new("events", "no_such_tool", json!({}));
    let _ = sup.send(missing).await.unwrap();
    sup.send(Shutdown).await.unwrap();

    let finished: Vec<String> = logs
        .lines()
        .into_iter()
        .filter(|l| {
            l.contains("DEBUG") && l.contains("call finished") && l.contains("server=events")
        })
        .collect();
    let echoes: Vec<&String> = finished
        .iter()
        .filter(|l| l.contains("tool=\"echo\""))
        .collect();
    assert_eq!(echoes.len(), 1, "one event per call: {finished:#?}");
    let echo = echoes[0];
    for field in ["method=tools/call", "outcome=\"ok\"", "duration_ms="] {
        assert!(echo.contains(field), "{field} in {echo}");
    }
    let failed = finished
        .iter()
        .find(|l| l.contains("tool=\"no_such_tool\""))
        .unwrap_or_else(|| panic!("no event for the failed call in {finished:#?}"));
    assert!(failed.contains("outcome=\"rpc\""), "{failed}");
}
