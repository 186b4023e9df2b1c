//! What the GET stream is answered with: whatever is not a readable SSE stream means "no GET
//! stream", never a broken connection.

use std::time::Duration;

use mcp_supervisor::*;

use super::*;
use crate::common::http_server::{Body, Canned, Target, TestHttpServer};
use crate::common::*;

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
