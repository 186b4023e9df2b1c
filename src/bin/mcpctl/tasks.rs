//! Tasks (the MCP Tasks extension) from the command line: mcpctl's task store, `call --task`,
//! and `tasks list`, `show`, `wait` and `cancel`, with what they print for people (`--json`
//! lines are `json.rs`'s).
//!
//! Its own room because a task outlives the mcpctl that started it: the store
//! (`tasks.sqlite3` beside `tokens.json`, or `--task-store`) is what the next mcpctl finds it
//! in. Every command that starts a server passes the store to the supervisor, which records
//! each task it hears of, follows that server's running tasks again, and keeps the outcomes
//! nobody took until one `tasks wait` takes them. A task named on the command line is rebuilt
//! from its record (its tool, when it was created, its ttl), or from its server and id alone
//! when the store has none.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mcp_supervisor::protocol::text::server_text;
use mcp_supervisor::tasks::{SqliteTaskStore, TaskKey, TaskRecord, TaskStore};
use mcp_supervisor::{
    AwaitTask, CancelTask, Error, GetTask, StartTask, TaskHandle, TaskInfo, TaskStart,
};
use serde_json::{Map, Value};

use crate::action::{TaskAction, TaskRef};
use crate::cli::SourceArgs;
use crate::json;
use crate::output::{for_terminal, human_line, print_table};
use crate::session::Session;
use crate::{EXIT_FAILED, EXIT_OK};

/// The store's file name in mcpctl's directory.
const STORE_FILE: &str = "tasks.sqlite3";

/// The tool of a task the store has no record of: the command line names only its server and
/// id. Shown as `-` for people and `null` in JSON.
pub(crate) const UNKNOWN_TOOL: &str = "(unknown tool)";

/// What the task commands need besides the supervisor: the store, and how to name a task's
/// server on a later command line.
pub(crate) struct TaskContext {
    /// The store the supervisor was given; `None` when there is no place for one (a warning
    /// said why), for the commands that can do without.
    pub(crate) store: Option<Arc<SqliteTaskStore>>,
    pub(crate) again: Again,
}

/// Where the tasks are kept: `--task-store`, else `tasks.sqlite3` in mcpctl's directory.
pub(crate) fn store_path(given: Option<PathBuf>) -> Option<PathBuf> {
    given.or_else(|| Some(crate::login::data_dir()?.join(STORE_FILE)))
}

/// Opens the store at `path` (created `0600` in a `0700` directory if missing) and forgets
/// the tasks it need not keep (past their ttl, or delivered an hour ago). A store that cannot
/// be had is an error when `needed` (the task commands, `call --task`); otherwise a warning,
/// and the command runs without one.
pub(crate) fn open(
    path: Option<PathBuf>,
    needed: bool,
) -> Result<Option<Arc<SqliteTaskStore>>, String> {
    let opened = match path {
        None => Err("no place for the task store: set --task-store or HOME".to_owned()),
        Some(path) => SqliteTaskStore::open(&path).map_err(|e| e.to_string()),
    };
    match opened {
        Ok(store) => {
            if let Err(e) = store.purge(SystemTime::now()) {
                eprintln!("mcpctl: {e}");
            }
            Ok(Some(Arc::new(store)))
        }
        Err(message) if needed => Err(message),
        Err(message) => {
            eprintln!("mcpctl: {message}; tasks are not kept for later commands");
            Ok(None)
        }
    }
}

/// How a later mcpctl names the same server: the options that find it (`--config`, the token
/// and task stores, or the server given on the command line). `--env`, `--header` and
/// `--input` are left out: their values may be secrets.
pub(crate) struct Again {
    /// `mcpctl` and the options before the command.
    before: String,
    /// The options after the command's words: the server given on the command line.
    after: String,
    /// SERVER is left out (a server given on the command line).
    single: bool,
}

impl Again {
    pub(crate) fn new(source: &SourceArgs, stdio_command: &[String]) -> Again {
        let mut before = vec!["mcpctl".to_owned()];
        let mut option = |name: &str, value: &Option<PathBuf>| {
            if let Some(value) = value {
                before.push(name.to_owned());
                before.push(shell_word(&value.display().to_string()));
            }
        };
        option("--config", &source.config);
        option("--token-store", &source.token_store);
        option("--task-store", &source.task_store);
        let mut after = Vec::new();
        if let Some(name) = &source.name {
            after.extend(["--name".to_owned(), shell_word(name)]);
        }
        if let Some(url) = &source.http {
            after.extend(["--http".to_owned(), shell_word(url)]);
        }
        if source.stdio {
            after.extend(["--stdio".to_owned(), "--".to_owned()]);
            after.extend(stdio_command.iter().map(|w| shell_word(w)));
        }
        Again {
            before: before.join(" "),
            after: after.join(" "),
            single: source.stdio || source.http.is_some(),
        }
    }

