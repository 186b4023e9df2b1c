//! The fault switches: what tests can change about the server's behaviour at run time.

use std::sync::Arc;

use super::bearer::Bearer;
use super::canned::{Canned, Target};
use super::era::Era;
use super::state::{lock, Shared};
use super::{listen, tools, GetMode, SessionGone};

/// Switches that change the server's behaviour at run time; clones share the server.
#[derive(Clone)]
pub struct Faults(pub(super) Arc<Shared>);

impl Faults {
    /// Drops all sessions now (their open streams end); later requests carrying an unknown
    /// session id are answered as `answer` says.
    pub fn forget_sessions(&self, answer: SessionGone) {
        lock(&self.0.faults).session_gone = answer;
        lock(&self.0.sessions).clear();
    }

    /// Makes the next POST answered with SSE end abruptly after `events` data events (priming
    /// events don't count), never carrying the final response; undelivered events stay stored
    /// for a resumption. Resets to `None` once used. In the modern era it applies to the next
    /// `tools/call` answered with SSE, nothing is stored (the request is lost, the tool still
    /// runs to its end), and listen streams never take it ([`Faults::cut_listens`] cuts those).
    pub fn drop_sse_after(&self, events: Option<usize>) {
        lock(&self.0.faults).drop_sse_after = events;
    }

    /// Sends `retry: <ms>` at the start of every SSE stream (POST and GET) of the legacy era
    /// (modern streams cannot be resumed: they never carry it).
    pub fn retry_ms(&self, ms: Option<u64>) {
        lock(&self.0.faults).retry_ms = ms;
    }

    /// Starts every new SSE stream with a priming event `id: <id>\ndata: \n\n` (default on;
    /// legacy era only: modern streams have no event ids).
    pub fn priming(&self, on: bool) {
        lock(&self.0.faults).priming = on;
    }

    /// Sends `: keep-alive` comments on open SSE streams (listen streams too) after this much
    /// silence.
    pub fn keepalive_ms(&self, ms: Option<u64>) {
        lock(&self.0.faults).keepalive_ms = ms;
    }

    /// Delays every POST response by `ms` (the request's work is done first).
    pub fn delay_ms(&self, ms: u64) {
        lock(&self.0.faults).delay_ms = ms;
    }

    /// Answers every request with this status and a short text body (`None`: normal service).
    pub fn status_override(&self, status: Option<u16>) {
        lock(&self.0.faults).status_override = status;
    }

    /// Answers `tools/call` with `application/json` too (progress notifications are dropped).
    pub fn json_responses(&self, on: bool) {
        lock(&self.0.faults).json_responses = on;
    }

    pub fn get_stream(&self, mode: GetMode) {
        lock(&self.0.faults).get_mode = mode;
    }

    /// Answers the requests `target` names with `canned` (see [`Canned`]) instead of serving
    /// them, before any other switch applies; the last one installed for a target wins.
    pub fn canned(&self, target: Target, canned: Canned) {
        let mut faults = lock(&self.0.faults);
        faults.canned.retain(|(t, _)| *t != target);
        faults.canned.insert(0, (target, canned));
    }

    /// Removes every canned answer.
    pub fn clear_canned(&self) {
        lock(&self.0.faults).canned.clear();
    }

    // ---- the modern era (2026-07-28) ----

    /// Switches the era the server speaks (see [`Era`]). Into `Modern`, every session is
    /// dropped (their GET streams end), as a server restarted modern-only would; into `Legacy`,
    /// every listen stream is cut.
    pub fn era(&self, era: Era) {
        let before = std::mem::replace(&mut lock(&self.0.faults).era, era);
        if era == Era::Modern && before != Era::Modern {
            lock(&self.0.sessions).clear();
        }
        if era == Era::Legacy && before != Era::Legacy {
            listen::end_all(&self.0, true);
        }
    }

    /// The modern versions the server speaks (default `["2026-07-28"]`): `server/discover`'s
    /// `supportedVersions`, `-32022`'s `data.supported`, and what the version rule accepts. A
    /// request whose `MCP-Protocol-Version` names one of them is modern, as is one at
    /// 2026-07-28.
    pub fn modern_versions(&self, versions: &[&str]) {
        lock(&self.0.faults).modern_versions = versions.iter().map(|v| (*v).to_owned()).collect();
    }

    /// `server/discover`'s `ttlMs` (default 0).
    pub fn discover_ttl_ms(&self, ms: u64) {
        lock(&self.0.faults).discover_ttl_ms = ms;
    }

    /// The `ttlMs` of modern `tools/list` and `resources/read` results (default 0).
    pub fn list_ttl_ms(&self, ms: u64) {
        lock(&self.0.faults).list_ttl_ms = ms;
    }

    /// Whether modern results carry `_meta["io.modelcontextprotocol/serverInfo"]` (default on;
    /// off: a server that leaves the optional field out, `server/discover` included).
    pub fn server_info(&self, on: bool) {
        lock(&self.0.faults).server_info = on;
    }

