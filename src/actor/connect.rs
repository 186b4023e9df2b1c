//! One connection attempt, start to finish: spawn the transport (for an HTTP server of
//! [`HttpMode::Auto`], the one it was last reached over), agree on a protocol era and version,
//! and on the legacy HTTP+SSE transport if Streamable HTTP is refused (see [`opening`]), fetch the tool list, re-send the application's subscriptions. It
//! runs as one future the actor spawns, and hands over a connection only once it is ready for
//! calls; if it fails, or is dropped (timeout, shutdown), the half-made connection is killed
//! with it.

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use futures_util::StreamExt;
use serde_json::{json, Value};
use tracing::{field, Instrument};

use crate::actor::server_requests::ServerRequests;
use crate::config::{HttpMode, Settings, Transport};
use crate::error::Error;
use crate::protocol::as_sent::ListedTool;
use crate::protocol::era::Era;
use crate::protocol::jsonrpc::{self, Id, Inbound, RequestIds};
use crate::protocol::lifecycle::Negotiated;
use crate::protocol::mrtr;
use crate::protocol::pagination;
use crate::protocol::text::server_text;
use crate::session::wire::Wire;
use crate::session::{AttemptPlan, Opened};
#[cfg(feature = "http")]
use crate::transport::http;
#[cfg(feature = "stdio")]
use crate::transport::stdio;
use crate::transport::{Closer, Connection, Link, Outbound, Reaping, SkipCounters, TransportEvent};

mod opening;

/// Notifications kept from the handshake for the actor; more are dropped (and logged).
const MAX_HANDSHAKE_NOTIFICATIONS: usize = 256;

/// A connection ready for calls: its IO parts, which the actor keeps, and what the session
/// takes.
pub(crate) struct Established {
    pub opened: Opened,
    pub events: futures_util::stream::LocalBoxStream<'static, TransportEvent>,
    pub closer: Closer,
    /// For the answers to the server's requests, which the actor sends.
    pub outbound: Outbound,
}

/// How an attempt reaches its server: through the configured transport, or (in the actor's
/// unit tests) through an in-memory one whose other end the test plays.
#[derive(Clone, Default)]
pub(crate) enum Dial {
    #[default]
    Configured,
    #[cfg(test)]
    Memory(crate::transport::memory::Network),
}

/// Everything an attempt needs, cloned out of the actor so the future owns it.
pub(crate) struct Attempt {
    pub server: Arc<str>,
    pub transport: Transport,
    pub settings: Settings,
    /// What the session starts this attempt from: the era to try, a discovery to reuse, the
    /// subscriptions to re-send, the capabilities to announce.
    pub plan: AttemptPlan,
    pub server_requests: ServerRequests,
    pub skips: Arc<SkipCounters>,
    /// The server's request ids, shared with its call table: the handshake's ids are never
    /// used again on the connection it hands over.
    pub ids: RequestIds,
    /// The actor's count of its processes not gone yet (see [`Reaping`]).
    #[cfg_attr(not(feature = "stdio"), allow(dead_code))]
    pub reaping: Reaping,
    // Read only where the in-memory transport exists (the unit tests).
    #[cfg_attr(not(test), allow(dead_code))]
    pub dial: Dial,
    /// What this attempt learned of the server's era, also when it fails or is cut short (a
    /// stdio server that exits on `server/discover` is spoken to with the handshake next time).
    pub learned: Rc<Cell<Option<Era>>>,
    /// Which HTTP transport an [`HttpMode::Auto`] server was last reached over (the actor's,
    /// shared by its attempts): tried first, and set by an attempt that connects.
    pub http_found: Rc<Cell<Option<HttpMode>>>,
}

