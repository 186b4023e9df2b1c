//! The Streamable HTTP transport (MCP 2025-03-26 to 2025-11-25) over awc.
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

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use awc::error::SendRequestError;
use awc::http::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use awc::http::StatusCode;
use bytes::Bytes;
use futures_util::StreamExt;
use serde::Deserialize;
use tokio::sync::{mpsc, Notify};
use tokio::task::AbortHandle;

use super::{Connection, Outbound, Outgoing, SkipCounters, TransportEvent};
use crate::config::{redact_url, HttpConfig, Settings};
use crate::error::Error;
use crate::policy::backoff::Backoff;
use crate::protocol::jsonrpc::{parse_frame, Inbound};
use crate::protocol::sse::{SseItem, SseParser};

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";
/// Attempts to resume one broken response stream before giving the call up.
const MAX_RESUMES: u32 = 3;
/// How much of an error body we read to explain an error.
const ERROR_BODY_LIMIT: usize = 8 * 1024;
/// The shortest reconnection delay we honour, whatever `retry:` says: a server asking for 0 ms
/// must not make us spin.
const MIN_RETRY: Duration = Duration::from_millis(100);
/// A GET stream that ends this many times in a row without delivering anything is given up.
const MAX_EMPTY_STREAMS: u32 = 5;

/// What one HTTP connection shares between its requests. Everything runs on the actor's
/// arbiter (awc's client is not `Send`), hence `Rc` and `Cell`.
struct Shared {
    server: Arc<str>,
    client: awc::Client,
    url: String,
    /// The URL without credentials (userinfo, query), for logs and errors.
    shown_url: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    session: RefCell<Option<String>>,
    protocol_version: RefCell<Option<String>>,
    events: mpsc::UnboundedSender<TransportEvent>,
    closed: Cell<bool>,
    close: Notify,
    max_message_bytes: usize,
    resume_backoff: Backoff,
    skips: Arc<SkipCounters>,
}

/// The handle the actor keeps to close an HTTP connection.
pub(crate) struct HttpHandle {
    shared: Rc<Shared>,
}

impl HttpHandle {
    /// Called once the handshake is done: later requests carry the protocol version, and the
    /// GET stream for server messages is opened.
    pub fn initialized(&self, protocol_version: &str) {
        *self.shared.protocol_version.borrow_mut() = Some(protocol_version.to_owned());
        actix::spawn(listen(self.shared.clone()));
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
        let request = self
            .shared
            .request(self.shared.client.delete(&self.shared.url))
            .insert_header((SESSION_HEADER, session))
            .timeout(grace.max(Duration::from_millis(100)));
        match request.send().await {
            Ok(resp) => {
                tracing::debug!(server = %self.shared.server, status = %resp.status(), "session deleted")
            }
            Err(e) => {
                tracing::debug!(server = %self.shared.server, error = %e, "DELETE of the session failed")
            }
        }
    }
}

impl Drop for HttpHandle {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Prepares a connection; nothing is sent until the first message (initialize).
pub(crate) fn connect(
    server: &Arc<str>,
    config: &HttpConfig,
    settings: &Settings,
    skips: Arc<SkipCounters>,
) -> Result<Connection, Error> {
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
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let shared = Rc::new(Shared {
        server: server.clone(),
        client: build_client(settings.connect_timeout)?,
        url: config.url.clone(),
        shown_url: redact_url(&config.url),
        headers,
        session: RefCell::new(None),
        protocol_version: RefCell::new(None),
        events: events_tx,
        closed: Cell::new(false),
        close: Notify::new(),
        max_message_bytes: settings.max_message_bytes,
        resume_backoff: settings.reconnect_backoff,
        skips,
    });
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    actix::spawn(send_loop(shared.clone(), out_rx));
    let events = futures_util::stream::unfold(events_rx, |mut rx| async move {
        let event = rx.recv().await?;
        Some((event, rx))
    })
    .boxed_local();
    Ok(Connection {
        outbound: Outbound(out_tx),
        events,
        closer: super::Closer::Http(HttpHandle { shared }),
    })
}

/// The TLS configuration, built once per process and shared by every connection: building it
/// copies the root store and allocates a session cache, tens of KiB per supervised server.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, Error> {
    static TLS: std::sync::OnceLock<Result<Arc<rustls::ClientConfig>, String>> =
        std::sync::OnceLock::new();
    let built = TLS.get_or_init(|| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(tls))
    });
    built.clone().map_err(|e| Error::config(None, "tls", e))
}

