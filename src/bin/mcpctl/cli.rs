//! The command line: mcpctl's commands and their options, parsed by clap's derive API.
//!
//! Its own room so that what mcpctl accepts reads in one place: each subcommand is a variant of
//! [`Command`] with its own options, and every value clap can check alone is checked while
//! parsing (durations, `--repeat`, `--header`, `--env`), so a bad one is a usage error (exit
//! code 2, clap's) before any server starts. What depends on where the servers come from (a
//! config file, or one server given with `--stdio`/`--http`) is resolved in `action.rs`. The
//! doc comments here are the `--help` texts; the subcommands' keep their line breaks (clap,
//! without its `wrap_help` feature, would not wrap them).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use clap_complete::Shell;

const AFTER_HELP: &str = "\
Servers come from an mcpServers file (--config, default mcp.json; --input ID=VALUE for its
${input:ID}), or one server is given on the command line: --stdio -- COMMAND [ARGS...] or
--http URL [--header 'Name: value'].
SERVER is left out when the server is given on the command line.
Durations take ms or s: 200ms, 5s, 1.5s.
Exit codes: 0 ok (also when stdout's reader goes away early, as with | head), 1 a server not
ready or a call failed, 2 bad usage or configuration, 130 interrupted.";

/// mcpctl: look at and exercise MCP servers, those of an mcpServers file or one given here
#[derive(Debug, Parser)]
#[command(name = "mcpctl", version, after_help = AFTER_HELP)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) source: SourceArgs,

    /// One JSON object per line on stdout, for scripts
    #[arg(long, global = true)]
    pub(crate) json: bool,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Where the servers come from. Global, so they may stand before or after the command.
#[derive(Debug, Args)]
pub(crate) struct SourceArgs {
    /// The mcpServers file [default: mcp.json]
    #[arg(long, global = true, value_name = "PATH", conflicts_with_all = ["stdio", "http"])]
    pub(crate) config: Option<PathBuf>,

    /// One stdio server, instead of a file: its command and arguments follow `--`
    #[arg(long, global = true, conflicts_with = "http")]
    pub(crate) stdio: bool,

    /// One Streamable HTTP server, instead of a file
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) http: Option<String>,

    /// A header sent to the --http server, `Name: value` (repeatable)
    #[arg(long, global = true, value_name = "NAME:VALUE", value_parser = parse_header)]
    pub(crate) header: Vec<(String, Secret)>,

    /// An environment variable for the --stdio server, KEY=VALUE (repeatable)
    #[arg(long, global = true, value_name = "KEY=VALUE", value_parser = parse_env)]
    pub(crate) env: Vec<(String, Secret)>,

    /// The value of the config file's `${input:ID}` (VS Code's inputs, which mcpctl does not
    /// prompt for), ID=VALUE (repeatable, each ID once)
    #[arg(long, global = true, value_name = "ID=VALUE", value_parser = parse_input)]
    pub(crate) input: Vec<(String, Secret)>,

    /// The name of the server given with --stdio or --http [default: the command's file name,
    /// or the URL's host]
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) name: Option<String>,

    /// Where the OAuth tokens of HTTP servers are kept, readable by the user only
    /// [default: $XDG_CONFIG_HOME/mcpctl/tokens.json or ~/.config/mcpctl/tokens.json]
    #[arg(long, global = true, value_name = "PATH")]
    pub(crate) token_store: Option<PathBuf>,

    /// Where the tasks servers run for calls are kept (an SQLite file), so that one mcpctl can
    /// wait for a task another started [default: $XDG_CONFIG_HOME/mcpctl/tasks.sqlite3 or
    /// ~/.config/mcpctl/tasks.sqlite3]
    #[arg(long, global = true, value_name = "PATH")]
    pub(crate) task_store: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Connect to every server, wait until each is ready or failed, print a table
    ///
    /// Connects to every server in parallel, waits until each is Ready or Failed (at most
    /// --wait; on a terminal, with a spinner per server), prints a table (name, transport,
    /// state, protocol era and version, the server's name and version, tools), then in full
    /// why each server that is not Ready failed, with its last stderr lines. Entries of the
    /// file that are invalid are rows too, with the error naming the field. With SERVER, only
    /// that one is started and shown.
    /// Exits with 0 if every server is Ready, 1 if one is not.
    ///
    /// With --json, one object per server:
    /// {"name":"fs","state":"ready","era":"legacy","protocol_version":"2025-11-25",...,
    ///  "tools":12,"tools_truncated":null,...,"last_error":null} or
    ///  "last_error":{"kind":..,"message":..,"stderr_tail":[..]}; "tools_truncated" says why
    ///  the tool list was cut short, when it was.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Status {
        /// Only this server: the only one started
        server: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
        #[command(flatten)]
        stdio: StdioCommand,
    },

    /// The cached tool lists with their annotation hints
    ///
    /// The cached tool lists, by server, with the hints their annotations declare (read-only,
    /// destructive or non-destructive, idempotent, open-world; - for none). Exits with 1 if a
    /// server is not Ready.
    ///
    /// With --json, one object per tool, {"server":"fs","tool":{...}} (the tool as listed),
    /// then {"server":"fs","tools_truncated":"why"} if the list was cut short (more than
    /// 10000 tools or 1000 pages: the first ones are kept), and
    /// {"server":"fs","error":{"kind":..,"message":..}} for a server that is not Ready.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Tools(ListArgs),

    /// Run a tool, with KEY=VALUE arguments or one JSON object (default none)
    ///
    /// Runs a tool and prints each outcome: the result's text, `tool error: <text>` for a
    /// result with isError, or `error <kind>: <message>`. Only SERVER is started. Exits with 1
    /// if a call failed or returned a tool error.
    ///
    /// Its arguments are one JSON object ('{"path": "/srv/a.txt", "head": 3}') or KEY=VALUE
    /// words (path=/srv/a.txt head=3), each value typed by the tool's input schema: the types
    /// inputSchema.properties.KEY allows by its type (one or a list), enum, const, anyOf and
    /// oneOf. If a string is one, the text as it is (zip=01234 stays "01234", null stays
    /// "null"); else the text parsed as JSON and of one of them (an integer, number, boolean,
    /// null, object or array: opts='{"a":1}'), or exits with 2 naming the key; a key the
    /// schema does not type, the text as JSON if it parses, else as a string. An integer is
    /// kept exactly: one beyond 64 bits exits with 2 rather than be rounded.
    ///
    /// A server may run the call as a task (the MCP Tasks extension): mcpctl asks it how the
    /// task is doing until it ends. When --timeout passes first, the task runs on: its id is
    /// printed, and `mcpctl tasks wait SERVER TASK_ID` waits for it later. With --task, the
    /// task's id is printed as soon as the server has started it (or the result, if it
    /// answered at once), and mcpctl ends; see `mcpctl tasks --help`.
    ///
    /// With --json, one object per call:
    /// {"seq":1,"ok":true,"ms":12,"result":{...}} (the tools/call result as the server sent it)
    /// or {"seq":2,"ok":false,"ms":1000,"error":{"kind":"timeout","message":"..."}}, with
    /// "task":{"server":..,"task_id":..,"tool":..,"created_unix_ms":..,"ttl_ms":..} when the
    /// call runs on as a task; with --task, {"seq":1,"ok":true,"ms":12,"task":{...}} for a
    /// task started.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Call(CallArgs),

    /// The resources the servers list
    ///
    /// Every page of resources/list, by server (only the servers that offer resources):
    /// URI, name, MIME type, description. Exits with 1 if a server is not Ready or a list
    /// failed.
    ///
    /// With --json, one object per resource, {"server":"fs","resource":{...}}, and
    /// {"server":"fs","error":{...}} for a server that is not Ready or whose list failed.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Resources(ListArgs),

    /// The resource templates the servers list
    ///
    /// Every page of resources/templates/list, by server (only the servers that offer
    /// resources; one that has no such method offers no templates): URI template, name, MIME
    /// type, description. Exits with 1 if a server is not Ready or a list failed.
    ///
    /// With --json, one object per template, {"server":"fs","template":{...}} (as the server
    /// listed it, e.g. "uriTemplate"), and {"server":"fs","error":{...}} for a server that is
    /// not Ready or whose list failed.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Templates(ListArgs),

    /// Read a resource and print its contents
    ///
    /// Reads URI with resources/read and prints each content: text as is, a blob as its
    /// MIME type and size. Only SERVER is started. Exits with 1 if the read failed.
    ///
    /// With --json, {"ok":true,"ms":12,"result":{"contents":[...]}} or
    /// {"ok":false,"ms":..,"error":{"kind":..,"message":..}}.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Read(ReadArgs),

    /// The prompts the servers list, with their arguments
    ///
    /// Every page of prompts/list, by server (only the servers that offer prompts): name,
    /// arguments (ARG* is required), description. Exits with 1 if a server is not Ready or a
    /// list failed.
    ///
    /// With --json, one object per prompt, {"server":"fs","prompt":{...}}, and
    /// {"server":"fs","error":{...}} for a server that is not Ready or whose list failed.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Prompts(ListArgs),

    /// Render a prompt with KEY=VALUE arguments
    ///
    /// Gets NAME with prompts/get and its arguments, and prints each message with its role.
    /// Only SERVER is started. Exits with 1 if it failed.
    ///
    /// With --json, {"ok":true,"ms":12,"result":{"messages":[...]}} or
    /// {"ok":false,"ms":..,"error":{"kind":..,"message":..}}.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Prompt(PromptArgs),

    /// Print state changes and notifications until Ctrl-C
    ///
    /// Stays connected and prints every state change (with its message), tool-list change,
    /// resource update, log message and other notification, with the UTC time, until Ctrl-C
    /// (then exits with 0).
    ///
    /// With --json, one object per event: {"unix_ms":..,"server":..,"event":"state_changed",
    /// "state":..,"message":..}, or "event" tools_changed (added, removed), resource_updated
    /// (uri), log (params), notification (method, params), replacing, replaced,
    /// replace_failed (error).
    ///
    /// --reload also watches the mcpServers file (--config) and applies each change:
    /// new servers are added, missing ones removed, changed ones replaced without a failed
    /// call (the new process takes the calls once it is ready), unchanged ones left alone. A
    /// file that does not parse is not applied. With --json: {"unix_ms":..,"event":"reloaded",
    /// "servers":{"NAME":"added"|"removed"|"replaced"|"unchanged"|"kept: ..."|"failed: ..."}}
    /// or {"unix_ms":..,"event":"reload_refused","error":{"kind":..,"message":..}}.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Watch {
        /// Apply each change of the mcpServers file (--config)
        #[arg(long)]
        reload: bool,
        #[command(flatten)]
        stdio: StdioCommand,
    },

    /// Authorize mcpctl with an HTTP server behind OAuth, in the browser
    ///
    /// Runs the authorization code flow (PKCE) of MCP's authorization profile: prints the
    /// authorization URL (and opens it in a browser unless --no-browser), listens on the
    /// redirect URI's loopback port (the entry's oauth.callbackPort; default 3000) for the
    /// redirect, and keeps the tokens in the token store (see --token-store), where every later
    /// command finds them and refreshes them. Then prints the server's status, like `status`.
    /// Exits with 0 once the server is Ready, 1 if the authorization failed.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Login {
        /// The server to log in to (left out with --http)
        server: Option<String>,
        /// Print the URL only; do not start a browser
        #[arg(long)]
        no_browser: bool,
        /// How long to wait for the user and the server
        #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
        wait: Duration,
    },

    /// The tasks servers run for calls: list, show, wait for, cancel
    ///
    /// A server may run a tool call as a task (the MCP Tasks extension): `call --task` starts
    /// one and prints its id at once, and a `call` whose --timeout passes while its task runs
    /// leaves it running. mcpctl keeps every task it hears of in its task store (see
    /// --task-store), and every command that starts a server follows that server's tasks
    /// again, so that a task started by one mcpctl is waited for by the next. A task's
    /// outcome is delivered once: a second `tasks wait` is told it was delivered.
    ///
    /// Over stdio, a server's tasks end with its process (mcpctl stops the server when it
    /// ends) unless the server keeps them across restarts.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Tasks {
        #[command(subcommand)]
        command: TasksCommand,
    },

    /// Print a shell completion script
    ///
    /// For example: mcpctl completions bash > ~/.local/share/bash-completion/completions/mcpctl
    #[command(verbatim_doc_comment)]
    Completions {
        /// The shell
        shell: Shell,
    },
}