impl Attempt {
    /// Connects and opens the connection, within the configured connect timeout, inside a
    /// `mcp.connect` span (server, attempt, transport; when it ends: outcome, era, protocol
    /// version and duration), so that everything logged on the way says which attempt it
    /// belongs to. `checked` is the validation of the configuration, which fails the attempt
    /// before anything starts. Returns the era it learned beside the outcome.
    pub async fn run(
        self,
        checked: Result<(), Error>,
    ) -> (Result<Established, Error>, Option<Era>) {
        let learned = self.learned.clone();
        let span = tracing::info_span!(
            "mcp.connect",
            server = %self.server,
            attempt = self.plan.number,
            transport = self.transport.kind(),
            outcome = field::Empty,
            era = field::Empty,
            protocol_version = field::Empty,
            duration_ms = field::Empty,
        );
        let started = std::time::Instant::now();
        let result = async move {
            checked?;
            self.run_within_timeout().await
        }
        .instrument(span.clone())
        .await;
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        span.record("duration_ms", ms);
        match &result {
            Ok(established) => {
                let negotiated = &established.opened.negotiated;
                span.record("outcome", "ready");
                span.record("era", negotiated.era.name());
                span.record("protocol_version", negotiated.version.as_str());
            }
            Err(error) => {
                span.record("outcome", error.code());
            }
        }
        (result, learned.get())
    }

    async fn run_within_timeout(self) -> Result<Established, Error> {
        let limit = self.settings.connect_timeout;
        let server = self.server.clone();
        // A user signing in is not a server that does not answer: while an OAuth sign-in for
        // this server is in progress the limit does not run (`authorize_timeout` bounds it).
        #[cfg(feature = "http")]
        let finished = {
            let transport = self.transport.clone();
            crate::auth::within_connect_timeout(limit, &transport, self.establish()).await
        };
        #[cfg(not(feature = "http"))]
        let finished = tokio::time::timeout(limit, self.establish()).await.ok();
        match finished {
            Some(result) => result,
            None => Err(Error::connection(
                &server,
                format!(
                    "no answer to the opening (initialize or server/discover) within {limit:?}"
                ),
            )),
        }
    }

    /// Starts the transport: spawns the process, or prepares the HTTP client.
    fn open_transport(&self) -> Result<Connection, Error> {
        #[cfg(test)]
        if let Dial::Memory(network) = &self.dial {
            return network.dial(&self.server);
        }
        match &self.transport {
            #[cfg(feature = "stdio")]
            Transport::Stdio(config) => stdio::spawn(
                &self.server,
                config,
                &self.settings,
                self.skips.clone(),
                &self.reaping,
            ),
            #[cfg(feature = "http")]
            Transport::Http(config) if self.starts_with_sse() => {
                http::connect_sse(&self.server, config, &self.settings, self.skips.clone())
            }
            #[cfg(feature = "http")]
            Transport::Http(config) => {
                http::connect(&self.server, config, &self.settings, self.skips.clone())
            }
            // Configs of a transport this build lacks are refused by validation before an
            // actor starts; this is the backstop.
            #[allow(unreachable_patterns)]
            other => Err(crate::config::missing_transport(&self.server, other)),
        }
    }

    /// Opens the legacy HTTP+SSE transport to the configured URL, in place of Streamable HTTP.
    #[cfg(feature = "http")]
    fn open_sse(&self) -> Result<Connection, Error> {
        #[cfg(test)]
        if let Dial::Memory(network) = &self.dial {
            return network.dial(&self.server);
        }
        match &self.transport {
            Transport::Http(config) => {
                http::connect_sse(&self.server, config, &self.settings, self.skips.clone())
            }
            other => Err(crate::config::missing_transport(&self.server, other)),
        }
    }

    fn is_http(&self) -> bool {
        matches!(self.transport, Transport::Http(_))
    }