fn build_client(connect_timeout: Duration) -> Result<awc::Client, Error> {
    let connector = awc::Connector::new()
        .rustls_0_23(tls_config()?)
        .timeout(connect_timeout);
    // No client-wide timeout: a request lives as long as its call, whose deadline the actor
    // keeps (an expired call's request is abandoned); connecting has the connector's timeout.
    Ok(awc::Client::builder()
        .connector(connector)
        .disable_redirects()
        .disable_timeout()
        .finish())
}

impl Shared {
    fn emit(&self, event: TransportEvent) {
        if !self.closed.get() {
            let _ = self.events.send(event);
        }
    }

    /// Adds the configured headers to a request.
    fn request(&self, mut request: awc::ClientRequest) -> awc::ClientRequest {
        for (name, value) in &self.headers {
            request = request.insert_header((name.clone(), value.clone()));
        }
        request
    }

    /// Adds the session and protocol version, when there are any.
    fn with_session(&self, mut request: awc::ClientRequest) -> (awc::ClientRequest, bool) {
        let session = self.session.borrow().clone();
        let had_session = session.is_some();
        if let Some(session) = session {
            request = request.insert_header((SESSION_HEADER, session));
        }
        if let Some(version) = self.protocol_version.borrow().clone() {
            request = request.insert_header((VERSION_HEADER, version));
        }
        (request, had_session)
    }

    async fn closed(&self) {
        if !self.closed.get() {
            self.close.notified().await;
        }
    }

    fn connection_error(&self, message: impl Into<String>) -> Error {
        Error::connection(&self.server, message)
    }

    /// Takes the session id from a response, if we have none yet.
    fn capture_session(&self, response: &awc::ClientResponse<impl Sized>) -> Result<(), Error> {
        if self.session.borrow().is_some() {
            return Ok(());
        }
        let Some(value) = response.headers().get(SESSION_HEADER) else {
            return Ok(());
        };
        let bytes = value.as_bytes();
        if bytes.is_empty() || !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
            return Err(Error::InvalidResponse {
                server: self.server.to_string(),
                method: "initialize".into(),
                message: "Mcp-Session-Id must be visible ASCII".into(),
            });
        }
        *self.session.borrow_mut() = Some(String::from_utf8_lossy(bytes).into_owned());
        Ok(())
    }
}

/// The id and method of one of our outgoing messages.
#[derive(Deserialize, Default)]
struct Header {
    id: Option<u64>,
    method: Option<String>,
}

/// POSTs messages as the actor queues them: notifications and answers one after the other (so
/// that `notifications/initialized` arrives before the next request), requests concurrently,
/// each in a task that an abandoned call aborts.
async fn send_loop(shared: Rc<Shared>, mut rx: mpsc::UnboundedReceiver<Outgoing>) {
    let requests: Rc<RefCell<HashMap<u64, AbortHandle>>> = Rc::default();
    while let Some(outgoing) = rx.recv().await {
        if shared.closed.get() {
            return;
        }
        let mut line = match outgoing {
            Outgoing::Line(line) => line,
            Outgoing::Abandon(id) => {
                if let Some(request) = requests.borrow_mut().remove(&id) {
                    request.abort();
                }
                continue;
            }
        };
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let header: Header = serde_json::from_slice(&line).unwrap_or_default();
        // Only requests have ids of ours; the id of an answer to a server request is the
        // server's and may collide with one of ours.
        let id = header.id.filter(|_| header.method.is_some());
        let post = post(shared.clone(), Bytes::from(line), id, header.method);
        match id {
            Some(id) => {
                let registry = requests.clone();
                let task = actix::spawn(async move {
                    post.await;
                    registry.borrow_mut().remove(&id);
                });
                requests.borrow_mut().insert(id, task.abort_handle());
            }
            None => post.await,
        }
    }
}

