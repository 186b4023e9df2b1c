//! Multi-round-trip requests of the modern revision: instead of sending us requests of its own,
//! a server answers `tools/call`, `prompts/get` or `resources/read` with
//! `resultType: "input_required"`, naming what it needs (an elicitation, a sampling, the roots)
//! and an opaque `requestState`; the client asks its handler, then sends the same request again,
//! under a new id, with the answers as `inputResponses` and the state as it was given. Pure:
//! this module reads results and builds the next round's params; the actor runs the rounds.
//!
//! Rules kept here: a result without `resultType` is complete (older servers send none); an
//! unrecognised one is an invalid response; `requestState` is echoed exactly and only to the
//! request it came with, and never invented; rounds are bounded by the caller.

use serde_json::{Map, Value};

use crate::protocol::jsonrpc::{codes, RpcError};
use crate::protocol::tasks::{self, TaskState};
use crate::protocol::text::server_text;

/// The answer to a request a server of the modern revision sent us: the revision has none (it
/// asks for input in its results), so the request is refused as an unknown method, the
/// application's handler unasked — during the opening as after it.
pub fn server_request_refusal() -> RpcError {
    RpcError::new(
        codes::METHOD_NOT_FOUND,
        "servers of the 2026-07-28 revision ask for input with input_required results",
    )
}

/// Methods whose result may ask for input.
pub const INPUT_METHODS: &[&str] = &["tools/call", "prompts/get", "resources/read"];

/// One thing the server needs before it can answer.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    /// The key its answer goes under in `inputResponses`.
    pub key: String,
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its params.
    pub params: Option<Value>,
}

/// What a result says.
#[derive(Debug, Clone, PartialEq)]
pub enum Round {
    /// The final result.
    Complete,
    /// The server needs these answered (possibly none: then only `request_state` is sent back)
    /// before it answers.
    InputRequired {
        /// What to ask the application's handler, in the server's order.
        requests: Vec<InputRequest>,
        /// To send back unchanged, if the server gave one.
        request_state: Option<Value>,
    },
    /// The server runs the request as a task (the Tasks extension): the result comes from
    /// polling it.
    Task(Box<TaskState>),
}

/// Reads the `resultType` of the result of `method`. `Err` says why the result is invalid.
pub fn classify(method: &str, result: &Value) -> Result<Round, String> {
    let kind = match result.get("resultType") {
        None | Some(Value::Null) => return Ok(Round::Complete),
        Some(Value::String(kind)) => kind.as_str(),
        Some(_) => return Err("resultType is not a string".into()),
    };
    match kind {
        "complete" => Ok(Round::Complete),
        "input_required" if !INPUT_METHODS.contains(&method) => Err(format!(
            "resultType input_required is not allowed for {method}"
        )),
        "input_required" => {
            let requests = match result.get("inputRequests") {
                None | Some(Value::Null) => Vec::new(),
                Some(requests) => input_requests(requests)?,
            };
            let request_state = match result.get("requestState") {
                None | Some(Value::Null) => None,
                Some(state @ Value::String(_)) => Some(state.clone()),
                Some(_) => return Err("requestState is not a string".into()),
            };
            if requests.is_empty() && request_state.is_none() {
                return Err("input_required without inputRequests or requestState".into());
            }
            Ok(Round::InputRequired {
                requests,
                request_state,
            })
        }
        // The extension's own examples answer a `tasks/get` with `resultType: "task"` at
        // times: it is that request's complete answer all the same.
        "task" if method == "tasks/get" => Ok(Round::Complete),
        "task" if !tasks::TASK_METHODS.contains(&method) => {
            Err(format!("resultType task is not allowed for {method}"))
        }
        "task" => tasks::parse_created_task(result).map(|task| Round::Task(Box::new(task))),
        other => Err(format!("unrecognised resultType {}", server_text(other))),
    }
}

