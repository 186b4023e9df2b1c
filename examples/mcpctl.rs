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
//! `--config` defaults to `mcp.json` in the current directory; `tools SERVER` and `call` start
//! only the server they name. Durations take `ms` or `s` (`200ms`, `5s`, `1.5s`).
//!
//! `call --json` prints, for each call, `{"seq":1,"ok":true,"ms":12,"result":{...}}` (the
//! `tools/call` result as the server sent it; a tool that reports an error has
//! `"isError":true`) or `{"seq":2,"ok":false,"ms":1000,"error":{"kind":"timeout","message":"..."}}`
//! (`kind` is [`Error::code`]).
//!
//! Exit codes: 0 success; 1 a server was not Ready (`status`, `tools`) or a call failed or
//! returned a tool error (`call`); 2 bad usage or an invalid configuration; 130 interrupted by
//! Ctrl-C (`watch` ends with 0). Ctrl-C always shuts the servers down cleanly first; a second
//! Ctrl-C stops waiting for them.
//!
//! Set `RUST_LOG` (e.g. `RUST_LOG=mcp_supervisor=debug`) to see the supervisor's logs on stderr.

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use actix::{Actor, Addr, Context, Handler, System};
use mcp_supervisor::{
    CallTool, Error, GetStatus, ServerConfig, ServerEvent, ServerState, ServerStatus, Shutdown,
    Supervisor,
};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

const USAGE: &str = "\
mcpctl: look at and exercise the MCP servers of an mcpServers file

usage: mcpctl [--config PATH] <command> [options]

commands:
  status                     connect to every server, wait until each is ready or failed,
                             print a table
  tools [SERVER]             the cached tool lists with their annotation hints
  call SERVER TOOL [JSON]    run a tool with JSON arguments (an object; default {})
  watch                      print state changes and notifications until Ctrl-C

options:
  --config PATH              the mcpServers file (default: mcp.json)
  --wait DURATION            status, tools: how long to wait for the servers (default: 30s)
  --timeout DURATION         call: the deadline of each call (default: 30s)
  --repeat N                 call: make the call N times (default: 1)
  --interval DURATION        call: pause between repeated calls (default: 1s)
  --json                     call: one JSON object per outcome, for scripts
  -h, --help                 this text

Durations take ms or s: 200ms, 5s, 1.5s.
Exit codes: 0 ok, 1 a server not ready or a call failed, 2 bad usage or configuration,
130 interrupted.
";

const EXIT_OK: u8 = 0;
const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_INTERRUPTED: u8 = 130;

const DEFAULT_CONFIG: &str = "mcp.json";
const DEFAULT_WAIT: Duration = Duration::from_secs(30);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// Longest "last error" shown in the status table, in characters.
const ERROR_WIDTH: usize = 90;
/// Longest tool description shown by `tools`, in characters.
const DESCRIPTION_WIDTH: usize = 64;