async fn post(shared: Rc<Shared>, body: Bytes, id: Option<u64>, method: Option<String>) {
    let request = shared
        .request(shared.client.post(&shared.url))
        .insert_header((ACCEPT, "application/json, text/event-stream"))
        .insert_header((CONTENT_TYPE, "application/json"));
    let (request, had_session) = if method.as_deref() == Some("initialize") {
        (request, false)
    } else {
        shared.with_session(request)
    };
    let sent = tokio::select! {
        sent = request.send_body(body) => sent,
        _ = shared.closed() => return,
    };
    let response = match sent {
        Ok(response) => response,
        Err(SendRequestError::Connect(e)) => {
            // The server cannot be reached: the connection is over, and this request never
            // got there, so it can be sent again whatever its retry policy.
            if let Some(id) = id {
                shared.emit(TransportEvent::Rejected(vec![id]));
            }
            shared.emit(TransportEvent::Closed(shared.connection_error(format!(
                "cannot connect to {}: {e}",
                shared.shown_url
            ))));
            return;
        }
        Err(e) => {
            // This one exchange failed (a reset socket, a garbled answer): the session may
            // well be fine. Its call follows the retry rules.
            let error = shared.connection_error(format!("POST failed: {e}"));
            match id {
                Some(id) => shared.emit(TransportEvent::Interrupted {
                    ids: vec![id],
                    error,
                }),
                None => {
                    tracing::warn!(server = %shared.server, error = %error, "a notification could not be sent")
                }
            }
            return;
        }
    };
    on_response(
        &shared,
        response,
        id,
        method.as_deref().unwrap_or(""),
        had_session,
    )
    .await;
}

/// Without compression features (MCP servers answer uncompressed JSON and SSE), this is what
/// awc's requests resolve to.
type Response = awc::ClientResponse;

async fn on_response(
    shared: &Rc<Shared>,
    mut response: Response,
    id: Option<u64>,
    method: &str,
    had_session: bool,
) {
    let status = response.status();
    if let Err(error) = shared.capture_session(&response) {
        if let Some(id) = id {
            shared.emit(TransportEvent::CallFailed { id, error });
        }
        return;
    }
    if status.is_success() {
        let Some(id) = id else { return }; // 202 for a notification or a response of ours.
        if status == StatusCode::ACCEPTED {
            return;
        }
        if is_sse(&response) {
            let mut parser = SseParser::new(shared.max_message_bytes);
            let ended = pump(shared, &mut response, &mut parser, Some(id)).await;
            if let Pumped::Ended { retry, .. } = ended {
                resume(shared, id, parser, retry).await;
            }
            return;
        }
        let body = tokio::select! {
            body = response.body().limit(shared.max_message_bytes) => body,
            _ = shared.closed() => return,
        };
        match body {
            Ok(body) => {
                if !deliver(shared, &body, Some(id)) {
                    // Nothing else will answer this call: say so now, not at its deadline.
                    let preview: String =
                        String::from_utf8_lossy(&body).chars().take(120).collect();
                    shared.emit(TransportEvent::CallFailed {
                        id,
                        error: Error::InvalidResponse {
                            server: shared.server.to_string(),
                            method: method.to_owned(),
                            message: format!(
                                "the JSON answer holds no response to this request: {preview}"
                            ),
                        },
                    });
                }
            }
            Err(e) => shared.emit(TransportEvent::CallFailed {
                id,
                error: Error::InvalidResponse {
                    server: shared.server.to_string(),
                    method: method.to_owned(),
                    message: format!("reading the response body failed: {e}"),
                },
            }),
        };
        return;
    }
    let detail = error_detail(&mut response).await;
    if session_gone(had_session, status, &detail) {
        if let Some(id) = id {
            shared.emit(TransportEvent::Rejected(vec![id]));
        }
        shared.emit(TransportEvent::Closed(shared.connection_error(format!(
            "the server no longer knows our session (HTTP {}): {detail}",
            status.as_u16()
        ))));
        return;
    }
    let error = match status.as_u16() {
        401 | 403 => Error::Unauthorized {
            server: shared.server.to_string(),
            status: status.as_u16(),
            message: detail,
        },
        500..=599 => {
            // The server failed this request; it may have done part of it. Only this call is
            // affected: it follows the retry rules. Whether the server is gone altogether, the
            // GET stream or the next request will tell.
            let error = shared.connection_error(format!(
                "HTTP {} from the server: {detail}",
                status.as_u16()
            ));
            match id {
                Some(id) => shared.emit(TransportEvent::Interrupted {
                    ids: vec![id],
                    error,
                }),
                None => {
                    tracing::warn!(server = %shared.server, method, error = %error, "a notification was refused")
                }
            }
            return;
        }
        _ if method == "initialize" => shared.connection_error(format!(
            "initialize answered HTTP {}: {detail}",
            status.as_u16()
        )),
        _ => Error::InvalidResponse {
            server: shared.server.to_string(),
            method: method.to_owned(),
            message: format!("HTTP {}: {detail}", status.as_u16()),
        },
    };
    match id {
        Some(id) => shared.emit(TransportEvent::CallFailed { id, error }),
        None => {
            tracing::warn!(server = %shared.server, method, error = %error, "a notification was refused")
        }
    }
}

