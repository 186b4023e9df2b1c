//! `Supervisor`: owns one [`ServerActor`] per configured server, routes calls to them by name,
//! hands them the application's event subscribers, and starts a new actor when one dies.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::future::join_all;
use serde_json::Value;
use tokio::sync::watch;

use crate::actor::messages::skills::refused;
use crate::actor::messages::*;
use crate::actor::routing::Forward;
use crate::actor::server::{
    ActorGone, AwaitListening, AwaitReady, Drain, GoneNotice, HandedOver, InjectPanic,
    ReplacementFailed, ServerActor, Succession, TakeHandover,
};
use crate::config::{ServerConfig, Settings};
use crate::error::Error;
use crate::protocol::text::server_text;
use crate::session::status::ServerStatus;
use crate::skills::{
    content_bytes, GetSkillResult, LoadedSkill, Skill, SkillError, SkillFileContent,
};
use crate::tasks::{server_identity, TaskStore};

/// Asks the supervisor for a server's actor, to send it calls directly (one actor hop per call
/// instead of two).
///
/// The address stays valid until the server is removed or its actor dies and is replaced. A
/// call sent to a dead address, or waiting in the mailbox of an actor that panics, is dropped
/// unanswered: `send` fails with actix's `MailboxError` (the outer error) — the call never
/// reached the server, and asking again gives the new actor. (Calls through the supervisor are
/// answered `unavailable` then.)
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Addr<ServerActor>, Error>")]
pub struct GetServer(pub String);

/// Builds and starts a [`Supervisor`].
///
/// ```no_run
/// use mcp_supervisor::{ServerConfig, Supervisor};
///
/// # async fn demo() -> Result<(), mcp_supervisor::Error> {
/// let sup = Supervisor::builder()
///     .server(ServerConfig::stdio("fs", "npx").args(["-y", "@modelcontextprotocol/server-filesystem", "/srv"]))
///     .start()?; // servers connect in parallel, in the background
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct SupervisorBuilder {
    servers: Vec<ServerConfig>,
    settings: Settings,
    subscribers: Vec<Recipient<ServerEvent>>,
    request_handler: Option<SetRequestHandler>,
    task_store: Option<Arc<dyn TaskStore>>,
}

impl SupervisorBuilder {
    /// Adds a server.
    pub fn server(mut self, config: ServerConfig) -> Self {
        self.servers.push(config);
        self
    }

    /// Adds several servers, e.g. from [`ServerConfig::from_mcp_servers_json`].
    pub fn servers(mut self, configs: impl IntoIterator<Item = ServerConfig>) -> Self {
        self.servers.extend(configs);
        self
    }

    /// Global settings; each server's config may override them.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Subscribes to events from the very start (the first connection attempts included).
    pub fn subscriber(mut self, recipient: Recipient<ServerEvent>) -> Self {
        self.subscribers.push(recipient);
        self
    }

    /// Registers the handler for server-initiated requests before any server connects, so the
    /// first handshake already announces its capabilities.
    pub fn request_handler(
        mut self,
        handler: Recipient<ServerRequest>,
        capabilities: Value,
    ) -> Self {
        self.request_handler = Some(SetRequestHandler {
            handler,
            capabilities,
        });
        self
    }

    /// Where the tasks servers run for calls are recorded (the Tasks extension), so that they
    /// are followed again, and their outcomes delivered once, after a restart of this process:
    /// e.g. a [`SqliteTaskStore`](crate::tasks::SqliteTaskStore) at a path the application
    /// chooses. Without one, tasks are followed in memory (across reconnects and server
    /// restarts, not a restart of this process).
    pub fn task_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// Validates the configuration and starts the supervisor in the current actix system.
    /// Servers connect in parallel in the background; calls made meanwhile wait for them.
    ///
    /// # Errors
    ///
    /// An invalid server configuration or two servers of one name (`config`), or
    /// [`Error::Runtime`] on a thread where no actix `System` runs (plain `#[tokio::main]`,
    /// a thread of one's own): [`McpClient`](crate::McpClient) runs one for the supervisor.
    pub fn start(self) -> Result<Addr<Supervisor>, Error> {
        // Actix would panic in `Actor::start` (and a panic there aborts the process when it
        // unwinds through tokio's runtime): say what is missing instead.
        if !actix_runs_here() {
            return Err(Error::Runtime {
                message: "no actix System runs on this thread; start it inside one \
                          (`#[actix::main]`, `actix::System::new().block_on(..)`), or use \
                          `McpClient::start`, which runs one"
                    .into(),
            });
        }
        let mut seen = BTreeSet::new();
        for config in &self.servers {
            config.validate_with(&self.settings)?;
            if !seen.insert(config.name().to_owned()) {
                return Err(Error::config(
                    Some(config.name()),
                    "name",
                    "two servers have this name",
                ));
            }
        }
        Ok(Supervisor {
            settings: self.settings,
            servers: BTreeMap::new(),
            initial: self.servers,
            subscribers: self.subscribers,
            request_handler: self.request_handler,
            task_store: self.task_store,
            epoch: 0,
            shutting_down: false,
            removing: Vec::new(),
            replacements: Vec::new(),
            stopped: watch::Sender::new(false),
        }
        .start())
    }
}

