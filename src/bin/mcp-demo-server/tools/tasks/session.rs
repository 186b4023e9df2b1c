//! The 2025-11-25 revision's experimental tasks (`basic/utilities/tasks.mdx` of that revision),
//! served only when that version was negotiated (`initialize` declares `capabilities.tasks`
//! then, and `tools/list` gives `long_job` `execution.taskSupport: "optional"`).
//!
//! The client asks for a task with `params.task {ttl?}` and gets `CreateTaskResult {task}`;
//! without it (or in an older session) the job runs as an ordinary long tool call on a worker
//! thread. A task is shown as `Task` (`ttl`, `pollInterval`, nothing inlined): its result comes
//! from `tasks/result`, which answers once the task has ended — from the clock, so the reader
//! keeps serving meanwhile — with exactly what the `tools/call` would have answered, tagged
//! with `_meta["io.modelcontextprotocol/related-task"]`. When the job asks, the server sends
//! `elicitation/create` to the client as a request tied to the task (same `_meta`), once the
//! session is initialized, and the client's response is the answer. Unlike the extension, this
//! revision calls an `isError` result a failed task, and refuses to cancel an ended one.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::super::super::jsonrpc::{Args, Reply, RpcError, INTERNAL_ERROR, METHOD_NOT_FOUND};
use super::super::super::pagination;
use super::super::super::server::Server;
use super::super::super::{lock, stderr_line};
use super::super::deferred::{recv_or_cancel, wait_or_cancel};
use super::super::{text_result, Outcome};
use super::job::{iso8601, JobSpec, Phase, Record, Snapshot, Status, TaskEra};
use super::table::Tasks;
use super::{
    accepts, confirm_params, end_reply, now_ms, record_answer, record_cancel, task_id_param,
    MAX_TTL_MS,
};

/// The `_meta` key that ties a message to its task.
const RELATED_TASK_KEY: &str = "io.modelcontextprotocol/related-task";
/// `tasks/list` page size.
const LIST_PAGE: usize = 100;

/// What `initialize` declares in a 2025-11-25 session.
pub(crate) fn capability() -> Value {
    json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } })
}

fn related(task_id: &str) -> Value {
    json!({ RELATED_TASK_KEY: { "taskId": task_id } })
}

/// The `Task` of this revision.
pub(super) fn task_json(record: &Record, snapshot: &Snapshot) -> Value {
    let status = snapshot.status(TaskEra::Session);
    let mut task = Map::new();
    task.insert("taskId".into(), json!(record.task_id));
    task.insert("status".into(), json!(status.name()));
    let message = match status {
        Status::InputRequired => Some("The job waits for the client to confirm."),
        Status::Failed => Some("Tool execution failed: the job failed"),
        Status::Cancelled => Some("The task was cancelled by request."),
        Status::Working | Status::Completed => None,
    };
    if let Some(message) = message {
        task.insert("statusMessage".into(), json!(message));
    }
    task.insert("createdAt".into(), json!(iso8601(record.created_ms)));
    task.insert("lastUpdatedAt".into(), json!(iso8601(snapshot.updated_ms)));
    task.insert("ttl".into(), json!(record.job.ttl_ms));
    task.insert("pollInterval".into(), json!(record.job.poll_ms));
    Value::Object(task)
}

/// `tasks/result` of an ended task: what the `tools/call` would have answered, the result
/// tagged with its task. A cancelled task has no result: an error says so.
pub(super) fn payload(record: &Record, snapshot: &Snapshot) -> Reply {
    match &snapshot.phase {
        Phase::Ended(end) => end_reply(end.clone()).map(|mut result| {
            result["_meta"] = related(&record.task_id);
            result
        }),
        Phase::Cancelled => Err(RpcError::new(
            INTERNAL_ERROR,
            "Failed to retrieve task result: Task was cancelled",
        )),
        Phase::Working | Phase::InputRequired => {
            Err(RpcError::new(INTERNAL_ERROR, "the task has not ended"))
        }
    }
}

/// Our `elicitation/create` request for the job's input, tied to its task if it has one.
pub(super) fn elicitation(request_id: &str, task_id: Option<&str>) -> Value {
    let mut params = confirm_params();
    if let Some(task_id) = task_id {
        params["_meta"] = related(task_id);
    }
    json!({ "jsonrpc": "2.0", "id": request_id, "method": "elicitation/create",
            "params": params })
}

impl Server {
    /// Whether this connection has a 2025-11-25 session (tasks are served) and is not a modern
    /// request's handle.
    fn session_has_tasks(&self) -> bool {
        !self.era.is_modern() && lock(&self.state).session.has_tasks()
    }

    /// The ttl a task-augmented `tools/call` asks for (`params.task.ttl`, else `default`, the
    /// tool's `ttl_ms`), or `None` when the call is not task-augmented or the session has no
    /// tasks (then `params.task` is ignored, as a receiver without the capability must).
    pub(super) fn session_task_ttl(
        &self,
        params: &Args,
        default: u64,
    ) -> Result<Option<u64>, RpcError> {
        let task = match params.get("task") {
            None | Some(Value::Null) => return Ok(None),
            Some(task) => task,
        };
        if !self.session_has_tasks() {
            return Ok(None);
        }
        let Value::Object(task) = task else {
            return Err(RpcError::invalid_params("`task` must be an object"));
        };
        match task.get("ttl") {
            None | Some(Value::Null) => Ok(Some(default)),
            // A receiver may override the ttl asked for: ours stays within a week.
            Some(ttl) => match ttl.as_u64() {
                Some(ttl) => Ok(Some(ttl.clamp(1, MAX_TTL_MS))),
                None => Err(RpcError::invalid_params(
                    "`task.ttl` must be a non-negative integer",
                )),
            },
        }
    }

