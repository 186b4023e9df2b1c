//! `mcp-demo-server`: a small MCP (Model Context Protocol) server used by the integration tests
//! and the quickstart example of `mcp-supervisor`.
//!
//! It speaks newline-delimited JSON-RPC 2.0 over stdio: one JSON message per line on stdin and
//! stdout, diagnostics on stderr. Besides ordinary tools it has a set of fault switches so tests
//! can provoke exactly the misbehaviour a supervisor must survive (crashes, hangs, garbage on
//! stdout, huge lines, slow or failing start-ups, ignored SIGTERM, orphaned grandchildren).
//!
//! Bad input never panics it: invalid JSON is answered with -32700 (id null), malformed messages
//! with -32600, unknown methods with -32601 and bad arguments with -32602. Batches (JSON arrays)
//! are accepted; each element is handled and answered on its own line. Long-running tools run on
//! their own thread, so `ping` and friends keep being answered meanwhile.
//!
//! # Tools
//! - `echo {text: string}`: answers `text`.
//! - `add {a: number, b: number}`: answers the sum as text plus `structuredContent {"sum": n}`.
//! - `slow {seconds: number = 1, steps: integer = 5}`: waits `seconds`, sending
//!   `notifications/progress` after each of `steps` steps when the request carries
//!   `params._meta.progressToken`, then answers `done after {seconds}s`. Cancellable.
//! - `counter {delay_ms: integer = 0, crash: bool = false}`: NOT idempotent. Increments a counter
//!   (in the file `DEMO_COUNTER_FILE`, fsynced, else in memory) before anything else, logs
//!   `counter <n>`, then exits with code 3 if `crash`, else waits `delay_ms` (cancellable) and
//!   answers `<n>` plus `structuredContent {"count": n}`.
//! - `touch {}`: idempotent but not read-only; logs `touch`, answers `touched`.
//! - `hang {}`: logs `hang <request id>` and never answers.
//! - `ask_client {method: string, params?: object}`: sends a request with id `srv-<n>` to the
//!   client, waits for its response and answers it as compact JSON text (`isError` if the client
//!   answered with an error).
//! - `notify {kind: "tools_changed" | "log" | "resource_updated"}`: `tools_changed` toggles the
//!   extra tool `extra` and sends `notifications/tools/list_changed`; `log` sends
//!   `notifications/message`; `resource_updated` bumps the `demo://clock` version and sends
//!   `notifications/resources/updated` if that uri is subscribed. Answers `notified`.
//! - `long_line {bytes: integer}`: writes one non-JSON line of `bytes` 'x' to stdout, then
//!   answers `wrote {bytes}`.
//! - `garbage {}`: writes three non-JSON lines to stdout, then answers `ok`.
//! - `extra {}`: only listed/callable after `notify {kind: "tools_changed"}`; answers `extra`.
//!
//! Also: `ping`, `tools/list` (paginated), `resources/list|read|subscribe|unsubscribe` (one
//! resource, `demo://clock`), `prompts/list|get` (one prompt, `greet`), `logging/setLevel`, and
//! the notifications `notifications/initialized` and `notifications/cancelled`.
//!
//! # Environment switches
//! - `DEMO_PROTOCOL_VERSION=S`: answer `initialize` with protocol version S, whatever was asked.
//! - `DEMO_TOOLS_PAGE_SIZE=N`: `tools/list` page size (default 2).
//! - `DEMO_COUNTER_FILE=path`: where `counter` keeps its count (default: in memory).
//! - `DEMO_EVENT_LOG=path`: append one line per event (`start pid=..`, `initialize <version>`,
//!   `call <tool>`, `counter <n>`, `touch`, `hang <id>`, `subscribe <uri>`, `unsubscribe <uri>`,
//!   `cancelled <id>`, `grandchild pid=..`) so tests can see what the server executed.
//! - `DEMO_SLOW_START_MS=N`: sleep N ms before reading stdin.
//! - `DEMO_FAIL_STARTS=N` with `DEMO_START_COUNT_FILE=path`: the first N starts (counted in the
//!   file) print `demo: simulated start-up failure <count>/<N>` and exit 1. Without the count
//!   file every start fails when N > 0.
//! - `DEMO_CRASH_AFTER_CALLS=N`: once N `tools/call` requests have been answered, the next one
//!   makes the server print `demo: crashing as asked` and exit 3 without answering.
//! - `DEMO_GARBAGE_LINES=K`: write K non-JSON lines to stdout before every response.
//! - `DEMO_LONG_LINE_BYTES=N`: after answering `initialize`, write a non-JSON line of N bytes.
//! - `DEMO_SPAWN_GRANDCHILD=1`: spawn `sleep 1000` in our process group at start-up.
//! - `DEMO_IGNORE_SIGTERM=1`: ignore SIGTERM, so only SIGKILL stops the server.
//! - `DEMO_STDERR_LINES=K`: write K lines `demo stderr line i` to stderr at start-up.
//!
//! Every start also writes `demo: started pid=<pid>` to stderr.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufWriter, Stdout, Write};
use std::path::{Path, PathBuf};
use std::process::{self, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

/// Protocol versions we accept from the client as-is; anything else gets the latest.
const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const LATEST_VERSION: &str = "2025-11-25";
const DEFAULT_PAGE_SIZE: usize = 2;
const CLOCK_URI: &str = "demo://clock";

/// Long lines are written in chunks of this size, so a multi-gigabyte line costs no memory.
const CHUNK: usize = 64 * 1024;
static X_CHUNK: [u8; CHUNK] = [b'x'; CHUNK];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
const RESOURCE_NOT_FOUND: i64 = -32002;

type Args = Map<String, Value>;

// ---------------------------------------------------------------------------------------------
// Small helpers: locking, stderr, environment, event log, counter files
// ---------------------------------------------------------------------------------------------

/// A panicking thread must not take the whole server down with it, so poisoning is ignored.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// `eprintln!` panics when stderr is a closed pipe; a demo server should just carry on.
fn stderr_line(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// A numeric switch; a value we cannot parse is reported and ignored rather than guessed at.
fn env_u64(name: &str) -> Option<u64> {
    let raw = std::env::var(name).ok()?;
    match raw.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => {
            stderr_line(&format!("demo: ignoring {name}={raw:?}: not a number"));
            None
        }
    }
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
}

/// Serialises event-log writes inside this process; O_APPEND keeps whole lines intact across
/// processes (tests may restart the server while reading the same log).
static EVENT_LOG_LOCK: Mutex<()> = Mutex::new(());

fn append_event(path: Option<&Path>, line: &str) {
    let Some(path) = path else { return };
    let _guard = lock(&EVENT_LOG_LOCK);
    let written = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| {
            file.write_all(format!("{line}\n").as_bytes())?;
            file.flush()
        });
    if let Err(e) = written {
        stderr_line(&format!("demo: cannot append to event log: {e}"));
    }
}

