//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) of the 2026-07-28 revision,
//! as it appears on the wire: a server may answer a `tools/call` with `resultType: "task"` and
//! a task (its id, status, time to live and the poll interval it asks for) instead of the
//! tool's result; the client then asks `tasks/get` until the task ends (`completed` with the
//! result inlined, `failed` with the JSON-RPC error, or `cancelled`), answers what an
//! `input_required` task asks with `tasks/update`, and may cancel it with `tasks/cancel`.
//!
//! Pure: this module declares the extension, reads a task out of a result, and builds the
//! requests; the session decides when to poll (`session::tasks`).
//!
//! Rules kept here: a task may answer only the methods that support it (a task for anything
//! else is an invalid response); everything a task carries is checked for its type and bound
//! in size before anything is kept of it; a status we do not know is an invalid response, not
//! a guess.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::protocol::jsonrpc::RpcError;
use crate::protocol::mrtr::{self, InputRequest};
use crate::protocol::text::server_text;
pub use crate::tasks::TaskStatus;

/// The extension's identifier, declared in every modern request's client capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The methods a server may answer with a task.
pub const TASK_METHODS: &[&str] = &["tools/call"];

/// The longest task id kept: ids are opaque, and a server that sends a megabyte of one is not
/// given a megabyte of our memory per poll.
pub const MAX_TASK_ID_BYTES: usize = 1024;

/// What a task's status brings with it.
#[derive(Debug, Clone, PartialEq)]
pub enum Detail {
    /// Nothing (working, cancelled).
    None,
    /// The final result of the request (completed), as the request would have been answered.
    Result(Value),
    /// The JSON-RPC error the request ended with (failed).
    Error(RpcError),
    /// What the server needs answered before it can go on (input_required).
    Input(Vec<InputRequest>),
}

/// A task as a `CreateTaskResult`, a `tasks/get` answer or a `notifications/tasks` carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskState {
    /// The server's id for it.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// What the server says about it, escaped and bounded.
    pub status_message: Option<String>,
    /// How long after its creation the server may forget it; `None`: unlimited (or not said).
    pub ttl: Option<Duration>,
    /// How often the server asks to be polled, if it said.
    pub poll_interval: Option<Duration>,
    /// What its status brings.
    pub detail: Detail,
}

/// Reads a task out of `value` (a `tasks/get` result, or a notification's params), whose status
/// must bring its detail (a completed task its result, ...). `Err` says what is wrong with it,
/// for an invalid-response error.
pub fn parse_task(value: &Value) -> Result<TaskState, String> {
    parse(value, true)
}

/// Reads the task of a `CreateTaskResult`: a `Result & Task`, which need not inline what its
/// status brings (the first poll does); a detail that is there is read all the same.
pub fn parse_created_task(value: &Value) -> Result<TaskState, String> {
    parse(value, false)
}

