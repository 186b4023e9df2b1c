//! Lines that look like the answer to a call by their first and last bytes and are not one:
//! they end up where a full parse puts them (a counted skip, the server's request, an error
//! answer), never as the call's answer. Stdio response lines are recognized by those bytes
//! alone (see `protocol::response`), so these cases pin the way back.
//!
//! In the 2026-07-28 revision a server asks for input in its results, never with requests of
//! its own: a lookalike that is a request is refused with `-32601` there, and the application's
//! handler is never asked — during the opening as after it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use mcp_supervisor::{Call, CallTool, ErrorKind, GetStatus, ServerRequest, Supervisor};
use serde_json::json;

use super::opening;
use crate::common::*;
use crate::in_both_eras;

/// How many of `requests` the handler is asked: all in the session era, none in the modern one.
fn asked_of(requests: usize) -> usize {
    match era() {
        "modern" => 0,
        _ => requests,
    }
}

/// A request handler that answers `{}` and counts what it was asked.
struct Counting(Arc<AtomicUsize>);

impl Actor for Counting {
    type Context = Context<Self>;
}

impl Handler<ServerRequest> for Counting {
    type Result = Result<serde_json::Value, mcp_supervisor::RpcError>;
    fn handle(&mut self, _: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(json!({"roots": []}))
    }
}

/// Before the real answer, the server writes a request that reuses the call's id and has a
/// `result` member, a line cut short, and a line with bytes after its end. The request goes to
/// the handler, the two others are skipped and counted, and the call gets its real answer —
/// typed and untyped alike.
async fn lookalike_lines_go_where_a_full_parse_puts_them() {
    let actions = json!([
        {"raw": r#"{"jsonrpc":"2.0","id":{id},"result":{"content":[]},"method":"roots/list"}"#},
        {"raw": r#"{"jsonrpc":"2.0","id":{id},"result":{"content":[]}"#},
        {"raw": r#"{"jsonrpc":"2.0","id":{id},"result":{"content":[]}}x}"#},
        {"default": true}
    ]);
    let script = json!({"rules": [{"method": "tools/call", "do": actions}]});
    let asked = Arc::new(AtomicUsize::new(0));
    let handler = Counting(asked.clone()).start();
    let (events, recipient) = Events::start();
    let sup = Supervisor::builder()
        .settings(quick_settings())
        .server(hostile("alike", script))
        .subscriber(recipient)
        .request_handler(handler.recipient(), json!({"roots": {}}))
        .start()
        .unwrap();
    events.ready("alike", 1).await;

    let typed = CallTool::new("alike", "echo", json!({"n": 1})).timeout(Duration::from_secs(5));
    let typed = sup.send(typed).await.unwrap().expect("the real answer");
    assert_eq!(text_of(&typed), "{\"n\":1}");
    let raw = Call::new(
        "alike",
        "tools/call",
        Some(json!({"name": "echo", "arguments": {"n": 2}})),
    )
    .timeout(Duration::from_secs(5));
    let raw = sup.send(raw).await.unwrap().expect("the real answer");
    assert_eq!(raw["content"][0]["text"], "{\"n\":2}");

    assert_eq!(
        asked.load(Ordering::Relaxed),
        asked_of(2),
        "each lookalike request was asked (session era) or refused (modern)"
    );
    let status = sup.send(GetStatus::server("alike")).await.unwrap().unwrap();
    assert_eq!(
        status[0].counters.skipped_non_json, 4,
        "two broken lines per call"
    );
    assert_eq!(status[0].counters.unknown_responses, 0);
}

/// A line with both a `result` and an `error` is the error answer it is, as a full parse makes
/// it: the call gets the server's error.
async fn a_result_with_an_error_member_is_the_error() {
    let script = json!({"rules": [{"method": "tools/call", "do": [
        {"raw": r#"{"jsonrpc":"2.0","id":{id},"result":{"content":[]},"error":{"code":-32042,"message":"both"}}"#}
    ]}]});
    let (sup, events) = start_supervisor(quick_settings(), [hostile("both", script)]);
    events.ready("both", 1).await;
    let call = CallTool::new("both", "echo", json!({})).timeout(Duration::from_secs(5));
    let error = sup
        .send(call)
        .await
        .unwrap()
        .expect_err("the server's error");
    assert_eq!(error.kind(), ErrorKind::Rpc, "{error}");
    assert!(error.to_string().contains("-32042"), "{error}");
}

/// The same during the handshake: a lookalike of the `initialize` answer that is a request
/// goes to the handler, one cut short is skipped and counted, and the server is Ready on its
/// real answer.
async fn lookalikes_during_the_handshake_go_where_a_full_parse_puts_them() {
    let script = json!({"rules": [{"method": opening(), "do": [
        {"raw": r#"{"jsonrpc":"2.0","id":{id},"result":{},"method":"roots/list"}"#},
        {"raw": r#"{"jsonrpc":"2.0","id":{id},"result":{"#},
        {"default": true}
    ]}]});
    let asked = Arc::new(AtomicUsize::new(0));
    let handler = Counting(asked.clone()).start();
    let (events, recipient) = Events::start();
    let sup = Supervisor::builder()
        .settings(quick_settings())
        .server(hostile("early", script))
        .subscriber(recipient)
        .request_handler(handler.recipient(), json!({"roots": {}}))
        .start()
        .unwrap();
    events.ready("early", 1).await;
    assert_eq!(asked.load(Ordering::Relaxed), asked_of(1));
    let status = sup.send(GetStatus::server("early")).await.unwrap().unwrap();
    assert_eq!(status[0].counters.skipped_non_json, 1);
}

in_both_eras!(
    lookalike_lines_go_where_a_full_parse_puts_them,
    a_result_with_an_error_member_is_the_error,
    lookalikes_during_the_handshake_go_where_a_full_parse_puts_them,
);