/// Reads a count written by `write_count`; a missing or empty file means 0.
fn read_count(path: &Path) -> io::Result<u64> {
    match fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(0),
        Ok(text) => text.trim().parse().map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidData, format!("not a count: {text:?}"))
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e),
    }
}

/// fsynced, because tests kill the server right after and then check the count survived.
fn write_count(path: &Path, count: u64) -> io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(count.to_string().as_bytes())?;
    file.sync_all()
}

fn bump_count_file(path: &Path) -> io::Result<u64> {
    let count = read_count(path)?
        .checked_add(1)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "count overflow"))?;
    write_count(path, count)?;
    Ok(count)
}

/// Waits `duration` unless a cancellation arrives first; returns true if cancelled.
fn wait_or_cancel(cancel: &Receiver<()>, duration: Duration) -> bool {
    match cancel.recv_timeout(duration) {
        Ok(()) => true,
        Err(RecvTimeoutError::Timeout) => false,
        // Only the cancellation path drops the sender, so treat that as a cancellation too.
        Err(RecvTimeoutError::Disconnected) => true,
    }
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC plumbing
// ---------------------------------------------------------------------------------------------

struct RpcError {
    code: i64,
    message: String,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        let message = message.into();
        RpcError { code, message }
    }

    fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(INVALID_REQUEST, message)
    }

    fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    fn to_json(&self) -> Value {
        json!({ "code": self.code, "message": self.message })
    }
}

type Reply = Result<Value, RpcError>;

/// What a tool call produced right away.
enum Outcome {
    /// Answer now.
    Reply(Reply),
    /// A worker thread answers later, or nobody ever does (`hang`, cancellation).
    Deferred,
}

fn text_result(text: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": text.into() }], "isError": false })
}

fn structured_result(text: impl Into<String>, structured: Value) -> Value {
    let mut result = text_result(text);
    result["structuredContent"] = structured;
    result
}

/// `params` must be an object when present; absent or null means "no parameters".
fn params_of(message: &Map<String, Value>) -> Result<Args, RpcError> {
    match message.get("params") {
        None | Some(Value::Null) => Ok(Args::new()),
        Some(Value::Object(params)) => Ok(params.clone()),
        Some(_) => Err(RpcError::invalid_params("params must be an object")),
    }
}

fn required_str<'a>(args: &'a Args, key: &str) -> Result<&'a str, RpcError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("`{key}` must be a string")))
}

fn required_u64(args: &Args, key: &str) -> Result<u64, RpcError> {
    args.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| RpcError::invalid_params(format!("`{key}` must be a non-negative integer")))
}

