//! # mcp-supervisor
//!
//! An actix runtime that keeps an application's connections to MCP (Model Context Protocol)
//! servers alive. A [`Supervisor`] actor owns one [`ServerActor`] per server; each owns its
//! transport, the cached session and subscriptions, and a backoff timer, and brings its server
//! back after any failure. Application actors send typed calls ([`CallTool`], [`Call`], ...)
//! that carry timeouts, and always get exactly one answer by the deadline: a result, or an
//! [`Error`] whose [`kind`](Error::kind) says what happened.
//!
//! ```no_run
//! use mcp_supervisor::{CallTool, ErrorKind, GetStatus, ServerConfig, Supervisor};
//! use serde_json::json;
//! use std::time::Duration;
//!
//! #[actix::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let sup = Supervisor::builder()
//!         .server(ServerConfig::stdio("fs", "npx")
//!             .args(["-y", "@modelcontextprotocol/server-filesystem", "/srv"]))
//!         .start()?;
//!
//!     let call = CallTool::new("fs", "read_text_file", json!({"path": "/srv/a.txt"}))
//!         .timeout(Duration::from_secs(10));
//!     match sup.send(call).await? {
//!         Ok(result) => println!("{:?}", result.content),
//!         Err(e) => match e.kind() {
//!             ErrorKind::Timeout | ErrorKind::Unavailable => { /* try later, or degrade */ }
//!             ErrorKind::OutcomeUnknown => { /* the tool may have run: check before re-running */ }
//!             _ => { /* a JSON-RPC error from the server, an invalid response, ... */ }
//!         },
//!     }
//!     for status in sup.send(GetStatus::all()).await?? {
//!         println!("{}: {}", status.name, status.state.name());
//!     }
//!     Ok(())
//! }
//! ```
//!
//! # Calls
//!
//! - Every call resolves exactly once, no later than its deadline plus a small slack, also when
//!   the server dies, hangs, restarts, or the supervisor shuts down.
//! - Calls made while a server connects or reconnects wait (bounded by their deadline and by
//!   `max_in_flight`) and are sent once it is Ready. One that never got sent fails with
//!   [`ErrorKind::Unavailable`]: safe to make again.
//! - A timeout answers [`ErrorKind::Timeout`], sends `notifications/cancelled`, and checks the
//!   connection with a `ping`; only a failed ping restarts the server.
//! - When a connection breaks with calls in flight: methods that are safe by nature are re-sent
//!   once; a `tools/call` only if its [`RetryPolicy`] allows it, otherwise the caller gets
//!   [`ErrorKind::OutcomeUnknown`]. We never run a tool twice on our own.
//!
//! # Cargo features
//!
//! `stdio` (child-process servers) and `http` (Streamable HTTP, and the legacy HTTP+SSE
//! transport, over awc and rustls) are on by
//! default; at least one is needed. A build without one refuses its servers with a
//! [`config`](ErrorKind::Config) error that names the feature
//! ([`Transport::is_compiled_in`]).
//!
//! `sqlite` (default) compiles SQLite in (bundled: nothing to install) for the [`tasks`]
//! store that outlives this process, `SqliteTaskStore`; without it,
//! [`MemoryTaskStore`](tasks::MemoryTaskStore) remains. `postgres` adds `PostgresTaskStore`
//! and `PostgresTokenStore`, stores in a PostgreSQL database that the replicas of a service
//! share.
//!
//! # Layout
//!
//! - [`error`]: the [`Error`] enum, its messages and its stable kind codes; `build`, the
//!   constructors that escape and bound server text; [`http`](error::http), the HTTP status a
//!   gateway answers for each kind.
//! - [`config`]: [`ServerConfig`] and its builders, [`Settings`] (defaults and per-server
//!   overrides, declared once), the transports' configs and what of them may be logged,
//!   `validate` (every check in one place), and `mcp_servers`, the `mcpServers` loader: JSON
//!   with comments, each host's keys (`entry`), `${VAR}` expansion (`expand`), `envFile`,
//!   our own per-server settings (`own_settings`) and partial loads ([`LoadOptions`]).
//! - [`auth`]: MCP's OAuth profile for HTTP servers, one concept per file: `secret`
//!   ([`Secret`](auth::Secret), credentials `Debug` never shows), `challenge`
//!   (`WWW-Authenticate`), `trust` (which URLs authorization fetches from and sends to),
//!   `metadata` (the documents, where they are, their checks), `discovery`, `failure` (why
//!   no token: not now, refused, or the application must act), `identity` (pre-registered
//!   and bound to its issuer, CIMD, DCR), `grant` (token requests, client authentication),
//!   `authorizer` (the application's [`Authorizer`](auth::Authorizer), PKCE, `state`/`iss`),
//!   `flow` (one authorization, scopes), `sign_in` (the user's part in progress, which
//!   outlives a connection attempt), `dpop` (RFC 9449 keys and proofs), `enterprise` (the
//!   token exchange of enterprise-managed authorization), `store` (the
//!   [`TokenStore`](auth::TokenStore) trait, its renewal lock, and the memory store),
//!   `file_store`, `postgres_store` (feature `postgres`: the store a fleet shares, renewals
//!   serialized by a row lock), `provider` (what the HTTP transport asks for a header and
//!   tells about a 401/403: refresh, step-up, authorization required; one renewal at a time
//!   across the processes sharing a store) and `http`.
//!   [`OAuthConfig`](config::OAuthConfig) is in [`config`].
//! - [`protocol`] (pure): [`jsonrpc`](protocol::jsonrpc) messages,
//!   [`response`](protocol::response) a response's result kept as its text until its caller
//!   parses it (and the response lines recognized by their fixed parts),
//!   [`tool_result`](protocol::tool_result) a tool call's result parsed in one pass,
//!   [`codec`](protocol::codec) bounded line framing, [`sse`](protocol::sse) bounded
//!   Server-Sent Events parsing, [`lifecycle`](protocol::lifecycle) the handshake (the seam for
//!   future protocol revisions), [`pagination`](protocol::pagination) the bounded walk of a
//!   list's cursors, [`as_sent`](protocol::as_sent) a server's object kept whole beside its
//!   rmcp type ([`ListedTool`], [`TaskSupport`]), [`pages`](protocol::pages) the pages of the
//!   list calls, [`text`](protocol::text) escaping and bounding server text; and for the
//!   stateless 2026-07-28 revision [`era`](protocol::era) (which era, and what a probe's answer
//!   means), [`discover`](protocol::discover), [`meta`](protocol::meta) (every request's
//!   `_meta`), [`mrtr`](protocol::mrtr) (results that ask for input),
//!   [`tasks`](protocol::tasks) (the Tasks extension on the wire: a task read out of a result,
//!   its requests) and [`headers`](protocol::headers) (its HTTP headers and `x-mcp-header`).
//! - [`policy`] (pure): [`backoff`](policy::backoff), [`retry`](policy::retry) (may an
//!   in-flight call be re-sent?), and [`state`](policy::state), the connection state machine
//!   that makes every connect/retry/give-up decision: its vocabulary (`ServerState`, `Event`,
//!   `Action`, `MachinePolicy`) apart from `machine`, which holds every transition;
//!   [`task_poll`](policy::task_poll) (when to ask a task next); `deadline`, the one place
//!   instants are computed (saturating: `Duration::MAX` means "never").
//! - `postgres` (feature `postgres`): what the PostgreSQL stores of tasks and tokens share:
//!   the target and its bounds, TLS when it says `sslmode=require`, one connection on a
//!   thread of its own reconnected with backoff, and versioned migrations under an advisory
//!   lock.
//! - [`skills`] (pure): the Skills extension (SEP-2640): a skill's entry and its checks, the
//!   verification of what is read against it (size, SHA-256 digest, and the `SKILL.md`'s
//!   frontmatter, parsed as YAML in [`frontmatter`](skills::frontmatter)); the messages that
//!   list, get, load and read skills are in [`messages`](actor::messages).
//! - [`tasks`] (ground: nothing from `session`, `actor` or `transport`): what names a task
//!   (`handle`, [`TaskHandle`]) and the durable store of the MCP Tasks extension, so that a
//!   task's polling resumes after a reconnect or a restart and its outcome is delivered once.
//!   `record` ([`TaskRecord`](tasks::TaskRecord), its
//!   status, key and updates, the bounds of what is kept, the arguments' digest), `store` (the
//!   [`TaskStore`](tasks::TaskStore) trait with its rules and error, and
//!   [`MemoryTaskStore`](tasks::MemoryTaskStore)), `sqlite` (feature `sqlite`:
//!   `SqliteTaskStore`, one transaction per method, WAL, a versioned schema), `postgres`
//!   (feature `postgres`: `PostgresTaskStore`, the store replicas share: row locks, leases
//!   taken over with `SKIP LOCKED`, news of ends by `LISTEN`/`NOTIFY`, its versioned schema,
//!   on the crate's `postgres` connection), and `tests`, the one suite every store
//!   passes.
//! - [`telemetry`]: the `metrics` feature's hooks (no-ops without it): every metric and its
//!   labels in one table.
//! - `transport` (IO only): `stdio`, the child process (spawning, environment, stderr
//!   capture, process-group shutdown; its `reader` of stdout, which never waits for stdin, and
//!   its `writer` of stdin, whose one shared buffer takes every request as it is serialized
//!   and counts the answers that wait in it), `backlog` (the answers owed to a server that
//!   wait to go out, and their bound, for both transports), `process_tree` (the descendants
//!   that left the group, read from `/proc`, so that they are stopped too: `tree` one reading
//!   of it, `walk` the walks shared by the servers stopped at once), and `http`,
//!   Streamable HTTP and the legacy HTTP+SSE transport over awc:
//!   `client` (the awc client and its TLS config), `request` (every request with its headers,
//!   and the session id they carry), `send` (one POST per message, requests concurrent and
//!   abortable), `answer` (what an answer's status means), `authorize` (a 401/403 handed to the
//!   OAuth provider, and the one re-send), `stream` (SSE answers and their
//!   resumption with `Last-Event-ID`), `listen` (the GET stream), `legacy` (the HTTP+SSE
//!   transport of 2024-11-05: its one SSE stream and `endpoint` event, the POSTs going through
//!   `send` and `answer`); its `mod.rs` holds `connect`, `connect_sse` and the handle that
//!   DELETEs the session on shutdown. Both transports hand the actor the
//!   same event stream; the session writes through their `Link`. `memory` (tests only): an
//!   in-memory transport whose other end a test plays.
//! - `session` (sans-IO, no actix, tokio, sockets or processes): one server's calls and
//!   connection as a plain struct driven by events and a clock, which says what to do through
//!   commands and one timer — everything a call's life decides is here, tested with a fake
//!   clock in both eras. `mod.rs` the `Session` (inputs, commands, the state machine's
//!   actions, what comes from the server); `calls` the call table (ids, the waiting queue,
//!   writing and re-writing, answers, input rounds); `entry` one call and where its answer
//!   goes; `request` its params, serialized once; `outcome` THE decision for a call the server
//!   will not answer (re-send, `outcome_unknown`, `unavailable`, `stopped`); `timers` the one
//!   timer table; `wire` a request shaped for its connection's era; `era` the discovery cache
//!   and the era memory; `liveness` when a silent server counts as gone; `listen` the
//!   2026-07-28 listen stream; `tools` the tool cache and its refresh; `tasks` the calls the
//!   server runs as tasks (the task table: polls, input keys, who waits, outcomes nobody took)
//!   and the session's polls and updates; `handover` what a replaced generation hands to the
//!   next (the calls waiting for a connection, the tasks); `lease` which replica polls which
//!   task when replicas share a task store (no poll once the leases may have lapsed; what
//!   the driver's tending of the leases brings); `status` and `events` what status
//!   queries and subscribers are told.
//! - [`actor`]: [`messages`](actor::messages) (the typed calls in its `typed`; the skill
//!   loading in its `skills`; the explicit task handles, `StartTask` and friends, in its
//!   `tasks`),
//!   [`server`](actor::server) (the [`ServerActor`], the session's driver: it feeds the session
//!   what its mailbox and transport bring and carries out its commands; its message handlers in
//!   `handlers`; its side of the task store in `task_store`: the writes, the tasks taken back
//!   at start, the tending of leases), `connect` (one connection attempt: spawn, negotiate the era — over HTTP, in
//!   its `opening`, fall back to the legacy HTTP+SSE transport —, handshake, tool list,
//!   re-subscribe), `reply` (a caller's reply channel as the session's `Reply`, the
//!   result parsed into the caller's type), [`supervisor`](actor::supervisor) (with the
//!   make-before-break replacement of a server: `Restart`, `ReplaceServer`) and `routing`
//!   (its forwarding of calls, with no task per call), `server_requests` (requests the server
//!   sends us, bounded), `fanout` (events to subscribers through bounded queues) and `gone`
//!   (the notice the supervisor gets when an actor is dropped, panics included).
//! - `serialize` (feature `serde`): the serde forms of statuses, states, counters, events,
//!   error kinds and errors (`ErrorView`), one file each, durations and instants as
//!   milliseconds.
//! - `web` (feature `actix-web`): `response` (the error as an actix-web `ResponseError`),
//!   `scope` (`status_scope`: `/status`, `/status/events`, `/status/page`), `visibility` (who
//!   sees everything: by default a request from this machine) and `redacted` (what everyone
//!   else sees), `events` (the bounded Server-Sent Events stream) and `page` (the operators'
//!   HTML page and its script).
//! - `watch` (feature `watch`): `ConfigWatcher`, an `mcpServers` file watched with `notify`
//!   and each change applied with [`Reload`] (a file that cannot be read is never applied).
//! - `client`: [`McpClient`], the supervisor from any async Rust: a `Clone + Send + Sync`
//!   handle with async methods that runs the supervisor on an actix system of its own thread
//!   (or on the caller's), and [`EventStream`], its events as a stream.
//! - [`model`]: `rmcp::model`, the MCP schema types, re-exported.
//!
//! Beside the library:
//!
//! - The binary `mcp-demo-server` (`src/bin/mcp-demo-server/`) is an MCP server with fault
//!   switches, used by the tests and the quickstart example (which compiles it in as a
//!   module): its MCP plumbing (`server`, `jsonrpc`, `out`, `lifecycle`, `pagination`,
//!   `resources`) apart from `tools/` and from `faults`, every env-driven misbehaviour in one
//!   room. `mcp-echo-server` is the benchmark's minimal server.
//! - The binary `mcpctl` (`src/bin/mcpctl/`, the `cli` feature), a command-line client:
//!   `cli` (the clap commands), `action` (the command resolved), `source` (the servers, from a
//!   file or the command line), `session`, `progress` (spinners), `commands` and `features`
//!   (one method per command), `tasks` (the task store every command passes the supervisor,
//!   `call --task` and the `tasks` commands), `output` and `json` (for people, for scripts)
//!   and `event_printer`.
//! - `benches/overhead/` (`cargo bench --bench overhead`): one module per measured thing
//!   (`stdio/` with one file per client, `http`, `recovery`, `scale`, `herd`,
//!   `replacement`, `tasks`) and shared
//!   helpers for load, statistics, `/proc` figures and the report.
//! - `fuzz/`: cargo-fuzz targets for the parsers; their checks also run in `cargo test`.
//! - `tests/`: the integration tests, in five binaries: `it` (every in-tree suite, one module
//!   each), `interop`, `soak`, `browser` and `mcpctl`, with their shared helpers in `common/`
//!   (among them the in-tree Streamable HTTP, legacy SSE and OAuth test servers).

