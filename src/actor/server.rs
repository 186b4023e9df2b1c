//! `ServerActor`: one per MCP server. It owns the transport, the cached session (server info,
//! capabilities, tools), the application's subscriptions, the calls in flight and the backoff
//! timer, and it carries out what the state machine in [`crate::policy::state`] decides. It
//! makes no decision of its own about when to connect or retry.
//!
//! This file holds the actor itself: its construction, the `feed`/`perform` loop of the state
//! machine, connecting and disconnecting, and the message handlers, which route into its parts:
//! `call_table` (every call from start to answer), `call_handlers` (the call messages, raw and
//! typed), `inbound` (what the server sends), `tools` (the cached tool list and its refresh),
//! `liveness` (the ping after a timeout), `subscriptions` (the application's resource
//! subscriptions) and `control` (status, subscribers, `Reconnect`, `Shutdown`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rmcp::model::Tool;
use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};

use crate::actor::call_table::{CallTable, Situation};
use crate::actor::calls::Waiter;
use crate::actor::connect::{Attempt, EraMemory, Established};
use crate::actor::fanout::Fanout;
use crate::actor::messages::*;
use crate::actor::server_requests::ServerRequests;
use crate::actor::wire::Wire;
use crate::config::{ServerConfig, Settings};
use crate::error::Error;
use crate::policy::state::{Action, ConnectionMachine, Event, MachinePolicy, ServerState};
use crate::protocol::era::Era;
use crate::protocol::jsonrpc::RequestIds;
use crate::protocol::lifecycle::Negotiated;
use crate::transport::{Closer, Reaping, SkipCounters, TransportEvent};

pub(crate) use crate::actor::gone::{ActorGone, GoneNotice};

mod call_handlers;
mod control;
mod deadline_timer;
mod inbound;
mod input_rounds;
mod listen;
mod liveness;
mod subscriptions;
mod tools;

/// The connection the actor currently talks through.
struct Live {
    /// Which connection attempt made it; events of older ones are ignored.
    seq: u64,
    wire: Wire,
    closer: Closer,
    stream: SpawnHandle,
    /// The 2026-07-28 revision's change notifications, if a listen is open.
    listen: Option<listen::Listen>,
}

/// An event of connection `seq`.
#[derive(Message)]
#[rtype(result = "()")]
struct FromServer(u64, TransportEvent);

/// Makes the actor panic, to test that the supervisor restarts it. Not part of the API.
#[doc(hidden)]
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct InjectPanic {
    /// Server name.
    pub server: String,
}

/// The actor that supervises one MCP server. Usually created by the
/// [`Supervisor`](crate::Supervisor); ask it for the address with
/// [`GetServer`](crate::GetServer) to send calls with one actor hop instead of two.
pub struct ServerActor {
    name: Arc<str>,
    config: ServerConfig,
    settings: Settings,
    machine: ConnectionMachine,
    rng: StdRng,
    live: Option<Live>,
    /// Sequence number of the latest connection attempt.
    attempt_seq: u64,
    attempt: Option<SpawnHandle>,
    calls: CallTable,
    /// The one timer of the calls' deadlines: when it fires, and the timer.
    deadline_timer: Option<(Instant, deadline_timer::DeadlineTimer)>,
    /// The request ids of every connection: the handshake's and the call table's.
    ids: RequestIds,
    /// The processes this actor started that are not gone yet; `Shutdown` waits for them.
    reaping: Reaping,
    /// What the last opening agreed on (era, version, the server's capabilities), kept while
    /// the server is down.
    negotiated: Option<Negotiated>,
    /// The era to try first next time, as the attempts found it.
    era_memory: EraMemory,
    /// When the server last answered `server/discover` (2026-07-28), for its `ttlMs`.
    discovered_at: Option<Instant>,
    tools: Vec<Tool>,
    subscriptions: BTreeSet<String>,
    /// Successful reconnects after a Ready connection broke.
    reconnects: u64,
    skips: Arc<SkipCounters>,
    last_error: Option<Error>,
    /// The application's event subscribers, each with a bounded queue.
    events: Fanout,
    /// Answers the requests the server sends us, through the application's handler.
    server_requests: ServerRequests,
    client_capabilities: Value,
    ping_in_flight: bool,
    tools_refresh: tools::Refresh,
    /// Graceful shutdowns under way; `Shutdown` answers when they are done.
    closing: Vec<oneshot::Receiver<()>>,
    /// Becomes true once a `Shutdown` has stopped the server and its processes are gone. Every
    /// `Shutdown`, however many are sent, answers only then.
    stopped: watch::Sender<bool>,
    _gone: Option<GoneNotice>,
}

