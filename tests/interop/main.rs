//! The interop suite: the runtime against pinned third-party MCP servers that `.ci/interop`
//! installs beside this file (npm packages into `node_modules/`, the Python SDK and
//! `mcp-server-time` into `.venv/`). Every test is `#[ignore]`d in a plain `cargo test`;
//! `.ci/interop` runs them with `--ignored` and prints the table of figures they record.
//!
//! - `scenarios`: the numbered rows, in the session era (kills, stalls, slow and crashing
//!   start-ups, shutdown, the reference servers, the Python SDK server).
//! - `memory`: row 7, garbage and a 64 MiB line on stdout; its peak RSS is measured in a
//!   process of its own (`common::alone`).
//! - `legacy_sse`: the legacy HTTP+SSE transport (2024-11-05) against the TypeScript SDK v1's
//!   `SSEServerTransport` (`sse_server.mjs`): kill -9 and restart, configured and found by
//!   `auto` (rows marked S).
//! - `modern`: the 2026-07-28 revision beside the session era (rows marked M), with the
//!   TypeScript and Python SDK servers and `mcp-server-time`.
//! - `tasks`: the Tasks extension (rows marked T) against a task server on the TypeScript SDK v2
//!   with `@modelcontextprotocol/ext-tasks` (`tasks_ts_server.mjs`) and one on `fastmcp-tasks`
//!   (`tasks_py_server.py`): a task to its end, input, cancel, and a kill -9 of the server and
//!   of the client process.
//!
//! One process runs them all: logs are captured per test (`common::logs`), never by a global
//! subscriber.

#[path = "../common/mod.rs"]
mod common;

mod legacy_sse;
mod memory;
mod modern;
mod scenarios;
mod tasks;
