//! The hostile-server suite: servers that misbehave on purpose (the scriptable
//! `mcp-hostile-server` over stdio, the in-tree HTTP test server's fault switches), and API
//! misuse. Each module is one family of hostile behaviour; every case checks that the runtime
//! keeps its promises: one right answer per call by its deadline, no panic, no unbounded loop or
//! memory, and server text that cannot forge our logs. (Cases that measure memory are in
//! `bounded_memory`, each in a process of its own.)

mod handshake;
mod http;
mod ids;
mod lists;
mod lookalikes;
mod misuse;
mod revival;
mod server_requests;
mod server_text;
mod settings;
mod soak_findings;
mod stdin_backlog;
mod stdio_process;