impl ServerActor {
    /// An actor for `config` with the given global settings (the config's overrides apply on
    /// top). Start it with [`Actor::start`]; it connects at once.
    pub fn new(config: ServerConfig, global: &Settings) -> Self {
        let settings = config.settings(global);
        let name: Arc<str> = Arc::from(config.name());
        let ids = RequestIds::default();
        let server_requests = ServerRequests::new(name.clone(), None, settings.call_timeout);
        ServerActor {
            calls: CallTable::new(name.clone(), &settings, ids.clone()),
            deadline_timer: None,
            ids,
            reaping: Reaping::default(),
            name,
            machine: ConnectionMachine::new(
                MachinePolicy::new(&settings, config.transport()),
                Instant::now(),
            ),
            config,
            settings,
            rng: StdRng::from_os_rng(),
            live: None,
            attempt_seq: 0,
            attempt: None,
            negotiated: None,
            era_memory: EraMemory::default(),
            discovered_at: None,
            tools: Vec::new(),
            subscriptions: BTreeSet::new(),
            reconnects: 0,
            skips: Arc::default(),
            last_error: None,
            events: Fanout::default(),
            server_requests,
            client_capabilities: json!({}),
            ping_in_flight: false,
            tools_refresh: tools::Refresh::Idle,
            closing: Vec::new(),
            stopped: watch::Sender::new(false),
            _gone: None,
        }
    }

    pub(crate) fn supervised(
        mut self,
        gone: GoneNotice,
        subscribers: Vec<Recipient<ServerEvent>>,
        handler: Option<SetRequestHandler>,
        subscriptions: BTreeSet<String>,
    ) -> Self {
        self._gone = Some(gone);
        for subscriber in subscribers {
            self.events.subscribe(subscriber);
        }
        if let Some(h) = handler {
            self.server_requests = self.server_requests.with_handler(h.handler);
            self.client_capabilities = h.capabilities;
        }
        self.subscriptions = subscriptions;
        self
    }

    // ----- the state machine and its actions -----

    fn feed(&mut self, event: Event, ctx: &mut Context<Self>) {
        let actions = self.machine.on(event, Instant::now(), &mut self.rng);
        for action in actions {
            self.perform(action, ctx);
        }
    }

    fn perform(&mut self, action: Action, ctx: &mut Context<Self>) {
        match action {
            Action::Connect => self.connect(ctx),
            Action::ScheduleRetry { after, token } => {
                ctx.run_later(after, move |act, ctx| {
                    act.feed(Event::RetryTimer { token }, ctx)
                });
            }
            Action::Disconnect => self.disconnect(ctx),
            Action::FlushWaiting => self.flush_waiting(),
            Action::FailWaiting => self.fail_waiting(),
            Action::Announce { message, warn } => self.announce(message, warn),
        }
    }

