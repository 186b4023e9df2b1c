//! `ServerActor`: one per MCP server. It owns the transport, the cached session (server info,
//! capabilities, tools), the application's subscriptions, the calls in flight and the backoff
//! timer, and it carries out what the state machine in [`crate::policy::state`] decides. It
//! makes no decision of its own about when to connect or retry.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rmcp::model::{InitializeResult, Tool};
use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};

use crate::actor::calls::{CallEntry, Expire, ProgressRoute, Waiter};
use crate::actor::connect::{answer_server_request, Attempt, Established};
use crate::actor::messages::*;
use crate::actor::status::{Counters, ServerStatus};
use crate::config::{ServerConfig, Settings};
use crate::error::{Error, ErrorKind};
use crate::policy::retry::{
    after_disconnect, is_safe_by_nature, AfterDisconnect, RetryPolicy, ToolHints,
};
use crate::policy::state::{Action, ConnectionMachine, Event, MachinePolicy, ServerState};
use crate::protocol::jsonrpc::{self, Inbound};
use crate::protocol::lifecycle;
use crate::transport::{Closer, Outbound, SkipCounters, TransportEvent};

/// How long to gather `tools/list_changed` notifications before fetching the list once.
const TOOLS_REFRESH_DEBOUNCE: Duration = Duration::from_millis(100);

/// The connection the actor currently talks through.
struct Live {
    /// Which connection attempt made it; events of older ones are ignored.
    seq: u64,
    outbound: Outbound,
    closer: Closer,
    stream: SpawnHandle,
}

/// An event of connection `seq`.
#[derive(Message)]
#[rtype(result = "()")]
struct FromServer(u64, TransportEvent);

/// Sent to the supervisor when a `ServerActor` is dropped for any reason (a panic included).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct ActorGone {
    pub name: String,
    pub epoch: u64,
    /// Stopped by a `Shutdown` message, not by a crash: not to be replaced.
    pub deliberate: bool,
}

/// Sends [`ActorGone`] when dropped: a `Drop` runs during a panic's unwinding too, where
/// `stopped()` does not.
pub(crate) struct GoneNotice {
    pub supervisor: Recipient<ActorGone>,
    pub name: String,
    pub epoch: u64,
    pub deliberate: bool,
}

impl Drop for GoneNotice {
    fn drop(&mut self) {
        self.supervisor.do_send(ActorGone {
            name: std::mem::take(&mut self.name),
            epoch: self.epoch,
            deliberate: self.deliberate,
        });
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
    calls: HashMap<u64, CallEntry>,
    /// Calls not yet written, oldest first (ids of calls since answered are skipped).
    waiting: VecDeque<u64>,
    next_id: u64,
    init: Option<InitializeResult>,
    tools: Vec<Tool>,
    subscriptions: BTreeSet<String>,
    counters: Counters,
    skips: Arc<SkipCounters>,
    last_error: Option<Error>,
    subscribers: Vec<Recipient<ServerEvent>>,
    request_handler: Option<Recipient<ServerRequest>>,
    client_capabilities: Value,
    ping_in_flight: bool,
    tools_refresh_pending: bool,
    /// Graceful shutdowns under way; `Shutdown` answers when they are done.
    closing: Vec<oneshot::Receiver<()>>,
    _gone: Option<GoneNotice>,
}

impl ServerActor {
    /// An actor for `config` with the given global settings (the config's overrides apply on
    /// top). Start it with [`Actor::start`]; it connects at once.
    pub fn new(config: ServerConfig, global: &Settings) -> Self {
        let settings = config.settings(global);
        ServerActor {
            name: Arc::from(config.name()),
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
            calls: HashMap::new(),
            waiting: VecDeque::new(),
            next_id: 1,
            init: None,
            tools: Vec::new(),
            subscriptions: BTreeSet::new(),
            counters: Counters::default(),
            skips: Arc::default(),
            last_error: None,
            subscribers: Vec::new(),
            request_handler: None,
            client_capabilities: json!({}),
            ping_in_flight: false,
            tools_refresh_pending: false,
            closing: Vec::new(),
            _gone: None,
        }
    }

