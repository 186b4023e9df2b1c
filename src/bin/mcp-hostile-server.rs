//! A scriptable, misbehaving MCP server over stdio, for the hostile-server test suite
//! (`tests/it/hostile/`). Where the demo server has a fixed set of fault switches, this one does
//! whatever the test's script says, one action at a time, so that each hostile case is a few
//! lines of JSON in its test rather than a new mode here.
//!
//! The script comes in the environment variable `HOSTILE_SCRIPT`:
//!
//! ```json
//! {
//!   "on_start": [ ...actions, before reading anything... ],
//!   "after_initialized": [ ...actions, when `notifications/initialized` arrives... ],
//!   "on_eof": [ ...actions, when stdin closes (then the server exits)... ],
//!   "rules": [
//!     {"method": "tools/list", "nth": 1, "do": [ ...actions... ]},
//!     {"method": "tools/call", "from": 2, "do": [ ...actions... ]}
//!   ]
//! }
//! ```
//!
//! For each message, the first rule whose `method` matches (and `nth`: only the n-th message of
//! that method, or `from`: the n-th and later, counting from 1) runs its actions; with none, the
//! server behaves like a plain, well-behaved server (see [`default_reply`]). Actions:
//!
//! - `{"reply": RESULT}` / `{"error": {"code": C, "message": M}}`: answer the request.
//! - `{"reply_cycle": [R1, R2, ...]}`: answer the n-th call with `R[(n-1) % len]`.
//! - `{"default": true}`: what the server would do without a rule.
//! - `{"raw": TEXT}`: write TEXT and a newline; `{id}` in it becomes the request's id as JSON
//!   and `{n}` the message's count for its method. `{"partial": TEXT}`: the same without the
//!   newline (a server that stalls mid-line). `{"hex": "ff fe 0a"}`: raw bytes.
//! - `{"notify": METHOD, "params": P}`, `{"request": METHOD, "id": ID, "params": P}`.
//! - `{"repeat": N, "do": [...]}`: a flood.
//! - `{"sleep_ms": MS}`, `{"exit": CODE}`, `{"close_stdout": true}`,
//!   `{"stop_reading": true}` (never read stdin again, stay alive).
//! - `{"spawn": [...]}`: run actions on a thread of their own (to answer out of order).
//! - `{"grandchild": "keep_stdout" | "setsid" | "flood"}`: start a `sleep 60` that inherits
//!   our stdout (so stdout stays open after we exit), or that leaves our process group with
//!   `setsid`, or a `yes` that writes notifications to our stdout without end. Its pid is
//!   written to stderr as `grandchild pid=N`.
//! - `{"stderr": TEXT}`: a line on stderr (`{pid}` in it becomes our process id, `{answers}`
//!   the number of answers to our own requests read from stdin so far: how many the client
//!   wrote for us, e.g. after a flood it got while we did not read).
//! - `{"ignore_sigterm": true}`: a server that only SIGKILL stops.
//!
//! # Protocol eras
//!
//! `HOSTILE_ERA` says which revision the server speaks, as `DEMO_ERA` does for the demo
//! server (see [`Era`]): `legacy` (the default: the `initialize` handshake of the 2025
//! revisions, and `server/discover` is an unknown method) or `modern` (the 2026-07-28
//! revision: `server/discover` answers what it speaks, every other request must carry the
//! revision's `_meta`, `initialize` is refused with `-32022`, and there are no `ping` nor
//! `resources/(un)subscribe`, whose place `subscriptions/listen` takes). Scripts are the same in
//! both; only the methods they name differ. In the modern era `after_initialized` runs once the
//! first `server/discover` has been handled (the revision has no `notifications/initialized`:
//! that is where its opening ends).

use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

/// Answers to our own requests read from stdin so far (`{answers}` in a `stderr` action).
static ANSWERS_READ: AtomicU64 = AtomicU64::new(0);

/// Every line to stdout goes through one lock, so that spawned actions never interleave bytes.
type Out = Arc<Mutex<io::Stdout>>;

fn write_bytes(out: &Out, bytes: &[u8]) {
    let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
    // A closed stdout is a test's own doing (close_stdout); nothing to report to.
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

fn write_message(out: &Out, message: &Value) {
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    write_bytes(out, &line);
}

/// What a message being handled looks like to its actions.
struct Incoming<'a> {
    id: Option<&'a Value>,
    method: &'a str,
    params: Option<&'a Value>,
    /// This message's count for its method, from 1.
    n: u64,
}

