//! Hostile Streamable HTTP servers: answers of the wrong kind (HTML where an SSE stream belongs,
//! odd content types and encodings, redirects, oversized headers, invalid session ids), servers
//! that are overloaded (429/503 and their `Retry-After`), and bodies that trickle, flood or
//! never end. The in-tree test server's canned answers (`Faults::canned`) play the server.
//!
//! Every case checks a promise: one answer per call by its deadline, the right answer or a
//! typed error at once, a session that is not torn down for what does not break it, and a
//! server's wish to be left alone honoured (never past our cap).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_supervisor::*;
use serde_json::json;

use crate::common::http_server::{Body, Canned, Target, TestHttpServer};
use crate::common::*;

fn web(server: &TestHttpServer) -> ServerConfig {
    ServerConfig::http("web", server.url()).bearer_token("s3cret")
}

fn echo(text: &str) -> CallTool {
    CallTool::new("web", "echo", json!({ "text": text })).timeout(Duration::from_secs(10))
}

/// A `slow` call that takes `seconds`, with a progress notification per step.
fn slow(seconds: f64) -> CallTool {
    CallTool::new("web", "slow", json!({ "seconds": seconds })).timeout(Duration::from_secs(10))
}

fn tools_call() -> Target {
    Target::Post("tools/call".into())
}

/// A JSON-RPC result for the request being answered (`{id}` is filled in by the server).
const ECHO_RESULT: &str =
    r#"{"jsonrpc":"2.0","id":{id},"result":{"content":[{"type":"text","text":"canned"}]}}"#;

/// The time between consecutive instants.
fn gaps(times: &[Instant]) -> Vec<Duration> {
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

async fn subscribe(sup: &actix::Addr<Supervisor>, uri: &str) {
    let subscribe = Subscribe {
        server: "web".into(),
        uri: uri.into(),
    };
    sup.send(subscribe).await.unwrap().expect("subscribed");
}

async fn start(server: &TestHttpServer) -> (actix::Addr<Supervisor>, Events) {
    let (sup, events) = start_supervisor(quick_settings(), [web(server)]);
    events.ready("web", 1).await;
    (sup, events)
}

// ---- the GET stream: whatever is not an SSE stream means "no GET stream" ----

/// Defect 7 and its kind: a GET stream answered with anything but a readable SSE stream must
/// not tear the connection down. Before, a `200 text/html` was retried as a failure, then the
/// connection was closed and re-initialized in a loop, costing calls in flight.
async fn a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(canned: Canned) {
    let server = TestHttpServer::start().await;
    server.faults().canned(Target::Get, canned);
    let (sup, events) = start(&server).await;
    until("the GET answered", || server.stats().canned() >= 1).await;
    // A call in flight over the time in which a failing GET stream used to be retried and then
    // given up with the connection (about 1.4 s).
    let done = sup
        .send(slow(2.0))
        .await
        .unwrap()
        .expect("the call in flight");
    assert_eq!(text_of(&done), "done");
    let st = status(&sup, "web").await;
    assert_eq!(st.state, ServerState::Ready);
    assert_eq!(st.counters.reconnects, 0, "{:?}", events.messages("web"));
    assert_eq!(server.stats().posts("initialize"), 1, "no re-initialize");
    assert_eq!(server.stats().gets(), 1, "the GET was not retried");
    sup.send(Shutdown).await.unwrap();
}

#[actix::test]
async fn a_get_stream_answered_200_html_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(
        Canned::status(200)
            .header("content-type", "text/html; charset=utf-8")
            .body("<html><body>It works!</body></html>"),
    )
    .await;
}

#[actix::test]
async fn a_get_stream_answered_200_empty_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(Canned::status(200)).await;
}

#[actix::test]
async fn a_get_stream_answered_with_json_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(
        Canned::status(200)
            .header("content-type", "application/json")
            .body(r#"{"jsonrpc":"2.0","method":"notifications/message"}"#),
    )
    .await;
}

#[actix::test]
async fn a_compressed_get_stream_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .header("content-encoding", "gzip")
            .body(b"\x1f\x8b\x08\x00\x00\x00\x00\x00".to_vec()),
    )
    .await;
}

#[actix::test]
async fn a_redirected_get_stream_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(
        Canned::status(307).header("location", "http://127.0.0.1:9/elsewhere"),
    )
    .await;
}

#[actix::test]
async fn a_get_answer_with_an_oversized_header_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .header("x-padding", "a".repeat(256 * 1024))
            .stream(Body::stall()),
    )
    .await;
}