    pub(crate) fn supervised(
        mut self,
        gone: GoneNotice,
        events: Recipient<ServerEvent>,
        handler: Option<SetRequestHandler>,
        subscriptions: BTreeSet<String>,
    ) -> Self {
        self._gone = Some(gone);
        self.subscribers.push(events);
        if let Some(h) = handler {
            self.request_handler = Some(h.handler);
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
            request_handler: self.request_handler.clone(),
            skips: self.skips.clone(),
        };
        tracing::debug!(server = %self.name, attempt = self.machine.attempts(), "connecting");
        let handle = ctx.spawn(
            attempt
                .run()
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
                    connection,
                    init,
                    tools,
                } = established;
                let stream = ctx
                    .add_stream(futures_util::StreamExt::map(connection.events, move |e| {
                        FromServer(seq, e)
                    }));
                if matches!(self.machine.state(), ServerState::Reconnecting { .. }) {
                    self.counters.reconnects += 1;
                }
                let had_session = self.init.is_some();
                self.init = Some(init);
                self.replace_tools(tools, had_session);
                self.live = Some(Live {
                    seq,
                    outbound: connection.outbound,
                    closer: connection.closer,
                    stream,
                });
                self.feed(Event::Connected, ctx);
            }
            Err(error) => {
                tracing::warn!(server = %self.name, attempt = self.machine.attempts(), error = %error, "connection attempt failed");
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
        drop(live.outbound);
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
        if warn {
            tracing::warn!(server = %self.name, state = state.name(), attempt, "{message}");
        } else {
            tracing::info!(server = %self.name, state = state.name(), "{message}");
        }
        self.emit(ServerEvent::StateChanged {
            server: self.name.to_string(),
            state,
            message,
        });
    }

    fn emit(&mut self, event: ServerEvent) {
        self.subscribers.retain(|s| s.connected());
        for subscriber in &self.subscribers {
            subscriber.do_send(event.clone());
        }
    }

    // ----- calls -----

    /// Registers a call and returns what its caller awaits.
    fn start_call(&mut self, call: Call, ctx: &mut Context<Self>) -> Result<Waiter, Error> {
        if call.server != *self.name {
            return Err(Error::ServerNotFound {
                server: call.server,
            });
        }
        match self.machine.state() {
            ServerState::Failed { error } => {
                return Err(Error::Unavailable {
                    server: self.name.to_string(),
                    reason: error.without_stderr(),
                    attempts: self.machine.attempts(),
                    stderr_tail: error.stderr_tail().to_vec(),
                })
            }
            ServerState::Stopped => {
                return Err(Error::Stopped {
                    server: self.name.to_string(),
                })
            }
            _ => {}
        }
        if self.calls.len() >= self.settings.max_in_flight {
            return Err(Error::Overloaded {
                server: self.name.to_string(),
                limit: self.settings.max_in_flight,
            });
        }
        let id = self.next_id;
        self.next_id += 1;
        let now = Instant::now();
        let timeout = call.options.timeout.unwrap_or(self.settings.call_timeout);
        let deadline = now + timeout;
        let mut params = call.params;
        let mut moved_deadline = None;
        let progress = if call.options.progress.is_some()
            || call.options.reset_timeout_on_progress.is_some()
        {
            // Our id doubles as the progress token: unique, and no second map to keep.
            let mut object = match params.take() {
                Some(Value::Object(map)) => map,
                _ => serde_json::Map::new(),
            };
            let meta = object.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("progressToken".into(), json!(id));
            }
            params = Some(Value::Object(object));
            let reset = call.options.reset_timeout_on_progress.map(|max_total| {
                let (tx, rx) = watch::channel(deadline);
                moved_deadline = Some(rx);
                (tx, now + max_total.max(timeout))
            });
            Some(ProgressRoute {
                recipient: call.options.progress,
                reset,
            })
        } else {
            None
        };
        let tool = (call.method == "tools/call")
            .then(|| params.as_ref()?.get("name")?.as_str().map(str::to_owned))
            .flatten();
        let (reply, rx) = oneshot::channel();
        let entry = CallEntry {
            method: call.method.clone(),
            params,
            reply,
            timeout,
            retry: call.options.retry,
            sends: 0,
            sent: false,
            tool,
            progress,
        };
        self.calls.insert(id, entry);
        if self.machine.state().is_ready() && self.waiting.is_empty() {
            self.write_call(id);
        } else {
            self.waiting.push_back(id);
            self.flush_waiting();
        }
        Ok(Waiter {
            id,
            rx,
            deadline,
            moved_deadline,
            expire: ctx.address().recipient(),
            server: self.name.to_string(),
            method: call.method,
            timeout,
        })
    }

