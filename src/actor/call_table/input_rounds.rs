//! The call table's side of multi-round-trip requests (2026-07-28): a written call whose
//! server asked for input is taken off the wire, kept with its deadline while the application
//! answers, and written again under a new id for the next round. What the rounds mean is
//! [`crate::protocol::mrtr`]'s business, running them the actor's.

use serde_json::Value;

use super::{CallTable, Situation};
use crate::actor::request::Params;
use crate::actor::wire::Wire;
use crate::error::Error;

impl CallTable {
    /// The call and method that request `wire_id` belongs to, if it is written and unanswered.
    pub fn written_call(&self, wire_id: u64) -> Option<(u64, &str)> {
        let key = self.written(wire_id)?;
        Some((key, self.calls.get(&key)?.method.as_ref()))
    }

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

    /// Answers call `key` (held or written) with `error` now.
    pub fn fail_call(&mut self, key: u64, error: Error) {
        if self.calls.contains_key(&key) {
            self.finish(key, Err(error));
        }
    }
}
