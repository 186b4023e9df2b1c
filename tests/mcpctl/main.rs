//! `mcpctl`, the `cli` feature's binary, run as a user runs it: `commands` against the demo
//! server and the in-tree HTTP test server (every command, `--json`, exit codes, spinners), and
//! `login` against the in-tree authorization server (`common::oauth_server`). Needs the binary,
//! so the target requires `--features cli`.

#[path = "../common/mod.rs"]
mod common;

mod commands;
mod login;