enum Flow {
    Continue,
    StopReading,
}

/// What a well-behaved server writes in answer to a message: its response, and in the modern
/// era a listen's acknowledgement (the listen itself stays open). Nothing for a notification.
fn default_reply(incoming: &Incoming) -> Vec<Value> {
    let Some(id) = incoming.id else {
        return Vec::new();
    };
    let answer = match era() {
        Era::Legacy => legacy_result(incoming),
        Era::Modern => modern_result(incoming),
    };
    match answer {
        Answer::Result(result) => vec![json!({"jsonrpc": "2.0", "id": id, "result": result})],
        Answer::Error(error) => vec![json!({"jsonrpc": "2.0", "id": id, "error": error})],
        Answer::Listen(filter) => vec![json!({
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": filter, "_meta": {SUBSCRIPTION_ID_KEY: id}}
        })],
    }
}

/// A request's answer.
enum Answer {
    Result(Value),
    Error(Value),
    /// A `subscriptions/listen` with this filter: acknowledged, and open until cancelled.
    Listen(Value),
}

/// What a well-behaved server of the 2025 revisions answers.
fn legacy_result(incoming: &Incoming) -> Answer {
    Answer::Result(match incoming.method {
        "initialize" => {
            let asked = incoming
                .params
                .and_then(|p| p.get("protocolVersion"))
                .and_then(Value::as_str)
                .unwrap_or("2025-11-25");
            json!({
                "protocolVersion": asked,
                "capabilities": capabilities(),
                "serverInfo": server_info()
            })
        }
        "ping" | "resources/subscribe" | "resources/unsubscribe" => json!({}),
        method => match shared_result(incoming) {
            Some(result) => result,
            None => return Answer::Error(no_method(method)),
        },
    })
}

/// The answers both eras give alike (the 2026-07-28 revision marks them complete).
fn shared_result(incoming: &Incoming) -> Option<Value> {
    Some(match incoming.method {
        "tools/list" => json!({
            "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]
        }),
        "tools/call" => {
            let args = incoming.params.and_then(|p| p.get("arguments"));
            json!({"content": [{"type": "text", "text": args.map(Value::to_string).unwrap_or_default()}]})
        }
        _ => return None,
    })
}

fn capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true}
    })
}

fn server_info() -> Value {
    json!({"name": "hostile", "version": "0.0.0"})
}

fn no_method(method: &str) -> Value {
    json!({"code": -32601, "message": format!("no method {method}")})
}

fn fill(template: &str, incoming: &Incoming) -> String {
    let id = incoming.id.map(Value::to_string).unwrap_or("null".into());
    template
        .replace("{id}", &id)
        .replace("{n}", &incoming.n.to_string())
}

fn parse_hex(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .filter_map(|b| u8::from_str_radix(b, 16).ok())
        .collect()
}