    /// The configured HTTP mode, if the server is reached over HTTP.
    fn http_mode(&self) -> Option<HttpMode> {
        match &self.transport {
            Transport::Http(config) => Some(config.mode),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// Whether this attempt starts with the legacy HTTP+SSE transport: configured so, or an
    /// `auto` server that was last reached over it.
    fn starts_with_sse(&self) -> bool {
        match self.http_mode() {
            Some(HttpMode::Sse) => true,
            Some(HttpMode::Auto) => self.http_found.get() == Some(HttpMode::Sse),
            _ => false,
        }
    }

    async fn establish(self) -> Result<Established, Error> {
        let connection = self.open_transport()?;
        let link: Rc<dyn Link> = Rc::new(connection.outbound.clone());
        let mut session = Handshake {
            wire: Wire::legacy(link.clone()),
            link,
            attempt: &self,
            connection,
            sse: self.starts_with_sse(),
            notifications: Vec::new(),
            reused: false,
            answered: false,
        };
        let opened = session.open().await;
        if self.http_mode() == Some(HttpMode::Auto) {
            match &opened {
                Ok(_) => {
                    let found = match session.sse {
                        true => HttpMode::Sse,
                        false => HttpMode::StreamableHttp,
                    };
                    if self.http_found.replace(Some(found)) != Some(found) {
                        tracing::info!(server = %self.server, transport = found.name(), "the server speaks this HTTP transport; reconnects use it first");
                    }
                }
                // The URL no longer serves the legacy transport: Streamable HTTP first next time.
                Err(_) if session.sse && session.connection.closer.not_sse() => {
                    self.http_found.set(None);
                }
                Err(_) => {}
            }
        }
        let (negotiated, era_note) = opened?;
        let transport = match session.sse {
            true => "sse",
            false => self.transport.kind(),
        };

        let (tools, tools_cut) = if negotiated.capabilities.tools.is_some() {
            let listed = session.list_tools().await?;
            let tools = session.wire.accept_tools(&self.server, listed.items);
            (tools, listed.cut)
        } else {
            (Vec::new(), None)
        };
        let subscribed = session.resubscribe(&negotiated).await?;
        session.set_log_level(&negotiated).await;
        tracing::debug!(server = %self.server, era = %negotiated.era, version = %negotiated.version, tools = tools.len(), "connected");
        let Handshake {
            wire,
            connection,
            notifications,
            reused,
            answered,
            ..
        } = session;
        Ok(Established {
            opened: Opened {
                transport: Some(transport),
                wire,
                negotiated,
                era_note,
                reused,
                answered,
                tools,
                tools_cut,
                notifications,
                subscribed,
            },
            events: connection.events,
            closer: connection.closer,
            outbound: connection.outbound,
        })
    }
}

/// Requests on a connection the actor does not own yet: sent one at a time, answers read
/// straight from the event stream.
struct Handshake<'a> {
    attempt: &'a Attempt,
    connection: Connection,
    /// The connection is of the legacy HTTP+SSE transport: the session era only.
    sse: bool,
    /// The connection's outbound side, as the wires of either era write to it.
    link: Rc<dyn Link>,
    /// How requests are shaped: the legacy way until the opening settles on the modern era.
    wire: Wire,
    notifications: Vec<(String, Option<Value>)>,
    /// The opening reused a fresh discovery.
    reused: bool,
    /// The server answered one of the handshake's requests with a result.
    answered: bool,
}

impl Handshake<'_> {
    /// Sends request `method` shaped for the era being tried; returns its id.
    fn send(&mut self, method: &str, params: Option<&Value>) -> u64 {
        let id = self.attempt.ids.next();
        self.wire.request_value(id, method, params);
        id
    }

    /// Sends request `method` and waits for its answer.
    async fn request(&mut self, method: &str, params: Option<Value>) -> Result<Value, Error> {
        let id = self.send(method, params.as_ref());
        self.answer_to(id, method).await
    }