    /// `mcpctl [OPTIONS] tasks VERB [SERVER] TASK_ID [SERVER OPTIONS]`, for a terminal.
    pub(crate) fn command(&self, verb: &str, handle: &TaskHandle) -> String {
        let mut words = vec![self.before.clone(), format!("tasks {verb}")];
        if !self.single {
            words.push(shell_word(&handle.server));
        }
        words.push(shell_word(&handle.task_id));
        if !self.after.is_empty() {
            words.push(self.after.clone());
        }
        for_terminal(&words.join(" "))
    }
}

/// `word` as one shell word: as it is when it is plain, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `tasks list`: the store's records, of one server or all, oldest first. Starts no server.
pub(crate) fn list(store: &SqliteTaskStore, server: Option<&str>, json: bool) -> u8 {
    let records = match store.list(server) {
        Ok(records) => records,
        Err(e) => {
            eprintln!("mcpctl: {e}");
            return EXIT_FAILED;
        }
    };
    let now = SystemTime::now();
    if json {
        for record in &records {
            out!("{}", json::task_record(record, now));
        }
        return EXIT_OK;
    }
    if records.is_empty() {
        match server {
            Some(server) => eprintln!("mcpctl: no tasks of {}", server_text(server)),
            None => eprintln!("mcpctl: no tasks"),
        }
        return EXIT_OK;
    }
    let header = ["SERVER", "TASK", "TOOL", "STATUS", "AGE", "OUTCOME"];
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            vec![
                server_text(&r.server),
                server_text(&r.task_id),
                shown_tool(&r.tool),
                r.status.as_str().to_owned(),
                since(r.created_at, now),
                outcome_state(r).unwrap_or("-").to_owned(),
            ]
        })
        .collect();
    print_table(&header, &rows);
    EXIT_OK
}

/// `kept` for an ended task whose outcome waits to be taken, `delivered` once it was.
pub(crate) fn outcome_state(record: &TaskRecord) -> Option<&'static str> {
    if record.delivered {
        Some("delivered")
    } else if record.outcome.is_some() {
        Some("kept")
    } else {
        None
    }
}

impl Session {
    /// `tasks show`, `wait`, `cancel` (`list` needs no server: see [`list`]).
    pub(crate) async fn task(&mut self, action: &TaskAction) -> u8 {
        match action {
            TaskAction::List { server } => match &self.tasks.store {
                Some(store) => list(store, server.as_deref(), self.json),
                None => EXIT_FAILED,
            },
            TaskAction::Show(task) => self.show_task(task).await,
            TaskAction::Wait(task) => self.wait_task(task).await,
            TaskAction::Cancel(task) => self.cancel_task(task).await,
        }
    }