/// The input requests of an `inputRequests` object, in the server's order. `Err` says what is
/// wrong with it.
pub fn input_requests(value: &Value) -> Result<Vec<InputRequest>, String> {
    let Value::Object(all) = value else {
        return Err("inputRequests is not an object".into());
    };
    let mut requests = Vec::with_capacity(all.len());
    for (key, request) in all {
        let Some(method) = request.get("method").and_then(Value::as_str) else {
            return Err(format!("inputRequests.{} has no method", server_text(key)));
        };
        requests.push(InputRequest {
            key: key.clone(),
            method: method.to_owned(),
            params: request.get("params").cloned(),
        });
    }
    Ok(requests)
}

/// The params of the next round: the original request's, with `inputResponses` (when there
/// are any) and the server's `requestState` (only when it gave one) set, and nothing left over
/// from an earlier round.
pub fn next_round_params(
    original: Option<&Value>,
    responses: Map<String, Value>,
    request_state: Option<&Value>,
) -> Value {
    let mut params = match original {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    params.remove("inputResponses");
    params.remove("requestState");
    if !responses.is_empty() {
        params.insert("inputResponses".into(), Value::Object(responses));
    }
    if let Some(state) = request_state {
        params.insert("requestState".into(), state.clone());
    }
    Value::Object(params)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn no_result_type_is_complete_and_unknown_ones_are_invalid() {
        assert_eq!(
            classify("tools/call", &json!({"content": []})),
            Ok(Round::Complete)
        );
        assert_eq!(
            classify("tools/call", &json!({"resultType": "complete"})),
            Ok(Round::Complete)
        );
        assert!(classify("tools/call", &json!({"resultType": "later"})).is_err());
        assert!(classify("tools/call", &json!({"resultType": 3})).is_err());
        assert!(classify(
            "tools/list",
            &json!({"resultType": "input_required", "requestState": "x"})
        )
        .is_err());
    }

    #[test]
    fn a_task_answers_only_a_tools_call() {
        let task = json!({"resultType": "task", "taskId": "t", "status": "working"});
        assert!(matches!(
            classify("tools/call", &task),
            Ok(Round::Task(t)) if t.task_id == "t"
        ));
        let refused = classify("prompts/get", &task).expect_err("not for prompts/get");
        assert!(refused.contains("not allowed for prompts/get"), "{refused}");
        let broken = json!({"resultType": "task", "status": "working"});
        assert!(classify("tools/call", &broken).is_err());
    }

    #[test]
    fn input_required_names_the_requests_and_keeps_the_state() {
        let result = json!({
            "resultType": "input_required",
            "inputRequests": {"confirm": {"method": "elicitation/create",
                                          "params": {"message": "ok?", "requestedSchema": {}}}},
            "requestState": "{\"nonce\":\"é\"}"
        });
        let Ok(Round::InputRequired {
            requests,
            request_state,
        }) = classify("tools/call", &result)
        else {
            panic!("not input_required")
        };
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].key, "confirm");
        assert_eq!(requests[0].method, "elicitation/create");
        assert_eq!(request_state, Some(json!("{\"nonce\":\"é\"}")));
        // Only state: a retry without asking anyone.
        let shed = json!({"resultType": "input_required", "requestState": "s"});
        assert!(matches!(
            classify("resources/read", &shed),
            Ok(Round::InputRequired { requests, .. }) if requests.is_empty()
        ));
        assert!(classify("tools/call", &json!({"resultType": "input_required"})).is_err());
    }

    #[test]
    fn the_next_round_carries_answers_and_state_only_when_given() {
        let original = json!({"name": "t", "arguments": {"a": 1}, "requestState": "old"});
        let mut answers = Map::new();
        answers.insert("confirm".into(), json!({"action": "accept"}));
        let next = next_round_params(Some(&original), answers, Some(&json!("new")));
        assert_eq!(next["arguments"], json!({"a": 1}));
        assert_eq!(next["inputResponses"]["confirm"]["action"], "accept");
        assert_eq!(next["requestState"], "new");
        let bare = next_round_params(Some(&original), Map::new(), None);
        assert!(
            bare.get("requestState").is_none(),
            "never invented or left over"
        );
        assert!(bare.get("inputResponses").is_none());
    }
}
