//! The calls of one server, from the moment the actor takes them until each has its one
//! answer: request ids, the queue of calls waiting for a connection, writing them out, and
//! every way a call ends (answered, failed, expired, settled after a lost connection).
//!
//! It is its own room because it is the heart of "every call gets exactly one answer" and can
//! be tested on its own: a plain struct with no actix context. The actor passes in what it
//! knows (the connection's [`Wire`], its [`Situation`], the time) and does what a method
//! returns it must do next (e.g. [`AfterExpire::CheckLiveness`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::Tool;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::actor::calls::CallEntry;
use crate::actor::messages::Call;
use crate::actor::reply::{self, Answer, Slot};
use crate::actor::request::CallRequest;
use crate::actor::status::Counters;
use crate::actor::wire::Wire;

mod answers;
mod deadlines;
mod input_rounds;
use crate::config::Settings;
use crate::error::Error;
use crate::policy::retry::{after_disconnect, is_safe_by_nature, AfterDisconnect, ToolHints};
use crate::policy::state::{ConnectionMachine, ServerState};
use crate::protocol::jsonrpc::RequestIds;

/// What the actor knows of its server right now: whether calls may be written, and what the
/// errors of calls that cannot be say about why.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Situation<'a> {
    pub state: &'a ServerState,
    /// Connection attempts of the state machine, for `Unavailable` errors.
    pub attempts: u32,
    /// The last connection error, quoted in "not sent" errors.
    pub last_error: Option<&'a Error>,
}

impl<'a> Situation<'a> {
    /// The situation of the state machine `machine`, after `last_error`.
    pub fn of(machine: &'a ConnectionMachine, last_error: Option<&'a Error>) -> Self {
        Situation {
            state: machine.state(),
            attempts: machine.attempts(),
            last_error,
        }
    }
}

/// What the actor must do after a call's deadline passed.
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

/// The caller's side of a call [started](CallTable::start) with a channel of its own.
pub(crate) struct Receipt {
    /// The call's key: the id of its first request, and its progress token.
    #[cfg_attr(not(test), allow(dead_code))] // The actor's own calls need only the answer.
    pub id: u64,
    /// The raw result, or the error.
    pub rx: oneshot::Receiver<Result<Value, Error>>,
    /// When it is answered at the latest (unless progress moves it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub deadline: Instant,
}

/// The calls in flight or waiting of one server.
pub(crate) struct CallTable {
    server: Arc<str>,
    call_timeout: Duration,
    max_in_flight: usize,
    /// Whether the server's tool annotations may be believed (see [`after_disconnect`]).
    trusted: bool,
    /// Every call, by its key: the id of its first request, which its caller's receipt and its
    /// progress token carry for the call's whole life.
    calls: HashMap<u64, CallEntry, IdHash>,
    /// Written calls whose latest request id is not their key (written again), by that id. A
    /// call on its first write is found by its key, its id; either way an answer matches a
    /// call only if it names the call's latest request.
    by_wire: HashMap<u64, u64, IdHash>,
    /// Calls not yet written, oldest first (keys of calls since answered are skipped).
    waiting: VecDeque<u64>,
    /// The calls' deadlines, earliest first, for the actor's one timer (see [`deadlines`]):
    /// stale items (call gone, deadline moved) are skipped, and swept out past 2 × calls + 64.
    deadlines: BinaryHeap<Reverse<(Instant, u64)>>,
    /// Shared with the handshake of every connection (see [`RequestIds`]).
    ids: RequestIds,
    /// What happened to calls; the actor adds its own counts when it reports.
    counters: Counters,
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
            deadlines: BinaryHeap::new(),
            ids,
            counters: Counters::default(),
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