/// An optional argument: absent or null gives `default`, a value of the wrong type is an error.
fn optional<T>(
    args: &Args,
    key: &str,
    default: T,
    extract: fn(&Value) -> Option<T>,
    expected: &str,
) -> Result<T, RpcError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(value) => extract(value)
            .ok_or_else(|| RpcError::invalid_params(format!("`{key}` must be {expected}"))),
    }
}

// ---------------------------------------------------------------------------------------------
// Output: every message is one line, written and flushed under one lock
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
struct Out(Arc<Mutex<BufWriter<Stdout>>>);

impl Out {
    /// Runs `write` with the stdout lock held, then flushes. A failed write means the client has
    /// gone away, and without a client there is nothing left to do.
    fn write_with(&self, write: impl FnOnce(&mut BufWriter<Stdout>) -> io::Result<()>) {
        let mut out = lock(&self.0);
        if write(&mut out).and_then(|()| out.flush()).is_err() {
            process::exit(0);
        }
    }

    fn send(&self, message: &Value) {
        // `Value`'s Display is compact JSON, and JSON strings escape newlines: one line.
        self.write_with(|out| writeln!(out, "{message}"));
    }

    fn write_long_line(&self, bytes: u64) {
        self.write_with(|out| {
            let mut left = bytes;
            while left > 0 {
                let take = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
                out.write_all(&X_CHUNK[..take])?;
                left -= take as u64;
            }
            out.write_all(b"\n")
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Server state and configuration
// ---------------------------------------------------------------------------------------------

/// Switches read once at start-up.
struct Config {
    protocol_override: Option<String>,
    page_size: usize,
    counter_file: Option<PathBuf>,
    event_log: Option<PathBuf>,
    crash_after_calls: Option<u64>,
    garbage_lines: u64,
    long_line_bytes: Option<u64>,
}

impl Config {
    fn from_env() -> Self {
        let page_size = env_u64("DEMO_TOOLS_PAGE_SIZE")
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0) // a page size of 0 would paginate forever
            .unwrap_or(DEFAULT_PAGE_SIZE);
        Config {
            protocol_override: std::env::var("DEMO_PROTOCOL_VERSION").ok(),
            page_size,
            counter_file: env_path("DEMO_COUNTER_FILE"),
            event_log: env_path("DEMO_EVENT_LOG"),
            crash_after_calls: env_u64("DEMO_CRASH_AFTER_CALLS"),
            garbage_lines: env_u64("DEMO_GARBAGE_LINES").unwrap_or(0),
            long_line_bytes: env_u64("DEMO_LONG_LINE_BYTES"),
        }
    }
}

#[derive(Default)]
struct State {
    /// Whether `notify {kind: "tools_changed"}` has switched the `extra` tool on.
    extra_tool: bool,
    subscriptions: HashSet<String>,
    resource_version: u64,
    /// Answered `tools/call` requests, for `DEMO_CRASH_AFTER_CALLS`.
    calls_answered: u64,
    /// The `counter` count when `DEMO_COUNTER_FILE` is unset.
    memory_counter: u64,
    next_server_request: u64,
    /// Our own requests to the client (`ask_client`), by id, waiting for the client's response.
    pending_client_replies: HashMap<String, Sender<Value>>,
    /// Tool calls running on worker threads, by request id as compact JSON. Removing an entry
    /// (and signalling it) is what cancels a call: a worker whose entry is gone never answers.
    running: HashMap<String, Sender<()>>,
}

#[derive(Clone)]
struct Server {
    out: Out,
    state: Arc<Mutex<State>>,
    config: Arc<Config>,
}

impl Server {
    fn new(config: Config) -> Self {
        Server {
            out: Out(Arc::new(Mutex::new(BufWriter::new(io::stdout())))),
            state: Arc::new(Mutex::new(State::default())),
            config: Arc::new(config),
        }
    }

    fn log_event(&self, line: &str) {
        append_event(self.config.event_log.as_deref(), line);
    }

    fn respond(&self, id: &Value, reply: Reply) {
        let message = match reply {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error.to_json() }),
        };
        let garbage = self.config.garbage_lines;
        self.out.write_with(|out| {
            for i in 1..=garbage {
                writeln!(out, "garbage line {i}")?;
            }
            writeln!(out, "{message}")
        });
    }

    /// Answers a `tools/call`, counting it for `DEMO_CRASH_AFTER_CALLS`.
    fn respond_call(&self, id: &Value, reply: Reply) {
        lock(&self.state).calls_answered += 1;
        self.respond(id, reply);
    }

    fn notify(&self, method: &str, params: Option<Value>) {
        let mut message = json!({ "jsonrpc": "2.0", "method": method });
        if let Some(params) = params {
            message["params"] = params;
        }
        self.out.send(&message);
    }

    // --- input ---------------------------------------------------------------------------------

    /// Reads stdin until EOF. `read_until` rather than `lines()` so that invalid UTF-8 is just
    /// another parse error instead of an I/O error.
    fn serve(&self) -> ! {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) => process::exit(0),
                Ok(_) => self.handle_line(&line),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => process::exit(0),
            }
        }
    }

    fn handle_line(&self, line: &[u8]) {
        let line = line.trim_ascii();
        if line.is_empty() {
            return;
        }
        match serde_json::from_slice::<Value>(line) {
            Err(e) => self.respond(
                &Value::Null,
                Err(RpcError::new(PARSE_ERROR, format!("parse error: {e}"))),
            ),
            Ok(Value::Array(batch)) if batch.is_empty() => {
                self.respond(&Value::Null, Err(RpcError::invalid_request("empty batch")));
            }
            Ok(Value::Array(batch)) => batch.into_iter().for_each(|m| self.handle_message(m)),
            Ok(message) => self.handle_message(message),
        }
    }

    /// Sorts a message into request, notification or response, rejecting anything else.
    fn handle_message(&self, message: Value) {
        let Value::Object(message) = message else {
            let error = RpcError::invalid_request("a message must be a JSON object");
            return self.respond(&Value::Null, Err(error));
        };
        let id = message.get("id");
        let id_is_valid = matches!(id, Some(Value::String(_) | Value::Number(_)));
        let reply_id = if id_is_valid { id.cloned() } else { None }.unwrap_or(Value::Null);
        let method = match message.get("method") {
            Some(Value::String(method)) => method,
            Some(_) => {
                let error = RpcError::invalid_request("method must be a string");
                return self.respond(&reply_id, Err(error));
            }
            None if message.contains_key("result") || message.contains_key("error") => {
                return self.route_client_reply(Value::Object(message));
            }
            None => return self.respond(&reply_id, Err(RpcError::invalid_request("no method"))),
        };
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            let error = RpcError::invalid_request("jsonrpc must be \"2.0\"");
            return self.respond(&reply_id, Err(error));
        }
        match id {
            None => self.handle_notification(method, &message),
            Some(_) if !id_is_valid => {
                let error = RpcError::invalid_request("id must be a string or a number");
                self.respond(&Value::Null, Err(error));
            }
            Some(_) => match params_of(&message) {
                Ok(params) => self.handle_request(&reply_id, method, &params),
                Err(error) => self.respond(&reply_id, Err(error)),
            },
        }
    }

    /// Hands a client response to the `ask_client` call waiting for it; others are ignored.
    fn route_client_reply(&self, message: Value) {
        let Some(id) = message.get("id").and_then(Value::as_str) else {
            return;
        };
        let waiter = lock(&self.state).pending_client_replies.remove(id);
        if let Some(waiter) = waiter {
            let _ = waiter.send(message);
        }
    }

    fn handle_notification(&self, method: &str, message: &Map<String, Value>) {
        // Notifications are never answered, not even when malformed.
        if method == "notifications/cancelled" {
            self.on_cancelled(&params_of(message).unwrap_or_default());
        }
    }

    fn on_cancelled(&self, params: &Args) {
        let request_id = params.get("requestId").cloned().unwrap_or(Value::Null);
        self.log_event(&format!("cancelled {request_id}"));
        let running = lock(&self.state).running.remove(&request_id.to_string());
        if let Some(cancel) = running {
            let _ = cancel.send(());
        }
    }

    fn handle_request(&self, id: &Value, method: &str, params: &Args) {
        let reply = match method {
            "initialize" => return self.initialize(id, params),
            "tools/call" => {
                if let Outcome::Reply(reply) = self.call_tool(id, params) {
                    self.respond_call(id, reply);
                }
                return;
            }
            "ping" | "logging/setLevel" => Ok(json!({})),
            "tools/list" => self.list_tools(params),
            "resources/list" => Ok(json!({ "resources": [{
                "uri": CLOCK_URI,
                "name": "clock",
                "description": "A version number bumped by notify {kind: resource_updated}.",
                "mimeType": "text/plain",
            }] })),
            "resources/read" => self.read_resource(params),
            "resources/subscribe" => self.subscribe(params, true),
            "resources/unsubscribe" => self.subscribe(params, false),
            "prompts/list" => Ok(json!({ "prompts": [{
                "name": "greet",
                "description": "Greets someone by name.",
                "arguments": [{ "name": "name", "description": "Who to greet.", "required": true }],
            }] })),
            "prompts/get" => get_prompt(params),
            _ => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
        };
        self.respond(id, reply);
    }

    // --- lifecycle, listing, resources -----------------------------------------------------------

    fn initialize(&self, id: &Value, params: &Args) {
        let requested = params.get("protocolVersion");
        let shown = match requested {
            Some(Value::String(version)) => version.clone(),
            Some(other) => other.to_string(),
            None => "null".to_owned(),
        };
        self.log_event(&format!("initialize {shown}"));
        let version = match &self.config.protocol_override {
            Some(forced) => forced.as_str(),
            None => requested
                .and_then(Value::as_str)
                .filter(|v| SUPPORTED_VERSIONS.contains(v))
                .unwrap_or(LATEST_VERSION),
        };
        let result = json!({
            "protocolVersion": version,
            "capabilities": {
                "tools": { "listChanged": true },
                "resources": { "subscribe": true },
                "prompts": {},
                "logging": {},
            },
            "serverInfo": { "name": "mcp-demo-server", "version": env!("CARGO_PKG_VERSION") },
            "instructions": "Demo server for mcp-supervisor tests.",
        });
        self.respond(id, Ok(result));
        if let Some(bytes) = self.config.long_line_bytes {
            self.out.write_long_line(bytes);
        }
    }

    /// Cursors are the start index as a decimal string: opaque to clients, trivial for us.
    fn list_tools(&self, params: &Args) -> Reply {
        let tools = tool_definitions(lock(&self.state).extra_tool);
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => cursor
                .parse::<usize>()
                .ok()
                .filter(|&start| start <= tools.len())
                .ok_or_else(|| RpcError::invalid_params(format!("invalid cursor: {cursor:?}")))?,
            Some(_) => return Err(RpcError::invalid_params("cursor must be a string")),
        };
        let end = start.saturating_add(self.config.page_size).min(tools.len());
        let mut result = json!({ "tools": &tools[start..end] });
        if end < tools.len() {
            result["nextCursor"] = json!(end.to_string());
        }
        Ok(result)
    }

    fn read_resource(&self, params: &Args) -> Reply {
        let uri = required_str(params, "uri")?;
        if uri != CLOCK_URI {
            return Err(RpcError::new(RESOURCE_NOT_FOUND, "resource not found"));
        }
        let version = lock(&self.state).resource_version;
        Ok(json!({ "contents": [{
            "uri": CLOCK_URI,
            "mimeType": "text/plain",
            "text": format!("version {version}"),
        }] }))
    }

    fn subscribe(&self, params: &Args, on: bool) -> Reply {
        let uri = required_str(params, "uri")?;
        {
            let mut state = lock(&self.state);
            if on {
                state.subscriptions.insert(uri.to_owned());
            } else {
                state.subscriptions.remove(uri);
            }
        }
        let verb = if on { "subscribe" } else { "unsubscribe" };
        self.log_event(&format!("{verb} {uri}"));
        Ok(json!({}))
    }

    // --- tools -------------------------------------------------------------------------------

    fn call_tool(&self, id: &Value, params: &Args) -> Outcome {
        self.crash_if_asked();
        let Ok(name) = required_str(params, "name") else {
            return Outcome::Reply(Err(RpcError::invalid_params("tools/call needs a `name`")));
        };
        self.log_event(&format!("call {name}"));
        let args = match params.get("arguments") {
            None | Some(Value::Null) => Args::new(),
            Some(Value::Object(args)) => args.clone(),
            Some(_) => {
                let error = RpcError::invalid_params("`arguments` must be an object");
                return Outcome::Reply(Err(error));
            }
        };
        let progress_token = params
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .cloned();
        let outcome = match name {
            "slow" => self.tool_slow(id, &args, progress_token),
            "counter" => self.tool_counter(id, &args),
            "ask_client" => self.tool_ask_client(id, &args),
            "hang" => {
                self.log_event(&format!("hang {id}"));
                Ok(Outcome::Deferred)
            }
            _ => self
                .call_quick_tool(name, &args)
                .map(|r| Outcome::Reply(Ok(r))),
        };
        outcome.unwrap_or_else(|error| Outcome::Reply(Err(error)))
    }

    /// Tools that finish immediately on the reader thread.
    fn call_quick_tool(&self, name: &str, args: &Args) -> Reply {
        match name {
            "echo" => Ok(text_result(required_str(args, "text")?)),
            "add" => tool_add(args),
            "touch" => {
                self.log_event("touch");
                Ok(text_result("touched"))
            }
            "notify" => self.tool_notify(args),
            "long_line" => {
                let bytes = required_u64(args, "bytes")?;
                self.out.write_long_line(bytes);
                Ok(text_result(format!("wrote {bytes}")))
            }
            "garbage" => {
                self.write_garbage();
                Ok(text_result("ok"))
            }
            "extra" if lock(&self.state).extra_tool => Ok(text_result("extra")),
            _ => Err(RpcError::invalid_params(format!("unknown tool: {name}"))),
        }
    }

    /// `DEMO_CRASH_AFTER_CALLS`: checked before the call is logged, so the event log only shows
    /// calls that actually ran.
    fn crash_if_asked(&self) {
        let Some(limit) = self.config.crash_after_calls else {
            return;
        };
        if lock(&self.state).calls_answered >= limit {
            stderr_line("demo: crashing as asked");
            process::exit(3);
        }
    }

    /// Runs `work` on its own thread; it gets a cancellation receiver and returns `None` when it
    /// saw a cancellation. The answer is only sent if the call was not cancelled meanwhile.
    fn spawn_call<F>(&self, id: &Value, work: F) -> Result<Outcome, RpcError>
    where
        F: FnOnce(&Server, &Receiver<()>) -> Option<Reply> + Send + 'static,
    {
        let key = id.to_string();
        let (cancel_tx, cancel_rx) = mpsc::channel();
        lock(&self.state).running.insert(key.clone(), cancel_tx);
        let (server, id, thread_key) = (self.clone(), id.clone(), key.clone());
        let spawned = thread::Builder::new().spawn(move || {
            let reply = work(&server, &cancel_rx);
            let still_wanted = lock(&server.state).running.remove(&thread_key).is_some();
            if let (Some(reply), true) = (reply, still_wanted) {
                server.respond_call(&id, reply);
            }
        });
        match spawned {
            Ok(_) => Ok(Outcome::Deferred),
            Err(e) => {
                lock(&self.state).running.remove(&key);
                Err(RpcError::new(
                    INTERNAL_ERROR,
                    format!("cannot start thread: {e}"),
                ))
            }
        }
    }

    fn tool_slow(
        &self,
        id: &Value,
        args: &Args,
        progress_token: Option<Value>,
    ) -> Result<Outcome, RpcError> {
        let seconds = optional(args, "seconds", 1.0, Value::as_f64, "a number")?;
        let steps = optional(args, "steps", 5, Value::as_u64, "a non-negative integer")?;
        let total = Duration::try_from_secs_f64(seconds).map_err(|_| {
            RpcError::invalid_params("`seconds` must be a non-negative, finite number")
        })?;
        let divisor = u32::try_from(steps.max(1))
            .map_err(|_| RpcError::invalid_params("`steps` is too large"))?;
        let per_step = total / divisor;
        // Echo `seconds` the way the client wrote it ("1", "0.5"), not as a reformatted float.
        let shown = match args.get("seconds") {
            Some(Value::Number(n)) => n.to_string(),
            _ => "1".to_owned(),
        };
        self.spawn_call(id, move |server, cancel| {
            if steps == 0 && wait_or_cancel(cancel, total) {
                return None;
            }
            for step in 1..=steps {
                if wait_or_cancel(cancel, per_step) {
                    return None;
                }
                if let Some(token) = &progress_token {
                    let progress = json!({
                        "progressToken": token,
                        "progress": step,
                        "total": steps,
                        "message": format!("step {step}/{steps}"),
                    });
                    server.notify("notifications/progress", Some(progress));
                }
            }
            Some(Ok(text_result(format!("done after {shown}s"))))
        })
    }

    /// The count is made durable before anything else happens, so a crash or a lost answer
    /// still leaves evidence that the (non-idempotent) call ran.
    fn tool_counter(&self, id: &Value, args: &Args) -> Result<Outcome, RpcError> {
        let delay_ms = optional(args, "delay_ms", 0, Value::as_u64, "a non-negative integer")?;
        let crash = optional(args, "crash", false, Value::as_bool, "a boolean")?;
        let count = self
            .bump_counter()
            .map_err(|e| RpcError::new(INTERNAL_ERROR, format!("counter file: {e}")))?;
        self.log_event(&format!("counter {count}"));
        if crash {
            stderr_line("demo: counter crashing as asked");
            process::exit(3);
        }
        let reply = Ok(structured_result(
            count.to_string(),
            json!({ "count": count }),
        ));
        if delay_ms == 0 {
            return Ok(Outcome::Reply(reply));
        }
        self.spawn_call(id, move |_, cancel| {
            let cancelled = wait_or_cancel(cancel, Duration::from_millis(delay_ms));
            (!cancelled).then_some(reply)
        })
    }

    fn bump_counter(&self) -> io::Result<u64> {
        // Holding the state lock serialises concurrent increments of the file.
        let mut state = lock(&self.state);
        match &self.config.counter_file {
            Some(path) => bump_count_file(path),
            None => {
                state.memory_counter = state.memory_counter.saturating_add(1);
                Ok(state.memory_counter)
            }
        }
    }

    fn tool_ask_client(&self, id: &Value, args: &Args) -> Result<Outcome, RpcError> {
        let method = required_str(args, "method")?;
        let params = match args.get("params") {
            None | Some(Value::Null) => None,
            Some(params @ Value::Object(_)) => Some(params.clone()),
            Some(_) => return Err(RpcError::invalid_params("`params` must be an object")),
        };
        let (reply_tx, reply_rx) = mpsc::channel();
        let request_id = {
            let mut state = lock(&self.state);
            state.next_server_request += 1;
            let request_id = format!("srv-{}", state.next_server_request);
            // Registered before sending; the reader thread (us) routes the response later.
            state
                .pending_client_replies
                .insert(request_id.clone(), reply_tx);
            request_id
        };
        let mut request = json!({ "jsonrpc": "2.0", "id": request_id, "method": method });
        if let Some(params) = params {
            request["params"] = params;
        }
        self.out.send(&request);
        self.spawn_call(id, move |_, _| {
            let response = reply_rx.recv().ok()?;
            Some(Ok(client_response_result(&response)))
        })
    }

    fn tool_notify(&self, args: &Args) -> Reply {
        match required_str(args, "kind")? {
            "tools_changed" => {
                {
                    let mut state = lock(&self.state);
                    state.extra_tool = !state.extra_tool;
                }
                self.notify("notifications/tools/list_changed", None);
            }
            "log" => {
                let params =
                    json!({ "level": "info", "logger": "demo", "data": "hello from demo" });
                self.notify("notifications/message", Some(params));
            }
            "resource_updated" => {
                let subscribed = {
                    let mut state = lock(&self.state);
                    state.resource_version += 1;
                    state.subscriptions.contains(CLOCK_URI)
                };
                if subscribed {
                    let params = json!({ "uri": CLOCK_URI });
                    self.notify("notifications/resources/updated", Some(params));
                }
            }
            other => {
                return Err(RpcError::invalid_params(format!(
                    "unknown kind: {other} (expected tools_changed, log or resource_updated)"
                )))
            }
        }
        Ok(text_result("notified"))
    }

    fn write_garbage(&self) {
        // Varies per call so clients cannot get away with matching one fixed string.
        let noise = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
            ^ process::id();
        self.out.write_with(|out| {
            writeln!(out, "this is not json")?;
            writeln!(out, "{{\"unterminated\": ")?;
            writeln!(out, "~~ noise {noise:08x} <<not a message>> %% ~~")
        });
    }
}