fn is_sse<T>(response: &awc::ClientResponse<T>) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// A short explanation of an error answer: `WWW-Authenticate` or the start of the body.
async fn error_detail(response: &mut Response) -> String {
    if let Some(auth) = response.headers().get("www-authenticate") {
        return String::from_utf8_lossy(auth.as_bytes()).into_owned();
    }
    let body = tokio::time::timeout(
        Duration::from_secs(2),
        response.body().limit(ERROR_BODY_LIMIT),
    )
    .await;
    match body {
        Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).chars().take(300).collect(),
        _ => String::new(),
    }
}

/// Parses one JSON-RPC payload and passes its messages on. True if it held the response to
/// `awaited`.
fn deliver(shared: &Shared, payload: &[u8], awaited: Option<u64>) -> bool {
    match parse_frame(payload) {
        Ok(messages) => {
            let mut answered = false;
            for message in messages {
                if let (
                    Some(id),
                    Inbound::Response { id: got, .. } | Inbound::Error { id: Some(got), .. },
                ) = (awaited, &message)
                {
                    answered |= got.as_ours() == Some(id);
                }
                shared.emit(TransportEvent::Message(message));
            }
            answered
        }
        Err(e) => {
            shared
                .skips
                .non_json
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(server = %shared.server, error = %e, "skipped a message that is not JSON-RPC");
            false
        }
    }
}

enum Pumped {
    /// The awaited response arrived (the stream is dropped, open or not).
    Answered,
    /// The stream ended first; `retry` is the server's reconnection delay, if it gave one;
    /// `events` is how many messages it delivered.
    Ended {
        retry: Option<Duration>,
        events: usize,
    },
    /// The connection is being closed.
    Closed,
}

/// Reads an SSE stream, passing its messages on, until the response to `awaited` arrives or
/// the stream ends.
async fn pump(
    shared: &Shared,
    response: &mut Response,
    parser: &mut SseParser,
    awaited: Option<u64>,
) -> Pumped {
    let mut retry = None;
    let mut events = 0;
    loop {
        let chunk = tokio::select! {
            chunk = response.next() => chunk,
            _ = shared.closed() => return Pumped::Closed,
        };
        let Some(Ok(chunk)) = chunk else {
            return Pumped::Ended { retry, events };
        };
        let mut answered = false;
        for item in parser.feed(&chunk) {
            match item {
                SseItem::Event { data, .. } => {
                    events += 1;
                    answered |= deliver(shared, data.as_bytes(), awaited);
                }
                SseItem::Retry(delay) => retry = Some(delay.max(MIN_RETRY)),
                SseItem::Oversized { bytes } => {
                    shared
                        .skips
                        .oversized
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::warn!(server = %shared.server, bytes, "skipped an SSE event longer than max_message_bytes");
                }
            }
        }
        if answered {
            return Pumped::Answered;
        }
    }
}

/// Opens a GET for the session, resuming after `last_event_id` if given.
async fn get(shared: &Shared, last_event_id: Option<&str>) -> Result<Response, SendRequestError> {
    let request = shared
        .request(shared.client.get(&shared.url))
        .insert_header((ACCEPT, "text/event-stream"));
    let (mut request, _) = shared.with_session(request);
    if let Some(id) = last_event_id {
        request = request.insert_header((LAST_EVENT_ID, id));
    }
    request.send().await
}

/// Whether an error answer says our session is gone: 404 per the spec, or a 400 that names
/// the session (the TypeScript reference server). Without a session, neither means that: a
/// stateless server may simply have no GET endpoint.
fn session_gone(had_session: bool, status: StatusCode, detail: &str) -> bool {
    had_session
        && (status == StatusCode::NOT_FOUND
            || (status == StatusCode::BAD_REQUEST
                && detail.to_ascii_lowercase().contains("session")))
}

/// Waits `delay`, unless the connection closes first (then false).
async fn pause(shared: &Shared, delay: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => true,
        _ = shared.closed() => false,
    }
}

