//! The server: its shared state, the framing of stdin, and the dispatch of every message.
//!
//! This is the reader thread's loop: one line in, sorted into request, notification or
//! response, handed to the room that handles it, answered through `respond`. The handlers
//! themselves live in their own rooms (`lifecycle`, `resources`, `tools` — `long_job`'s task
//! methods of both eras too, in `tools/tasks` —, and for the 2026-07-28 revision `discover` and
//! `listen`); here is only what turns bytes into calls and results into
//! lines, with the two dispatch tables: the 2025 one, and the 2026-07-28 one that `era` sends a
//! modern request to.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, Write};
use std::process;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use super::config::Config;
use super::era::{Admission, Era, EraState, DISCOVER};
use super::jsonrpc::{params_of, Args, Reply, RpcError, METHOD_NOT_FOUND, PARSE_ERROR};
use super::lifecycle::Session;
use super::listen::Listens;
use super::out::Out;
use super::persist::append_event;
use super::tools::{Flows, Outcome, Tasks};
use super::{lock, resources, skills};

#[derive(Default)]
pub(crate) struct State {
    /// Whether `notify {kind: "tools_changed"}` has switched the `extra` tool on.
    pub(crate) extra_tool: bool,
    pub(crate) subscriptions: HashSet<String>,
    pub(crate) resource_version: u64,
    /// Answered `tools/call` requests, for `DEMO_CRASH_AFTER_CALLS`.
    pub(crate) calls_answered: u64,
    /// The `counter` count when `DEMO_COUNTER_FILE` is unset.
    pub(crate) memory_counter: u64,
    pub(crate) next_server_request: u64,
    /// Our own requests to the client (`ask_client`), by id, waiting for the client's response.
    pub(crate) pending_client_replies: HashMap<String, Sender<Value>>,
    /// Tool calls running on worker threads, by request id as compact JSON. Removing an entry
    /// (and signalling it) is what cancels a call: a worker whose entry is gone never answers.
    pub(crate) running: HashMap<String, Sender<()>>,
    /// Which era the connection speaks (2026-07-28 side).
    pub(crate) era: EraState,
    /// Open `subscriptions/listen` requests (2026-07-28 side).
    pub(crate) listens: Listens,
    /// The `requestState`s handed out by multi-round-trip tools, not yet redeemed.
    pub(crate) flows: Flows,
    /// The 2025 session, once `initialize` was answered (its version decides the tasks).
    pub(crate) session: Session,
    /// `long_job`'s tasks, of both eras.
    pub(crate) tasks: Tasks,
}

/// Cheap to clone: worker threads get their own handle on the same output, state and config.
#[derive(Clone)]
pub(crate) struct Server {
    pub(crate) out: Out,
    pub(crate) state: Arc<Mutex<State>>,
    pub(crate) config: Arc<Config>,
    /// The era of the request this handle serves; `Legacy` unless `era` made it modern.
    pub(crate) era: Era,
}

impl Server {
    pub(crate) fn new(config: Config) -> Self {
        let server = Server {
            out: Out::stdout(),
            state: Arc::new(Mutex::new(State::default())),
            config: Arc::new(config),
            era: Era::Legacy,
        };
        server.load_tasks();
        server
    }

    /// Lines written while serving a modern request start with `modern `, so tests can tell
    /// which era the client spoke; legacy lines are as they always were.
    pub(crate) fn log_event(&self, line: &str) {
        let log = self.config.event_log.as_deref();
        if self.era.is_modern() {
            append_event(log, &format!("modern {line}"));
        } else {
            append_event(log, line);
        }
    }

