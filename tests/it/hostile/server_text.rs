//! Server text that tries to forge our logs or fill our memory: line breaks and carriage
//! returns in error messages, method names and stdout lines, ANSI escapes and bidi overrides on
//! stderr, a megabyte where a protocol version goes, forged HTTP error bodies and
//! `WWW-Authenticate` headers. Whatever a server writes, each of our log records stays one line
//! with no control character, and what we keep of its text is bounded.
//!
//! Logs are captured with tracing-subscriber's default `fmt` formatter, as a thread-local
//! default (`common::logs`): an `#[actix::test]` runs the supervisor, its actors and the stdio
//! transport's tasks on the test's own thread, so the capture sees them all and no other test's
//! lines.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_supervisor::{Call, ErrorKind, ServerConfig, Settings, Shutdown};
use serde_json::json;

use super::{opening, opening_result};
use crate::common::logs::set_thread_default;
use crate::common::*;
use crate::in_both_eras;

/// The timestamp the forgeries use: no line of ours starts with it.
const FORGED: &str = "2026-12-01T00:00:00Z";

/// Upper bound for one captured log line: a few bounded pieces of server text and our own.
const MAX_LINE: usize = 8 * 1024;

/// Formatted log output, as the formatter wrote it.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    fn lines(&self) -> Vec<String> {
        self.text().split('\n').map(str::to_owned).collect()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures every log record made on this thread until the guard drops.
fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (logs, set_thread_default(subscriber))
}

/// A bidi control, a C1 control or another control character a log line must not carry.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// No forged record, no control character, no unbounded line.
fn assert_unforged(logs: &Logs) {
    let raw = logs.text();
    let lines = logs.lines();
    for line in &lines {
        assert!(
            !line.trim_start().starts_with(FORGED),
            "a forged log record: {line:?}\nall: {lines:#?}"
        );
        assert!(line.len() <= MAX_LINE, "a log line of {} bytes", line.len());
        assert!(
            !line.chars().any(is_unsafe),
            "a control character in a log line: {line:?}"
        );
    }
    assert!(!raw.contains('\r'), "a raw carriage return in the log");
}

/// Waits (bounded) for a log line containing `needle`.
async fn logged(logs: &Logs, needle: &str) -> String {
    let found = Arc::new(Mutex::new(None));
    let slot = found.clone();
    let (logs2, needle2) = (logs.clone(), needle.to_owned());
    until(&format!("a log line with {needle:?}"), move || {
        let line = logs2.lines().into_iter().find(|l| l.contains(&needle2));
        let hit = line.is_some();
        *slot.lock().unwrap() = line;
        hit
    })
    .await;
    let line = found.lock().unwrap().take();
    line.expect("found above")
}

/// Defect 8: an `id: null` error's message, a server request's method, a non-JSON stdout line
/// and a notification's params were logged raw, so that `\n` forged whole records (with the
/// level and timestamp of the server's choosing) and `\r` or a bidi override rewrote the line.
async fn server_text_cannot_forge_log_lines() {
    let (logs, _guard) = capture();
    let forged = format!("bad\n{FORGED} ERROR forged: pwned\r\u{1b}[2K\u{202e}");
    let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": forged}});
    // After the handshake (which ignores what it does not wait for), on the first call.
    let script = json!({"rules": [{"method": "tools/call", "nth": 1, "do": [
        {"raw": error.to_string()},
        {"request": format!("evil\n{FORGED} ERROR forged method"), "id": 7},
        {"raw": format!("not json\r{FORGED} ERROR forged stdout\u{202e}\u{9b}")},
        {"notify": "notifications/message",
         "params": {"level": "info", "data": format!("\u{202e}{FORGED} ERROR forged\u{85}")}},
        {"stderr": format!("\u{1b}[31mred\u{1b}[0m\r{FORGED} ERROR forged stderr\u{202e}")},
        {"default": true}
    ]}]});
    let (sup, events) = start_supervisor(quick_settings(), [hostile("forger", script)]);
    events.ready("forger", 1).await;
    // stdout is read in order: once the call is answered, what came before it was handled.
    let call = Call::new(
        "forger",
        "tools/call",
        Some(json!({"name": "echo", "arguments": {}})),
    )
    .timeout(Duration::from_secs(10));
    sup.send(call).await.unwrap().expect("the echo");
    let warn = logged(&logs, "could not attribute").await;
    // A server request goes to the handler (here: none) in the session era; the modern one
    // has none, and refuses it at once.
    let refused = match era() {
        "modern" => "a modern server sent a request; refused",
        _ => "server request without a handler",
    };
    logged(&logs, refused).await;
    logged(&logs, "not JSON-RPC").await;
    logged(&logs, "server log message").await;
    logged(&logs, "forged stderr").await;
    assert_unforged(&logs);
    assert!(
        warn.contains("bad\\n2026-12-01"),
        "escaped, not dropped: {warn}"
    );
    sup.send(Shutdown).await.unwrap();
}