fn tool_add(args: &Args) -> Reply {
    let number = |key: &str| {
        args.get(key)
            .filter(|v| v.is_number())
            .ok_or_else(|| RpcError::invalid_params(format!("`{key}` must be a number")))
    };
    let (a, b) = (number("a")?, number("b")?);
    // Integers stay integers ("5", not "5.0"); anything else is added as floats.
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) if a.checked_add(b).is_some() => json!(a + b),
        _ => {
            let sum = a.as_f64().unwrap_or(f64::NAN) + b.as_f64().unwrap_or(f64::NAN);
            serde_json::Number::from_f64(sum)
                .map(Value::Number)
                .ok_or_else(|| RpcError::invalid_params("the sum is not a finite number"))?
        }
    };
    Ok(structured_result(sum.to_string(), json!({ "sum": sum })))
}

fn client_response_result(response: &Value) -> Value {
    match response.get("error") {
        Some(error) => json!({ "content": [{ "type": "text", "text": error.to_string() }],
                               "isError": true }),
        None => text_result(response.get("result").unwrap_or(&Value::Null).to_string()),
    }
}

fn get_prompt(params: &Args) -> Reply {
    let name = required_str(params, "name")?;
    if name != "greet" {
        return Err(RpcError::invalid_params(format!("unknown prompt: {name}")));
    }
    let who = params
        .get("arguments")
        .and_then(|a| a.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("argument `name` is required"))?;
    Ok(json!({
        "description": "Greets someone by name.",
        "messages": [{ "role": "user",
                       "content": { "type": "text", "text": format!("Hello, {who}!") } }],
    }))
}

