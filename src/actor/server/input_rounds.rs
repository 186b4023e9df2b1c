//! Multi-round-trip requests of the 2026-07-28 revision, run by the actor: a result that asks
//! for input is not handed to the caller; each input request goes to the application's
//! request handler (the same one that answers a session-era server's requests), and the call
//! is sent again, under a new id, with the answers and the server's state. The rounds are
//! bounded (`max_input_rounds`) and all live inside the call's one deadline. Reading the
//! results and building the next round's params is [`crate::protocol::mrtr`]'s.

use actix::prelude::*;
use futures_util::future::join_all;
use serde_json::{Map, Value};

use super::ServerActor;
use crate::actor::call_table::Situation;
use crate::error::Error;
use crate::protocol::jsonrpc::Id;
use crate::protocol::mrtr::{self, InputRequest, Round};

impl ServerActor {
    /// An answer on a modern connection: complete (to the call table), a round of input, or a
    /// `resultType` we do not know (an invalid response).
    pub(super) fn on_modern_response(&mut self, id: &Id, result: Value, ctx: &mut Context<Self>) {
        let call = id
            .as_ours()
            .and_then(|wire_id| self.calls.written_call(wire_id))
            .map(|(key, method)| (key, method.to_owned()));
        let Some((key, method)) = call else {
            return self.calls.on_response(id, result);
        };
        match mrtr::classify(&method, &result) {
            // A `ping` went out as `server/discover` (the revision has no ping): it answers
            // that the server is there, which is all a ping's empty result says.
            Ok(Round::Complete) if method == "ping" => {
                self.calls.on_response(id, serde_json::json!({}))
            }
            Ok(Round::Complete) => self.calls.on_response(id, result),
            Ok(Round::InputRequired {
                requests,
                request_state,
            }) => self.answer_input(key, &method, requests, request_state, ctx),
            Err(why) => {
                let error = Error::invalid_response(&self.name, &method, why);
                self.calls.fail_call(key, error);
            }
        }
    }

    /// Asks the handler what the server needs, then sends call `key` again.
    fn answer_input(
        &mut self,
        key: u64,
        method: &str,
        requests: Vec<InputRequest>,
        request_state: Option<Value>,
        ctx: &mut Context<Self>,
    ) {
        let Some(params) = self
            .calls
            .hold_for_input(key, self.settings.max_input_rounds)
        else {
            return;
        };
        let mut asks = Vec::with_capacity(requests.len());
        for request in requests {
            let Some(asked) = self
                .server_requests
                .ask(request.method.clone(), request.params)
            else {
                let error = Error::config(
                    Some(&self.name),
                    "request_handler",
                    format!(
                        "the server asks for input ({}) to answer {method}, and no request handler is registered (SetRequestHandler)",
                        request.method
                    ),
                );
                return self.calls.fail_call(key, error);
            };
            asks.push(async move { (request.key, request.method, asked.await) });
        }
        let method = method.to_owned();
        ctx.spawn(join_all(asks).into_actor(self).map(move |answers, act, _| {
            let mut responses = Map::new();
            for (name, asked_for, answer) in answers {
                match answer {
                    Ok(value) => {
                        responses.insert(name, value);
                    }
                    Err(rpc) => {
                        // The application could not answer: the server cannot go on.
                        let error = Error::rpc(&act.name, &asked_for, rpc);
                        return act.calls.fail_call(key, error);
                    }
                }
            }
            let next = mrtr::next_round_params(params.as_ref(), responses, request_state.as_ref());
            let situation = Situation::of(&act.machine, act.last_error.as_ref());
            let wire = act.live.as_ref().map(|l| &l.wire);
            if !act.calls.next_round(key, next, &situation, wire) {
                tracing::debug!(server = %act.name, method = %method, "a call's deadline passed while its input was asked for");
            }
        }));
    }
}
