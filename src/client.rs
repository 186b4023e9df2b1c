//! [`McpClient`]: the supervisor from any async Rust — a `#[tokio::main]` program, an axum or
//! tonic handler, a plain thread — without adopting actix.
//!
//! The [`Supervisor`] is an actix actor and needs an actix `System` on the thread that starts
//! it. The handle runs one for it: on a thread of its own when the caller has none (named
//! `mcp-supervisor`), or on the caller's when one is running. Every method sends the same
//! messages an actix service sends, through the supervisor's address, and awaits the answer;
//! that works on any executor, because an actix address is a channel and its answer a oneshot.
//! So there is one runtime underneath and the promises are the same: one answer per call by its
//! deadline, reconnection, `outcome_unknown` where a call's outcome is not known.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use actix::prelude::*;
use actix_rt::ArbiterHandle;
use rmcp::model::{CallToolResult, ReadResourceResult};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::actor::messages::{
    AddServer, CallTool, GetStatus, ReadResource, Reconnect, RemoveServer, ServerEvent, Shutdown,
    Subscribe, SubscribeEvents, TypedCall, Unsubscribe,
};
use crate::actor::status::ServerStatus;
use crate::actor::supervisor::{actix_runs_here, Supervisor, SupervisorBuilder};
use crate::config::ServerConfig;
use crate::error::Error;
use crate::protocol::as_sent::ListedTool;

/// The events an [`EventStream`] holds that its reader has not taken yet. When it is full, the
/// supervisor's own per-subscriber queue takes over: state changes are kept (coalesced), other
/// events dropped and counted, as for every slow subscriber.
const EVENTS_BUFFER: usize = 64;

/// How long a shutdown of the handle's own system waits for the event streams to be handed
/// the supervisor's last events (the final `Stopped` of each server) before it ends the system:
/// a reader that takes nothing must not hold the shutdown up for ever.
const LAST_EVENTS_GRACE: Duration = Duration::from_secs(2);

/// A handle to a running [`Supervisor`], usable from any async runtime or thread.
///
/// `Clone + Send + Sync`: clone it into every task or handler that makes calls. The supervisor
/// shuts down (its servers stopped, its thread ended) on [`shutdown`](McpClient::shutdown);
/// await it before the program ends. Dropping the last clone starts the same shutdown in the
/// background, which a process that exits at once does not wait for (its stdio servers then
/// see their stdin close, and most exit on that).
///
/// ```no_run
/// use mcp_supervisor::{McpClient, ServerConfig, Supervisor};
/// use serde_json::json;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() -> Result<(), mcp_supervisor::Error> {
///     let client = McpClient::start(
///         Supervisor::builder().server(ServerConfig::stdio("everything", "npx").args([
///             "-y",
///             "@modelcontextprotocol/server-everything",
///         ])),
///     )?;
///     let result = client.call_tool("everything", "echo", json!({"message": "hi"})).await?;
///     println!("{:?}", result.content);
///     client.shutdown().await;
///     Ok(())
/// }
/// ```
///
/// Logs and spans of the supervisor go to the `tracing` subscriber that was the caller's
/// default when the handle was started.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    supervisor: Addr<Supervisor>,
    /// Where actors the handle needs (event forwarders) are started: the supervisor's arbiter.
    arbiter: ArbiterHandle,
    /// How many event forwarders are running, so that a shutdown can let them deliver the
    /// last events before it ends the system.
    forwarders: Arc<watch::Sender<usize>>,
    /// The system the handle started for the supervisor, if it did; `None` on the caller's.
    own: Option<OwnSystem>,
}

/// The actix system on the handle's own thread.
struct OwnSystem {
    system: actix_rt::System,
    /// Becomes true when the thread has left the system (every server stopped).
    ended: watch::Receiver<bool>,
}

impl Inner {
    /// Starts the shutdown on the supervisor's own arbiter (where its timers are): the
    /// supervisor stops every server, the event forwarders hand on the last events (bounded by
    /// [`LAST_EVENTS_GRACE`]), then the handle's own system, if it has one, ends.
    fn begin_shutdown(&self) {
        let supervisor = self.supervisor.clone();
        let mut forwarders = self.forwarders.subscribe();
        let system = self.own.as_ref().map(|own| own.system.clone());
        // False only when the arbiter is gone: the system has ended already.
        let _ = self.arbiter.spawn(async move {
            let _ = supervisor.send(Shutdown).await;
            if let Some(system) = system {
                let delivered = forwarders.wait_for(|running| *running == 0);
                let _ = actix_rt::time::timeout(LAST_EVENTS_GRACE, delivered).await;
                system.stop();
            }
        });
    }
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("own_thread", &self.inner.own.is_some())
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts the supervisor `builder` describes and returns a handle to it.
    ///
    /// On a thread that runs an actix `System` (inside `#[actix::main]`, an actix-web handler,
    /// an actor), the supervisor starts there, as [`SupervisorBuilder::start`] would. Anywhere
    /// else it gets an actix system on a thread of its own, `mcp-supervisor`; this returns once
    /// that runs. Either way the servers connect in the background and calls made meanwhile
    /// wait for them.
    ///
    /// # Errors
    ///
    /// The configuration errors of [`SupervisorBuilder::start`], or [`Error::Runtime`] when the
    /// thread cannot be started.
    pub fn start(builder: SupervisorBuilder) -> Result<McpClient, Error> {
        Self::start_inner(builder, None)
    }

