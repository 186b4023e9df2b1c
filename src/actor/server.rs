//! `ServerActor`: one per MCP server, the driver of its [`Session`]. The session decides
//! everything about the server's calls and connection and does no IO; the actor holds what
//! does: the transport (the connection's event stream and its closer), the connection attempt
//! under way, one timer, the application's event subscribers and request handler. It feeds the
//! session what its mailbox and its transport bring, and carries out the session's
//! [`Command`]s.
//!
//! This file holds the actor, its driving loop and the commands; `handlers` holds the message
//! handlers, each a few lines that hand a message to the session.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use futures_util::future::join_all;
use tokio::sync::{oneshot, watch};

use crate::actor::connect::{Attempt, Dial, Established};
use crate::actor::fanout::Fanout;
use crate::actor::messages::*;
use crate::actor::server_requests::ServerRequests;
use crate::config::{HttpMode, ServerConfig, Settings};
use crate::error::Error;
use crate::policy::state::ServerState;
use crate::protocol::jsonrpc::RequestIds;
use crate::protocol::pagination;
use crate::session::{Command, InputAnswers, InputAsk, Session, TaskWrite};
use crate::tasks::TaskEnd;
use crate::transport::{Closer, Outbound, Reaping, SkipCounters, TransportEvent};

pub(crate) use crate::actor::gone::{ActorGone, GoneNotice};

mod handlers;
mod task_store;

/// The actor's clock: the time it tells its session, and what its one timer waits on.
#[derive(Clone, Default)]
pub(crate) enum Clock {
    /// The system's monotonic clock.
    #[default]
    Real,
    /// A clock a unit test moves by hand, so that the actor runs in virtual time.
    #[cfg(test)]
    Manual(tests::ManualClock),
}

impl Clock {
    fn now(&self) -> Instant {
        match self {
            Clock::Real => Instant::now(),
            #[cfg(test)]
            Clock::Manual(clock) => clock.now(),
        }
    }

    /// Returns once the clock reads `at` or later.
    fn sleep_until(&self, at: Instant) -> futures_util::future::LocalBoxFuture<'static, ()> {
        match self {
            Clock::Real => Box::pin(tokio::time::sleep_until(at.into())),
            #[cfg(test)]
            Clock::Manual(clock) => clock.sleep_until(at),
        }
    }
}

/// The IO of the connection the session talks through.
struct Live {
    /// Which connection attempt made it.
    seq: u64,
    stream: SpawnHandle,
    closer: Closer,
    /// For the answers to the server's requests.
    outbound: Outbound,
}

/// An event of connection `seq`.
#[derive(Message)]
#[rtype(result = "()")]
struct FromServer(u64, TransportEvent);

/// The session's timer set for this instant fired.
#[derive(Message)]
#[rtype(result = "()")]
struct TimerDue(Instant);

/// The one timer's task; dropping it (a timer replaced, the actor gone) cancels it. A task of
/// its own that messages the actor, not a future of the actor's: actix polls every future an
/// actor holds each time the actor wakes, which for a timer that almost never fires would be
/// one timer poll per call.
struct TimerTask(tokio::task::JoinHandle<()>);

impl Drop for TimerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Makes the actor panic, to test that the supervisor restarts it. Not part of the API.
#[doc(hidden)]
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct InjectPanic {
    /// Server name.
    pub server: String,
}

/// Answers once the server is Ready (`Ok`), or has failed to start within its start-up policy
/// or was stopped (`Err`): what a replacement waits for before calls are routed to it.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Result<(), Error>")]
pub(crate) struct AwaitReady;

/// Stops the server once its pending calls are answered, or when `timeout` has passed (then
/// those still pending are answered as calls whose server was stopped are); answers once its
/// processes are gone. The old generation of a replaced server gets it, after new calls have
/// been routed to the new one. What it need not finish itself (calls waiting for a connection;
/// its tasks, when `same_server`) it hands to the new one (see
/// [`handover`](crate::session::handover)).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub(crate) struct Drain {
    /// How long its calls may take to finish.
    pub timeout: std::time::Duration,
    /// The new generation reaches the same server (its identity): the tasks go to it too.
    pub same_server: bool,
    /// The new generation's epoch: what this one hands over is for it.
    pub successor: u64,
}