fn grandchild(how: &str) {
    let mut cmd = if how == "setsid" {
        let mut c = Command::new("setsid");
        c.args(["sleep", "60"]).stdout(Stdio::null());
        c
    } else if how == "flood" {
        // Inherits our stdout and fills it with notifications as fast as it is read.
        let mut c = Command::new("yes");
        c.arg(r#"{"jsonrpc":"2.0","method":"notifications/flood"}"#);
        c
    } else {
        let mut c = Command::new("sleep");
        c.arg("60"); // Inherits our stdout: it stays open after we exit.
        c
    };
    match cmd.stdin(Stdio::null()).spawn() {
        Ok(child) => eprintln!("grandchild pid={}", child.id()),
        Err(e) => eprintln!("grandchild failed: {e}"),
    }
}

/// Keys that are arguments of an action (`repeat`'s `do`, `notify`'s `params`, `request`'s
/// `id`), never an action themselves.
const ARGUMENT_KEYS: &[&str] = &["do", "params", "id"];

fn run(actions: &[Value], incoming: &Incoming, out: &Out) -> Flow {
    for action in actions {
        // The action is the object's one key that is not an argument of another (JSON objects
        // are unordered: "do" or "id" may well come first).
        let Some((kind, arg)) = action
            .as_object()
            .and_then(|o| o.iter().find(|(k, _)| !ARGUMENT_KEYS.contains(&k.as_str())))
        else {
            eprintln!("hostile: not an action: {action}");
            continue;
        };
        let reply = |result: Value| {
            write_message(
                out,
                &json!({"jsonrpc": "2.0", "id": incoming.id, "result": result}),
            )
        };
        match kind.as_str() {
            "reply" => reply(arg.clone()),
            "reply_cycle" => {
                let all = arg.as_array().cloned().unwrap_or_default();
                if !all.is_empty() {
                    let index = (incoming.n.saturating_sub(1) % all.len() as u64) as usize;
                    reply(all[index].clone());
                }
            }
            "error" => write_message(
                out,
                &json!({"jsonrpc": "2.0", "id": incoming.id, "error": arg}),
            ),
            "default" => {
                for message in default_reply(incoming) {
                    write_message(out, &message);
                }
            }
            "raw" | "partial" => {
                let mut bytes = fill(arg.as_str().unwrap_or_default(), incoming).into_bytes();
                if kind == "raw" {
                    bytes.push(b'\n');
                }
                write_bytes(out, &bytes);
            }
            "hex" => write_bytes(out, &parse_hex(arg.as_str().unwrap_or_default())),
            "notify" => {
                let params = action.get("params").cloned().unwrap_or(json!({}));
                write_message(
                    out,
                    &json!({"jsonrpc": "2.0", "method": arg, "params": params}),
                );
            }
            "request" => {
                let id = action.get("id").cloned().unwrap_or(json!("hostile-1"));
                let params = action.get("params").cloned().unwrap_or(json!({}));
                write_message(
                    out,
                    &json!({"jsonrpc": "2.0", "id": id, "method": arg, "params": params}),
                );
            }
            "repeat" => {
                let body = action.get("do").and_then(Value::as_array);
                for _ in 0..arg.as_u64().unwrap_or(0) {
                    if let Flow::StopReading = run(body.map_or(&[], |v| v), incoming, out) {
                        return Flow::StopReading;
                    }
                }
            }
            "spawn" => {
                let body = arg.as_array().cloned().unwrap_or_default();
                let (out, id, method, params, n) = (
                    out.clone(),
                    incoming.id.cloned(),
                    incoming.method.to_owned(),
                    incoming.params.cloned(),
                    incoming.n,
                );
                std::thread::spawn(move || {
                    let incoming = Incoming {
                        id: id.as_ref(),
                        method: &method,
                        params: params.as_ref(),
                        n,
                    };
                    run(&body, &incoming, &out);
                });
            }
            "sleep_ms" => std::thread::sleep(Duration::from_millis(arg.as_u64().unwrap_or(0))),
            "exit" => std::process::exit(arg.as_i64().unwrap_or(0) as i32),
            "close_stdout" => {
                // Point fd 1 at /dev/null: the pipe's write end closes, the process lives on.
                if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
                    let _guard = out.lock().unwrap_or_else(|e| e.into_inner());
                    let _ = nix::unistd::dup2_stdout(&null);
                }
            }
            "stop_reading" => return Flow::StopReading,
            "grandchild" => grandchild(arg.as_str().unwrap_or("keep_stdout")),
            "stderr" => eprintln!(
                "{}",
                fill(arg.as_str().unwrap_or_default(), incoming)
                    .replace("{pid}", &std::process::id().to_string())
                    .replace(
                        "{answers}",
                        &ANSWERS_READ.load(Ordering::Relaxed).to_string()
                    )
            ),
            "ignore_sigterm" => {
                use nix::sys::signal::{signal, SigHandler, Signal};
                // SAFETY: installs SIG_IGN, which runs no code of ours in the handler.
                let _ = unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) };
            }
            other => eprintln!("hostile: unknown action {other}"),
        }
    }
    Flow::Continue
}

// ---- the protocol eras ----

/// Which revision the server speaks: `HOSTILE_ERA`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Era {
    /// 2024-11-05 .. 2025-11-25: `initialize`, then requests as they are.
    Legacy,
    /// 2026-07-28 only: no handshake, `_meta` on every request.
    Modern,
}

/// The revision the modern era speaks.
const MODERN_VERSION: &str = "2026-07-28";
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
const DISCOVER: &str = "server/discover";

/// The era, read from the environment once (spawned actions answer in it too).
fn era() -> Era {
    static ERA: OnceLock<Era> = OnceLock::new();
    *ERA.get_or_init(|| match std::env::var("HOSTILE_ERA").as_deref() {
        Err(_) | Ok("") | Ok("legacy") => Era::Legacy,
        Ok("modern") => Era::Modern,
        Ok(other) => {
            eprintln!("hostile: HOSTILE_ERA={other:?} is neither legacy nor modern");
            std::process::exit(2)
        }
    })
}

