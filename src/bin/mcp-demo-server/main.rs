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
//! It speaks both protocol eras (see "Protocol eras" below): the 2025 revisions, opened with
//! `initialize`, exactly as it always did, and the stateless 2026-07-28 revision.
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
//! - `confirm {rounds: integer 1..=1000 = 1, state_only: bool = false}`: callable always, listed
//!   only with `DEMO_LIST_CONFIRM` (so the listing stays 10 tools). 2025 era: sends
//!   `elicitation/create {message: "Proceed?", requestedSchema: {type: object, properties: {ok:
//!   {type: boolean}}}}` as a request (`srv-<n>`) `rounds` times in turn, then answers
//!   `confirmed: <ok>` (the last answer's `content.ok` as JSON, `null` if absent); a client error
//!   answers like `ask_client`; cancellable. 2026-07-28 era: multi-round-trip, see below.
//! - `long_job {ms: integer 0..=86400000 = 2000, poll_ms: integer 1..=3600000 = 200, ask: bool =
//!   false, fail: bool = false, error_result: bool = false, text: string (<= 4096 bytes) =
//!   "done", ttl_ms: integer 1..=604800000 = 600000}`: callable always, listed only with
//!   `DEMO_LIST_TASKS` (last but `extra`; in a 2025-11-25 session with `execution: {taskSupport:
//!   "optional"}`). A job of `ms` ms from its creation that ends with `text`, with that text and
//!   `isError: true` (`error_result`), or with the JSON-RPC error `{code: -32603, message: "the
//!   job failed"}` (`fail`). With `ask` it asks half-way (`ms/2`) with ONE input request keyed
//!   `confirm`: `elicitation/create {message: "Continue the job?", requestedSchema: {type: object,
//!   properties: {ok: {type: boolean}}}}`, and waits for the answer: `action: "accept"` with
//!   `content.ok == true` resumes it for the remaining half, anything else ends it with the text
//!   `declined`. Answered with a task (see "Tasks" below) when the client asks for one (2025-11-25)
//!   or declares the Tasks extension (2026-07-28, where a client that does not is refused
//!   `-32021`); otherwise (a 2025 session without `params.task`) run as an ordinary long call
//!   on a worker thread, cancellable, its input request a real `elicitation/create` request.
//!
//! Also: `ping`, `tools/list` (paginated), `resources/list|read|subscribe|unsubscribe` (one
//! resource, `demo://clock`), `resources/templates/list` (one template, `demo://greeting/{name}`,
//! which `resources/read` reads), `prompts/list|get` (one prompt, `greet`), `logging/setLevel`,
//! and the notifications `notifications/initialized` and `notifications/cancelled`.
//!
//! # Skills
//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`), declared in both eras'
//! capabilities: `skills/list` (five skills on one page), `skills/get {uri}` (-32602 for a URI
//! that is no skill's `SKILL.md`), and the skills' files through `resources/read`. `demo-skill`
//! is served as its manifest says (`SKILL.md` and `references/NOTES.md`); `digest-mismatch`,
//! `size-mismatch` and `frontmatter-mismatch` serve a `SKILL.md` that fails the client's
//! verification in that way; `oversized` lists a 17 MiB file (see `skills`).
//!
//! # Protocol eras
//! A request is *modern* (2026-07-28) when its `params._meta` carries
//! `io.modelcontextprotocol/protocolVersion`; then the version must be one of
//! `DEMO_MODERN_VERSIONS` (else -32022 with `data {supported, requested}`, `requested` as given),
//! `io.modelcontextprotocol/clientCapabilities` must be an object and
//! `io.modelcontextprotocol/logLevel`, if present, a log level (else -32602). It needs no
//! `initialize`; every result gets `resultType: "complete"` unless it says otherwise; `tools/list`,
//! `resources/list|templates/list|read` and `prompts/list` also get `ttlMs: 0, cacheScope:
//! "private"`; an unknown
//! resource is -32602 (not -32002); `ping`, `logging/setLevel` and `resources/(un)subscribe` are
//! -32601; `notify {kind: log}` sends its message only if the request's logLevel lets `info` through,
//! and the other kinds go only to listens (below). What a connection serves (`DEMO_ERA`):
//! - `dual` (default): `server/discover` (with or without `_meta`) is answered and pins nothing;
//!   the first modern request served pins the connection modern: then `initialize` gets -32022
//!   and a request without the envelope -32602. An `initialize` pins it legacy: then a modern
//!   request (or `server/discover`) gets -32600. Requests refused for their version or `_meta`
//!   pin nothing. Before anything is pinned, requests without the envelope are served as always.
//! - `legacy`: the server as it was; `server/discover` and every modern request get -32601.
//! - `modern`: `initialize` gets -32022 (`data {supported, requested: <its protocolVersion>}`),
//!   other requests without the envelope -32602.
//!
//! Modern methods:
//! - `server/discover` → `{resultType: "complete", supportedVersions, capabilities: {tools:
//!   {listChanged: true}, resources: {subscribe: true, listChanged: false}, prompts:
//!   {listChanged: false}, logging: {}, extensions: {"io.modelcontextprotocol/skills": {},
//!   "io.modelcontextprotocol/tasks": {}}},
//!   instructions, ttlMs, cacheScope: "private", _meta:
//!   {"io.modelcontextprotocol/serverInfo": {name: "mcp-demo-server", version}}}`.
//! - `subscriptions/listen {notifications: {toolsListChanged?, promptsListChanged?,
//!   resourcesListChanged?, resourceSubscriptions?: [uri], taskIds?: [id]}}`: first
//!   `notifications/subscriptions/acknowledged {notifications: <honoured: toolsListChanged and
//!   resourceSubscriptions as asked, taskIds the known ones (see "Tasks"), never the other
//!   two>, _meta: {subscriptionId: <listen id>}}`,
//!   then `notifications/tools/list_changed` (on `notify tools_changed`) and
//!   `notifications/resources/updated {uri}` (on `notify resource_updated`, for `demo://clock`),
//!   each with `params._meta["io.modelcontextprotocol/subscriptionId"]`, to every open listen that
//!   asked (at most 64 open; an id already open is -32600). `notifications/cancelled {requestId:
//!   <listen id>}`, or `DEMO_LISTEN_END_AFTER_MS`, ends one with its result `{resultType:
//!   "complete", _meta: {subscriptionId}}`.
//! - `tools/call confirm`: without `requestState` answers `{resultType: "input_required",
//!   inputRequests: {confirm: <the elicitation above, as {method, params}>}, requestState}`, or
//!   with `state_only` first `{resultType: "input_required", requestState}` alone (retried with
//!   just that state). A retry must carry the exact `requestState` it was given (each is a JSON
//!   text with a nonce and the round, redeemable once) and, after an input round,
//!   `inputResponses.confirm`, else -32602; after `rounds` input rounds it answers `confirmed:
//!   <inputResponses.confirm.content.ok>`. `ask_client` works the same way in one round
//!   (`inputRequests: {ask: {method, params?}}`, answered with `inputResponses.ask` as compact
//!   JSON text). Any other tool called with `requestState` or `inputResponses` is -32602.
//!
//! # Tasks
//! A task's state is a pure function of the clock, its arguments and the answer and
//! cancellation it got; one clock thread acts on the instants it changes. Task ids are 128
//! random bits in hex; `createdAt` and `lastUpdatedAt` are ISO 8601 UTC with ms. A task is found
//! only by requests of the era it was created in. An unknown task id is `-32602` "Failed to
//! retrieve task: Task not found", one past its ttl `-32602` "Failed to retrieve task: Task has
//! expired". At most 10,000 tasks are kept: past that the oldest expired, then the oldest ended
//! one is forgotten, and a new task is refused (-32603) when all are running. A change (a
//! creation, an answer, a cancellation) is answered before any notification about it goes out.
//!
//! 2026-07-28, the Tasks extension (`io.modelcontextprotocol/tasks`), declared in
//! `server/discover`'s `capabilities.extensions`; the client declares it per request in
//! `_meta["io.modelcontextprotocol/clientCapabilities"].extensions`, else `tools/call long_job`,
//! `tasks/*` and a listen naming `taskIds` get `-32021 {data: {requiredCapabilities:
//! {extensions: {"io.modelcontextprotocol/tasks": {}}}}}`:
//! - `tools/call long_job` → `CreateTaskResult {resultType: "task", taskId, status: "working",
//!   createdAt, lastUpdatedAt, ttlMs, pollIntervalMs: <poll_ms>}`.
//! - `tasks/get {taskId}` → the `DetailedTask` (`resultType: "complete"`, the fields above with
//!   the current `status` and `statusMessage` for input_required, failed and cancelled;
//!   `inputRequests {confirm: {method, params}}` while input_required, `result` once completed
//!   — an `isError` result included —, `error` once failed).
//! - `tasks/update {taskId, inputResponses}` → `{resultType: "complete"}`; `confirm` is taken
//!   while outstanding, other keys ignored. `tasks/cancel {taskId}` → `{resultType:
//!   "complete"}`; the task is cancelled unless it has ended.
//! - `subscriptions/listen {notifications: {taskIds: [..]}}` (at most 256): acknowledged with the
//!   known ones in `notifications.taskIds`, then `notifications/tasks` (the `DetailedTask`, with
//!   `_meta["io.modelcontextprotocol/subscriptionId"]`) on each status change of those tasks.
//!
//! 2025-11-25 (only when `initialize` answered that version; older sessions ignore
//! `params.task` and have no `tasks/*`, -32601): `capabilities.tasks {list, cancel, requests:
//! {tools: {call}}}`.
//! - `tools/call long_job` with `params.task {ttl?}` (ttl clamped to 1..=604800000 ms, else
//!   `ttl_ms`) → `CreateTaskResult {task: {taskId, status: "working", createdAt, lastUpdatedAt,
//!   ttl, pollInterval}}`; `params.task` on any other tool is -32601.
//! - `tasks/get {taskId}` → the `Task` (same fields, current `status`, `statusMessage`; an
//!   `isError` result is `failed` in this revision). `tasks/list {cursor?}` → `{tasks,
//!   nextCursor?}`, 100 a page, oldest first. `tasks/cancel {taskId}` → the `Task`, cancelled;
//!   -32602 "Cannot cancel task: already in terminal status '<status>'" once it has ended.
//! - `tasks/result {taskId}` → once the task has ended (answered later, never blocking other
//!   requests; a `notifications/cancelled` for it drops it), what the `tools/call` would have
//!   answered, the result with `_meta["io.modelcontextprotocol/related-task"] {taskId}`; a
//!   cancelled task's is -32603 "Failed to retrieve task result: Task was cancelled". At most
//!   1024 wait at once.
//! - After `notifications/initialized`: `notifications/tasks/status` (the `Task`) on each status
//!   change, and, when a job asks, its `elicitation/create` as a request `srv-<n>` to the client
//!   with `params._meta["io.modelcontextprotocol/related-task"] {taskId}` (sent once per
//!   process: a restarted server asks again); the client's response is the answer.
//!
//! # Environment switches
//! - `DEMO_PROTOCOL_VERSION=S`: answer `initialize` with protocol version S, whatever was asked.
//! - `DEMO_TOOLS_PAGE_SIZE=N`: `tools/list` page size (default 2).
//! - `DEMO_COUNTER_FILE=path`: where `counter` keeps its count (default: in memory).
//! - `DEMO_EVENT_LOG=path`: append one line per event (`start pid=..`, `initialize <version>`,
//!   `call <tool>`, `counter <n>`, `touch`, `hang <id>`, `subscribe <uri>`, `unsubscribe <uri>`,
//!   `cancelled <id>`, `grandchild pid=..`, `mrtr confirm id=<id> ask <k>/<n> <srv-id>`) so tests
//!   can see what the server executed. Every line caused by a modern request starts with
//!   `modern ` (`modern call echo`, `modern counter 3`), and modern requests add: `modern
//!   <method> <id>` for each one admitted, `modern listen <id> <honoured filter JSON>`, `modern
//!   deliver <listen id> <method>`, `modern listen-end <id> cancelled|timer`, `modern mrtr <tool>
//!   id=<id> state=none|valid|invalid responses=none|present -> state_only|input_required
//!   <k>/<n>|complete|error <code>`, `modern mrtr <tool> id=<id> stray <fields>`. A refused
//!   request logs `refused <method> <id> <code>` (prefixed when it carried the envelope). Ids are
//!   compact JSON (`7`, `"L1"`).
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
//! - `DEMO_PROBE_NOISE=K`: leave every `server/discover` request unanswered and write K lines
//!   `demo: validation error i for server/discover` to stderr instead (as older Python SDK
//!   servers do).
//! - `DEMO_ERA=dual|legacy|modern`: which protocol eras to serve (default `dual`; see above).
//! - `DEMO_MODERN_VERSIONS=v1,v2`: the modern versions accepted and listed (default
//!   `2026-07-28`; the handlers always behave as 2026-07-28).
//! - `DEMO_DISCOVER_TTL_MS=N`: the `ttlMs` of `server/discover` (default 0).
//! - `DEMO_LISTEN_END_AFTER_MS=N`: end every listen gracefully (its result) N ms after it opened.
//! - `DEMO_LIST_CONFIRM=1`: list the `confirm` tool (last but `extra`) in `tools/list`.
//! - `DEMO_REJECT_FIRST_MODERN=N`: answer the first N modern requests -32022, whatever version
//!   they ask for (a client must retry with one from `data.supported`).
//! - `DEMO_LIST_TASKS=1`: list the `long_job` tool in `tools/list`.
//! - `DEMO_TASKS_DIR=dir`: keep each task in `dir/<taskId>.json` (created, and written atomically
//!   and fsynced, before the change is answered), read again at start-up: a server killed with
//!   SIGKILL and started on the same directory knows its tasks and their state, and does not
//!   start their jobs again. Without it tasks live in memory and a restart forgets them.
//! - `DEMO_VERSION=V`, or the argument `--version-label V`: say version `V` in `serverInfo` and
//!   answer `echo` with `[V] <text>` (a replacement's test tells the generations apart).
//!
//! Every start also writes `demo: started pid=<pid>` to stderr; every task `task-start <taskId>`
//! when its job starts, and every `tasks/get` (of either era, naming a `taskId` of at most 64
//! characters) `task-poll <taskId>`.
//!
//! # Layout
//! - `main.rs`: the start-up order, and the two rules every room follows (see `lock` and
//!   `stderr_line`).
//! - MCP plumbing: `jsonrpc` (error objects, argument extraction), `out` (the stdout writer),
//!   `server` (shared state, framing of stdin, the two dispatch tables), `lifecycle` (initialize
//!   and version negotiation), `pagination` (cursors), `resources` (the resource and the prompt).
//! - The 2026-07-28 side: `era` (which era a request speaks, `DEMO_ERA`, pinning, the refusals),
//!   `discover` (`server/discover`), `listen` (`subscriptions/listen` and its deliveries).
//! - `tools`: the catalogue, the quick tools, the deferred ones (worker threads, cancellation,
//!   requests to the client), `mrtr` (the multi-round-trip forms of `confirm` and
//!   `ask_client`), and `tasks` (`long_job`: `job` the pure timeline, `table` the bounded table
//!   and its files, `clock` the thread that acts on changes, `modern` and `session` each era's
//!   methods).
//! - `faults`: every misbehaviour switched on by an environment variable.
//! - `config`: reading the environment; the ordinary (non-fault) settings.
//! - `persist`: what outlives the process: the event log, the count files, the atomic writer of
//!   the task files.

mod config;
mod discover;
mod era;
mod faults;
mod jsonrpc;
mod lifecycle;
mod listen;
mod out;
mod pagination;
mod persist;
mod resources;
mod server;
mod skills;
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