/// `--wait`, for the commands that report on servers once they have settled.
#[derive(Debug, Args)]
pub(crate) struct WaitArgs {
    /// How long to wait for the servers
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub(crate) wait: Duration,
}

/// `--timeout`, the deadline of each request a command makes.
#[derive(Debug, Args)]
pub(crate) struct TimeoutArgs {
    /// The deadline of each request (it includes waiting for the server to connect)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_timeout)]
    pub(crate) timeout: Duration,
}

/// The command of the `--stdio` server, after `--`.
#[derive(Debug, Args)]
pub(crate) struct StdioCommand {
    /// With --stdio: the server's command and its arguments
    #[arg(last = true, value_name = "COMMAND")]
    pub(crate) command: Vec<String>,
}

/// `tools`, `resources`, `templates`, `prompts`: all servers, or one.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Only this server: the only one started
    pub(crate) server: Option<String>,

    #[command(flatten)]
    pub(crate) wait: WaitArgs,

    #[command(flatten)]
    pub(crate) timeout: TimeoutArgs,

    #[command(flatten)]
    pub(crate) stdio: StdioCommand,
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// [SERVER] TOOL [JSON | KEY=VALUE...]: the server that has the tool, the tool's name, its
    /// arguments
    #[arg(value_name = "ARGS", num_args = 1.., required = true)]
    pub(crate) words: Vec<String>,

    #[command(flatten)]
    pub(crate) timeout: TimeoutArgs,

    /// Make the call N times
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_repeat)]
    pub(crate) repeat: u32,

    /// Pause between repeated calls
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub(crate) interval: Duration,

    /// Start the tool as a task and print its id at once (or its result, if the server answers
    /// at once); `mcpctl tasks wait` waits for it
    #[arg(long, conflicts_with_all = ["repeat", "interval"])]
    pub(crate) task: bool,

    #[command(flatten)]
    pub(crate) stdio: StdioCommand,
}

