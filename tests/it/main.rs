//! Every in-tree integration test, in one test binary: linking the crate once instead of once
//! per suite is what keeps `cargo test` quick to build. One module per suite; the helpers they
//! share are `common` (`tests/common/`).
//!
//! The tests run side by side in one process, so none of them may change what the others see:
//!
//! - Logs are captured per test, on its own thread (`common::logs`): an `#[actix::test]` runs
//!   the supervisor, its actors and transports on the test's thread. No test installs a global
//!   `tracing` subscriber.
//! - The `metrics` test records through `metrics::with_local_recorder`, not a global recorder.
//! - No test sets environment variables or the current directory of the process: a child gets
//!   what it needs through its `ServerConfig`.
//! - A figure of the whole process (RSS) is measured in a process of its own
//!   (`common::alone`), where no other test runs.
//! - A process that a test kills (`task_store`: SIGKILL in the middle of writing the task
//!   store) is this binary started again with only that test, never the test's own process.
//!
//! Outside this binary, in targets of their own: `tests/interop/` (third-party servers that
//! `.ci/interop` installs), `tests/soak/` (the randomized fault soak), `tests/browser.rs` (the
//! status page in Chromium, `.ci/browser`) and `tests/mcpctl/` (the `cli` feature's binary).

#[path = "../common/mod.rs"]
mod common;

mod any_runtime;
mod bounded_memory;
mod demo_server_eras;
mod docs;
mod eras;
#[cfg(feature = "postgres")]
mod fleet;
mod hostile;
mod http;
mod http_server_eras;
#[cfg(feature = "metrics")]
mod metrics;
mod oauth;
mod parser_properties;
mod replace;
mod runtime;
mod skills;
mod sse;
mod startup_warnings;
mod stdio_faults;
#[cfg(feature = "sqlite")]
mod task_store;
mod tasks;
mod tool_results;
mod tracing_spans;
#[cfg(feature = "actix-web")]
mod web;