/// A generation of `server` put a handover for generation `to` in the slot the generations
/// share: the supervisor tells `to` to take it, or the current generation should `to` be gone
/// ([`TakeHandover`]).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub(crate) struct HandedOver {
    pub server: String,
    pub to: u64,
}

/// Answers once the server's subscriptions are in force on its connection (see
/// [`Session::await_listening`](crate::session::Session)): what a replacement waits for before
/// the old generation lets go of them.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Result<(), Error>")]
pub(crate) struct AwaitListening;

/// The replacement of this (serving) generation failed: its status's `last_error` says why,
/// until something newer happens.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub(crate) struct ReplacementFailed(pub Error);

/// Take the handovers for generation `of` from the slot the generations share (see
/// [`Succession`]).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub(crate) struct TakeHandover {
    pub of: u64,
}

/// A handover in the slot: for which generation, from a generation reaching which server
/// ([`server_identity`](crate::tasks::server_identity)), and what.
struct SlotItem {
    to: u64,
    identity: String,
    handover: crate::session::handover::Handover,
}

/// What every generation of one supervised server shares, so that one can hand its calls and
/// tasks to the next: the request-id sequence (a call keeps its key, and the progress token
/// made of it, in the next generation's table), the slot handovers wait in (calls hold their
/// callers' reply channels, which never leave the supervisor's thread, so they go through
/// the slot rather than a message), and who is told a handover waits. All generations run on
/// the supervisor's arbiter.
#[derive(Clone)]
pub(crate) struct Succession {
    ids: RequestIds,
    slot: Rc<std::cell::RefCell<Vec<SlotItem>>>,
    supervisor: Recipient<HandedOver>,
}

impl Succession {
    /// The first generation's: a new sequence and an empty slot.
    pub(crate) fn new(supervisor: Recipient<HandedOver>) -> Self {
        Succession {
            ids: RequestIds::default(),
            slot: Rc::default(),
            supervisor,
        }
    }
}

/// The actor that supervises one MCP server. Usually created by the
/// [`Supervisor`](crate::Supervisor); ask it for the address with
/// [`GetServer`](crate::GetServer) to send calls with one actor hop instead of two.
pub struct ServerActor {
    session: Session,
    config: ServerConfig,
    live: Option<Live>,
    attempt: Option<SpawnHandle>,
    /// The one timer: when it fires, and its task.
    timer: Option<(Instant, TimerTask)>,
    /// The request ids of every connection, shared by the attempts and the session.
    ids: RequestIds,
    skips: Arc<SkipCounters>,
    /// The processes this actor started that are not gone yet; `Shutdown` waits for them.
    reaping: Reaping,
    /// Which HTTP transport an `auto` server was last reached over, tried first next time.
    http_found: Rc<Cell<Option<HttpMode>>>,
    /// The application's event subscribers, each with a bounded queue.
    events: Fanout,
    /// Answers the requests the server sends us, through the application's handler.
    server_requests: ServerRequests,
    /// Graceful shutdowns under way; `Shutdown` answers when they are done.
    closing: Vec<oneshot::Receiver<()>>,
    /// Becomes true once a `Shutdown` has stopped the server and its processes are gone. Every
    /// `Shutdown`, however many are sent, answers only then.
    stopped: watch::Sender<bool>,
    /// Who waits for this server to be Ready (a replacement being made: `AwaitReady`).
    ready_waiters: Vec<oneshot::Sender<Result<(), Error>>>,
    /// Draining (`Drain`): the server stops once its calls are answered.
    draining: bool,
    dial: Dial,
    clock: Clock,
    /// Where this server's tasks are recorded, if anywhere.
    tasks: Option<task_store::TaskPersistence>,
    /// Shared with the server's other generations (supervised actors only).
    succession: Option<Succession>,
    /// What this server reaches, for the tasks it is handed (see [`SlotItem`]).
    identity: String,
    /// Replaced by the generation of this epoch (`Drain`): what it hands over is for it.
    successor: Option<u64>,
    /// The task leases were given up (it stopped for good).
    leases_released: bool,
    _gone: Option<GoneNotice>,
}

