//! The 2026-07-28 Tasks extension (`io.modelcontextprotocol/tasks`, `ext-tasks`'
//! `specification/draft/tasks.md`).
//!
//! The client declares the extension per request, in
//! `_meta["io.modelcontextprotocol/clientCapabilities"].extensions`; the server decides per
//! request whether to answer with a task, and `long_job` always does. A client that did not
//! declare it gets `-32021` (Missing Required Client Capability) naming the extension, on
//! `tools/call long_job` and on every task method: the extension forbids a `CreateTaskResult`
//! to it, and the job cannot be done synchronously in a request/response of this era (that is
//! what the extension is for). A task is shown as a flat `DetailedTask`: `ttlMs`,
//! `pollIntervalMs`, and `inputRequests`, `result` or `error` inlined by status.

use serde_json::{json, Map, Value};

use super::super::super::era::CLIENT_CAPABILITIES_KEY;
use super::super::super::jsonrpc::{Args, RpcError, METHOD_NOT_FOUND};
use super::super::super::lock;
use super::super::super::server::Server;
use super::super::Outcome;
use super::job::{iso8601, End, JobSpec, Phase, Record, Snapshot, Status, TaskEra};
use super::{
    accepts, confirm_params, now_ms, record_answer, record_cancel, task_id_param, TASKS_EXTENSION,
};

/// The extension's error for a client that did not declare it.
pub(crate) const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;

/// The key of the job's one input request; unique over the task's life, as the extension
/// requires, since the job asks once.
const CONFIRM_KEY: &str = "confirm";

/// Whether a modern request declares the Tasks extension in its client capabilities.
pub(crate) fn declares_tasks(params: &Args) -> bool {
    params
        .get("_meta")
        .and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY))
        .and_then(|caps| caps.get("extensions"))
        .and_then(|extensions| extensions.get(TASKS_EXTENSION))
        .is_some_and(Value::is_object)
}

/// `-32021`, with the capability the request lacked, as the extension words it.
pub(crate) fn missing_tasks_capability() -> RpcError {
    RpcError::new(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
    )
    .with_data(json!({ "requiredCapabilities": { "extensions": { TASKS_EXTENSION: {} } } }))
}

/// The fields every shape of a task has (`Task`).
fn task_fields(record: &Record, snapshot: &Snapshot) -> Map<String, Value> {
    let status = snapshot.status(TaskEra::Modern);
    let mut task = Map::new();
    task.insert("taskId".into(), json!(record.task_id));
    task.insert("status".into(), json!(status.name()));
    if let Some(message) = status_message(status) {
        task.insert("statusMessage".into(), json!(message));
    }
    task.insert("createdAt".into(), json!(iso8601(record.created_ms)));
    task.insert("lastUpdatedAt".into(), json!(iso8601(snapshot.updated_ms)));
    task.insert("ttlMs".into(), json!(record.job.ttl_ms));
    task.insert("pollIntervalMs".into(), json!(record.job.poll_ms));
    task
}

fn status_message(status: Status) -> Option<&'static str> {
    match status {
        Status::InputRequired => Some("The job waits for the client to confirm."),
        Status::Failed => Some("Tool execution failed: the job failed"),
        Status::Cancelled => Some("The task was cancelled by request."),
        Status::Working | Status::Completed => None,
    }
}

/// The `DetailedTask` of `tasks/get` and `notifications/tasks`: the task with what its status
/// carries inlined.
pub(super) fn detailed(record: &Record, snapshot: &Snapshot) -> Value {
    let mut task = task_fields(record, snapshot);
    match &snapshot.phase {
        Phase::InputRequired => {
            let request = json!({ "method": "elicitation/create", "params": confirm_params() });
            task.insert("inputRequests".into(), json!({ CONFIRM_KEY: request }));
        }
        Phase::Ended(End::Result(result)) => {
            task.insert("result".into(), result.clone());
        }
        Phase::Ended(End::Failed) => {
            task.insert("error".into(), End::error_json());
        }
        Phase::Working | Phase::Cancelled => {}
    }
    Value::Object(task)
}

impl Server {
    /// `tools/call long_job` in the modern era: a task, or `-32021`.
    pub(super) fn modern_long_job(&self, id: &Value, job: JobSpec, params: &Args) -> Outcome {
        if !declares_tasks(params) {
            return Outcome::Reply(Err(missing_tasks_capability()));
        }
        self.create_task(id, TaskEra::Modern, job, |record| {
            let seed = Snapshot {
                phase: Phase::Working,
                updated_ms: record.created_ms,
            };
            let mut created = task_fields(record, &seed);
            created.insert("resultType".into(), json!("task"));
            Value::Object(created)
        })
    }

    /// `tasks/get`, `tasks/update` and `tasks/cancel` of the extension, answered here: a change
    /// is answered with the state lock still held, and only then is the clock woken, so that
    /// the acknowledgement goes out before any `notifications/tasks` telling of the change.
    pub(crate) fn modern_task_method(&self, id: &Value, method: &str, params: &Args) {
        let task_id = if declares_tasks(params) {
            task_id_param(params)
        } else {
            Err(missing_tasks_capability())
        };
        let task_id = match task_id {
            Ok(task_id) => task_id,
            Err(error) => return self.respond(id, Err(error)),
        };
        let now = now_ms();
        let mut state = lock(&self.state);
        let tasks = &mut state.tasks;
        let reply = match method {
            "tasks/get" => {
                Self::log_poll(task_id);
                tasks
                    .find(task_id, TaskEra::Modern, now)
                    .map(|entry| detailed(&entry.record, &entry.record.at(now)))
            }
            "tasks/update" => match params.get("inputResponses") {
                // Keys not outstanding are ignored, but the task must exist.
                Some(Value::Object(responses)) => match responses.get(CONFIRM_KEY) {
                    Some(response) => {
                        let accepted = accepts(Some(response));
                        record_answer(tasks, task_id, TaskEra::Modern, accepted, now)
                    }
                    None => tasks.find(task_id, TaskEra::Modern, now).map(|_| ()),
                }
                .map(|()| json!({})),
                _ => Err(RpcError::invalid_params(
                    "tasks/update needs `inputResponses` (an object)",
                )),
            },
            "tasks/cancel" => {
                record_cancel(tasks, task_id, TaskEra::Modern, now).map(|_| json!({}))
            }
            _ => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
        };
        self.respond(id, reply);
        if method != "tasks/get" {
            self.wake_clock(&mut state.tasks);
        }
    }
}