// ---------------------------------------------------------------------------------------------
// Tool catalogue
// ---------------------------------------------------------------------------------------------

/// The tools in listing order; `extra` only exists after `notify {kind: "tools_changed"}`.
fn tool_definitions(with_extra: bool) -> Vec<Value> {
    let mut tools = vec![
        json!({ "name": "echo", "description": "Echoes the text back.",
            "inputSchema": { "type": "object", "properties": { "text": { "type": "string" } },
                             "required": ["text"] },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "add", "description": "Adds two numbers.",
            "inputSchema": { "type": "object", "required": ["a", "b"],
                             "properties": { "a": { "type": "number" }, "b": { "type": "number" } } },
            "outputSchema": { "type": "object", "properties": { "sum": { "type": "number" } },
                              "required": ["sum"] },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "slow", "description": "Waits, reporting progress after each step.",
            "inputSchema": { "type": "object", "properties": {
                "seconds": { "type": "number", "minimum": 0, "default": 1 },
                "steps": { "type": "integer", "minimum": 0, "default": 5 } } },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "counter",
            "description": "Increments a persistent counter (NOT idempotent); can crash or delay.",
            "inputSchema": { "type": "object", "properties": {
                "delay_ms": { "type": "integer", "minimum": 0, "default": 0 },
                "crash": { "type": "boolean", "default": false } } },
            "outputSchema": { "type": "object", "properties": { "count": { "type": "integer" } },
                              "required": ["count"] },
            "annotations": { "readOnlyHint": false, "destructiveHint": false,
                             "idempotentHint": false } }),
        json!({ "name": "touch", "description": "Records a touch; safe to repeat.",
            "inputSchema": { "type": "object", "properties": {} },
            "annotations": { "readOnlyHint": false, "destructiveHint": false,
                             "idempotentHint": true } }),
        json!({ "name": "hang", "description": "Never answers.",
            "inputSchema": { "type": "object", "properties": {} },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "ask_client",
            "description": "Sends a request to the client and returns its response.",
            "inputSchema": { "type": "object", "required": ["method"], "properties": {
                "method": { "type": "string" }, "params": { "type": "object" } } },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "notify", "description": "Sends a notification to the client.",
            "inputSchema": { "type": "object", "required": ["kind"], "properties": {
                "kind": { "type": "string", "enum": ["tools_changed", "log", "resource_updated"] } } },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "long_line", "description": "Writes one huge non-JSON line to stdout.",
            "inputSchema": { "type": "object", "required": ["bytes"], "properties": {
                "bytes": { "type": "integer", "minimum": 0 } } },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "garbage", "description": "Writes non-JSON lines to stdout.",
            "inputSchema": { "type": "object", "properties": {} },
            "annotations": { "readOnlyHint": true } }),
    ];
    if with_extra {
        tools.push(
            json!({ "name": "extra", "description": "Appears after tools_changed.",
            "inputSchema": { "type": "object", "properties": {} },
            "annotations": { "readOnlyHint": true } }),
        );
    }
    tools
}

