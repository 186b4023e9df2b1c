//! The calls of one server, from the moment the session takes them until each has its one
//! answer: request ids, the queue of calls waiting for a connection, writing them out (and
//! again), the answers the server sends, the rounds of a multi-round-trip request, and every
//! way a call ends — answered, failed, expired, abandoned by its caller, or settled after a
//! lost connection, the last three through the one decision in [`outcome`](super::outcome).
//!
//! The table's deadlines are kept by the session's one timer table
//! ([`Timers`](super::timers::Timers)); the table says what each call's deadline is.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::Settings;
use crate::error::Error;
use crate::policy::retry::ToolHints;
use crate::policy::state::ServerState;
use crate::protocol::as_sent::ListedTool;
use crate::protocol::jsonrpc::{Id, RequestIds, RpcError};
use crate::protocol::response::{RawResult, Reparsed};
use crate::protocol::text::server_text;
use crate::session::entry::{CallEntry, Internal, Payload, Replier};
use crate::session::outcome::{self, Fate, Situation, Why};
use crate::session::request::{CallRequest, Params};
use crate::session::status::Counters;
use crate::session::wire::Wire;

/// What the session must do after a call's deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum AfterExpire {
    /// Nothing: the call was already answered, or had never been written.
    Nothing,
    /// The call was written and got no answer: check that the server is still alive.
    CheckLiveness,
}

/// The hasher of the maps keyed by request id: only our own ids are ever inserted (an id a
/// server sends is only looked up), so the map needs no defence against chosen keys beyond
/// foldhash's per-process seed, and the SipHash default costs more than the rest of a lookup.
type IdHash = foldhash::fast::RandomState;

/// The answer of one of the session's own calls, for the session to act on.
pub(crate) type InternalDone = (Internal, Result<Payload, Error>);

/// The calls in flight or waiting of one server.
pub(crate) struct CallTable {
    server: Arc<str>,
    call_timeout: Duration,
    max_in_flight: usize,
    /// Whether the server's tool annotations may be believed (see
    /// [`after_disconnect`](crate::policy::retry::after_disconnect)).
    trusted: bool,
    /// Every call, by its key: the id of its first request, which its progress token carries
    /// for the call's whole life.
    calls: HashMap<u64, CallEntry, IdHash>,
    /// Written calls whose latest request id is not their key (written again), by that id. A
    /// call on its first write is found by its key, its id; either way an answer matches a
    /// call only if it names the call's latest request.
    by_wire: HashMap<u64, u64, IdHash>,
    /// Calls not yet written, oldest first (keys of calls since answered are skipped).
    waiting: VecDeque<u64>,
    /// Shared with the handshake of every connection (see [`RequestIds`]).
    ids: RequestIds,
    /// What happened to calls; the actor adds its own counts when it reports.
    counters: Counters,
    /// Answers of the session's own calls, not acted on yet.
    internal: Vec<InternalDone>,
}

impl CallTable {
    /// An empty table for `server`, with its call timeout, call limit and trust; its requests
    /// take their ids from `ids`.
    pub fn new(server: Arc<str>, settings: &Settings, ids: RequestIds) -> Self {
        CallTable {
            server,
            call_timeout: settings.call_timeout,
            max_in_flight: settings.max_in_flight,
            trusted: settings.trusted,
            calls: HashMap::default(),
            by_wire: HashMap::default(),
            waiting: VecDeque::new(),
            ids,
            counters: Counters::default(),
            internal: Vec::new(),
        }
    }

    /// Calls in flight or waiting.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// The counts of what happened to calls (the actor's and transport's counters are zero).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The answers of the session's own calls since the last time (none, mostly: it costs a
    /// length check then).
    pub fn take_internal(&mut self) -> Option<Vec<InternalDone>> {
        (!self.internal.is_empty()).then(|| std::mem::take(&mut self.internal))
    }

    /// Whether the table takes `call` now: not when it is for another server, the server is
    /// failed or stopped, or `max_in_flight` calls are already in the table.
    pub fn admit(&self, call: &CallRequest, situation: &Situation) -> Result<(), Error> {
        if call.server != *self.server {
            return Err(Error::ServerNotFound {
                server: call.server.clone(),
            });
        }
        match situation.state {
            ServerState::Failed { error, .. } => {
                return Err(Error::Unavailable {
                    server: self.server.to_string(),
                    reason: error.without_stderr(),
                    attempts: situation.attempts,
                    stderr_tail: error.stderr_tail().to_vec(),
                })
            }
            ServerState::Stopped => {
                return Err(Error::Stopped {
                    server: self.server.to_string(),
                })
            }
            _ => {}
        }
        if self.calls.len() >= self.max_in_flight {
            return Err(Error::Overloaded {
                server: self.server.to_string(),
                limit: self.max_in_flight,
                reason: String::new(),
                retry_after: None,
            });
        }
        Ok(())
    }

