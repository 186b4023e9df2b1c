//! The fault switches: what tests can change about the server's behaviour at run time.

use std::sync::Arc;

use super::canned::{Canned, Target};
use super::state::{lock, Shared};
use super::{GetMode, SessionGone};

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
    /// for a resumption. Resets to `None` once used.
    pub fn drop_sse_after(&self, events: Option<usize>) {
        lock(&self.0.faults).drop_sse_after = events;
    }

    /// Sends `retry: <ms>` at the start of every SSE stream (POST and GET).
    pub fn retry_ms(&self, ms: Option<u64>) {
        lock(&self.0.faults).retry_ms = ms;
    }

    /// Starts every new SSE stream with a priming event `id: <id>\ndata: \n\n` (default on).
    pub fn priming(&self, on: bool) {
        lock(&self.0.faults).priming = on;
    }

    /// Sends `: keep-alive` comments on open SSE streams after this much silence.
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
}