    /// Registers a call and returns its caller's side (a channel of the raw result): written at
    /// once if the server is Ready and no older call waits, queued otherwise. Refused as
    /// [`admit`](Self::admit) says.
    pub fn start(
        &mut self,
        call: Call,
        situation: &Situation,
        wire: Option<&Wire>,
        now: Instant,
    ) -> Result<Receipt, Error> {
        let call = CallRequest::from(call);
        self.admit(&call, situation)?;
        let (tx, rx) = oneshot::channel();
        let id = self.open(call, Slot::to(tx, reply::raw, "Call"), situation, wire, now);
        let deadline = self.deadline_of(id).unwrap_or(now);
        Ok(Receipt { id, rx, deadline })
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

    /// Registers an [admitted](Self::admit) call, answered on `reply`, and returns its key:
    /// written at once if the server is Ready and no older call waits, queued otherwise.
    pub fn open(
        &mut self,
        call: CallRequest,
        reply: Rc<dyn Answer>,
        situation: &Situation,
        wire: Option<&Wire>,
        now: Instant,
    ) -> u64 {
        let id = self.ids.next();
        let entry = CallEntry::open(&self.server, id, call, reply, self.call_timeout, now);
        self.push_deadline(entry.deadline, id);
        self.calls.insert(id, entry);
        if situation.state.is_ready() && self.waiting.is_empty() {
            self.write(id, wire);
        } else {
            self.waiting.push_back(id);
            self.flush(situation, wire);
        }
        id
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

    /// Answers every waiting call: the server will not be Ready for them.
    pub fn fail_waiting(&mut self, situation: &Situation) {
        let ids: Vec<u64> = self.waiting.drain(..).collect();
        for id in ids {
            if let Some(entry) = self.calls.remove(&id) {
                let reason = format!("the server is {}", situation.state.name());
                let error = self.unanswered_error(&entry, &reason, situation);
                self.counters.calls_failed += 1;
                entry.answer(Err(error));
            }
        }
    }

    /// Answers every call still in the table: the server was stopped.
    pub fn fail_all_stopped(&mut self, situation: &Situation) {
        let ids: Vec<u64> = self.calls.keys().copied().collect();
        for id in ids {
            if let Some(entry) = self.remove(id) {
                let error = self.unanswered_error(&entry, "the server was stopped", situation);
                entry.answer(Err(error));
            }
        }
    }

    /// The error for a call that will get no answer: if it was ever written and may have an
    /// effect, its outcome is unknown; otherwise nothing ran that matters.
    fn unanswered_error(&self, entry: &CallEntry, reason: &str, situation: &Situation) -> Error {
        if entry.sends > 0 && !is_safe_by_nature(&entry.method) {
            Error::OutcomeUnknown {
                server: self.server.to_string(),
                method: entry.method.to_string(),
                reason: format!("it was sent before its connection broke, and {reason}"),
            }
        } else {
            self.not_sent_error(situation)
        }
    }

    /// The error for a call that never reached the server: safe to make again later.
    fn not_sent_error(&self, situation: &Situation) -> Error {
        let server = self.server.to_string();
        match situation.state {
            ServerState::Stopped => Error::Stopped { server },
            state => {
                let reason = match situation.last_error {
                    Some(e) => format!(
                        "the call was not sent: server is {} ({})",
                        state.name(),
                        e.without_stderr()
                    ),
                    None => format!("the call was not sent: server is {}", state.name()),
                };
                Error::Unavailable {
                    server,
                    reason,
                    attempts: situation.attempts,
                    stderr_tail: situation
                        .last_error
                        .map(|e| e.stderr_tail().to_vec())
                        .unwrap_or_default(),
                }
            }
        }
    }

    /// Decides, call by call, what happens to the calls written on a connection that is going
    /// away: back to the front of the queue to be re-sent on the next one, or answered now
    /// (see [`after_disconnect`]). Only the calls in `only`, when given. `tools` is the cached
    /// tool list, whose annotations a trusted server's `tools/call` may be re-sent on.
    pub fn settle(&mut self, error: &Error, only: Option<&[u64]>, tools: &[Tool]) {
        let mut in_flight: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| c.sent && only.is_none_or(|ids| ids.contains(&c.wire_id)))
            .map(|(key, _)| *key)
            .collect();
        in_flight.sort_unstable();
        let mut resend = Vec::new();
        for id in in_flight {
            let Some(entry) = self.calls.get_mut(&id) else {
                continue;
            };
            let hints = entry.tool().and_then(|name| tool_hints(tools, &name));
            let verdict =
                after_disconnect(&entry.method, entry.retry, entry.sends, hints, self.trusted);
            if verdict == AfterDisconnect::Resend {
                self.mark_unsent(id);
                resend.push(id);
                continue;
            }
            let Some(entry) = self.remove(id) else {
                continue;
            };
            let server = self.server.to_string();
            let outcome = if verdict == AfterDisconnect::OutcomeUnknown {
                Error::OutcomeUnknown {
                    server,
                    method: entry.method.to_string(),
                    reason: error.without_stderr(),
                }
            } else {
                Error::Unavailable {
                    server,
                    reason: format!(
                        "connection lost while the call was in flight: {}",
                        error.without_stderr()
                    ),
                    attempts: 0,
                    stderr_tail: error.stderr_tail().to_vec(),
                }
            };
            self.counters.calls_failed += 1;
            entry.answer(Err(outcome));
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
                entry.sends -= 1;
            }
            self.waiting.push_front(key);
        }
    }
}