    fn connect(&mut self, ctx: &mut Context<Self>) {
        self.attempt_seq += 1;
        let seq = self.attempt_seq;
        let attempt = Attempt {
            server: self.name.clone(),
            transport: self.config.transport().clone(),
            settings: self.settings.clone(),
            subscriptions: self.subscriptions.iter().cloned().collect(),
            client_capabilities: self.client_capabilities.clone(),
            server_requests: self.server_requests.clone(),
            skips: self.skips.clone(),
            ids: self.ids.clone(),
            reaping: self.reaping.clone(),
            remembered: self.era_memory.get(),
            learned: self.era_memory.clone(),
            fresh: self.fresh_discovery(),
        };
        tracing::debug!(server = %self.name, attempt = self.machine.attempts(), "connecting");
        // An actor started on its own has not been through the supervisor's checks: invalid
        // settings fail the attempt, and retrying cannot help that.
        let checked = self.config.validate_with(&self.settings);
        let number = self.machine.attempts();
        let handle = ctx.spawn(
            attempt
                .run(number, checked)
                .into_actor(self)
                .map(move |result, act, ctx| act.on_attempt_done(seq, result, ctx)),
        );
        self.attempt = Some(handle);
    }

    fn on_attempt_done(
        &mut self,
        seq: u64,
        result: Result<Established, Error>,
        ctx: &mut Context<Self>,
    ) {
        if seq != self.attempt_seq {
            return; // Superseded; dropping `result` kills its process.
        }
        self.attempt = None;
        match result {
            Ok(established) => {
                let Established {
                    wire,
                    events,
                    closer,
                    negotiated,
                    era_note,
                    reused,
                    tools,
                    notifications,
                    subscribed,
                } = established;
                let stream = ctx.add_stream(futures_util::StreamExt::map(events, move |e| {
                    FromServer(seq, e)
                }));
                if matches!(self.machine.state(), ServerState::Reconnecting { .. }) {
                    self.reconnects += 1;
                    crate::telemetry::reconnected(&self.name);
                }
                if let Some(note) = era_note {
                    // The server changed era: say so where people look.
                    tracing::warn!(server = %self.name, note = %note, "the server changed its protocol era");
                    self.last_error = Some(Error::connection(&self.name, note));
                }
                let had_session = self.negotiated.is_some();
                if negotiated.era == Era::Modern && !reused {
                    self.discovered_at = Some(Instant::now());
                }
                self.negotiated = Some(negotiated);
                self.replace_tools(tools, had_session);
                self.live = Some(Live {
                    seq,
                    wire,
                    closer,
                    stream,
                    listen: None,
                });
                self.feed(Event::Connected, ctx);
                match self.negotiated.as_ref().map(|n| n.era) {
                    Some(Era::Modern) => self.open_listen(None),
                    _ => self.reconcile_subscriptions(subscribed, ctx),
                }
                for (method, params) in notifications {
                    self.on_notification(method, params, ctx);
                }
            }
            Err(error) => {
                // One log line: a stderr tail goes in a field of its own.
                let tail = error.stderr_tail();
                if tail.is_empty() {
                    tracing::warn!(server = %self.name, attempt = self.machine.attempts(), error = %error, "connection attempt failed");
                } else {
                    tracing::warn!(server = %self.name, attempt = self.machine.attempts(), error = %error.without_stderr(), stderr = ?tail, "connection attempt failed");
                }
                self.last_error = Some(error.clone());
                self.feed(Event::ConnectFailed(error), ctx);
            }
        }
    }

    fn disconnect(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.attempt.take() {
            ctx.cancel_future(handle);
        }
        self.attempt_seq += 1;
        let Some(live) = self.live.take() else { return };
        ctx.cancel_future(live.stream);
        // Dropping the last sender closes the server's stdin.
        drop(live.wire);
        let closer = live.closer;
        if *self.machine.state() == ServerState::Stopped {
            let grace = self.settings.shutdown_grace;
            let (done, closed) = oneshot::channel();
            self.closing.push(closed);
            actix::spawn(async move {
                closer.shutdown(grace).await;
                let _ = done.send(());
            });
        } else {
            // The connection is broken or hung: no politeness.
            actix::spawn(closer.kill());
        }
    }

