//! The `tasks` mode (`ECHO_TASKS=1`), for the benchmark's `tasks` part: the stateless
//! 2026-07-28 revision with the Tasks extension, as small as a server that answers with tasks
//! can be, so that what the benchmark measures is the client's polling. Nothing of it runs
//! without the switch.
//!
//! A task's state is a function of the clock: `task {ms, poll_ms}` is `working` until `ms` after
//! its creation, then `completed`. No thread and no timer: each `tasks/get` reads the clock. For
//! the benchmark the server keeps what it saw of each task, and tells it with `task_stats`.
//! Timestamps it gives out are µs since the Unix epoch (`…Us`), the machine's clock, which the
//! benchmark reads too.
//!
//! - `server/discover` → `{resultType: "complete", supportedVersions: ["2026-07-28"],
//!   capabilities: {tools: {}, extensions: {"io.modelcontextprotocol/tasks": {}}}, _meta:
//!   {"io.modelcontextprotocol/serverInfo": …}}`.
//! - `tools/list` → `echo`, `task` and `task_stats`.
//! - `tools/call echo {text}` → `text`.
//! - `tools/call task {ms: integer = 2000, poll_ms: integer = 200}` → `CreateTaskResult
//!   {resultType: "task", taskId: "t<n>", status: "working", createdAt, lastUpdatedAt, ttlMs:
//!   600000, pollIntervalMs: <poll_ms>}`; `-32021` when the request does not declare the
//!   extension in `_meta["io.modelcontextprotocol/clientCapabilities"].extensions`.
//! - `tasks/get {taskId}` → the `DetailedTask`: `working`, or `completed` with `result {content:
//!   [{type: text, text: "done"}], structuredContent: {taskId, completedAtUs, seenAtUs, polls},
//!   isError: false}`: `completedAtUs` when it completed, `seenAtUs` when this poll came, `polls`
//!   the `tasks/get` it got, this one included. An unknown task is `-32602`.
//! - `tools/call task_stats {}` → `structuredContent {polls: [the arrival of every tasks/get],
//!   tasks: [{taskId, createdAtUs, completedAtUs, pollMs, polls, pollsAfterEnd, earlyPolls,
//!   minGapUs}]}`: `minGapUs` is the shortest time between two requests about the task (the
//!   `tools/call` that created it and each poll), `earlyPolls` the polls that came sooner than
//!   `pollMs` after the request before, `pollsAfterEnd` the polls after one was answered
//!   `completed`.
//! - `initialize` → `-32022` (this mode speaks the modern revision only); anything else
//!   `-32601`. Every result has `resultType`.
//!
//! With `ECHO_TASKS=notify` the server also tells of its tasks, for the benchmark's
//! notifications part:
//! - `subscriptions/listen {notifications: {taskIds: [..]}}` (at most 4096, else `-32602`) →
//!   `notifications/subscriptions/acknowledged {notifications: {taskIds: <the known ones>},
//!   _meta: {"io.modelcontextprotocol/subscriptionId": <listen id>}}`; the listen stays open
//!   until `notifications/cancelled {requestId}` (no answer: the client let it go). Without the
//!   switch, `-32601`.
//! - At each task's completion, to every open listen that names it, `notifications/tasks` with
//!   the `DetailedTask` a poll would get then (its `seenAtUs` the notification's time) and the
//!   listen's id in `_meta`; polls after it count as after the end. A clock thread sends them,
//!   writing under the same lock as the answers, so none overtakes its listen's
//!   acknowledgement.
//!
//! Tasks are never forgotten (a run makes a few thousand). Input is read a line at a time and
//! the answers written together once no further input is buffered, as in the default mode.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

/// The longest task this server runs: its end stays a time `Instant` can hold.
const MAX_TASK_MS: u64 = 86_400_000;
const VERSION: &str = "2026-07-28";
const EXTENSION: &str = "io.modelcontextprotocol/tasks";
const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
const TTL_MS: u64 = 600_000;
const READ_CHUNK: usize = 64 * 1024;
/// Task ids one listen may name.
const MAX_LISTEN_TASKS: usize = 4096;

