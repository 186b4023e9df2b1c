//! Quickstart: supervise one MCP server, break it, and watch it come back.
//!
//! Run it with `cargo run --example quickstart`; nothing needs installing. The server is the
//! in-tree demo server (`src/bin/mcp-demo-server/`), compiled into this example: started with
//! `--demo-server`, this binary *is* the server, and the supervisor runs it as a child process.
//!
//! What it shows, in order:
//! - events: every state change, printed as it arrives by an actor subscribed to the supervisor;
//! - the cached tool list, with the hints that decide what may be re-sent after a crash;
//! - calls: `echo`, `add` (with `structuredContent`), and `slow` with progress notifications;
//! - a `kill -9` of the server: it is reconnected at once, and a call made during the outage
//!   waits for the new connection and succeeds;
//! - a non-idempotent tool whose server dies mid-call: the caller hears `outcome_unknown`, and
//!   the tool is not run a second time behind its back;
//! - the status table, then a clean shutdown.
//!
//! Set `RUST_LOG` (e.g. `RUST_LOG=mcp_supervisor=debug`) to also see the supervisor's logs on
//! stderr.

// The demo server's source, compiled in as a module. Its `//!` header becomes this module's
// documentation, and everything in it is reached from its `main`, so it compiles without
// warnings as it is.
#[path = "../src/bin/mcp-demo-server/main.rs"]
mod demo_server;

use std::collections::HashMap;
use std::error::Error;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use actix::{Actor, Addr, Context, Handler, Message, System};
use mcp_supervisor::{
    CallTool, ErrorKind, GetStatus, Progress, ServerConfig, ServerEvent, ServerState, ServerStatus,
    Shutdown, Supervisor,
};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rmcp::model::CallToolResult;
use serde_json::json;
use tokio::sync::mpsc;

/// The argument that makes this binary run as the demo server.
const DEMO_SERVER_FLAG: &str = "--demo-server";
/// Timeout of each call.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait for a state change before giving up on the demo.
const STATE_WAIT: Duration = Duration::from_secs(10);

fn main() -> Result<(), Box<dyn Error>> {
    if std::env::args().nth(1).as_deref() == Some(DEMO_SERVER_FLAG) {
        // Server mode: speak MCP on stdin/stdout until stdin closes.
        demo_server::main();
        return Ok(());
    }
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .init();
    }
    // What `#[actix::main]` expands to; spelled out so that server mode starts no runtime.
    System::new().block_on(run())
}