    /// `call --task`: starts the tool as a task and prints its handle, or the result when the
    /// server answered at once. 0 for a task started or a result that is not a tool error.
    pub(crate) async fn start_task(
        &mut self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> u8 {
        let start = StartTask::new(server, tool, Value::Object(arguments)).timeout(timeout);
        let started = Instant::now();
        let outcome = match self.sup.send(start).await {
            Ok(outcome) => outcome,
            Err(_) => Err(stopped(server)),
        };
        let ms = millis(started.elapsed());
        let outcome = match outcome {
            Ok(TaskStart::Running(handle)) => {
                if self.json {
                    out!("{}", json::task_started(1, ms, &handle));
                } else {
                    out!(
                        "task {} started: {} on {}{}",
                        server_text(&handle.task_id),
                        shown_tool(&handle.tool),
                        server_text(&handle.server),
                        handle.ttl.map_or(String::new(), |ttl| format!(
                            ", kept by the server for {}",
                            human_duration(ttl)
                        ))
                    );
                    out!("wait for it: {}", self.tasks.again.command("wait", &handle));
                }
                return EXIT_OK;
            }
            Ok(TaskStart::Completed(result)) => Ok(result),
            // Ways to start added in later versions.
            Ok(other) => Err(Error::InvalidResponse {
                server: server.to_owned(),
                method: "tools/call".into(),
                message: format!("an answer mcpctl does not know: {other:?}"),
            }),
            Err(e) => Err(e),
        };
        self.print_call_outcome(Some(1), ms, &outcome, false);
        crate::commands::exit_code(&outcome)
    }

    /// Prints one call's outcome, as `call` does; a timeout whose task runs on says how to
    /// wait for it (on stderr).
    pub(crate) fn print_call_outcome(
        &self,
        seq: Option<u32>,
        ms: u64,
        outcome: &Result<rmcp::model::CallToolResult, Error>,
        numbered: bool,
    ) {
        if self.json {
            out!("{}", json::outcome(seq, ms, outcome));
        } else {
            out!("{}", human_line(seq.unwrap_or(1), ms, outcome, numbered));
        }
        if let Some(handle) = outcome.as_ref().err().and_then(Error::task) {
            eprintln!(
                "mcpctl: task {} runs on; wait for it with: {}",
                server_text(&handle.task_id),
                self.tasks.again.command("wait", handle)
            );
        }
    }

    /// The handle of `task`: from its record in the store, or from its server and id alone
    /// (its tool unknown, said on stderr). `Err`: the store could not be read (said).
    fn handle(&self, task: &TaskRef) -> Result<(TaskHandle, Option<TaskRecord>), u8> {
        let key = TaskKey::new(task.server.clone(), task.task_id.clone());
        let record = match self.tasks.store.as_ref().map(|store| store.get(&key)) {
            Some(Ok(record)) => record,
            Some(Err(e)) => {
                eprintln!("mcpctl: {e}");
                return Err(EXIT_FAILED);
            }
            None => None,
        };
        let handle = match &record {
            Some(record) => {
                TaskHandle::new(&task.server, &task.task_id, &record.tool, record.created_at)
                    .ttl(record.ttl)
            }
            None => {
                eprintln!(
                    "mcpctl: task {} of {} is not in the task store: its tool is unknown",
                    server_text(&task.task_id),
                    server_text(&task.server)
                );
                TaskHandle::new(&task.server, &task.task_id, UNKNOWN_TOOL, SystemTime::now())
            }
        };
        Ok((handle, record))
    }

    /// `tasks show`: what the server says of the task (`tasks/get`).
    async fn show_task(&mut self, task: &TaskRef) -> u8 {
        let (handle, _) = match self.handle(task) {
            Ok(found) => found,
            Err(code) => return code,
        };
        let started = Instant::now();
        let outcome = match self
            .sup
            .send(GetTask::new(handle).timeout(task.timeout))
            .await
        {
            Ok(outcome) => outcome,
            Err(_) => Err(stopped(&task.server)),
        };
        let ms = millis(started.elapsed());
        match (&outcome, self.json) {
            (_, true) => {
                let shown = outcome.as_ref().map(json::task_info);
                out!("{}", json::outcome(None, ms, &shown.map_err(Error::clone)));
            }
            (Ok(info), false) => print_info(info),
            (Err(e), false) => out!("error {}: {e}", e.code()),
        }
        if outcome.is_ok() {
            EXIT_OK
        } else {
            EXIT_FAILED
        }
    }

    /// `tasks wait`: the task's outcome, printed as `call` prints it; a task whose outcome
    /// was taken already is told so (mcpctl keeps no copy of an outcome it delivered).
    async fn wait_task(&mut self, task: &TaskRef) -> u8 {
        let (handle, record) = match self.handle(task) {
            Ok(found) => found,
            Err(code) => return code,
        };
        if record.as_ref().is_some_and(|r| r.delivered) {
            let message = format!(
                "task {} of server `{}` ended ({}) and its outcome was delivered already, to \
                 an earlier `tasks wait` or `call`; it is delivered once",
                server_text(&handle.task_id),
                server_text(&handle.server),
                record.as_ref().map_or("", |r| r.status.as_str()),
            );
            if self.json {
                out!("{}", json::failure(None, 0, "delivered", &message));
            } else {
                out!("error delivered: {message}");
            }
            return EXIT_FAILED;
        }
        let started = Instant::now();
        let outcome = match self
            .sup
            .send(AwaitTask::new(handle).timeout(task.timeout))
            .await
        {
            Ok(outcome) => outcome,
            Err(_) => Err(stopped(&task.server)),
        };
        let ms = millis(started.elapsed());
        self.print_call_outcome(None, ms, &outcome, false);
        crate::commands::exit_code(&outcome)
    }

    /// `tasks cancel`: asks the server to cancel the task (`tasks/cancel`).
    async fn cancel_task(&mut self, task: &TaskRef) -> u8 {
        let (handle, _) = match self.handle(task) {
            Ok(found) => found,
            Err(code) => return code,
        };
        let started = Instant::now();
        let outcome = match self
            .sup
            .send(CancelTask::new(handle.clone()).timeout(task.timeout))
            .await
        {
            Ok(outcome) => outcome,
            Err(_) => Err(stopped(&task.server)),
        };
        let ms = millis(started.elapsed());
        match (&outcome, self.json) {
            (_, true) => {
                let shown = outcome.as_ref().map(|()| json::task(&handle));
                out!("{}", json::outcome(None, ms, &shown.map_err(Error::clone)));
            }
            (Ok(()), false) => {
                out!(
                    "task {} ({} on {}): cancellation asked; the server may still complete it",
                    server_text(&handle.task_id),
                    shown_tool(&handle.tool),
                    server_text(&handle.server)
                );
                out!(
                    "how it ended: {}",
                    self.tasks.again.command("wait", &handle)
                );
            }
            (Err(e), false) => out!("error {}: {e}", e.code()),
        }
        if outcome.is_ok() {
            EXIT_OK
        } else {
            EXIT_FAILED
        }
    }
}

/// What `tasks show` prints for people: one `key  value` line each.
fn print_info(info: &TaskInfo) {
    let handle = &info.handle;
    let now = SystemTime::now();
    let status = match &info.status_message {
        Some(message) => format!("{}: {}", info.status, server_text(message)),
        None => info.status.as_str().to_owned(),
    };
    let mut lines = vec![
        ("task", server_text(&handle.task_id)),
        ("server", server_text(&handle.server)),
        ("tool", shown_tool(&handle.tool)),
        ("status", status),
        ("created", format!("{} ago", since(handle.created_at, now))),
    ];
    if let Some(ttl) = handle.ttl {
        let left = handle
            .expires_at()
            .and_then(|at| at.duration_since(now).ok())
            .map_or("expired".to_owned(), |left| {
                format!("{} left", human_duration(left))
            });
        lines.push(("ttl", format!("{} ({left})", human_duration(ttl))));
    }
    if let Some(interval) = info.poll_interval {
        lines.push(("poll", format!("every {}", human_duration(interval))));
    }
    for (key, value) in lines {
        out!("{key:<8} {value}");
    }
}

/// A task's tool for people: `-` when unknown.
fn shown_tool(tool: &str) -> String {
    if tool == UNKNOWN_TOOL {
        "-".into()
    } else {
        server_text(tool)
    }
}

/// How long ago `at` was (`0s` for a time ahead of ours).
fn since(at: SystemTime, now: SystemTime) -> String {
    human_duration(now.duration_since(at).unwrap_or_default())
}

/// `250ms`, `12s`, `3m20s`, `2h5m`, `3d4h`: at most two units.
pub(crate) fn human_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        return format!("{}ms", d.as_millis());
    }
    let secs = d.as_secs();
    let units = [
        (secs / 86_400, "d"),
        (secs / 3600 % 24, "h"),
        (secs / 60 % 60, "m"),
        (secs % 60, "s"),
    ];
    let first = units.iter().position(|(n, _)| *n > 0).unwrap_or(3);
    units[first..]
        .iter()
        .take(2)
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect()
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn stopped(server: &str) -> Error {
    Error::Stopped {
        server: server.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_for_people() {
        assert_eq!(human_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(human_duration(Duration::from_secs(12)), "12s");
        assert_eq!(human_duration(Duration::from_secs(600)), "10m");
        assert_eq!(human_duration(Duration::from_secs(200)), "3m20s");
        assert_eq!(human_duration(Duration::from_secs(7500)), "2h5m");
        assert_eq!(
            human_duration(Duration::from_secs(3 * 86_400 + 4 * 3600 + 5)),
            "3d4h"
        );
    }

    #[test]
    fn a_later_command_line_names_the_same_server() {
        use crate::cli::Cli;
        use clap::Parser;
        let handle = TaskHandle::new("demo", "t-1", "job", SystemTime::now());
        let cli = Cli::try_parse_from(["mcpctl", "--config", "my servers.json", "tasks", "list"])
            .unwrap();
        let again = Again::new(&cli.source, &[]);
        assert_eq!(
            again.command("wait", &handle),
            "mcpctl --config 'my servers.json' tasks wait demo t-1"
        );
        let cli = Cli::try_parse_from([
            "mcpctl", "--stdio", "--env", "K=secret", "status", "--", "node", "it's.js",
        ])
        .unwrap();
        let again = Again::new(&cli.source, &["node".into(), "it's.js".into()]);
        let command = again.command("wait", &handle);
        assert_eq!(
            command,
            r"mcpctl tasks wait t-1 --stdio -- node 'it'\''s.js'"
        );
        assert!(!command.contains("secret"));
    }
}