#[actix::test]
async fn a_get_stream_in_mixed_case_with_a_charset_is_read() {
    let server = TestHttpServer::start().await;
    let event = r#"data: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mem://a"}}"#;
    server.faults().canned(
        Target::Get,
        Canned::status(200)
            .header("content-type", "Text/Event-Stream; charset=UTF-8")
            .stream(Body::Repeat {
                // Again and again: the first may come before we subscribed.
                chunk: format!("{event}\n\n").into_bytes(),
                count: None,
                every: Duration::from_millis(200),
                hold: false,
            }),
    );
    let (sup, events) = start(&server).await;
    subscribe(&sup, "mem://a").await;
    events
        .resource_updated("mem://a", Duration::from_secs(10))
        .await;
    sup.send(Shutdown).await.unwrap();
}

// ---- POST answers of the wrong kind: a typed error at once, never a hang ----

/// A call answered with `canned` fails at once (well before its deadline) with `kind`, and the
/// session carries on.
async fn a_post_answer_fails_its_call_at_once(canned: Canned, kind: ErrorKind, says: &str) {
    let server = TestHttpServer::start().await;
    let (sup, _events) = start(&server).await;
    server.faults().canned(tools_call(), canned.times(1));
    let started = Instant::now();
    let err = sup.send(echo("x")).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), kind, "{err}");
    assert!(err.to_string().contains(says), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "at once, not at the deadline"
    );
    let ok = sup
        .send(echo("after"))
        .await
        .unwrap()
        .expect("the session carries on");
    assert_eq!(text_of(&ok), "after");
    assert_eq!(server.stats().posts("initialize"), 1);
    sup.send(Shutdown).await.unwrap();
}

#[actix::test]
async fn a_post_answered_with_html_is_an_invalid_response() {
    a_post_answer_fails_its_call_at_once(
        Canned::status(200)
            .header("content-type", "text/html")
            .body("<html>hello</html>"),
        ErrorKind::InvalidResponse,
        "no response to this request",
    )
    .await;
}

#[actix::test]
async fn a_post_answered_with_an_empty_body_is_an_invalid_response() {
    a_post_answer_fails_its_call_at_once(
        Canned::status(200).header("content-type", "application/json"),
        ErrorKind::InvalidResponse,
        "no response to this request",
    )
    .await;
}