/// Whether actors can be started on this thread: an actix arbiter runs here, inside its
/// runtime. (`System::try_current` is not enough: a `SyncArbiter`'s threads and a thread whose
/// system was made but is not running have a `System` and no arbiter to run actors.)
pub(crate) fn actix_runs_here() -> bool {
    actix_rt::Arbiter::try_current().is_some() && tokio::runtime::Handle::try_current().is_ok()
}

struct Entry {
    config: ServerConfig,
    addr: Addr<ServerActor>,
    epoch: u64,
    /// The application's subscriptions, kept here so that a replacement actor has them too.
    subscriptions: BTreeSet<String>,
    /// A new generation is starting to replace this one (`Restart`, `ReplaceServer`).
    replacing: bool,
    /// Shared by every generation of the server: how one hands its calls to the next.
    succession: Succession,
}

/// Supervises a set of MCP servers. See the [crate documentation](crate) for a tour.
pub struct Supervisor {
    settings: Settings,
    servers: BTreeMap<String, Entry>,
    /// Servers given to the builder, started in `started`.
    initial: Vec<ServerConfig>,
    subscribers: Vec<Recipient<ServerEvent>>,
    request_handler: Option<SetRequestHandler>,
    /// Where every server's tasks are recorded, if anywhere.
    task_store: Option<Arc<dyn TaskStore>>,
    /// Identifies actor generations, so a late death notice of a replaced actor is ignored.
    epoch: u64,
    shutting_down: bool,
    /// Servers removed whose actors are still stopping: a second `RemoveServer`, and
    /// `Shutdown`, wait for them too.
    removing: Vec<Entry>,
    /// New generations of servers being replaced, until they are Ready (or are not).
    replacements: Vec<Entry>,
    /// Becomes true once a `Shutdown` has stopped every server; every `Shutdown` answers then.
    stopped: watch::Sender<bool>,
}

impl Supervisor {
    /// Starts building a supervisor.
    pub fn builder() -> SupervisorBuilder {
        SupervisorBuilder::default()
    }

    fn spawn_server(
        &mut self,
        config: ServerConfig,
        subscriptions: BTreeSet<String>,
        succession: Option<Succession>,
        ctx: &mut Context<Self>,
    ) {
        let succession = succession.unwrap_or_else(|| Succession::new(ctx.address().recipient()));
        let entry = self.start_actor(config, subscriptions, succession, ctx);
        self.servers.insert(entry.config.name().to_owned(), entry);
    }

    /// Starts an actor, of a new generation, for `config`; it connects at once.
    fn start_actor(
        &mut self,
        config: ServerConfig,
        subscriptions: BTreeSet<String>,
        succession: Succession,
        ctx: &mut Context<Self>,
    ) -> Entry {
        self.epoch += 1;
        let gone = GoneNotice {
            supervisor: ctx.address().recipient(),
            name: config.name().to_owned(),
            epoch: self.epoch,
            deliberate: false,
        };
        self.subscribers.retain(|s| s.connected());
        let mut actor = ServerActor::new(config.clone(), &self.settings).supervised(
            gone,
            succession.clone(),
            self.subscribers.clone(),
            self.request_handler.clone(),
            subscriptions.clone(),
        );
        if let Some(store) = &self.task_store {
            actor = actor.task_store(store.clone());
        }
        Entry {
            config,
            addr: actor.start(),
            epoch: self.epoch,
            subscriptions,
            replacing: false,
            succession,
        }
    }