/// One task, and what the server saw of it.
struct Task {
    created: Instant,
    created_us: u64,
    ms: u64,
    poll_ms: u64,
    /// The last request about it (its creation, then each poll).
    last_request: Instant,
    polls: u64,
    polls_after_end: u64,
    early_polls: u64,
    min_gap: Option<Duration>,
    /// Whether a poll was answered `completed`.
    told: bool,
}

impl Task {
    fn completed_us(&self) -> u64 {
        self.created_us + self.ms * 1000
    }

    fn id(index: usize) -> String {
        format!("t{}", index + 1)
    }
}

#[derive(Default)]
struct Server {
    tasks: Vec<Task>,
    /// When each `tasks/get` came, µs since the epoch.
    polls: Vec<u64>,
    /// `ECHO_TASKS=notify`: listens are taken, and told of the tasks they name.
    notifying: bool,
    /// The open listens: their request ids, and the tasks (indices) each names.
    listens: Vec<(Value, BTreeSet<usize>)>,
    /// When each task not yet told of completes, earliest first (notifying only).
    completions: BinaryHeap<Reverse<(Instant, usize)>>,
}

/// What the reader and the clock thread share in the notifying mode: one lock over the server
/// and the output, so that what each writes goes out in the order it was decided.
struct Shared {
    state: Mutex<State>,
    /// Rung when a task was created (the clock's next instant may be sooner) or input ended.
    changed: Condvar,
}

struct State {
    server: Server,
    out: Vec<u8>,
    output: Box<dyn Write + Send>,
    ended: bool,
}

impl State {
    fn flush(&mut self) -> io::Result<()> {
        self.output.write_all(&self.out)?;
        self.output.flush()?;
        self.out.clear();
        Ok(())
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic elsewhere leaves the state as whole as it was between two messages.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Serves until stdin ends, telling listens of their tasks' completions (`ECHO_TASKS=notify`).
pub(crate) fn serve_notifying(
    input: impl Read,
    output: impl Write + Send + 'static,
) -> io::Result<()> {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            server: Server {
                notifying: true,
                ..Server::default()
            },
            out: Vec::with_capacity(READ_CHUNK),
            output: Box::new(output),
            ended: false,
        }),
        changed: Condvar::new(),
    });
    let clock = {
        let shared = shared.clone();
        std::thread::spawn(move || tell_completions(&shared))
    };
    let mut input = BufReader::with_capacity(READ_CHUNK, input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = input.read_until(b'\n', &mut line)?;
        let mut state = lock(&shared.state);
        if n > 0 {
            let State { server, out, .. } = &mut *state;
            server.answer(&line, out);
        }
        if n == 0 || input.buffer().is_empty() {
            state.flush()?;
        }
        if n == 0 {
            state.ended = true;
        }
        drop(state);
        shared.changed.notify_one();
        if n == 0 {
            // Its write errors (the client gone) end it as they end the reader.
            let _ = clock.join();
            return Ok(());
        }
    }
}