    /// `tools/call long_job` with `params.task`: `CreateTaskResult {task}`, seeded `working`.
    pub(super) fn session_long_job(&self, id: &Value, job: JobSpec) -> Outcome {
        self.create_task(id, TaskEra::Session, job, |record| {
            let seed = Snapshot {
                phase: Phase::Working,
                updated_ms: record.created_ms,
            };
            json!({ "task": task_json(record, &seed) })
        })
    }

    /// `long_job` without a task: the job on a worker thread, answered when it ends; its input
    /// request is a real `elicitation/create` to the client, as `confirm`'s is. Cancellable.
    pub(super) fn run_long_job(&self, id: &Value, job: JobSpec) -> Result<Outcome, RpcError> {
        self.spawn_call(id, move |server, cancel| {
            let first = Duration::from_millis(job.ms / 2);
            let rest = Duration::from_millis(job.ms - job.ms / 2);
            if !job.ask {
                return (!wait_or_cancel(cancel, first + rest)).then(|| end_reply(job.end()));
            }
            if wait_or_cancel(cancel, first) {
                return None;
            }
            let (request_id, reply) = server.expect_client_reply();
            server.out.send(&elicitation(&request_id, None));
            let Some(response) = recv_or_cancel(&reply, cancel) else {
                lock(&server.state)
                    .pending_client_replies
                    .remove(&request_id);
                return None;
            };
            if !accepts(response.get("result")) {
                return Some(Ok(text_result("declined")));
            }
            (!wait_or_cancel(cancel, rest)).then(|| end_reply(job.end()))
        })
    }

    /// `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/list`, answered here (the result
    /// of `tasks/result` maybe later, by the clock). Without a 2025-11-25 session they do not
    /// exist. A cancellation is answered with the state lock still held, then the clock woken,
    /// so that its `notifications/tasks/status` follows the answer.
    pub(crate) fn session_task_method(&self, id: &Value, method: &str, params: &Args) {
        if !self.session_has_tasks() {
            let error = RpcError::new(METHOD_NOT_FOUND, format!("method not found: {method}"));
            return self.respond(id, Err(error));
        }
        if method == "tasks/list" {
            return self.respond(id, self.session_list(params));
        }
        let task_id = match task_id_param(params) {
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
                    .find(task_id, TaskEra::Session, now)
                    .map(|entry| task_json(&entry.record, &entry.record.at(now)))
            }
            "tasks/cancel" => cancel(tasks, task_id, now),
            _ => match result_now(tasks, id, task_id, now) {
                Some(reply) => reply,
                None => return self.wake_clock(tasks), // answered when the task ends
            },
        };
        self.respond(id, reply);
        if method == "tasks/cancel" {
            self.wake_clock(&mut state.tasks);
        }
    }

    /// `tasks/list`: the session's live tasks, oldest first, paginated.
    fn session_list(&self, params: &Args) -> Reply {
        let now = now_ms();
        let tasks: Vec<Value> = {
            let state = lock(&self.state);
            state
                .tasks
                .in_order()
                .filter(|e| e.record.era == TaskEra::Session && !e.record.is_expired(now))
                .map(|e| task_json(&e.record, &e.record.at(now)))
                .collect()
        };
        pagination::page("tasks", &tasks, params, LIST_PAGE)
    }

    /// The client's response to a task's `elicitation/create`; false if `request_id` was no
    /// such request. An error response, or anything but an accepting `ok`, declines.
    pub(crate) fn answer_task_elicitation(&self, request_id: &str, response: &Value) -> bool {
        let mut state = lock(&self.state);
        let Some(task_id) = state.tasks.asked_by(request_id) else {
            return false;
        };
        let accepted = accepts(response.get("result"));
        let tasks = &mut state.tasks;
        if let Err(error) = record_answer(tasks, &task_id, TaskEra::Session, accepted, now_ms()) {
            stderr_line(&format!(
                "demo: the answer for task {task_id} was not recorded: {}",
                error.to_json()
            ));
        }
        self.wake_clock(tasks);
        true
    }

    /// A `tasks/result` request the client cancelled is not answered.
    pub(crate) fn forget_task_waiter(&self, request_id: &Value) {
        lock(&self.state).tasks.forget_waiter(request_id);
    }
}

/// `tasks/cancel`: the task, cancelled; this revision refuses to cancel one that has ended.
fn cancel(tasks: &mut Tasks, task_id: &str, now: u64) -> Reply {
    let before = record_cancel(tasks, task_id, TaskEra::Session, now)?;
    if before.is_terminal() {
        return Err(RpcError::invalid_params(format!(
            "Cannot cancel task: already in terminal status '{}'",
            before.name()
        )));
    }
    let entry = tasks.find(task_id, TaskEra::Session, now)?;
    Ok(task_json(&entry.record, &entry.record.at(now)))
}

/// `tasks/result`: the payload if the task has ended, else `None`, the request now waiting in
/// the table for the clock to answer it.
fn result_now(tasks: &mut Tasks, id: &Value, task_id: &str, now: u64) -> Option<Reply> {
    let entry = match tasks.find(task_id, TaskEra::Session, now) {
        Ok(entry) => entry,
        Err(error) => return Some(Err(error)),
    };
    let snapshot = entry.record.at(now);
    if snapshot.status(TaskEra::Session).is_terminal() {
        return Some(payload(&entry.record, &snapshot));
    }
    tasks.wait(task_id, id.clone()).err().map(Err)
}