    /// One server's status, asked of its actor, with its new generation's while a replacement
    /// is under way.
    fn status_of(
        &self,
        name: &str,
        entry: &Entry,
    ) -> impl Future<Output = Result<Vec<ServerStatus>, Error>> + 'static {
        let ask = |addr: &Addr<ServerActor>| {
            let name = name.to_owned();
            let sent = addr.send(GetStatus::server(name.clone()));
            async move {
                sent.await
                    .map_err(|_| Error::Stopped { server: name })
                    .and_then(|r| r)
            }
        };
        let current = ask(&entry.addr);
        let next = self
            .replacements
            .iter()
            .find(|e| e.config.name() == name)
            .map(|e| ask(&e.addr));
        async move {
            let mut statuses = current.await?;
            if let (Some(next), Some(status)) = (next, statuses.first_mut()) {
                // A new generation that died meanwhile has nothing to show.
                if let Ok(mut next) = next.await {
                    status.next_generation = next.pop().map(Box::new);
                }
            }
            Ok(statuses)
        }
    }

    /// Tells every subscriber of something the supervisor itself did (a replacement's steps).
    fn notify(&mut self, event: ServerEvent) {
        self.subscribers.retain(|s| s.connected());
        for subscriber in &self.subscribers {
            subscriber.do_send(event.clone());
        }
    }

    /// Replaces a server make-before-break (`Restart`, `ReplaceServer`): the new generation
    /// starts beside the old one, which serves every call until the new one is Ready; then the
    /// new one takes every new call and the old one drains (its calls finish there, for at most
    /// `drain`) and stops. If the new one does not come up, it is stopped and the old one serves
    /// on. Answers once the new generation serves, or with why it did not come up.
    fn replace(
        &mut self,
        config: ServerConfig,
        drain: Duration,
        ctx: &mut Context<Self>,
    ) -> ResponseActFuture<Self, Result<(), Error>> {
        let name = config.name().to_owned();
        let refused = |e: Error| -> ResponseActFuture<Self, Result<(), Error>> {
            Box::pin(actix::fut::ready(Err(e)))
        };
        if self.shutting_down {
            return refused(Error::Stopped { server: name });
        }
        if let Err(e) = config.validate_with(&self.settings) {
            return refused(e);
        }
        let (subscriptions, succession) = match self.servers.get_mut(&name) {
            None => return refused(Error::ServerNotFound { server: name }),
            Some(entry) if entry.replacing => {
                return refused(Error::Unavailable {
                    server: name,
                    reason: "a replacement of this server is already under way".into(),
                    attempts: 0,
                    stderr_tail: Vec::new(),
                })
            }
            Some(entry) => {
                entry.replacing = true;
                (entry.subscriptions.clone(), entry.succession.clone())
            }
        };
        let next = self.start_actor(config, subscriptions, succession, ctx);
        let ready = next.addr.send(AwaitReady);
        let epoch = next.epoch;
        self.replacements.push(next);
        self.notify(ServerEvent::Replacing {
            server: name.clone(),
        });
        tracing::info!(server = %name, "replacing: a new generation is starting");
        let server = name.clone();
        let ready = async move {
            // Its actor died before it was Ready.
            ready.await.unwrap_or(Err(Error::Stopped { server }))
        };
        let settled = name.clone();
        Box::pin(
            ready
                .into_actor(self)
                .then(move |ready, act, _| act.settle_subscriptions(&settled, epoch, ready))
                .map(move |ready, act, _| act.replacement_ready(&name, epoch, drain, ready)),
        )
    }

    /// The new generation of `name` (of `epoch`) is Ready: before the old one lets go of the
    /// subscriptions, they are made in force on the new one: those made or ended while it
    /// started are sent, and their answers and the new listen's acknowledgement (2026-07-28)
    /// are awaited, so that no update falls between the two generations. (Each wait is bounded
    /// as a `Subscribe` is; one that fails does not hold the replacement back.)
    fn settle_subscriptions(
        &mut self,
        name: &str,
        epoch: u64,
        ready: Result<(), Error>,
    ) -> impl ActorFuture<Self, Output = Result<(), Error>> + 'static {
        type Wait = futures_util::future::LocalBoxFuture<
            'static,
            Result<Result<(), Error>, actix::MailboxError>,
        >;
        let mut waits: Vec<Wait> = Vec::new();
        let current = self.servers.get(name).map(|e| e.subscriptions.clone());
        let next = self.replacements.iter_mut().find(|e| e.epoch == epoch);
        if let (Ok(()), Some(next), Some(current)) = (&ready, next, current) {
            for uri in current.difference(&next.subscriptions) {
                waits.push(Box::pin(next.addr.send(Subscribe {
                    server: name.to_owned(),
                    uri: uri.clone(),
                })));
            }
            for uri in next.subscriptions.difference(&current) {
                waits.push(Box::pin(next.addr.send(Unsubscribe {
                    server: name.to_owned(),
                    uri: uri.clone(),
                })));
            }
            next.subscriptions = current;
            waits.push(Box::pin(next.addr.send(AwaitListening)));
        }
        let server = name.to_owned();
        async move {
            for wait in waits {
                if let Ok(Err(e)) = wait.await {
                    tracing::warn!(server = %server, error = %e, "a subscription is not in force on the new generation yet");
                }
            }
            ready
        }
        .into_actor(self)
    }

    /// The new generation of `name` (of `epoch`) is Ready, or will not be.
    fn replacement_ready(
        &mut self,
        name: &str,
        epoch: u64,
        drain: Duration,
        ready: Result<(), Error>,
    ) -> Result<(), Error> {
        if let Some(entry) = self.servers.get_mut(name) {
            entry.replacing = false;
        }
        let Some(at) = self.replacements.iter().position(|e| e.epoch == epoch) else {
            let error = Error::Stopped {
                server: name.to_owned(),
            };
            if let (Some(entry), false) = (self.servers.get(name), self.shutting_down) {
                // Its actor died (a panic) before it took over: a failed replacement.
                tracing::warn!(server = %name, "the new generation's actor died; the old generation serves on");
                entry.addr.do_send(ReplacementFailed(error.clone()));
                self.notify(ServerEvent::ReplaceFailed {
                    server: name.to_owned(),
                    error: error.clone(),
                });
            }
            // Else stopped meanwhile (RemoveServer, Shutdown): nothing to route to it.
            return Err(error);
        };
        let mut next = self.replacements.swap_remove(at);
        let Some(entry) = self.servers.get_mut(name) else {
            next.addr.do_send(Shutdown);
            self.removing.push(next);
            return Err(Error::Stopped {
                server: name.to_owned(),
            });
        };
        if let Err(error) = ready {
            tracing::warn!(server = %name, error = %error.without_stderr(), "replacement failed; the old generation serves on");
            next.addr.do_send(Shutdown);
            self.removing.push(next);
            entry.addr.do_send(ReplacementFailed(error.clone()));
            self.notify(ServerEvent::ReplaceFailed {
                server: name.to_owned(),
                error: error.clone(),
            });
            return Err(error);
        }
        // Subscriptions made or ended in the last moment (after `settle_subscriptions`).
        for uri in entry.subscriptions.difference(&next.subscriptions) {
            next.addr.do_send(Subscribe {
                server: name.to_owned(),
                uri: uri.clone(),
            });
        }
        for uri in next.subscriptions.difference(&entry.subscriptions) {
            next.addr.do_send(Unsubscribe {
                server: name.to_owned(),
                uri: uri.clone(),
            });
        }
        next.subscriptions = entry.subscriptions.clone();
        let same_server = server_identity(&next.config) == server_identity(&entry.config);
        let successor = next.epoch;
        let old = std::mem::replace(entry, next);
        old.addr.do_send(Drain {
            timeout: drain,
            same_server,
            successor,
        });
        self.removing.push(old);
        tracing::info!(server = %name, "replaced: the new generation takes the calls");
        self.notify(ServerEvent::Replaced {
            server: name.to_owned(),
        });
        Ok(())
    }

    fn addr(&self, server: &str) -> Result<Addr<ServerActor>, Error> {
        self.servers
            .get(server)
            .map(|e| e.addr.clone())
            .ok_or_else(|| Error::ServerNotFound {
                server: server.to_owned(),
            })
    }

    /// Forwards a message to the named server's actor; a dead actor reads as `Stopped`.
    fn forward<M>(&self, server: &str, msg: M) -> ResponseFuture<Result<M::Result, Error>>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        ServerActor: Handler<M>,
    {
        let server = server.to_owned();
        match self.addr(&server) {
            Ok(addr) => {
                Box::pin(async move { addr.send(msg).await.map_err(|_| Error::Stopped { server }) })
            }
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        for config in std::mem::take(&mut self.initial) {
            self.spawn_server(config, BTreeSet::new(), None, ctx);
        }
    }
}