impl ServerActor {
    /// An actor for `config` with the given global settings (the config's overrides apply on
    /// top). Start it with [`Actor::start`]; it connects at once.
    pub fn new(config: ServerConfig, global: &Settings) -> Self {
        let settings = config.settings(global);
        let name: Arc<str> = Arc::from(config.name());
        let ids = RequestIds::default();
        let skips = Arc::<SkipCounters>::default();
        let server_requests = ServerRequests::new(name.clone(), None, settings.call_timeout);
        let clock = Clock::default();
        let identity = crate::tasks::server_identity(&config);
        let session = Session::new(
            name,
            settings,
            config.transport(),
            ids.clone(),
            skips.clone(),
            clock.now(),
            rand::random(),
        );
        ServerActor {
            session,
            config,
            live: None,
            attempt: None,
            timer: None,
            ids,
            skips,
            reaping: Reaping::default(),
            http_found: Rc::default(),
            events: Fanout::default(),
            server_requests,
            closing: Vec::new(),
            stopped: watch::Sender::new(false),
            ready_waiters: Vec::new(),
            draining: false,
            dial: Dial::Configured,
            clock,
            tasks: None,
            succession: None,
            identity,
            successor: None,
            leases_released: false,
            _gone: None,
        }
    }

    /// Records the tasks this server runs for calls in `store`, and follows those it kept
    /// from before (see [`SupervisorBuilder::task_store`](crate::SupervisorBuilder::task_store)).
    pub fn task_store(mut self, store: std::sync::Arc<dyn crate::tasks::TaskStore>) -> Self {
        self.tasks = Some(task_store::TaskPersistence::new(store, &self.config));
        self
    }

    pub(crate) fn supervised(
        mut self,
        gone: GoneNotice,
        succession: Succession,
        subscribers: Vec<Recipient<ServerEvent>>,
        handler: Option<SetRequestHandler>,
        subscriptions: BTreeSet<String>,
    ) -> Self {
        self._gone = Some(gone);
        // The sequence of the server's every generation (the session is not started yet).
        self.ids = succession.ids.clone();
        self.session = self.fresh_session();
        self.succession = Some(succession);
        for subscriber in subscribers {
            self.events.subscribe(subscriber);
        }
        if let Some(h) = handler {
            self.server_requests = self.server_requests.with_handler(h.handler);
            self.session.set_client_capabilities(h.capabilities);
        }
        self.session.set_subscriptions(subscriptions);
        self
    }

    /// Connects through an in-memory network instead of the configured transport, and runs
    /// on `clock`.
    #[cfg(test)]
    pub(crate) fn dialing(mut self, dial: Dial, clock: Clock) -> Self {
        self.dial = dial;
        self.clock = clock;
        self.session = self.fresh_session();
        self
    }

    /// A session like the current one, not started, on this actor's ids and clock (made anew
    /// when they change before the start).
    fn fresh_session(&self) -> Session {
        Session::new(
            self.session.name().clone(),
            self.session.settings().clone(),
            self.config.transport(),
            self.ids.clone(),
            self.skips.clone(),
            self.clock.now(),
            rand::random(),
        )
    }

    // ----- driving the session -----