/// `tasks list`, `tasks show`, `tasks wait`, `tasks cancel`.
#[derive(Debug, Subcommand)]
pub(crate) enum TasksCommand {
    /// The tasks in the task store: id, server, tool, status, age
    ///
    /// Reads the task store (see --task-store) and starts no server: each task's status is
    /// the one mcpctl saw last (`tasks show` asks the server). OUTCOME is `kept` for a task
    /// that ended and whose outcome waits for `tasks wait`, `delivered` once it was taken.
    /// Tasks the server forgets (their ttl passed) and those delivered an hour ago are dropped.
    ///
    /// With --json, one object per task: {"server":..,"task_id":..,"tool":..,"status":..,
    /// "status_message":..,"created_unix_ms":..,"age_ms":..,"ttl_ms":..,"poll_interval_ms":..,
    /// "updated_unix_ms":..,"outcome":null|"kept"|"delivered"}.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    List {
        /// Only this server's tasks
        server: Option<String>,
    },

    /// Ask the server how a task is doing (tasks/get)
    ///
    /// Prints the task's status and what the server says about it, without waiting for its
    /// end (the outcome of a completed task is left for `tasks wait`). Exits with 1 if the
    /// server could not say (an unknown task: one it forgot, or never had).
    ///
    /// With --json, {"ok":true,"ms":12,"result":{"server":..,"task_id":..,"tool":..,
    /// "status":..,"status_message":..,"poll_interval_ms":..,"created_unix_ms":..,"ttl_ms":..}}
    /// or {"ok":false,"ms":..,"error":{"kind":..,"message":..}}.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Show(TaskArgs),

    /// Wait for a task to end, and print its outcome as `call` does
    ///
    /// Waits at most --timeout for the task to end and prints its result (exit code 0), a
    /// tool error or an error (1): `cancelled` for a task cancelled, `outcome_unknown` for a
    /// task the server no longer knows, `delivered` for one whose outcome an earlier `tasks
    /// wait` (or `call`) took. When --timeout passes first, the task runs on: wait again.
    ///
    /// With --json, {"ok":true,"ms":12,"result":{...}} or
    /// {"ok":false,"ms":..,"error":{"kind":..,"message":..}}, as `call --json` without "seq".
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Wait(TaskArgs),

    /// Ask the server to cancel a task (tasks/cancel)
    ///
    /// The server may still complete it: `tasks wait` tells how it ended. Exits with 1 if the
    /// server refused or could not be asked.
    ///
    /// With --json, {"ok":true,"ms":12,"result":{"server":..,"task_id":..,"tool":..,...}} or
    /// {"ok":false,"ms":..,"error":{"kind":..,"message":..}}.
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Cancel(TaskArgs),
}