impl Handler<HandedOver> for Supervisor {
    type Result = ();

    /// A draining generation handed calls over to generation `to`: that one takes them, or,
    /// should it be gone, the current generation. (With the server removed meanwhile, they
    /// stay in the slot until its last generation is gone; dropped then, each is answered as
    /// a call whose actor went away.)
    fn handle(&mut self, HandedOver { server, to }: HandedOver, _: &mut Context<Self>) {
        let Some(current) = self.servers.get(&server) else {
            return;
        };
        let target = std::iter::once(current)
            .chain(&self.removing)
            .find(|e| e.epoch == to && e.addr.connected())
            .unwrap_or(current);
        target.addr.do_send(TakeHandover { of: to });
    }
}

impl Handler<ActorGone> for Supervisor {
    type Result = ();

    fn handle(&mut self, gone: ActorGone, ctx: &mut Context<Self>) {
        self.removing.retain(|e| e.epoch != gone.epoch);
        self.replacements.retain(|e| e.epoch != gone.epoch);
        if self.shutting_down {
            return;
        }
        let Some(entry) = self.servers.get(&gone.name) else {
            return;
        };
        if entry.epoch != gone.epoch {
            return;
        }
        if gone.deliberate {
            // Someone sent `Shutdown` to the server's own address: it stays stopped.
            tracing::info!(server = %gone.name, "server actor stopped on request; removed");
            self.servers.remove(&gone.name);
            return;
        }
        tracing::error!(server = %gone.name, "server actor died unexpectedly; starting a new one");
        let config = entry.config.clone();
        let subscriptions = entry.subscriptions.clone();
        // The generation after a panic is of the same succession: a replacement under way,
        // and older generations still draining, hand over to it.
        let succession = Some(entry.succession.clone());
        self.spawn_server(config, subscriptions, succession, ctx);
    }
}

