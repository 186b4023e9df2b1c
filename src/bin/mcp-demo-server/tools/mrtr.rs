//! Multi-round-trip requests (2026-07-28): a `tools/call` answered `input_required`, and its
//! retries, which carry `inputResponses` and the verbatim `requestState` under a new id.
//!
//! Two tools use it in the modern era: `confirm` (an elicitation, asked `rounds` times, with an
//! optional state-only round first) and `ask_client` (its one request to the client, which may
//! not send requests in this revision). Their 2025-era forms, real server→client requests, are
//! in `deferred`.
//!
//! The states are kept here, each redeemable once by the tool it was given for: a retry with a
//! state we never gave, or gave and saw redeemed, is refused (`-32602`), and so is a state or an
//! `inputResponses` on any other tool. That is how a client that leaks one flow's state into
//! another request, or re-serializes it, is caught. Each state is a JSON text with its keys in
//! no canonical order and spaces after the separators, so one that was parsed and written again
//! no longer matches. Every round is logged (`mrtr <tool> id=<id> state=<none|valid|invalid>
//! responses=<none|present> -> <outcome>`).

use std::collections::VecDeque;
use std::process;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::super::jsonrpc::{optional, required_str, Args, Reply, RpcError};
use super::super::lock;
use super::super::server::Server;
use super::text_result;

/// States handed out and not yet redeemed; the oldest is forgotten beyond this.
const MAX_FLOWS: usize = 1024;
/// The most rounds `confirm` may be asked for.
const MAX_ROUNDS: u64 = 1000;
/// The tools that take `inputResponses` and `requestState`.
pub(super) const MRTR_TOOLS: [&str; 2] = ["confirm", "ask_client"];

struct Flow {
    state: String,
    tool: &'static str,
    /// 0 for a state-only round, else the round (from 1) whose answer the retry carries.
    round: u64,
    rounds: u64,
}

/// The `requestState`s handed out, oldest first.
#[derive(Default)]
pub(crate) struct Flows {
    issued: VecDeque<Flow>,
    nonces: u64,
}

impl Flows {
    fn issue(&mut self, tool: &'static str, round: u64, rounds: u64) -> String {
        self.nonces = self.nonces.saturating_add(1);
        let noise = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
            ^ process::id();
        let state = format!(
            r#"{{"round": {round}, "nonce": "{noise:08x}-{}", "tool": "{tool}"}}"#,
            self.nonces
        );
        if self.issued.len() >= MAX_FLOWS {
            self.issued.pop_front();
        }
        self.issued.push_back(Flow {
            state: state.clone(),
            tool,
            round,
            rounds,
        });
        state
    }

    fn find(&self, tool: &str, state: &str) -> Option<usize> {
        self.issued
            .iter()
            .position(|f| f.tool == tool && f.state == state)
    }
}

/// A multi-round-trip tool: its name, the key of its input request, and what it asks.
struct Asker {
    tool: &'static str,
    key: &'static str,
    request: Value,
    rounds: u64,
    state_only: bool,
}

/// What a round answers.
enum Round {
    StateOnly(String),
    Ask {
        round: u64,
        rounds: u64,
        state: String,
    },
    /// The last round's `inputResponses`.
    Complete(Value),
}

/// The elicitation `confirm` asks for, in both eras.
pub(super) fn confirm_request() -> Value {
    json!({ "method": "elicitation/create", "params": {
        "message": "Proceed?",
        "requestedSchema": { "type": "object", "properties": { "ok": { "type": "boolean" } } },
    } })
}

/// `confirm`'s `rounds` (1 to 1000, default 1).
pub(super) fn confirm_rounds(args: &Args) -> Result<u64, RpcError> {
    let expected = "an integer from 1 to 1000";
    let rounds = optional(args, "rounds", 1, Value::as_u64, expected)?;
    if !(1..=MAX_ROUNDS).contains(&rounds) {
        return Err(RpcError::invalid_params(format!(
            "`rounds` must be {expected}"
        )));
    }
    Ok(rounds)
}

/// `confirmed: <ok>`, from an elicitation result (`null` when it carries no `ok`).
pub(super) fn confirmed(elicit_result: &Value) -> Value {
    let ok = elicit_result
        .get("content")
        .and_then(|c| c.get("ok"))
        .unwrap_or(&Value::Null);
    text_result(format!("confirmed: {ok}"))
}

impl Server {
    pub(super) fn mrtr_confirm(&self, id: &Value, args: &Args, params: &Args) -> Reply {
        let asker = Asker {
            tool: "confirm",
            key: "confirm",
            request: confirm_request(),
            rounds: confirm_rounds(args)?,
            state_only: optional(args, "state_only", false, Value::as_bool, "a boolean")?,
        };
        match self.mrtr_round(id, &asker, params) {
            Ok(responses) => Ok(confirmed(&responses["confirm"])),
            Err(reply) => reply,
        }
    }