    fn write_call(&mut self, id: u64) {
        let (Some(live), Some(entry)) = (&self.live, self.calls.get_mut(&id)) else {
            return;
        };
        entry.sent = true;
        entry.sends += 1;
        if entry.sends > 1 {
            self.counters.calls_resent += 1;
        }
        live.outbound.send(jsonrpc::request_line(
            id,
            &entry.method,
            entry.params.as_ref(),
        ));
    }

    fn flush_waiting(&mut self) {
        if !self.machine.state().is_ready() || self.live.is_none() {
            return;
        }
        while let Some(id) = self.waiting.pop_front() {
            if self.calls.get(&id).is_some_and(|c| !c.sent) {
                self.write_call(id);
            }
        }
    }

    fn fail_waiting(&mut self) {
        let ids: Vec<u64> = self.waiting.drain(..).collect();
        for id in ids {
            if let Some(entry) = self.calls.remove(&id) {
                let reason = format!("the server is {}", self.machine.state().name());
                let error = self.unanswered_error(&entry, &reason);
                self.counters.calls_failed += 1;
                entry.answer(Err(error));
            }
        }
    }

    /// The error for a call that will get no answer: if it was ever written and may have an
    /// effect, its outcome is unknown; otherwise nothing ran that matters.
    fn unanswered_error(&self, entry: &CallEntry, reason: &str) -> Error {
        if entry.sends > 0 && !is_safe_by_nature(&entry.method) {
            Error::OutcomeUnknown {
                server: self.name.to_string(),
                method: entry.method.clone(),
                reason: format!("it was sent before its connection broke, and {reason}"),
            }
        } else {
            self.not_sent_error()
        }
    }

    /// The error for a call that never reached the server: safe to make again later.
    fn not_sent_error(&self) -> Error {
        let server = self.name.to_string();
        match self.machine.state() {
            ServerState::Stopped => Error::Stopped { server },
            state => {
                let reason = match &self.last_error {
                    Some(e) => format!(
                        "the call was not sent: server is {} ({})",
                        state.name(),
                        e.without_stderr()
                    ),
                    None => format!("the call was not sent: server is {}", state.name()),
                };
                Error::Unavailable {
                    server,
                    reason,
                    attempts: self.machine.attempts(),
                    stderr_tail: self
                        .last_error
                        .as_ref()
                        .map(|e| e.stderr_tail().to_vec())
                        .unwrap_or_default(),
                }
            }
        }
    }

    fn finish_call(&mut self, id: u64, outcome: Result<Value, Error>) {
        let Some(entry) = self.calls.remove(&id) else {
            self.counters.unknown_responses += 1;
            tracing::debug!(server = %self.name, id, "response to no call in flight; ignored");
            return;
        };
        if outcome.is_ok() {
            self.counters.calls_ok += 1;
        } else {
            self.counters.calls_failed += 1;
        }
        entry.answer(outcome);
    }

    fn expire(&mut self, id: u64, ctx: &mut Context<Self>) {
        let Some(entry) = self.calls.remove(&id) else {
            return;
        };
        if !entry.sent {
            self.waiting.retain(|w| *w != id);
            self.counters.calls_failed += 1;
            let error =
                self.unanswered_error(&entry, "its deadline passed before it could be re-sent");
            entry.answer(Err(error));
            return;
        }
        self.counters.calls_timed_out += 1;
        let method = entry.method.clone();
        let timeout = entry.timeout;
        entry.answer(Err(Error::Timeout {
            server: self.name.to_string(),
            method: method.clone(),
            timeout,
        }));
        tracing::warn!(server = %self.name, method = %method, id, "call timed out; cancelling it on the server");
        if let Some(live) = &self.live {
            let params = json!({ "requestId": id, "reason": "timed out" });
            live.outbound.send(jsonrpc::notification_line(
                "notifications/cancelled",
                Some(&params),
            ));
            live.outbound.abandon(id);
            self.counters.cancellations_sent += 1;
        }
        self.check_liveness(ctx);
    }