impl Supervisor {
    /// Forwards call `msg` to `server`'s actor, which answers it (see [`Forward`]).
    fn route<M, T>(&self, server: String, msg: M) -> Forward<M, T> {
        let addr = self.addr(&server);
        Forward::new(msg, server, addr)
    }
}

impl Handler<Call> for Supervisor {
    type Result = Forward<Call, Value>;

    fn handle(&mut self, call: Call, _: &mut Context<Self>) -> Self::Result {
        self.route(call.server.clone(), call)
    }
}

macro_rules! typed_routes {
    ($($t:ident),*) => {$(
        impl Handler<$t> for Supervisor {
            type Result = Forward<$t, <$t as TypedCall>::Output>;

            fn handle(&mut self, msg: $t, _: &mut Context<Self>) -> Self::Result {
                self.route(msg.server.clone(), msg)
            }
        }
    )*};
}

typed_routes!(
    CallTool,
    ListTools,
    ListResources,
    ListResourceTemplates,
    ReadResource,
    ListPrompts,
    GetPrompt,
    ListSkills,
    Ping
);

/// The task messages go to the server their handle (or field) names.
macro_rules! task_routes {
    ($($t:ident => $server:expr),* $(,)?) => {$(
        impl Handler<$t> for Supervisor {
            type Result = ResponseFuture<<$t as Message>::Result>;

            fn handle(&mut self, msg: $t, _: &mut Context<Self>) -> Self::Result {
                #[allow(clippy::redundant_closure_call)]
                let server: String = ($server)(&msg);
                let forwarded = self.forward(&server, msg);
                Box::pin(async move { forwarded.await? })
            }
        }
    )*};
}

task_routes!(
    StartTask => |m: &StartTask| m.server.clone(),
    AwaitTask => |m: &AwaitTask| m.handle.server.clone(),
    GetTask => |m: &GetTask| m.handle.server.clone(),
    CancelTask => |m: &CancelTask| m.handle.server.clone(),
    ListTasks => |m: &ListTasks| m.server.clone(),
);

impl Handler<GetSkill> for Supervisor {
    type Result = ResponseFuture<Result<GetSkillResult, Error>>;

    /// Forwards the call, and refuses an answer that is the entry of another skill than the
    /// one asked for: its digests would be taken for the asked skill's.
    fn handle(&mut self, msg: GetSkill, _: &mut Context<Self>) -> Self::Result {
        let (server, uri) = (msg.server.clone(), msg.uri.clone());
        let answer = self.forward(&server, msg);
        Box::pin(async move {
            let result = answer.await??;
            if result.skill.uri != uri {
                return Err(Error::invalid_response(
                    &server,
                    GetSkill::METHOD,
                    format!(
                        "asked for the skill {}, the server answered with the entry of {}",
                        server_text(&uri),
                        server_text(&result.skill.uri)
                    ),
                ));
            }
            Ok(result)
        })
    }
}