/// The clock thread: at each task's completion, tells the listens that name it.
fn tell_completions(shared: &Shared) -> io::Result<()> {
    let mut state = lock(&shared.state);
    loop {
        if state.ended {
            return Ok(());
        }
        let now = Instant::now();
        match state.server.next_completion() {
            Some(at) if at <= now => {
                let State { server, out, .. } = &mut *state;
                server.tell_completed(now, out);
                state.flush()?;
            }
            Some(at) => {
                state = shared
                    .changed
                    .wait_timeout(state, at - now)
                    .map_or_else(|e| e.into_inner().0, |(state, _)| state);
            }
            None => {
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
    }
}

/// Serves until stdin ends.
pub(crate) fn serve(input: impl Read, mut output: impl Write) -> io::Result<()> {
    let mut input = BufReader::with_capacity(READ_CHUNK, input);
    let mut server = Server::default();
    let mut line = Vec::new();
    let mut out = Vec::with_capacity(READ_CHUNK);
    loop {
        line.clear();
        let n = input.read_until(b'\n', &mut line)?;
        if n > 0 {
            server.answer(&line, &mut out);
        }
        if n == 0 || input.buffer().is_empty() {
            output.write_all(&out)?;
            output.flush()?;
            out.clear();
        }
        if n == 0 {
            return Ok(());
        }
    }
}

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

type Reply = Result<Value, (i64, String, Option<Value>)>;

fn error(code: i64, message: impl Into<String>) -> Reply {
    Err((code, message.into(), None))
}

impl Server {
    fn answer(&mut self, line: &[u8], out: &mut Vec<u8>) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(request) = serde_json::from_slice::<Value>(line) else {
            push(
                out,
                &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}),
            );
            return;
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let params = request.get("params").unwrap_or(&Value::Null);
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        if id.is_null() {
            if method == "notifications/cancelled" {
                // A listen let go: no answer (a cancelled request gets none).
                let cancelled = params.get("requestId");
                self.listens.retain(|(id, _)| Some(id) != cancelled);
            }
            return; // A notification (or a response): nothing to answer.
        }
        if method == "subscriptions/listen" && self.notifying {
            if let Err(refused) = self.listen(&id, params, out) {
                let (code, message, _) = refused;
                let error = json!({"code": code, "message": message});
                push(out, &json!({"jsonrpc": "2.0", "id": id, "error": error}));
            }
            return;
        }
        let reply = match method {
            "server/discover" => Ok(json!({
                "resultType": "complete",
                "supportedVersions": [VERSION],
                "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}},
                "_meta": {SERVER_INFO_KEY: {"name": "mcp-echo-server", "version": env!("CARGO_PKG_VERSION")}},
            })),
            "tools/list" => Ok(tools()),
            "tools/call" => self.call(params),
            "tasks/get" => self.get(params),
            "initialize" => Err((
                -32022,
                "Unsupported protocol version".into(),
                Some(json!({"supported": [VERSION], "requested": params.get("protocolVersion")})),
            )),
            "" => error(-32600, "Invalid Request"),
            other => error(-32601, format!("Method not found: {other}")),
        };
        let response = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message, data)) => {
                let mut error = json!({"code": code, "message": message});
                if let Some(data) = data {
                    error["data"] = data;
                }
                json!({"jsonrpc": "2.0", "id": id, "error": error})
            }
        };
        push(out, &response);
    }

    fn call(&mut self, params: &Value) -> Reply {
        let arguments = params.get("arguments").unwrap_or(&Value::Null);
        match params.get("name").and_then(Value::as_str).unwrap_or("") {
            "echo" => match arguments.get("text").and_then(Value::as_str) {
                Some(text) => Ok(json!({
                    "resultType": "complete",
                    "content": [{"type": "text", "text": text}],
                    "isError": false,
                })),
                None => error(-32602, "echo needs a string `text`"),
            },
            "task" => {
                if !declares_tasks(params) {
                    return Err((
                        -32021,
                        "Missing required client capability".into(),
                        Some(json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}})),
                    ));
                }
                let number = |key: &str, default: u64| {
                    arguments.get(key).map_or(Some(default), Value::as_u64)
                };
                let (Some(ms), Some(poll_ms)) = (number("ms", 2000), number("poll_ms", 200)) else {
                    return error(-32602, "task needs integer `ms` and `poll_ms`");
                };
                let now = Instant::now();
                if ms > MAX_TASK_MS {
                    return error(-32602, format!("task `ms` is at most {MAX_TASK_MS}"));
                }
                let task = Task {
                    created: now,
                    created_us: unix_us(),
                    ms,
                    poll_ms,
                    last_request: now,
                    polls: 0,
                    polls_after_end: 0,
                    early_polls: 0,
                    min_gap: None,
                    told: false,
                };
                let mut created = fields(self.tasks.len(), &task, "working", task.created_us);
                created.insert("resultType".into(), json!("task"));
                if self.notifying {
                    let at = now + Duration::from_millis(ms);
                    self.completions.push(Reverse((at, self.tasks.len())));
                }
                self.tasks.push(task);
                Ok(Value::Object(created))
            }
            "task_stats" => Ok(self.stats()),
            name => error(-32602, format!("Unknown tool: {name}")),
        }
    }

    /// The index of the task `id` names, if it is one of ours.
    fn index_of(&self, id: &Value) -> Option<usize> {
        id.as_str()
            .and_then(|id| id.strip_prefix('t'))
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| n.checked_sub(1))
            .filter(|i| *i < self.tasks.len())
    }

    /// `subscriptions/listen`: acknowledged with the tasks it names that are ours; it stays
    /// open (no answer) until cancelled.
    fn listen(
        &mut self,
        id: &Value,
        params: &Value,
        out: &mut Vec<u8>,
    ) -> Result<(), (i64, String, Option<Value>)> {
        let named = match params.get("notifications").and_then(|n| n.get("taskIds")) {
            None => Vec::new(),
            Some(Value::Array(ids)) if ids.len() <= MAX_LISTEN_TASKS => ids.clone(),
            Some(_) => {
                return Err((-32602, format!("`notifications.taskIds` must be an array of at most {MAX_LISTEN_TASKS} task ids"), None))
            }
        };
        let tasks: BTreeSet<usize> = named.iter().filter_map(|id| self.index_of(id)).collect();
        let known: Vec<String> = tasks.iter().map(|i| Task::id(*i)).collect();
        push(
            out,
            &json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"notifications": {"taskIds": known}, "_meta": {SUBSCRIPTION_ID_KEY: id}}}),
        );
        self.listens.push((id.clone(), tasks));
        Ok(())
    }

    /// When the next task to be told of completes.
    fn next_completion(&self) -> Option<Instant> {
        self.completions.peek().map(|Reverse((at, _))| *at)
    }

    /// Tells the listens naming them of the tasks that completed by `now`.
    fn tell_completed(&mut self, now: Instant, out: &mut Vec<u8>) {
        while let Some(Reverse((at, index))) = self.completions.peek().copied() {
            if at > now {
                return;
            }
            self.completions.pop();
            let naming: Vec<Value> = self
                .listens
                .iter()
                .filter(|(_, tasks)| tasks.contains(&index))
                .map(|(id, _)| id.clone())
                .collect();
            if naming.is_empty() {
                continue;
            }
            let mut detail = self.completed(index, unix_us());
            detail.remove("resultType");
            for listen in naming {
                let mut params = detail.clone();
                params.insert("_meta".into(), json!({SUBSCRIPTION_ID_KEY: listen}));
                push(
                    out,
                    &json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": params}),
                );
            }
        }
    }

    /// Task `index`'s `DetailedTask` once completed, as told at `now_us` (a poll's answer or a
    /// notification): it counts as told from then on.
    fn completed(&mut self, index: usize, now_us: u64) -> Map<String, Value> {
        let task = &mut self.tasks[index];
        task.told = true;
        let completed_us = task.completed_us();
        let mut detail = detailed(index, task, "completed", completed_us);
        detail.insert(
            "result".into(),
            json!({
                "content": [{"type": "text", "text": "done"}],
                "structuredContent": {
                    "taskId": Task::id(index),
                    "completedAtUs": completed_us,
                    "seenAtUs": now_us,
                    "polls": task.polls,
                },
                "isError": false,
            }),
        );
        detail
    }

    fn get(&mut self, params: &Value) -> Reply {
        let now = Instant::now();
        let now_us = unix_us();
        let index = params.get("taskId").and_then(|id| self.index_of(id));
        let Some(index) = index else {
            return error(-32602, "Failed to retrieve task: Task not found");
        };
        self.polls.push(now_us);
        let task = &mut self.tasks[index];
        let gap = now - task.last_request;
        task.last_request = now;
        task.polls += 1;
        task.min_gap = Some(task.min_gap.map_or(gap, |min| min.min(gap)));
        if gap < Duration::from_millis(task.poll_ms) {
            task.early_polls += 1;
        }
        if task.told {
            task.polls_after_end += 1;
        }
        let completed = now >= task.created + Duration::from_millis(task.ms);
        if !completed {
            let updated = task.created_us;
            return Ok(Value::Object(detailed(index, task, "working", updated)));
        }
        Ok(Value::Object(self.completed(index, now_us)))
    }

    fn stats(&self) -> Value {
        let tasks: Vec<Value> = self
            .tasks
            .iter()
            .enumerate()
            .map(|(index, task)| {
                json!({
                    "taskId": Task::id(index),
                    "createdAtUs": task.created_us,
                    "completedAtUs": task.completed_us(),
                    "pollMs": task.poll_ms,
                    "polls": task.polls,
                    "pollsAfterEnd": task.polls_after_end,
                    "earlyPolls": task.early_polls,
                    "minGapUs": task.min_gap.map(|gap| gap.as_micros() as u64),
                })
            })
            .collect();
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": format!("{} tasks, {} polls", tasks.len(), self.polls.len())}],
            "structuredContent": {"polls": self.polls, "tasks": tasks},
            "isError": false,
        })
    }
}

