//! What the GET stream is answered with: whatever is not a readable SSE stream means "no GET
//! stream", never a broken connection. In the 2026-07-28 revision the listen stream takes the
//! GET stream's place: the same answers to its POST leave the connection alone too, and the
//! subscription waiting for it hears why it could not be opened.

use std::time::Duration;

use mcp_supervisor::*;

use super::*;
use crate::common::http_server::{Body, Canned};
use crate::common::*;
use crate::hostile::opening;
use crate::in_both_eras;

/// Defect 7 and its kind: a GET stream answered with anything but a readable SSE stream must
/// not tear the connection down. Before, a `200 text/html` was retried as a failure, then the
/// connection was closed and re-initialized in a loop, costing calls in flight.
async fn a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(canned: Canned) {
    let server = http_server().await;
    server.faults().canned(change_stream(), canned);
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
    assert_eq!(server.stats().posts(opening()), 1, "no re-initialize");
    assert_eq!(change_streams_asked(&server), 1, "the GET was not retried");
    if era() == "modern" {
        // A subscription needs a listen: it is told that none could be opened, at once.
        let subscribe = Subscribe {
            server: "web".into(),
            uri: "mem://a".into(),
        };
        let answer = tokio::time::timeout(Duration::from_secs(10), sup.send(subscribe)).await;
        let error = answer
            .expect("answered, not left waiting")
            .unwrap()
            .expect_err("no listen could be opened");
        assert!(
            matches!(
                error.kind(),
                ErrorKind::InvalidResponse | ErrorKind::InvalidConnection
            ),
            "{error}"
        );
        assert_eq!(status(&sup, "web").await.counters.reconnects, 0);
    }
    sup.send(Shutdown).await.unwrap();
}

async fn a_get_stream_answered_200_html_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(
        Canned::status(200)
            .header("content-type", "text/html; charset=utf-8")
            .body("<html><body>It works!</body></html>"),
    )
    .await;
}

async fn a_get_stream_answered_200_empty_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(Canned::status(200)).await;
}

async fn a_get_stream_answered_with_json_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(
        Canned::status(200)
            .header("content-type", "application/json")
            .body(r#"{"jsonrpc":"2.0","method":"notifications/message"}"#),
    )
    .await;
}

async fn a_compressed_get_stream_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .header("content-encoding", "gzip")
            .body(b"\x1f\x8b\x08\x00\x00\x00\x00\x00".to_vec()),
    )
    .await;
}

async fn a_redirected_get_stream_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(
        Canned::status(307).header("location", "http://127.0.0.1:9/elsewhere"),
    )
    .await;
}

async fn a_get_answer_with_an_oversized_header_is_no_get_stream() {
    a_get_answer_that_is_no_sse_stream_leaves_the_connection_alone(
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .header("x-padding", "a".repeat(256 * 1024))
            .stream(Body::stall()),
    )
    .await;
}

in_both_eras!(
    a_get_stream_answered_200_html_is_no_get_stream,
    a_get_stream_answered_200_empty_is_no_get_stream,
    a_get_stream_answered_with_json_is_no_get_stream,
    a_compressed_get_stream_is_no_get_stream,
    a_redirected_get_stream_is_no_get_stream,
    a_get_answer_with_an_oversized_header_is_no_get_stream,
);

async fn a_get_stream_in_mixed_case_with_a_charset_is_read() {
    let server = http_server().await;
    let event = r#"data: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mem://a"}}"#;
    server.faults().canned(
        change_stream(),
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
    if era() == "legacy" {
        subscribe(&sup, "mem://a").await;
    }
    // (In the modern era the listen opened at Ready, for tool-list changes, is the one
    // answered: a `Subscribe` would wait for an acknowledgement naming its listen, which a
    // canned answer cannot.)
    events
        .resource_updated("mem://a", Duration::from_secs(10))
        .await;
    sup.send(Shutdown).await.unwrap();
}

in_both_eras!(a_get_stream_in_mixed_case_with_a_charset_is_read);