    /// As [`start`](McpClient::start), with the supervisor's events as a stream from the very
    /// beginning: the first connection attempts included, which [`events`](McpClient::events)
    /// called after `start` could miss.
    ///
    /// # Errors
    ///
    /// As [`start`](McpClient::start).
    pub fn start_with_events(
        builder: SupervisorBuilder,
    ) -> Result<(McpClient, EventStream), Error> {
        let (stream, forwarding) = EventStream::new();
        let client = Self::start_inner(builder, Some(forwarding))?;
        Ok((client, stream))
    }

    fn start_inner(
        builder: SupervisorBuilder,
        events: Option<Forwarding>,
    ) -> Result<McpClient, Error> {
        let forwarders = Arc::new(watch::Sender::new(0));
        let counted = forwarders.clone();
        let with_events = move |builder: SupervisorBuilder| match events {
            Some((tx, dropped)) => {
                builder.subscriber(EventForwarder::start_counted(tx, dropped, counted))
            }
            None => builder,
        };
        if let Some(arbiter) = actix_runs_here()
            .then(actix_rt::Arbiter::try_current)
            .flatten()
        {
            let supervisor = with_events(builder).start()?;
            let inner = Inner {
                supervisor,
                arbiter,
                forwarders,
                own: None,
            };
            return Ok(McpClient {
                inner: Arc::new(inner),
            });
        }
        let (started_tx, started_rx) = std::sync::mpsc::sync_channel(1);
        let (ended_tx, ended) = watch::channel(false);
        // The caller's subscriber, for the supervisor's logs and spans: a scoped default
        // (`set_default`) is the caller thread's only, and the spans of calls made there are
        // that subscriber's to extend.
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let thread = std::thread::Builder::new()
            .name("mcp-supervisor".into())
            .spawn(move || {
                let _logs = tracing::dispatcher::set_default(&dispatch);
                let runner = actix_rt::System::new();
                let started = runner.block_on(async move {
                    with_events(builder).start().map(|supervisor| {
                        (
                            supervisor,
                            actix_rt::System::current(),
                            actix_rt::Arbiter::current(),
                        )
                    })
                });
                let running = started.is_ok();
                // The starter is waiting on the other end; it cannot have gone.
                let _ = started_tx.send(started);
                if running {
                    let _ = runner.run();
                }
                ended_tx.send_replace(true);
            })
            .map_err(|e| Error::Runtime {
                message: format!("the supervisor's thread could not be started: {e}"),
            })?;
        let (supervisor, system, arbiter) = match started_rx.recv() {
            Ok(started) => started?,
            Err(_) => {
                // The thread ended without a word: it panicked. Its panic message went to the
                // panic hook already.
                let _ = thread.join();
                return Err(Error::Runtime {
                    message: "the supervisor's thread ended before it started".into(),
                });
            }
        };
        let inner = Inner {
            supervisor,
            arbiter,
            forwarders,
            own: Some(OwnSystem { system, ended }),
        };
        Ok(McpClient {
            inner: Arc::new(inner),
        })
    }

    /// The supervisor's address, for the messages this handle has no method for (e.g.
    /// [`SetRequestHandler`](crate::SetRequestHandler), [`GetServer`](crate::GetServer)).
    /// `send` on it works from any executor too.
    pub fn supervisor(&self) -> &Addr<Supervisor> {
        &self.inner.supervisor
    }

    /// Sends any typed call ([`CallTool`], [`ListTools`](crate::ListTools),
    /// [`GetPrompt`](crate::GetPrompt), …), with its options, and awaits its answer.
    ///
    /// # Errors
    ///
    /// What the call's answer was, as for the message sent to the supervisor; `Stopped` once
    /// the supervisor has shut down.
    pub async fn call<M>(&self, call: M) -> Result<M::Output, Error>
    where
        M: TypedCall + Send + 'static,
        Supervisor: Handler<M>,
    {
        let server = call.server().to_owned();
        self.ask(server, call).await
    }

