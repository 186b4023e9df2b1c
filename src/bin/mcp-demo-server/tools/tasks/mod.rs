//! `long_job`, the long-running tool answered with a task, in both protocol eras.
//!
//! A job takes `ms` milliseconds from its creation, asks once half-way if told to (`ask`), and
//! ends with `text`, an `isError` result or a JSON-RPC error. Its state is a pure function of the
//! clock and the answers it got (`job`), so nothing runs while it "works": the table (`table`)
//! holds its record, and the polls compute where it is. One thread, the clock (`clock`), wakes
//! when some task's state changes by itself, to tell those who listen and to answer those who
//! wait. Each era has its room:
//!
//! - `modern`: the 2026-07-28 Tasks extension (`io.modelcontextprotocol/tasks`): a
//!   `CreateTaskResult` for a client that declares the extension on its `tools/call`, `-32021`
//!   for one that does not; `tasks/get` (the `DetailedTask`, with `inputRequests`, `result` or
//!   `error` inlined), `tasks/update`, `tasks/cancel`, and `notifications/tasks` to the
//!   `subscriptions/listen` streams that named the task (`listen`).
//! - `session`: the 2025-11-25 revision's experimental tasks, when that version was negotiated:
//!   `tools/call` with `params.task`, `tasks/get`, `tasks/result` (answered once the task ends,
//!   by the clock, never blocking the reader), `tasks/cancel`, `tasks/list`,
//!   `notifications/tasks/status`, and the input request sent to the client as a real
//!   `elicitation/create` request tied to its task. Without `params.task` the job runs as an
//!   ordinary long tool call on a worker thread, as `slow` does.
//!
//! Every task is logged on stderr (`task-start <id>` when its job starts, `task-poll <id>` per
//! `tasks/get`) so tests can count polls and see that a job ran once, restarts included.

mod clock;
mod iso8601;
mod job;
mod modern;
mod session;
mod table;

pub(crate) use modern::{declares_tasks, missing_tasks_capability};
pub(crate) use session::capability as session_tasks_capability;
pub(crate) use table::Tasks;

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::super::jsonrpc::{optional, Args, Reply, RpcError, INTERNAL_ERROR, METHOD_NOT_FOUND};
use super::super::server::Server;
use super::super::{lock, stderr_line};
use super::Outcome;
use job::{Answer, End, JobSpec, Record, Status, TaskEra};
use table::{new_task_id, not_found, MAX_ID_LEN};

/// The extension's identifier, in `server/discover` and in a client's capabilities.
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The one 2025 revision with tasks.
pub(crate) const SESSION_TASKS_VERSION: &str = "2025-11-25";
/// The tool.
pub(crate) const LONG_JOB: &str = "long_job";

/// The bounds of `long_job`'s arguments: a day of work, an hour between polls, a week of life.
const MAX_JOB_MS: u64 = 86_400_000;
const MAX_POLL_MS: u64 = 3_600_000;
const MAX_TTL_MS: u64 = 7 * 86_400_000;
/// `text` is kept in the task (and its file): bounded.
const MAX_TEXT_BYTES: usize = 4096;

/// Now, in ms since the Unix epoch: the wall clock, because a task's times must mean the same
/// to the next process that reads its file.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `long_job`'s arguments, checked and bounded.
fn job_spec(args: &Args) -> Result<JobSpec, RpcError> {
    let bounded = |key: &str, default: u64, min: u64, max: u64| {
        let expected = format!("an integer from {min} to {max}");
        let value = optional(args, key, default, Value::as_u64, &expected)?;
        if (min..=max).contains(&value) {
            Ok(value)
        } else {
            Err(RpcError::invalid_params(format!(
                "`{key}` must be {expected}"
            )))
        }
    };
    let flag = |key: &str| optional(args, key, false, Value::as_bool, "a boolean");
    let text = match args.get("text") {
        None | Some(Value::Null) => "done".to_owned(),
        Some(Value::String(text)) if text.len() <= MAX_TEXT_BYTES => text.clone(),
        Some(_) => {
            return Err(RpcError::invalid_params(format!(
                "`text` must be a string of at most {MAX_TEXT_BYTES} bytes"
            )))
        }
    };
    Ok(JobSpec {
        ms: bounded("ms", 2000, 0, MAX_JOB_MS)?,
        poll_ms: bounded("poll_ms", 200, 1, MAX_POLL_MS)?,
        ask: flag("ask")?,
        fail: flag("fail")?,
        error_result: flag("error_result")?,
        text,
        ttl_ms: bounded("ttl_ms", 600_000, 1, MAX_TTL_MS)?,
    })
}

/// `params.taskId` of a task method. One longer than any id of ours names no task.
fn task_id_param(params: &Args) -> Result<&str, RpcError> {
    match params.get("taskId") {
        Some(Value::String(id)) if id.len() <= MAX_ID_LEN => Ok(id),
        Some(Value::String(_)) => Err(not_found()),
        _ => Err(RpcError::invalid_params("`taskId` must be a string")),
    }
}

