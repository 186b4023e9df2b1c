//! The call table's deadlines: one structure for the calls of one server, earliest first, so
//! that the actor keeps one timer (for the earliest) instead of one per call, and what happens
//! to a call whose deadline passed. Its own room because "every call is answered by its
//! deadline" is decided here.

use std::cmp::Reverse;
use std::time::Instant;

use super::{AfterExpire, CallTable, Situation};
use crate::actor::wire::Wire;
use crate::error::Error;

impl CallTable {
    /// The deadline of call `key`, if it is in the table.
    pub fn deadline_of(&self, key: u64) -> Option<Instant> {
        self.calls.get(&key).map(|c| c.deadline)
    }

    /// Adds call `key`'s (new) deadline; sweeps out the stale items first when they are many.
    pub(super) fn push_deadline(&mut self, deadline: Instant, key: u64) {
        if self.deadlines.len() > 2 * self.calls.len() + 64 {
            let calls = &self.calls;
            self.deadlines
                .retain(|Reverse((at, k))| calls.get(k).is_some_and(|c| c.deadline == *at));
        }
        self.deadlines.push(Reverse((deadline, key)));
    }

    /// The earliest deadline of a call in the table, for the actor's one timer.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(Reverse((at, key))) = self.deadlines.peek().copied() {
            if self.calls.get(&key).is_some_and(|c| c.deadline == at) {
                return Some(at);
            }
            self.deadlines.pop();
        }
        None
    }

    /// Expires every call whose deadline is `now` or earlier (see [`expire`](Self::expire)).
    pub fn expire_due(
        &mut self,
        now: Instant,
        situation: &Situation,
        wire: Option<&Wire>,
    ) -> AfterExpire {
        let mut after = AfterExpire::Nothing;
        while let Some(at) = self.next_deadline().filter(|at| *at <= now) {
            let Some(Reverse((_, key))) = self.deadlines.pop() else {
                break;
            };
            debug_assert!(self.deadline_of(key) == Some(at));
            if self.expire(key, situation, wire) == AfterExpire::CheckLiveness {
                after = AfterExpire::CheckLiveness;
            }
        }
        after
    }

    /// Call `id`'s deadline passed: its caller is answered now. A written call is also
    /// cancelled on the server (through `wire`, if the connection is still there), and the
    /// actor is told to check the connection.
    pub fn expire(&mut self, id: u64, situation: &Situation, wire: Option<&Wire>) -> AfterExpire {
        let Some(entry) = self.remove(id) else {
            return AfterExpire::Nothing;
        };
        if entry.held {
            // Waiting for the application's answers to the server's questions: the server
            // holds nothing for it, so there is nothing to cancel or check.
            self.counters.calls_timed_out += 1;
            let error = Error::Timeout {
                server: self.server.to_string(),
                method: entry.method.to_string(),
                timeout: entry.timeout,
            };
            entry.answer(Err(error));
            return AfterExpire::Nothing;
        }
        if !entry.sent {
            self.waiting.retain(|w| *w != id);
            self.counters.calls_failed += 1;
            let error = self.unanswered_error(
                &entry,
                "its deadline passed before it could be re-sent",
                situation,
            );
            entry.answer(Err(error));
            return AfterExpire::Nothing;
        }
        self.counters.calls_timed_out += 1;
        let wire_id = entry.wire_id;
        let method = entry.method.clone();
        let timeout = entry.timeout;
        entry.answer(Err(Error::Timeout {
            server: self.server.to_string(),
            method: method.to_string(),
            timeout,
        }));
        tracing::warn!(server = %self.server, method = %method, id, "call timed out; cancelling it on the server");
        if let Some(wire) = wire {
            wire.cancel(wire_id, "timed out");
            self.counters.cancellations_sent += 1;
        }
        AfterExpire::CheckLiveness
    }
}
