//! The command line: mcpctl's commands and their options, parsed by clap's derive API.
//!
//! Its own room so that what mcpctl accepts reads in one place: each subcommand is a variant of
//! [`Command`] with its own options, and every value is checked while parsing (durations, the
//! tool's JSON arguments, `--repeat`), so a bad one is a usage error (exit code 2, clap's) before
//! any server starts. The doc comments here are the `--help` texts; the subcommands' keep their
//! line breaks (clap, without its `wrap_help` feature, would not wrap them).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::{Map, Value};

const AFTER_HELP: &str = "\
Durations take ms or s: 200ms, 5s, 1.5s.
Exit codes: 0 ok, 1 a server not ready or a call failed, 2 bad usage or configuration,
130 interrupted.";

/// mcpctl: look at and exercise the MCP servers of an mcpServers file
#[derive(Debug, Parser)]
#[command(name = "mcpctl", version, after_help = AFTER_HELP)]
pub(crate) struct Cli {
    /// The mcpServers file
    #[arg(long, global = true, value_name = "PATH", default_value = "mcp.json")]
    pub(crate) config: PathBuf,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Connect to every server, wait until each is ready or failed, print a table
    ///
    /// Connects to every server in parallel, waits until each is Ready or Failed (at most
    /// --wait), prints a table and shuts down. Exits with 1 if a server is not Ready.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Status(WaitArgs),

    /// The cached tool lists with their annotation hints
    ///
    /// The cached tool lists, by server, with the hints their annotations declare (read-only,
    /// destructive or non-destructive, idempotent, open-world; - for none). Exits with 1 if a
    /// server is not Ready.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Tools {
        /// Only this server: the only one started
        server: Option<String>,

        #[command(flatten)]
        wait: WaitArgs,
    },

    /// Run a tool with JSON arguments (an object; default {})
    ///
    /// Runs a tool and prints each outcome: the result's text, `tool error: <text>` for a
    /// result with isError, or `error <kind>: <message>`. Only SERVER is started. Exits with 1
    /// if a call failed or returned a tool error.
    ///
    /// With --json, one object per line, for scripts:
    /// {"seq":1,"ok":true,"ms":12,"result":{...}} (the tools/call result as the server sent it)
    /// or {"seq":2,"ok":false,"ms":1000,"error":{"kind":"timeout","message":"..."}}.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Call(CallArgs),

    /// Print state changes and notifications until Ctrl-C
    ///
    /// Stays connected and prints every state change (with its message), tool-list change,
    /// resource update, log message and other notification, with the UTC time, until Ctrl-C
    /// (then exits with 0).
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Watch,
}

/// `--wait`, for the commands that report on servers once they have settled.
#[derive(Debug, Args)]
pub(crate) struct WaitArgs {
    /// How long to wait for the servers
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub(crate) wait: Duration,
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The server that has the tool
    pub(crate) server: String,

    /// The tool's name
    pub(crate) tool: String,

    /// The tool's arguments, a JSON object
    #[arg(value_name = "JSON", default_value = "{}", value_parser = parse_arguments)]
    pub(crate) arguments: Map<String, Value>,

    /// The deadline of each call
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_timeout)]
    pub(crate) timeout: Duration,

    /// Make the call N times
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_repeat)]
    pub(crate) repeat: u32,

    /// Pause between repeated calls
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub(crate) interval: Duration,

    /// One JSON object per outcome, for scripts
    #[arg(long)]
    pub(crate) json: bool,
}

impl Command {
    /// The one server the command is about, if it names one.
    pub(crate) fn server(&self) -> Option<&str> {
        match self {
            Command::Tools { server, .. } => server.as_deref(),
            Command::Call(call) => Some(&call.server),
            Command::Status(_) | Command::Watch => None,
        }
    }
}

fn parse_arguments(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("the tool's arguments must be a JSON object".into()),
        Err(e) => Err(format!("the tool's arguments are not valid JSON: {e}")),
    }
}

/// A duration, and more than zero: a call with no time at all could only time out.
fn parse_timeout(text: &str) -> Result<Duration, String> {
    let timeout = parse_duration(text)?;
    if timeout.is_zero() {
        return Err("must be more than 0".into());
    }
    Ok(timeout)
}

fn parse_repeat(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("expected a whole number of at least 1".into()),
    }
}

/// `200ms`, `5s`, `1.5s`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else {
        return Err("expected a duration ending in `ms` or `s`, e.g. 200ms or 1.5s".into());
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{number}` is not a number"))?;
    if !value.is_finite() || value < 0.0 {
        return Err("expected a positive duration".into());
    }
    Duration::try_from_secs_f64(value * unit).map_err(|e| e.to_string())
}
