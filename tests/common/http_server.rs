//! An in-process MCP Streamable HTTP server (spec revisions 2025-03-26 .. 2025-11-25) on
//! actix-web, with fault switches, for the HTTP transport's integration tests.
//!
//! The server listens on `127.0.0.1` (port 0 unless restarted with [`TestHttpServer::start_on`])
//! with one actix-web worker, which runs on its own thread and runtime; all state is behind std
//! mutexes that are never held across an `.await`. The endpoint is `/mcp`:
//!
//! - `POST`: one JSON-RPC message. `initialize` creates a session (`Mcp-Session-Id` header);
//!   everything else needs a live session. Notifications and responses get `202 Accepted`;
//!   requests are answered with `application/json`, except `tools/call`, which by default is
//!   answered with an SSE stream: `retry:` (if set), a priming event (if on), progress
//!   notifications, then the response, after which the stream ends.
//! - `GET`: the session's standalone SSE stream (server-initiated messages, one at a time), or,
//!   with `Last-Event-ID`, the resumption of the stream that event belongs to.
//! - `DELETE`: ends the session.
//!
//! Tools: `echo {text}`, `slow {seconds, steps}` (one progress notification per step when the
//! call carries `_meta.progressToken`, then "done"), `counter {}` (increments a per-server
//! counter and answers its value) and `notify_resource {uri}` (sends
//! `notifications/resources/updated` on the standalone stream if `uri` is subscribed).
//!
//! Event ids are `<streamId>-<seq>`, unique per session. Every event is stored with its stream,
//! so a client that lost a stream can resume it; a running tool keeps producing events whether
//! or not a client is attached. Fault switches ([`Faults`]) change the behaviour at run time;
//! counters ([`Stats`]) tell tests what the server saw.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::dev::{ServerHandle, Service as _};
use actix_web::http::{header, StatusCode};
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use bytes::Bytes;
use futures_util::Stream;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

/// Protocol versions the server agrees to; anything else is answered with the first.
const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const SESSION_HEADER: &str = "mcp-session-id";
const TOOLS: [&str; 4] = ["echo", "slow", "counter", "notify_resource"];

/// How requests with an unknown session id are answered after [`Faults::forget_sessions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionGone {
    /// `404 Not Found`, as the spec says.
    NotFound,
    /// `400 Bad Request` with a JSON-RPC error, as the official TypeScript server answers.
    BadRequest,
}

/// How `GET /mcp` is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetMode {
    Allow,
    MethodNotAllowed,
    Conflict,
}

/// A running test server; [`TestHttpServer::stop`] ends it.
pub struct TestHttpServer {
    port: u16,
    handle: ServerHandle,
    shared: Arc<Shared>,
}

impl TestHttpServer {
    /// Starts on 127.0.0.1:0 (one actix-web worker), returns once it accepts connections.
    pub async fn start() -> TestHttpServer {
        Self::start_on(0).await
    }

