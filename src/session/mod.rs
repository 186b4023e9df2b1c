//! The session core: everything that decides about one server's calls and connection, with no
//! IO in it — no actix, no tokio, no sockets, no processes. The pattern is quinn-proto's
//! `Connection`: a plain struct driven by events, which says what to do through commands and
//! one timer. [`ServerActor`](crate::ServerActor) is its driver: it feeds the session what its
//! mailbox and its transport bring, carries out the [`Command`]s, keeps one real timer set for
//! [`Session::poll_timeout`], and calls [`Session::handle_timeout`] when it fires.
//!
//! Inputs: a call from a caller ([`Session::call`]), a connection attempt's end
//! ([`Session::attempt_done`]), what the transport reports ([`Session::transport_event`]: a
//! frame read, requests refused or lost, the connection closed), the time
//! ([`Session::handle_timeout`]), the application's answers to a server's questions, and the
//! steering messages (subscribe, reconnect, stop). Outputs: writes through the connection's
//! [`Wire`] (a call, not a queued command: see [`Link`](crate::transport::Link)), answers
//! through each call's [`Reply`], and [`Command`]s for everything that needs IO or the actor.
//!
//! Where things are decided, one room each:
//!
//! - [`calls`]: the call table — ids, the waiting queue, writing and re-writing, the answers;
//!   [`entry`]: one call, and where its answer goes; [`request`]: a call's params, serialized
//!   once;
//! - [`outcome`]: THE decision for a call that gets no answer from the server: re-send, or
//!   answer `outcome_unknown`, `unavailable` or `stopped`;
//! - [`timers`]: the one timer table (call deadlines, retries, the listen stream's reopening,
//!   the tool-list refresh, the look for callers who left);
//! - [`wire`]: how a request is shaped for the connection's era (the era on the way out);
//!   [`era`]: the discovery cache and the era memory (what the next attempt tries);
//! - [`liveness`]: when a silent server counts as gone; [`listen`]: the 2026-07-28 listen
//!   stream; [`tools`]: the tool cache and its refresh;
//! - [`status`] and [`events`]: what status queries and subscribers are told;
//! - [`handover`]: what a replaced generation hands to the next (its waiting calls, its
//!   tasks).
//!
//! The connection state machine is [`crate::policy::state`] (pure, too); the session feeds it
//! and carries out its actions.

use std::collections::{BTreeSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::{json, Map, Value};

use crate::config::{Settings, Transport};
use crate::error::{Error, ErrorKind};
use crate::policy::deadline::saturating_add;
use crate::policy::retry::RetryPolicy;
use crate::policy::state::{Action, ConnectionMachine, Event, MachinePolicy, ServerState};
use crate::protocol::as_sent::ListedTool;
use crate::protocol::era::{judge_initialize_error, Era};
use crate::protocol::jsonrpc::{self, Id, Inbound, RequestIds, RpcError};
use crate::protocol::lifecycle::Negotiated;
use crate::protocol::mrtr::{self, InputRequest, Round};
use crate::protocol::pagination::Listed;
use crate::protocol::response::Reparsed;
use crate::protocol::text::server_text;
use crate::transport::{SkipCounters, TransportEvent};

pub(crate) mod calls;
pub(crate) mod entry;
pub(crate) mod era;
pub(crate) mod events;
pub(crate) mod handover;
pub(crate) mod lease;
pub(crate) mod listen;
pub(crate) mod liveness;
pub(crate) mod outcome;
pub(crate) mod request;
pub(crate) mod status;
pub(crate) mod tasks;
pub(crate) mod timers;
pub(crate) mod tools;
pub(crate) mod wire;

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

use calls::{AfterExpire, CallTable};
use entry::{Internal, Payload, Replier, Reply};
use era::{EraKnowledge, EraPlan};
use events::ServerEvent;
pub(crate) use lease::LeaseTend;
use listen::{Ended, ListenStream};
use liveness::{Liveness, Verdict};
use outcome::Situation;
use request::{CallRequest, RequestOptions};
use status::ServerStatus;
use tasks::TaskTable;
pub(crate) use tasks::{Restored, Resumption, TaskWrite};
use timers::{Timer, Timers};
use tools::ToolCache;
use wire::Wire;

/// How often the session looks for calls whose callers stopped waiting, while any are in
/// flight.
pub(crate) const CALLER_SWEEP: Duration = Duration::from_millis(500);

/// What the driver must do for the session.
#[derive(Debug)]
pub(crate) enum Command {
    /// Start connection attempt `seq`: spawn the transport and open it (see `actor/connect`),
    /// then report with [`Session::attempt_done`].
    Connect { seq: u64, plan: Box<AttemptPlan> },
    /// Drop the connection (and any attempt under way): politely (stdin closed, session
    /// deleted) when the server is being stopped, at once otherwise.
    Disconnect { polite: bool },
    /// Tell the application's event subscribers.
    Emit(ServerEvent),
    /// Fetch the whole tool list with calls through the session, and report with
    /// [`Session::tools_refreshed`].
    RefreshTools,
    /// Answer a request the server sent (session era) through the application's handler, on
    /// the current connection.
    AnswerServerRequest {
        id: Id,
        method: String,
        params: Option<Value>,
    },
    /// Ask the application's handler what a multi-round-trip result needs, and report with
    /// [`Session::input_answered`].
    AskInput(InputAsk),
    /// Record this in the task store (if there is one), before carrying out what follows.
    Persist(TaskWrite),
    /// Hand this back to [`Session::resume`]: what waited for the writes before it.
    Resume(Resumption),
    /// Give this to the server's current generation ([`Session::take_over`]): this one
    /// drains (see [`handover`]).
    HandOver(handover::Handover),
}

/// Everything a connection attempt starts from.
#[derive(Debug, Clone)]
pub(crate) struct AttemptPlan {
    /// The attempt's number in the state machine's count, for its span and logs.
    pub number: u32,
    pub era: EraPlan,
    /// The application's resource subscriptions, re-sent by a session-era handshake.
    pub subscriptions: Vec<String>,
    /// What `initialize` declares (the session era).
    pub client_capabilities: Value,
    /// What every request of the 2026-07-28 revision declares: the same, and the extensions
    /// this client supports there (the Tasks extension, unless the settings turn it off).
    pub modern_capabilities: Value,
}

/// A connection an attempt opened, as the session takes it (the driver keeps the IO parts).
pub(crate) struct Opened {
    /// The transport it is over, for the status, if not the configured one's kind (an `auto`
    /// HTTP server found speaking the legacy HTTP+SSE transport: `sse`).
    pub transport: Option<&'static str>,
    pub wire: Wire,
    pub negotiated: Negotiated,
    /// Why this attempt spoke another era than it tried first (the server changed).
    pub era_note: Option<String>,
    /// The fresh discovery of the plan was used: nothing was discovered anew.
    pub reused: bool,
    /// The server answered a request of the opening with a result (see [`era`]: a connection
    /// nothing was answered on proves nothing about a discovery).
    pub answered: bool,
    pub tools: Vec<ListedTool>,
    /// Why `tools` is not the server's whole list, if it is not.
    pub tools_cut: Option<String>,
    /// Notifications that arrived during the handshake.
    pub notifications: Vec<(String, Option<Value>)>,
    /// The subscriptions the handshake sent.
    pub subscribed: Vec<String>,
}

/// The input a server asks for: what to ask the application's handler, and what the answers
/// are for.
#[derive(Debug)]
pub(crate) struct InputAsk {
    pub requests: Vec<InputRequest>,
    asked_by: AskedBy,
}

impl InputAsk {
    /// Whether it asks for task `task_id`'s input.
    pub(crate) fn is_for_task(&self, task_id: &str) -> bool {
        matches!(&self.asked_by, AskedBy::Task { task_id: of } if of == task_id)
    }
}

/// Who asked for input, and what its answers need.
#[derive(Debug)]
enum AskedBy {
    /// A multi-round-trip result (2026-07-28): call `key` goes out again with the answers.
    Round {
        key: u64,
        method: String,
        /// The params of the round just answered.
        params: Option<Value>,
        request_state: Option<Value>,
    },
    /// An `input_required` task (the Tasks extension): the answers go out with `tasks/update`.
    Task { task_id: String },
}

/// The application's answers to an [`InputAsk`].
#[derive(Debug)]
pub(crate) enum InputAnswers {
    /// No request handler is registered.
    NoHandler,
    /// Each request's key, method and answer, in order.
    Answered(Vec<(String, String, Result<Value, RpcError>)>),
}

/// The connection the session talks through.
struct Live {
    /// Which connection attempt made it; events of older ones are ignored.
    seq: u64,
    wire: Wire,
    /// The 2026-07-28 revision's change notifications.
    listen: ListenStream,
    /// The server answered one of our requests on it.
    proven: bool,
}

/// What the session knows of its server right now, for the errors of calls that cannot be sent.
fn situation_of<'a>(
    machine: &'a ConnectionMachine,
    last_error: &'a Option<Error>,
) -> Situation<'a> {
    Situation {
        state: machine.state(),
        attempts: machine.attempts(),
        last_error: last_error.as_ref(),
    }
}