    /// Carries out what the session asked for, and keeps the timer set for its earliest
    /// instant. Called after every input to the session.
    fn drive(&mut self, ctx: &mut Context<Self>) {
        while let Some(command) = self.session.poll_command() {
            self.carry_out(command, ctx);
        }
        if self.session.timers_moved() {
            self.arm_timer(ctx);
        }
        if !self.ready_waiters.is_empty() {
            self.tell_ready_waiters();
        }
        // Drained: its calls are answered, or it stopped itself (its connection broke).
        if self.draining
            && (self.session.pending_calls() == 0 || *self.session.state() == ServerState::Stopped)
        {
            self.stop_server(ctx);
        }
    }

    /// Answers those who wait for Ready once the server is Ready, or will not be by itself:
    /// Failed (its start-up policy spent) or Stopped.
    fn tell_ready_waiters(&mut self) {
        let outcome =
            match self.session.state() {
                ServerState::Ready => Ok(()),
                ServerState::Failed { .. } => Err(self
                    .session
                    .last_error()
                    .cloned()
                    .unwrap_or_else(|| Error::Unavailable {
                        server: self.session.name().to_string(),
                        reason: "the server failed to start".into(),
                        attempts: 0,
                        stderr_tail: Vec::new(),
                    })),
                ServerState::Stopped => Err(Error::Stopped {
                    server: self.session.name().to_string(),
                }),
                _ => return,
            };
        for waiter in self.ready_waiters.drain(..) {
            let _ = waiter.send(outcome.clone());
        }
    }

    /// Stops the server for good, once: every call still pending is answered now (as calls
    /// whose server was stopped are), the connection is closed, the processes reaped; then
    /// `stopped` turns true and the actor stops.
    pub(super) fn stop_server(&mut self, ctx: &mut Context<Self>) {
        // A draining session may have stopped itself: the rest is still to do.
        if *self.session.state() == ServerState::Stopped && !self.draining {
            return;
        }
        self.draining = false;
        if let Some(gone) = &mut self._gone {
            gone.deliberate = true;
        }
        // Calls in flight get their answer now rather than at their deadline.
        self.session.stop(self.clock.now());
        self.drive(ctx);
        let closing = std::mem::take(&mut self.closing);
        let reaping = self.reaping.clone();
        ctx.spawn(
            async move {
                for closed in closing {
                    let _ = closed.await;
                }
                // Also the processes of failed attempts and broken connections, which are
                // killed in the background.
                reaping.idle().await;
            }
            .into_actor(self)
            .map(|_, act, ctx| {
                act.pass_on_stranded();
                // Before `Shutdown` answers: whoever stops a replica may count on it.
                act.release_leases();
                act.stopped.send_replace(true);
                ctx.stop();
            }),
        );
    }

    /// Sets the timer for the session's earliest instant, unless one is set no later.
    fn arm_timer(&mut self, ctx: &mut Context<Self>) {
        let Some(next) = self.session.poll_timeout() else {
            return; // A timer still set fires, finds nothing, and is not set again.
        };
        if self.timer.as_ref().is_some_and(|(at, _)| *at <= next) {
            return;
        }
        let actor = ctx.address().downgrade();
        let due = self.clock.sleep_until(next);
        let task = actix::spawn(async move {
            due.await;
            if let Some(actor) = actor.upgrade() {
                actor.do_send(TimerDue(next));
            }
        });
        // The timer it replaces, if any, is cancelled as it is dropped.
        self.timer = Some((next, TimerTask(task)));
    }