/// `tasks show`, `tasks wait`, `tasks cancel`: one task.
#[derive(Debug, Args)]
pub(crate) struct TaskArgs {
    /// [SERVER] TASK_ID: the server that runs the task, and the task's id
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    pub(crate) words: Vec<String>,

    #[command(flatten)]
    pub(crate) timeout: TimeoutArgs,

    #[command(flatten)]
    pub(crate) stdio: StdioCommand,
}

#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// [SERVER] URI: the server that has the resource, and its URI
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    pub(crate) words: Vec<String>,

    #[command(flatten)]
    pub(crate) timeout: TimeoutArgs,

    #[command(flatten)]
    pub(crate) stdio: StdioCommand,
}

#[derive(Debug, Args)]
pub(crate) struct PromptArgs {
    /// [SERVER] NAME [KEY=VALUE...]: the server that has the prompt, its name, its arguments
    #[arg(value_name = "ARGS", num_args = 1.., required = true)]
    pub(crate) words: Vec<String>,

    #[command(flatten)]
    pub(crate) timeout: TimeoutArgs,

    #[command(flatten)]
    pub(crate) stdio: StdioCommand,
}

impl Command {
    /// The command of a `--stdio` server, as given after `--`.
    pub(crate) fn stdio_command(&self) -> &[String] {
        match self {
            Command::Status { stdio, .. } | Command::Watch { stdio, .. } => &stdio.command,
            Command::Tools(a)
            | Command::Resources(a)
            | Command::Templates(a)
            | Command::Prompts(a) => &a.stdio.command,
            Command::Call(a) => &a.stdio.command,
            Command::Read(a) => &a.stdio.command,
            Command::Prompt(a) => &a.stdio.command,
            Command::Tasks {
                command: TasksCommand::Show(a) | TasksCommand::Wait(a) | TasksCommand::Cancel(a),
            } => &a.stdio.command,
            Command::Tasks {
                command: TasksCommand::List { .. },
            }
            | Command::Completions { .. }
            | Command::Login { .. } => &[],
        }
    }
}

