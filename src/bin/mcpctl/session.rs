//! A session with the supervisor: start it with an event tap, wait for servers to settle, stop
//! it cleanly, and the Ctrl-C handling around all of that.
//!
//! Its own room because every command shares this lifecycle and none should repeat it: a
//! command (in `commands.rs`) only runs between [`run`]'s start and its shutdown, with the
//! supervisor's address and its events at hand.

use std::time::Duration;

use actix::{Actor, Addr, Context, Handler};
use mcp_supervisor::{GetStatus, ServerEvent, ServerState, ServerStatus, Shutdown, Supervisor};
use tokio::sync::mpsc;

use crate::action::Action;
use crate::event_printer::EventPrinter;
use crate::output::show_duration;
use crate::progress::Spinners;
use crate::source::Servers;
use crate::stdout;
use crate::tasks::TaskContext;
use crate::{EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};

/// Starts the servers, runs `action` until it ends or Ctrl-C, shuts the servers down; answers
/// the exit code. `json`: the command prints JSON lines. The supervisor keeps its tasks in
/// `tasks`' store, when there is one.
pub(crate) async fn run(action: Action, servers: Servers, json: bool, tasks: TaskContext) -> u8 {
    let Servers {
        configs,
        invalid,
        disabled,
        file,
    } = servers;
    let width = configs.iter().map(|s| s.name().len()).max().unwrap_or(0);
    let (tx, events) = mpsc::unbounded_channel();
    let tap = EventTap(tx).start();
    let mut builder = Supervisor::builder()
        .servers(configs)
        .subscriber(tap.recipient());
    if let Some(store) = &tasks.store {
        builder = builder.task_store(store.clone());
    }
    let sup = match builder.start() {
        Ok(sup) => sup,
        Err(e) => {
            eprintln!("mcpctl: {e}");
            return EXIT_USAGE;
        }
    };
    let mut session = Session {
        sup,
        events,
        printer: EventPrinter::new(width, json),
        json,
        invalid,
        disabled,
        file,
        tasks,
    };
    let watching = matches!(action, Action::Watch { .. });
    // `biased`: a command that has finished keeps its own code, even when stdout closed
    // during its last poll.
    let (code, cut_short) = tokio::select! {
        biased;
        code = session.run(&action) => (code, false),
        () = interrupted() => {
            eprintln!("mcpctl: interrupted; shutting the servers down");
            (if watching { EXIT_OK } else { EXIT_INTERRUPTED }, false)
        }
        // Nothing more can be shown (a `| head` has what it wanted): the command stops.
        () = stdout::closed() => (EXIT_OK, true),
    };
    let code = session.shutdown(watching).await.unwrap_or(code);
    stdout::exit_code(code, cut_short)
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

/// What a command has to work with: the supervisor, its events, the printer that shows them,
/// how to print, and what the config file had besides its valid servers.
pub(crate) struct Session {
    pub(crate) sup: Addr<Supervisor>,
    pub(crate) events: mpsc::UnboundedReceiver<ServerEvent>,
    pub(crate) printer: EventPrinter,
    /// Print JSON lines.
    pub(crate) json: bool,
    /// The config file's entries that could not be loaded.
    pub(crate) invalid: Vec<mcp_supervisor::Error>,
    /// The config file's disabled servers.
    pub(crate) disabled: Vec<String>,
    /// The config file and how it was read (`watch --reload`).
    pub(crate) file: Option<(std::path::PathBuf, mcp_supervisor::LoadOptions)>,
    /// The task store, and how a later mcpctl names a task's server.
    pub(crate) tasks: TaskContext,
}

impl Session {
    /// Waits until every server is Ready or Failed, at most `limit`, with a spinner per server
    /// on a terminal; then answers their status.
    pub(crate) async fn settle(&mut self, limit: Duration) -> Result<Vec<ServerStatus>, String> {
        let statuses = self.statuses().await?;
        let names: Vec<&str> = statuses.iter().map(|s| s.name.as_str()).collect();
        let spinners = Spinners::new(&names);
        self.settle_showing(limit, &spinners).await
        // The spinners are dropped here, taking themselves off the terminal.
    }

    async fn settle_showing(
        &mut self,
        limit: Duration,
        spinners: &Spinners,
    ) -> Result<Vec<ServerStatus>, String> {
        // A limit too far away to be an instant is no limit (a year is as good as forever here).
        let deadline = tokio::time::Instant::now()
            .checked_add(limit)
            .or_else(|| tokio::time::Instant::now().checked_add(Duration::from_secs(365 * 86_400)))
            .unwrap_or_else(tokio::time::Instant::now);
        loop {
            let statuses = self.statuses().await?;
            spinners.update(&statuses, |s| settled(&s.state));
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

    pub(crate) async fn statuses(&self) -> Result<Vec<ServerStatus>, String> {
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
