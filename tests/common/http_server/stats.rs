//! What the server saw, for tests to assert on.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::listen;
use super::mrtr::Round;
use super::state::{lock, Shared};

/// Requests kept for [`Stats::seen`] (the oldest are forgotten first).
pub(super) const MAX_SEEN: usize = 512;

/// One request on `/mcp` as the server saw it (see [`Stats::seen`]).
#[derive(Clone, Debug)]
pub struct Seen {
    /// `POST`, `GET` or `DELETE`.
    pub http_method: String,
    /// A POST's JSON-RPC `method`, if it has one.
    pub rpc_method: Option<String>,
    /// A POST's JSON-RPC `id`, if it has one.
    pub id: Option<Value>,
    /// Whether it spoke the modern revision (the `MCP-Protocol-Version` header, or a POST body's
    /// `_meta` version; never for `initialize`), whatever the server then answered.
    pub modern: bool,
    /// Every header as sent, names in lowercase, in order, repeated ones repeated.
    pub headers: Vec<(String, String)>,
    /// A POST's body as JSON (`null` if it was not JSON, and for GET and DELETE).
    pub body: Value,
}

impl Seen {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of header `name` (any case), in order.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The `Mcp-Param-*` headers: (the name after the prefix, lowercase; the value).
    pub fn param_headers(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("mcp-param-")?.to_owned(), v.clone())))
            .collect()
    }

    /// The body's `params._meta`, if any.
    pub fn meta(&self) -> Option<&Value> {
        self.body.get("params")?.get("_meta")
    }
}

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

    /// The `tasks/get` polls task `id` of `job` got.
    pub fn task_polls(&self, id: &str) -> usize {
        super::tasks::polls(&self.0, id)
    }

    /// Who polled task `id` of `job` (their `X-Replica` header), one entry per run of polls
    /// by one replica: `[a, b]` is "a polled it, then b took over"; `[a, b, a]` would be two
    /// replicas polling it at once.
    pub fn task_pollers(&self, id: &str) -> Vec<String> {
        super::tasks::pollers(&self.0, id)
    }

    /// [`task_pollers`](Self::task_pollers), with when each run of polls began (a
    /// benchmark's takeover time: from a replica's death to the next run's start).
    pub fn task_poller_runs(&self, id: &str) -> Vec<(String, Instant)> {
        super::tasks::poller_runs(&self.0, id)
    }

    /// The ids of the tasks `job` made so far.
    pub fn task_ids(&self) -> Vec<String> {
        super::tasks::ids(&self.0)
    }

    /// TCP connections the server accepted.
    pub fn connections(&self) -> u64 {
        self.0.connections.load(std::sync::atomic::Ordering::SeqCst)
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

    /// The last requests on `/mcp` (at most 512), oldest first: every POST (counted before any
    /// switch answers it, canned ones too), GET and DELETE, with its headers and body.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.0.counters).seen.iter().cloned().collect()
    }

    /// The POSTs of JSON-RPC `method` among [`Stats::seen`], oldest first.
    pub fn seen_posts(&self, method: &str) -> Vec<Seen> {
        lock(&self.0.counters)
            .seen
            .iter()
            .filter(|s| s.rpc_method.as_deref() == Some(method))
            .cloned()
            .collect()
    }

    /// The last POST of JSON-RPC `method`.
    pub fn last_post(&self, method: &str) -> Option<Seen> {
        self.seen_posts(method).pop()
    }

    /// POSTs the modern service handled (after the era switch let them through; before the
    /// header rules).
    pub fn modern_posts(&self) -> usize {
        lock(&self.0.counters).modern_posts
    }

    /// Requests refused with JSON-RPC error `code` by the era switch, the modern header rules
    /// or the modern service (`-32000` of a legacy-only server, `-32020`, `-32021`, `-32022`,
    /// a `-32602` for `_meta`, `-32601` for a method the modern era lacks).
    pub fn rejected(&self, code: i64) -> usize {
        lock(&self.0.counters)
            .rejected
            .get(&code)
            .copied()
            .unwrap_or(0)
    }

    /// `subscriptions/listen` streams open now (a stream the client closed no longer counts).
    pub fn open_listens(&self) -> usize {
        listen::open_filters(&self.0).len()
    }

    /// The open listens: (subscription id = the listen's JSON-RPC id, honoured filter), oldest
    /// first.
    pub fn listens(&self) -> Vec<(Value, Value)> {
        listen::open_filters(&self.0)
    }

    /// Listens acknowledged since the server started.
    pub fn listens_opened(&self) -> usize {
        lock(&self.0.listens).opened
    }

    /// Requests refused `401` for want of a live bearer token ([`super::Faults::require_bearer`]).
    pub fn unauthorized(&self) -> usize {
        lock(&self.0.counters).unauthorized
    }

    /// Every `tools/call confirm` round the server answered, oldest first.
    pub fn rounds(&self) -> Vec<Round> {
        lock(&self.0.counters).rounds.clone()
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
    pub(super) seen: VecDeque<Seen>,
    pub(super) modern_posts: usize,
    pub(super) rejected: HashMap<i64, usize>,
    pub(super) rounds: Vec<Round>,
    pub(super) unauthorized: usize,
}
