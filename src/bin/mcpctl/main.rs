//! `mcpctl`: look at and exercise MCP servers through the supervisor, those of an `mcpServers`
//! file or one given on the command line. Built with the `cli` feature:
//! `cargo install mcp-supervisor --features cli` (or `--path .` in a checkout).
//!
//! ```text
//! mcpctl [--config PATH [--input ID=V]... | --stdio | --http URL [--header 'K: V']...] [--json]
//!        <command> [-- COMMAND ARGS...]
//!
//! status [SERVER] [--wait 30s]     every server's state, era, protocol version, server name and
//!                                  version and tools; in full why one is not Ready
//! tools [SERVER]                   the cached tool lists with their annotation hints
//! call [SERVER] TOOL [ARGS...]     run a tool; ARGS: one JSON object, or KEY=VALUE words typed
//!      [--timeout 30s] [--repeat 1] by the tool's input schema (default none)
//!      [--interval 1s]
//! resources [SERVER]               every page of resources/list
//! templates [SERVER]               every page of resources/templates/list
//! read [SERVER] URI                resources/read
//! prompts [SERVER]                 every page of prompts/list, with the prompts' arguments
//! prompt [SERVER] NAME [K=V...]    prompts/get
//! watch                            every state change and notification, until Ctrl-C
//! login [SERVER] [--no-browser]    OAuth in the browser; the tokens kept in --token-store
//! tasks list [SERVER]              the tasks in --task-store: id, server, tool, status, age
//! tasks show|wait|cancel           ask the server how a task does, wait for its end (as long
//!       [SERVER] TASK_ID           as --timeout), or cancel it; `call --task` starts one
//! completions SHELL                a completion script for bash, zsh, fish, elvish, powershell
//! ```
//!
//! `--config` defaults to `mcp.json` in the current directory; the file is read with
//! [`mcp_supervisor::LoadOptions`]: entries it cannot load are reported (and are rows of
//! `status`), the valid ones are used; `--input ID=VALUE` gives the value of VS Code's
//! `${input:ID}` (mcpctl does not prompt); the working directory is the project whose servers
//! Claude Code's `~/.claude.json` keeps under `projects`. `--stdio -- npx -y pkg` or `--http URL` give one server
//! instead, named after its command or host (`--name` to choose), and SERVER is then left out.
//! The global options may stand before or after the command. `mcpctl --help`,
//! `mcpctl <command> --help` and `mcpctl --version` tell the rest. Commands about one server
//! start only that one.
//!
//! `--json` prints one JSON object per line on stdout for every command (see `json.rs`);
//! messages for people go to stderr.
//!
//! Exit codes: 0 success; 1 a server was not Ready (`status`, `tools`, `resources`, `prompts`;
//! for `status` also an invalid entry) or a request failed or a tool returned an error; 2 bad
//! usage or an invalid configuration; 130 interrupted by Ctrl-C (`watch` ends with 0). Ctrl-C
//! always shuts the servers down cleanly first; a second Ctrl-C stops waiting for them. When
//! stdout's reader goes away early (`mcpctl tools | head -2`), the command stops, the servers
//! are shut down the same way, and the exit code is 0, or the command's own if it had finished
//! (see `stdout.rs`).
//!
//! Set `RUST_LOG` (e.g. `RUST_LOG=mcp_supervisor=debug`) to see the supervisor's logs on stderr.
//!
//! # Layout
//!
//! - `main.rs`: parse, find the servers, run the command on an actix system.
//! - `cli.rs`: the commands and options (clap), with their value checks and help texts.
//! - `action.rs`: the command resolved against where the servers come from.
//! - `arguments.rs`: `call`'s arguments, one JSON object or `KEY=VALUE` words typed by the
//!   tool's input schema.
//! - `source.rs`: the servers, from the file (partial load) or from the command line.
//! - `session.rs`: the supervisor's lifecycle around a command: start, settle, Ctrl-C, shutdown.
//! - `progress.rs`: the spinners of a long wait, on a terminal only.
//! - `commands.rs`: one method per command, and the exit code its outcome earns.
//! - `features.rs`: the resources, resource templates and prompts commands.
//! - `output.rs`: the status table, tool lists and call lines for people; `json.rs`: for scripts.
//! - `stdout.rs`: every line printed on stdout (`out!`), and a reader that goes away early.
//! - `event_printer.rs`: one line per supervisor event, for `watch`.
//! - `login.rs`: the token file every command uses, and `login`'s browser and loopback callback.
//! - `tasks.rs`: the task store every command passes the supervisor, `call --task` and the
//!   `tasks` commands.

