//! Tasks (the Tasks extension, `io.modelcontextprotocol/tasks`), and their durable store.
//!
//! A server may answer a `tools/call` with a *task* instead of a result: an id, a status
//! (`working`, `input_required`, `completed`, `failed`, `cancelled`), a ttl and a poll
//! interval. The client polls the task until it ends, answers the input requests it makes on
//! the way, and then fetches its result. [`CallTool`](crate::CallTool) does that
//! transparently; a call whose deadline passes while its task runs is answered
//! [`Error::TaskTimeout`](crate::Error::TaskTimeout) with the task's [`TaskHandle`], and the
//! task is not cancelled. A task can outlive a connection, a restart of the server, and a
//! restart of this process; a [`TaskStore`] is what lets it.
//!
//! # The promise
//!
//! - A task we were told of is polled again after a reconnect, a server restart or a restart
//!   of this process, on the server that created it: a record names the server's configured
//!   name *and* its identity (URL or command line), so a server that took over the name is
//!   never polled for another's task.
//! - Its outcome (the result, or the JSON-RPC error) is delivered exactly once.
//! - No input request is ever answered twice.
//!
//! # Crash safety
//!
//! Each [`TaskStore`] method is all-or-nothing, and durable once it returns `Ok`. On that the
//! driver of tasks builds the promise, with these rules (each method's docs give its reason):
//!
//! 1. [`insert`](TaskStore::insert) before anyone is told of the task. A crash before it
//!    loses a task nobody waits for; after it, the task is resumed.
//! 2. [`mark_input_answered`](TaskStore::mark_input_answered) before the answer is sent. A
//!    crash between the two leaves the request unanswered rather than answered twice.
//! 3. [`finish`](TaskStore::finish) stores the terminal status and its outcome together, and
//!    the first end wins: a task never goes back from an end.
//! 4. [`take_outcome`](TaskStore::take_outcome) is the one way an outcome leaves the store: it
//!    marks the task delivered in the same step. A crash after it has returned has delivered
//!    the outcome (to whoever took it) and it is not handed out again; a crash before leaves it
//!    to be taken once after the restart.
//!
//! `tests/it/task_store.rs` kills a process writing an SQLite store with `SIGKILL` after and
//! during each of these steps, and checks that the store reopens with the last step whole.
//!
//! # Stores
//!
//! [`MemoryTaskStore`] (no file: tasks survive reconnects and server restarts, not a restart
//! of this process) and, with the `sqlite` feature (default), `SqliteTaskStore`, a
//! database file. Both are bounded ([`DEFAULT_MAX_TASKS`]) and keep only bounded fields
//! ([`record`]'s limits); both refuse what they cannot keep with a [`TaskStoreError`], never
//! a panic.
//!
#![cfg_attr(
    feature = "sqlite",
    doc = r##"```
use mcp_supervisor::tasks::{arguments_digest, SqliteTaskStore, TaskKey, TaskRecord, TaskStatus,
    TaskStore, TaskUpdate};
use serde_json::json;
use std::time::{Duration, SystemTime};

let path = std::env::temp_dir()
    .join(format!("mcp-tasks-example-{}", std::process::id()))
    .join("tasks.sqlite3");
let store = SqliteTaskStore::open(&path)?;

// The server answered a tools/call with a task: keep it before anyone hears of it.
let args = json!({"query": "rust"});
let record = TaskRecord::new("search", "https://mcp.example.com/mcp", "task-7", "search",
    arguments_digest(&args), SystemTime::now())
    .ttl(Duration::from_secs(3600))
    .poll_interval(Duration::from_secs(2));
store.insert(&record)?;
let key = record.key();

// A poll: it waits for input. Record the answer before sending it, and only once.
store.update(&key, &TaskUpdate::new().status(TaskStatus::InputRequired))?;
assert!(store.mark_input_answered(&key, "confirm-1")?);
assert!(!store.mark_input_answered(&key, "confirm-1")?, "never answered twice");

// It ended: keep the result, then deliver it exactly once.
store.finish(&key, TaskStatus::Completed, Some(r#"{"content":[]}"#))?;
let delivered = store.take_outcome(&key)?.expect("ended and not yet delivered");
assert_eq!(delivered.outcome.as_deref(), Some(r#"{"content":[]}"#));
assert!(store.take_outcome(&key)?.is_none());
assert_eq!(store.get(&TaskKey::new("search", "task-7"))?.map(|r| r.delivered), Some(true));
# drop(store);
# std::fs::remove_dir_all(path.parent().unwrap())?;
# Ok::<(), Box<dyn std::error::Error>>(())
```"##
)]
//!
//! Ground level: this module imports nothing from the session, the actors or the transports.

mod handle;
#[cfg(feature = "postgres")]
mod postgres;
pub mod record;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;

#[cfg(feature = "postgres")]
pub use self::postgres::{PostgresTaskStore, CONNECT_TIMEOUT, DEFAULT_LEASE, STATEMENT_TIMEOUT};
pub use handle::{TaskHandle, TaskInfo};
pub use record::{arguments_digest, TaskKey, TaskRecord, TaskStatus, TaskUpdate};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteTaskStore, BUSY_TIMEOUT};
pub use store::{
    MemoryTaskStore, TaskEnd, TaskStore, TaskStoreError, DEFAULT_MAX_TASKS, DELIVERED_RETENTION,
};

#[cfg(test)]
pub(crate) mod tests;

/// What reaches `config`'s server, digested (hex SHA-256 of its URL, or of its command line
/// and working directory): the identity a [`TaskRecord`] keeps beside the server's name, so
/// that a task is never asked about on another server that took the name. Neither the
/// environment nor the headers are in it: a rotated token is the same server.
pub fn server_identity(config: &crate::config::ServerConfig) -> String {
    use crate::config::Transport;
    let what = match config.transport() {
        Transport::Stdio(stdio) => serde_json::json!({
            "stdio": stdio.command,
            "args": stdio.args,
            "cwd": stdio.cwd.as_ref().map(|d| d.display().to_string()),
        }),
        Transport::Http(http) => serde_json::json!({"http": http.url}),
    };
    arguments_digest(&what)
}