    /// Starts on a given port (to restart "the same server" after stop()).
    pub async fn start_on(port: u16) -> TestHttpServer {
        let shared = Arc::new(Shared::new());
        let data = web::Data::from(shared.clone());
        let server = HttpServer::new(move || {
            let seen = data.clone();
            App::new()
                .app_data(data.clone())
                .wrap_fn(move |req, service| {
                    seen.record(req.request());
                    service.call(req)
                })
                .service(
                    web::resource("/mcp")
                        .route(web::post().to(post))
                        .route(web::get().to(get))
                        .route(web::delete().to(delete)),
                )
        })
        .workers(1)
        .disable_signals()
        // Notice at once when a client goes away, so its stream counts as closed.
        .h1_allow_half_closed(false)
        .shutdown_timeout(0)
        .bind(("127.0.0.1", port))
        .unwrap_or_else(|e| panic!("test http server: cannot bind 127.0.0.1:{port}: {e}"));
        // The listener is bound (and listening) now: connections wait in its backlog until the
        // accept loop, started by `run`, takes them.
        let port = server.addrs().first().map_or(port, |addr| addr.port());
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        TestHttpServer {
            port,
            handle,
            shared,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:{port}/mcp`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub fn faults(&self) -> Faults {
        Faults(self.shared.clone())
    }

    pub fn stats(&self) -> Stats {
        Stats(self.shared.clone())
    }

    /// Stops listening and drops all connections and sessions (graceful=false: immediate).
    pub async fn stop(self) {
        self.handle.stop(false).await;
        lock(&self.shared.sessions).clear();
    }
}

impl Drop for TestHttpServer {
    /// A server the test forgot to stop stops too (without waiting for it).
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}

/// Switches that change the server's behaviour at run time; clones share the server.
#[derive(Clone)]
pub struct Faults(Arc<Shared>);

impl Faults {
    /// Drops all sessions now (their open streams end); later requests carrying an unknown
    /// session id are answered as `answer` says.
    pub fn forget_sessions(&self, answer: SessionGone) {
        lock(&self.0.faults).session_gone = answer;
        lock(&self.0.sessions).clear();
    }

    /// Makes the next POST answered with SSE end abruptly after `events` data events (priming
    /// events don't count), never carrying the final response; undelivered events stay stored
    /// for a resumption. Resets to `None` once used.
    pub fn drop_sse_after(&self, events: Option<usize>) {
        lock(&self.0.faults).drop_sse_after = events;
    }

    /// Sends `retry: <ms>` at the start of every SSE stream (POST and GET).
    pub fn retry_ms(&self, ms: Option<u64>) {
        lock(&self.0.faults).retry_ms = ms;
    }

    /// Starts every new SSE stream with a priming event `id: <id>\ndata: \n\n` (default on).
    pub fn priming(&self, on: bool) {
        lock(&self.0.faults).priming = on;
    }

    /// Sends `: keep-alive` comments on open SSE streams after this much silence.
    pub fn keepalive_ms(&self, ms: Option<u64>) {
        lock(&self.0.faults).keepalive_ms = ms;
    }

    /// Delays every POST response by `ms` (the request's work is done first).
    pub fn delay_ms(&self, ms: u64) {
        lock(&self.0.faults).delay_ms = ms;
    }

    /// Answers every request with this status and a short text body (`None`: normal service).
    pub fn status_override(&self, status: Option<u16>) {
        lock(&self.0.faults).status_override = status;
    }

    /// Answers `tools/call` with `application/json` too (progress notifications are dropped).
    pub fn json_responses(&self, on: bool) {
        lock(&self.0.faults).json_responses = on;
    }

    pub fn get_stream(&self, mode: GetMode) {
        lock(&self.0.faults).get_mode = mode;
    }
}

/// What the server saw; clones share the server.
#[derive(Clone)]
pub struct Stats(Arc<Shared>);

impl Stats {
    /// All HTTP requests received (any method, any path).
    pub fn requests(&self) -> usize {
        lock(&self.0.counters).requests
    }

    /// POSTed JSON-RPC requests/notifications by JSON-RPC method (counted even when a fault
    /// answers the request).
    pub fn posts(&self, method: &str) -> usize {
        lock(&self.0.counters)
            .posts
            .get(method)
            .copied()
            .unwrap_or(0)
    }

    /// All GETs on `/mcp`, resumptions included.
    pub fn gets(&self) -> usize {
        lock(&self.0.counters).gets
    }

    /// GETs that carried `Last-Event-ID`.
    pub fn resumed_gets(&self) -> usize {
        lock(&self.0.counters).resumed_gets
    }

    pub fn deletes(&self) -> usize {
        lock(&self.0.counters).deletes
    }

    /// `tools/call` executions by tool name (counted when executed).
    pub fn tool_calls(&self, tool: &str) -> usize {
        lock(&self.0.counters)
            .tool_calls
            .get(tool)
            .copied()
            .unwrap_or(0)
    }

    /// The headers of the last request, names in lowercase.
    pub fn last_headers(&self) -> Vec<(String, String)> {
        lock(&self.0.counters).last_headers.clone()
    }

    /// Live sessions.
    pub fn sessions(&self) -> usize {
        lock(&self.0.sessions).len()
    }
}

// ---- shared state ----

struct FaultState {
    drop_sse_after: Option<usize>,
    retry_ms: Option<u64>,
    priming: bool,
    keepalive_ms: Option<u64>,
    delay_ms: u64,
    status_override: Option<u16>,
    json_responses: bool,
    get_mode: GetMode,
    session_gone: SessionGone,
}

#[derive(Default)]
struct Counters {
    requests: usize,
    posts: HashMap<String, usize>,
    gets: usize,
    resumed_gets: usize,
    deletes: usize,
    tool_calls: HashMap<String, usize>,
    last_headers: Vec<(String, String)>,
}

struct Shared {
    faults: Mutex<FaultState>,
    counters: Mutex<Counters>,
    sessions: Mutex<HashMap<String, Session>>,
    /// The `counter` tool's value.
    counter: AtomicU64,
    /// Makes session ids unique within the server.
    next_session: AtomicU64,
}

#[derive(Default)]
struct Session {
    next_stream: u64,
    streams: HashMap<u64, EventLog>,
    /// The stream opened by the last GET without `Last-Event-ID`.
    standalone: Option<u64>,
    subscriptions: HashSet<String>,
}

/// One SSE stream's events, kept for replay, and the client attached to it, if any.
#[derive(Default)]
struct EventLog {
    next_seq: u64,
    /// `(seq, frame)` of the data events (priming events are not replayed).
    events: Vec<(u64, Bytes)>,
    /// The final response is stored: a resumption ends after the replay.
    done: bool,
    live: Option<Live>,
}

/// A client attached to a stream: the sender feeding its response body.
struct Live {
    tx: mpsc::UnboundedSender<Chunk>,
    /// Data events still to send before dropping the stream (`drop_sse_after`).
    budget: Option<usize>,
}

enum Chunk {
    Data(Bytes),
    /// End the body abruptly (the connection is closed without the last chunk).
    Abort,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn new() -> Self {
        Shared {
            faults: Mutex::new(FaultState {
                drop_sse_after: None,
                retry_ms: None,
                priming: true,
                keepalive_ms: None,
                delay_ms: 0,
                status_override: None,
                json_responses: false,
                get_mode: GetMode::Allow,
                session_gone: SessionGone::NotFound,
            }),
            counters: Mutex::default(),
            sessions: Mutex::default(),
            counter: AtomicU64::new(0),
            next_session: AtomicU64::new(1),
        }
    }

    fn record(&self, req: &HttpRequest) {
        let headers = req
            .headers()
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_ascii_lowercase(), value)
            })
            .collect();
        let mut counters = lock(&self.counters);
        counters.requests += 1;
        counters.last_headers = headers;
    }

    fn new_session(&self) -> String {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let id = format!("{nanos:x}-{n:04x}");
        lock(&self.sessions).insert(id.clone(), Session::default());
        id
    }

    /// Stores `message` as the next event of a stream and delivers it if a client is attached.
    /// Does nothing if the session or stream is gone.
    fn emit(&self, session: &str, stream: u64, message: &Value, last: bool) {
        let mut sessions = lock(&self.sessions);
        let log = sessions
            .get_mut(session)
            .and_then(|s| s.streams.get_mut(&stream));
        if let Some(log) = log {
            log.push(stream, message, last);
        }
    }
}

impl EventLog {
    fn next_id(&mut self, stream: u64) -> (u64, String) {
        let seq = self.next_seq;
        self.next_seq += 1;
        (seq, format!("{stream}-{seq}"))
    }

    fn attached(&self) -> bool {
        self.live.as_ref().is_some_and(|live| !live.tx.is_closed())
    }

    fn push(&mut self, stream: u64, message: &Value, last: bool) {
        let (seq, id) = self.next_id(stream);
        let frame = Bytes::from(format!("id: {id}\ndata: {message}\n\n"));
        self.events.push((seq, frame.clone()));
        self.done |= last;
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let keep = match live.budget.as_mut() {
            // A stream set to drop never carries the final response.
            Some(_) if last => false,
            Some(left) => {
                *left -= 1;
                live.tx.send(Chunk::Data(frame)).is_ok() && *left > 0
            }
            None => live.tx.send(Chunk::Data(frame)).is_ok() && !last,
        };
        if !keep {
            if let Some(live) = self.live.take() {
                if live.budget.is_some() {
                    let _ = live.tx.send(Chunk::Abort);
                }
            }
        }
    }
}

// ---- HTTP helpers ----

fn header_value(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_owned())
}

fn accepts(req: &HttpRequest, types: &[&str]) -> bool {
    let accept: Vec<String> = req
        .headers()
        .get_all(header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase)
        .collect();
    let accept = accept.join(",");
    types.iter().all(|t| accept.contains(t))
}

fn is_json_content(req: &HttpRequest) -> bool {
    header_value(req, "content-type").is_some_and(|v| {
        let v = v.to_ascii_lowercase();
        v == "application/json" || v.starts_with("application/json;")
    })
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn reply(id: &Value, result: Result<Value, (i64, String)>) -> Value {
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => rpc_error(id.clone(), code, &message),
    }
}

/// An HTTP error answer with a JSON-RPC error body (`id: null`).
fn http_error(status: StatusCode, code: i64, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(rpc_error(Value::Null, code, message))
}

/// The `status_override` answer, if that switch is on.
fn overridden(state: &Shared) -> Option<HttpResponse> {
    let status = lock(&state.faults).status_override?;
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(code);
    if code == StatusCode::UNAUTHORIZED {
        response.insert_header((header::WWW_AUTHENTICATE, "Bearer error=\"invalid_token\""));
    }
    Some(
        response
            .content_type("text/plain")
            .body(format!("status override: {status}")),
    )
}

/// The live session named by the request's `Mcp-Session-Id`, or the error answer.
fn check_session(state: &Shared, req: &HttpRequest) -> Result<String, Box<HttpResponse>> {
    let Some(id) = header_value(req, SESSION_HEADER) else {
        return Err(Box::new(http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: Mcp-Session-Id header is required",
        )));
    };
    if lock(&state.sessions).contains_key(&id) {
        return Ok(id);
    }
    Err(Box::new(match lock(&state.faults).session_gone {
        SessionGone::NotFound => http_error(StatusCode::NOT_FOUND, -32001, "Session not found"),
        SessionGone::BadRequest => http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: No valid session ID provided",
        ),
    }))
}

// ---- SSE streams ----

/// Creates a stream in `session` and attaches a new client to it. `None` if the session is gone.
fn open_stream(
    state: &Shared,
    session: &str,
    standalone: bool,
    budget: Option<usize>,
) -> Option<(u64, mpsc::UnboundedReceiver<Chunk>)> {
    let (retry, priming) = {
        let faults = lock(&state.faults);
        (faults.retry_ms, faults.priming)
    };
    let (tx, rx) = mpsc::unbounded_channel();
    if let Some(ms) = retry {
        let _ = tx.send(Chunk::Data(Bytes::from(format!("retry: {ms}\n\n"))));
    }
    let mut sessions = lock(&state.sessions);
    let session = sessions.get_mut(session)?;
    let stream = session.next_stream;
    session.next_stream += 1;
    let mut log = EventLog::default();
    if priming {
        let (_, id) = log.next_id(stream);
        let _ = tx.send(Chunk::Data(Bytes::from(format!("id: {id}\ndata: \n\n"))));
    }
    if budget == Some(0) {
        let _ = tx.send(Chunk::Abort);
    } else {
        log.live = Some(Live { tx, budget });
    }
    session.streams.insert(stream, log);
    if standalone {
        session.standalone = Some(stream);
    }
    Some((stream, rx))
}

/// Replays the events after `last_event_id` of its stream, then keeps the client attached
/// until the stream's final response (POST streams) or for good (standalone streams).
fn resume(state: &Arc<Shared>, session: &str, last_event_id: &str) -> HttpResponse {
    let parsed = last_event_id
        .split_once('-')
        .and_then(|(stream, seq)| Some((stream.parse::<u64>().ok()?, seq.parse::<u64>().ok()?)));
    let unknown = || {
        http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: unknown Last-Event-ID",
        )
    };
    let Some((stream, seq)) = parsed else {
        return unknown();
    };
    let retry = lock(&state.faults).retry_ms;
    let (tx, rx) = mpsc::unbounded_channel();
    if let Some(ms) = retry {
        let _ = tx.send(Chunk::Data(Bytes::from(format!("retry: {ms}\n\n"))));
    }
    let mut sessions = lock(&state.sessions);
    let Some(log) = sessions
        .get_mut(session)
        .and_then(|s| s.streams.get_mut(&stream))
    else {
        return unknown();
    };
    for (_, frame) in log.events.iter().filter(|(s, _)| *s > seq) {
        let _ = tx.send(Chunk::Data(frame.clone()));
    }
    if !log.done {
        // Replaces (and so ends) any earlier attachment.
        log.live = Some(Live { tx, budget: None });
    }
    sse_response(state, rx)
}

fn sse_response(state: &Arc<Shared>, rx: mpsc::UnboundedReceiver<Chunk>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .streaming(sse_body(state.clone(), rx))
}

/// The body of an SSE response: the chunks sent to `rx`, with keep-alive comments while quiet,
/// until every sender is gone (a clean end) or an `Abort` comes (an abrupt end).
fn sse_body(
    state: Arc<Shared>,
    rx: mpsc::UnboundedReceiver<Chunk>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::unfold(Some(rx), move |rx| {
        let state = state.clone();
        async move {
            let mut rx = rx?;
            let chunk = loop {
                // Read each time, so the switch applies to streams already open.
                let keepalive = lock(&state.faults).keepalive_ms.map(Duration::from_millis);
                let wait = keepalive.unwrap_or(Duration::from_millis(100));
                match tokio::time::timeout(wait.max(Duration::from_millis(1)), rx.recv()).await {
                    Ok(chunk) => break chunk,
                    Err(_) if keepalive.is_some() => {
                        return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), Some(rx)));
                    }
                    Err(_) => {}
                }
            };
            match chunk {
                Some(Chunk::Data(bytes)) => Some((Ok(bytes), Some(rx))),
                Some(Chunk::Abort) => {
                    // Let the dispatcher flush what was sent before failing the body, which
                    // closes the connection without the terminating chunk.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let error =
                        std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "dropped");
                    Some((Err(error), None))
                }
                None => None,
            }
        }
    })
}

// ---- handlers ----

async fn post(req: HttpRequest, body: Bytes, state: web::Data<Shared>) -> HttpResponse {
    let delay = lock(&state.faults).delay_ms;
    let response = handle_post(&req, &body, state.into_inner()).await;
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    response
}

async fn handle_post(req: &HttpRequest, body: &[u8], state: Arc<Shared>) -> HttpResponse {
    let message = serde_json::from_slice::<Value>(body);
    if let Ok(Some(method)) = message
        .as_ref()
        .map(|m| m.get("method").and_then(Value::as_str))
    {
        *lock(&state.counters)
            .posts
            .entry(method.to_owned())
            .or_default() += 1;
    }
    if let Some(response) = overridden(&state) {
        return response;
    }
    if !accepts(req, &["application/json", "text/event-stream"]) {
        return http_error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        );
    }
    if !is_json_content(req) {
        return http_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32000,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    let message = match message {
        Ok(Value::Object(message)) => message,
        Ok(Value::Array(_)) => {
            return http_error(StatusCode::BAD_REQUEST, -32600, "Batches are not supported")
        }
        Ok(_) => return http_error(StatusCode::BAD_REQUEST, -32600, "Invalid Request"),
        Err(_) => return http_error(StatusCode::BAD_REQUEST, -32700, "Parse error"),
    };
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").filter(|id| !id.is_null()).cloned();
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    if let (Some("initialize"), Some(id)) = (method, &id) {
        // Always a new session, whatever session id the request carries.
        return initialize(&state, id, &params);
    }
    let session = match check_session(&state, req) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    match (method, id) {
        (Some(method), Some(id)) => request(state, session, id, method, params).await,
        (Some(_), None) => HttpResponse::Accepted().finish(),
        (None, Some(_)) if message.contains_key("result") || message.contains_key("error") => {
            HttpResponse::Accepted().finish()
        }
        _ => http_error(StatusCode::BAD_REQUEST, -32600, "Invalid Request"),
    }
}

fn initialize(state: &Shared, id: &Value, params: &Value) -> HttpResponse {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .filter(|v| PROTOCOL_VERSIONS.contains(v))
        .unwrap_or(PROTOCOL_VERSIONS[0]);
    let result = json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": true},
            "resources": {"subscribe": true},
            "logging": {},
        },
        "serverInfo": {"name": "test-http-server", "version": "1.0.0"},
    });
    let session = state.new_session();
    HttpResponse::Ok()
        .insert_header((SESSION_HEADER, session))
        .json(reply(id, Ok(result)))
}

async fn request(
    state: Arc<Shared>,
    session: String,
    id: Value,
    method: &str,
    params: Value,
) -> HttpResponse {
    let result = match method {
        "ping" => Ok(json!({})),
        "tools/list" => Ok(tools_list()),
        "tools/call" => return tools_call(state, session, id, &params).await,
        "resources/subscribe" | "resources/unsubscribe" => {
            subscribe(&state, &session, &params, method == "resources/subscribe")
        }
        "resources/read" => read_resource(&params),
        _ => Err((-32601, format!("Method not found: {method}"))),
    };
    HttpResponse::Ok().json(reply(&id, result))
}

async fn get(req: HttpRequest, state: web::Data<Shared>) -> HttpResponse {
    let state = state.into_inner();
    let last_event_id = header_value(&req, "last-event-id");
    {
        let mut counters = lock(&state.counters);
        counters.gets += 1;
        counters.resumed_gets += usize::from(last_event_id.is_some());
    }
    if let Some(response) = overridden(&state) {
        return response;
    }
    let mode = lock(&state.faults).get_mode;
    if mode == GetMode::MethodNotAllowed {
        return HttpResponse::MethodNotAllowed()
            .insert_header((header::ALLOW, "POST, DELETE"))
            .finish();
    }
    if !accepts(&req, &["text/event-stream"]) {
        return http_error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: Client must accept text/event-stream",
        );
    }
    let session = match check_session(&state, &req) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    if let Some(last_event_id) = last_event_id {
        return resume(&state, &session, &last_event_id);
    }
    let conflict = || {
        http_error(
            StatusCode::CONFLICT,
            -32000,
            "Conflict: Only one SSE stream is allowed per session",
        )
    };
    if mode == GetMode::Conflict {
        return conflict();
    }
    let open = lock(&state.sessions).get(&session).is_some_and(|s| {
        s.standalone
            .and_then(|stream| s.streams.get(&stream))
            .is_some_and(EventLog::attached)
    });
    if open {
        return conflict();
    }
    match open_stream(&state, &session, true, None) {
        Some((_, rx)) => sse_response(&state, rx),
        None => http_error(StatusCode::NOT_FOUND, -32001, "Session not found"),
    }
}

async fn delete(req: HttpRequest, state: web::Data<Shared>) -> HttpResponse {
    lock(&state.counters).deletes += 1;
    if let Some(response) = overridden(&state) {
        return response;
    }
    match check_session(&state, &req) {
        Ok(session) => {
            lock(&state.sessions).remove(&session);
            HttpResponse::Ok().finish()
        }
        Err(response) => *response,
    }
}

// ---- tools and resources ----

fn tools_list() -> Value {
    let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required});
    json!({"tools": [
        {
            "name": "echo",
            "description": "Answers its text.",
            "inputSchema": object(json!({"text": {"type": "string"}}), &["text"]),
            "annotations": {"readOnlyHint": true},
        },
        {
            "name": "slow",
            "description": "Takes `seconds`, sending a progress notification after each of `steps` steps.",
            "inputSchema": object(
                json!({"seconds": {"type": "number"}, "steps": {"type": "integer"}}),
                &[],
            ),
            "annotations": {"readOnlyHint": true},
        },
        {
            "name": "counter",
            "description": "Increments the server's counter and answers its value.",
            "inputSchema": object(json!({}), &[]),
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false},
        },
        {
            "name": "notify_resource",
            "description": "Sends notifications/resources/updated for `uri` if it is subscribed.",
            "inputSchema": object(json!({"uri": {"type": "string"}}), &["uri"]),
            "annotations": {"readOnlyHint": true},
        },
    ]})
}

/// `tools/call`: answered with JSON or with an SSE stream fed by the running tool.
async fn tools_call(
    state: Arc<Shared>,
    session: String,
    id: Value,
    params: &Value,
) -> HttpResponse {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !TOOLS.contains(&name.as_str()) {
        let error = Err((-32602, format!("Unknown tool: {name}")));
        return HttpResponse::Ok().json(reply(&id, error));
    }
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let token = params.pointer("/_meta/progressToken").cloned();
    let (json_mode, budget) = {
        let mut faults = lock(&state.faults);
        if faults.json_responses {
            (true, None)
        } else {
            (false, faults.drop_sse_after.take())
        }
    };
    // The tool runs in its own task, so it finishes even if the client goes away.
    if json_mode {
        let (tx, rx) = oneshot::channel();
        let task_state = state.clone();
        actix_web::rt::spawn(async move {
            let _ = tx.send(run_tool(&task_state, &session, &name, &args, None).await);
        });
        let result = rx
            .await
            .unwrap_or_else(|_| Err((-32603, "tool task failed".to_owned())));
        return HttpResponse::Ok().json(reply(&id, result));
    }
    let Some((stream, rx)) = open_stream(&state, &session, false, budget) else {
        return http_error(StatusCode::NOT_FOUND, -32001, "Session not found");
    };
    let task_state = state.clone();
    actix_web::rt::spawn(async move {
        let progress = token.map(|token| (token, stream));
        let result = run_tool(&task_state, &session, &name, &args, progress).await;
        task_state.emit(&session, stream, &reply(&id, result), true);
    });
    sse_response(&state, rx)
}

/// Executes a tool. `progress`: the progress token and the stream to send notifications on.
async fn run_tool(
    state: &Shared,
    session: &str,
    name: &str,
    args: &Value,
    progress: Option<(Value, u64)>,
) -> Result<Value, (i64, String)> {
    *lock(&state.counters)
        .tool_calls
        .entry(name.to_owned())
        .or_default() += 1;
    let text = match name {
        "echo" => args
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        "counter" => (state.counter.fetch_add(1, Ordering::SeqCst) + 1).to_string(),
        "notify_resource" => {
            let uri = args.get("uri").and_then(Value::as_str).unwrap_or_default();
            notify_resource(state, session, uri);
            "ok".to_owned()
        }
        "slow" => {
            slow(state, session, args, progress).await;
            "done".to_owned()
        }
        _ => return Err((-32602, format!("Unknown tool: {name}"))),
    };
    Ok(json!({"content": [{"type": "text", "text": text}], "isError": false}))
}

/// The `slow` tool: `seconds` (default 1) split into `steps` (default 1) sleeps, each followed
/// by a progress notification when the call asked for progress.
async fn slow(state: &Shared, session: &str, args: &Value, progress: Option<(Value, u64)>) {
    let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(1.0);
    let seconds = if seconds.is_finite() {
        seconds.clamp(0.0, 3600.0)
    } else {
        0.0
    };
    let steps = args
        .get("steps")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .min(10_000);
    if steps == 0 {
        tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        return;
    }
    let step = Duration::from_secs_f64(seconds / steps as f64);
    for done in 1..=steps {
        tokio::time::sleep(step).await;
        if let Some((token, stream)) = &progress {
            let notification = json!({
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {
                    "progressToken": token,
                    "progress": done,
                    "total": steps,
                    "message": format!("step {done}/{steps}"),
                },
            });
            state.emit(session, *stream, &notification, false);
        }
    }
}

/// Sends `notifications/resources/updated` on the session's standalone stream, if `uri` is
/// subscribed and a client is attached to that stream (otherwise the notification is lost).
fn notify_resource(state: &Shared, session: &str, uri: &str) {
    let mut sessions = lock(&state.sessions);
    let Some(session) = sessions.get_mut(session) else {
        return;
    };
    if !session.subscriptions.contains(uri) {
        return;
    }
    let Some(stream) = session.standalone else {
        return;
    };
    if let Some(log) = session.streams.get_mut(&stream) {
        if log.attached() {
            let notification = json!({
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": uri},
            });
            log.push(stream, &notification, false);
        }
    }
}

fn subscribe(
    state: &Shared,
    session: &str,
    params: &Value,
    on: bool,
) -> Result<Value, (i64, String)> {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return Err((-32602, "missing uri".to_owned()));
    };
    if let Some(session) = lock(&state.sessions).get_mut(session) {
        if on {
            session.subscriptions.insert(uri.to_owned());
        } else {
            session.subscriptions.remove(uri);
        }
    }
    Ok(json!({}))
}

fn read_resource(params: &Value) -> Result<Value, (i64, String)> {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return Err((-32602, "missing uri".to_owned()));
    };
    Ok(json!({"contents": [
        {"uri": uri, "mimeType": "text/plain", "text": format!("contents of {uri}")},
    ]}))
}
