//! A session with the supervisor: start it with an event tap, wait for servers to settle, stop
//! it cleanly, and the Ctrl-C handling around all of that.
//!
//! Its own room because every command shares this lifecycle and none should repeat it: a
//! command (in `commands.rs`) only runs between [`run`]'s start and its shutdown, with the
//! supervisor's address and its events at hand.

use std::time::Duration;

use actix::{Actor, Addr, Context, Handler};
use mcp_supervisor::{
    GetStatus, ServerConfig, ServerEvent, ServerState, ServerStatus, Shutdown, Supervisor,
};
use tokio::sync::mpsc;

use crate::cli::Command;
use crate::event_printer::EventPrinter;
use crate::output::show_duration;
use crate::{EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};

/// Starts the servers, runs `command` until it ends or Ctrl-C, shuts the servers down; answers
/// the exit code.
pub(crate) async fn run(command: Command, servers: Vec<ServerConfig>) -> u8 {
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

/// What a command has to work with: the supervisor, its events, and the printer that shows them.
pub(crate) struct Session {
    pub(crate) sup: Addr<Supervisor>,
    pub(crate) events: mpsc::UnboundedReceiver<ServerEvent>,
    pub(crate) printer: EventPrinter,
}

impl Session {
    /// Waits until every server is Ready or Failed, at most `limit`; then answers their status.
    pub(crate) async fn settle(&mut self, limit: Duration) -> Result<Vec<ServerStatus>, String> {
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