    /// `tools/call` with the supervisor's default timeout and retry policy. For other options,
    /// build a [`CallTool`] and pass it to [`call`](McpClient::call).
    ///
    /// # Errors
    ///
    /// As [`call`](McpClient::call).
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, Error> {
        self.call(CallTool::new(server, tool, arguments)).await
    }

    /// `resources/read`.
    ///
    /// # Errors
    ///
    /// As [`call`](McpClient::call).
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, Error> {
        self.call(ReadResource::new(server, uri)).await
    }

    /// The server's tools as the supervisor keeps them (every page, refreshed when the server
    /// says they changed), each whole as the server listed it ([`ListedTool`]): no request to
    /// the server.
    ///
    /// # Errors
    ///
    /// `server_not_found` for a name the supervisor does not know.
    pub async fn tools(&self, server: &str) -> Result<Vec<ListedTool>, Error> {
        let mut statuses = self.status_of(server).await?;
        Ok(statuses.pop().map(|s| s.tools).unwrap_or_default())
    }

    /// Every server's status, sorted by name.
    ///
    /// # Errors
    ///
    /// `Stopped` once the supervisor has shut down.
    pub async fn status(&self) -> Result<Vec<ServerStatus>, Error> {
        self.ask(String::new(), GetStatus::all()).await
    }

    /// One server's status.
    ///
    /// # Errors
    ///
    /// `server_not_found` for a name the supervisor does not know.
    pub async fn status_of(&self, server: &str) -> Result<Vec<ServerStatus>, Error> {
        self.ask(server.to_owned(), GetStatus::server(server)).await
    }

    /// Subscribes to updates of one resource (as [`ServerEvent`]s); kept across reconnects.
    ///
    /// # Errors
    ///
    /// What the server answered to `resources/subscribe`.
    pub async fn subscribe(&self, server: &str, uri: &str) -> Result<(), Error> {
        let msg = Subscribe {
            server: server.to_owned(),
            uri: uri.to_owned(),
        };
        self.ask(server.to_owned(), msg).await
    }

    /// Ends a [`subscribe`](McpClient::subscribe).
    ///
    /// # Errors
    ///
    /// What the server answered to `resources/unsubscribe`.
    pub async fn unsubscribe(&self, server: &str, uri: &str) -> Result<(), Error> {
        let msg = Unsubscribe {
            server: server.to_owned(),
            uri: uri.to_owned(),
        };
        self.ask(server.to_owned(), msg).await
    }

    /// Adds a server; it starts connecting at once.
    ///
    /// # Errors
    ///
    /// An invalid configuration, or a name already taken.
    pub async fn add_server(&self, config: ServerConfig) -> Result<(), Error> {
        let server = config.name().to_owned();
        self.ask(server, AddServer(config)).await
    }

    /// Stops a server and removes it; returns once its process is gone.
    ///
    /// # Errors
    ///
    /// `server_not_found` for a name the supervisor does not know.
    pub async fn remove_server(&self, server: &str) -> Result<(), Error> {
        self.ask(server.to_owned(), RemoveServer(server.to_owned()))
            .await
    }

    /// Reconnects a server now (revives a failed one, skips a backoff wait).
    ///
    /// # Errors
    ///
    /// `server_not_found`, or `stopped` for a server being removed.
    pub async fn reconnect(&self, server: &str) -> Result<(), Error> {
        let msg = Reconnect {
            server: server.to_owned(),
        };
        self.ask(server.to_owned(), msg).await
    }

    /// The supervisor's events from now on: state changes, server notifications, log
    /// messages, tool list changes. The stream ends when the supervisor stops. Dropping it
    /// unsubscribes.
    ///
    /// # Errors
    ///
    /// `Stopped` once the supervisor has shut down.
    pub async fn events(&self) -> Result<EventStream, Error> {
        let (stream, (tx, dropped)) = EventStream::new();
        let (registered_tx, registered) = oneshot::channel();
        let supervisor = self.inner.supervisor.clone();
        let counted = self.inner.forwarders.clone();
        // The forwarder is an actor, so it starts on the supervisor's arbiter, whatever thread
        // this is; the stream is handed out once the supervisor has it, so that nothing sent
        // after this returns is missed.
        self.inner.arbiter.spawn(async move {
            let forwarder = EventForwarder::start_counted(tx, dropped, counted);
            let _ = registered_tx.send(supervisor.send(SubscribeEvents(forwarder)).await);
        });
        match registered.await {
            Ok(Ok(())) => Ok(stream),
            _ => Err(supervisor_stopped()),
        }
    }