    /// Registers an [admitted](Self::admit) call, answered by `reply`, and returns its key and
    /// deadline: written at once if the server is Ready and no older call waits, queued
    /// otherwise. The session's own calls (not admitted: a liveness check must never be
    /// refused for a full table) go first.
    pub fn open(
        &mut self,
        call: CallRequest,
        reply: Replier,
        situation: &Situation,
        wire: Option<&Wire>,
        now: Instant,
    ) -> (u64, Instant) {
        let id = self.ids.next();
        let internal = matches!(reply, Replier::Session(_));
        let entry = CallEntry::open(&self.server, id, call, reply, self.call_timeout, now);
        let deadline = entry.deadline;
        self.calls.insert(id, entry);
        if situation.state.is_ready() && wire.is_some() && (self.waiting.is_empty() || internal) {
            self.write(id, wire);
        } else {
            if internal {
                self.waiting.push_front(id);
            } else {
                self.waiting.push_back(id);
            }
            self.flush(situation, wire);
        }
        (id, deadline)
    }

    /// The deadline of call `key`, if it is in the table.
    pub fn deadline_of(&self, key: u64) -> Option<Instant> {
        self.calls.get(&key).map(|c| c.deadline)
    }

    fn write(&mut self, key: u64, wire: Option<&Wire>) {
        let Some(entry) = self.calls.get_mut(&key) else {
            return;
        };
        // A round after the server asked for input is the same send, not a re-send.
        let round = std::mem::take(&mut entry.held);
        if !round {
            entry.sends += 1;
            if entry.sends > 1 {
                self.counters.calls_resent += 1;
                // A re-send asks anew: the rounds start over from the original request.
                if let Some(first) = entry.first_round.take() {
                    entry.params = Some(first);
                    entry.rounds = 0;
                }
            }
        }
        self.put_on_wire(key, wire);
    }

    /// Writes call `key` under a new request id unless this is its first write.
    fn put_on_wire(&mut self, key: u64, wire: Option<&Wire>) {
        let (Some(wire), Some(entry)) = (wire, self.calls.get_mut(&key)) else {
            return;
        };
        if !entry.fresh {
            if entry.wire_id != key {
                self.by_wire.remove(&entry.wire_id);
            }
            entry.wire_id = self.ids.next();
        }
        entry.fresh = false;
        entry.sent = true;
        if entry.wire_id != key {
            self.by_wire.insert(entry.wire_id, key);
        }
        wire.request(entry.wire_id, &entry.method, entry.params.as_ref());
    }

    /// Takes call `key` out of the table, with its request id.
    fn remove(&mut self, key: u64) -> Option<CallEntry> {
        let entry = self.calls.remove(&key)?;
        if entry.sent && entry.wire_id != key {
            self.by_wire.remove(&entry.wire_id);
        }
        Some(entry)
    }

    /// The call that request `wire_id` belongs to, if it is written and unanswered.
    fn written(&self, wire_id: u64) -> Option<u64> {
        let key = self.by_wire.get(&wire_id).copied().unwrap_or(wire_id);
        self.calls
            .get(&key)
            .filter(|c| c.sent && c.wire_id == wire_id)?;
        Some(key)
    }

    /// The call and method that request `wire_id` belongs to, if it is written and unanswered.
    pub fn written_call(&self, wire_id: u64) -> Option<(u64, &str)> {
        let key = self.written(wire_id)?;
        Some((key, self.calls.get(&key)?.method.as_ref()))
    }

    /// Call `key` is no longer written on the current connection.
    fn mark_unsent(&mut self, key: u64) {
        if let Some(entry) = self.calls.get_mut(&key) {
            if entry.sent && entry.wire_id != key {
                self.by_wire.remove(&entry.wire_id);
            }
            entry.sent = false;
        }
    }

    /// Writes the waiting calls, oldest first, if the server is Ready on a connection.
    pub fn flush(&mut self, situation: &Situation, wire: Option<&Wire>) {
        if !situation.state.is_ready() || wire.is_none() {
            return;
        }
        while let Some(id) = self.waiting.pop_front() {
            if self.calls.get(&id).is_some_and(|c| !c.sent) {
                self.write(id, wire);
            }
        }
    }

    /// Ends call `key` with `outcome`, counting it.
    fn finish(&mut self, key: u64, outcome: Result<Payload, Error>) {
        let Some(entry) = self.remove(key) else {
            self.counters.unknown_responses += 1;
            tracing::debug!(server = %self.server, id = key, "response to no call in flight; ignored");
            return;
        };
        self.end(entry, outcome);
    }

    /// Answers `entry`, counting how it ended.
    fn end(&mut self, entry: CallEntry, outcome: Result<Payload, Error>) {
        match &outcome {
            Ok(_) => self.counters.calls_ok += 1,
            Err(Error::Timeout { .. } | Error::TaskTimeout { .. }) => {
                self.counters.calls_timed_out += 1
            }
            Err(_) => self.counters.calls_failed += 1,
        }
        self.internal.extend(entry.answer(outcome));
    }

    /// Answers call `key` with what [`outcome::decide`] says for a call that is not sent
    /// (again), `reason` saying why.
    fn answer_unsent(&mut self, entry: CallEntry, reason: &str, situation: &Situation) {
        let why = Why::NotSent { reason, situation };
        let fate = outcome::decide(&self.server, &entry.facts(None, self.trusted), why);
        if let Fate::Answer(error) = fate {
            self.end(entry, Err(error));
        }
    }

