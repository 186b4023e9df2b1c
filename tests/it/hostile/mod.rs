//! The hostile-server suite: servers that misbehave on purpose (the scriptable
//! `mcp-hostile-server` over stdio, the in-tree HTTP test server's fault switches), and API
//! misuse. Each module is one family of hostile behaviour; every case checks that the runtime
//! keeps its promises: one right answer per call by its deadline, no panic, no unbounded loop or
//! memory, and server text that cannot forge our logs. (Cases that measure memory are in
//! `bounded_memory`, each in a process of its own.)
//!
//! Every case that has a counterpart in the stateless 2026-07-28 revision runs in both eras
//! (`in_both_eras!`: the hostile server's `HOSTILE_ERA`, the HTTP test server's era); a script
//! names the methods of its era through [`opening`] and [`subscribing`]. The cases that run in
//! the session era only say why next to them.

mod handshake;
mod http;
mod ids;
mod lists;
mod lookalikes;
mod misuse;
mod nesting;
mod revival;
mod server_requests;
mod server_text;
mod settings;
mod soak_findings;
mod stdin_backlog;
mod stdio_process;
mod subscriptions;

/// The request that opens a connection in the running test's era: `initialize`, or the
/// 2026-07-28 revision's `server/discover`.
pub(crate) fn opening() -> &'static str {
    match crate::common::era() {
        "modern" => "server/discover",
        _ => "initialize",
    }
}

/// The request that carries a resource subscription in the running test's era:
/// `resources/subscribe`, or the 2026-07-28 revision's `subscriptions/listen`.
pub(crate) fn subscribing() -> &'static str {
    match crate::common::era() {
        "modern" => "subscriptions/listen",
        _ => "resources/subscribe",
    }
}

/// A reply to the opening that names only `version`, a protocol version nobody speaks (or a
/// megabyte of one): an `initialize` result, or a `server/discover` result.
pub(crate) fn opening_result(version: &str) -> serde_json::Value {
    match crate::common::era() {
        "modern" => serde_json::json!({
            "supportedVersions": [version], "capabilities": {},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "old", "version": "0"}}
        }),
        _ => serde_json::json!({
            "protocolVersion": version, "capabilities": {},
            "serverInfo": {"name": "old", "version": "0"}
        }),
    }
}