async fn run() -> Result<(), Box<dyn Error>> {
    let start = Instant::now();
    let (changes, mut states) = mpsc::unbounded_channel();
    let console = Console {
        start,
        states: HashMap::new(),
        changes,
    }
    .start();

    let exe = std::env::current_exe()?;
    let exe = exe
        .to_str()
        .ok_or("the path of this executable is not UTF-8")?;
    println!(
        "Supervising one MCP server, `demo`: this binary, run as `{exe} {DEMO_SERVER_FLAG}`.\n"
    );
    let sup = Supervisor::builder()
        .server(ServerConfig::stdio("demo", exe).args([DEMO_SERVER_FLAG]))
        .subscriber(console.clone().recipient())
        .start()?;

    // Servers connect in the background; the console actor tells us when `demo` is Ready.
    wait_for(&mut states, "ready", STATE_WAIT).await?;
    print_tools(&status(&sup).await?);

    // Ordinary calls.
    let echo = sup.send(call("echo", json!({"text": "hello"}))).await??;
    say(start, format!("echo {{text: \"hello\"}} → {}", text(&echo)));
    let add = sup.send(call("add", json!({"a": 2, "b": 3}))).await??;
    let structured = add
        .structured_content
        .as_ref()
        .map_or("none".to_string(), |v| v.to_string());
    say(
        start,
        format!(
            "add {{a: 2, b: 3}} → {} (structuredContent {structured})",
            text(&add)
        ),
    );
    say(start, "slow {seconds: 1, steps: 4} …");
    let slow =
        call("slow", json!({"seconds": 1, "steps": 4})).on_progress(console.clone().recipient());
    let slow = sup.send(slow).await??;
    // Progress notifications precede the answer; let the console print them all first.
    console.send(Flush).await?;
    say(start, format!("slow → {}", text(&slow)));

    // Kill the server.
    let pid = status(&sup).await?.pid.ok_or("demo has no process")?;
    kill(Pid::from_raw(i32::try_from(pid)?), Signal::SIGKILL)?;
    say(start, format!("sent SIGKILL to demo (pid {pid})"));
    wait_for(&mut states, "reconnecting", STATE_WAIT).await?;
    say(start, "echo while demo is reconnecting …");
    let asked = Instant::now();
    let echo = sup
        .send(call("echo", json!({"text": "still here"})))
        .await??;
    let took = asked.elapsed();
    wait_for(&mut states, "ready", STATE_WAIT).await?;
    say(
        start,
        format!(
            "echo → {} (made during the reconnect, answered after {} ms)",
            text(&echo),
            took.as_millis()
        ),
    );

    // A tool that is not idempotent, whose server dies while running it.
    say(
        start,
        "counter {crash: true} (not idempotent; the server exits while running it) …",
    );
    match sup.send(call("counter", json!({"crash": true}))).await? {
        Err(e) if e.kind() == ErrorKind::OutcomeUnknown => {
            wait_for(&mut states, "reconnecting", STATE_WAIT).await?;
            say(
                start,
                format!(
                    "counter → {}: the tool may have run; it was not re-run",
                    e.code()
                ),
            );
            wait_for(&mut states, "ready", STATE_WAIT).await?;
        }
        Err(e) => say(start, format!("counter → unexpected error: {e}")),
        Ok(result) => say(
            start,
            format!("counter → unexpected answer: {}", text(&result)),
        ),
    }

    print_status_table(&sup.send(GetStatus::all()).await??);

    sup.send(Shutdown).await?;
    // The "Stopped" event races with the supervisor's own stop; show it if it arrives.
    let _ = wait_for(&mut states, "stopped", Duration::from_millis(500)).await;
    console.send(Flush).await?;
    say(start, "shut down: the server process has exited");
    Ok(())
}

/// A `tools/call` to `demo` with this example's timeout.
fn call(tool: &str, arguments: serde_json::Value) -> CallTool {
    CallTool::new("demo", tool, arguments).timeout(CALL_TIMEOUT)
}

async fn status(sup: &Addr<Supervisor>) -> Result<ServerStatus, Box<dyn Error>> {
    let statuses = sup.send(GetStatus::server("demo")).await??;
    Ok(statuses.into_iter().next().ok_or("no status for demo")?)
}

/// Waits until the console has seen `demo` enter the state named `name`.
async fn wait_for(
    states: &mut mpsc::UnboundedReceiver<ServerState>,
    name: &str,
    limit: Duration,
) -> Result<(), Box<dyn Error>> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, states.recv()).await {
            Ok(Some(state)) if state.name() == name => return Ok(()),
            Ok(Some(ServerState::Failed { error, .. })) => {
                return Err(format!("demo failed: {error}").into())
            }
            Ok(Some(_)) => {}
            Ok(None) => return Err("the console actor stopped".into()),
            Err(_) => return Err(format!("demo was not {name} within {limit:?}").into()),
        }
    }
}

/// The text parts of a tool result, joined.
fn text(result: &CallToolResult) -> String {
    let parts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.as_str())
        .collect();
    format!("{:?}", parts.join(" "))
}