/// Whether a request declares the Tasks extension in its client capabilities.
fn declares_tasks(params: &Value) -> bool {
    params
        .get("_meta")
        .and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY))
        .and_then(|caps| caps.get("extensions"))
        .and_then(|extensions| extensions.get(EXTENSION))
        .is_some_and(Value::is_object)
}

/// The fields of a task (`Task`) with `status`, last updated at `updated_us`.
fn fields(index: usize, task: &Task, status: &str, updated_us: u64) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("taskId".into(), json!(Task::id(index)));
    fields.insert("status".into(), json!(status));
    fields.insert("createdAt".into(), json!(iso8601(task.created_us)));
    fields.insert("lastUpdatedAt".into(), json!(iso8601(updated_us)));
    fields.insert("ttlMs".into(), json!(TTL_MS));
    fields.insert("pollIntervalMs".into(), json!(task.poll_ms));
    fields
}

/// A `tasks/get` answer: the task's fields and `resultType`.
fn detailed(index: usize, task: &Task, status: &str, updated_us: u64) -> Map<String, Value> {
    let mut detail = fields(index, task, status, updated_us);
    detail.insert("resultType".into(), json!("complete"));
    detail
}

fn tools() -> Value {
    let integer = json!({"type": "integer", "minimum": 0});
    json!({
        "resultType": "complete",
        "tools": [
            {
                "name": "echo",
                "description": "Answers its text.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            },
            {
                "name": "task",
                "description": "A task that completes `ms` after its creation, polled every `poll_ms`.",
                "inputSchema": {"type": "object", "properties": {"ms": integer, "poll_ms": integer}},
            },
            {
                "name": "task_stats",
                "description": "What the server saw of its tasks and their polls.",
                "inputSchema": {"type": "object"},
            },
        ],
    })
}

/// µs since the epoch as ISO 8601 UTC with ms (the demo server's writer of the same dates).
fn iso8601(us: u64) -> String {
    demo_dates::iso8601(us / 1000)
}

#[path = "../mcp-demo-server/tools/tasks/iso8601.rs"]
mod demo_dates;

fn push(out: &mut Vec<u8>, message: &Value) {
    // Serializing a Value into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, message);
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(server: &mut Server, line: Value) -> Value {
        let mut out = Vec::new();
        server.answer(line.to_string().as_bytes(), &mut out);
        serde_json::from_slice(&out).expect("one answer")
    }

    fn declared() -> Value {
        json!({CLIENT_CAPABILITIES_KEY: {"extensions": {EXTENSION: {}}}})
    }

    #[test]
    fn a_task_is_working_until_its_time_then_completed_and_counted() {
        let mut server = Server::default();
        let discover = run(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}),
        );
        assert_eq!(discover["result"]["supportedVersions"][0], VERSION);
        let refused = run(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "task", "arguments": {"ms": 0}}}),
        );
        assert_eq!(refused["error"]["code"], -32021);
        let created = run(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "task", "arguments": {"ms": 30, "poll_ms": 10}, "_meta": declared()}}),
        );
        assert_eq!(created["result"]["resultType"], "task");
        assert_eq!(created["result"]["pollIntervalMs"], 10);
        let task_id = created["result"]["taskId"].clone();
        let get = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": task_id}});
        assert_eq!(run(&mut server, get.clone())["result"]["status"], "working");
        std::thread::sleep(Duration::from_millis(40));
        let done = run(&mut server, get.clone());
        assert_eq!(done["result"]["status"], "completed");
        let content = &done["result"]["result"]["structuredContent"];
        assert_eq!(content["polls"], 2);
        assert!(content["seenAtUs"].as_u64() >= content["completedAtUs"].as_u64());
        run(&mut server, get);
        let stats = run(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "task_stats"}}),
        );
        let stats = &stats["result"]["structuredContent"];
        assert_eq!(stats["polls"].as_array().map(Vec::len), Some(3));
        let task = &stats["tasks"][0];
        assert_eq!(
            (task["polls"].clone(), task["pollsAfterEnd"].clone()),
            (json!(3), json!(1))
        );
        assert_eq!(task["earlyPolls"], 2, "polled at once, twice");
        let unknown = run(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 6, "method": "tasks/get", "params": {"taskId": "t9"}}),
        );
        assert_eq!(unknown["error"]["code"], -32602);
    }

    #[test]
    fn a_listen_naming_a_task_is_told_of_its_completion_once() {
        let mut server = Server {
            notifying: true,
            ..Server::default()
        };
        let created = run(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "task", "arguments": {"ms": 0, "poll_ms": 10}, "_meta": declared()}}),
        );
        let task_id = created["result"]["taskId"].clone();
        let ack = run(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
                   "params": {"notifications": {"taskIds": [task_id, "t99", 3]}}}),
        );
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["notifications"]["taskIds"], json!([task_id]));
        assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID_KEY], 7);
        let mut out = Vec::new();
        let now = Instant::now();
        server.tell_completed(now, &mut out);
        let told: Value = serde_json::from_slice(&out).expect("one notification");
        assert_eq!(told["method"], "notifications/tasks");
        assert_eq!(told["params"]["status"], "completed");
        assert_eq!(told["params"]["_meta"][SUBSCRIPTION_ID_KEY], 7);
        assert!(told["params"]["result"]["structuredContent"]["completedAtUs"].is_u64());
        out.clear();
        server.tell_completed(now, &mut out);
        assert!(out.is_empty(), "told once");
        assert_eq!(server.next_completion(), None);
        // Let go: a later task is told to nobody.
        let mut out = Vec::new();
        server.answer(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
                .to_string()
                .as_bytes(),
            &mut out,
        );
        assert!(out.is_empty(), "a cancelled listen gets no answer");
        assert!(server.listens.is_empty());
        let too_many: Vec<String> = (0..=MAX_LISTEN_TASKS).map(|i| format!("t{i}")).collect();
        let refused = run(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 8, "method": "subscriptions/listen",
                   "params": {"notifications": {"taskIds": too_many}}}),
        );
        assert_eq!(refused["error"]["code"], -32602);
        // Without the switch there is no listen.
        let refused = run(
            &mut Server::default(),
            json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {}}),
        );
        assert_eq!(refused["error"]["code"], -32601);
    }

    #[test]
    fn dates_are_iso8601() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_785_241_200_123_456), "2026-07-28T12:20:00.123Z");
    }
}