/// `println!` for stdout, that ends mcpctl quietly when the reader goes away (see `stdout.rs`).
macro_rules! out {
    () => {
        $crate::stdout::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::stdout::line(format_args!($($arg)*))
    };
}

mod action;
mod arguments;
mod cli;
mod commands;
mod event_printer;
mod features;
mod json;
mod login;
mod output;
mod progress;
mod session;
mod source;
mod stdout;
mod tasks;

use std::io::IsTerminal;
use std::process::ExitCode;

use actix::System;
use clap::{CommandFactory, Parser};

use crate::action::{Action, TaskAction};
use crate::cli::{Cli, Command};
use crate::source::Servers;
use crate::tasks::TaskContext;

const EXIT_OK: u8 = 0;
const EXIT_FAILED: u8 = 1;
/// Also clap's code for a command line it rejects.
const EXIT_USAGE: u8 = 2;
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    // A bad command line ends here, with clap's message and exit code 2.
    let cli = Cli::parse();
    if let Command::Completions { shell } = cli.command {
        // Into memory first: clap_complete panics when a write fails.
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "mcpctl", &mut script);
        stdout::write_all(&script);
        return ExitCode::from(stdout::exit_code(EXIT_OK, false));
    }
    init_tracing();
    let (action, servers, tasks) = match plan(cli.source, cli.command) {
        Ok(Plan::Store { server, store }) => {
            let code = tasks::list(&store, server.as_deref(), cli.json);
            return ExitCode::from(stdout::exit_code(code, false));
        }
        Ok(Plan::Run {
            action,
            servers,
            tasks,
        }) => (action, servers, tasks),
        Err(Problem::Usage(message)) => {
            // clap's format and exit code, for what clap alone could not check.
            Cli::command()
                .error(clap::error::ErrorKind::ArgumentConflict, message)
                .exit()
        }
        Err(Problem::Config(message)) => {
            eprintln!("mcpctl: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let system = System::new();
    let code = system.block_on(session::run(action, servers, cli.json, tasks));
    // Dropping the system (not `process::exit`) lets anything still running clean up.
    drop(system);
    ExitCode::from(code)
}

/// Why mcpctl cannot start: a command line that does not fit together, or a configuration.
enum Problem {
    Usage(String),
    Config(String),
}

/// What to do: run a command with the servers, or read the task store alone (`tasks list`).
/// One value, made once: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Plan {
    Run {
        action: Action,
        servers: Servers,
        tasks: TaskContext,
    },
    Store {
        server: Option<String>,
        store: std::sync::Arc<mcp_supervisor::tasks::SqliteTaskStore>,
    },
}

/// The command resolved and the servers it may start: the one given on the command line, or
/// those of the file (only the one the command names, if it names one), and the task store.
/// The file's invalid entries are reported on stderr here, except for `status`, which shows
/// them as rows.
fn plan(source: cli::SourceArgs, command: Command) -> Result<Plan, Problem> {
    let single = source::single_server(&source, command.stdio_command()).map_err(Problem::Usage)?;
    let again = tasks::Again::new(&source, command.stdio_command());
    let login = match &command {
        Command::Login { no_browser, .. } => Some(!no_browser),
        _ => None,
    };
    let token_store = login::store_path(source.token_store.clone());
    let action =
        Action::resolve(command, single.as_ref().map(|s| s.name())).map_err(Problem::Usage)?;
    // The commands about tasks cannot do without the store; the others can.
    let needed = matches!(action, Action::Tasks(_) | Action::Call { task: true, .. });
    let store = tasks::open(tasks::store_path(source.task_store.clone()), needed)
        .map_err(Problem::Config)?;
    if let (Action::Tasks(TaskAction::List { server }), Some(store)) = (&action, &store) {
        return Ok(Plan::Store {
            server: server.clone(),
            store: store.clone(),
        });
    }
    let servers = match single {
        Some(server) => Servers::single(server),
        None => {
            source::load_file(source.config.as_deref(), &source.input).map_err(Problem::Config)?
        }
    };
    let mut servers = match action.server() {
        Some(name) => servers.only(name).map_err(Problem::Config)?,
        None => servers,
    };
    servers.configs =
        login::attach(servers.configs, token_store, login).map_err(Problem::Config)?;
    let status = matches!(action, Action::Status { .. });
    if !status || servers.configs.is_empty() {
        for e in &servers.invalid {
            eprintln!("mcpctl: skipped: {e}");
        }
    }
    if servers.configs.is_empty() {
        return Err(Problem::Config("no valid server to start".into()));
    }
    Ok(Plan::Run {
        action,
        servers,
        tasks: TaskContext { store, again },
    })
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