    fn announce(&mut self, message: String, warn: bool) {
        let state = self.machine.state().clone();
        let attempt = self.machine.attempts();
        // Subscribers get the message as it is; the log gets it on one line, with the stderr
        // tail of the error it quotes (always the last error) in a field of its own.
        let (line, tail) = match &self.last_error {
            Some(error) => error.split_stderr_tail(&message),
            None => (message.clone(), &[][..]),
        };
        match (warn, tail.is_empty()) {
            (true, true) => {
                tracing::warn!(server = %self.name, state = state.name(), attempt, "{line}")
            }
            (true, false) => {
                tracing::warn!(server = %self.name, state = state.name(), attempt, stderr = ?tail, "{line}")
            }
            (false, true) => tracing::info!(server = %self.name, state = state.name(), "{line}"),
            (false, false) => {
                tracing::info!(server = %self.name, state = state.name(), stderr = ?tail, "{line}")
            }
        }
        crate::telemetry::state_changed(&self.name, state.name());
        self.emit(ServerEvent::StateChanged {
            server: self.name.to_string(),
            state,
            message,
        });
    }

    fn emit(&mut self, event: ServerEvent) {
        self.events.emit(&event);
    }

    /// The last discovery, if the server said it may be reused and it is still fresh.
    fn fresh_discovery(&self) -> Option<Negotiated> {
        let negotiated = self.negotiated.as_ref()?;
        let ttl = negotiated.fresh_for?;
        let fetched = self.discovered_at?;
        (negotiated.era == Era::Modern && fetched.elapsed() < ttl).then(|| negotiated.clone())
    }

    // ----- calls: the call table, with what the actor knows -----

    /// Registers a call of the actor's own and returns what it awaits.
    fn start_call(&mut self, call: Call, ctx: &mut Context<Self>) -> Result<Waiter, Error> {
        let situation = Situation::of(&self.machine, self.last_error.as_ref());
        let wire = self.live.as_ref().map(|l| &l.wire);
        let (server, method) = (call.server.clone(), call.method.clone());
        let receipt = self.calls.start(call, &situation, wire, Instant::now())?;
        self.arm_deadlines(ctx);
        Ok(Waiter {
            rx: receipt.rx,
            server,
            method,
        })
    }

    fn flush_waiting(&mut self) {
        let situation = Situation::of(&self.machine, self.last_error.as_ref());
        let wire = self.live.as_ref().map(|l| &l.wire);
        self.calls.flush(&situation, wire);
    }

    fn fail_waiting(&mut self) {
        let situation = Situation::of(&self.machine, self.last_error.as_ref());
        self.calls.fail_waiting(&situation);
    }

    fn connection_lost(&mut self, error: Error, ctx: &mut Context<Self>) {
        if self.live.is_none() {
            return;
        }
        self.last_error = Some(error.clone());
        self.calls.settle(&error, None, &self.tools);
        self.feed(Event::ConnectionLost(error), ctx);
    }
}

impl Actor for ServerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.feed(Event::Start, ctx);
    }
}

impl StreamHandler<FromServer> for ServerActor {
    fn handle(&mut self, FromServer(seq, event): FromServer, ctx: &mut Context<Self>) {
        if self.live.as_ref().map(|l| l.seq) != Some(seq) {
            return;
        }
        match event {
            TransportEvent::Message(message) => self.on_message(message, ctx),
            TransportEvent::Rejected(ids) => self.calls.unsend(&ids),
            TransportEvent::CallFailed { id, error } => self.calls.fail_written(id, error),
            TransportEvent::Interrupted { ids, error } if self.listen_interrupted(&ids) => {
                // The listen stream broke: as the GET stream's loss, the connection's.
                self.connection_lost(error, ctx);
            }
            TransportEvent::Interrupted { ids, error } => {
                self.calls.settle(&error, Some(&ids), &self.tools);
                self.flush_waiting();
            }
            TransportEvent::Closed(error) => self.connection_lost(error, ctx),
        }
    }

    // The stream's last item is `Closed`, handled above; its end must not stop the actor (the
    // default does).
    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}