fn main() -> ExitCode {
    let cli = match parse_args(std::env::args().skip(1)) {
        Ok(Parsed::Run(cli)) => cli,
        Ok(Parsed::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("mcpctl: {message}\n\n{USAGE}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    init_tracing();
    let servers = match load_servers(&cli) {
        Ok(servers) => servers,
        Err(message) => {
            eprintln!("mcpctl: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let system = System::new();
    let code = system.block_on(run(cli.command, servers));
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

// ---------------------------------------------------------------------------------------------
// Command line

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Parsed {
    Help,
    Run(Cli),
}

#[derive(Debug, PartialEq)]
struct Cli {
    config: PathBuf,
    command: Command,
}

#[derive(Debug, PartialEq)]
enum Command {
    Status {
        wait: Duration,
    },
    Tools {
        server: Option<String>,
        wait: Duration,
    },
    Call(CallArgs),
    Watch,
}

#[derive(Debug, PartialEq)]
struct CallArgs {
    server: String,
    tool: String,
    arguments: Map<String, Value>,
    timeout: Duration,
    repeat: u32,
    interval: Duration,
    json: bool,
}

impl Command {
    /// The one server the command is about, if it names one.
    fn server(&self) -> Option<&str> {
        match self {
            Command::Tools { server, .. } => server.as_deref(),
            Command::Call(call) => Some(&call.server),
            Command::Status { .. } | Command::Watch => None,
        }
    }
}

/// Options that take a value; `--json` is the only flag.
const VALUED: &[&str] = &["--config", "--wait", "--timeout", "--repeat", "--interval"];

/// Options by name (`--json` with an empty value), and positional arguments in order.
#[derive(Default)]
struct RawArgs {
    options: BTreeMap<String, String>,
    positional: Vec<String>,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Parsed, String> {
    let Some(raw) = split_args(args)? else {
        return Ok(Parsed::Help);
    };
    let mut positional = raw.positional.into_iter();
    let name = positional.next().ok_or("no command given")?;
    let rest: Vec<String> = positional.collect();
    let opts = &raw.options;
    let command = match name.as_str() {
        "help" => return Ok(Parsed::Help),
        "status" => {
            check_command(opts, &rest, "status", &["--wait"])?;
            Command::Status {
                wait: duration_option(opts, "--wait", DEFAULT_WAIT)?,
            }
        }
        "tools" => {
            check_command(opts, &rest, "tools [SERVER]", &["--wait"])?;
            Command::Tools {
                server: rest.first().cloned(),
                wait: duration_option(opts, "--wait", DEFAULT_WAIT)?,
            }
        }
        "call" => {
            let allowed = ["--timeout", "--repeat", "--interval", "--json"];
            check_command(opts, &rest, "call SERVER TOOL [JSON]", &allowed)?;
            Command::Call(call_args(opts, &rest)?)
        }
        "watch" => {
            check_command(opts, &rest, "watch", &[])?;
            Command::Watch
        }
        other => return Err(format!("unknown command `{other}`")),
    };
    let config = opts.get("--config").map_or(DEFAULT_CONFIG, String::as_str);
    Ok(Parsed::Run(Cli {
        config: PathBuf::from(config),
        command,
    }))
}

/// Sorts arguments into options and positional ones; `None` when help is asked for.
fn split_args(args: impl IntoIterator<Item = String>) -> Result<Option<RawArgs>, String> {
    let mut raw = RawArgs::default();
    let mut args = args.into_iter();
    let mut options_done = false;
    while let Some(arg) = args.next() {
        if options_done || (!arg.starts_with("--") && arg != "-h") {
            raw.positional.push(arg);
            continue;
        }
        if arg == "--" {
            options_done = true;
            continue;
        }
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (arg, None),
        };
        let value = if name == "--json" {
            if inline.is_some() {
                return Err("`--json` takes no value".into());
            }
            String::new()
        } else if VALUED.contains(&name.as_str()) {
            match inline.or_else(|| args.next()) {
                Some(value) => value,
                None => return Err(format!("`{name}` needs a value")),
            }
        } else {
            return Err(format!("unknown option `{name}`"));
        };
        if raw.options.insert(name.clone(), value).is_some() {
            return Err(format!("`{name}` is given twice"));
        }
    }
    Ok(Some(raw))
}

/// Checks a command's options (beyond `--config`) and its number of arguments, against its
/// synopsis, e.g. `call SERVER TOOL [JSON]`.
fn check_command(
    opts: &BTreeMap<String, String>,
    rest: &[String],
    synopsis: &str,
    allowed: &[&str],
) -> Result<(), String> {
    let mut words = synopsis.split_whitespace();
    let command = words.next().unwrap_or_default();
    let (required, optional): (Vec<&str>, Vec<&str>) = words.partition(|w| !w.starts_with('['));
    if let Some(name) = opts
        .keys()
        .find(|k| *k != "--config" && !allowed.contains(&k.as_str()))
    {
        return Err(format!("`{name}` does not apply to `{command}`"));
    }
    if rest.len() < required.len() {
        return Err(format!("usage: mcpctl {synopsis}"));
    }
    if let Some(extra) = rest.get(required.len() + optional.len()) {
        return Err(format!(
            "unexpected argument `{extra}` (usage: mcpctl {synopsis})"
        ));
    }
    Ok(())
}

fn call_args(opts: &BTreeMap<String, String>, rest: &[String]) -> Result<CallArgs, String> {
    let (Some(server), Some(tool)) = (rest.first(), rest.get(1)) else {
        return Err("usage: mcpctl call SERVER TOOL [JSON]".into());
    };
    let arguments = match rest.get(2) {
        None => Map::new(),
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err("the tool's arguments must be a JSON object".into()),
            Err(e) => return Err(format!("the tool's arguments are not valid JSON: {e}")),
        },
    };
    let timeout = duration_option(opts, "--timeout", DEFAULT_TIMEOUT)?;
    if timeout.is_zero() {
        return Err("`--timeout` must be more than 0".into());
    }
    let repeat = match opts.get("--repeat") {
        None => 1,
        Some(n) => match n.parse::<u32>() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(format!(
                    "`--repeat {n}`: expected a whole number of at least 1"
                ))
            }
        },
    };
    Ok(CallArgs {
        server: server.clone(),
        tool: tool.clone(),
        arguments,
        timeout,
        repeat,
        interval: duration_option(opts, "--interval", DEFAULT_INTERVAL)?,
        json: opts.contains_key("--json"),
    })
}

fn duration_option(
    opts: &BTreeMap<String, String>,
    name: &str,
    default: Duration,
) -> Result<Duration, String> {
    match opts.get(name) {
        None => Ok(default),
        Some(text) => parse_duration(text).map_err(|e| format!("`{name} {text}`: {e}")),
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

// ---------------------------------------------------------------------------------------------
// Running a command

async fn run(command: Command, servers: Vec<ServerConfig>) -> u8 {
    let width = servers.iter().map(|s| s.name().len()).max().unwrap_or(0);
    let (tx, events) = mpsc::unbounded_channel();
    let tap = EventTap(tx).start();
    let sup = match Supervisor::builder()
        .servers(servers)
        .subscriber(tap.recipient())
        .start()
    {
        Ok(sup) => sup,
        Err(e) => {
            eprintln!("mcpctl: {e}");
            return EXIT_USAGE;
        }
    };
    let mut session = Session {
        sup,
        events,
        printer: EventPrinter::new(width),
    };
    let watching = matches!(command, Command::Watch);
    let code = tokio::select! {
        code = session.run(&command) => code,
        () = interrupted() => {
            eprintln!("mcpctl: interrupted; shutting the servers down");
            if watching { EXIT_OK } else { EXIT_INTERRUPTED }
        }
    };
    session.shutdown(watching).await.unwrap_or(code)
}

/// Resolves at Ctrl-C (SIGINT); never, if it cannot be listened for.
async fn interrupted() {
    if let Err(e) = actix_rt::signal::ctrl_c().await {
        eprintln!("mcpctl: cannot listen for Ctrl-C: {e}");
        std::future::pending::<()>().await;
    }
}

/// Passes the supervisor's events on to the command that runs.
struct EventTap(mpsc::UnboundedSender<ServerEvent>);

impl Actor for EventTap {
    type Context = Context<Self>;
}

impl Handler<ServerEvent> for EventTap {
    type Result = ();

    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) {
        // The receiver is gone only once mcpctl is finishing.
        let _ = self.0.send(event);
    }
}

struct Session {
    sup: Addr<Supervisor>,
    events: mpsc::UnboundedReceiver<ServerEvent>,
    printer: EventPrinter,
}

impl Session {
    async fn run(&mut self, command: &Command) -> u8 {
        match command {
            Command::Status { wait } => self.status(*wait).await,
            Command::Tools { wait, .. } => self.tools(*wait).await,
            Command::Call(args) => self.call(args).await,
            Command::Watch => self.watch().await,
        }
    }

    async fn status(&mut self, wait: Duration) -> u8 {
        match self.settle(wait).await {
            Ok(statuses) => {
                print_status_table(&statuses);
                all_ready(&statuses)
            }
            Err(message) => {
                eprintln!("mcpctl: {message}");
                EXIT_FAILED
            }
        }
    }

    async fn tools(&mut self, wait: Duration) -> u8 {
        match self.settle(wait).await {
            Ok(statuses) => {
                for (i, status) in statuses.iter().enumerate() {
                    if i > 0 {
                        println!();
                    }
                    print_tools(status);
                }
                all_ready(&statuses)
            }
            Err(message) => {
                eprintln!("mcpctl: {message}");
                EXIT_FAILED
            }
        }
    }

    async fn call(&mut self, args: &CallArgs) -> u8 {
        let mut code = EXIT_OK;
        for seq in 1..=args.repeat {
            if seq > 1 {
                tokio::time::sleep(args.interval).await;
            }
            let call = CallTool::new(
                &args.server,
                &args.tool,
                Value::Object(args.arguments.clone()),
            )
            .timeout(args.timeout);
            let started = Instant::now();
            let outcome = match self.sup.send(call).await {
                Ok(outcome) => outcome,
                // The supervisor is gone: the call never got an answer.
                Err(_) => Err(Error::Stopped {
                    server: args.server.clone(),
                }),
            };
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            if !succeeded(&outcome) {
                code = EXIT_FAILED;
            }
            if args.json {
                println!("{}", json_line(seq, ms, &outcome));
            } else {
                println!("{}", human_line(seq, ms, &outcome, args.repeat > 1));
            }
        }
        code
    }

    async fn watch(&mut self) -> u8 {
        eprintln!("mcpctl: watching; Ctrl-C to stop");
        while let Some(event) = self.events.recv().await {
            self.printer.print(&event);
        }
        eprintln!("mcpctl: the supervisor's events stopped");
        EXIT_FAILED
    }

    /// Waits until every server is Ready or Failed, at most `limit`; then answers their status.
    async fn settle(&mut self, limit: Duration) -> Result<Vec<ServerStatus>, String> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let statuses = self.statuses().await?;
            if statuses.iter().all(|s| settled(&s.state)) {
                return Ok(statuses);
            }
            // Any event may be the one we wait for; the status query tells.
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(_)) => {}
                Ok(None) => return Err("the supervisor's events stopped".into()),
                Err(_) => {
                    let pending: Vec<&str> = statuses
                        .iter()
                        .filter(|s| !settled(&s.state))
                        .map(|s| s.name.as_str())
                        .collect();
                    eprintln!(
                        "mcpctl: after {}, still waiting for: {}",
                        show_duration(limit),
                        pending.join(", ")
                    );
                    return self.statuses().await;
                }
            }
        }
    }

    async fn statuses(&self) -> Result<Vec<ServerStatus>, String> {
        match self.sup.send(GetStatus::all()).await {
            Ok(Ok(statuses)) => Ok(statuses),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(format!("the supervisor is gone: {e}")),
        }
    }

    /// Stops every server and waits for them, printing events meanwhile when `print_events`.
    /// Answers an exit code if a second Ctrl-C cut the wait short.
    async fn shutdown(mut self, print_events: bool) -> Option<u8> {
        let stop = self.sup.send(Shutdown);
        let again = interrupted();
        tokio::pin!(stop, again);
        loop {
            tokio::select! {
                // An error means the supervisor had stopped already: nothing left to wait for.
                _ = &mut stop => break,
                Some(event) = self.events.recv(), if print_events => self.printer.print(&event),
                () = &mut again => {
                    eprintln!("mcpctl: interrupted again; not waiting for the servers to stop");
                    return Some(EXIT_INTERRUPTED);
                }
            }
        }
        while let Ok(event) = self.events.try_recv() {
            if print_events {
                self.printer.print(&event);
            }
        }
        None
    }
}

fn settled(state: &ServerState) -> bool {
    matches!(
        state,
        ServerState::Ready | ServerState::Failed { .. } | ServerState::Stopped
    )
}

fn all_ready(statuses: &[ServerStatus]) -> u8 {
    if statuses.iter().all(|s| s.state.is_ready()) {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

fn succeeded(outcome: &Result<CallToolResult, Error>) -> bool {
    matches!(outcome, Ok(result) if result.is_error != Some(true))
}

// ---------------------------------------------------------------------------------------------
// Output

fn print_status_table(statuses: &[ServerStatus]) {
    let header = [
        "NAME",
        "TRANSPORT",
        "STATE",
        "PROTOCOL",
        "TOOLS",
        "LAST ERROR",
    ];
    let rows: Vec<Vec<String>> = statuses
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.transport.to_owned(),
                s.state.name().to_owned(),
                s.protocol_version.clone().unwrap_or_else(|| "-".into()),
                s.tool_count().to_string(),
                s.last_error.as_ref().map_or("-".into(), short_error),
            ]
        })
        .collect();
    print_table(&header, &rows);
}