/// The session of one server.
pub(crate) struct Session {
    name: Arc<str>,
    settings: Settings,
    /// `stdio`, `http` or `sse`, for the status.
    transport_kind: &'static str,
    /// Over HTTP, a server behind a URL may be replaced by another (see `refused_for_era`).
    http: bool,
    /// Lines on stdout that were not JSON-RPC, shared with the transport, which counts most.
    skips: Arc<SkipCounters>,
    machine: ConnectionMachine,
    rng: StdRng,
    calls: CallTable,
    timers: Timers,
    /// The earliest timer the driver was told of: a new one only matters if it is earlier.
    told: Option<Instant>,
    timers_moved: bool,
    /// The request ids of every connection: the handshake's and the call table's.
    ids: RequestIds,
    /// The attempt under way: its number, and whether it was given a discovery to reuse.
    attempt: Option<(u64, bool)>,
    attempt_seq: u64,
    live: Option<Live>,
    era: EraKnowledge,
    tools: ToolCache,
    /// The calls the server runs as tasks (the Tasks extension).
    tasks: TaskTable,
    subscriptions: BTreeSet<String>,
    liveness: Liveness,
    /// Successful reconnects after a Ready connection broke.
    reconnects: u64,
    last_error: Option<Error>,
    client_capabilities: Value,
    commands: VecDeque<Command>,
    /// Replaced: finishing the calls written on its connection, and when its tasks go (see
    /// [`Session::drain`]).
    draining: Option<handover::TasksGo>,
}

impl Session {
    /// The session of server `name` over `transport`, with its settings (overrides applied),
    /// taking request ids from `ids`; `seed` seeds the backoff's jitter.
    pub fn new(
        name: Arc<str>,
        settings: Settings,
        transport: &Transport,
        ids: RequestIds,
        skips: Arc<SkipCounters>,
        now: Instant,
        seed: u64,
    ) -> Self {
        Session {
            transport_kind: transport.kind(),
            skips,
            calls: CallTable::new(name.clone(), &settings, ids.clone()),
            machine: ConnectionMachine::new(MachinePolicy::new(&settings, transport), now),
            http: matches!(transport, Transport::Http(_)),
            rng: StdRng::seed_from_u64(seed),
            timers: Timers::default(),
            told: None,
            timers_moved: false,
            ids,
            attempt: None,
            attempt_seq: 0,
            live: None,
            era: EraKnowledge::default(),
            tools: ToolCache::default(),
            tasks: TaskTable::new(name.clone()),
            subscriptions: BTreeSet::new(),
            liveness: Liveness::default(),
            reconnects: 0,
            last_error: None,
            client_capabilities: json!({}),
            commands: VecDeque::new(),
            draining: None,
            settings,
            name,
        }
    }

    /// The server's name.
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The connection state.
    pub fn state(&self) -> &ServerState {
        self.machine.state()
    }