    /// What `echo` puts before its text (default nothing): a replacement's test tells the
    /// servers apart by it, as the demo server's `DEMO_VERSION` does.
    pub fn echo_prefix(&self, prefix: &str) {
        lock(&self.0.faults).echo_prefix = prefix.to_owned();
    }

    /// Lists `echo_region` (arguments mirrored into `Mcp-Param-Region`/`-Priority`) and
    /// `confirm` (multi round-trip) in the modern era's `tools/list` (default off, so both eras
    /// list the same four tools; both can be called in the modern era either way).
    pub fn modern_tools(&self, on: bool) {
        lock(&self.0.faults).modern_tools = on;
    }

    /// Lists the tools with invalid `x-mcp-header` annotations ([`super::INVALID_HEADER_TOOLS`])
    /// in the modern era's `tools/list`, after the others (default off).
    pub fn invalid_header_tools(&self, on: bool) {
        lock(&self.0.faults).invalid_header_tools = on;
    }

    /// Sends `notifications/tools/list_changed` now: on every legacy session's GET stream and on
    /// every listen stream that asked for it (a client not listening misses it).
    pub fn tools_changed(&self) {
        tools::tools_changed(&self.0);
        listen::tools_changed(&self.0);
    }

    /// Opens (registers and acknowledges) every listen `ms` after its request came (default 0:
    /// at once): a server slow to put a listen in force, which deliveries meanwhile miss.
    pub fn listen_ack_delay_ms(&self, ms: u64) {
        lock(&self.0.faults).listen_ack_delay_ms = ms;
    }

    /// Ends every listen opened from now on gracefully (its result, then the end of the stream)
    /// `ms` after its acknowledgement (`None`: listens last until the client closes them).
    pub fn end_listens_after(&self, ms: Option<u64>) {
        lock(&self.0.faults).listen_lifetime_ms = ms;
    }

    /// Ends every open listen gracefully now (its result, then the end of the stream).
    pub fn end_listens(&self) {
        listen::end_all(&self.0, false);
    }

    /// Cuts every open listen now: the stream ends abruptly, without a result.
    pub fn cut_listens(&self) {
        listen::end_all(&self.0, true);
    }

    /// How many times `confirm` asks for input before it completes (default 1, at least 1).
    pub fn confirm_rounds(&self, rounds: usize) {
        lock(&self.0.faults).confirm_rounds = rounds.max(1);
    }

    /// How many answers of each `confirm` flow carry only a `requestState` (load shedding)
    /// before it asks for input (default 0).
    pub fn confirm_state_only(&self, answers: usize) {
        lock(&self.0.faults).confirm_state_only = answers;
    }

    // ---- tasks ----

    /// The `pollIntervalMs` of `job`'s tasks (default 50).
    pub fn task_poll_ms(&self, ms: u64) {
        lock(&self.0.faults).task_poll_ms = ms;
    }

    /// While on, every task of `job` is still working, whatever its time says: a test ends
    /// them when it is ready (off: each ends at its time, or at once if that has passed).
    pub fn hold_tasks(&self, on: bool) {
        lock(&self.0.faults).hold_tasks = on;
    }

    /// Forgets every task, as a restart that keeps none would: their polls are `-32602`.
    pub fn forget_tasks(&self) {
        super::tasks::forget(&self.0);
    }

    // ---- authorization ----

    /// Makes `/mcp` an OAuth protected resource whose tokens `bearer` checks (`None`: open, the
    /// default); see `bearer`.
    pub fn require_bearer(&self, bearer: Option<Bearer>) {
        lock(&self.0.faults).bearer = bearer;
    }
}

pub(super) struct FaultState {
    pub(super) drop_sse_after: Option<usize>,
    pub(super) retry_ms: Option<u64>,
    pub(super) priming: bool,
    pub(super) keepalive_ms: Option<u64>,
    pub(super) delay_ms: u64,
    pub(super) status_override: Option<u16>,
    pub(super) json_responses: bool,
    pub(super) get_mode: GetMode,
    pub(super) session_gone: SessionGone,
    pub(super) canned: Vec<(Target, Canned)>,
    pub(super) era: Era,
    pub(super) modern_versions: Vec<String>,
    pub(super) discover_ttl_ms: u64,
    pub(super) list_ttl_ms: u64,
    pub(super) server_info: bool,
    pub(super) echo_prefix: String,
    pub(super) modern_tools: bool,
    pub(super) invalid_header_tools: bool,
    pub(super) listen_lifetime_ms: Option<u64>,
    pub(super) listen_ack_delay_ms: u64,
    pub(super) confirm_rounds: usize,
    pub(super) confirm_state_only: usize,
    pub(super) task_poll_ms: u64,
    pub(super) hold_tasks: bool,
    pub(super) bearer: Option<Bearer>,
}