    /// Stops every server and the supervisor, and returns once every server process is gone
    /// (and, when the handle runs the supervisor on its own thread, that thread has ended, the
    /// event streams handed their last events). Calls made afterwards, through any clone, are
    /// answered `stopped`.
    pub async fn shutdown(&self) {
        match &self.inner.own {
            None => {
                let _ = self.inner.supervisor.send(Shutdown).await;
            }
            Some(own) => {
                self.inner.begin_shutdown();
                let mut ended = own.ended.clone();
                // An error: the thread is gone, which is what was waited for.
                let _ = ended.wait_for(|ended| *ended).await;
            }
        }
    }

    async fn ask<M, T>(&self, server: String, msg: M) -> Result<T, Error>
    where
        M: Message<Result = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
        Supervisor: Handler<M>,
    {
        match self.inner.supervisor.send(msg).await {
            Ok(answer) => answer,
            Err(_) if server.is_empty() => Err(supervisor_stopped()),
            Err(_) => Err(Error::Stopped { server }),
        }
    }
}

/// What a request to a supervisor that has shut down is answered.
fn supervisor_stopped() -> Error {
    Error::SupervisorStopped
}

impl Drop for Inner {
    /// The last handle is gone: stop the servers, then the handle's own system, in the
    /// background (a drop cannot wait; [`McpClient::shutdown`] can).
    fn drop(&mut self) {
        self.begin_shutdown();
    }
}

/// The supervisor's events as a stream: from [`McpClient::events`] or
/// [`McpClient::start_with_events`]. Read it with [`next`](EventStream::next), or as a
/// `futures::Stream`. It ends when the supervisor stops, after the last `Stopped`.
#[derive(Debug)]
pub struct EventStream {
    rx: mpsc::Receiver<ServerEvent>,
    /// Dropped with the stream, which tells its forwarder to stop.
    _alive: oneshot::Sender<()>,
}

/// What a forwarder needs of its stream: where events go, and the news that it was dropped.
type Forwarding = (mpsc::Sender<ServerEvent>, oneshot::Receiver<()>);

impl EventStream {
    fn new() -> (EventStream, Forwarding) {
        let (tx, rx) = mpsc::channel(EVENTS_BUFFER);
        let (alive, dropped) = oneshot::channel();
        let stream = EventStream { rx, _alive: alive };
        (stream, (tx, dropped))
    }

    /// The next event; `None` once the supervisor has stopped.
    pub async fn next(&mut self) -> Option<ServerEvent> {
        self.rx.recv().await
    }
}

impl futures_util::Stream for EventStream {
    type Item = ServerEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<ServerEvent>> {
        self.rx.poll_recv(cx)
    }
}

/// An actor that hands the events it receives to an [`EventStream`], one at a time: while the
/// stream is full it takes no more, so the supervisor's bounded per-subscriber queue (and its
/// rule: state changes kept, notifications dropped and counted) applies to a slow reader.
struct EventForwarder {
    tx: mpsc::Sender<ServerEvent>,
    /// The handle's count of running forwarders, one of which this is until it stops.
    running: Arc<watch::Sender<usize>>,
}

impl EventForwarder {
    /// Starts a forwarder into `tx`, counted in `running`, that stops when `dropped` says its
    /// stream is gone; its address as a subscriber.
    fn start_counted(
        tx: mpsc::Sender<ServerEvent>,
        dropped: oneshot::Receiver<()>,
        running: Arc<watch::Sender<usize>>,
    ) -> Recipient<ServerEvent> {
        running.send_modify(|n| *n += 1);
        let forwarder = EventForwarder { tx, running }.start();
        // A dropped stream unsubscribes at once, not at the next event. Watched from a task
        // apart from the forwarder (a future of its own would keep it alive after the
        // supervisor let it go) that holds neither its address nor a sender of the stream
        // (which would keep the stream from ending).
        let weak = forwarder.downgrade();
        actix_rt::spawn(async move {
            let _ = dropped.await;
            if let Some(forwarder) = weak.upgrade() {
                forwarder.do_send(StreamDropped);
            }
        });
        forwarder.recipient()
    }
}

impl Actor for EventForwarder {
    type Context = Context<Self>;
}

/// The stream was dropped: the forwarder stops, and the supervisor forgets a subscriber whose
/// actor is gone.
struct StreamDropped;

impl Message for StreamDropped {
    type Result = ();
}

impl Handler<StreamDropped> for EventForwarder {
    type Result = ();

    fn handle(&mut self, _: StreamDropped, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

impl Drop for EventForwarder {
    fn drop(&mut self) {
        self.running.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Handler<ServerEvent> for EventForwarder {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) -> Self::Result {
        let tx = self.tx.clone();
        AtomicResponse::new(Box::pin(
            async move { tx.send(event).await.is_ok() }
                .into_actor(self)
                .map(|delivered, _, ctx| {
                    // The stream was dropped: unsubscribe by stopping; the supervisor forgets a
                    // subscriber whose actor is gone.
                    if !delivered {
                        ctx.stop();
                    }
                }),
        ))
    }
}