    /// Waits for the answer to request `id` (of `method`), handling what else the server sends
    /// meanwhile. Cancel-safe (it awaits only the next event): a probe waits for it in rounds.
    async fn answer_to(&mut self, id: u64, method: &str) -> Result<Value, Error> {
        let server = &self.attempt.server;
        // The messages of a line that only looked like a response, to go through first.
        let mut reparsed = VecDeque::new();
        loop {
            let event = match reparsed.pop_front() {
                Some(message) => TransportEvent::Message(message),
                None => match self.connection.events.next().await {
                    Some(event) => event,
                    None => break,
                },
            };
            match event {
                TransportEvent::Closed(e) => return Err(e),
                TransportEvent::Message(Inbound::Response { id: got, result }) => {
                    let value = result.to_value();
                    // A line taken for a response by its fixed parts alone: routed as what it
                    // is if the full parse finds it is not one (skipped and counted if it is
                    // not JSON-RPC at all).
                    if let Some(again) = value.is_err().then(|| result.unless_plain()).flatten() {
                        reparsed.extend(self.attempt.skips.messages_of(server, again));
                        continue;
                    }
                    if got.as_ours() == Some(id) {
                        self.answered |= value.is_ok();
                        return value
                            .map_err(|e| Error::invalid_response(server, method, e.to_string()));
                    }
                    tracing::debug!(server = %server, id = %server_text(&got.to_string()), "response to no request of the handshake; ignored");
                }
                TransportEvent::Message(Inbound::Error { id: got, error })
                    if got.as_ref().and_then(Id::as_ours) == Some(id) =>
                {
                    return Err(Error::rpc(server, method, error))
                }
                TransportEvent::Message(Inbound::Notification { method, params }) => {
                    if self.notifications.len() < MAX_HANDSHAKE_NOTIFICATIONS {
                        self.notifications.push((method, params));
                    } else {
                        tracing::debug!(server = %server, method = %server_text(&method), "notification during the handshake dropped: too many");
                    }
                }
                TransportEvent::Message(Inbound::Request { id, method, params }) => {
                    if self.wire.era() == Era::Modern {
                        // As on the connection it hands over (see `Session::on_message`).
                        tracing::debug!(server = %server, method = %server_text(&method), "a modern server sent a request; refused");
                        let refusal = Err(mrtr::server_request_refusal());
                        self.connection
                            .outbound
                            .answer(jsonrpc::response_line(&id, &refusal));
                        continue;
                    }
                    self.attempt.server_requests.answer(
                        &self.connection.outbound,
                        id,
                        method,
                        params,
                    );
                }
                TransportEvent::CallFailed { id: got, error } if got == id => return Err(error),
                TransportEvent::Interrupted { ids, error, .. } if ids.contains(&id) => {
                    return Err(error)
                }
                // Not a refusal of a call: the attempt fails as any other, and is retried.
                TransportEvent::Unwritten { id: got, error } if got == id => {
                    let why = match error {
                        Error::Refused { reason, .. } => reason,
                        other => other.without_stderr(),
                    };
                    return Err(Error::connection(server, format!("{method}: {why}")));
                }
                // Never processed: the `Closed` that follows says why (e.g. connection refused).
                TransportEvent::Rejected(ids) if ids.contains(&id) => {}
                other => {
                    tracing::debug!(server = %server, event = %server_text(&format!("{other:?}")), "ignored during handshake");
                }
            }
        }
        Err(Error::connection(
            server,
            "connection closed during the handshake",
        ))
    }

    async fn list_tools(&mut self) -> Result<pagination::Listed<ListedTool>, Error> {
        let server = self.attempt.server.clone();
        let listed = pagination::list_all_tools(&server, async |params| {
            self.request("tools/list", params).await
        })
        .await?;
        if let Some(cut) = &listed.cut {
            tracing::warn!(server = %server, why = %cut, "tools/list was cut short");
        }
        Ok(listed)
    }

    /// Asks a session-era server for the configured log level (the modern era sends it with
    /// every request). A refusal is logged, not fatal: the server still works.
    async fn set_log_level(&mut self, negotiated: &Negotiated) {
        let Some(level) = self.attempt.settings.log_level else {
            return;
        };
        if negotiated.era != Era::Legacy || negotiated.capabilities.logging.is_none() {
            return;
        }
        let params = json!({ "level": level.name() });
        if let Err(e) = self.request("logging/setLevel", Some(params)).await {
            tracing::warn!(server = %self.attempt.server, error = %e.without_stderr(), "the server refused the log level");
        }
    }

    /// Re-sends the application's resource subscriptions (session era), and returns those that
    /// were sent.
    async fn resubscribe(&mut self, negotiated: &Negotiated) -> Result<Vec<String>, Error> {
        let server = self.attempt.server.clone();
        let subscriptions = &self.attempt.plan.subscriptions;
        if subscriptions.is_empty() {
            return Ok(Vec::new());
        }
        let can_subscribe = negotiated
            .capabilities
            .resources
            .as_ref()
            .and_then(|r| r.subscribe)
            .unwrap_or(false);
        if !can_subscribe {
            tracing::warn!(server = %server, "server does not support resource subscriptions; not re-sent");
            return Ok(Vec::new());
        }
        if negotiated.era == Era::Modern {
            // The modern era subscribes through `subscriptions/listen`, which the actor opens
            // once the connection is Ready.
            return Ok(Vec::new());
        }
        for uri in subscriptions {
            if let Err(e) = self
                .request("resources/subscribe", Some(json!({ "uri": uri })))
                .await
            {
                if e.kind() == crate::ErrorKind::Rpc {
                    tracing::warn!(server = %server, uri = %server_text(uri), error = %e, "re-subscribing failed");
                } else {
                    return Err(e);
                }
            }
        }
        Ok(subscriptions.clone())
    }
}
