//! The Streamable HTTP transport (MCP 2025-03-26 to 2025-11-25) over awc, and the legacy
//! HTTP+SSE transport of 2024-11-05 (`legacy`), which shares its requests, answers and
//! authorization.
//!
//! Each outgoing message is one POST. Its answer is JSON, an SSE stream (progress and server
//! requests, then the response), or 202 for notifications. What the server sends comes out of
//! the same event stream as on stdio, so the actor cannot tell the transports apart. What only
//! HTTP has:
//!
//! - the session: `Mcp-Session-Id` is taken from the first answer that carries one (the
//!   initialize answer), checked to be visible ASCII, and sent on every later request with
//!   `MCP-Protocol-Version`. A 404 — or a 400 that names the session, as the TypeScript
//!   reference server answers after a restart — means the session is gone: the request was not
//!   processed ([`TransportEvent::Rejected`]) and the connection is over, so the actor
//!   re-initializes and re-sends it;
//! - resumption: an SSE answer that ends before its response is resumed with GET +
//!   `Last-Event-ID`, after exactly the server's `retry:` delay if it gave one;
//! - the optional GET stream for server-initiated messages, whose loss (after a failed resume)
//!   is how an idle connection notices that the server went away;
//! - DELETE of the session on shutdown.
//!
//! awc's defaults (5 s to the response head, 2 MiB bodies) do not apply: requests live as long
//! as their calls (an expired call's request is aborted), and bodies are bounded by
//! `max_message_bytes`. TLS uses a rustls config built here with the ring provider, never a
//! process-wide default.
//!
//! What the server sends reaches the actor through a channel of [`EVENTS_CAPACITY`] events,
//! and every reader waits for room in it: when the actor is behind, the SSE streams stop being
//! read and TCP pushes back on the server, as a pipe does on stdio. A flood costs a bounded
//! amount of memory, whatever its size. The other way round, a reader hands the actor a
//! server's request only while fewer than
//! [`MAX_BACKLOG`](crate::transport::backlog::MAX_BACKLOG) lines wait to be POSTed, so that a
//! request flood cannot pile up answers either (the reader may wait: see
//! [`crate::transport::backlog`] for why stdio's does not).
//!
//! The parts, one concern each:
//!
//! - here: [`connect`], the state one connection shares between its requests, and
//!   [`HttpHandle`], which closes it (DELETE of the session on shutdown);
//! - `client`: the awc client and its TLS configuration;
//! - `request`: every request this transport sends, with its headers, built in one place, and
//!   the session id those headers carry;
//! - `send`: the send loop, one POST per message, and the failures of the exchange itself;
//! - `answer`: what an answer to a POST means, by status and content type;
//! - `authorize`: a `401`/`403` of a server with OAuth, handed to the provider
//!   ([`crate::auth`]) first, and the request re-sent once a new token may help;
//! - `overload`: 429 and 503, and the server's `Retry-After`;
//! - `stream`: reading SSE streams into events, and resuming an answer whose stream broke;
//! - `listen`: the GET stream for server-initiated messages;
//! - `legacy`: the HTTP+SSE transport of 2024-11-05 ([`connect_sse`]): its one SSE stream,
//!   the `endpoint` event, and the POSTs to it, which go through `send` and `answer` as above.

mod answer;
mod authorize;
mod client;
mod legacy;
mod listen;
mod overload;
mod request;
mod send;
mod stream;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use awc::http::header::{HeaderName, HeaderValue};
use futures_util::StreamExt;
use tokio::sync::{mpsc, Notify};

use super::backlog::Backlog;
use super::{Connection, Outbound, Outgoing, SkipCounters, TransportEvent};
use crate::auth;
use crate::config::{redact_url, HttpConfig, Settings};
use crate::error::Error;
use crate::policy::backoff::Backoff;
use crate::protocol::text::server_text;

