//! Hostile Streamable HTTP servers: answers of the wrong kind (HTML where an SSE stream belongs,
//! odd content types and encodings, redirects, oversized headers, invalid session ids), servers
//! that are overloaded (429/503 and their `Retry-After`), and bodies that trickle, flood or
//! never end. The in-tree test server's canned answers (`Faults::canned`) play the server.
//!
//! Every case checks a promise: one answer per call by its deadline, the right answer or a
//! typed error at once, a session that is not torn down for what does not break it, and a
//! server's wish to be left alone honoured (never past our cap).
//!
//! The families: `get_stream` (what the GET stream is answered with), `answers` (POST answers
//! of the wrong kind, bodies that trickle or never end, redirects, session ids), `overload`
//! (429/503 and `Retry-After`, SSE `retry:`), `floods`, `cuts` (the network cut mid-call).

mod answers;
mod cuts;
mod floods;
mod get_stream;
mod overload;

use std::time::{Duration, Instant};

use mcp_supervisor::*;
use serde_json::json;

use crate::common::http_server::{Target, TestHttpServer};
use crate::common::*;

pub(super) fn web(server: &TestHttpServer) -> ServerConfig {
    ServerConfig::http("web", server.url()).bearer_token("s3cret")
}

pub(super) fn echo(text: &str) -> CallTool {
    CallTool::new("web", "echo", json!({ "text": text })).timeout(Duration::from_secs(10))
}

/// A `slow` call that takes `seconds`, with a progress notification per step.
pub(super) fn slow(seconds: f64) -> CallTool {
    CallTool::new("web", "slow", json!({ "seconds": seconds })).timeout(Duration::from_secs(10))
}

pub(super) fn tools_call() -> Target {
    Target::Post("tools/call".into())
}

/// The stream the server's change notifications come on: the session's GET stream, or the
/// 2026-07-28 revision's listen stream (a POST whose answer stays open).
pub(super) fn change_stream() -> Target {
    match era() {
        "modern" => Target::Post("subscriptions/listen".into()),
        _ => Target::Get,
    }
}

/// How often the change stream was asked for.
pub(super) fn change_streams_asked(server: &TestHttpServer) -> usize {
    change_stream_times(server).len()
}

/// When the change stream was asked for.
pub(super) fn change_stream_times(server: &TestHttpServer) -> Vec<Instant> {
    match era() {
        "modern" => server.stats().post_times("subscriptions/listen"),
        _ => server.stats().get_times(),
    }
}

/// A JSON-RPC result for the request being answered (`{id}` is filled in by the server).
pub(super) const ECHO_RESULT: &str =
    r#"{"jsonrpc":"2.0","id":{id},"result":{"content":[{"type":"text","text":"canned"}]}}"#;

/// The time between consecutive instants.
pub(super) fn gaps(times: &[Instant]) -> Vec<Duration> {
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

pub(super) async fn subscribe(sup: &actix::Addr<Supervisor>, uri: &str) {
    let subscribe = Subscribe {
        server: "web".into(),
        uri: uri.into(),
    };
    sup.send(subscribe).await.unwrap().expect("subscribed");
}

pub(super) async fn start(server: &TestHttpServer) -> (actix::Addr<Supervisor>, Events) {
    let (sup, events) = start_supervisor(quick_settings(), [web(server)]);
    events.ready("web", 1).await;
    (sup, events)
}