/// `partial` actions that write the opening's result (see [`opening_result`]) with `kib` KiB
/// of `9` where its protocol version goes: too big for the script's environment variable, so
/// the server writes it in pieces.
fn huge_version_reply(kib: usize) -> serde_json::Value {
    const MARK: &str = "@VERSION@";
    let result = json!({"jsonrpc": "2.0", "id": 0, "result": opening_result(MARK)}).to_string();
    let (before, after) = result.split_once(MARK).expect("the mark is in the result");
    let before = before.replacen("\"id\":0", "\"id\":{id}", 1);
    json!([
        {"partial": before},
        {"repeat": kib, "do": [{"partial": "9".repeat(1024)}]},
        {"raw": after}
    ])
}

/// Defect 9 (server text unbounded): a 1 MiB `protocolVersion` was copied whole into
/// `last_error`, the `StateChanged` message and the WARN lines. Each keeps a bounded part,
/// with a note of what was cut.
async fn a_megabyte_protocol_version_is_kept_and_shown_bounded() {
    let (logs, _guard) = capture();
    let script = json!({"rules": [{"method": opening(), "do": huge_version_reply(1024)}]});
    let mut settings = quick_settings();
    settings.max_connect_retries = 0;
    let (sup, events) = start_supervisor(settings, [hostile("huge", script)]);
    events.state("huge", "failed", 1).await;

    let status = status(&sup, "huge").await;
    let error = status.last_error.expect("the handshake's error is kept");
    assert_eq!(error.kind(), ErrorKind::UnsupportedProtocolVersion);
    let shown = error.to_string();
    assert!(shown.len() < 2048, "last_error is {} bytes", shown.len());
    assert!(shown.contains("bytes cut)"), "says what was cut: {shown}");
    for message in events.messages("huge") {
        assert!(
            message.len() < 2048,
            "a state change of {} bytes",
            message.len()
        );
    }
    assert_unforged(&logs);
    sup.send(Shutdown).await.unwrap();
}

/// A JSON-RPC error answer of a megabyte reaches its caller bounded.
async fn a_megabyte_error_message_reaches_the_caller_bounded() {
    let (logs, _guard) = capture();
    let script = json!({"rules": [{"method": "tools/call", "do": [
        {"partial": "{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{\"code\":-32000,\"message\":\"\\r\\n"},
        {"repeat": 1024, "do": [{"partial": "x".repeat(1024)}]},
        {"raw": "\"}}"}
    ]}]});
    let (sup, events) = start_supervisor(quick_settings(), [hostile("bigerr", script)]);
    events.ready("bigerr", 1).await;
    let call = Call::new(
        "bigerr",
        "tools/call",
        Some(json!({"name": "echo", "arguments": {}})),
    )
    .timeout(Duration::from_secs(10));
    let error = sup.send(call).await.unwrap().expect_err("an error answer");
    assert_eq!(error.kind(), ErrorKind::Rpc);
    let mcp_supervisor::Error::Rpc { message, .. } = &error else {
        panic!("{error:?}")
    };
    assert!(message.len() <= 512, "kept {} bytes", message.len());
    assert!(message.starts_with("\\r\\n"), "escaped: {message:.40}");
    assert!(message.ends_with("bytes cut)"), "{message:?}");
    assert_unforged(&logs);
    sup.send(Shutdown).await.unwrap();
}