#[actix::test]
async fn a_post_answered_with_json_that_is_not_json_rpc_is_an_invalid_response() {
    a_post_answer_fails_its_call_at_once(
        Canned::status(200)
            .header("content-type", "application/json")
            .body(r#"{"hello": "world"}"#),
        ErrorKind::InvalidResponse,
        "no response to this request",
    )
    .await;
}

#[actix::test]
async fn a_compressed_post_answer_is_refused_not_misread() {
    a_post_answer_fails_its_call_at_once(
        Canned::status(200)
            .header("content-type", "application/json")
            .header("content-encoding", "gzip")
            .body(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03".to_vec()),
        ErrorKind::InvalidResponse,
        "Content-Encoding: gzip",
    )
    .await;
}

#[actix::test]
async fn a_json_body_that_never_ends_is_cut_at_max_message_bytes() {
    a_post_answer_fails_its_call_at_once(
        Canned::status(200)
            .header("content-type", "application/json")
            .stream(Body::repeat(vec![b' '; 64 * 1024], None)),
        ErrorKind::InvalidResponse,
        "reading the response body failed",
    )
    .await;
}

#[actix::test]
async fn a_post_answer_with_an_oversized_header_fails_only_its_call() {
    // The answer's head cannot be parsed: the exchange failed after the request was sent, so
    // the tool may have run (the canned answer ran nothing, but we cannot know that).
    a_post_answer_fails_its_call_at_once(
        Canned::status(200)
            .header("content-type", "application/json")
            .header("x-padding", "a".repeat(256 * 1024))
            .body(ECHO_RESULT),
        ErrorKind::OutcomeUnknown,
        "POST failed",
    )
    .await;
}

/// Media types are case-insensitive and may carry parameters: an SSE answer in mixed case with a
/// charset is an SSE answer (it used to be read as JSON and fail).
#[actix::test]
async fn content_types_in_mixed_case_and_with_a_charset_are_understood() {
    let server = TestHttpServer::start().await;
    let (sup, _events) = start(&server).await;
    for content_type in [
        "Text/Event-Stream; charset=UTF-8",
        "text/event-stream;charset=utf-8",
    ] {
        server.faults().canned(
            tools_call(),
            Canned::status(200)
                .header("content-type", content_type)
                .body(format!("data: {ECHO_RESULT}\n\n"))
                .times(1),
        );
        let ok = sup.send(echo("x")).await.unwrap().expect(content_type);
        assert_eq!(text_of(&ok), "canned", "{content_type}");
    }
    for content_type in [
        "Application/JSON; charset=utf-8",
        "application/json;charset=\"UTF-8\"",
    ] {
        server.faults().canned(
            tools_call(),
            Canned::status(200)
                .header("content-type", content_type)
                .body(ECHO_RESULT)
                .times(1),
        );
        let ok = sup.send(echo("x")).await.unwrap().expect(content_type);
        assert_eq!(text_of(&ok), "canned", "{content_type}");
    }
    sup.send(Shutdown).await.unwrap();
}

/// A request answered 202 (the spec wants JSON or SSE) has its answer nowhere: the call times
/// out at its deadline, it does not hang.
#[actix::test]
async fn a_request_answered_202_times_out_at_its_deadline() {
    let server = TestHttpServer::start().await;
    let (sup, _events) = start(&server).await;
    server
        .faults()
        .canned(tools_call(), Canned::status(202).times(1));
    let started = Instant::now();
    let call = echo("x").timeout(Duration::from_millis(500));
    let err = sup.send(call).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
    sup.send(Shutdown).await.unwrap();
}

/// An SSE event longer than `max_message_bytes` is skipped and counted; the response after it
/// still answers the call.
#[actix::test]
async fn an_sse_event_over_max_message_bytes_is_skipped_and_counted() {
    let server = TestHttpServer::start().await;
    let mut settings = quick_settings();
    settings.max_message_bytes = 64 * 1024;
    let (sup, events) = start_supervisor(settings, [web(&server)]);
    events.ready("web", 1).await;
    let huge = format!(
        r#"data: {{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{}"}}}}"#,
        "x".repeat(100 * 1024)
    );
    server.faults().canned(
        tools_call(),
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .body(format!("{huge}\n\ndata: {ECHO_RESULT}\n\n"))
            .times(1),
    );
    let ok = sup
        .send(echo("x"))
        .await
        .unwrap()
        .expect("the response after it");
    assert_eq!(text_of(&ok), "canned");
    assert_eq!(status(&sup, "web").await.counters.skipped_oversized, 1);
    sup.send(Shutdown).await.unwrap();
}

/// Bodies that trickle or never end are bounded by the call's deadline.
#[actix::test]
async fn slow_and_endless_bodies_end_at_the_calls_deadline() {
    let server = TestHttpServer::start().await;
    let (sup, _events) = start(&server).await;
    let bodies = [
        // A JSON answer, one byte every 100 ms.
        Canned::status(200)
            .header("content-type", "application/json")
            .stream(Body::Repeat {
                chunk: b" ".to_vec(),
                count: None,
                every: Duration::from_millis(100),
                hold: false,
            }),
        // An SSE answer of keep-alive comments, as fast as we read.
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .stream(Body::repeat(&b": keep-alive\n\n"[..], None)),
        // A head and then nothing.
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .stream(Body::stall()),
        // No head at all.
        Canned::status(200).delay(Duration::from_secs(3600)),
    ];
    for canned in bodies {
        server.faults().canned(tools_call(), canned.times(1));
        let started = Instant::now();
        let call = echo("x").timeout(Duration::from_millis(700));
        let err = sup.send(call).await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }
    let ok = sup
        .send(echo("after"))
        .await
        .unwrap()
        .expect("the session carries on");
    assert_eq!(text_of(&ok), "after");
    sup.send(Shutdown).await.unwrap();
}

/// A server that never answers a notification must not hold up what we send after it. Before,
/// the send loop waited for the answer to `notifications/initialized` for good, so the
/// handshake's `tools/list` was never sent.
#[actix::test]
async fn a_notification_that_is_never_answered_holds_nothing_up() {
    let server = TestHttpServer::start().await;
    server.faults().canned(
        Target::Post("notifications/initialized".into()),
        Canned::status(202).delay(Duration::from_secs(3600)),
    );
    let (sup, events) = start_supervisor(quick_settings(), [web(&server)]);
    events.ready("web", 1).await;
    let ok = sup.send(echo("x")).await.unwrap().expect("calls go out");
    assert_eq!(text_of(&ok), "x");
    sup.send(Shutdown).await.unwrap();
}

/// An SSE stream in answer to a notification (the spec allows only 202) is dropped unread.
#[actix::test]
async fn an_sse_answer_to_a_notification_is_dropped() {
    let server = TestHttpServer::start().await;
    server.faults().canned(
        Target::Post("notifications/initialized".into()),
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .stream(Body::repeat(&b": x\n\n"[..], None)),
    );
    let (sup, _events) = start(&server).await;
    let ok = sup.send(echo("x")).await.unwrap().expect("calls go out");
    assert_eq!(text_of(&ok), "x");
    sup.send(Shutdown).await.unwrap();
}

// ---- redirects: never followed, so our credentials stay with the configured origin ----

#[actix::test]
async fn a_redirected_call_is_refused_and_nothing_reaches_the_other_origin() {
    let server = TestHttpServer::start().await;
    let elsewhere = TestHttpServer::start().await;
    let (sup, _events) = start(&server).await;
    server.faults().canned(
        tools_call(),
        Canned::status(307)
            .header("location", elsewhere.url())
            .times(1),
    );
    let err = sup.send(echo("x")).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidResponse, "{err}");
    assert!(
        err.to_string().contains("redirects are not followed"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains(&format!("127.0.0.1:{}", elsewhere.port())),
        "{err}"
    );
    assert_eq!(
        elsewhere.stats().requests(),
        0,
        "no request, no credentials"
    );
    sup.send(Shutdown).await.unwrap();
}

#[actix::test]
async fn a_redirected_initialize_fails_the_start_up_with_the_reason() {
    let server = TestHttpServer::start().await;
    let elsewhere = TestHttpServer::start().await;
    server.faults().canned(
        Target::Post("initialize".into()),
        Canned::status(308).header("location", elsewhere.url()),
    );
    let (sup, events) = start_supervisor(quick_settings(), [web(&server).max_connect_retries(0)]);
    events.state("web", "failed", 1).await;
    let st = status(&sup, "web").await;
    let error = st.last_error.expect("a reason").to_string();
    assert!(error.contains("redirects are not followed"), "{error}");
    assert_eq!(elsewhere.stats().requests(), 0);
    sup.send(Shutdown).await.unwrap();
}

// ---- sessions ----

#[actix::test]
async fn a_session_id_with_invalid_characters_fails_the_handshake() {
    for session in [&b"two words"[..], b"caf\xc3\xa9", b"tab\there"] {
        let server = TestHttpServer::start().await;
        server.faults().canned(
            Target::Post("initialize".into()),
            Canned::status(200)
                .header("content-type", "application/json")
                .header("mcp-session-id", session)
                .body(r#"{"jsonrpc":"2.0","id":{id},"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"x","version":"1"}}}"#),
        );
        let (sup, events) =
            start_supervisor(quick_settings(), [web(&server).max_connect_retries(0)]);
        events.state("web", "failed", 1).await;
        let st = status(&sup, "web").await;
        let error = st.last_error.expect("a reason");
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
        assert!(error.to_string().contains("Mcp-Session-Id"), "{error}");
        assert_eq!(
            server.stats().posts("tools/list"),
            0,
            "nothing sent with it"
        );
        sup.send(Shutdown).await.unwrap();
    }
}

// ---- overloaded servers: 429 and 503, and their Retry-After ----

/// Defect 11: 429 and 503 say "not processed, try later": `overloaded`, with the server's
/// `Retry-After` (delta-seconds or an HTTP-date) in the error. Before, a 429 was
/// `invalid_response` and a 503 `outcome_unknown`.
#[actix::test]
async fn calls_refused_with_429_or_503_are_overloaded_with_the_retry_after() {
    let server = TestHttpServer::start().await;
    let (sup, _events) = start(&server).await;
    let in_a_while =
        httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(20));
    let cases = [
        (429, "7".to_owned(), Duration::from_secs(7)),
        (503, "2".to_owned(), Duration::from_secs(2)),
        (503, in_a_while, Duration::from_secs(20)),
    ];
    for (status, retry_after, expected) in cases {
        server.faults().canned(
            tools_call(),
            Canned::status(status)
                .header("retry-after", retry_after.as_str())
                .body("busy")
                .times(1),
        );
        let err = sup.send(echo("x")).await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Overloaded, "{status}: {err}");
        let waited = err.retry_after().expect("the server's Retry-After");
        // An HTTP-date has a resolution of a second.
        assert!(
            waited <= expected && waited + Duration::from_secs(2) > expected,
            "{status} {retry_after}: {waited:?}"
        );
        assert!(err.to_string().contains(&format!("HTTP {status}")), "{err}");
    }
    // Without a Retry-After: overloaded all the same.
    server
        .faults()
        .canned(tools_call(), Canned::status(503).times(1));
    let err = sup.send(echo("x")).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Overloaded, "{err}");
    assert_eq!(err.retry_after(), None);
    assert_eq!(server.stats().tool_calls("echo"), 0, "nothing ran");
    let st = status(&sup, "web").await;
    assert_eq!(st.counters.reconnects, 0, "the session is kept");
    sup.send(Shutdown).await.unwrap();
}

