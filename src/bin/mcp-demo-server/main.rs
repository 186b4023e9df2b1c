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
//!
//! # Layout
//! - `main.rs`: the start-up order, and the two rules every room follows (see `lock` and
//!   `stderr_line`).
//! - MCP plumbing: `jsonrpc` (error objects, argument extraction), `out` (the stdout writer),
//!   `server` (shared state, framing of stdin, dispatch), `lifecycle` (initialize and version
//!   negotiation), `pagination` (cursors), `resources` (the resource and the prompt).
//! - `tools`: the catalogue, the quick tools, and the deferred ones (worker threads,
//!   cancellation, requests to the client).
//! - `faults`: every misbehaviour switched on by an environment variable.
//! - `config`: reading the environment; the ordinary (non-fault) settings.
//! - `persist`: what outlives the process: the event log and the count files.

mod config;
mod faults;
mod jsonrpc;
mod lifecycle;
mod out;
mod pagination;
mod persist;
mod resources;
mod server;
mod tools;

use std::io::{self, Write};
use std::process;
use std::sync::{Mutex, MutexGuard};

use config::Config;
use server::Server;

/// A panicking thread must not take the whole server down with it, so poisoning is ignored.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// `eprintln!` panics when stderr is a closed pipe; a demo server should just carry on.
fn stderr_line(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

pub fn main() {
    let config = Config::from_env();
    let pid = process::id();
    stderr_line(&format!("demo: started pid={pid}"));
    persist::append_event(config.event_log.as_deref(), &format!("start pid={pid}"));
    faults::at_start_up(config.event_log.as_deref());
    Server::new(config).serve();
}
