//! What a status query reports about one server. Answered from the session's cache, so it is
//! always quick, also while the server is down or reconnecting.

use std::time::Duration;

use crate::error::Error;
use crate::policy::state::ServerState;
use crate::protocol::as_sent::{ListedTool, SentCapabilities, SentImplementation};
use crate::protocol::era::Era;

/// Counters of one server, since the supervisor started it. Calls include the supervisor's own
/// (liveness pings, tool-list refreshes), not the handshake.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default)
)]
#[non_exhaustive]
pub struct Counters {
    /// Calls answered with a result.
    pub calls_ok: u64,
    /// Calls answered with an error other than a timeout (JSON-RPC errors included).
    pub calls_failed: u64,
    /// Calls that timed out.
    pub calls_timed_out: u64,
    /// Calls re-sent after a reconnect.
    pub calls_resent: u64,
    /// Cancellations sent for calls that timed out or whose caller left
    /// (`notifications/cancelled`, or a closed response stream over modern HTTP).
    pub cancellations_sent: u64,
    /// Calls whose caller stopped waiting (dropped its future) before the answer: cancelled on
    /// the server if they were sent, taken out of the queue if not.
    pub calls_abandoned: u64,
    /// Successful reconnects after a Ready connection broke.
    pub reconnects: u64,
    /// Lines on stdout that were not JSON-RPC, skipped.
    pub skipped_non_json: u64,
    /// Lines on stdout longer than `max_message_bytes`, skipped.
    pub skipped_oversized: u64,
    /// Responses whose id matched no call in flight (late or bogus), ignored.
    pub unknown_responses: u64,
    /// Events other than state changes not delivered because a subscriber lagged too far
    /// behind (its queue of 256 events was full).
    pub events_dropped: u64,
    /// State changes replaced by a later one before a lagging subscriber got them.
    pub state_changes_coalesced: u64,
}

/// One server's status.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerStatus {
    /// Server name.
    pub name: String,
    /// Transport kind: `stdio`, `http` (Streamable HTTP) or `sse` (the legacy HTTP+SSE
    /// transport, configured or found by an `auto` HTTP server).
    pub transport: &'static str,
    /// Connection state.
    pub state: ServerState,
    /// How long it has been in that state.
    pub in_state_for: Duration,
    /// The server's identity from the last opening (`serverInfo`; optional in the 2026-07-28
    /// revision).
    pub server_info: Option<SentImplementation>,
    /// The protocol era of the last opening: the `initialize` handshake (legacy) or the
    /// stateless 2026-07-28 revision (modern).
    pub era: Option<Era>,
    /// The protocol version in use since the last opening.
    pub protocol_version: Option<String>,
    /// The server's capabilities from the last handshake, as it sent them: rmcp's
    /// [`ServerCapabilities`](rmcp::model::ServerCapabilities) through `Deref`, and every member
    /// (2025-11-25's `tasks`, for one, which it has no field for) in
    /// [`object`](crate::AsSent::object).
    pub capabilities: Option<SentCapabilities>,
    /// The cached tool list (all pages), each tool whole as the server listed it: its
    /// [`Tool`](rmcp::model::Tool) fields through `Deref`, every member (`execution`, `_meta`,
    /// `icons`, those no revision we know has) in [`object`](crate::AsSent::object). Shared
    /// with the cache, not copied.
    pub tools: Vec<ListedTool>,
    /// Why [`tools`](Self::tools) is not the server's whole list, if it is not: its pages were
    /// walked to a bound (more than
    /// [`MAX_ITEMS`](crate::protocol::pagination::MAX_ITEMS) tools or
    /// [`MAX_PAGES`](crate::protocol::pagination::MAX_PAGES) pages) or their cursors went
    /// round in a circle, and the first tools were kept. Set by the last handshake or refresh.
    pub tools_truncated: Option<String>,
    /// Resource URIs the application subscribed to.
    pub subscriptions: Vec<String>,
    /// Counters.
    pub counters: Counters,
    /// The last connection error, kept after recovery.
    pub last_error: Option<Error>,
    /// Process id of the current server process (stdio), if one runs.
    pub pid: Option<u32>,
    /// Calls in flight or waiting for a connection (callers waiting for a task included).
    pub pending_calls: usize,
    /// The tasks (the Tasks extension) the server runs for calls, followed until they end,
    /// oldest first: id, tool, status, age, next poll.
    pub tasks: Vec<crate::tasks::TaskInfo>,
    /// With a task store shared by replicas (one with [leases](crate::tasks::TaskStore::lease)):
    /// how much longer this replica's leases of the server's tasks hold, as of their last
    /// renewal. Zero once they may have lapsed (the store did not answer the renewals), and
    /// then no task is polled here until they are renewed. `None` without leases.
    pub task_leases_hold_for: Option<Duration>,
    /// While the server is being replaced (`Restart`, `ReplaceServer`, `Reload`): the new
    /// generation, starting beside this one, which serves every call until the new one is
    /// Ready. Filled in by the supervisor.
    pub next_generation: Option<Box<ServerStatus>>,
}

impl ServerStatus {
    /// Number of cached tools.
    pub fn tool_count(&self) -> usize {
        self.tools.len()
    }
}