/// What one HTTP connection shares between its requests. Everything runs on the actor's
/// arbiter (awc's client is not `Send`), hence `Rc` and `Cell`.
struct Shared {
    server: Arc<str>,
    client: awc::Client,
    /// The configured URL: the MCP endpoint (Streamable HTTP), or the SSE stream (legacy).
    url: String,
    /// The legacy HTTP+SSE transport: messages are POSTed to [`endpoint`](Self::endpoint),
    /// every 2xx answer is an acknowledgement, and what the server sends comes on the one SSE
    /// stream (no GET stream of Streamable HTTP, no resumption).
    legacy_sse: bool,
    /// Legacy HTTP+SSE: the URL the server's `endpoint` event named, once it came.
    endpoint: RefCell<Option<String>>,
    /// Streamable HTTP: the status of a refusal of `initialize` that says the server may speak
    /// the legacy HTTP+SSE transport instead (400, 404, 405: the spec's backwards
    /// compatibility).
    initialize_refused: Cell<Option<u16>>,
    /// Legacy HTTP+SSE: the GET was answered, but not with an SSE stream that named an
    /// endpoint (the URL serves something else).
    not_sse: Cell<bool>,
    /// The URL without credentials (userinfo, query), for logs and errors.
    shown_url: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// OAuth: the token for every request, and what a 401/403 means.
    auth: Option<auth::provider::Provider>,
    session: RefCell<Option<String>>,
    protocol_version: RefCell<Option<String>>,
    events: mpsc::Sender<TransportEvent>,
    /// Whether the rest of an SSE answer is still read after the answer, to keep its
    /// connection (see `stream::settle`): until the server once kept one open past the wait.
    settles: Cell<bool>,
    closed: Cell<bool>,
    close: Notify,
    max_message_bytes: usize,
    resume_backoff: Backoff,
    /// How long the send loop waits for the answer to a notification before sending on.
    notification_wait: Duration,
    /// Lines the send loop has not sent yet (answers and notifications).
    backlog: Backlog,
    skips: Arc<SkipCounters>,
}

/// Events that may wait for the actor: enough to hand it a full batch (actix handles up to 16
/// stream items per turn), few enough that a flood of large messages stays small.
pub(crate) const EVENTS_CAPACITY: usize = 16;

/// Without compression features (MCP servers answer uncompressed JSON and SSE), this is what
/// awc's requests resolve to.
type Response = awc::ClientResponse;

/// The handle the actor keeps to close an HTTP connection.
pub(crate) struct HttpHandle {
    shared: Rc<Shared>,
}

impl HttpHandle {
    /// Called once the handshake is done: later requests carry the protocol version, and the
    /// GET stream for server messages is opened.
    pub fn initialized(&self, protocol_version: &str) {
        *self.shared.protocol_version.borrow_mut() = Some(protocol_version.to_owned());
        // The legacy transport's one stream is open already.
        if !self.shared.legacy_sse {
            actix::spawn(listen::listen(self.shared.clone()));
        }
    }

    /// Streamable HTTP: the status (400, 404 or 405) with which the server refused our
    /// `initialize`, which says it may speak the legacy HTTP+SSE transport.
    pub fn initialize_refused(&self) -> Option<u16> {
        self.shared.initialize_refused.get()
    }

    /// Legacy HTTP+SSE: the URL answered the GET, but not with an SSE stream that named an
    /// endpoint.
    pub fn not_sse(&self) -> bool {
        self.shared.not_sse.get()
    }

    /// Stops every request and stream of this connection at once.
    pub fn kill(&self) {
        self.shared.closed.set(true);
        self.shared.close.notify_waiters();
    }

    /// Ends the session politely: DELETE it (a 405 is fine), then stop.
    pub async fn shutdown(self, grace: Duration) {
        self.kill();
        let Some(session) = self.shared.session.borrow().clone() else {
            return;
        };
        let request = match request::delete(&self.shared, session) {
            Ok(request) => request.timeout(grace.max(Duration::from_millis(100))),
            Err(e) => {
                tracing::debug!(server = %self.shared.server, error = %e, "the session is not deleted");
                return;
            }
        };
        match request.send().await {
            Ok(resp) => {
                tracing::debug!(server = %self.shared.server, status = %resp.status(), "session deleted")
            }
            Err(e) => {
                tracing::debug!(server = %self.shared.server, error = %server_text(&e.to_string()), "DELETE of the session failed")
            }
        }
    }
}