    /// Answers every waiting call: the server will not be Ready for them.
    pub fn fail_waiting(&mut self, situation: &Situation) {
        let ids: Vec<u64> = self.waiting.drain(..).collect();
        let reason = format!("the server is {}", situation.state.name());
        for id in ids {
            if let Some(entry) = self.calls.remove(&id) {
                self.answer_unsent(entry, &reason, situation);
            }
        }
    }

    /// Answers every call still in the table: the server was stopped.
    pub fn fail_all_stopped(&mut self, situation: &Situation) {
        let ids: Vec<u64> = self.calls.keys().copied().collect();
        for id in ids {
            if let Some(entry) = self.remove(id) {
                self.answer_unsent(entry, "the server was stopped", situation);
            }
        }
        self.waiting.clear();
    }

    /// Takes the callers' calls that wait to be written out of the table, oldest first, with
    /// their keys: they go to the server's next generation (see
    /// [`handover`](super::handover)). The session's own stay, to be answered here, and so
    /// does the next round of a multi-round-trip request (its state is this connection's
    /// server's answer).
    pub fn take_waiting(&mut self) -> Vec<(u64, CallEntry)> {
        let mut taken = Vec::new();
        let mut staying = VecDeque::new();
        while let Some(key) = self.waiting.pop_front() {
            match self.calls.get(&key) {
                Some(entry) if entry.sent => {}
                Some(entry) if entry.held || entry.is_internal() => staying.push_back(key),
                Some(_) => taken.extend(self.remove(key).map(|entry| (key, entry))),
                None => {}
            }
        }
        self.waiting = staying;
        taken
    }

    /// Takes calls `keys` (those still in the table) out of it, with their keys.
    pub fn take(&mut self, keys: impl IntoIterator<Item = u64>) -> Vec<(u64, CallEntry)> {
        keys.into_iter()
            .filter_map(|key| self.remove(key).map(|entry| (key, entry)))
            .collect()
    }

    /// Takes call `key` from another generation's table as it was there: a held one stays
    /// held, any other waits to be written (see [`CallTable::flush`]). The key was taken from
    /// the sequence every generation of the server shares, so it is no other call's here.
    pub fn adopt(&mut self, key: u64, entry: CallEntry) {
        // Only calls not on a connection are handed over.
        debug_assert!(!entry.sent, "a written call is not handed over");
        if !entry.held {
            self.waiting.push_back(key);
        }
        self.calls.insert(key, entry);
    }