/// The job's one input request: an elicitation, the same in both eras (the session era adds
/// the related task to its `_meta`).
fn confirm_params() -> Value {
    json!({
        "message": "Continue the job?",
        "requestedSchema": { "type": "object", "properties": { "ok": { "type": "boolean" } } },
    })
}

/// Whether an elicitation result lets the job go on: `accept` with `content.ok == true`.
fn accepts(result: Option<&Value>) -> bool {
    result.is_some_and(|r| r["action"] == "accept" && r["content"]["ok"] == true)
}

/// Records the client's answer to task `task_id`'s input request, if the task is waiting for
/// it (an answer to a task that no longer asks is ignored, as both eras allow). The caller holds
/// the state lock, answers, then wakes the clock.
fn record_answer(
    tasks: &mut Tasks,
    task_id: &str,
    era: TaskEra,
    accepted: bool,
    now: u64,
) -> Result<(), RpcError> {
    let entry = tasks.find(task_id, era, now)?;
    let waiting =
        entry.record.answer.is_none() && entry.record.at(now).status(era) == Status::InputRequired;
    if !waiting {
        return Ok(());
    }
    tasks.update(task_id, |record| {
        record.answer = Some(Answer {
            at_ms: now,
            accepted,
        });
    })
}

/// Cancels task `task_id` unless it has ended; returns its status before. The caller holds the
/// state lock, answers, then wakes the clock.
fn record_cancel(
    tasks: &mut Tasks,
    task_id: &str,
    era: TaskEra,
    now: u64,
) -> Result<Status, RpcError> {
    let entry = tasks.find(task_id, era, now)?;
    let status = entry.record.at(now).status(era);
    if !status.is_terminal() {
        tasks.update(task_id, |record| record.cancelled_ms = Some(now))?;
    }
    Ok(status)
}

/// What an ended job answers, as a `tools/call` would have.
fn end_reply(end: End) -> Reply {
    match end {
        End::Result(result) => Ok(result),
        End::Failed => Err(RpcError::new(INTERNAL_ERROR, job::JOB_FAILED)),
    }
}

impl Server {
    /// `tools/call long_job`, in the era of the call.
    pub(super) fn tool_long_job(
        &self,
        id: &Value,
        args: &Args,
        params: &Args,
    ) -> Result<Outcome, RpcError> {
        let job = job_spec(args)?;
        if self.era.is_modern() {
            return Ok(self.modern_long_job(id, job, params));
        }
        match self.session_task_ttl(params, job.ttl_ms)? {
            Some(ttl_ms) => Ok(self.session_long_job(id, JobSpec { ttl_ms, ..job })),
            None => self.run_long_job(id, job),
        }
    }

    /// A 2025-11-25 session's `tools/call` of another tool with `params.task`: those tools do
    /// not support tasks (no `execution.taskSupport`), which the revision answers with -32601.
    pub(super) fn refuse_task_augmentation(&self, name: &str, params: &Args) -> Option<RpcError> {
        let augmented = params.get("task").is_some_and(|t| !t.is_null());
        let session = !self.era.is_modern() && lock(&self.state).session.has_tasks();
        (augmented && session && name != LONG_JOB).then(|| {
            RpcError::new(
                METHOD_NOT_FOUND,
                format!("tool {name} does not support task-augmented execution"),
            )
        })
    }

    /// A new task for `job`, durable before it is returned, answered to the `tools/call` `id`
    /// in the shape `created` gives it; its job starts now.
    ///
    /// Answered here, with the state lock held (and counted as `respond_call` counts), then the
    /// clock is woken: so nothing about the task (a status notification, its input request) can
    /// reach the client before the id it names.
    fn create_task(
        &self,
        id: &Value,
        era: TaskEra,
        job: JobSpec,
        created: impl FnOnce(&Record) -> Value,
    ) -> Outcome {
        let now = now_ms();
        let record = Record {
            task_id: new_task_id(),
            era,
            created_ms: now,
            job,
            answer: None,
            cancelled_ms: None,
        };
        let mut state = lock(&self.state);
        if let Err(error) = state.tasks.insert(record.clone(), now) {
            return Outcome::Reply(Err(error));
        }
        stderr_line(&format!("task-start {}", record.task_id));
        state.calls_answered += 1;
        self.respond(id, Ok(created(&record)));
        self.wake_clock(&mut state.tasks);
        Outcome::Deferred
    }

    /// Logs one `tasks/get` (tests count them per task).
    fn log_poll(task_id: &str) {
        stderr_line(&format!("task-poll {}", task_id.escape_debug()));
    }

    /// The tasks of `DEMO_TASKS_DIR`, read at start-up; the clock runs if there are any.
    pub(crate) fn load_tasks(&self) {
        let tasks = Tasks::load(self.config.tasks_dir.as_deref(), now_ms());
        let mut state = lock(&self.state);
        state.tasks = tasks;
        if !state.tasks.is_empty() {
            self.wake_clock(&mut state.tasks);
        }
    }
}
