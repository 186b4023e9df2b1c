//! How written calls end when their server answers: a result (its text as it came, which
//! becomes the caller's type), a JSON-RPC error, a transport's failure of one request, and
//! progress on the way. Every answer is matched to its call by the id of the call's latest
//! request.

use std::time::Instant;

use serde_json::Value;

use super::CallTable;
use crate::actor::reply::Payload;
use crate::error::Error;
use crate::protocol::jsonrpc::{Id, RpcError};
use crate::protocol::response::{RawResult, Reparsed};
use crate::protocol::text::server_text;

impl CallTable {
    /// The server answered request `id` with `result`.
    pub fn on_response(&mut self, id: &Id, result: impl Into<Payload>) {
        match id.as_ours().and_then(|wire_id| self.written(wire_id)) {
            Some(key) => self.finish(key, Ok(result.into())),
            None => {
                self.counters.unknown_responses += 1;
                tracing::debug!(server = %self.server, id = %server_text(&id.to_string()), "response to no call in flight; ignored");
            }
        }
    }

    /// The server answered request `id` with `result`, its text as it came. A line taken for a
    /// response by its fixed parts alone (see [`RawResult::unless_plain`]) answers its call only
    /// if its result turns into the caller's type, and counts as an answer to nothing only if
    /// it is one; if the line is not the response it looked like, no call is answered and the
    /// full parse of the line is handed back, to be routed as what it is.
    pub fn on_raw_response(&mut self, id: &Id, result: RawResult) -> Option<Reparsed> {
        let Some(key) = id.as_ours().and_then(|wire_id| self.written(wire_id)) else {
            if let Some(reparsed) = result.unless_plain() {
                return Some(reparsed);
            }
            self.on_response(id, result);
            return None;
        };
        if !result.is_line() {
            self.finish(key, Ok(result.into()));
            return None;
        }
        let entry = self.calls.get_mut(&key)?;
        match entry.offer(Payload::Raw(result.clone())) {
            Ok(()) => {
                self.remove(key);
                self.counters.calls_ok += 1;
                None
            }
            Err(error) => match result.unless_plain() {
                Some(reparsed) => Some(reparsed),
                None => {
                    self.finish(key, Err(error));
                    None
                }
            },
        }
    }

    /// The server answered request `id` with a JSON-RPC error.
    pub fn on_error_response(&mut self, id: &Id, error: RpcError) {
        match id.as_ours().and_then(|wire_id| self.written(wire_id)) {
            Some(key) => {
                let method = self
                    .calls
                    .get(&key)
                    .map(|c| c.method.to_string())
                    .unwrap_or_default();
                self.finish(key, Err(Error::rpc(&self.server, &method, error)));
            }
            None => {
                self.counters.unknown_responses += 1;
                tracing::debug!(server = %self.server, id = %server_text(&id.to_string()), "error response to no call in flight; ignored");
            }
        }
    }

    /// The transport could not deliver written request `wire_id` and reports why.
    pub fn fail_written(&mut self, wire_id: u64, error: Error) {
        if let Some(key) = self.written(wire_id) {
            self.finish(key, Err(error));
        }
    }

    pub(super) fn finish(&mut self, id: u64, outcome: Result<Payload, Error>) {
        let Some(entry) = self.remove(id) else {
            self.counters.unknown_responses += 1;
            tracing::debug!(server = %self.server, id, "response to no call in flight; ignored");
            return;
        };
        if outcome.is_ok() {
            self.counters.calls_ok += 1;
        } else {
            self.counters.calls_failed += 1;
        }
        entry.answer(outcome);
    }

    /// Routes a `notifications/progress` to its call: the token is our request id (see
    /// [`CallEntry::open`]). The call's deadline may move later (never earlier, so the actor's
    /// timer needs no change: it finds the new deadline when it fires).
    pub fn on_progress(&mut self, params: &Value, now: Instant) {
        let token = params.get("progressToken");
        let id = token.and_then(|t| t.as_u64().or_else(|| t.as_str()?.parse().ok()));
        match id.and_then(|id| Some((id, self.calls.get_mut(&id)?))) {
            Some((id, entry)) => {
                if let Some(moved) = entry.on_progress(&self.server, params, now) {
                    self.push_deadline(moved, id);
                }
            }
            None => {
                tracing::debug!(server = %self.server, token = %server_text(&token.map(ToString::to_string).unwrap_or_default()), "progress for no call in flight")
            }
        }
    }
}