/// Defect 11: a start-up refused with 503 and `Retry-After: 2` is not tried again before 2 s
/// (the start-up backoff alone would retry after 500 ms).
#[actix::test]
async fn a_start_up_refused_with_retry_after_waits_that_long() {
    let server = TestHttpServer::start().await;
    server.faults().canned(
        Target::Post("initialize".into()),
        Canned::status(503).header("retry-after", "2").times(1),
    );
    let (sup, events) = start_supervisor(quick_settings(), [web(&server)]);
    events.ready("web", 1).await;
    let times = server.stats().post_times("initialize");
    assert_eq!(times.len(), 2);
    assert!(
        gaps(&times)[0] >= Duration::from_secs(2),
        "{:?}",
        gaps(&times)
    );
    assert!(events
        .messages("web")
        .iter()
        .any(|m| m.contains("attempt 1/3")));
    sup.send(Shutdown).await.unwrap();
}

/// The server's wish is capped: a `Retry-After` of a day waits no longer than the reconnect
/// backoff's cap.
#[actix::test]
async fn a_retry_after_of_a_day_is_capped() {
    let server = TestHttpServer::start().await;
    server.faults().canned(
        Target::Post("initialize".into()),
        Canned::status(429).header("retry-after", "86400").times(1),
    );
    let mut settings = quick_settings();
    settings.reconnect_backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
    let (sup, events) = start_supervisor(settings, [web(&server)]);
    events.ready("web", 1).await;
    let times = server.stats().post_times("initialize");
    assert_eq!(times.len(), 2);
    let gap = gaps(&times)[0];
    assert!(
        gap >= Duration::from_secs(1) && gap < Duration::from_secs(5),
        "{gap:?}"
    );
    sup.send(Shutdown).await.unwrap();
}