fn print_tools(status: &ServerStatus) {
    println!(
        "\n{} tools, cached from all pages of tools/list, with their hints:",
        status.tool_count()
    );
    for tool in &status.tools {
        let hints = tool.annotations.as_ref();
        let read_only = hints.and_then(|a| a.read_only_hint).unwrap_or(false);
        let idempotent = hints.and_then(|a| a.idempotent_hint).unwrap_or(false);
        let kind = match (read_only, idempotent) {
            (true, _) => "read-only",
            (false, true) => "idempotent",
            (false, false) => "not idempotent",
        };
        println!("  {:<12} {kind}", tool.name);
    }
    println!(
        "(`demo` is not configured `trusted`, so these hints are not believed: no tools/call\n\
         interrupted by a crash is re-sent on its own.)\n"
    );
}

fn print_status_table(statuses: &[ServerStatus]) {
    println!(
        "\n{:<6} {:<7} {:<10} {:>5} {:>4} {:>6} {:>9} {:>10}  last error",
        "name", "state", "protocol", "tools", "ok", "failed", "timed out", "reconnects"
    );
    for s in statuses {
        let last_error = s.last_error.as_ref().map_or("-".to_string(), |e| {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            first.trim_end_matches("; last stderr lines:").to_string()
        });
        println!(
            "{:<6} {:<7} {:<10} {:>5} {:>4} {:>6} {:>9} {:>10}  {last_error}",
            s.name,
            s.state.name(),
            s.protocol_version.as_deref().unwrap_or("-"),
            s.tool_count(),
            s.counters.calls_ok,
            s.counters.calls_failed,
            s.counters.calls_timed_out,
            s.counters.reconnects,
        );
    }
    println!();
}

/// Prints a line with the time since the start.
fn say(start: Instant, line: impl AsRef<str>) {
    let elapsed = start.elapsed().as_secs_f64();
    // Continuation lines (e.g. a server's stderr tail in an error) line up under the text.
    let line = line.as_ref().replace('\n', "\n           ");
    println!("[{elapsed:>7.3}s] {line}");
}

/// Prints the supervisor's events and progress notifications, and passes `demo`'s state
/// changes on to `run`, which waits on them.
struct Console {
    start: Instant,
    /// Each server's last known state, to print transitions.
    states: HashMap<String, &'static str>,
    changes: mpsc::UnboundedSender<ServerState>,
}

impl Actor for Console {
    type Context = Context<Self>;
}

impl Handler<ServerEvent> for Console {
    type Result = ();

    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) {
        match event {
            ServerEvent::StateChanged {
                server,
                state,
                message,
            } => {
                let before = self
                    .states
                    .insert(server.clone(), state.name())
                    .unwrap_or("connecting");
                say(
                    self.start,
                    format!("{server}: {before} → {}: {message}", state.name()),
                );
                if server == "demo" {
                    // `run` may have stopped listening; that is fine.
                    let _ = self.changes.send(state);
                }
            }
            ServerEvent::ToolsChanged {
                server,
                added,
                removed,
                changed,
            } => say(
                self.start,
                format!(
                    "{server}: tools changed: added {added:?}, removed {removed:?}, \
                     changed {changed:?}"
                ),
            ),
            ServerEvent::ResourceUpdated { server, uri } => {
                say(self.start, format!("{server}: resource updated: {uri}"))
            }
            ServerEvent::Log { server, params } => {
                say(self.start, format!("{server}: log: {params}"))
            }
            ServerEvent::Notification { server, method, .. } => {
                say(self.start, format!("{server}: notification {method}"))
            }
            // Variants added in later versions.
            _ => {}
        }
    }
}

impl Handler<Progress> for Console {
    type Result = ();

    fn handle(&mut self, p: Progress, _: &mut Context<Self>) {
        let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
        let message = p.message.map(|m| format!(" ({m})")).unwrap_or_default();
        say(
            self.start,
            format!("  {}: progress {}{total}{message}", p.server, p.progress),
        );
    }
}

/// Answered once everything sent to the console before it has been printed.
#[derive(Message)]
#[rtype(result = "()")]
struct Flush;

impl Handler<Flush> for Console {
    type Result = ();

    fn handle(&mut self, _: Flush, _: &mut Context<Self>) {}
}