#![warn(missing_docs)]

#[cfg(not(any(feature = "stdio", feature = "http")))]
compile_error!("mcp-supervisor needs at least one transport: enable the `stdio` or `http` feature (both are default)");

pub mod actor;
#[cfg(feature = "http")]
pub mod auth;
mod client;
pub mod config;
pub mod error;
pub mod policy;
#[cfg(feature = "postgres")]
mod postgres;
pub mod protocol;
#[cfg(feature = "serde")]
pub mod serialize;
pub(crate) mod session;
pub mod skills;
pub mod tasks;
pub mod telemetry;
pub(crate) mod transport;
#[cfg(feature = "watch")]
pub mod watch;
#[cfg(feature = "actix-web")]
pub mod web;

/// The MCP schema types (`Tool`, `CallToolResult`, `Content`, `ServerCapabilities`, ...) the
/// API speaks, from the official Rust SDK: `mcp_supervisor::model::CallToolResult` needs no
/// `rmcp` dependency of your own.
pub use rmcp::model;

pub use actor::messages::{
    AddServer, Call, CallOptions, CallTool, GetPrompt, GetSkill, GetStatus, ListPrompts,
    ListResourceTemplates, ListResources, ListSkills, ListTools, LoadSkill, Ping, Progress,
    ReadResource, ReadSkillFile, Reconnect, Reload, ReloadOutcome, ReloadReport, RemoveServer,
    ReplaceServer, Restart, ServerEvent, ServerRequest, SetRequestHandler, Shutdown, Subscribe,
    SubscribeEvents, TypedCall, Unsubscribe, DEFAULT_DRAIN_TIMEOUT,
};
pub use actor::messages::{
    AwaitTask, CancelTask, GetTask, ListTasks, StartTask, TaskInfo, TaskStart,
};
pub use actor::server::{InjectPanic, ServerActor};
pub use actor::status::{Counters, ServerStatus};
pub use actor::supervisor::{GetServer, Supervisor, SupervisorBuilder};
pub use client::{EventStream, McpClient};
pub use config::{HttpMode, LoadOptions, Loaded, ServerConfig, Settings, StdioConfig, Transport};
pub use error::{Error, ErrorKind};
pub use policy::backoff::Backoff;
pub use policy::retry::RetryPolicy;
pub use policy::state::ServerState;
pub use protocol::as_sent::{
    AsSent, ListedPrompt, ListedResource, ListedResourceTemplate, ListedTool, SentCapabilities,
    SentImplementation, TaskSupport,
};
pub use protocol::jsonrpc::RpcError;
pub use protocol::pages::{PromptsPage, ResourceTemplatesPage, ResourcesPage, ToolsPage};
#[cfg(feature = "serde")]
pub use serialize::ErrorView;
pub use tasks::{TaskHandle, TaskStatus};

/// The README's examples, compiled as doc tests so that they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The examples of the chapters in `docs/`, compiled as doc tests too (their links are checked
/// by the `docs` suite of `tests/it`).
#[cfg(doctest)]
pub mod docs_doctests {
    #[doc = include_str!("../docs/calls.md")]
    pub struct Calls;
    #[doc = include_str!("../docs/configuration.md")]
    pub struct Configuration;
    #[doc = include_str!("../docs/http-and-oauth.md")]
    pub struct HttpAndOauth;
    #[doc = include_str!("../docs/protocol-revisions.md")]
    pub struct ProtocolRevisions;
    #[doc = include_str!("../docs/operations.md")]
    pub struct Operations;
    #[doc = include_str!("../docs/mcpctl.md")]
    pub struct Mcpctl;
    #[doc = include_str!("../docs/performance.md")]
    pub struct Performance;
    #[doc = include_str!("../docs/development.md")]
    pub struct Development;
    #[cfg(feature = "postgres")]
    #[doc = include_str!("../docs/fleet.md")]
    pub struct Fleet;
}