impl Drop for HttpHandle {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Prepares a Streamable HTTP connection; nothing is sent until the first message
/// (initialize).
pub(crate) fn connect(
    server: &Arc<str>,
    config: &HttpConfig,
    settings: &Settings,
    skips: Arc<SkipCounters>,
) -> Result<Connection, Error> {
    let (shared, out_rx, events) = prepare(server, config, settings, skips, false)?;
    actix::spawn(send::send_loop(shared.clone(), out_rx));
    Ok(connection(shared, events))
}

/// Opens a connection over the legacy HTTP+SSE transport of 2024-11-05: the GET of its SSE
/// stream goes out at once; messages wait until the stream's `endpoint` event says where to
/// POST them.
pub(crate) fn connect_sse(
    server: &Arc<str>,
    config: &HttpConfig,
    settings: &Settings,
    skips: Arc<SkipCounters>,
) -> Result<Connection, Error> {
    let (shared, out_rx, events) = prepare(server, config, settings, skips, true)?;
    actix::spawn(legacy::run(shared.clone(), out_rx));
    Ok(connection(shared, events))
}

/// The connection the actor gets: its outbound side, its events, its handle.
fn connection(
    shared: Rc<Shared>,
    (out_tx, events_rx): (
        mpsc::UnboundedSender<Outgoing>,
        mpsc::Receiver<TransportEvent>,
    ),
) -> Connection {
    let events = futures_util::stream::unfold(events_rx, |mut rx| async move {
        let event = rx.recv().await?;
        Some((event, rx))
    })
    .boxed_local();
    Connection {
        outbound: Outbound::channel(out_tx),
        events,
        closer: super::Closer::Http(HttpHandle { shared }),
    }
}

/// What both transports share: the state of one connection, the receiving end of what the
/// actor queues, and the two ends the actor gets.
type Prepared = (
    Rc<Shared>,
    mpsc::UnboundedReceiver<Outgoing>,
    (
        mpsc::UnboundedSender<Outgoing>,
        mpsc::Receiver<TransportEvent>,
    ),
);

fn prepare(
    server: &Arc<str>,
    config: &HttpConfig,
    settings: &Settings,
    skips: Arc<SkipCounters>,
    legacy_sse: bool,
) -> Result<Prepared, Error> {
    let mut headers = Vec::with_capacity(config.headers.len());
    for (name, value) in &config.headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            Error::config(
                Some(server),
                format!("headers.{name}"),
                "not a valid header name",
            )
        })?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            Error::config(
                Some(server),
                format!("headers.{name}"),
                "not a valid header value",
            )
        })?;
        value.set_sensitive(true);
        headers.push((name, value));
    }
    let (events_tx, events_rx) = mpsc::channel(EVENTS_CAPACITY);
    let client = client::build_client(
        settings.connect_timeout,
        settings.max_in_flight,
        settings.http_idle_timeout,
    )?;
    let auth = match &config.oauth {
        Some(oauth) => Some(auth::provider::Provider::new(
            server.clone(),
            &config.url,
            (**oauth).clone(),
            client.clone(),
        )?),
        None => None,
    };
    let shared = Rc::new(Shared {
        server: server.clone(),
        client,
        url: config.url.clone(),
        legacy_sse,
        endpoint: RefCell::new(None),
        initialize_refused: Cell::new(None),
        not_sse: Cell::new(false),
        settles: Cell::new(true),
        shown_url: redact_url(&config.url),
        headers,
        auth,
        session: RefCell::new(None),
        protocol_version: RefCell::new(None),
        events: events_tx,
        closed: Cell::new(false),
        close: Notify::new(),
        max_message_bytes: settings.max_message_bytes,
        resume_backoff: settings.reconnect_backoff,
        notification_wait: settings.ping_timeout,
        backlog: Backlog::default(),
        skips,
    });
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    Ok((shared, out_rx, (out_tx, events_rx)))
}

impl Shared {
    /// An SSE event longer than `max_message_bytes` was dropped (on any stream: a POST's
    /// answer, the GET stream, the legacy transport's): counted, and said once per event.
    fn skipped_oversized_event(&self, bytes: usize) {
        self.skips
            .oversized
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        crate::telemetry::message_skipped(&self.server, "oversized");
        tracing::warn!(server = %self.server, bytes, "skipped an SSE event longer than max_message_bytes");
    }

    /// Hands an event to the actor, waiting while the actor is behind (this is the transport's
    /// backpressure), unless the connection is closed.
    async fn emit(&self, event: TransportEvent) {
        if self.closed.get() {
            return;
        }
        tokio::select! {
            // An error means the actor dropped the connection: nobody listens any more.
            _ = self.events.send(event) => {}
            _ = self.closed() => {}
        }
    }

    /// Waits until the send loop has room for an answer to one more server request: a server
    /// whose requests come faster than their answers go waits (its stream is not read).
    async fn room_to_answer(&self) {
        tokio::select! {
            () = self.backlog.room() => {}
            () = self.closed() => {}
        }
    }

    async fn closed(&self) {
        if !self.closed.get() {
            self.close.notified().await;
        }
    }

    fn connection_error(&self, message: impl AsRef<str>) -> Error {
        Error::connection(&self.server, message)
    }
}

#[cfg(test)]
mod tests;