impl Handler<LoadSkill> for Supervisor {
    type Result = ResponseFuture<Result<LoadedSkill, Error>>;

    /// Checks the entry, reads the `SKILL.md` through the server's actor, verifies it.
    fn handle(&mut self, msg: LoadSkill, _: &mut Context<Self>) -> Self::Result {
        let LoadSkill {
            server,
            skill,
            options,
        } = msg;
        if let Err(e) = skill.check() {
            return Box::pin(std::future::ready(Err(refused(&server, "skill entry", &e))));
        }
        let uri = skill.uri.clone();
        let read = self.read_skill_file(&server, &skill, &uri, options);
        Box::pin(async move {
            let bytes = read.await?;
            skill
                .verify_skill_md(&bytes)
                .map_err(|e| refused(&server, ReadResource::METHOD, &e))
        })
    }
}

impl Handler<ReadSkillFile> for Supervisor {
    type Result = ResponseFuture<Result<SkillFileContent, Error>>;

    /// Refuses a file the entry does not list without reading it; reads and verifies the rest.
    fn handle(&mut self, msg: ReadSkillFile, _: &mut Context<Self>) -> Self::Result {
        let ReadSkillFile {
            server,
            skill,
            uri,
            options,
        } = msg;
        let listed = skill.check().and_then(|()| {
            skill
                .file(&uri)
                .map(|_| ())
                .ok_or_else(|| SkillError::NotListed { uri: uri.clone() })
        });
        if let Err(e) = listed {
            return Box::pin(std::future::ready(Err(refused(&server, "skill entry", &e))));
        }
        let read = self.read_skill_file(&server, &skill, &uri, options);
        Box::pin(async move {
            let bytes = read.await?;
            skill
                .verify_file(&uri, &bytes)
                .map_err(|e| refused(&server, ReadResource::METHOD, &e))?;
            Ok(SkillFileContent { uri, bytes })
        })
    }
}

impl Supervisor {
    /// Reads `uri`, a file `skill` lists, through `server`'s actor: its raw bytes, not yet
    /// verified (a blob far larger than the manifest's size is refused before it is decoded).
    fn read_skill_file(
        &self,
        server: &str,
        skill: &Skill,
        uri: &str,
        options: CallOptions,
    ) -> impl std::future::Future<Output = Result<Vec<u8>, Error>> + 'static {
        let limit = skill.file(uri).map_or(0, |f| f.size);
        let mut read = ReadResource::new(server, uri);
        read.options = options;
        let answer = self.forward(server, read);
        let (server, uri) = (server.to_owned(), uri.to_owned());
        async move {
            let result = answer.await??;
            content_bytes(&result, &uri, limit)
                .map_err(|e| refused(&server, ReadResource::METHOD, &e))
        }
    }
}

impl Handler<GetStatus> for Supervisor {
    type Result = ResponseFuture<Result<Vec<ServerStatus>, Error>>;

    fn handle(&mut self, msg: GetStatus, _: &mut Context<Self>) -> Self::Result {
        if let Some(server) = msg.server {
            let Some(entry) = self.servers.get(&server) else {
                return Box::pin(std::future::ready(Err(Error::ServerNotFound { server })));
            };
            let status = self.status_of(&server, entry);
            return Box::pin(status);
        }
        let queries: Vec<_> = self
            .servers
            .iter()
            .map(|(name, e)| self.status_of(name, e))
            .collect();
        Box::pin(async move {
            let mut all = Vec::with_capacity(queries.len());
            // A server whose actor just died is skipped; its replacement answers next time.
            for statuses in join_all(queries).await.into_iter().flatten() {
                all.extend(statuses);
            }
            Ok(all)
        })
    }
}

impl Handler<Subscribe> for Supervisor {
    type Result = ResponseFuture<Result<(), Error>>;

    fn handle(&mut self, msg: Subscribe, _: &mut Context<Self>) -> Self::Result {
        if let Some(entry) = self.servers.get_mut(&msg.server) {
            entry.subscriptions.insert(msg.uri.clone());
        }
        let forwarded = self.forward(&msg.server.clone(), msg);
        Box::pin(async move { forwarded.await? })
    }
}