/// The value of a header or environment variable given on the command line: a token as often
/// as not, so `Debug` does not show it.
#[derive(Clone)]
pub(crate) struct Secret(pub(crate) String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `Name: value` or `Name:value`.
fn parse_header(text: &str) -> Result<(String, Secret), String> {
    match text.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_owned(), Secret(value.trim().to_owned())))
        }
        _ => Err("expected `Name: value`".into()),
    }
}

/// `KEY=VALUE`.
fn parse_env(text: &str) -> Result<(String, Secret), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), Secret(value.to_owned()))),
        _ => Err("expected `KEY=VALUE`".into()),
    }
}

/// `ID=VALUE`: an input's id never holds a `=`, its value may.
fn parse_input(text: &str) -> Result<(String, Secret), String> {
    match text.split_once('=') {
        Some((id, value)) if !id.is_empty() => Ok((id.to_owned(), Secret(value.to_owned()))),
        _ => Err("expected `ID=VALUE`".into()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn headers_and_env_split_once() {
        let (name, value) = parse_header("Authorization: Bearer a:b").unwrap();
        assert_eq!(
            (name.as_str(), value.0.as_str()),
            ("Authorization", "Bearer a:b")
        );
        assert!(parse_header("no-colon").is_err());
        assert!(parse_header(": v").is_err());
        let (key, value) = parse_env("A=b=c").unwrap();
        assert_eq!((key.as_str(), value.0.as_str()), ("A", "b=c"));
        assert!(parse_env("=x").is_err());
        let (id, value) = parse_input("api-key=s=3").unwrap();
        assert_eq!((id.as_str(), value.0.as_str()), ("api-key", "s=3"));
        assert!(parse_input("api-key").is_err());
    }

    #[test]
    fn debug_shows_no_header_or_env_value() {
        let cli = Cli::try_parse_from([
            "mcpctl",
            "--http",
            "http://h/mcp",
            "--header",
            "Authorization: Bearer s3cret",
            "--input",
            "key=in-s3cret",
            "status",
        ])
        .unwrap();
        let debug = format!("{cli:?}");
        assert!(
            debug.contains("Authorization") && !debug.contains("s3cret"),
            "{debug}"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("200ms").unwrap(), Duration::from_millis(200));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_timeout("0s").is_err());
    }
}