/// The annotations of cached tool `name`, if it has any.
fn tool_hints(tools: &[Tool], name: &str) -> Option<ToolHints> {
    let tool = tools.iter().find(|t| t.name == name)?;
    let annotations = tool.annotations.as_ref()?;
    Some(ToolHints {
        read_only: annotations.read_only_hint.unwrap_or(false),
        idempotent: annotations.idempotent_hint.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use tokio::sync::mpsc;

    use super::*;
    use crate::error::ErrorKind;
    use crate::policy::retry::RetryPolicy;
    use crate::protocol::jsonrpc::Id;
    use crate::transport::Outgoing;

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
    fn wire() -> (Wire, mpsc::UnboundedReceiver<Outgoing>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Wire::legacy(crate::transport::Outbound::channel(tx)), rx)
    }

    /// What was written, as `(method, id)` of each line; `("abandon", id)` for an abandon.
    fn written(rx: &mut mpsc::UnboundedReceiver<Outgoing>) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        while let Ok(item) = rx.try_recv() {
            out.push(match item {
                Outgoing::Line(line) | Outgoing::Modern { line, .. } => {
                    let v: Value = serde_json::from_slice(&line).unwrap();
                    let id = v.get("id").cloned().unwrap_or(Value::Null);
                    (v["method"].as_str().unwrap().to_owned(), id)
                }
                Outgoing::Abandon(id) => ("abandon".to_owned(), json!(id)),
            });
        }
        out
    }

    fn method(name: &str) -> Call {
        Call::new("demo", name, None)
    }

    fn tool_call(tool: &str) -> Call {
        Call::new("demo", "tools/call", Some(json!({ "name": tool })))
    }

    /// The answer a receipt holds, if any yet.
    fn answer(receipt: &mut Receipt) -> Option<Result<Value, Error>> {
        receipt.rx.try_recv().ok()
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
        let first = calls
            .start(
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

        let second = calls
            .start(method("prompts/list"), &at(&RECONNECTING), None, now)
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
        let mut receipt = calls
            .start(
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
        let mut list = calls
            .start(method("tools/list"), &at(&ready), Some(&out), now)
            .unwrap();
        let mut run = calls
            .start(tool_call("counter"), &at(&ready), Some(&out), now)
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
        let mut list = calls
            .start(
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
        let mut hit = calls
            .start(tool_call("a"), &at(&ready), Some(&out), now)
            .unwrap();
        let mut kept = calls
            .start(tool_call("b"), &at(&ready), Some(&out), now)
            .unwrap();
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
        let mut call = calls
            .start(tool_call("counter"), &at(&RECONNECTING), None, now)
            .unwrap();
        let last = Error::connection("demo", "the server closed its stdout");
        let situation = Situation {
            state: &RECONNECTING,
            attempts: 2,
            last_error: Some(&last),
        };
        assert_eq!(
            calls.expire(call.id, &situation, Some(&out)),
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
        let mut call = calls
            .start(tool_call("hang"), &at(&ready), Some(&out), Instant::now())
            .unwrap();
        written(&mut rx);
        assert_eq!(
            calls.expire(call.id, &at(&ready), Some(&out)),
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
            calls.expire(call.id, &at(&ready), Some(&out)),
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
        let a = calls
            .start(tool_call("a"), &at(&ready), Some(&out), now)
            .unwrap();
        let b = calls
            .start(tool_call("b"), &at(&ready), Some(&out), now)
            .unwrap();
        let c = calls
            .start(tool_call("c"), &at(&RECONNECTING), None, now)
            .unwrap();
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
        let first = calls
            .start(method("ping"), &at(&ready), Some(&out), now)
            .unwrap();
        match calls.start(method("ping"), &at(&ready), Some(&out), now) {
            Err(Error::Overloaded { limit, .. }) => assert_eq!(limit, 1),
            Err(e) => panic!("expected overloaded, got {e:?}"),
            Ok(_) => panic!("expected overloaded, got a call"),
        }
        calls.on_response(&Id::Number(first.id as i64), json!({}));
        assert!(calls
            .start(method("ping"), &at(&ready), Some(&out), now)
            .is_ok());
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
            kind(calls.start(method("ping"), &at(&failed), None, now)),
            Some(ErrorKind::Unavailable)
        );
        assert_eq!(
            kind(calls.start(method("ping"), &at(&ServerState::Stopped), None, now)),
            Some(ErrorKind::Stopped)
        );
        assert_eq!(
            kind(calls.start(
                Call::new("other", "ping", None),
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
        let mut sent = calls
            .start(tool_call("a"), &at(&ServerState::Ready), Some(&out), now)
            .unwrap();
        let mut queued = calls
            .start(tool_call("b"), &at(&RECONNECTING), None, now)
            .unwrap();
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
        let mut sent = calls
            .start(method("ping"), &at(&ServerState::Ready), Some(&out), now)
            .unwrap();
        let mut queued = calls
            .start(method("ping"), &at(&RECONNECTING), None, now)
            .unwrap();
        let failed = ServerState::Failed {
            error: Error::connection("demo", "gave up"),
            revive_at: None,
        };
        calls.fail_waiting(&at(&failed));
        assert_eq!(error_kind(&mut queued), Some(ErrorKind::Unavailable));
        assert!(answer(&mut sent).is_none());
        assert_eq!(calls.counters().calls_failed, 1);
    }

    #[test]
    fn progress_carries_our_id_as_token_and_moves_the_deadline_within_the_total() {
        let mut calls = table(Settings::default());
        let (out, mut rx) = wire();
        let now = Instant::now();
        let call = tool_call("slow")
            .timeout(Duration::from_secs(10))
            .reset_timeout_on_progress(Duration::from_secs(15))
            .retry(RetryPolicy::Never);
        let receipt = calls
            .start(call, &at(&ServerState::Ready), Some(&out), now)
            .unwrap();
        let Ok(Outgoing::Line(line)) = rx.try_recv() else {
            panic!("the call was not written")
        };
        let sent: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(sent["params"]["_meta"]["progressToken"], json!(receipt.id));
        assert_eq!(receipt.deadline, now + Duration::from_secs(10));

        let token = receipt.id.to_string(); // a string token is ours too
        calls.on_progress(
            &json!({ "progressToken": token, "progress": 1 }),
            now + Duration::from_secs(2),
        );
        assert_eq!(
            calls.deadline_of(receipt.id),
            Some(now + Duration::from_secs(12))
        );
        calls.on_progress(
            &json!({ "progressToken": receipt.id, "progress": 2 }),
            now + Duration::from_secs(8),
        );
        assert_eq!(
            calls.deadline_of(receipt.id),
            Some(now + Duration::from_secs(15))
        );
        // The one timer finds the moved deadline: nothing is due at the first one.
        assert_eq!(calls.next_deadline(), Some(now + Duration::from_secs(15)));
        let ready = ServerState::Ready;
        let due = calls.expire_due(now + Duration::from_secs(10), &at(&ready), Some(&out));
        assert_eq!(due, AfterExpire::Nothing);
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn one_deadline_structure_expires_exactly_the_calls_that_are_due() {
        let mut calls = table(Settings::default());
        let (out, mut rx) = wire();
        let ready = ServerState::Ready;
        let now = Instant::now();
        let secs = Duration::from_secs;
        let start = |calls: &mut CallTable, timeout| {
            calls
                .start(
                    method("tools/list").timeout(timeout),
                    &at(&ready),
                    Some(&out),
                    now,
                )
                .unwrap()
        };
        let mut late = start(&mut calls, secs(30));
        let mut soon = start(&mut calls, secs(5));
        let mut answered = start(&mut calls, secs(1));
        calls.on_response(&Id::Number(answered.id as i64), json!({}));
        assert!(answer(&mut answered).unwrap().is_ok());
        written(&mut rx);
        // The answered call's deadline is stale: the earliest is the 5 s one.
        assert_eq!(calls.next_deadline(), Some(now + secs(5)));
        assert_eq!(
            calls.expire_due(now + secs(4), &at(&ready), Some(&out)),
            AfterExpire::Nothing
        );
        assert!(answer(&mut soon).is_none());
        assert_eq!(
            calls.expire_due(now + secs(5), &at(&ready), Some(&out)),
            AfterExpire::CheckLiveness
        );
        assert_eq!(error_kind(&mut soon), Some(ErrorKind::Timeout));
        assert!(answer(&mut late).is_none());
        assert_eq!(calls.next_deadline(), Some(now + secs(30)));
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn the_deadline_structure_stays_bounded_by_the_calls_in_it() {
        let mut calls = table(Settings::default());
        let (out, _rx) = wire();
        let ready = ServerState::Ready;
        let now = Instant::now();
        for _ in 0..10_000 {
            let receipt = calls
                .start(method("ping"), &at(&ready), Some(&out), now)
                .unwrap();
            calls.on_response(&Id::Number(receipt.id as i64), json!({}));
        }
        assert_eq!(calls.len(), 0);
        assert!(calls.deadlines.len() <= 65, "{}", calls.deadlines.len());
        assert_eq!(calls.next_deadline(), None);
    }
}
