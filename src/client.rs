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

use actix::prelude::*;
use actix_rt::ArbiterHandle;
use rmcp::model::{CallToolResult, ReadResourceResult, Tool};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::actor::messages::{
    AddServer, CallTool, GetStatus, ReadResource, Reconnect, RemoveServer, ServerEvent, Shutdown,
    Subscribe, SubscribeEvents, TypedCall, Unsubscribe,
};
use crate::actor::status::ServerStatus;
use crate::actor::supervisor::{Supervisor, SupervisorBuilder};
use crate::config::ServerConfig;
use crate::error::Error;

/// EventStream an [`EventStream`] stream holds that its reader has not taken yet. When it is full, the
/// supervisor's own per-subscriber queue takes over: state changes are kept (coalesced), other
/// events dropped and counted, as for every slow subscriber.
const EVENTS_BUFFER: usize = 64;

/// A handle to a running [`Supervisor`], usable from any async runtime or thread.
///
/// `Clone + Send + Sync`: clone it into every task or handler that makes calls. The supervisor
/// shuts down (its servers stopped, its thread ended) on [`shutdown`](McpClient::shutdown), or
/// in the background when the last clone is dropped.
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
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    supervisor: Addr<Supervisor>,
    /// Where actors the handle needs (event forwarders) are started: the supervisor's arbiter.
    arbiter: ArbiterHandle,
    /// The system the handle started for the supervisor, if it did; `None` on the caller's.
    own: Option<OwnSystem>,
}

/// The actix system on the handle's own thread.
struct OwnSystem {
    system: actix_rt::System,
    /// Becomes true when the thread has left the system (every server stopped).
    ended: watch::Receiver<bool>,
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
        let (tx, rx) = mpsc::channel(EVENTS_BUFFER);
        let client = Self::start_inner(builder, Some(tx))?;
        Ok((client, EventStream { rx }))
    }

    fn start_inner(
        builder: SupervisorBuilder,
        events: Option<mpsc::Sender<ServerEvent>>,
    ) -> Result<McpClient, Error> {
        let with_events = |builder: SupervisorBuilder| match events {
            Some(tx) => builder.subscriber(EventForwarder { tx }.start().recipient()),
            None => builder,
        };
        if actix_rt::System::try_current().is_some() {
            let supervisor = with_events(builder).start()?;
            let inner = Inner {
                supervisor,
                arbiter: actix_rt::Arbiter::current(),
                own: None,
            };
            return Ok(McpClient {
                inner: Arc::new(inner),
            });
        }
        let (started_tx, started_rx) = std::sync::mpsc::sync_channel(1);
        let (ended_tx, ended) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("mcp-supervisor".into())
            .spawn(move || {
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
    /// says they changed): no request to the server.
    ///
    /// # Errors
    ///
    /// `server_not_found` for a name the supervisor does not know.
    pub async fn tools(&self, server: &str) -> Result<Vec<Tool>, Error> {
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
        let (tx, rx) = mpsc::channel(EVENTS_BUFFER);
        let (registered_tx, registered) = oneshot::channel();
        let supervisor = self.inner.supervisor.clone();
        // The forwarder is an actor, so it starts on the supervisor's arbiter, whatever thread
        // this is; the stream is handed out once the supervisor has it, so that nothing sent
        // after this returns is missed.
        self.inner.arbiter.spawn(async move {
            let forwarder = EventForwarder { tx }.start().recipient();
            let _ = registered_tx.send(supervisor.send(SubscribeEvents(forwarder)).await);
        });
        match registered.await {
            Ok(Ok(())) => Ok(EventStream { rx }),
            _ => Err(supervisor_stopped()),
        }
    }

    /// Stops every server and the supervisor, and returns once every server process is gone
    /// (and, when the handle runs the supervisor on its own thread, that thread has ended).
    /// Calls made afterwards, through any clone, are answered `stopped`.
    pub async fn shutdown(&self) {
        let _ = self.inner.supervisor.send(Shutdown).await;
        if let Some(own) = &self.inner.own {
            own.system.stop();
            let mut ended = own.ended.clone();
            let _ = ended.wait_for(|ended| *ended).await;
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
        let supervisor = self.supervisor.clone();
        let system = self.own.as_ref().map(|own| own.system.clone());
        self.arbiter.spawn(async move {
            let _ = supervisor.send(Shutdown).await;
            if let Some(system) = system {
                system.stop();
            }
        });
    }
}

/// The supervisor's events as a stream: from [`McpClient::events`] or
/// [`McpClient::start_with_events`]. Read it with [`next`](EventStream::next), or as a
/// `futures::Stream`.
#[derive(Debug)]
pub struct EventStream {
    rx: mpsc::Receiver<ServerEvent>,
}

impl EventStream {
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

/// An actor that hands the events it receives to an [`EventStream`] stream, one at a time: while
/// the stream is full it takes no more, so the supervisor's bounded per-subscriber queue (and
/// its rule: state changes kept, notifications dropped and counted) applies to a slow reader.
struct EventForwarder {
    tx: mpsc::Sender<ServerEvent>,
}

impl Actor for EventForwarder {
    type Context = Context<Self>;
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
