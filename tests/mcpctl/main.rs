//! `mcpctl`, the `cli` feature's binary, run as a user runs it: `commands` against the demo
//! server and the in-tree HTTP test server (every command, `--json`, exit codes, spinners), and
//! `login` against the in-tree authorization server (`common::oauth_server`), and `tasks`
//! (`call --task`, `tasks list`, `show`, `wait`, `cancel`) against the demo server's `long_job`.
//! Needs the binary, so the target requires `--features cli`.

#[path = "../common/mod.rs"]
mod common;

mod commands;
mod login;
mod tasks;

use std::path::PathBuf;

/// mcpctl, run with a config directory of the tests' own (`XDG_CONFIG_HOME`, in Cargo's
/// temporary directory for tests), so that no test reads or writes the user's tokens or tasks.
fn mcpctl_command() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mcpctl"));
    command.env("XDG_CONFIG_HOME", config_home());
    command
}

/// The tests' `XDG_CONFIG_HOME`: mcpctl keeps its task store (and tokens) in `mcpctl/` there.
fn config_home() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcpctl-config")
}