    /// After a timeout: is the server alive at all? A slow call must not cost a healthy
    /// connection, so only a ping that gets no answer counts as a broken connection.
    fn check_liveness(&mut self, ctx: &mut Context<Self>) {
        if self.ping_in_flight || self.live.is_none() {
            return;
        }
        let Some(seq) = self.live.as_ref().map(|l| l.seq) else {
            return;
        };
        let ping_timeout = self.settings.ping_timeout;
        let call = Call::new(self.name.to_string(), "ping", None)
            .timeout(ping_timeout)
            .retry(RetryPolicy::Never);
        let Ok(waiter) = self.start_call(call, ctx) else {
            return;
        };
        self.ping_in_flight = true;
        ctx.spawn(waiter.wait().into_actor(self).map(move |result, act, ctx| {
            act.ping_in_flight = false;
            match result {
                Ok(_) => {
                    tracing::debug!(server = %act.name, "liveness ping answered; connection kept")
                }
                Err(e) if e.kind() == ErrorKind::Timeout => {
                    if act.live.as_ref().is_some_and(|l| l.seq == seq) {
                        let error = Error::connection(
                            &act.name,
                            format!("liveness ping got no answer within {ping_timeout:?}"),
                        );
                        act.connection_lost(error, ctx);
                    }
                }
                // An error answer means the server is alive; other errors mean the connection
                // is already being dealt with.
                Err(_) => {}
            }
        }));
    }

    fn connection_lost(&mut self, error: Error, ctx: &mut Context<Self>) {
        if self.live.is_none() {
            return;
        }
        self.last_error = Some(error.clone());
        self.settle_in_flight(&error, None);
        self.feed(Event::ConnectionLost(error), ctx);
    }

    /// Decides, call by call, what happens to the calls written on a connection that is going
    /// away: re-sent on the next one, or answered now (see [`after_disconnect`]).
    /// Only the calls in `only`, when given.
    fn settle_in_flight(&mut self, error: &Error, only: Option<&[u64]>) {
        let trusted = self.settings.trusted;
        let mut in_flight: Vec<u64> = self
            .calls
            .iter()
            .filter(|(id, c)| c.sent && only.is_none_or(|ids| ids.contains(id)))
            .map(|(id, _)| *id)
            .collect();
        in_flight.sort_unstable();
        let mut resend = Vec::new();
        for id in in_flight {
            let Some(entry) = self.calls.get_mut(&id) else {
                continue;
            };
            let hints = entry
                .tool
                .as_deref()
                .and_then(|name| tool_hints(&self.tools, name));
            let verdict = after_disconnect(&entry.method, entry.retry, entry.sends, hints, trusted);
            if verdict == AfterDisconnect::Resend {
                entry.sent = false;
                resend.push(id);
                continue;
            }
            let Some(entry) = self.calls.remove(&id) else {
                continue;
            };
            let server = self.name.to_string();
            let outcome = if verdict == AfterDisconnect::OutcomeUnknown {
                Error::OutcomeUnknown {
                    server,
                    method: entry.method.clone(),
                    reason: error.to_string(),
                }
            } else {
                Error::Unavailable {
                    server,
                    reason: format!(
                        "connection lost while the call was in flight: {}",
                        error.without_stderr()
                    ),
                    attempts: 0,
                    stderr_tail: error.stderr_tail().to_vec(),
                }
            };
            self.counters.calls_failed += 1;
            entry.answer(Err(outcome));
        }
        // Re-sent calls go first: they are the oldest.
        for id in resend.into_iter().rev() {
            self.waiting.push_front(id);
        }
    }