// ---------------------------------------------------------------------------------------------
// Start-up fault switches
// ---------------------------------------------------------------------------------------------

/// `DEMO_FAIL_STARTS`: fail the first N starts, counting starts in `DEMO_START_COUNT_FILE`.
fn fail_start_if_asked() {
    let Some(limit) = env_u64("DEMO_FAIL_STARTS").filter(|&n| n > 0) else {
        return;
    };
    let count = match env_path("DEMO_START_COUNT_FILE") {
        None => 1,
        Some(path) => bump_count_file(&path).unwrap_or_else(|e| {
            stderr_line(&format!(
                "demo: start count file unusable ({e}), failing anyway"
            ));
            1
        }),
    };
    if count <= limit {
        stderr_line(&format!("demo: simulated start-up failure {count}/{limit}"));
        process::exit(1);
    }
}

/// `DEMO_SPAWN_GRANDCHILD`: a child in our process group that outlives us unless the supervisor
/// kills the whole group. Its stdio is detached so it does not hold our pipes open.
fn spawn_grandchild(event_log: Option<&Path>) {
    let spawned = Command::new("sleep")
        .arg("1000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            append_event(event_log, &format!("grandchild pid={}", child.id()));
            // Reap it in the background (never blocking the server) so it cannot linger as a
            // zombie if it dies while we live.
            let reaper = thread::Builder::new().spawn(move || {
                let _ = child.wait();
            });
            if let Err(e) = reaper {
                stderr_line(&format!("demo: cannot start reaper thread: {e}"));
            }
        }
        Err(e) => stderr_line(&format!("demo: cannot spawn grandchild: {e}")),
    }
}