    /// Decides, call by call, what happens to the calls written on a connection that is going
    /// away: back to the front of the queue to be re-sent on the next one, or answered now
    /// (see [`outcome::decide`]). Only the calls in `only` (request ids), when given. `tools`
    /// is the cached tool list, whose annotations a trusted server's `tools/call` may be
    /// re-sent on.
    pub fn settle(&mut self, error: &Error, only: Option<&[u64]>, tools: &[ListedTool]) {
        let mut in_flight: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| c.sent && only.is_none_or(|ids| ids.contains(&c.wire_id)))
            .map(|(key, _)| *key)
            .collect();
        in_flight.sort_unstable();
        let mut resend = Vec::new();
        for id in in_flight {
            let Some(entry) = self.calls.get(&id) else {
                continue;
            };
            let hints = entry.tool().and_then(|name| tool_hints(tools, &name));
            let fate = outcome::decide(
                &self.server,
                &entry.facts(hints, self.trusted),
                Why::Lost(error),
            );
            match fate {
                Fate::Resend => {
                    self.mark_unsent(id);
                    resend.push(id);
                }
                Fate::Answer(answer) => {
                    if let Some(entry) = self.remove(id) {
                        self.end(entry, Err(answer));
                    }
                }
            }
        }
        // Re-sent calls go first: they are the oldest.
        for id in resend.into_iter().rev() {
            self.waiting.push_front(id);
        }
    }

    /// Requests the server never processed (by request id): their calls count as never
    /// written, and go first once a connection is Ready again.
    pub fn unsend(&mut self, wire_ids: &[u64]) {
        for wire_id in wire_ids.iter().rev() {
            let Some(key) = self.written(*wire_id) else {
                continue;
            };
            self.mark_unsent(key);
            if let Some(entry) = self.calls.get_mut(&key) {
                entry.sends = entry.sends.saturating_sub(1);
            }
            self.waiting.push_front(key);
        }
    }

    /// Request `wire_id` did not reach the server whole: the server closed its connection
    /// while it was being written (HTTP), so it did not run. The first time, it goes back to
    /// the front of the queue to be written again on a new connection (true: flush it); the
    /// second, its caller is answered `error`: a server that cuts off the same request twice
    /// refuses it (e.g. headers over its limit), and a third try would fare no better.
    pub fn cut_off(&mut self, wire_id: u64, error: Error) -> bool {
        let Some(key) = self.written(wire_id) else {
            return false;
        };
        let first_time = self.calls.get(&key).is_some_and(|entry| !entry.cut_off);
        if !first_time {
            self.finish(key, Err(error));
            return false;
        }
        tracing::warn!(server = %self.server, id = key, error = %error, "the server closed the connection before it had read the whole request; writing it once more");
        self.unsend(&[wire_id]);
        if let Some(entry) = self.calls.get_mut(&key) {
            entry.cut_off = true;
        }
        true
    }

    /// Call `key`'s deadline passed: its caller is answered now. A written call is also
    /// cancelled on the server (through `wire`, if the connection is still there), and the
    /// session is told to check the connection.
    pub fn expire(
        &mut self,
        key: u64,
        situation: &Situation,
        wire: Option<&Wire>,
        now: Instant,
    ) -> AfterExpire {
        let Some(entry) = self.remove(key) else {
            return AfterExpire::Nothing;
        };
        let timeout = Error::Timeout {
            server: self.server.to_string(),
            method: entry.method.to_string(),
            timeout: entry.timeout,
            elapsed: now.saturating_duration_since(entry.started),
        };
        if entry.held {
            // Waiting for the application's answers to the server's questions: the server
            // holds nothing for it, so there is nothing to cancel or check.
            self.end(entry, Err(timeout));
            return AfterExpire::Nothing;
        }
        if !entry.sent {
            self.waiting.retain(|w| *w != key);
            self.answer_unsent(
                entry,
                "its deadline passed before it could be re-sent",
                situation,
            );
            return AfterExpire::Nothing;
        }
        let wire_id = entry.wire_id;
        let method = entry.method.clone();
        let internal = entry.is_internal();
        self.end(entry, Err(timeout));
        tracing::warn!(server = %self.server, method = %method, id = key, "call timed out; cancelling it on the server");
        if let Some(wire) = wire {
            wire.cancel(wire_id, "timed out");
            self.counters.cancellations_sent += 1;
        }
        // The session's own check expiring is its own verdict, not a reason for another.
        if internal {
            AfterExpire::Nothing
        } else {
            AfterExpire::CheckLiveness
        }
    }

    /// Ends the calls whose callers stopped waiting for them: a written one is cancelled on the
    /// server (as a timed-out one is), a waiting one leaves the queue. Returns their keys.
    pub fn sweep_abandoned(&mut self, wire: Option<&Wire>) -> Vec<u64> {
        let gone: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| c.is_abandoned())
            .map(|(key, _)| *key)
            .collect();
        for key in &gone {
            let Some(entry) = self.remove(*key) else {
                continue;
            };
            self.counters.calls_abandoned += 1;
            if entry.sent {
                tracing::debug!(server = %self.server, method = %entry.method, id = key, "the caller is gone; cancelling its call on the server");
                if let Some(wire) = wire {
                    wire.cancel(entry.wire_id, "the caller is gone");
                    self.counters.cancellations_sent += 1;
                }
            } else {
                self.waiting.retain(|w| w != key);
            }
            entry.abandon();
        }
        gone
    }

    /// Whether any call in the table is an application's (whose caller may leave).
    pub fn has_callers(&self) -> bool {
        self.calls.values().any(|c| !c.is_internal())
    }

    // ----- answers -----

    /// The server answered request `id` with `result`.
    pub fn on_response(&mut self, id: &Id, result: impl Into<Payload>) {
        match id.as_ours().and_then(|wire_id| self.written(wire_id)) {
            Some(key) => self.finish(key, Ok(result.into())),
            None => self.unknown(id),
        }
    }

    fn unknown(&mut self, id: &Id) {
        self.counters.unknown_responses += 1;
        tracing::debug!(server = %self.server, id = %server_text(&id.to_string()), "response to no call in flight; ignored");
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
            self.unknown(id);
            return None;
        };
        if !result.is_line() {
            self.finish(key, Ok(result.into()));
            return None;
        }
        let entry = self.calls.get_mut(&key)?;
        match entry.offer(Payload::Raw(result.clone())) {
            Ok(internal) => {
                self.remove(key);
                self.counters.calls_ok += 1;
                if let Some((internal, payload)) = internal {
                    self.internal.push((internal, Ok(payload)));
                }
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
            None => self.unknown(id),
        }
    }

    /// The transport could not deliver written request `wire_id` and reports why.
    pub fn fail_written(&mut self, wire_id: u64, error: Error) {
        if let Some(key) = self.written(wire_id) {
            self.finish(key, Err(error));
        }
    }

    /// Routes a `notifications/progress` to its call: the token is our request id (see
    /// [`CallEntry::open`]). Returns the call's new deadline if progress moved it (later,
    /// never earlier).
    pub fn on_progress(&mut self, params: &Value, now: Instant) -> Option<(u64, Instant)> {
        let token = params.get("progressToken");
        let id = token.and_then(|t| t.as_u64().or_else(|| t.as_str()?.parse().ok()));
        match id.and_then(|id| Some((id, self.calls.get_mut(&id)?))) {
            Some((id, entry)) => entry
                .on_progress(&self.server, params, now)
                .map(|moved| (id, moved)),
            None => {
                tracing::debug!(server = %self.server, token = %server_text(&token.map(ToString::to_string).unwrap_or_default()), "progress for no call in flight");
                None
            }
        }
    }

    // ----- multi-round-trip requests (2026-07-28) -----

    /// Takes written call `key` off the wire while the application answers the server's input
    /// requests: neither written nor waiting, it keeps its deadline. Returns the params of the
    /// request, to build the next round from; `None` if the call is gone, or if this round is
    /// past `max_rounds` (then the call is answered with an error).
    pub fn hold_for_input(&mut self, key: u64, max_rounds: u32) -> Option<Option<Value>> {
        self.mark_unsent(key);
        let entry = self.calls.get_mut(&key)?;
        entry.rounds += 1;
        if entry.rounds > max_rounds {
            let error = Error::invalid_response(
                &self.server,
                &entry.method,
                format!("the server asked for input more than {max_rounds} times"),
            );
            self.finish(key, Err(error));
            return None;
        }
        entry.held = true;
        if entry.first_round.is_none() {
            entry.first_round = entry.params.clone();
        }
        Some(entry.params.as_ref().map(Params::to_value))
    }

    /// Sends held call `key` again with `params` (the next round), under a new id; it waits
    /// for the connection like any call if the server is not Ready. False if the call is gone
    /// (its deadline passed meanwhile).
    pub fn next_round(
        &mut self,
        key: u64,
        params: Value,
        situation: &Situation,
        wire: Option<&Wire>,
    ) -> bool {
        let Some(entry) = self.calls.get_mut(&key).filter(|c| c.held) else {
            return false;
        };
        entry.params = Some(Params::of_value(&params));
        if situation.state.is_ready() && wire.is_some() {
            self.write(key, wire);
        } else {
            // Still a round, not a re-send, when it goes out.
            self.waiting.push_front(key);
        }
        true
    }

    // ----- tasks (the Tasks extension) -----

    /// Takes written call `key` off the wire while the server runs it as a task: neither
    /// written nor waiting, it keeps its deadline and its caller until the task ends. Returns
    /// its tool's name; `None` if the call is gone.
    pub fn hold_for_task(&mut self, key: u64) -> Option<String> {
        self.mark_unsent(key);
        let entry = self.calls.get_mut(&key)?;
        entry.held = true;
        Some(entry.tool().map(|t| t.into_owned()).unwrap_or_default())
    }

    /// Whether call `key` is in the table with a caller still waiting for it.
    pub fn has_caller(&self, key: u64) -> bool {
        self.calls
            .get(&key)
            .is_some_and(|c| !c.is_internal() && !c.is_abandoned())
    }

    /// A `tools/call`'s arguments, as sent.
    pub fn arguments_of(&self, key: u64) -> Option<Value> {
        let params = self.calls.get(&key)?.params.as_ref()?.to_value();
        params.get("arguments").cloned()
    }

    /// Whether request `id` is a written call sent task-augmented.
    pub fn is_task_augmented(&self, id: &Id) -> bool {
        id.as_ours()
            .and_then(|wire_id| self.written(wire_id))
            .and_then(|key| self.calls.get(&key))
            .is_some_and(|c| c.task_augmented)
    }

    /// Whether call `key` asked to be answered with its task at once.
    pub fn starts_task(&self, key: u64) -> bool {
        self.calls.get(&key).is_some_and(|c| c.start_task)
    }

    /// Registers a caller that waits for something other than an answer to a request (a
    /// task's end): neither written nor waiting, with a deadline, answered with
    /// [`CallTable::answer_call`] or when its deadline passes. Returns its key and deadline.
    pub fn hold_waiter(
        &mut self,
        call: CallRequest,
        reply: Replier,
        now: Instant,
    ) -> (u64, Instant) {
        let id = self.ids.next();
        let mut entry = CallEntry::open(&self.server, id, call, reply, self.call_timeout, now);
        entry.held = true;
        let deadline = entry.deadline;
        self.calls.insert(id, entry);
        (id, deadline)
    }

    /// Answers call `key` with `outcome`; false if it is gone (its caller left meanwhile).
    pub fn answer_call(&mut self, key: u64, outcome: Result<Payload, Error>) -> bool {
        let Some(entry) = self.remove(key) else {
            return false;
        };
        if entry.is_abandoned() {
            entry.abandon();
            self.counters.calls_abandoned += 1;
            return false;
        }
        self.end(entry, outcome);
        true
    }

    /// Call `key`'s deadline passed while the server runs it as task `handle`: its caller is
    /// answered with the handle (the task runs on: nothing is cancelled).
    pub fn expire_for_task(&mut self, key: u64, handle: crate::tasks::TaskHandle) {
        if let Some(entry) = self.remove(key) {
            let timeout = Error::TaskTimeout {
                handle: Box::new(handle),
                timeout: entry.timeout,
            };
            self.end(entry, Err(timeout));
        }
    }

    /// Answers call `key` (held or written) with `error` now.
    pub fn fail_call(&mut self, key: u64, error: Error) {
        if self.calls.contains_key(&key) {
            self.finish(key, Err(error));
        }
    }
}