    /// The calls not answered yet: in flight, or waiting for a connection.
    pub fn pending_calls(&self) -> usize {
        self.calls.len()
    }

    /// What the last connection attempt or connection failed with, if anything.
    pub fn last_error(&self) -> Option<&Error> {
        self.last_error.as_ref()
    }

    /// Sets the subscriptions before the first connection (a replacement actor's).
    pub fn set_subscriptions(&mut self, subscriptions: BTreeSet<String>) {
        self.subscriptions = subscriptions;
    }

    /// The client capabilities announced from the next opening on.
    pub fn set_client_capabilities(&mut self, capabilities: Value) {
        self.client_capabilities = capabilities;
    }

    /// The next command to carry out.
    #[inline]
    pub fn poll_command(&mut self) -> Option<Command> {
        self.commands.pop_front()
    }

    /// The earliest instant something is due, for the driver's one timer. Also clears
    /// [`Session::timers_moved`].
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        let calls = &self.calls;
        let next = self
            .timers
            .next(|key, at| calls.deadline_of(key) == Some(at));
        self.told = next;
        self.timers_moved = false;
        next
    }

    /// Whether a timer earlier than the last [`Session::poll_timeout`] was armed since.
    #[inline]
    pub fn timers_moved(&self) -> bool {
        self.timers_moved
    }

    fn moved_to(&mut self, at: Instant) {
        if self.told.is_none_or(|told| at < told) {
            self.timers_moved = true;
        }
    }

    // ----- the state machine and its actions -----

    /// Begins: the first connection attempt.
    pub fn start(&mut self, now: Instant) {
        self.feed(Event::Start, now);
    }

    fn feed(&mut self, event: Event, now: Instant) {
        let actions = self.machine.on(event, now, &mut self.rng);
        for action in actions {
            self.perform(action, now);
        }
    }

    fn perform(&mut self, action: Action, now: Instant) {
        match action {
            Action::Connect => self.connect(now),
            Action::ScheduleRetry { after, token } => {
                let at = saturating_add(now, after);
                self.timers.retry(at, token);
                self.moved_to(at);
            }
            Action::Disconnect => self.disconnect(now),
            Action::FlushWaiting => {
                let situation = situation_of(&self.machine, &self.last_error);
                let wire = self.live.as_ref().map(|l| &l.wire);
                self.calls.flush(&situation, wire);
            }
            Action::FailWaiting => {
                let situation = situation_of(&self.machine, &self.last_error);
                self.calls.fail_waiting(&situation);
            }
            Action::Announce { message, warn } => self.announce(message, warn),
        }
    }

    fn connect(&mut self, now: Instant) {
        self.attempt_seq += 1;
        let seq = self.attempt_seq;
        let era = self.era.plan(now);
        self.attempt = Some((seq, era.fresh.is_some()));
        let plan = AttemptPlan {
            number: self.machine.attempts(),
            era,
            subscriptions: self.subscriptions.iter().cloned().collect(),
            client_capabilities: self.client_capabilities.clone(),
            modern_capabilities: if self.settings.tasks {
                crate::protocol::tasks::declare(&self.client_capabilities)
            } else {
                self.client_capabilities.clone()
            },
        };
        tracing::debug!(server = %self.name, attempt = plan.number, "connecting");
        self.commands.push_back(Command::Connect {
            seq,
            plan: Box::new(plan),
        });
    }

    fn disconnect(&mut self, now: Instant) {
        // An attempt under way is dropped with its half-made connection.
        self.attempt = None;
        self.attempt_seq += 1;
        self.live = None;
        // No listen tells of any task now: each is asked at its own pace again (on the next
        // connection).
        self.sync_task_coverage(now);
        let polite = *self.machine.state() == ServerState::Stopped;
        self.commands.push_back(Command::Disconnect { polite });
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
        self.commands.push_back(Command::Emit(event));
    }

    /// Whether attempt `seq` is the one under way (a superseded one's connection is dropped).
    pub fn is_current_attempt(&self, seq: u64) -> bool {
        self.attempt.is_some_and(|(current, _)| current == seq)
    }

    /// Attempt `seq` ended: `opened` a connection, or failed; `learned` is the era it found the
    /// server speaks, if it found out (also when it failed).
    pub fn attempt_done(
        &mut self,
        seq: u64,
        opened: Result<Opened, Error>,
        learned: Option<Era>,
        now: Instant,
    ) {
        let Some((_, used_discovery)) = self.attempt.filter(|(current, _)| *current == seq) else {
            return; // Superseded.
        };
        self.attempt = None;
        match opened {
            Ok(opened) => self.opened(seq, opened, now),
            Err(error) => {
                // One log line: a stderr tail goes in a field of its own.
                let tail = error.stderr_tail();
                if tail.is_empty() {
                    tracing::warn!(server = %self.name, attempt = self.machine.attempts(), error = %error, "connection attempt failed");
                } else {
                    tracing::warn!(server = %self.name, attempt = self.machine.attempts(), error = %error.without_stderr(), stderr = ?tail, "connection attempt failed");
                }
                self.era.attempt_failed(used_discovery, learned);
                self.last_error = Some(error.clone());
                self.feed(Event::ConnectFailed(error), now);
            }
        }
        self.act_on_internal(now);
    }

    fn opened(&mut self, seq: u64, opened: Opened, now: Instant) {
        let Opened {
            transport,
            wire,
            negotiated,
            era_note,
            reused,
            answered,
            tools,
            tools_cut,
            notifications,
            subscribed,
        } = opened;
        if let Some(transport) = transport {
            self.transport_kind = transport;
        }
        if matches!(self.machine.state(), ServerState::Reconnecting { .. }) {
            self.reconnects += 1;
            crate::telemetry::reconnected(&self.name);
        }
        if let Some(note) = era_note {
            // The server changed era: say so where people look.
            tracing::warn!(server = %self.name, note = %note, "the server changed its protocol era");
            self.last_error = Some(Error::connection(&self.name, note));
        }
        let had_session = self.era.negotiated().is_some();
        let modern = negotiated.era == Era::Modern;
        self.era.opened(negotiated, reused, now);
        let listed = Listed {
            items: tools,
            cut: tools_cut,
        };
        if let Some(event) = self.tools.replace(&self.name, listed, had_session) {
            self.emit(event);
        }
        self.live = Some(Live {
            seq,
            wire,
            listen: ListenStream::default(),
            proven: answered,
        });
        self.feed(Event::Connected, now);
        if modern {
            self.open_listen(None, now);
        } else {
            // No listen: any task told of on an earlier connection is polled at its pace.
            self.sync_task_coverage(now);
            self.reconcile_subscriptions(subscribed, now);
        }
        for (method, params) in notifications {
            self.on_notification(method, params, now);
        }
    }

    fn connection_lost(&mut self, error: Error, now: Instant) {
        let Some(live) = &self.live else {
            return;
        };
        self.era.connection_lost(live.proven);
        self.last_error = Some(error.clone());
        self.calls.settle(&error, None, self.tools.list());
        if self.draining.is_some() {
            // Replaced: no reconnect; the new generation sends what may be sent again.
            return self.stop(now);
        }
        self.feed(Event::ConnectionLost(error), now);
    }

    // ----- calls -----

    /// Takes a caller's call, answered on `reply` (at once, if it is refused).
    pub fn call(&mut self, mut call: CallRequest, reply: Rc<dyn Reply>, now: Instant) {
        let situation = situation_of(&self.machine, &self.last_error);
        if let Err(e) = self.calls.admit(&call, &situation) {
            return reply.answer(&self.name, Err(e));
        }
        if call.method == "tools/call" && self.settings.tasks {
            self.augment_for_tasks(&mut call);
        }
        self.open_call(call, Replier::Caller(reply), now);
        let sweep = || saturating_add(now, CALLER_SWEEP);
        if self.timers.caller_sweep_at(sweep) {
            self.moved_to(sweep());
        }
    }

    /// Registers a call (admitted, or the session's own) and its deadline.
    fn open_call(&mut self, call: CallRequest, reply: Replier, now: Instant) -> u64 {
        let situation = situation_of(&self.machine, &self.last_error);
        let wire = self.live.as_ref().map(|l| &l.wire);
        let (key, deadline) = self.calls.open(call, reply, &situation, wire, now);
        // A call answered at once (refused by a transport that is gone) leaves a stale item,
        // which the timer table skips.
        self.arm_deadline(key, deadline);
        key
    }

    fn arm_deadline(&mut self, key: u64, at: Instant) {
        let calls = &self.calls;
        self.timers.call(at, key, calls.len(), |k, at| {
            calls.deadline_of(k) == Some(at)
        });
        self.moved_to(at);
    }

    /// Everything that is due at `now`: expired calls are answered (and a liveness check
    /// started), retries start, a listen reopens, the tool list is fetched, callers who left
    /// are let go.
    pub fn handle_timeout(&mut self, now: Instant) {
        loop {
            let calls = &self.calls;
            let Some(timer) = self
                .timers
                .pop_due(now, |key, at| calls.deadline_of(key) == Some(at))
            else {
                break;
            };
            match timer {
                Timer::Call(key) if self.tasks.is_waiting(key) => {
                    if let Some(handle) = self.tasks.waiter_left(key) {
                        tracing::debug!(server = %self.name, task = %server_text(&handle.task_id), "a call's deadline passed while its task runs; the task runs on");
                        self.calls.expire_for_task(key, handle);
                    }
                }
                Timer::Call(key) => {
                    let situation = situation_of(&self.machine, &self.last_error);
                    let wire = self.live.as_ref().map(|l| &l.wire);
                    if self.calls.expire(key, &situation, wire, now) == AfterExpire::CheckLiveness {
                        self.check_liveness(now);
                    }
                }
                Timer::Retry(token) => self.feed(Event::RetryTimer { token }, now),
                Timer::ListenReopen(seq) => {
                    if self.live.as_ref().is_some_and(|l| l.seq == seq) {
                        self.open_listen(None, now);
                    }
                }
                Timer::ListenAck { seq, id } => {
                    let timeout = self.settings.call_timeout;
                    if let Some(live) = self.live.as_mut().filter(|l| l.seq == seq) {
                        live.listen.unacknowledged(id, timeout);
                    }
                }
                Timer::ToolsRefresh => {
                    if self.tools.start_refresh() {
                        self.commands.push_back(Command::RefreshTools);
                    }
                }
                Timer::TaskPolls => self.poll_due_tasks(now),
                Timer::CallerSweep => {
                    let wire = self.live.as_ref().map(|l| &l.wire);
                    let gone = self.calls.sweep_abandoned(wire);
                    if !gone.is_empty() {
                        tracing::debug!(server = %self.name, calls = gone.len(), "calls abandoned by their callers were let go");
                    }
                    for key in gone {
                        // A caller that waited for a task leaves it running.
                        self.tasks.waiter_left(key);
                    }
                    if self.calls.has_callers() {
                        let sweep = saturating_add(now, CALLER_SWEEP);
                        self.timers.caller_sweep(sweep);
                        self.moved_to(sweep);
                    }
                }
            }
            self.act_on_internal(now);
        }
    }

    /// After a timeout: is the server alive at all? (see [`liveness`])
    fn check_liveness(&mut self, now: Instant) {
        let Some(seq) = self.live.as_ref().map(|l| l.seq) else {
            return;
        };
        if !self.liveness.idle() {
            return;
        }
        let mut call = CallRequest::of_value(self.name.to_string(), "ping", None);
        call.options = RequestOptions {
            timeout: Some(self.settings.ping_timeout),
            retry: RetryPolicy::Never,
            ..RequestOptions::default()
        };
        self.liveness.started(seq);
        self.open_call(call, Replier::Session(Internal::Liveness { seq }), now);
    }

    /// Acts on the answers of the session's own calls.
    fn act_on_internal(&mut self, now: Instant) {
        while let Some(done) = self.calls.take_internal() {
            for (internal, outcome) in done {
                match internal {
                    Internal::Liveness { .. } => self.liveness_done(outcome, now),
                    Internal::Subscription { method, uri } => {
                        if let Err(e) = outcome {
                            tracing::warn!(server = %self.name, method, uri = %server_text(&uri), error = %e, "subscription change after the handshake failed");
                        }
                    }
                    Internal::TaskPoll { task_id } => self.task_polled(task_id, outcome, now),
                    Internal::TaskUpdate { task_id } => self.task_updated(task_id, outcome, now),
                    Internal::TaskResult { task_id } => {
                        self.task_result_fetched(task_id, outcome, now)
                    }
                }
            }
        }
    }

    fn liveness_done(&mut self, outcome: Result<Payload, Error>, now: Instant) {
        let answered = match &outcome {
            Ok(_) => true,
            // An error answer means the server is alive.
            Err(e) => e.kind() == ErrorKind::Rpc,
        };
        let timed_out = matches!(&outcome, Err(e) if e.kind() == ErrorKind::Timeout);
        let live = self.live.as_ref().map(|l| l.seq);
        match self.liveness.finished(answered, timed_out, live) {
            Verdict::Alive => {
                tracing::debug!(server = %self.name, "liveness check passed; connection kept")
            }
            Verdict::Moot => {}
            Verdict::Dead => {
                let modern = self
                    .live
                    .as_ref()
                    .is_some_and(|l| l.wire.era() == Era::Modern);
                // The wire asks a modern server `server/discover` instead, its revision having
                // no ping.
                let check = if modern {
                    "liveness ping (as server/discover)"
                } else {
                    "liveness ping"
                };
                let error = Error::connection(
                    &self.name,
                    format!(
                        "{check} got no answer, and nothing else came from the server, within {:?}",
                        self.settings.ping_timeout
                    ),
                );
                self.connection_lost(error, now);
            }
        }
    }

    // ----- what the transport reports -----

    /// Connection `seq`'s transport reported `event`.
    pub fn transport_event(&mut self, seq: u64, event: TransportEvent, now: Instant) {
        if self.live.as_ref().map(|l| l.seq) != Some(seq) {
            return;
        }
        match event {
            TransportEvent::Message(message) => {
                self.liveness.saw_life(seq);
                self.on_message(message, now);
            }
            TransportEvent::Rejected(ids) => self.calls.unsend(&ids),
            TransportEvent::CallFailed { id, error } => {
                self.liveness.saw_life(seq);
                match self.live.as_ref().and_then(|l| l.listen.among(&[id])) {
                    Some(_) => self.on_listen_failed(error, now),
                    None => self.calls.fail_written(id, error),
                }
            }
            TransportEvent::Unwritten { id, error } => {
                match self.live.as_ref().and_then(|l| l.listen.among(&[id])) {
                    Some(_) => self.on_listen_cut(now),
                    None => {
                        if self.calls.cut_off(id, error) {
                            self.perform(Action::FlushWaiting, now);
                        }
                    }
                }
            }
            TransportEvent::Interrupted { ids, error, socket } => {
                match self.live.as_ref().and_then(|l| l.listen.among(&ids)) {
                    // The listen stream broke: as the GET stream's loss, the connection's.
                    Some(true) => self.connection_lost(error, now),
                    listen => {
                        if listen.is_some() && socket {
                            // It never opened because its socket closed under it: no answer
                            // about listening at all.
                            self.on_listen_cut(now);
                        } else if listen.is_some() {
                            // It never opened: as a GET stream that cannot be read, not the
                            // connection's loss.
                            self.on_listen_failed(error.clone(), now);
                        }
                        self.calls.settle(&error, Some(&ids), self.tools.list());
                        self.perform(Action::FlushWaiting, now);
                    }
                }
            }
            TransportEvent::Closed(error) => self.connection_lost(error, now),
        }
        self.act_on_internal(now);
    }

    fn on_message(&mut self, message: Inbound, now: Instant) {
        let Some(live) = self.live.as_mut() else {
            return;
        };
        match message {
            // A line taken for a response by its fixed parts alone is confirmed by the parse of
            // its result into its caller's type (see `CallTable::on_raw_response`); the listen
            // stream's, which nothing parses, is confirmed here.
            Inbound::Response { id, result } if live.listen.is_listen(&id) => {
                match result.unless_plain() {
                    Some(reparsed) => self.on_reparsed(reparsed, now),
                    None => self.on_listen_end(&id, Ok(()), now),
                }
            }
            Inbound::Error {
                id: Some(id),
                error,
            } if live.listen.is_listen(&id) => self.on_listen_end(&id, Err(error), now),
            Inbound::Response { id, result } => {
                live.proven = true;
                // A modern result is looked into (does it ask for input?); a legacy one goes
                // to its caller as it came, parsed there once into what the caller wants.
                if live.wire.era() == Era::Legacy && self.calls.is_task_augmented(&id) {
                    return self.on_augmented_response(&id, result, now);
                }
                let reparsed = match (live.wire.era() == Era::Modern).then(|| result.to_value()) {
                    Some(Ok(parsed)) => return self.on_modern_response(&id, parsed, now),
                    // Not parsed: the call is answered with why, as any unparsable result,
                    // unless the line was not the response it looked like.
                    Some(Err(_)) | None => self.calls.on_raw_response(&id, result),
                };
                if let Some(reparsed) = reparsed {
                    self.on_reparsed(reparsed, now);
                }
            }
            Inbound::Error {
                id: Some(id),
                error,
            } => {
                if !self.refused_for_era(&id, &error, now) {
                    self.calls.on_error_response(&id, error)
                }
            }
            Inbound::Error { id: None, error } => {
                tracing::warn!(server = %self.name, code = error.code, message = %server_text(&error.message), "server reported an error it could not attribute to a request");
            }
            Inbound::Request { id, method, params } => {
                if live.wire.era() == Era::Modern {
                    // The 2026-07-28 revision asks for input in results, never with requests
                    // of the server's own.
                    tracing::debug!(server = %self.name, method = %server_text(&method), "a modern server sent a request; refused");
                    let refusal = Err(mrtr::server_request_refusal());
                    live.wire
                        .link()
                        .answer(jsonrpc::response_line(&id, &refusal));
                    return;
                }
                self.commands
                    .push_back(Command::AnswerServerRequest { id, method, params });
            }
            Inbound::Notification { method, params } => self.on_notification(method, params, now),
        }
    }

    /// A stdio line that looked like a plain response and is not one, routed as what the full
    /// parse makes of it: its messages, or a counted skip.
    fn on_reparsed(&mut self, reparsed: Reparsed, now: Instant) {
        for message in self.skips.messages_of(&self.name, reparsed) {
            self.on_message(message, now);
        }
    }

    /// A session-era request over HTTP answered `-32022` with a modern version we speak: the
    /// server behind the URL was replaced by one that speaks only the 2026-07-28 revision (an
    /// upgrade, which nothing else may tell: a server that serves the session era statelessly
    /// has no session to lose and no stream to end). The request was refused unprocessed, so it
    /// waits for the next connection, like one a lost session refused; this connection is over,
    /// with the reason, and the next attempt meets the server in its era at once (its handshake
    /// is refused the same way, which switches it). A stdio server is the process we started
    /// and cannot have been replaced: its `-32022` is an answer like any other.
    fn refused_for_era(&mut self, id: &Id, error: &RpcError, now: Instant) -> bool {
        let legacy_http = self.http
            && self
                .live
                .as_ref()
                .is_some_and(|l| l.wire.era() == Era::Legacy);
        let Some(wire_id) = id.as_ours().filter(|_| legacy_http) else {
            return false;
        };
        let Some(version) = judge_initialize_error(error) else {
            return false;
        };
        tracing::warn!(server = %self.name, version = %version, "a request was refused for its protocol era: the server speaks only the modern one now; reconnecting");
        self.calls.unsend(&[wire_id]);
        let reason = Error::connection(
            &self.name,
            format!("the server no longer speaks the legacy protocol era (it refused a request and speaks {version})"),
        );
        self.connection_lost(reason, now);
        true
    }

    fn on_notification(&mut self, method: String, params: Option<Value>, now: Instant) {
        let server = self.name.to_string();
        match method.as_str() {
            "notifications/progress" => {
                let Some(params) = params else { return };
                if let Some((key, moved)) = self.calls.on_progress(&params, now) {
                    self.arm_deadline(key, moved);
                }
            }
            "notifications/tools/list_changed" => {
                if let Some(at) = self.tools.list_changed(now) {
                    self.timers.tools_refresh(at);
                    self.moved_to(at);
                }
            }
            "notifications/subscriptions/acknowledged" => {
                let Some(live) = self.live.as_mut() else {
                    return;
                };
                live.listen.acknowledged(params.as_ref(), &live.wire);
                let stale = live.listen.take_stale();
                self.sync_task_coverage(now);
                if stale {
                    self.listen_for_tasks(now);
                }
            }
            "notifications/tasks" => self.on_task_notified(false, params, now),
            "notifications/tasks/status" => self.on_task_notified(true, params, now),
            "notifications/resources/updated" => {
                let uri = params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str);
                match uri {
                    Some(uri) => self.emit(ServerEvent::ResourceUpdated {
                        server,
                        uri: uri.to_owned(),
                    }),
                    None => {
                        tracing::warn!(server = %server, "resources/updated without a uri; ignored")
                    }
                }
            }
            "notifications/message" => {
                let params = params.unwrap_or(Value::Null);
                tracing::debug!(server = %server, params = %server_text(&params.to_string()), "server log message");
                self.emit(ServerEvent::Log { server, params });
            }
            _ => self.emit(ServerEvent::Notification {
                server,
                method,
                params,
            }),
        }
    }

    // ----- multi-round-trip requests (2026-07-28) -----

    /// An answer on a modern connection: complete (to the call table), a round of input, a
    /// task (the Tasks extension), or a `resultType` we do not know (an invalid response).
    fn on_modern_response(&mut self, id: &Id, result: Value, now: Instant) {
        let call = id
            .as_ours()
            .and_then(|wire_id| self.calls.written_call(wire_id))
            .map(|(key, method)| (key, method.to_owned()));
        let Some((key, method)) = call else {
            return self.calls.on_response(id, result);
        };
        match mrtr::classify(&method, &result) {
            // A `ping` went out as `server/discover` (the revision has no ping): it answers
            // that the server is there, which is all a ping's empty result says.
            Ok(Round::Complete) if method == "ping" => self.calls.on_response(id, json!({})),
            Ok(Round::Complete) => self.calls.on_response(id, result),
            Ok(Round::InputRequired {
                requests,
                request_state,
            }) => {
                let Some(params) = self
                    .calls
                    .hold_for_input(key, self.settings.max_input_rounds)
                else {
                    return;
                };
                self.commands.push_back(Command::AskInput(InputAsk {
                    requests,
                    asked_by: AskedBy::Round {
                        key,
                        method,
                        params,
                        request_state,
                    },
                }));
            }
            Ok(Round::Task(task)) => self.task_created(key, *task, now),
            Err(why) => {
                let error = Error::invalid_response(&self.name, &method, why);
                self.calls.fail_call(key, error);
            }
        }
    }

    /// The application answered what [`Command::AskInput`] asked: the call goes out again for
    /// its next round, or the task is updated (or is answered with why it cannot).
    pub fn input_answered(&mut self, ask: InputAsk, answers: InputAnswers, now: Instant) {
        let InputAsk { requests, asked_by } = ask;
        let answers = match answers {
            InputAnswers::NoHandler => {
                let asked: Vec<&str> = requests.iter().map(|r| r.method.as_str()).collect();
                let what = match &asked_by {
                    AskedBy::Round { method, .. } => format!("to answer {method}"),
                    AskedBy::Task { task_id } => format!("for task {}", server_text(task_id)),
                };
                let error = Error::config(
                    Some(&self.name),
                    "request_handler",
                    format!(
                        "the server asks for input ({}) {what}, and no request handler is registered (SetRequestHandler)",
                        asked.join(", ")
                    ),
                );
                self.input_failed(asked_by, error, now);
                return self.act_on_internal(now);
            }
            InputAnswers::Answered(answers) => answers,
        };
        let mut responses = Map::new();
        for (name, asked_for, answer) in answers {
            match answer {
                Ok(value) => {
                    responses.insert(name, value);
                }
                Err(rpc) => {
                    // The application could not answer: the server cannot go on.
                    let error = Error::rpc(&self.name, &asked_for, rpc);
                    self.input_failed(asked_by, error, now);
                    return self.act_on_internal(now);
                }
            }
        }
        match asked_by {
            AskedBy::Round {
                key,
                method,
                params,
                request_state,
            } => {
                let next =
                    mrtr::next_round_params(params.as_ref(), responses, request_state.as_ref());
                let situation = situation_of(&self.machine, &self.last_error);
                let wire = self.live.as_ref().map(|l| &l.wire);
                if !self.calls.next_round(key, next, &situation, wire) {
                    tracing::debug!(server = %self.name, method = %method, "a call's deadline passed while its input was asked for");
                }
            }
            AskedBy::Task { task_id } => {
                self.tasks.answers_sent(&task_id);
                self.update_task(task_id, responses, now);
                self.hand_over_tasks_learnt(now);
            }
        }
        self.act_on_internal(now);
    }

    /// What asked for input cannot go on: the call is answered `error`, or the task's callers.
    fn input_failed(&mut self, asked_by: AskedBy, error: Error, now: Instant) {
        match asked_by {
            AskedBy::Round { key, .. } => self.calls.fail_call(key, error),
            AskedBy::Task { task_id } => {
                let next = self.tasks.input_failed(&task_id, error);
                self.on_task_next(&task_id, next, now);
            }
        }
    }

    // ----- subscriptions -----

    /// Subscribes to `uri`; `reply` is answered once the server has the subscription (at once
    /// while it is not Ready: the next handshake or listen sends it).
    pub fn subscribe(&mut self, uri: String, reply: Rc<dyn Reply>, now: Instant) {
        self.subscriptions.insert(uri.clone());
        self.change_subscription("resources/subscribe", uri, reply, now);
    }

    /// Ends a subscription to `uri`, as [`Session::subscribe`].
    pub fn unsubscribe(&mut self, uri: String, reply: Rc<dyn Reply>, now: Instant) {
        if !self.subscriptions.remove(&uri) {
            return reply.answer(&self.name, Ok(Payload::Parsed(Value::Null)));
        }
        self.change_subscription("resources/unsubscribe", uri, reply, now);
    }

    fn change_subscription(
        &mut self,
        method: &'static str,
        uri: String,
        reply: Rc<dyn Reply>,
        now: Instant,
    ) {
        if !self.machine.state().is_ready() {
            // Sent with the next handshake.
            return reply.answer(&self.name, Ok(Payload::Parsed(Value::Null)));
        }
        if self
            .live
            .as_ref()
            .is_some_and(|l| l.wire.era() == Era::Modern)
        {
            // The listen's filter is the set: a new listen, answered at its acknowledgement.
            return self.open_listen(Some(reply), now);
        }
        let call =
            CallRequest::of_value(self.name.to_string(), method, Some(&json!({ "uri": uri })));
        self.call(call, reply, now);
    }

    /// Answers `reply` once the subscriptions are in force on the current connection: at once,
    /// unless a 2026-07-28 listen waits for its acknowledgement (then at that
    /// acknowledgement, or when the wait is over as for a `Subscribe`). What a replacement
    /// waits for before the old generation lets go of the same subscriptions.
    pub fn await_listening(&mut self, reply: Rc<dyn Reply>, now: Instant) {
        let Some(live) = self.live.as_mut() else {
            return reply.answer(&self.name, Ok(Payload::Parsed(Value::Null)));
        };
        if let Err(reply) = live.listen.wait_for_ack(reply) {
            return reply.answer(&self.name, Ok(Payload::Parsed(Value::Null)));
        }
        if let Some(id) = live.listen.awaited() {
            let at = saturating_add(now, self.settings.call_timeout);
            self.timers.listen_ack(at, live.seq, id);
            self.moved_to(at);
        }
    }

    /// Opens a listen with the current filter (replacing the one open, if any); `waiter` is
    /// answered at its acknowledgement. Nothing to do outside the modern era or while not Ready.
    fn open_listen(&mut self, waiter: Option<Rc<dyn Reply>>, now: Instant) {
        let filter = self.listen_filter();
        let ids = &self.ids;
        let Some(live) = self.live.as_mut().filter(|l| l.wire.era() == Era::Modern) else {
            if let Some(waiter) = waiter {
                // Kept; sent with the next connection.
                waiter.answer(&self.name, Ok(Payload::Parsed(Value::Null)));
            }
            return self.sync_task_coverage(now);
        };
        live.listen
            .open(&self.name, filter, waiter, &live.wire, || ids.next(), now);
        if let Some(id) = live.listen.awaited() {
            // Its subscribers wait no longer than a call would.
            let at = saturating_add(now, self.settings.call_timeout);
            self.timers.listen_ack(at, live.seq, id);
            self.moved_to(at);
        }
        self.sync_task_coverage(now);
    }

    /// What a listen would ask for now (see [`listen::filter`]).
    fn listen_filter(&self) -> Option<Value> {
        let tasks = self.tasks_to_name();
        self.era
            .negotiated()
            .and_then(|n| listen::filter(&n.capabilities, &self.subscriptions, &tasks))
    }

    /// The listen's request failed before it was acknowledged (see [`listen`]).
    fn on_listen_failed(&mut self, error: Error, now: Instant) {
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let seq = live.seq;
        if let Ended::ReopenAt(at) = live.listen.failed(error, now) {
            self.timers.listen_reopen(at, seq);
            self.moved_to(at);
        }
        self.sync_task_coverage(now);
    }

    /// The listen's request was cut off before it opened (see [`ListenStream::cut`]): opened
    /// again, and the server checked — it may be gone, and with no stream open nothing else
    /// would tell while the connection is idle.
    fn on_listen_cut(&mut self, now: Instant) {
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let seq = live.seq;
        if let Ended::ReopenAt(at) = live.listen.cut(now) {
            self.timers.listen_reopen(at, seq);
            self.moved_to(at);
        }
        self.check_liveness(now);
    }

    fn on_listen_end(&mut self, id: &Id, outcome: Result<(), RpcError>, now: Instant) {
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let seq = live.seq;
        if let Ended::ReopenAt(at) = live.listen.ended(id, outcome, &live.wire, now) {
            self.timers.listen_reopen(at, seq);
            self.moved_to(at);
        }
        self.sync_task_coverage(now);
    }

    /// After a handshake that sent `subscribed`: (un)subscribes what the application changed
    /// while it ran, so that a `Subscribe` made during a connection attempt is not lost.
    fn reconcile_subscriptions(&mut self, subscribed: Vec<String>, now: Instant) {
        let can_subscribe = self
            .era
            .negotiated()
            .and_then(|n| n.capabilities.resources.as_ref())
            .and_then(|r| r.subscribe)
            .unwrap_or(false);
        if !can_subscribe {
            return;
        }
        let sent: BTreeSet<String> = subscribed.into_iter().collect();
        let added: Vec<String> = self.subscriptions.difference(&sent).cloned().collect();
        let removed: Vec<String> = sent.difference(&self.subscriptions).cloned().collect();
        let changes = added
            .into_iter()
            .map(|uri| ("resources/subscribe", uri))
            .chain(
                removed
                    .into_iter()
                    .map(|uri| ("resources/unsubscribe", uri)),
            );
        for (method, uri) in changes {
            let call =
                CallRequest::of_value(self.name.to_string(), method, Some(&json!({ "uri": uri })));
            self.open_call(
                call,
                Replier::Session(Internal::Subscription { method, uri }),
                now,
            );
        }
    }

    // ----- the tool list -----

    /// The tool list fetched after [`Command::RefreshTools`].
    pub fn tools_refreshed(&mut self, result: Result<Listed<ListedTool>, Error>, now: Instant) {
        match result {
            Ok(listed) => {
                if let Some(event) = self.tools.replace(&self.name, listed, true) {
                    self.emit(event);
                }
            }
            // A server that stopped meanwhile is not news.
            Err(e) if e.kind() == ErrorKind::Stopped => {}
            Err(e) => {
                tracing::warn!(server = %self.name, error = %e.without_stderr(), "refreshing the tool list failed")
            }
        }
        if self.tools.refresh_done() {
            if let Some(at) = self.tools.list_changed(now) {
                self.timers.tools_refresh(at);
                self.moved_to(at);
            }
        }
    }

    // ----- steering -----

    /// The application asked for a reconnect.
    pub fn reconnect(&mut self, now: Instant) -> Result<(), Error> {
        if self.draining.is_some() {
            // Asked of a replaced generation's own address: the current one serves.
            return Err(Error::Unavailable {
                server: self.name.to_string(),
                reason: "this generation of the server was replaced and only finishes its calls; \
                         ask the supervisor, whose current generation serves"
                    .into(),
                attempts: 0,
                stderr_tail: Vec::new(),
            });
        }
        match self.machine.state() {
            ServerState::Stopped => {
                return Err(Error::Stopped {
                    server: self.name.to_string(),
                })
            }
            ServerState::Ready => {
                // The connection is dropped on purpose: its calls are settled like on a crash.
                let error = Error::connection(&self.name, "reconnect requested");
                self.calls.settle(&error, None, self.tools.list());
            }
            _ => {}
        }
        self.feed(Event::Reconnect, now);
        self.act_on_internal(now);
        Ok(())
    }

    /// Stops the server for good: every call still in the table is answered now.
    pub fn stop(&mut self, now: Instant) {
        if *self.machine.state() == ServerState::Stopped {
            return;
        }
        if self.draining.is_some() {
            // A replaced generation's end: its calls are settled as a lost connection's, and
            // what may be sent again goes to the new generation, with its tasks.
            if self.live.is_some() {
                let error = Error::connection(
                    &self.name,
                    "the server was replaced, and its drain time is up",
                );
                self.calls.settle(&error, None, self.tools.list());
            }
            self.hand_over(true, now);
        }
        self.feed(Event::Stop, now);
        let situation = situation_of(&self.machine, &self.last_error);
        self.calls.fail_all_stopped(&situation);
        self.act_on_internal(now);
    }

    // ----- what status queries see -----

    /// The status, from what the session knows (the driver adds what only it knows: the
    /// process id, the transport's and the fan-out's counters).
    pub fn status(&self, now: Instant) -> ServerStatus {
        let negotiated = self.era.negotiated();
        let mut counters = self.calls.counters().clone();
        counters.reconnects = self.reconnects;
        counters.skipped_non_json = self.skips.non_json();
        counters.skipped_oversized = self.skips.oversized();
        ServerStatus {
            name: self.name.to_string(),
            transport: self.transport_kind,
            state: self.machine.state().clone(),
            in_state_for: now.saturating_duration_since(self.machine.since()),
            server_info: negotiated.and_then(|n| n.server_info.clone()),
            era: negotiated.map(|n| n.era),
            protocol_version: negotiated.map(|n| n.version.clone()),
            capabilities: negotiated.map(|n| n.capabilities.clone()),
            tools: self.tools.list().to_vec(),
            tools_truncated: self.tools.cut().map(str::to_owned),
            subscriptions: self.subscriptions.iter().cloned().collect(),
            counters,
            last_error: self.last_error.clone(),
            pid: None,
            pending_calls: self.calls.len(),
            tasks: self.tasks.running_infos(now),
            task_leases_hold_for: self.tasks.leases_until().map(|until| {
                until.map_or(Duration::ZERO, |until| until.saturating_duration_since(now))
            }),
            next_generation: None,
        }
    }
}