/// `DEMO_IGNORE_SIGTERM`: so tests can check that a supervisor escalates to SIGKILL.
fn ignore_sigterm() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: SigIgn installs no handler function, so no handler code can break
    // async-signal-safety, and no previously installed handler of ours is being replaced.
    let result = unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) };
    if let Err(e) = result {
        stderr_line(&format!("demo: cannot ignore SIGTERM: {e}"));
    }
}

pub fn main() {
    let config = Config::from_env();
    let pid = process::id();
    stderr_line(&format!("demo: started pid={pid}"));
    append_event(config.event_log.as_deref(), &format!("start pid={pid}"));
    for i in 1..=env_u64("DEMO_STDERR_LINES").unwrap_or(0) {
        stderr_line(&format!("demo stderr line {i}"));
    }
    fail_start_if_asked();
    // The grandchild is spawned before SIGTERM is ignored: ignored signals survive exec, and
    // the grandchild should stay an ordinary, killable process.
    if env_flag("DEMO_SPAWN_GRANDCHILD") {
        spawn_grandchild(config.event_log.as_deref());
    }
    if env_flag("DEMO_IGNORE_SIGTERM") {
        ignore_sigterm();
    }
    if let Some(ms) = env_u64("DEMO_SLOW_START_MS") {
        thread::sleep(Duration::from_millis(ms));
    }
    Server::new(config).serve();
}