fn parse(value: &Value, detailed: bool) -> Result<TaskState, String> {
    let Value::Object(task) = value else {
        return Err("the task is not an object".into());
    };
    let task_id = match task.get("taskId") {
        Some(Value::String(id)) if id.is_empty() => return Err("taskId is empty".into()),
        Some(Value::String(id)) if id.len() > MAX_TASK_ID_BYTES => {
            return Err(format!(
                "taskId is {} bytes long (at most {MAX_TASK_ID_BYTES} are accepted)",
                id.len()
            ))
        }
        Some(Value::String(id)) => id.clone(),
        Some(_) => return Err("taskId is not a string".into()),
        None => return Err("the task has no taskId".into()),
    };
    let status = match task.get("status") {
        Some(Value::String(status)) => TaskStatus::parse(status)
            .ok_or_else(|| format!("unrecognised task status {}", server_text(status)))?,
        Some(_) => return Err("the task's status is not a string".into()),
        None => return Err("the task has no status".into()),
    };
    let status_message = match task.get("statusMessage") {
        None | Some(Value::Null) => None,
        Some(Value::String(message)) => Some(server_text(message)),
        Some(_) => return Err("statusMessage is not a string".into()),
    };
    let ttl = milliseconds(task, "ttlMs")?;
    let poll_interval = milliseconds(task, "pollIntervalMs")?;
    let detail = match status {
        TaskStatus::Working | TaskStatus::Cancelled => Detail::None,
        TaskStatus::Completed => match task.get("result") {
            Some(result @ Value::Object(_)) => Detail::Result(result.clone()),
            Some(_) => return Err("a completed task's result is not an object".into()),
            None if !detailed => Detail::None,
            None => return Err("a completed task carries no result".into()),
        },
        TaskStatus::Failed => match task.get("error") {
            Some(error) => Detail::Error(rpc_error(error)?),
            None if !detailed => Detail::None,
            None => return Err("a failed task carries no error".into()),
        },
        TaskStatus::InputRequired => match task.get("inputRequests") {
            Some(requests) => Detail::Input(mrtr::input_requests(requests)?),
            None if !detailed => Detail::None,
            None => return Err("an input_required task carries no inputRequests".into()),
        },
    };
    Ok(TaskState {
        task_id,
        status,
        status_message,
        ttl,
        poll_interval,
        detail,
    })
}

/// A duration in integer milliseconds; absent or `null` is `None`.
fn milliseconds(task: &Map<String, Value>, field: &str) -> Result<Option<Duration>, String> {
    match task.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(ms) => Ok(Some(Duration::from_millis(ms))),
            // A float of whole milliseconds (`5000.0`) is what some JSON writers make of an
            // integer; anything else is not a duration.
            None => match n.as_f64() {
                Some(ms) if ms >= 0.0 && ms.fract() == 0.0 && ms <= u64::MAX as f64 => {
                    Ok(Some(Duration::from_millis(ms as u64)))
                }
                _ => Err(format!("{field} is not a non-negative integer")),
            },
        },
        Some(_) => Err(format!("{field} is not a number")),
    }
}

/// The JSON-RPC error a failed task carries.
fn rpc_error(error: &Value) -> Result<RpcError, String> {
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .ok_or("a failed task's error has no integer code")?;
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .ok_or("a failed task's error has no message")?;
    Ok(RpcError {
        code,
        message: message.to_owned(),
        data: error.get("data").cloned(),
    })
}

/// Reads a task of the 2025-11-25 revision's experimental tasks out of `value` (a
/// `CreateTaskResult`'s `task`, or a `tasks/get` result): the same fields but for `ttl` and
/// `pollInterval` (milliseconds), and no outcome inlined — that comes from `tasks/result`.
pub fn parse_experimental_task(value: &Value) -> Result<TaskState, String> {
    let Value::Object(task) = value else {
        return Err("the task is not an object".into());
    };
    // The same checks, under the names of the extension.
    let mut renamed = task.clone();
    for (old, new) in [("ttl", "ttlMs"), ("pollInterval", "pollIntervalMs")] {
        if let Some(v) = renamed.remove(old) {
            renamed.insert(new.into(), v);
        }
    }
    for inlined in ["result", "error", "inputRequests"] {
        renamed.remove(inlined);
    }
    // A terminal status' outcome is fetched with tasks/result: stand in an empty one for the
    // check, and keep no detail.
    match renamed.get("status").and_then(Value::as_str) {
        Some("completed") => {
            renamed.insert("result".into(), Value::Object(Map::new()));
        }
        Some("failed") => {
            renamed.insert(
                "error".into(),
                serde_json::json!({"code": 0, "message": ""}),
            );
        }
        Some("input_required") => {
            renamed.insert("inputRequests".into(), Value::Object(Map::new()));
        }
        _ => {}
    }
    let mut state = parse_task(&Value::Object(renamed))?;
    state.detail = Detail::None;
    Ok(state)
}

/// Whether a server whose capabilities these are declares the extension (and so takes
/// `taskIds` in a listen's filter).
pub fn offered(capabilities: &rmcp::model::ServerCapabilities) -> bool {
    capabilities
        .extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(EXTENSION))
}