/// A session re-initialized after the server forgot it waits for the `Retry-After` of an
/// overloaded initialize too, and the call waiting for it is still answered in its deadline.
#[actix::test]
async fn a_session_rebuilt_under_overload_waits_for_the_retry_after() {
    let server = TestHttpServer::start().await;
    let (sup, events) = start(&server).await;
    server
        .faults()
        .forget_sessions(crate::common::http_server::SessionGone::NotFound);
    server.faults().canned(
        Target::Post("initialize".into()),
        Canned::status(503).header("retry-after", "2").times(1),
    );
    let ok = sup
        .send(echo("x"))
        .await
        .unwrap()
        .expect("answered after the wait");
    assert_eq!(text_of(&ok), "x");
    let times = server.stats().post_times("initialize");
    assert_eq!(times.len(), 3, "{:?}", events.messages("web"));
    assert!(
        gaps(&times)[1] >= Duration::from_secs(2),
        "{:?}",
        gaps(&times)
    );
    sup.send(Shutdown).await.unwrap();
}

/// The GET stream, refused with 503 and `Retry-After: 1`, is re-opened no sooner than 1 s
/// later (the backoff alone would wait 200 ms), and the connection is kept.
#[actix::test]
async fn a_get_stream_refused_with_retry_after_is_reopened_no_sooner() {
    let server = TestHttpServer::start().await;
    server.faults().canned(
        Target::Get,
        Canned::status(503).header("retry-after", "1").times(2),
    );
    let (sup, events) = start(&server).await;
    subscribe(&sup, "mem://a").await;
    until("the GET stream open", || server.stats().gets() >= 3).await;
    let times = server.stats().get_times();
    for gap in &gaps(&times)[..2] {
        assert!(*gap >= Duration::from_secs(1), "{:?}", gaps(&times));
    }
    // The stream is the session's: a notification comes through it.
    let call = CallTool::new("web", "notify_resource", json!({"uri": "mem://a"}));
    until_async(|| async {
        sup.send(call.clone()).await.unwrap().unwrap();
        events
            .all()
            .iter()
            .any(|e| matches!(e, ServerEvent::ResourceUpdated { .. }))
    })
    .await;
    assert_eq!(status(&sup, "web").await.counters.reconnects, 0);
    sup.send(Shutdown).await.unwrap();
}

