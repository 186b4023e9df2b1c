//! Tasks (the Tasks extension of 2026-07-28) end to end: a `tools/call` the server runs as a
//! task, answered with its end; the explicit handles; a task the server forgot. `http` against
//! the in-tree Streamable HTTP server (`job`).

#[cfg(feature = "sqlite")]
mod durable;
mod http;
mod notified;
mod session_era;
mod stdio;