    fn carry_out(&mut self, command: Command, ctx: &mut Context<Self>) {
        match command {
            Command::Connect { seq, plan } => self.connect(seq, *plan, ctx),
            Command::Disconnect { polite } => self.disconnect(polite, ctx),
            Command::Emit(event) => self.events.emit(&event),
            Command::RefreshTools => self.refresh_tools(ctx),
            Command::AnswerServerRequest { id, method, params } => {
                if let Some(live) = &self.live {
                    self.server_requests
                        .answer(&live.outbound, id, method, params);
                }
            }
            Command::AskInput(ask) => self.ask_input(ask, ctx),
            Command::Persist(write) => {
                let Some(tasks) = &self.tasks else {
                    return;
                };
                match tasks.write(&write) {
                    task_store::Written::Done => {}
                    task_store::Written::Refused(refused) => {
                        // A task another replica polls may have ended before this one came to
                        // await it, its news gone by: looked up once, after this turn.
                        let looked_up = match &refused {
                            TaskWrite::Created { handle, .. } => {
                                Some(TaskEnd::Ended(crate::tasks::TaskKey::new(
                                    handle.server.clone(),
                                    handle.task_id.clone(),
                                )))
                            }
                            _ => None,
                        };
                        self.session.store_refused(refused, self.clock.now());
                        if let Some(end) = looked_up {
                            ctx.run_later(Duration::ZERO, move |act, ctx| {
                                StreamHandler::handle(act, end, ctx);
                            });
                        }
                    }
                    task_store::Written::Unrecorded { task_id, error } => {
                        self.session
                            .task_unrecorded(&task_id, &error, self.clock.now());
                    }
                }
            }
            Command::Resume(resumption) => self.session.resume(resumption, self.clock.now()),
            Command::HandOver(handover) => match (&self.succession, self.successor) {
                (Some(succession), Some(to)) => {
                    succession.slot.borrow_mut().push(SlotItem {
                        to,
                        identity: self.identity.clone(),
                        handover,
                    });
                    succession.supervisor.do_send(HandedOver {
                        server: self.session.name().to_string(),
                        to,
                    });
                }
                // Unsupervised: nobody to hand to. Dropped, each call is answered as one
                // whose actor went away.
                _ => drop(handover),
            },
        }
    }

    /// Takes the handovers for generation `of` (this one's, or one that is gone) waiting in
    /// the slot the server's generations share. Tasks are taken only from a generation that
    /// reached the server this one does.
    pub(super) fn take_handovers(&mut self, of: u64, ctx: &mut Context<Self>) {
        let Some(succession) = &self.succession else {
            return;
        };
        let taken: Vec<SlotItem> = {
            let mut slot = succession.slot.borrow_mut();
            let (taken, left) = std::mem::take(&mut *slot)
                .into_iter()
                .partition(|item| item.to == of);
            *slot = left;
            taken
        };
        let now = self.clock.now();
        for item in taken {
            let welcome = item.identity == self.identity;
            self.session.take_over(item.handover, welcome, now);
        }
        self.drive(ctx);
    }

    /// Handovers for this generation that it will not take now (it stops): a drained one
    /// passes them on to its successor, as it would have.
    fn pass_on_stranded(&mut self) {
        let own = self._gone.as_ref().map(|g| g.epoch);
        let (Some(succession), Some(own), Some(to)) = (&self.succession, own, self.successor)
        else {
            return;
        };
        let mut stranded = false;
        for item in succession.slot.borrow_mut().iter_mut() {
            if item.to == own {
                item.to = to;
                stranded = true;
            }
        }
        if stranded {
            succession.supervisor.do_send(HandedOver {
                server: self.session.name().to_string(),
                to,
            });
        }
    }

    fn connect(&mut self, seq: u64, plan: crate::session::AttemptPlan, ctx: &mut Context<Self>) {
        let settings = self.session.settings().clone();
        let attempt = Attempt {
            server: self.session.name().clone(),
            transport: self.config.transport().clone(),
            plan,
            server_requests: self.server_requests.clone(),
            skips: self.skips.clone(),
            ids: self.ids.clone(),
            reaping: self.reaping.clone(),
            http_found: self.http_found.clone(),
            dial: self.dial.clone(),
            learned: Rc::default(),
            settings,
        };
        // An actor started on its own has not been through the supervisor's checks: invalid
        // settings fail the attempt, and retrying cannot help that.
        let checked = self.config.validate_with(self.session.settings());
        let handle = ctx.spawn(attempt.run(checked).into_actor(self).map(
            move |(result, learned), act, ctx| {
                act.attempt = None;
                act.on_attempt_done(seq, result, learned, ctx)
            },
        ));
        self.attempt = Some(handle);
    }