/// ANSI escapes, carriage returns, bidi overrides and a 60 KiB line on stderr: the stderr
/// tail attached to the error of the process's end holds each line escaped and bounded, and the
/// log's one WARN per state change stays one line, the tail in a field of its own.
async fn stderr_is_escaped_and_bounded_in_errors_and_logs() {
    let (logs, _guard) = capture();
    let script = json!({"rules": [{"method": "tools/call", "nth": 1, "do": [
        {"stderr": "\u{1b}]0;pwned\u{7}\u{1b}[31mred\u{1b}[0m\rover\u{202e}written"},
        {"stderr": "y".repeat(60 * 1024)},
        {"exit": 1}
    ]}]});
    let (sup, events) = start_supervisor(quick_settings(), [hostile("ansi", script)]);
    events.ready("ansi", 1).await;
    let call = Call::new(
        "ansi",
        "tools/call",
        Some(json!({"name": "echo", "arguments": {}})),
    )
    .timeout(Duration::from_secs(10));
    let _ = sup.send(call).await.unwrap();
    events.state("ansi", "reconnecting", 1).await;

    let error = status(&sup, "ansi")
        .await
        .last_error
        .expect("the process's end");
    let tail = error.stderr_tail();
    assert!(tail.len() >= 2, "{tail:?}");
    for line in tail {
        assert!(
            line.len() <= 512,
            "a kept stderr line of {} bytes",
            line.len()
        );
        assert!(!line.chars().any(is_unsafe), "{line:?}");
    }
    assert!(
        tail.iter().any(|l| l.contains("\\u{1b}[31mred")),
        "{tail:?}"
    );
    let warn = logged(&logs, "Connection lost").await;
    assert!(warn.contains("stderr="), "the tail is a field: {warn}");
    assert!(
        !logs.lines().iter().any(|l| l.starts_with("  | ")),
        "the stderr tail was spliced into the log as lines of its own"
    );
    assert_unforged(&logs);
    sup.send(Shutdown).await.unwrap();
}

/// An HTTP server whose every POST is answered with `status`, `body` and, if given, a
/// `WWW-Authenticate` header (raw bytes: obs-text may carry UTF-8 for C1 and bidi controls).
async fn refusing_server(
    status: u16,
    body: String,
    auth: Option<Vec<u8>>,
) -> (String, actix_web::dev::ServerHandle) {
    use actix_web::{web, App, HttpResponse, HttpServer};
    let server = HttpServer::new(move || {
        let (body, auth) = (body.clone(), auth.clone());
        App::new().default_service(web::to(move || {
            let (body, auth) = (body.clone(), auth.clone());
            async move {
                let mut response = HttpResponse::build(
                    actix_web::http::StatusCode::from_u16(status).expect("a status"),
                );
                if let Some(auth) = auth {
                    response.insert_header((
                        "www-authenticate",
                        actix_web::http::header::HeaderValue::from_bytes(&auth)
                            .expect("obs-text is allowed"),
                    ));
                }
                response.body(body)
            }
        }))
    })
    .workers(1)
    .bind(("127.0.0.1", 0))
    .expect("bind");
    let port = server.addrs()[0].port();
    let server = server.run();
    let handle = server.handle();
    actix::spawn(server);
    (format!("http://127.0.0.1:{port}/mcp"), handle)
}

in_both_eras!(
    server_text_cannot_forge_log_lines,
    a_megabyte_protocol_version_is_kept_and_shown_bounded,
    a_megabyte_error_message_reaches_the_caller_bounded,
    stderr_is_escaped_and_bounded_in_errors_and_logs,
);

/// HTTP error bodies and `WWW-Authenticate` headers are server text too. One run covers both
/// eras' openings: the servers answer every request alike, so the `server/discover` probe is
/// refused first and the `initialize` after it.
#[actix::test]
async fn http_error_bodies_and_auth_headers_cannot_forge_log_lines() {
    let (logs, _guard) = capture();
    let body = format!("oops\n{FORGED} ERROR forged body\r\u{202e}");
    let (failing, failing_handle) = refusing_server(500, body, None).await;
    let mut auth = b"Bearer realm=\"".to_vec();
    auth.extend_from_slice("\u{9b}2J\u{202e}".as_bytes());
    auth.extend_from_slice(&[b'z'; 4000]);
    auth.push(b'"');
    let (refusing, refusing_handle) = refusing_server(401, String::new(), Some(auth)).await;

    let mut settings = Settings::default();
    settings.max_connect_retries = 0;
    let (sup, events) = start_supervisor(
        settings,
        [
            ServerConfig::http("failing", failing),
            ServerConfig::http("refusing", refusing),
        ],
    );
    events.state("failing", "failed", 1).await;
    events.state("refusing", "failed", 1).await;
    for name in ["failing", "refusing"] {
        let error = status(&sup, name)
            .await
            .last_error
            .expect("an error is kept");
        let shown = error.to_string();
        assert!(!shown.chars().any(is_unsafe), "{name}: {shown:?}");
        assert!(shown.len() < 2048, "{name}: {} bytes", shown.len());
    }
    logged(&logs, "forged body").await;
    assert_unforged(&logs);
    sup.send(Shutdown).await.unwrap();
    failing_handle.stop(false).await;
    refusing_handle.stop(false).await;
}