    /// Calls the server never processed: they count as never written, and go first once a
    /// connection is Ready again.
    fn unsend(&mut self, ids: &[u64]) {
        for id in ids.iter().rev() {
            if let Some(entry) = self.calls.get_mut(id).filter(|c| c.sent) {
                entry.sent = false;
                entry.sends -= 1;
                self.waiting.push_front(*id);
            }
        }
    }

    // ----- what the server sends -----

    fn on_message(&mut self, message: Inbound, ctx: &mut Context<Self>) {
        match message {
            Inbound::Response { id, result } => match id.as_ours() {
                Some(id) if self.calls.get(&id).is_some_and(|c| c.sent) => {
                    self.finish_call(id, Ok(result))
                }
                _ => {
                    self.counters.unknown_responses += 1;
                    tracing::debug!(server = %self.name, id = %id, "response to no call in flight; ignored");
                }
            },
            Inbound::Error {
                id: Some(id),
                error,
            } => match id.as_ours() {
                Some(our) if self.calls.get(&our).is_some_and(|c| c.sent) => {
                    let method = self
                        .calls
                        .get(&our)
                        .map(|c| c.method.clone())
                        .unwrap_or_default();
                    self.finish_call(
                        our,
                        Err(Error::Rpc {
                            server: self.name.to_string(),
                            method,
                            code: error.code,
                            message: error.message,
                            data: error.data,
                        }),
                    );
                }
                _ => {
                    self.counters.unknown_responses += 1;
                    tracing::debug!(server = %self.name, id = %id, "error response to no call in flight; ignored");
                }
            },
            Inbound::Error { id: None, error } => {
                tracing::warn!(server = %self.name, code = error.code, message = %error.message, "server reported an error it could not attribute to a request");
            }
            Inbound::Request { id, method, params } => {
                if let Some(live) = &self.live {
                    answer_server_request(
                        self.name.clone(),
                        self.request_handler.clone(),
                        live.outbound.clone(),
                        id,
                        method,
                        params,
                    );
                }
            }
            Inbound::Notification { method, params } => self.on_notification(method, params, ctx),
        }
    }

    fn on_notification(&mut self, method: String, params: Option<Value>, ctx: &mut Context<Self>) {
        let server = self.name.to_string();
        match method.as_str() {
            "notifications/progress" => {
                let Some(params) = params else { return };
                let token = params.get("progressToken");
                let id = token.and_then(|t| t.as_u64().or_else(|| t.as_str()?.parse().ok()));
                match id.and_then(|id| self.calls.get(&id)) {
                    Some(entry) => entry.on_progress(&server, &params, Instant::now()),
                    None => {
                        tracing::debug!(server = %server, token = ?token, "progress for no call in flight")
                    }
                }
            }
            "notifications/tools/list_changed" => self.schedule_tools_refresh(ctx),
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
                tracing::debug!(server = %server, params = %params, "server log message");
                self.emit(ServerEvent::Log { server, params });
            }
            _ => self.emit(ServerEvent::Notification {
                server,
                method,
                params,
            }),
        }
    }

    fn schedule_tools_refresh(&mut self, ctx: &mut Context<Self>) {
        if self.tools_refresh_pending {
            return;
        }
        self.tools_refresh_pending = true;
        ctx.run_later(TOOLS_REFRESH_DEBOUNCE, |act, ctx| {
            act.tools_refresh_pending = false;
            let addr = ctx.address();
            let server = act.name.to_string();
            let timeout = act.settings.call_timeout;
            let fetch = async move {
                let mut tools = Vec::new();
                let mut cursor: Option<String> = None;
                loop {
                    let call = Call::new(
                        server.clone(),
                        "tools/list",
                        cursor.as_ref().map(|c| json!({ "cursor": c })),
                    )
                    .timeout(timeout);
                    let result = addr
                        .send(call)
                        .await
                        .map_err(|_| Error::Stopped { server: server.clone() })??;
                    let (page, next) = lifecycle::parse_tools_page(&server, result)?;
                    tools.extend(page);
                    match next {
                        Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
                        _ => return Ok::<_, Error>(tools),
                    }
                }
            };
            ctx.spawn(fetch.into_actor(act).map(|result, act, _| match result {
                Ok(tools) => act.replace_tools(tools, true),
                Err(e) => tracing::warn!(server = %act.name, error = %e, "refreshing the tool list failed"),
            }));
        });
    }

    fn replace_tools(&mut self, tools: Vec<Tool>, report: bool) {
        let (added, removed) = lifecycle::diff_tools(&self.tools, &tools);
        self.tools = tools;
        if report && (!added.is_empty() || !removed.is_empty()) {
            self.emit(ServerEvent::ToolsChanged {
                server: self.name.to_string(),
                added,
                removed,
            });
        }
    }

    fn status(&self) -> ServerStatus {
        let init = self.init.as_ref();
        let mut counters = self.counters.clone();
        counters.skipped_non_json = self.skips.non_json();
        counters.skipped_oversized = self.skips.oversized();
        ServerStatus {
            name: self.name.to_string(),
            transport: self.config.transport().kind(),
            state: self.machine.state().clone(),
            in_state_for: self.machine.since().elapsed(),
            server_info: init.map(|i| i.server_info.clone()),
            protocol_version: init.map(|i| i.protocol_version.to_string()),
            capabilities: init.map(|i| i.capabilities.clone()),
            tools: self.tools.clone(),
            subscriptions: self.subscriptions.iter().cloned().collect(),
            counters,
            last_error: self.last_error.clone(),
            pid: self.live.as_ref().and_then(|l| l.closer.pid()),
            pending_calls: self.calls.len(),
        }
    }
}