/// An SSE `retry:` of a day is honoured only up to the reconnect backoff's cap: the GET stream
/// that ended after it is re-opened (before, it waited the day, and an idle connection could
/// not notice a lost server for as long).
#[actix::test]
async fn an_sse_retry_of_a_day_is_capped() {
    let server = TestHttpServer::start().await;
    server.faults().canned(
        Target::Get,
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .body("retry: 86400000\n\n")
            .times(1),
    );
    let mut settings = quick_settings();
    settings.reconnect_backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
    let (sup, events) = start_supervisor(settings, [web(&server)]);
    events.ready("web", 1).await;
    until("the GET stream re-opened", || server.stats().gets() >= 2).await;
    let gap = gaps(&server.stats().get_times())[0];
    assert!(gap >= Duration::from_millis(900), "{gap:?}");
    sup.send(Shutdown).await.unwrap();
}

/// A broken answer stream whose resumption is refused with 503 and `Retry-After: 1` is
/// resumed after that second, and the call gets its answer.
#[actix::test]
async fn a_resumption_refused_with_retry_after_is_tried_again_after_it() {
    let server = TestHttpServer::start().await;
    let (sup, _events) = start(&server).await;
    until("the GET stream open", || server.stats().gets() >= 1).await;
    server.faults().drop_sse_after(Some(0));
    server.faults().canned(
        Target::Get,
        Canned::status(503).header("retry-after", "1").times(1),
    );
    let done = sup.send(slow(0.3)).await.unwrap().expect("resumed");
    assert_eq!(text_of(&done), "done");
    let times = server.stats().get_times();
    assert_eq!(
        server.stats().resumed_gets(),
        2,
        "refused once, then resumed"
    );
    let refused_then_resumed = times[times.len() - 1] - times[times.len() - 2];
    assert!(
        refused_then_resumed >= Duration::from_secs(1),
        "{refused_then_resumed:?}"
    );
    sup.send(Shutdown).await.unwrap();
}

// ---- floods ----

/// Counts the log notifications a subscriber gets.
struct CountLogs(Arc<AtomicUsize>);

impl actix::Actor for CountLogs {
    type Context = actix::Context<Self>;
}

impl actix::Handler<ServerEvent> for CountLogs {
    type Result = ();
    fn handle(&mut self, event: ServerEvent, _: &mut actix::Context<Self>) {
        if matches!(event, ServerEvent::Log { .. }) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A flood of log notifications on the GET stream (read with backpressure: see the
/// transport's `a_flood_waits_in_tcp_while_the_actor_is_behind`) costs no call its answer and
/// the connection nothing, and reaches the subscriber.
#[actix::test]
async fn a_notification_flood_costs_calls_nothing() {
    use actix::Actor;
    const FLOOD: usize = 50_000;
    let server = TestHttpServer::start().await;
    let event = r#"data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a log line of the flood"}}"#;
    server.faults().canned(
        Target::Get,
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .stream(Body::Repeat {
                // A hundred events a chunk: the server must not be the bottleneck.
                chunk: format!("{event}\n\n").repeat(100).into_bytes(),
                count: Some(FLOOD / 100),
                every: Duration::ZERO,
                hold: true,
            }),
    );
    let count = Arc::new(AtomicUsize::new(0));
    let counter = CountLogs(count.clone()).start();
    let (sup, events) = start(&server).await;
    sup.send(SubscribeEvents(counter.recipient()))
        .await
        .unwrap();
    // Calls while the flood lasts (at least one, should it be over already).
    loop {
        let ok = sup
            .send(echo("x"))
            .await
            .unwrap()
            .expect("answered in the flood");
        assert_eq!(text_of(&ok), "x");
        if server.stats().chunks_sent() >= FLOOD / 100 {
            break;
        }
    }
    until("notifications delivered", || {
        count.load(Ordering::Relaxed) > 0
    })
    .await;
    let st = status(&sup, "web").await;
    assert_eq!(st.state, ServerState::Ready);
    assert_eq!(st.counters.reconnects, 0, "{:?}", events.messages("web"));
    sup.send(Shutdown).await.unwrap();
}
