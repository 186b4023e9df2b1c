//! The `confirm` tool's multi round-trip flows (spec `basic/patterns/mrtr.mdx`; our digest §5).
//!
//! A modern `tools/call confirm` without `requestState` starts a flow. The server answers
//! `resultType: "input_required"` with `inputRequests.confirm` (an `elicitation/create` form
//! asking for a boolean `ok`) and an opaque `requestState`; the retry carries
//! `inputResponses.confirm` (an `ElicitResult`) and that `requestState` byte for byte, and is
//! answered `confirmed: <ok>` (`not confirmed: decline|cancel` for the other actions). A state
//! the server never issued, one sent without the responses it asked for, or responses without a
//! state → `-32602`. A call that does not declare the `elicitation` client capability is refused
//! with `-32021` before any round (see `modern`).
//!
//! The states look like JSON with odd spacing and a non-ASCII character on purpose: a client
//! that parses and re-serializes one, instead of echoing it verbatim, sends a state the server
//! does not know. States stay valid for the flow's later rounds (a retry after a lost stream may
//! send one again); the newest 1024 are kept.
//!
//! [`super::Faults::confirm_rounds`] makes the server ask more than once before it completes,
//! [`super::Faults::confirm_state_only`] makes it first answer with only a `requestState` (the
//! spec's load shedding) that many times. Every round is recorded ([`super::Stats::rounds`]).

use std::collections::{HashMap, VecDeque};

use serde_json::{json, Value};

use super::state::{lock, Shared};

/// Issued states kept at most.
const MAX_STATES: usize = 1024;
/// Rounds recorded at most (later ones are not recorded).
const MAX_ROUNDS: usize = 4096;

/// One `tools/call confirm` the server answered, for tests to assert on.
#[derive(Clone, Debug, PartialEq)]
pub struct Round {
    /// The JSON-RPC id of the request.
    pub id: Value,
    /// The `requestState` it carried (verbatim), if any.
    pub request_state: Option<String>,
    /// The `inputResponses` it carried, if any.
    pub input_responses: Option<Value>,
    /// How the server answered it.
    pub answer: RoundAnswer,
}

/// How a round was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundAnswer {
    /// `input_required` with `inputRequests` and a `requestState`.
    InputRequired,
    /// `input_required` with only a `requestState`.
    StateOnly,
    /// The final result.
    Complete,
    /// A `-32602` error (unknown state, missing responses, ...).
    Rejected,
}

/// The issued states and what each stands for.
#[derive(Default)]
pub(super) struct Flows {
    next: u64,
    states: HashMap<String, Step>,
    order: VecDeque<String>,
}

/// Where a flow stands after the answer that issued a state.
#[derive(Clone, Copy)]
struct Step {
    flow: u64,
    /// That answer asked for input, so the retry must carry `inputResponses.confirm`.
    asked: bool,
    state_only_left: usize,
    asks_left: usize,
}

type Answer = Result<Value, (i64, String)>;

fn invalid(message: &str) -> (i64, String) {
    (-32602, format!("Invalid params: {message}"))
}

/// Answers one round of `confirm` (headers and capabilities already checked).
pub(super) fn confirm(state: &Shared, id: &Value, params: &Value) -> Answer {
    let request_state = params.get("requestState");
    let responses = params.get("inputResponses");
    let (answer, kind) = match round(state, request_state, responses) {
        Ok((answer, kind)) => (Ok(answer), kind),
        Err(error) => (Err(error), RoundAnswer::Rejected),
    };
    if kind == RoundAnswer::Complete {
        *lock(&state.counters)
            .tool_calls
            .entry("confirm".to_owned())
            .or_default() += 1;
    }
    let mut counters = lock(&state.counters);
    if counters.rounds.len() < MAX_ROUNDS {
        counters.rounds.push(Round {
            id: id.clone(),
            request_state: request_state.map(|s| s.as_str().map_or(s.to_string(), str::to_owned)),
            input_responses: responses.cloned(),
            answer: kind,
        });
    }
    answer
}

fn round(
    state: &Shared,
    request_state: Option<&Value>,
    responses: Option<&Value>,
) -> Result<(Value, RoundAnswer), (i64, String)> {
    let mut flows = lock(&state.flows);
    let (step, text) = match request_state {
        None if responses.is_some() => return Err(invalid("inputResponses without requestState")),
        None => {
            let (asks, state_only) = {
                let faults = lock(&state.faults);
                (faults.confirm_rounds.max(1), faults.confirm_state_only)
            };
            flows.next += 1;
            let step = Step {
                flow: flows.next,
                asked: false,
                state_only_left: state_only,
                asks_left: asks,
            };
            (step, None)
        }
        Some(Value::String(issued)) => {
            let Some(step) = flows.states.get(issued).copied() else {
                return Err(invalid("unknown requestState"));
            };
            let text = if step.asked {
                Some(confirmation(responses)?)
            } else {
                None
            };
            (step, text)
        }
        Some(_) => return Err(invalid("requestState must be a string")),
    };
    if step.state_only_left > 0 {
        let next = Step {
            asked: false,
            state_only_left: step.state_only_left - 1,
            ..step
        };
        let issued = flows.issue(next);
        let result = json!({"resultType": "input_required", "requestState": issued});
        return Ok((result, RoundAnswer::StateOnly));
    }
    if step.asks_left > 0 {
        let next = Step {
            asked: true,
            asks_left: step.asks_left - 1,
            ..step
        };
        let issued = flows.issue(next);
        let result = json!({
            "resultType": "input_required",
            "inputRequests": {"confirm": {
                "method": "elicitation/create",
                "params": {
                    "message": "Proceed?",
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                },
            }},
            "requestState": issued,
        });
        return Ok((result, RoundAnswer::InputRequired));
    }
    let text = text.unwrap_or_else(|| "confirmed: true".to_owned());
    let result = json!({"content": [{"type": "text", "text": text}], "isError": false});
    Ok((result, RoundAnswer::Complete))
}

/// The text the answer to `inputRequests.confirm` completes the flow with.
fn confirmation(responses: Option<&Value>) -> Result<String, (i64, String)> {
    let Some(answer) = responses.and_then(|r| r.get("confirm")) else {
        return Err(invalid("missing inputResponses.confirm"));
    };
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => match answer.pointer("/content/ok").and_then(Value::as_bool) {
            Some(ok) => Ok(format!("confirmed: {ok}")),
            None => Err(invalid(
                "inputResponses.confirm.content.ok must be a boolean",
            )),
        },
        Some(action @ ("decline" | "cancel")) => Ok(format!("not confirmed: {action}")),
        _ => Err(invalid("inputResponses.confirm.action")),
    }
}

impl Flows {
    /// A new opaque state for `step`.
    fn issue(&mut self, step: Step) -> String {
        self.next += 1;
        let issued = format!(
            "{{\"flow\": {},  \"n\": {}, \"note\": \"opaque é\" }}",
            step.flow, self.next
        );
        self.states.insert(issued.clone(), step);
        self.order.push_back(issued.clone());
        while self.order.len() > MAX_STATES {
            if let Some(old) = self.order.pop_front() {
                self.states.remove(&old);
            }
        }
        issued
    }
}

/// Whether a request's `_meta` declares the `elicitation` client capability.
pub(super) fn declares_elicitation(params: &Value) -> bool {
    params
        .pointer("/_meta")
        .and_then(|meta| meta.get(super::headers::META_CAPABILITIES))
        .and_then(|caps| caps.get("elicitation"))
        .is_some()
}