fn tool_hints(tools: &[Tool], name: &str) -> Option<ToolHints> {
    let tool = tools.iter().find(|t| t.name == name)?;
    let annotations = tool.annotations.as_ref()?;
    Some(ToolHints {
        read_only: annotations.read_only_hint.unwrap_or(false),
        idempotent: annotations.idempotent_hint.unwrap_or(false),
    })
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
            TransportEvent::Rejected(ids) => self.unsend(&ids),
            TransportEvent::CallFailed { id, error } => {
                if self.calls.get(&id).is_some_and(|c| c.sent) {
                    self.finish_call(id, Err(error));
                }
            }
            TransportEvent::Interrupted { ids, error } => {
                self.settle_in_flight(&error, Some(&ids));
                self.flush_waiting();
            }
            TransportEvent::Closed(error) => self.connection_lost(error, ctx),
        }
    }

    // The stream's last item is `Closed`, handled above; its end must not stop the actor (the
    // default does).
    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl Handler<Call> for ServerActor {
    type Result = ResponseFuture<Result<Value, Error>>;

    fn handle(&mut self, call: Call, ctx: &mut Context<Self>) -> Self::Result {
        match self.start_call(call, ctx) {
            Ok(waiter) => Box::pin(waiter.wait()),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }
}

/// Parses a raw result into a typed call's output.
pub(crate) fn parse_output<T: TypedCall>(
    server: String,
    method: &'static str,
    raw: Result<Value, Error>,
) -> Result<T::Output, Error> {
    serde_json::from_value(raw?).map_err(|e| Error::InvalidResponse {
        server,
        method: method.to_owned(),
        message: e.to_string(),
    })
}

macro_rules! typed_handlers {
    ($($t:ident),*) => {$(
        impl Handler<$t> for ServerActor {
            type Result = ResponseFuture<Result<<$t as TypedCall>::Output, Error>>;

            fn handle(&mut self, msg: $t, ctx: &mut Context<Self>) -> Self::Result {
                let call: Call = msg.into();
                let server = call.server.clone();
                let waiter = self.start_call(call, ctx);
                Box::pin(async move {
                    let raw = match waiter {
                        Ok(w) => w.wait().await,
                        Err(e) => Err(e),
                    };
                    parse_output::<$t>(server, stringify!($t), raw)
                })
            }
        }
    )*};
}

typed_handlers!(
    CallTool,
    ListTools,
    ListResources,
    ReadResource,
    ListPrompts,
    GetPrompt,
    Ping
);

impl Handler<Expire> for ServerActor {
    type Result = ();

    fn handle(&mut self, Expire { id }: Expire, ctx: &mut Context<Self>) {
        self.expire(id, ctx);
    }
}

impl Handler<GetStatus> for ServerActor {
    type Result = Result<Vec<ServerStatus>, Error>;

    fn handle(&mut self, msg: GetStatus, _: &mut Context<Self>) -> Self::Result {
        match msg.server {
            Some(name) if name != *self.name => Err(Error::ServerNotFound { server: name }),
            _ => Ok(vec![self.status()]),
        }
    }
}

impl Handler<Subscribe> for ServerActor {
    type Result = ResponseFuture<Result<(), Error>>;

    fn handle(&mut self, msg: Subscribe, ctx: &mut Context<Self>) -> Self::Result {
        self.subscriptions.insert(msg.uri.clone());
        if !self.machine.state().is_ready() {
            // Sent with the next handshake.
            return Box::pin(std::future::ready(Ok(())));
        }
        let call = Call::new(
            msg.server,
            "resources/subscribe",
            Some(json!({ "uri": msg.uri })),
        );
        let waiter = self.start_call(call, ctx);
        Box::pin(async move { waiter?.wait().await.map(drop) })
    }
}

impl Handler<Unsubscribe> for ServerActor {
    type Result = ResponseFuture<Result<(), Error>>;

    fn handle(&mut self, msg: Unsubscribe, ctx: &mut Context<Self>) -> Self::Result {
        if !self.subscriptions.remove(&msg.uri) || !self.machine.state().is_ready() {
            return Box::pin(std::future::ready(Ok(())));
        }
        let call = Call::new(
            msg.server,
            "resources/unsubscribe",
            Some(json!({ "uri": msg.uri })),
        );
        let waiter = self.start_call(call, ctx);
        Box::pin(async move { waiter?.wait().await.map(drop) })
    }
}

impl Handler<SubscribeEvents> for ServerActor {
    type Result = ();

    fn handle(&mut self, SubscribeEvents(recipient): SubscribeEvents, _: &mut Context<Self>) {
        self.subscribers.push(recipient);
    }
}

impl Handler<SetRequestHandler> for ServerActor {
    type Result = ();

    fn handle(&mut self, msg: SetRequestHandler, _: &mut Context<Self>) {
        self.request_handler = Some(msg.handler);
        self.client_capabilities = msg.capabilities;
    }
}

impl Handler<Reconnect> for ServerActor {
    type Result = Result<(), Error>;

    fn handle(&mut self, _: Reconnect, ctx: &mut Context<Self>) -> Self::Result {
        match self.machine.state() {
            ServerState::Stopped => {
                return Err(Error::Stopped {
                    server: self.name.to_string(),
                })
            }
            ServerState::Ready => {
                // The connection is dropped on purpose: its calls are settled like on a crash.
                let error = Error::connection(&self.name, "reconnect requested");
                self.settle_in_flight(&error, None);
            }
            _ => {}
        }
        self.feed(Event::Reconnect, ctx);
        Ok(())
    }
}

impl Handler<Shutdown> for ServerActor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(gone) = &mut self._gone {
            gone.deliberate = true;
        }
        self.feed(Event::Stop, ctx);
        // Calls in flight get their answer now rather than at their deadline.
        let ids: Vec<u64> = self.calls.keys().copied().collect();
        for id in ids {
            if let Some(entry) = self.calls.remove(&id) {
                let error = self.unanswered_error(&entry, "the server was stopped");
                entry.answer(Err(error));
            }
        }
        let closing = std::mem::take(&mut self.closing);
        Box::pin(
            async move {
                for closed in closing {
                    let _ = closed.await;
                }
            }
            .into_actor(self)
            .map(|_, _, ctx| ctx.stop()),
        )
    }
}

impl Handler<InjectPanic> for ServerActor {
    type Result = ();

    fn handle(&mut self, _: InjectPanic, _: &mut Context<Self>) {
        panic!(
            "InjectPanic: a test asked ServerActor `{}` to panic",
            self.name
        );
    }
}