/// Left-aligned columns two spaces apart; the last one is not padded.
fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut out = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}  "));
            }
        }
        out
    };
    println!("{}", line(header.to_vec()));
    for row in rows {
        println!("{}", line(row.iter().map(String::as_str).collect()));
    }
}

/// The first line of an error, without the stderr tail announcement, shortened.
fn short_error(error: &Error) -> String {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default();
    shorten(first.trim_end_matches("; last stderr lines:"), ERROR_WIDTH)
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

fn print_tools(status: &ServerStatus) {
    let state = status.state.name();
    if !status.state.is_ready() {
        let why = status
            .last_error
            .as_ref()
            .map_or(String::new(), |e| format!(": {}", short_error(e)));
        println!("{} ({}, {state}){why}", status.name, status.transport);
        return;
    }
    println!(
        "{} ({}, {state}, {} tools)",
        status.name,
        status.transport,
        status.tool_count()
    );
    let rows: Vec<[String; 3]> = status
        .tools
        .iter()
        .map(|tool| [tool.name.to_string(), hints(tool), description(tool)])
        .collect();
    let name_width = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(0);
    let hint_width = rows.iter().map(|r| r[1].chars().count()).max().unwrap_or(0);
    for [name, hints, description] in rows {
        let line = format!("  {name:<name_width$}  {hints:<hint_width$}  {description}");
        println!("{}", line.trim_end());
    }
}

/// The hints a tool's annotations declare, e.g. `read-only, idempotent`; `-` if none. Only what
/// a hint says beyond the spec's defaults is shown: `destructive` or `non-destructive` (which
/// only matter for a tool that is not read-only), `idempotent`, `open-world`.
fn hints(tool: &Tool) -> String {
    let Some(a) = tool.annotations.as_ref() else {
        return "-".into();
    };
    let effect = match (a.read_only_hint, a.destructive_hint) {
        (Some(true), _) => Some("read-only"),
        (_, Some(true)) => Some("destructive"),
        (_, Some(false)) => Some("non-destructive"),
        (_, None) => None,
    };
    let declared: Vec<&str> = [
        effect,
        a.idempotent_hint.filter(|&b| b).map(|_| "idempotent"),
        a.open_world_hint.filter(|&b| b).map(|_| "open-world"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if declared.is_empty() {
        "-".into()
    } else {
        declared.join(", ")
    }
}

fn description(tool: &Tool) -> String {
    let text = tool.description.as_deref().unwrap_or_default();
    shorten(
        text.lines().next().unwrap_or_default().trim(),
        DESCRIPTION_WIDTH,
    )
}

/// `{"seq":1,"ok":true,"ms":12,"result":{...}}` or
/// `{"seq":2,"ok":false,"ms":1000,"error":{"kind":"timeout","message":"..."}}`, keys in that
/// order whatever serde_json's map ordering.
fn json_line(seq: u32, ms: u64, outcome: &Result<CallToolResult, Error>) -> String {
    match outcome {
        Ok(result) => {
            let result = serde_json::to_string(result)
                .unwrap_or_else(|e| json!({ "unserializable": e.to_string() }).to_string());
            format!(r#"{{"seq":{seq},"ok":true,"ms":{ms},"result":{result}}}"#)
        }
        Err(e) => {
            let kind = Value::from(e.code());
            let message = Value::from(e.to_string());
            format!(
                r#"{{"seq":{seq},"ok":false,"ms":{ms},"error":{{"kind":{kind},"message":{message}}}}}"#
            )
        }
    }
}

/// The result's text, `tool error: <text>`, or `error <kind>: <message>`; prefixed with the
/// sequence number and duration when the call is repeated.
fn human_line(
    seq: u32,
    ms: u64,
    outcome: &Result<CallToolResult, Error>,
    numbered: bool,
) -> String {
    let body = match outcome {
        Ok(result) if result.is_error == Some(true) => format!("tool error: {}", text(result)),
        Ok(result) => text(result),
        Err(e) => format!("error {}: {e}", e.code()),
    };
    if numbered {
        let prefix = format!("#{seq} {ms}ms ");
        let indent = " ".repeat(prefix.len());
        format!("{prefix}{}", body.replace('\n', &format!("\n{indent}")))
    } else {
        body
    }
}

/// The content of a tool result for people: text as is, other blocks as a one-line summary.
fn text(result: &CallToolResult) -> String {
    let parts: Vec<String> = result.content.iter().map(content_text).collect();
    if !parts.is_empty() {
        return parts.join("\n");
    }
    match &result.structured_content {
        Some(value) => value.to_string(),
        None => "(empty result)".into(),
    }
}

fn content_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image {}, {} bytes]", i.mime_type, base64_len(&i.data)),
        ContentBlock::Audio(a) => format!("[audio {}, {} bytes]", a.mime_type, base64_len(&a.data)),
        ContentBlock::Resource(r) => resource_text(&r.resource),
        ContentBlock::ResourceLink(link) => format!("[link {} {}]", link.name, link.uri),
        // Content types added in later versions.
        other => serde_json::to_string(other).unwrap_or_else(|_| "[content]".into()),
    }
}

fn resource_text(resource: &ResourceContents) -> String {
    match resource {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            format!("[resource {uri}]\n{text}")
        }
        ResourceContents::BlobResourceContents { uri, blob, .. } => {
            format!("[resource {uri}, {} bytes]", base64_len(blob))
        }
        // Kinds added in later versions.
        other => serde_json::to_string(other).unwrap_or_else(|_| "[resource]".into()),
    }
}