impl Handler<Unsubscribe> for Supervisor {
    type Result = ResponseFuture<Result<(), Error>>;

    fn handle(&mut self, msg: Unsubscribe, _: &mut Context<Self>) -> Self::Result {
        if let Some(entry) = self.servers.get_mut(&msg.server) {
            entry.subscriptions.remove(&msg.uri);
        }
        let forwarded = self.forward(&msg.server.clone(), msg);
        Box::pin(async move { forwarded.await? })
    }
}

impl Handler<SubscribeEvents> for Supervisor {
    type Result = ();

    fn handle(&mut self, SubscribeEvents(recipient): SubscribeEvents, _: &mut Context<Self>) {
        // Each server's actor delivers to its subscribers itself (one hop, and a bounded queue
        // per subscriber); this list is for the actors started later.
        for entry in self.servers.values() {
            entry.addr.do_send(SubscribeEvents(recipient.clone()));
        }
        self.subscribers.push(recipient);
    }
}

impl Handler<SetRequestHandler> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: SetRequestHandler, _: &mut Context<Self>) {
        for entry in self.servers.values() {
            entry.addr.do_send(msg.clone());
        }
        self.request_handler = Some(msg);
    }
}

impl Handler<Reconnect> for Supervisor {
    type Result = ResponseFuture<Result<(), Error>>;

    fn handle(&mut self, msg: Reconnect, _: &mut Context<Self>) -> Self::Result {
        let forwarded = self.forward(&msg.server.clone(), msg);
        Box::pin(async move { forwarded.await? })
    }
}

impl Handler<GetServer> for Supervisor {
    type Result = Result<Addr<ServerActor>, Error>;

    fn handle(&mut self, GetServer(name): GetServer, _: &mut Context<Self>) -> Self::Result {
        self.addr(&name)
    }
}

impl Handler<AddServer> for Supervisor {
    type Result = Result<(), Error>;

    fn handle(&mut self, AddServer(config): AddServer, ctx: &mut Context<Self>) -> Self::Result {
        config.validate_with(&self.settings)?;
        if self.shutting_down {
            return Err(Error::Stopped {
                server: config.name().to_owned(),
            });
        }
        if self.servers.contains_key(config.name()) {
            return Err(Error::config(
                Some(config.name()),
                "name",
                "a server with this name is already supervised",
            ));
        }
        self.spawn_server(config, BTreeSet::new(), None, ctx);
        Ok(())
    }
}

impl Handler<RemoveServer> for Supervisor {
    type Result = ResponseFuture<Result<(), Error>>;

    fn handle(&mut self, RemoveServer(name): RemoveServer, _: &mut Context<Self>) -> Self::Result {
        if let Some(entry) = self.servers.remove(&name) {
            self.removing.push(entry);
        }
        // A new generation still starting goes too; its replacement answers `stopped`.
        let (starting, others): (Vec<Entry>, Vec<Entry>) = std::mem::take(&mut self.replacements)
            .into_iter()
            .partition(|e| e.config.name() == name);
        self.replacements = others;
        self.removing.extend(starting);
        // Every actor of that name still stopping (this one, or one an earlier RemoveServer
        // removed): the answer comes once all their processes are gone.
        let stops: Vec<_> = self
            .removing
            .iter()
            .filter(|e| e.config.name() == name)
            .map(|e| e.addr.send(Shutdown))
            .collect();
        if stops.is_empty() {
            return Box::pin(std::future::ready(Err(Error::ServerNotFound {
                server: name,
            })));
        }
        Box::pin(async move {
            // An actor that is already gone has nothing left to stop.
            join_all(stops).await;
            Ok(())
        })
    }
}

impl Handler<Shutdown> for Supervisor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) -> Self::Result {
        let mut stopped = self.stopped.subscribe();
        if !self.shutting_down {
            // The first Shutdown stops every server; later ones wait for the same end.
            self.shutting_down = true;
            let stops: Vec<_> = self
                .servers
                .values()
                .chain(&self.removing)
                .chain(&self.replacements)
                .map(|e| e.addr.send(Shutdown))
                .collect();
            ctx.spawn(
                async move {
                    join_all(stops).await;
                }
                .into_actor(self)
                .map(|_, act, ctx| {
                    act.servers.clear();
                    act.removing.clear();
                    act.replacements.clear();
                    act.stopped.send_replace(true);
                    ctx.stop();
                }),
            );
        }
        // Not tied to the supervisor's context, so that it answers after the supervisor has
        // stopped.
        Box::pin(async move {
            let _ = stopped.wait_for(|done| *done).await;
        })
    }
}

