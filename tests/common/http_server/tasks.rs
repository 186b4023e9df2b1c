//! The Tasks extension (2026-07-28) in the modern service, for the client's tasks over HTTP:
//! `job {ms, text}` called with the extension declared is answered with a task at once
//! (`resultType: "task"`, `pollIntervalMs` from [`super::Faults::task_poll_ms`]), which
//! completes `ms` after it was created with the text `text`; without the declaration it runs
//! in its request. `tasks/get` tells a task's state as of now (each poll counted per task),
//! `tasks/cancel` cancels one that has not completed, and an id the server does not know
//! (never made, or forgotten by [`super::Faults::forget_tasks`], as a restart would) is
//! `-32602`. A task's requests must carry `Mcp-Name: <taskId>` (checked with the others, in
//! `headers`). Each poll's `X-Replica` header is kept per task (runs of one replica's polls), so
//! that a fleet test can check that no task is polled by two replicas at once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::state::{lock, Shared};

/// The header a replica of a fleet test names itself in.
pub(super) const REPLICA_HEADER: &str = "x-replica";

/// The jobs the server runs as tasks.
#[derive(Default)]
pub(super) struct Jobs {
    next: u64,
    jobs: HashMap<String, Job>,
}

struct Job {
    created: Instant,
    runs_for: Duration,
    text: String,
    cancelled: bool,
    polls: usize,
    /// Who polled it (`X-Replica`), a run of polls each: `[a, b]` is "a, then b took over";
    /// and when each run began.
    pollers: Vec<String>,
    runs_began: Vec<Instant>,
}

/// The schema of `job`, callable in the modern era (never listed).
pub(super) fn job_schema() -> Value {
    json!({"type": "object", "properties": {
        "ms": {"type": "integer"}, "text": {"type": "string"}}})
}

/// Whether a request declares the extension.
pub(super) fn declares_tasks(params: &Value) -> bool {
    params
        .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities/extensions")
        .and_then(|e| e.get("io.modelcontextprotocol/tasks"))
        .is_some()
}

/// `job`'s arguments: how long it runs, and what it answers.
fn job_args(args: &Value) -> (Duration, String) {
    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(200);
    let text = args
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or("done")
        .to_owned();
    (Duration::from_millis(ms), text)
}

/// `job` without the extension: it runs in its request.
pub(super) async fn run_in_request(args: &Value) -> Value {
    let (runs_for, text) = job_args(args);
    actix_web::rt::time::sleep(runs_for).await;
    json!({"content": [{"type": "text", "text": text}]})
}

/// `job` with the extension: a task, answered at once.
pub(super) fn create(state: &Shared, args: &Value) -> Value {
    let (runs_for, text) = job_args(args);
    let (poll_ms, held) = {
        let faults = lock(&state.faults);
        (faults.task_poll_ms, faults.hold_tasks)
    };
    let mut jobs = lock(&state.jobs);
    jobs.next += 1;
    let id = format!("job-{}", jobs.next);
    let job = Job {
        created: Instant::now(),
        runs_for,
        text,
        cancelled: false,
        polls: 0,
        pollers: Vec::new(),
        runs_began: Vec::new(),
    };
    let mut task = task_json(&id, &job, poll_ms, held);
    task["resultType"] = json!("task");
    task["status"] = json!("working");
    if let Some(object) = task.as_object_mut() {
        object.remove("result");
    }
    jobs.jobs.insert(id, job);
    task
}

/// `job`'s task as `tasks/get` shows it; `held`: still working, whatever its time says.
fn task_json(id: &str, job: &Job, poll_ms: u64, held: bool) -> Value {
    let done = !held && job.created.elapsed() >= job.runs_for;
    let mut task = json!({
        "taskId": id, "createdAt": "2026-12-02T10:00:00Z", "lastUpdatedAt": "2026-12-02T10:00:00Z",
        "ttlMs": 600000, "pollIntervalMs": poll_ms,
    });
    if job.cancelled {
        task["status"] = json!("cancelled");
    } else if done {
        task["status"] = json!("completed");
        task["result"] = json!({"content": [{"type": "text", "text": job.text}]});
    } else {
        task["status"] = json!("working");
    }
    task
}

/// `tasks/get` and `tasks/cancel`.
pub(super) fn answer(
    state: &Shared,
    method: &str,
    params: &Value,
    replica: Option<&str>,
) -> Result<Value, (i64, String)> {
    let id = params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or((-32602, "Invalid params: taskId is missing".to_owned()))?;
    let (poll_ms, held) = {
        let faults = lock(&state.faults);
        (faults.task_poll_ms, faults.hold_tasks)
    };
    let mut jobs = lock(&state.jobs);
    let Some(job) = jobs.jobs.get_mut(id) else {
        return Err((-32602, "Failed to retrieve task: Task not found".to_owned()));
    };
    match method {
        "tasks/get" => {
            job.polls += 1;
            let replica = replica.unwrap_or("");
            if job.pollers.last().map(String::as_str) != Some(replica) {
                job.pollers.push(replica.to_owned());
                job.runs_began.push(Instant::now());
            }
            Ok(task_json(id, job, poll_ms, held))
        }
        _ => {
            if job.created.elapsed() < job.runs_for {
                job.cancelled = true;
            }
            Ok(json!({}))
        }
    }
}

/// Forgets every task (a restart that keeps none).
pub(super) fn forget(state: &Shared) {
    lock(&state.jobs).jobs.clear();
}

/// The polls task `id` got.
pub(super) fn polls(state: &Shared, id: &str) -> usize {
    lock(&state.jobs).jobs.get(id).map_or(0, |j| j.polls)
}

/// Who polled task `id`, in runs (see [`Job::pollers`]).
pub(super) fn pollers(state: &Shared, id: &str) -> Vec<String> {
    lock(&state.jobs)
        .jobs
        .get(id)
        .map_or_else(Vec::new, |j| j.pollers.clone())
}

/// When each run of polls of task `id` began, with its poller (see [`pollers`]).
pub(super) fn poller_runs(state: &Shared, id: &str) -> Vec<(String, Instant)> {
    lock(&state.jobs).jobs.get(id).map_or_else(Vec::new, |j| {
        j.pollers
            .iter()
            .cloned()
            .zip(j.runs_began.iter().copied())
            .collect()
    })
}

/// The ids of the tasks made so far.
pub(super) fn ids(state: &Shared) -> Vec<String> {
    lock(&state.jobs).jobs.keys().cloned().collect()
}
