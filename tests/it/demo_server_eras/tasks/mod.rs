//! `long_job` answered with a task, over raw JSON-RPC, in each era: a task polled to its end,
//! its input request and the answer, cancellation, a failure and an `isError` result, the
//! refusals, and the tasks kept across a SIGKILL and a restart with `DEMO_TASKS_DIR` (and
//! forgotten without it). Polls wait the task's own `pollInterval` between two `tasks/get`, as a
//! client should, bounded by a deadline; nothing else sleeps.

mod modern;
mod session;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::pipe::Demo;

/// Any wait for a task: only a hang reaches it.
const DEADLINE: Duration = Duration::from_secs(10);

static NEXT_ID: AtomicU64 = AtomicU64::new(1000);

/// A request id no other request of this process used.
fn id() -> Value {
    json!(NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

/// `tools/call long_job` with these arguments.
fn long_job(arguments: Value) -> Value {
    json!({ "name": "long_job", "arguments": arguments })
}

/// Calls `get` (one `tasks/get`, its result) every `interval` until `done` accepts what it
/// returns; returns that and how many polls it took.
fn poll_until(
    mut get: impl FnMut() -> Value,
    interval: Duration,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> (Value, usize) {
    let deadline = Instant::now() + DEADLINE;
    let mut polls = 0;
    loop {
        let task = get();
        polls += 1;
        if done(&task) {
            return (task, polls);
        }
        assert!(
            Instant::now() < deadline,
            "no {what} within {DEADLINE:?}; last {task}"
        );
        std::thread::sleep(interval);
    }
}

/// A task id of ours: 32 hex digits.
fn task_id_of(task: &Value) -> String {
    let id = task["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no taskId in {task}"));
    assert_eq!(id.len(), 32, "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    id.to_owned()
}

/// `createdAt` / `lastUpdatedAt`: ISO 8601 in UTC, as `2025-11-25T10:30:00.000Z`.
fn assert_instant(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"));
    let shape: String = text
        .chars()
        .map(|c| if c.is_ascii_digit() { 'd' } else { c })
        .collect();
    assert_eq!(shape, "dddd-dd-ddTdd:dd:dd.dddZ", "{text}");
}

/// How many stderr lines of `demo` are `line`.
fn stderr_count(demo: &Demo, line: &str) -> usize {
    demo.stderr().iter().filter(|l| *l == line).count()
}

/// The task files of a `DEMO_TASKS_DIR`.
fn task_files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the tasks dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// The elicitation a job asks with, in both eras.
fn confirm_params() -> Value {
    json!({ "message": "Continue the job?",
            "requestedSchema": { "type": "object", "properties": { "ok": { "type": "boolean" } } } })
}

fn text_result(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": false })
}