impl Handler<InjectPanic> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: InjectPanic, _: &mut Context<Self>) {
        if let Ok(addr) = self.addr(&msg.server) {
            addr.do_send(msg);
        }
    }
}

impl Handler<Restart> for Supervisor {
    type Result = ResponseActFuture<Self, Result<(), Error>>;

    fn handle(&mut self, msg: Restart, ctx: &mut Context<Self>) -> Self::Result {
        match self.servers.get(&msg.server) {
            Some(entry) => {
                let config = entry.config.clone();
                self.replace(config, msg.drain_timeout, ctx)
            }
            None => Box::pin(actix::fut::ready(Err(Error::ServerNotFound {
                server: msg.server,
            }))),
        }
    }
}

impl Handler<ReplaceServer> for Supervisor {
    type Result = ResponseActFuture<Self, Result<(), Error>>;

    fn handle(&mut self, msg: ReplaceServer, ctx: &mut Context<Self>) -> Self::Result {
        self.replace(msg.config, msg.drain_timeout, ctx)
    }
}

impl Handler<Reload> for Supervisor {
    type Result = ResponseFuture<ReloadReport>;

    fn handle(&mut self, msg: Reload, ctx: &mut Context<Self>) -> Self::Result {
        type Step = Pin<Box<dyn Future<Output = (String, ReloadOutcome)>>>;
        let mut report = ReloadReport::default();
        let mut steps: Vec<Step> = Vec::new();
        let me = ctx.address();
        // Servers whose new entry is invalid stay as they are.
        let mut kept = BTreeSet::new();
        for error in msg.invalid {
            if let Error::Config {
                server: Some(name), ..
            } = &error
            {
                kept.insert(name.clone());
                report
                    .servers
                    .insert(name.clone(), ReloadOutcome::Kept(error));
            }
        }
        let mut wanted: BTreeMap<String, ServerConfig> = BTreeMap::new();
        for config in msg.servers {
            let name = config.name().to_owned();
            if kept.contains(&name) {
                continue;
            }
            if wanted.insert(name.clone(), config).is_some() {
                kept.insert(name.clone());
                wanted.remove(&name);
                let twice = Error::config(Some(&name), "name", "two servers have this name");
                report.servers.insert(name, ReloadOutcome::Kept(twice));
            }
        }
        let gone: Vec<String> = self
            .servers
            .keys()
            .filter(|name| !wanted.contains_key(*name) && !kept.contains(*name))
            .cloned()
            .collect();
        for name in gone {
            let removed = me.send(RemoveServer(name.clone()));
            steps.push(Box::pin(async move {
                let outcome = match removed.await {
                    Ok(Ok(())) => ReloadOutcome::Removed,
                    Ok(Err(e)) => ReloadOutcome::Failed(e),
                    Err(_) => ReloadOutcome::Failed(Error::SupervisorStopped),
                };
                (name, outcome)
            }));
        }
        for (name, config) in wanted {
            let step: Step = match self.servers.get(&name) {
                Some(entry) if entry.config == config => {
                    report.servers.insert(name, ReloadOutcome::Unchanged);
                    continue;
                }
                Some(_) => {
                    let replace = ReplaceServer {
                        config,
                        drain_timeout: msg.drain_timeout,
                    };
                    let replaced = me.send(replace);
                    Box::pin(async move {
                        let outcome = match replaced.await {
                            Ok(Ok(())) => ReloadOutcome::Replaced,
                            Ok(Err(e)) => ReloadOutcome::Failed(e),
                            Err(_) => ReloadOutcome::Failed(Error::SupervisorStopped),
                        };
                        (name, outcome)
                    })
                }
                None => {
                    let added = me.send(AddServer(config));
                    Box::pin(async move {
                        let outcome = match added.await {
                            Ok(Ok(())) => ReloadOutcome::Added,
                            Ok(Err(e)) => ReloadOutcome::Failed(e),
                            Err(_) => ReloadOutcome::Failed(Error::SupervisorStopped),
                        };
                        (name, outcome)
                    })
                }
            };
            steps.push(step);
        }
        Box::pin(async move {
            for (name, outcome) in join_all(steps).await {
                report.servers.insert(name, outcome);
            }
            report
        })
    }
}