    /// `ask_client` in the modern era: its request goes out as an input request (`ask`), and
    /// the answer is the client's response to it, as compact JSON text, as in the 2025 era.
    pub(super) fn mrtr_ask_client(&self, id: &Value, args: &Args, params: &Args) -> Reply {
        let mut request = json!({ "method": required_str(args, "method")? });
        match args.get("params") {
            None | Some(Value::Null) => {}
            Some(p @ Value::Object(_)) => request["params"] = p.clone(),
            Some(_) => return Err(RpcError::invalid_params("`params` must be an object")),
        }
        let asker = Asker {
            tool: "ask_client",
            key: "ask",
            request,
            rounds: 1,
            state_only: false,
        };
        match self.mrtr_round(id, &asker, params) {
            Ok(responses) => Ok(text_result(responses["ask"].to_string())),
            Err(reply) => reply,
        }
    }

    /// A modern call of a tool that has no rounds must not carry a round's fields.
    pub(super) fn refuse_stray_input(&self, id: &Value, name: &str, params: &Args) -> Reply {
        let stray = ["inputResponses", "requestState"]
            .into_iter()
            .filter(|k| params.contains_key(*k))
            .collect::<Vec<_>>()
            .join(" and ");
        self.log_event(&format!("mrtr {name} id={id} stray {stray}"));
        Err(RpcError::invalid_params(format!(
            "`{name}` asks for no input: {stray} belong to another request"
        )))
    }

    /// Runs one round of `asker`'s flow: an `input_required` result is answered here (`Err`
    /// carries refusals), the last round's `inputResponses` are returned for the tool to answer.
    fn mrtr_round(&self, id: &Value, asker: &Asker, params: &Args) -> Result<Value, Reply> {
        let (shown_state, outcome) = self.judge_round(asker, params);
        let shown_responses = if params.contains_key("inputResponses") {
            "present"
        } else {
            "none"
        };
        let (shown_outcome, reply) = match outcome {
            Err(error) => (format!("error {}", error.code()), Err(Err(error))),
            Ok(Round::StateOnly(state)) => (
                "state_only".to_owned(),
                Err(Ok(
                    json!({ "resultType": "input_required", "requestState": state }),
                )),
            ),
            Ok(Round::Ask {
                round,
                rounds,
                state,
            }) => (
                format!("input_required {round}/{rounds}"),
                Err(Ok(json!({
                    "resultType": "input_required",
                    "inputRequests": { asker.key: asker.request },
                    "requestState": state,
                }))),
            ),
            Ok(Round::Complete(responses)) => ("complete".to_owned(), Ok(responses)),
        };
        self.log_event(&format!(
            "mrtr {} id={id} state={shown_state} responses={shown_responses} -> {shown_outcome}",
            asker.tool
        ));
        reply
    }

    fn judge_round(&self, asker: &Asker, params: &Args) -> (&'static str, Result<Round, RpcError>) {
        let responses = match params.get("inputResponses") {
            None | Some(Value::Null) => None,
            Some(Value::Object(responses)) => Some(responses),
            Some(_) => {
                let error = RpcError::invalid_params("`inputResponses` must be an object");
                return ("none", Err(error));
            }
        };
        let mut state = lock(&self.state);
        let flows = &mut state.flows;
        let flow = match params.get("requestState") {
            None => None,
            Some(Value::String(given)) => match flows.find(asker.tool, given) {
                Some(at) => Some(at),
                None => {
                    let error = RpcError::invalid_params(format!(
                        "requestState is not one this server gave for `{}` (or was used already)",
                        asker.tool
                    ));
                    return ("invalid", Err(error));
                }
            },
            Some(_) => {
                let error = RpcError::invalid_params("requestState must be a string");
                return ("invalid", Err(error));
            }
        };
        let Some(at) = flow else {
            if responses.is_some() {
                let error = RpcError::invalid_params(
                    "a retry with inputResponses needs the requestState it was given",
                );
                return ("none", Err(error));
            }
            let round = if asker.state_only {
                Round::StateOnly(flows.issue(asker.tool, 0, asker.rounds))
            } else {
                let state = flows.issue(asker.tool, 1, asker.rounds);
                Round::Ask {
                    round: 1,
                    rounds: asker.rounds,
                    state,
                }
            };
            return ("none", Ok(round));
        };
        let (round, rounds) = (flows.issued[at].round, flows.issued[at].rounds);
        if round > 0 && !responses.is_some_and(|r| r.contains_key(asker.key)) {
            let error = RpcError::invalid_params(format!(
                "inputResponses.{} is missing from the retry",
                asker.key
            ));
            return ("valid", Err(error));
        }
        flows.issued.remove(at);
        let next = if round == rounds {
            let responses = responses.map(|r| Value::Object(r.clone()));
            Round::Complete(responses.unwrap_or_default())
        } else {
            let state = flows.issue(asker.tool, round + 1, rounds);
            Round::Ask {
                round: round + 1,
                rounds,
                state,
            }
        };
        ("valid", Ok(next))
    }
}