/// What a well-behaved server of the 2026-07-28 revision answers: `server/discover` (which
/// needs no `_meta`: a probe), the shared methods with `resultType`, a `subscriptions/listen`
/// acknowledged and kept open; `initialize` is refused as the revision says, and so is a
/// request without the revision's `_meta`.
fn modern_result(incoming: &Incoming) -> Answer {
    let method = incoming.method;
    if method == "initialize" {
        return Answer::Error(json!({
            "code": -32022,
            "message": format!("Unsupported protocol version: this server speaks {MODERN_VERSION}"),
            "data": {
                "supported": [MODERN_VERSION],
                "requested": incoming.params.and_then(|p| p.get("protocolVersion"))
            }
        }));
    }
    if method == DISCOVER {
        return Answer::Result(json!({
            "resultType": "complete",
            "supportedVersions": [MODERN_VERSION],
            "capabilities": capabilities(),
            "_meta": {SERVER_INFO_KEY: server_info()}
        }));
    }
    let meta = incoming.params.and_then(|p| p.get("_meta"));
    let version = meta.and_then(|m| m.get(PROTOCOL_VERSION_KEY));
    if version.and_then(Value::as_str) != Some(MODERN_VERSION)
        || !meta.is_some_and(|m| m.get(CLIENT_CAPABILITIES_KEY).is_some_and(Value::is_object))
    {
        return Answer::Error(json!({
            "code": -32602,
            "message": format!("{method}: params._meta must carry {PROTOCOL_VERSION_KEY} {MODERN_VERSION} and {CLIENT_CAPABILITIES_KEY}")
        }));
    }
    if method == "subscriptions/listen" {
        let filter = incoming.params.and_then(|p| p.get("notifications"));
        return Answer::Listen(filter.cloned().unwrap_or(json!({})));
    }
    match shared_result(incoming) {
        Some(mut result) => {
            result["resultType"] = json!("complete");
            Answer::Result(result)
        }
        None => Answer::Error(no_method(method)),
    }
}

fn rule_matches(rule: &Value, method: &str, n: u64) -> bool {
    rule.get("method").and_then(Value::as_str) == Some(method)
        && rule
            .get("nth")
            .and_then(Value::as_u64)
            .is_none_or(|k| k == n)
        && rule
            .get("from")
            .and_then(Value::as_u64)
            .is_none_or(|k| n >= k)
}

fn main() {
    let script: Value = match std::env::var("HOSTILE_SCRIPT") {
        Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| {
            eprintln!("hostile: HOSTILE_SCRIPT is not JSON: {e}");
            std::process::exit(2)
        }),
        Err(_) => json!({}),
    };
    era(); // A misspelt HOSTILE_ERA fails the start, not the first request.
    let out: Out = Arc::new(Mutex::new(io::stdout()));
    let empty = Vec::new();
    let list = |key: &str| script.get(key).and_then(Value::as_array).unwrap_or(&empty);
    let rules = list("rules");
    let none = Incoming {
        id: None,
        method: "",
        params: None,
        n: 0,
    };
    if let Flow::StopReading = run(list("on_start"), &none, &out) {
        loop {
            std::thread::park();
        }
    }
    let mut counts: HashMap<String, u64> = HashMap::new();
    let stdin = io::stdin();
    for line in stdin.lock().split(b'\n') {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            // An answer to one of our requests: counted, nothing else to do.
            ANSWERS_READ.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        let n = counts.entry(method.to_owned()).or_default();
        *n += 1;
        let incoming = Incoming {
            id: message.get("id"),
            method,
            params: message.get("params"),
            n: *n,
        };
        let flow = match rules.iter().find(|r| rule_matches(r, method, incoming.n)) {
            Some(rule) => run(
                rule.get("do").and_then(Value::as_array).unwrap_or(&empty),
                &incoming,
                &out,
            ),
            None if method == "notifications/initialized" => {
                run(list("after_initialized"), &incoming, &out)
            }
            None => {
                for reply in default_reply(&incoming) {
                    write_message(&out, &reply);
                }
                Flow::Continue
            }
        };
        // The modern opening is over once its `server/discover` is answered.
        let flow = match flow {
            Flow::Continue if era() == Era::Modern && method == DISCOVER && incoming.n == 1 => {
                run(list("after_initialized"), &incoming, &out)
            }
            flow => flow,
        };
        if let Flow::StopReading = flow {
            loop {
                std::thread::park();
            }
        }
    }
    run(list("on_eof"), &none, &out);
}