    fn on_attempt_done(
        &mut self,
        seq: u64,
        result: Result<Established, Error>,
        learned: Option<crate::protocol::era::Era>,
        ctx: &mut Context<Self>,
    ) {
        let opened = match result {
            // A superseded attempt's connection is dropped, which kills its process.
            Ok(_) if !self.session.is_current_attempt(seq) => return,
            Ok(established) => {
                let Established {
                    opened,
                    events,
                    closer,
                    outbound,
                } = established;
                let stream = ctx.add_stream(futures_util::StreamExt::map(events, move |e| {
                    FromServer(seq, e)
                }));
                self.live = Some(Live {
                    seq,
                    stream,
                    closer,
                    outbound,
                });
                Ok(opened)
            }
            Err(error) => Err(error),
        };
        self.session
            .attempt_done(seq, opened, learned, self.clock.now());
        self.drive(ctx);
    }

    fn disconnect(&mut self, polite: bool, ctx: &mut Context<Self>) {
        if let Some(handle) = self.attempt.take() {
            ctx.cancel_future(handle);
        }
        let Some(live) = self.live.take() else { return };
        ctx.cancel_future(live.stream);
        // Dropping the last sender closes the server's stdin.
        drop(live.outbound);
        let closer = live.closer;
        if polite {
            let grace = self.session.settings().shutdown_grace;
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

    /// Fetches every page of the tool list through the actor's own call path, with the bounds
    /// the handshake uses ([`pagination::list_all_tools`]).
    fn refresh_tools(&mut self, ctx: &mut Context<Self>) {
        let addr = ctx.address();
        let server = self.session.name().to_string();
        let timeout = self.session.settings().call_timeout;
        let fetch = async move {
            pagination::list_all_tools(&server, async |params| {
                let call = Call::new(server.clone(), "tools/list", params).timeout(timeout);
                addr.send(call).await.map_err(|_| Error::Stopped {
                    server: server.clone(),
                })?
            })
            .await
        };
        ctx.spawn(fetch.into_actor(self).map(|listed, act, ctx| {
            if let Ok(pagination::Listed { cut: Some(cut), .. }) = &listed {
                tracing::warn!(server = %act.session.name(), why = %cut, "tools/list was cut short");
            }
            act.session.tools_refreshed(listed, act.clock.now());
            act.drive(ctx);
        }));
    }

    /// Asks the application's handler what a multi-round-trip result needs.
    fn ask_input(&mut self, ask: InputAsk, ctx: &mut Context<Self>) {
        let mut asks = Vec::with_capacity(ask.requests.len());
        for request in &ask.requests {
            let Some(asked) = self
                .server_requests
                .ask(request.method.clone(), request.params.clone())
            else {
                self.session
                    .input_answered(ask, InputAnswers::NoHandler, self.clock.now());
                return self.drive(ctx);
            };
            let (key, method) = (request.key.clone(), request.method.clone());
            asks.push(async move { (key, method, asked.await) });
        }
        ctx.spawn(
            join_all(asks)
                .into_actor(self)
                .map(move |answers, act, ctx| {
                    act.session.input_answered(
                        ask,
                        InputAnswers::Answered(answers),
                        act.clock.now(),
                    );
                    act.drive(ctx);
                }),
        );
    }
}

impl ServerActor {
    /// Gives this server's task leases up unless a successor holds them (see `stopped`);
    /// once only.
    fn release_leases(&mut self) {
        if self.successor.is_some() || self.leases_released {
            return;
        }
        if let Some(tasks) = &self.tasks {
            self.leases_released = true;
            tasks.release();
        }
    }

    /// Renews this replica's task leases, takes over lapsed ones, and delivers what ended on
    /// other replicas for callers here (a task store shared by replicas; see
    /// [`lease`](crate::session::lease)).
    fn tend_leases(&mut self, ctx: &mut Context<Self>) {
        let Some(tasks) = &self.tasks else {
            return;
        };
        let Some(lease) = tasks.lease() else {
            return;
        };
        let started = self.clock.now();
        let here = self.session.tasks_polled_here();
        let elsewhere = self.session.tasks_followed_elsewhere();
        let staying = !self.draining
            && self.successor.is_none()
            && *self.session.state() != ServerState::Stopped;
        let tend = tasks.tend(started, lease, here, elsewhere, staying);
        self.session.leases_tended(tend, self.clock.now());
        self.drive(ctx);
    }
}

impl Actor for ServerActor {
    type Context = Context<Self>;

    /// A server that stops for good gives its tasks' leases up, for another replica to take
    /// them at once rather than when they lapse. A generation being replaced leaves them to
    /// its successor, which holds them under the same replica name.
    fn stopped(&mut self, _: &mut Context<Self>) {
        self.release_leases();
    }

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Some(tasks) = &self.tasks {
            if let Some(lease) = tasks.lease() {
                // Replicas share the store: a third of a lease between tendings leaves two
                // to renew in before another replica may take the tasks.
                self.session.lease_tasks();
                let every = (lease / 3).max(Duration::from_millis(10));
                ctx.run_interval(every, |act, ctx| act.tend_leases(ctx));
                if let Some(ends) = tasks.watch_ends() {
                    ctx.add_stream(task_ends(ends));
                }
            }
            let kept = tasks.restore();
            if !kept.is_empty() {
                tracing::info!(server = %self.session.name(), tasks = kept.len(), "following the tasks the task store kept");
            }
            self.session.restore_tasks(kept, self.clock.now());
        }
        self.tend_leases(ctx);
        self.session.start(self.clock.now());
        self.drive(ctx);
    }
}

/// The store's news of tasks that end, a news lost to a full channel read as news missed.
fn task_ends(
    ends: tokio::sync::broadcast::Receiver<TaskEnd>,
) -> impl futures_util::Stream<Item = TaskEnd> {
    futures_util::stream::unfold(ends, |mut ends| async move {
        use tokio::sync::broadcast::error::RecvError;
        match ends.recv().await {
            Ok(end) => Some((end, ends)),
            Err(RecvError::Lagged(_)) => Some((TaskEnd::Missed, ends)),
            Err(RecvError::Closed) => None,
        }
    })
}

/// A task ended on another replica (the store's news): a caller here who awaits it gets its
/// outcome now, rather than at the next tending of the leases.
impl StreamHandler<TaskEnd> for ServerActor {
    fn handle(&mut self, end: TaskEnd, ctx: &mut Context<Self>) {
        let Some(tasks) = &self.tasks else {
            return;
        };
        let elsewhere = self.session.tasks_followed_elsewhere();
        if elsewhere.is_empty() {
            return;
        }
        let tend = tasks.ended(&end, elsewhere);
        if tend.ended.is_empty() {
            return;
        }
        self.session.leases_tended(tend, self.clock.now());
        self.drive(ctx);
    }

    // No more news (the store is gone): the tendings still look every third of a lease.
    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl StreamHandler<FromServer> for ServerActor {
    fn handle(&mut self, FromServer(seq, event): FromServer, ctx: &mut Context<Self>) {
        if self.live.as_ref().map(|l| l.seq) != Some(seq) {
            return;
        }
        self.session.transport_event(seq, event, self.clock.now());
        self.drive(ctx);
    }

    // The stream's last item is `Closed`, handled above; its end must not stop the actor (the
    // default does).
    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl Handler<TimerDue> for ServerActor {
    type Result = ();

    /// The timer's own time counts as passed, whatever the clock says.
    fn handle(&mut self, TimerDue(due): TimerDue, ctx: &mut Context<Self>) {
        if self.timer.as_ref().is_some_and(|(at, _)| *at == due) {
            self.timer = None;
        }
        self.session.handle_timeout(self.clock.now().max(due));
        self.drive(ctx);
        self.arm_timer(ctx);
    }
}

#[cfg(test)]
mod tests;
