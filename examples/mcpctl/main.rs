//! `mcpctl`: look at and exercise the MCP servers of an `mcpServers` file through the supervisor.
//!
//! ```text
//! cargo run --example mcpctl -- [--config PATH] <command> [options]
//!
//! status [--wait 30s]        connect to every server (in parallel), wait until each is Ready or
//!                            Failed, print a table, shut down
//! tools [SERVER] [--wait 30s]
//!                            the cached tool lists with their annotation hints, by server
//! call SERVER TOOL [JSON] [--timeout 30s] [--repeat 1] [--interval 1s] [--json]
//!                            run a tool (JSON: its arguments, an object; default {}) and print
//!                            each outcome; with --json, one JSON object per line
//! watch                      print every state change and notification, with a UTC time,
//!                            until Ctrl-C
//! ```
//!
//! `--config` defaults to `mcp.json` in the current directory and may stand before or after the
//! command; a command's own options follow it. `mcpctl --help`, `mcpctl <command> --help` and
//! `mcpctl --version` tell the rest. `tools SERVER` and `call` start only the server they name.
//! Durations take `ms` or `s` (`200ms`, `5s`, `1.5s`).
//!
//! `call --json` prints, for each call, `{"seq":1,"ok":true,"ms":12,"result":{...}}` (the
//! `tools/call` result as the server sent it; a tool that reports an error has
//! `"isError":true`) or `{"seq":2,"ok":false,"ms":1000,"error":{"kind":"timeout","message":"..."}}`
//! (`kind` is [`mcp_supervisor::Error::code`]).
//!
//! Exit codes: 0 success; 1 a server was not Ready (`status`, `tools`) or a call failed or
//! returned a tool error (`call`); 2 bad usage or an invalid configuration; 130 interrupted by
//! Ctrl-C (`watch` ends with 0). Ctrl-C always shuts the servers down cleanly first; a second
//! Ctrl-C stops waiting for them.
//!
//! Set `RUST_LOG` (e.g. `RUST_LOG=mcp_supervisor=debug`) to see the supervisor's logs on stderr.
//!
//! # Layout
//!
//! - `main.rs`: parse, read the configuration, run the command on an actix system.
//! - `cli.rs`: the commands and options (clap), with their value checks and help texts.
//! - `session.rs`: the supervisor's lifecycle around a command: start, settle, Ctrl-C, shutdown.
//! - `commands.rs`: one method per command, and the exit code its outcome earns.
//! - `output.rs`: the status table, tool lists and call lines (human and JSON).
//! - `event_printer.rs`: one line per supervisor event, for `watch`.

mod cli;
mod commands;
mod event_printer;
mod output;
mod session;

use std::io::IsTerminal;
use std::process::ExitCode;

use actix::System;
use clap::Parser;
use mcp_supervisor::ServerConfig;

use crate::cli::Cli;

const EXIT_OK: u8 = 0;
const EXIT_FAILED: u8 = 1;
/// Also clap's code for a command line it rejects.
const EXIT_USAGE: u8 = 2;
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    // A bad command line ends here, with clap's message and exit code 2.
    let cli = Cli::parse();
    init_tracing();
    let servers = match load_servers(&cli) {
        Ok(servers) => servers,
        Err(message) => {
            eprintln!("mcpctl: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let system = System::new();
    let code = system.block_on(session::run(cli.command, servers));
    // Dropping the system (not `process::exit`) lets anything still running clean up.
    drop(system);
    ExitCode::from(code)
}

fn init_tracing() {
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .init();
    }
}

/// Reads the configuration; for a command about one server, keeps only that one.
fn load_servers(cli: &Cli) -> Result<Vec<ServerConfig>, String> {
    let servers = ServerConfig::from_mcp_servers_file(&cli.config).map_err(|e| e.to_string())?;
    let path = cli.config.display();
    if servers.is_empty() {
        return Err(format!("{path} configures no (enabled) servers"));
    }
    let Some(name) = cli.command.server() else {
        return Ok(servers);
    };
    let names: Vec<&str> = servers.iter().map(ServerConfig::name).collect();
    let names = names.join(", ");
    match servers.iter().find(|s| s.name() == name) {
        Some(server) => Ok(vec![server.clone()]),
        None => Err(format!(
            "no server named `{name}` in {path} (it has: {names})"
        )),
    }
}