/// Resumes the response stream of request `id` with GET + `Last-Event-ID`. If that is
/// impossible, the call is reported interrupted and the actor applies its retry rules.
async fn resume(shared: &Rc<Shared>, id: u64, mut parser: SseParser, mut retry: Option<Duration>) {
    for attempt in 0..MAX_RESUMES {
        let Some(last) = parser.last_event_id().map(str::to_owned) else {
            break;
        };
        let delay = retry.unwrap_or_else(|| shared.resume_backoff.base_delay(attempt));
        tracing::debug!(server = %shared.server, id, last_event_id = %last, delay_ms = delay.as_millis() as u64, "resuming a broken response stream");
        if !pause(shared, delay).await {
            return;
        }
        let mut response = match get(shared, Some(&last)).await {
            Ok(response) if response.status().is_success() && is_sse(&response) => response,
            Ok(response) => {
                tracing::debug!(server = %shared.server, status = %response.status(), "the server cannot resume the stream");
                break;
            }
            Err(e) => {
                tracing::debug!(server = %shared.server, error = %e, "resuming the stream failed");
                break;
            }
        };
        match pump(shared, &mut response, &mut parser, Some(id)).await {
            Pumped::Answered | Pumped::Closed => return,
            Pumped::Ended { retry: again, .. } => retry = again.or(retry),
        }
    }
    shared.emit(TransportEvent::Interrupted {
        ids: vec![id],
        error: shared.connection_error("the response stream broke and could not be resumed"),
    });
}

/// The GET stream for messages the server sends outside any request. It ending for good (the
/// server went away, or forgot the session) is how an idle connection notices.
async fn listen(shared: Rc<Shared>) {
    let mut parser = SseParser::new(shared.max_message_bytes);
    let mut retry = None;
    // Refused GETs in a row, and streams in a row that ended without delivering anything.
    let mut failures = 0u32;
    let mut empty = 0u32;
    loop {
        let response = tokio::select! {
            response = get(&shared, parser.last_event_id()) => response,
            _ = shared.closed() => return,
        };
        let mut response = match response {
            Ok(r) if r.status().is_success() && is_sse(&r) => r,
            Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                tracing::debug!(server = %shared.server, "the server offers no GET stream");
                return;
            }
            Ok(r) if r.status() == StatusCode::CONFLICT => {
                tracing::warn!(server = %shared.server, "the server says a GET stream is already open for this session; not opening another");
                return;
            }
            Ok(mut r) => {
                let status = r.status();
                let detail = error_detail(&mut r).await;
                let had_session = shared.session.borrow().is_some();
                if session_gone(had_session, status, &detail) {
                    shared.emit(TransportEvent::Closed(shared.connection_error(format!(
                        "the server no longer knows our session (HTTP {}): {detail}",
                        status.as_u16()
                    ))));
                    return;
                }
                tracing::warn!(server = %shared.server, status = %status, "the GET stream was refused");
                if status.is_client_error() {
                    return;
                }
                failures += 1;
                if failures > MAX_RESUMES
                    || !pause(&shared, shared.resume_backoff.base_delay(failures)).await
                {
                    shared.emit(TransportEvent::Closed(
                        shared.connection_error(format!("the GET stream failed: HTTP {status}")),
                    ));
                    return;
                }
                continue;
            }
            Err(e) => {
                shared.emit(TransportEvent::Closed(
                    shared.connection_error(format!("the GET stream failed: {e}")),
                ));
                return;
            }
        };
        failures = 0;
        match pump(&shared, &mut response, &mut parser, None).await {
            Pumped::Closed => return,
            Pumped::Answered => {}
            Pumped::Ended {
                retry: again,
                events,
            } => {
                retry = again.or(retry);
                empty = if events == 0 { empty + 1 } else { 0 };
            }
        }
        if empty >= MAX_EMPTY_STREAMS {
            tracing::warn!(server = %shared.server, "the server keeps ending the GET stream without sending anything; not reopening it");
            return;
        }
        // Streams that deliver nothing back off like failures, so that a server that closes
        // them at once cannot make us spin.
        let delay = retry
            .unwrap_or_else(|| shared.resume_backoff.initial())
            .max(shared.resume_backoff.base_delay(empty));
        if !pause(&shared, delay).await {
            return;
        }
    }
}