/// The session era's experimental tasks: whether a server whose `capabilities` these are
/// takes task-augmented `tools/call`s (`tasks.requests.tools.call`).
pub fn experimental_tool_tasks(capabilities: &Map<String, Value>) -> bool {
    capabilities
        .get("tasks")
        .and_then(|t| t.get("requests"))
        .and_then(|r| r.get("tools"))
        .and_then(|t| t.get("call"))
        .is_some_and(Value::is_object)
}

/// `capabilities` with the extension declared in its `extensions` (kept as they are
/// otherwise).
pub fn declare(capabilities: &Value) -> Value {
    let mut capabilities = match capabilities {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let extensions = capabilities
        .entry("extensions")
        .or_insert_with(|| Value::Object(Map::new()));
    if !extensions.is_object() {
        *extensions = Value::Object(Map::new());
    }
    if let Value::Object(extensions) = extensions {
        extensions
            .entry(EXTENSION)
            .or_insert_with(|| Value::Object(Map::new()));
    }
    Value::Object(capabilities)
}

/// The params of `tasks/get` and `tasks/cancel`.
pub fn task_params(task_id: &str) -> Value {
    let mut params = Map::new();
    params.insert("taskId".into(), Value::String(task_id.to_owned()));
    Value::Object(params)
}

/// The params of `tasks/update`: the answers to the task's input requests, by key.
pub fn update_params(task_id: &str, responses: Map<String, Value>) -> Value {
    let mut params = Map::new();
    params.insert("taskId".into(), Value::String(task_id.to_owned()));
    params.insert("inputResponses".into(), Value::Object(responses));
    Value::Object(params)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn task(status: &str) -> Value {
        json!({
            "taskId": "t-1", "status": status, "createdAt": "2026-12-02T10:00:00Z",
            "lastUpdatedAt": "2026-12-02T10:00:00Z", "ttlMs": 60000, "pollIntervalMs": 250
        })
    }

    #[test]
    fn a_working_task_is_read_with_its_ttl_and_interval() {
        let state = parse_task(&task("working")).expect("a task");
        assert_eq!(state.task_id, "t-1");
        assert_eq!(state.status, TaskStatus::Working);
        assert_eq!(state.ttl, Some(Duration::from_secs(60)));
        assert_eq!(state.poll_interval, Some(Duration::from_millis(250)));
        assert_eq!(state.detail, Detail::None);
        let mut unlimited = task("working");
        unlimited["ttlMs"] = Value::Null;
        unlimited["pollIntervalMs"] = json!(5000.0);
        let state = parse_task(&unlimited).expect("a task");
        assert_eq!(state.ttl, None);
        assert_eq!(state.poll_interval, Some(Duration::from_secs(5)));
    }

    #[test]
    fn each_terminal_status_brings_what_it_must() {
        let mut completed = task("completed");
        completed["result"] = json!({"content": [], "isError": true});
        assert!(matches!(
            parse_task(&completed).map(|t| t.detail),
            Ok(Detail::Result(r)) if r["isError"] == true
        ));
        assert!(parse_task(&task("completed")).is_err(), "no result");
        let mut failed = task("failed");
        failed["error"] = json!({"code": -32603, "message": "boom", "data": {"x": 1}});
        let Ok(Detail::Error(error)) = parse_task(&failed).map(|t| t.detail) else {
            panic!("a failed task's error")
        };
        assert_eq!((error.code, error.message.as_str()), (-32603, "boom"));
        assert_eq!(error.data, Some(json!({"x": 1})));
        failed["error"] = json!({"message": "no code"});
        assert!(parse_task(&failed).is_err());
        assert_eq!(
            parse_task(&task("cancelled")).map(|t| t.detail),
            Ok(Detail::None)
        );
    }

    #[test]
    fn input_required_names_its_requests() {
        let mut asking = task("input_required");
        asking["inputRequests"] = json!({"confirm": {"method": "elicitation/create",
                                                     "params": {"message": "go on?"}}});
        let Ok(Detail::Input(requests)) = parse_task(&asking).map(|t| t.detail) else {
            panic!("input requests")
        };
        assert_eq!(requests[0].key, "confirm");
        assert_eq!(requests[0].method, "elicitation/create");
        assert!(parse_task(&task("input_required")).is_err());
    }

    #[test]
    fn a_malformed_task_says_what_is_wrong() {
        for (value, expected) in [
            (json!([]), "not an object"),
            (json!({"status": "working"}), "no taskId"),
            (json!({"taskId": 3, "status": "working"}), "not a string"),
            (json!({"taskId": "", "status": "working"}), "empty"),
            (json!({"taskId": "a", "status": "sleeping"}), "unrecognised"),
            (json!({"taskId": "a"}), "no status"),
            (
                json!({"taskId": "a", "status": "working", "pollIntervalMs": -1}),
                "non-negative",
            ),
            (
                json!({"taskId": "a", "status": "working", "ttlMs": "long"}),
                "not a number",
            ),
            (
                json!({"taskId": "x".repeat(MAX_TASK_ID_BYTES + 1), "status": "working"}),
                "bytes long",
            ),
        ] {
            let error = parse_task(&value).expect_err("invalid");
            assert!(error.contains(expected), "{error} for {value}");
        }
    }

    #[test]
    fn an_experimental_task_reads_as_one_of_the_extension_without_its_outcome() {
        let task = json!({"taskId": "t", "status": "completed", "ttl": 60000,
                          "pollInterval": 500, "createdAt": "2025-11-25T10:00:00Z"});
        let state = parse_experimental_task(&task).expect("a task");
        assert_eq!(state.status, TaskStatus::Completed);
        assert_eq!(state.ttl, Some(Duration::from_secs(60)));
        assert_eq!(state.poll_interval, Some(Duration::from_millis(500)));
        assert_eq!(
            state.detail,
            Detail::None,
            "its outcome comes from tasks/result"
        );
        for status in ["working", "input_required", "failed", "cancelled"] {
            let task = json!({"taskId": "t", "status": status});
            assert!(parse_experimental_task(&task).is_ok(), "{status}");
        }
        assert!(parse_experimental_task(&json!({"taskId": "t", "status": "odd"})).is_err());
        let caps = json!({"tasks": {"list": {}, "requests": {"tools": {"call": {}}}}});
        assert!(experimental_tool_tasks(caps.as_object().unwrap()));
        assert!(!experimental_tool_tasks(
            json!({"tasks": {}}).as_object().unwrap()
        ));
    }

    #[test]
    fn a_created_task_need_not_inline_what_its_status_brings() {
        for status in ["completed", "failed", "input_required"] {
            let created = json!({"taskId": "t", "status": status});
            assert!(parse_task(&created).is_err(), "{status}");
            let state = parse_created_task(&created).expect("a task to poll");
            assert_eq!(state.detail, Detail::None, "{status}");
        }
    }

    #[test]
    fn the_extension_is_declared_beside_what_is_there() {
        let declared = declare(&json!({"elicitation": {}, "extensions": {"x/y": {"a": 1}}}));
        assert_eq!(declared["elicitation"], json!({}));
        assert_eq!(declared["extensions"]["x/y"], json!({"a": 1}));
        assert_eq!(declared["extensions"][EXTENSION], json!({}));
        assert_eq!(declare(&Value::Null)["extensions"][EXTENSION], json!({}));
    }

    #[test]
    fn requests_carry_the_task_id() {
        assert_eq!(task_params("t"), json!({"taskId": "t"}));
        let mut answers = Map::new();
        answers.insert("k".into(), json!({"action": "accept"}));
        assert_eq!(
            update_params("t", answers),
            json!({"taskId": "t", "inputResponses": {"k": {"action": "accept"}}})
        );
    }
}
