//! POST answers of the wrong kind — content types, encodings, empty or endless bodies, oversized
//! headers —, answers to notifications, redirects and session ids: a typed error at once, or
//! the call's deadline, never a hang; the session carries on.
//!
//! Each case runs in both eras but three: the 2026-07-28 revision sends no notifications over
//! HTTP (no `notifications/initialized`; a call is cancelled by closing its stream), and it has
//! no sessions, hence no session ids.

use std::time::{Duration, Instant};

use mcp_supervisor::*;

use super::*;
use crate::common::http_server::{Body, Canned, Target, TestHttpServer};
use crate::common::*;
use crate::hostile::opening;
use crate::in_both_eras;

// ---- POST answers of the wrong kind: a typed error at once, never a hang ----

/// A call answered with `canned` fails at once (well before its deadline) with `kind`, and the
/// session carries on.
async fn a_post_answer_fails_its_call_at_once(canned: Canned, kind: ErrorKind, says: &str) {
    let server = http_server().await;
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
    assert_eq!(
        server.stats().posts(opening()),
        1,
        "the connection was kept"
    );
    sup.send(Shutdown).await.unwrap();
}

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

async fn a_post_answered_with_an_empty_body_is_an_invalid_response() {
    a_post_answer_fails_its_call_at_once(
        Canned::status(200).header("content-type", "application/json"),
        ErrorKind::InvalidResponse,
        "no response to this request",
    )
    .await;
}

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

/// A 4xx with a body that is no JSON-RPC error: the server refused the call before it ran —
/// `refused`, with the status, never `outcome_unknown` or `invalid_response`.
async fn a_post_answered_with_a_plain_4xx_is_refused_and_did_not_run() {
    for (status, says) in [(400, "HTTP 400 Bad Request: nope"), (413, "a body of")] {
        let server = http_server().await;
        let (sup, _events) = start(&server).await;
        server
            .faults()
            .canned(tools_call(), Canned::status(status).body("nope").times(1));
        let err = sup.send(echo("x")).await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Refused, "{err}");
        assert!(err.to_string().contains(says), "{err}");
        match &err {
            Error::Refused { status: got, .. } => assert_eq!(*got, Some(status)),
            other => panic!("{other:?}"),
        }
        let ok = sup
            .send(echo("after"))
            .await
            .unwrap()
            .expect("the session carries on");
        assert_eq!(text_of(&ok), "after");
        sup.send(Shutdown).await.unwrap();
    }
}

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
async fn content_types_in_mixed_case_and_with_a_charset_are_understood() {
    let server = http_server().await;
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
///
/// (Session era only: a 202 leaves room for the answer on the GET stream. The modern era has
/// none, and fails the call at once: see the next case.)
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

/// The modern counterpart: every request is answered on its own POST, so a 202 says the answer
/// will never come, and the call fails at once.
#[actix::test]
async fn a_request_answered_202_fails_at_once_in_the_modern_era() {
    with_era(
        "modern",
        a_post_answer_fails_its_call_at_once(
            Canned::status(202),
            ErrorKind::InvalidResponse,
            "202 Accepted",
        ),
    )
    .await;
}

/// An SSE event longer than `max_message_bytes` is skipped and counted; the response after it
/// still answers the call.
async fn an_sse_event_over_max_message_bytes_is_skipped_and_counted() {
    let server = http_server().await;
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
async fn slow_and_endless_bodies_end_at_the_calls_deadline() {
    let server = http_server().await;
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

async fn a_redirected_call_is_refused_and_nothing_reaches_the_other_origin() {
    let server = http_server().await;
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

async fn a_redirected_initialize_fails_the_start_up_with_the_reason() {
    let server = http_server().await;
    let elsewhere = TestHttpServer::start().await;
    server.faults().canned(
        Target::Post(opening().into()),
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

in_both_eras!(
    a_post_answered_with_html_is_an_invalid_response,
    a_post_answered_with_an_empty_body_is_an_invalid_response,
    a_post_answered_with_json_that_is_not_json_rpc_is_an_invalid_response,
    a_post_answered_with_a_plain_4xx_is_refused_and_did_not_run,
    a_compressed_post_answer_is_refused_not_misread,
    a_json_body_that_never_ends_is_cut_at_max_message_bytes,
    a_post_answer_with_an_oversized_header_fails_only_its_call,
    content_types_in_mixed_case_and_with_a_charset_are_understood,
    an_sse_event_over_max_message_bytes_is_skipped_and_counted,
    slow_and_endless_bodies_end_at_the_calls_deadline,
    a_redirected_call_is_refused_and_nothing_reaches_the_other_origin,
    a_redirected_initialize_fails_the_start_up_with_the_reason,
);

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