/// Decoded size of base64 data.
fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

fn show_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Prints events for `watch`, one line each, with the UTC time.
struct EventPrinter {
    /// Width of the server name column.
    width: usize,
    /// Each server's last state, to show transitions.
    states: HashMap<String, &'static str>,
}

impl EventPrinter {
    fn new(width: usize) -> Self {
        EventPrinter {
            width,
            states: HashMap::new(),
        }
    }

    fn print(&mut self, event: &ServerEvent) {
        let prefix = format!("{} {:<w$}  ", utc_now(), event.server(), w = self.width);
        let indent = " ".repeat(prefix.chars().count());
        let text = self.describe(event).replace('\n', &format!("\n{indent}"));
        println!("{prefix}{text}");
    }

    fn describe(&mut self, event: &ServerEvent) -> String {
        match event {
            ServerEvent::StateChanged {
                server,
                state,
                message,
            } => {
                let now = state.name();
                match self.states.insert(server.clone(), now) {
                    Some(before) => format!("{before} → {now}: {message}"),
                    None => format!("{now}: {message}"),
                }
            }
            ServerEvent::ToolsChanged { added, removed, .. } => {
                let added = added.iter().map(|t| format!("+{t}"));
                let removed = removed.iter().map(|t| format!("-{t}"));
                let all: Vec<String> = added.chain(removed).collect();
                format!("tools changed: {}", all.join(" "))
            }
            ServerEvent::ResourceUpdated { uri, .. } => format!("resource updated: {uri}"),
            ServerEvent::Log { params, .. } => log_text(params),
            ServerEvent::Notification { method, params, .. } => match params {
                Some(params) => format!("notification {method} {params}"),
                None => format!("notification {method}"),
            },
            // Events added in later versions.
            other => format!("{other:?}"),
        }
    }
}

/// `log <level> [<logger>]: <data>` from `notifications/message` params.
fn log_text(params: &Value) -> String {
    let level = params.get("level").and_then(Value::as_str).unwrap_or("?");
    let logger = params
        .get("logger")
        .and_then(Value::as_str)
        .map_or(String::new(), |l| format!(" [{l}]"));
    let data = match params.get("data") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    format!("log {level}{logger}: {data}")
}

/// `HH:MM:SS.mmmZ`, the time of day in UTC.
fn utc_now() -> String {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since_epoch.as_secs() % 86_400;
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    format!("{h:02}:{m:02}:{s:02}.{:03}Z", since_epoch.subsec_millis())
}