    pub(crate) fn respond(&self, id: &Value, reply: Reply) {
        let message = match reply {
            Ok(mut result) => {
                if self.era.is_modern() {
                    mark_complete(&mut result);
                }
                json!({ "jsonrpc": "2.0", "id": id, "result": result })
            }
            Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error.to_json() }),
        };
        let faults = &self.config.faults;
        self.out.write_with(|out| {
            faults.write_garbage_lines(out)?;
            writeln!(out, "{message}")
        });
    }

    /// Answers a `tools/call`, counting it for `DEMO_CRASH_AFTER_CALLS`.
    pub(crate) fn respond_call(&self, id: &Value, reply: Reply) {
        lock(&self.state).calls_answered += 1;
        self.respond(id, reply);
    }

    pub(crate) fn notify(&self, method: &str, params: Option<Value>) {
        let mut message = json!({ "jsonrpc": "2.0", "method": method });
        if let Some(params) = params {
            message["params"] = params;
        }
        self.out.send(&message);
    }

    // --- input ---------------------------------------------------------------------------------

    /// Reads stdin until EOF. `read_until` rather than `lines()` so that invalid UTF-8 is just
    /// another parse error instead of an I/O error.
    pub(crate) fn serve(&self) -> ! {
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

    fn handle_notification(&self, method: &str, message: &Map<String, Value>) {
        // Notifications are never answered, not even when malformed.
        match method {
            "notifications/cancelled" => {
                let params = params_of(message).unwrap_or_default();
                self.on_cancelled(&params);
                self.end_cancelled_listen(&params);
            }
            "notifications/initialized" => self.on_initialized(),
            _ => {}
        }
    }

    fn handle_request(&self, id: &Value, method: &str, params: &Args) {
        if self.config.faults.probe_noise(method) {
            return;
        }
        match self.admit(id, method, params) {
            None => {} // refused, and answered so
            Some(Admission::Legacy) => self.handle_legacy(id, method, params),
            Some(Admission::Modern(modern)) => modern.handle_modern(id, method, params),
        }
    }

    /// The 2025 revisions' methods.
    fn handle_legacy(&self, id: &Value, method: &str, params: &Args) {
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
            "resources/list" => resources::list_resources(),
            "resources/templates/list" => resources::list_resource_templates(),
            "resources/read" => self.read_resource(params),
            "resources/subscribe" => self.subscribe(params, true),
            "resources/unsubscribe" => self.subscribe(params, false),
            "prompts/list" => resources::list_prompts(),
            "prompts/get" => resources::get_prompt(params),
            "skills/list" => skills::list(),
            "skills/get" => skills::get(params),
            "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/list" => {
                return self.session_task_method(id, method, params)
            }
            _ => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
        };
        self.respond(id, reply);
    }
}

impl Server {
    /// The 2026-07-28 revision's methods, on a handle whose era is modern (so results get
    /// `resultType` and log lines their prefix). `ping`, `logging/setLevel` and
    /// `resources/(un)subscribe` are gone in this revision: method not found.
    fn handle_modern(&self, id: &Value, method: &str, params: &Args) {
        self.log_event(&format!("{method} {id}"));
        let reply = match method {
            DISCOVER => Ok(self.discover()),
            "subscriptions/listen" => return self.listen(id, params),
            "tools/call" => {
                if let Outcome::Reply(reply) = self.call_tool(id, params) {
                    self.respond_call(id, reply);
                }
                return;
            }
            "tools/list" => cacheable(self.list_tools(params)),
            "resources/list" => cacheable(resources::list_resources()),
            "resources/templates/list" => cacheable(resources::list_resource_templates()),
            "resources/read" => cacheable(self.read_resource(params)),
            "prompts/list" => cacheable(resources::list_prompts()),
            "prompts/get" => resources::get_prompt(params),
            "skills/list" => cacheable(skills::list()),
            "skills/get" => cacheable(skills::get(params)),
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                return self.modern_task_method(id, method, params)
            }
            _ => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
        };
        self.respond(id, reply);
    }
}

/// Every modern result says what it is; one without `resultType` is a complete one.
fn mark_complete(result: &mut Value) {
    if let Value::Object(fields) = result {
        if !fields.contains_key("resultType") {
            fields.insert("resultType".into(), json!("complete"));
        }
    }
}

/// The lists and `resources/read` carry a freshness hint in the 2026-07-28 revision; ours are
/// never fresh for long (a `notify` changes them), so 0, and private.
fn cacheable(reply: Reply) -> Reply {
    reply.map(|mut result| {
        if let Value::Object(fields) = &mut result {
            fields.insert("ttlMs".into(), json!(0));
            fields.insert("cacheScope".into(), json!("private"));
        }
        result
    })
}