/// The annotations of cached tool `name`, if it has any.
fn tool_hints(tools: &[ListedTool], name: &str) -> Option<ToolHints> {
    let tool = tools.iter().find(|t| t.name == name)?;
    let annotations = tool.annotations.as_ref()?;
    Some(ToolHints {
        read_only: annotations.read_only_hint.unwrap_or(false),
        idempotent: annotations.idempotent_hint.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use serde_json::json;

    use super::*;
    use crate::error::ErrorKind;
    use crate::protocol::jsonrpc::Id;
    use crate::session::testing::{Answer, Recorder};
    use crate::transport::Link;

    /// A caller's view of a call it started.
    struct Receipt {
        id: u64,
        reply: Rc<Answer>,
    }

    /// Starts `call` as the session starts a caller's call.
    fn start(
        calls: &mut CallTable,
        call: CallRequest,
        situation: &Situation,
        wire: Option<&Wire>,
        now: Instant,
    ) -> Result<Receipt, Error> {
        calls.admit(&call, situation)?;
        let reply = Rc::new(Answer::default());
        let (id, _) = calls.open(call, Replier::Caller(reply.clone()), situation, wire, now);
        Ok(Receipt { id, reply })
    }

    fn table(settings: Settings) -> CallTable {
        CallTable::new(Arc::from("demo"), &settings, RequestIds::default())
    }

    fn at(state: &ServerState) -> Situation<'_> {
        Situation {
            state,
            attempts: 1,
            last_error: None,
        }
    }

    const RECONNECTING: ServerState = ServerState::Reconnecting {
        attempt: 1,
        retry_at: None,
    };

    /// A connection whose written messages the test reads back.
    fn wire() -> (Wire, Rc<Recorder>) {
        let recorder = Rc::new(Recorder::default());
        (Wire::legacy(recorder.clone() as Rc<dyn Link>), recorder)
    }

    /// What was written, as `(method, id)` of each line; `("abandon", id)` for an abandon.
    fn written(rx: &mut Rc<Recorder>) -> Vec<(String, Value)> {
        rx.drain()
            .into_iter()
            .map(|v| match v.get("abandon") {
                Some(id) => ("abandon".to_owned(), id.clone()),
                None => (
                    v["method"].as_str().unwrap().to_owned(),
                    v.get("id").cloned().unwrap_or(Value::Null),
                ),
            })
            .collect()
    }

    fn method(name: &str) -> CallRequest {
        CallRequest::of_value("demo", name.to_owned(), None)
    }

    fn tool_call(tool: &str) -> CallRequest {
        CallRequest::of_value("demo", "tools/call", Some(&json!({ "name": tool })))
    }

    /// The answer a receipt holds, if any yet.
    fn answer(receipt: &mut Receipt) -> Option<Result<Value, Error>> {
        receipt.reply.take()
    }

    fn error_kind(receipt: &mut Receipt) -> Option<ErrorKind> {
        match answer(receipt) {
            Some(Err(e)) => Some(e.kind()),
            other => panic!("expected an error answer, got {other:?}"),
        }
    }

    #[test]
    fn a_call_is_written_at_once_when_ready_and_waits_otherwise() {
        let mut calls = table(Settings::default());
        let (out, mut rx) = wire();
        let now = Instant::now();
        let first = start(
            &mut calls,
            method("tools/list"),
            &at(&ServerState::Ready),
            Some(&out),
            now,
        )
        .unwrap();
        assert_eq!(
            written(&mut rx),
            [("tools/list".to_owned(), json!(first.id))]
        );

        let second = start(
            &mut calls,
            method("prompts/list"),
            &at(&RECONNECTING),
            None,
            now,
        )
        .unwrap();
        assert_eq!(second.id, first.id + 1);
        assert!(written(&mut rx).is_empty());
        calls.flush(&at(&ServerState::Ready), Some(&out));
        assert_eq!(
            written(&mut rx),
            [("prompts/list".to_owned(), json!(second.id))]
        );
        assert_eq!(calls.len(), 2);
    }

    #[test]
    fn calls_never_reuse_an_id_the_handshake_took() {
        let ids = RequestIds::default();
        let handshake = [ids.next(), ids.next()]; // initialize, tools/list
        let mut calls = CallTable::new(Arc::from("demo"), &Settings::default(), ids.clone());
        let (out, mut rx) = wire();
        let mut receipt = start(
            &mut calls,
            method("ping"),
            &at(&ServerState::Ready),
            Some(&out),
            Instant::now(),
        )
        .unwrap();
        assert!(!handshake.contains(&receipt.id));
        assert_eq!(written(&mut rx), [("ping".to_owned(), json!(receipt.id))]);
        // A late duplicate of a handshake answer finds no call.
        calls.on_response(&Id::Number(handshake[1] as i64), json!({"tools": []}));
        assert!(answer(&mut receipt).is_none());
        assert_eq!(calls.counters().unknown_responses, 1);
        assert!(
            ids.next() > handshake[1] + 1,
            "the next connection goes on counting"
        );
    }

    #[test]
    fn after_a_loss_a_safe_method_waits_again_and_a_tool_call_is_outcome_unknown() {
        let mut calls = table(Settings::default());
        let (out, mut rx) = wire();
        let ready = ServerState::Ready;
        let now = Instant::now();
        let mut list = start(
            &mut calls,
            method("tools/list"),
            &at(&ready),
            Some(&out),
            now,
        )
        .unwrap();
        let mut run = start(
            &mut calls,
            tool_call("counter"),
            &at(&ready),
            Some(&out),
            now,
        )
        .unwrap();
        assert_eq!(written(&mut rx).len(), 2);

        let lost = Error::connection("demo", "the server closed its stdout");
        calls.settle(&lost, None, &[]);
        assert!(
            answer(&mut list).is_none(),
            "tools/list waits for a re-send"
        );
        match answer(&mut run) {
            Some(Err(Error::OutcomeUnknown { method, reason, .. })) => {
                assert_eq!(method, "tools/call");
                assert_eq!(reason, lost.to_string());
            }
            other => panic!("expected outcome_unknown, got {other:?}"),
        }
        assert_eq!(calls.counters().calls_failed, 1);
        assert_eq!(calls.len(), 1);

        // The next connection: the safe call is written again, under a new id (an answer can
        // only match the request it answers), and counted as re-sent.
        let (out, mut rx) = wire();
        calls.flush(&at(&ready), Some(&out));
        let resent = written(&mut rx);
        assert_eq!(resent.len(), 1);
        assert_eq!(resent[0].0, "tools/list");
        assert_ne!(
            resent[0].1,
            json!(list.id),
            "a re-sent request takes a new id"
        );
        assert_eq!(calls.counters().calls_resent, 1);
        // A late answer to the first request reaches nobody; the new one's answers the call.
        calls.on_response(&Id::Number(list.id as i64), json!({ "tools": ["late"] }));
        assert!(answer(&mut list).is_none());
        let new_id = resent[0].1.as_i64().unwrap();
        calls.on_response(&Id::Number(new_id), json!({ "tools": [] }));
        assert_eq!(answer(&mut list).unwrap().unwrap(), json!({ "tools": [] }));
        assert_eq!(calls.counters().calls_ok, 1);
        assert_eq!(calls.len(), 0);
    }

    #[test]
    fn a_safe_method_is_resent_only_once() {
        let mut calls = table(Settings::default());
        let (out, _rx) = wire();
        let ready = ServerState::Ready;
        let mut list = start(
            &mut calls,
            method("tools/list"),
            &at(&ready),
            Some(&out),
            Instant::now(),
        )
        .unwrap();
        let lost = Error::connection("demo", "gone");
        calls.settle(&lost, None, &[]);
        calls.flush(&at(&ready), Some(&out));
        calls.settle(&lost, None, &[]);
        assert_eq!(error_kind(&mut list), Some(ErrorKind::Unavailable));
    }

    #[test]
    fn settle_with_only_some_ids_leaves_the_others_in_flight() {
        let mut calls = table(Settings::default());
        let (out, _rx) = wire();
        let ready = ServerState::Ready;
        let now = Instant::now();
        let mut hit = start(&mut calls, tool_call("a"), &at(&ready), Some(&out), now).unwrap();
        let mut kept = start(&mut calls, tool_call("b"), &at(&ready), Some(&out), now).unwrap();
        calls.settle(
            &Error::connection("demo", "stream cut"),
            Some(&[hit.id]),
            &[],
        );
        assert_eq!(error_kind(&mut hit), Some(ErrorKind::OutcomeUnknown));
        assert!(answer(&mut kept).is_none());
        calls.on_response(&Id::Number(kept.id as i64), json!({}));
        assert!(answer(&mut kept).unwrap().is_ok());
    }

    #[test]
    fn expire_of_an_unsent_call_says_it_was_not_sent_and_cancels_nothing() {
        let mut calls = table(Settings::default());
        let (out, mut rx) = wire();
        let now = Instant::now();
        let mut call = start(
            &mut calls,
            tool_call("counter"),
            &at(&RECONNECTING),
            None,
            now,
        )
        .unwrap();
        let last = Error::connection("demo", "the server closed its stdout");
        let situation = Situation {
            state: &RECONNECTING,
            attempts: 2,
            last_error: Some(&last),
        };
        assert_eq!(
            calls.expire(call.id, &situation, Some(&out), Instant::now()),
            AfterExpire::Nothing
        );
        match answer(&mut call) {
            Some(Err(Error::Unavailable {
                reason, attempts, ..
            })) => {
                assert!(
                    reason.starts_with("the call was not sent: server is reconnecting ("),
                    "{reason}"
                );
                assert_eq!(attempts, 2);
            }
            other => panic!("expected unavailable, got {other:?}"),
        }
        assert!(written(&mut rx).is_empty());
        assert_eq!(calls.counters().calls_failed, 1);
        assert_eq!(calls.counters().cancellations_sent, 0);
        assert_eq!(calls.len(), 0);
        // It left the queue too: a later flush writes nothing.
        calls.flush(&at(&ServerState::Ready), Some(&out));
        assert!(written(&mut rx).is_empty());
    }

    #[test]
    fn expire_of_a_written_call_cancels_it_and_asks_for_a_liveness_check() {
        let mut calls = table(Settings::default());
        let (out, mut rx) = wire();
        let ready = ServerState::Ready;
        let mut call = start(
            &mut calls,
            tool_call("hang"),
            &at(&ready),
            Some(&out),
            Instant::now(),
        )
        .unwrap();
        written(&mut rx);
        assert_eq!(
            calls.expire(call.id, &at(&ready), Some(&out), Instant::now()),
            AfterExpire::CheckLiveness
        );
        assert_eq!(error_kind(&mut call), Some(ErrorKind::Timeout));
        assert_eq!(
            written(&mut rx),
            [
                ("notifications/cancelled".to_owned(), Value::Null),
                ("abandon".to_owned(), json!(call.id)),
            ]
        );
        assert_eq!(calls.counters().calls_timed_out, 1);
        assert_eq!(calls.counters().cancellations_sent, 1);
        // Already answered: a second expiry and a late reply change nothing.
        assert_eq!(
            calls.expire(call.id, &at(&ready), Some(&out), Instant::now()),
            AfterExpire::Nothing
        );
        calls.on_response(&Id::Number(call.id as i64), json!({}));
        assert_eq!(calls.counters().unknown_responses, 1);
        assert_eq!(calls.counters().calls_ok, 0);
    }

    #[test]
    fn unsent_calls_go_first_and_do_not_count_as_resent() {
        let mut calls = table(Settings::default());
        let (out, mut rx) = wire();
        let ready = ServerState::Ready;
        let now = Instant::now();
        let a = start(&mut calls, tool_call("a"), &at(&ready), Some(&out), now).unwrap();
        let b = start(&mut calls, tool_call("b"), &at(&ready), Some(&out), now).unwrap();
        let c = start(&mut calls, tool_call("c"), &at(&RECONNECTING), None, now).unwrap();
        written(&mut rx);

        calls.unsend(&[a.id, b.id]);
        calls.flush(&at(&ready), Some(&out));
        let sent: Vec<(String, Value)> = written(&mut rx);
        let tools: Vec<&str> = sent.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(tools, ["tools/call"; 3]);
        // In order, a and b under new ids (they go out again), c under its first.
        let ids: Vec<i64> = sent.iter().map(|(_, id)| id.as_i64().unwrap()).collect();
        assert!(ids[0] > c.id as i64 && ids[1] > ids[0], "{ids:?}");
        assert_eq!(ids[2], c.id as i64);
        assert_eq!(calls.counters().calls_resent, 0);
    }

    #[test]
    fn calls_beyond_max_in_flight_are_overloaded() {
        let mut calls = table(Settings {
            max_in_flight: 1,
            ..Settings::default()
        });
        let (out, _rx) = wire();
        let ready = ServerState::Ready;
        let now = Instant::now();
        let first = start(&mut calls, method("ping"), &at(&ready), Some(&out), now).unwrap();
        match start(&mut calls, method("ping"), &at(&ready), Some(&out), now) {
            Err(Error::Overloaded { limit, .. }) => assert_eq!(limit, 1),
            Err(e) => panic!("expected overloaded, got {e:?}"),
            Ok(_) => panic!("expected overloaded, got a call"),
        }
        calls.on_response(&Id::Number(first.id as i64), json!({}));
        assert!(start(&mut calls, method("ping"), &at(&ready), Some(&out), now).is_ok());
    }

    #[test]
    fn failed_stopped_and_unknown_servers_refuse_calls_at_once() {
        let mut calls = table(Settings::default());
        let now = Instant::now();
        let failed = ServerState::Failed {
            error: Error::connection("demo", "spawn failed"),
            revive_at: None,
        };
        let kind = |r: Result<Receipt, Error>| r.err().map(|e| e.kind());
        assert_eq!(
            kind(start(&mut calls, method("ping"), &at(&failed), None, now)),
            Some(ErrorKind::Unavailable)
        );
        assert_eq!(
            kind(start(
                &mut calls,
                method("ping"),
                &at(&ServerState::Stopped),
                None,
                now
            )),
            Some(ErrorKind::Stopped)
        );
        assert_eq!(
            kind(start(
                &mut calls,
                CallRequest::of_value("other", "ping", None),
                &at(&ServerState::Ready),
                None,
                now
            )),
            Some(ErrorKind::ServerNotFound)
        );
        assert_eq!(calls.len(), 0);
    }

    #[test]
    fn on_stop_a_written_tool_call_is_outcome_unknown_and_a_waiting_one_stopped() {
        let mut calls = table(Settings::default());
        let (out, _rx) = wire();
        let now = Instant::now();
        let mut sent = start(
            &mut calls,
            tool_call("a"),
            &at(&ServerState::Ready),
            Some(&out),
            now,
        )
        .unwrap();
        let mut queued = start(&mut calls, tool_call("b"), &at(&RECONNECTING), None, now).unwrap();
        calls.fail_all_stopped(&at(&ServerState::Stopped));
        assert_eq!(error_kind(&mut sent), Some(ErrorKind::OutcomeUnknown));
        assert_eq!(error_kind(&mut queued), Some(ErrorKind::Stopped));
        assert_eq!(calls.len(), 0);
    }

    #[test]
    fn fail_waiting_answers_only_the_waiting_calls() {
        let mut calls = table(Settings::default());
        let (out, _rx) = wire();
        let now = Instant::now();
        let mut sent = start(
            &mut calls,
            method("ping"),
            &at(&ServerState::Ready),
            Some(&out),
            now,
        )
        .unwrap();
        let mut queued = start(&mut calls, method("ping"), &at(&RECONNECTING), None, now).unwrap();
        let failed = ServerState::Failed {
            error: Error::connection("demo", "gave up"),
            revive_at: None,
        };
        calls.fail_waiting(&at(&failed));
        assert_eq!(error_kind(&mut queued), Some(ErrorKind::Unavailable));
        assert!(answer(&mut sent).is_none());
        assert_eq!(calls.counters().calls_failed, 1);
    }
}
