//! What the server saw, for tests to assert on.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::state::{lock, Shared};

/// What the server saw; clones share the server.
#[derive(Clone)]
pub struct Stats(pub(super) Arc<Shared>);

impl Stats {
    /// All HTTP requests received (any method, any path).
    pub fn requests(&self) -> usize {
        lock(&self.0.counters).requests
    }

    /// POSTed JSON-RPC requests/notifications by JSON-RPC method (counted even when a fault
    /// answers the request).
    pub fn posts(&self, method: &str) -> usize {
        lock(&self.0.counters)
            .posts
            .get(method)
            .copied()
            .unwrap_or(0)
    }

    /// All GETs on `/mcp`, resumptions included.
    pub fn gets(&self) -> usize {
        lock(&self.0.counters).gets
    }

    /// GETs that carried `Last-Event-ID`.
    pub fn resumed_gets(&self) -> usize {
        lock(&self.0.counters).resumed_gets
    }

    pub fn deletes(&self) -> usize {
        lock(&self.0.counters).deletes
    }

    /// `tools/call` executions by tool name (counted when executed).
    pub fn tool_calls(&self, tool: &str) -> usize {
        lock(&self.0.counters)
            .tool_calls
            .get(tool)
            .copied()
            .unwrap_or(0)
    }

    /// The headers of the last request, names in lowercase.
    pub fn last_headers(&self) -> Vec<(String, String)> {
        lock(&self.0.counters).last_headers.clone()
    }

    /// When each POST of a JSON-RPC method arrived, in order.
    pub fn post_times(&self, method: &str) -> Vec<Instant> {
        lock(&self.0.counters)
            .post_times
            .get(method)
            .cloned()
            .unwrap_or_default()
    }

    /// When each GET arrived, in order.
    pub fn get_times(&self) -> Vec<Instant> {
        lock(&self.0.counters).get_times.clone()
    }

    /// Requests answered with a canned answer.
    pub fn canned(&self) -> usize {
        lock(&self.0.counters).canned
    }

    /// Chunks of canned `Body::Repeat` bodies the client has taken (handed to the socket).
    pub fn chunks_sent(&self) -> usize {
        lock(&self.0.counters).chunks_sent
    }

    /// Live sessions.
    pub fn sessions(&self) -> usize {
        lock(&self.0.sessions).len()
    }
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) requests: usize,
    pub(super) posts: HashMap<String, usize>,
    pub(super) gets: usize,
    pub(super) resumed_gets: usize,
    pub(super) deletes: usize,
    pub(super) tool_calls: HashMap<String, usize>,
    pub(super) last_headers: Vec<(String, String)>,
    pub(super) canned: usize,
    pub(super) post_times: HashMap<String, Vec<Instant>>,
    pub(super) get_times: Vec<Instant>,
    pub(super) chunks_sent: usize,
}
