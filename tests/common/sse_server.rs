//! An in-process MCP server on the legacy HTTP+SSE transport of revision 2024-11-05, on
//! actix-web, with a few switches, for the SSE transport's integration tests.
//!
//! `GET /sse` opens a session's SSE stream: its first event is `endpoint`, whose data is
//! `/messages?sessionId=<id>` (relative, as the official SDKs send it) unless a test sets
//! another ([`SseFaults::endpoint`]). `POST /messages?sessionId=<id>` takes one JSON-RPC
//! message and answers `202 Accepted` (`404` for a session it does not know); the answer to a
//! request comes as an `event: message` on the session's stream. Any other method on `/sse` is
//! answered with [`SseFaults::refuse_post_with`]'s status (404 with an HTML body by default, as
//! Express answers "Cannot POST /sse"), which is what a Streamable HTTP client's first POST
//! gets there.
//!
//! Tools: `echo {text}`; `log {text}` (sends `notifications/message` with `text` first, then
//! answers); `hang {}` (the first call is never answered; later calls answer "done"). A switch
//! cuts every stream when a given tool is called ([`SseFaults::cut_on_call`]), so a call is
//! cut mid-way without any waiting in the test. The server listens on 127.0.0.1 with one
//! worker; [`SseTestServer::start_on`] restarts it on the same port.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::mpsc;

const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

#[derive(Default)]
struct State {
    /// Each session's stream: dropping its sender ends it.
    sessions: Mutex<HashMap<String, mpsc::UnboundedSender<Bytes>>>,
    next_session: AtomicU64,
    gets: AtomicUsize,
    /// POSTs to `/sse` (refused), and the methods POSTed to `/messages`.
    refused_posts: AtomicUsize,
    methods: Mutex<Vec<String>>,
    tool_calls: Mutex<HashMap<String, u64>>,
    endpoint: Mutex<Option<String>>,
    refuse_status: Mutex<u16>,
    cut_on_call: Mutex<Option<String>>,
    /// TCP connections accepted.
    connections: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running legacy SSE server.
pub struct SseTestServer {
    port: u16,
    handle: ServerHandle,
    state: Arc<State>,
}

/// The server's switches.
pub struct SseFaults(Arc<State>);

impl SseFaults {
    /// What the `endpoint` event says (`{id}` is replaced by the session id).
    pub fn endpoint(&self, endpoint: &str) {
        *lock(&self.0.endpoint) = Some(endpoint.to_owned());
    }

    /// The status of a POST (or any other method than GET) to `/sse`.
    pub fn refuse_post_with(&self, status: u16) {
        *lock(&self.0.refuse_status) = status;
    }

    /// The next call of `tool` ends every session's stream instead of being answered.
    pub fn cut_on_call(&self, tool: &str) {
        *lock(&self.0.cut_on_call) = Some(tool.to_owned());
    }

    /// Ends every session's stream now (and forgets the sessions).
    pub fn cut_streams(&self) {
        lock(&self.0.sessions).clear();
    }
}

impl SseTestServer {
    pub async fn start() -> SseTestServer {
        Self::start_on(0).await
    }

    /// Starts on `port` (0: any), to restart "the same server" after [`stop`](Self::stop).
    pub async fn start_on(port: u16) -> SseTestServer {
        let state = Arc::new(State {
            refuse_status: Mutex::new(404),
            ..State::default()
        });
        let data = web::Data::from(state.clone());
        let accepted = state.clone();
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .service(
                    web::resource("/sse")
                        .route(web::get().to(stream))
                        .default_service(web::to(refuse)),
                )
                .route("/messages", web::post().to(message))
        })
        .on_connect(move |_, _| {
            accepted.connections.fetch_add(1, Ordering::SeqCst);
        })
        .workers(1)
        .disable_signals()
        .h1_allow_half_closed(false)
        .shutdown_timeout(0)
        .bind(("127.0.0.1", port))
        .unwrap_or_else(|e| panic!("sse test server: cannot bind 127.0.0.1:{port}: {e}"));
        let port = server.addrs().first().map_or(port, |addr| addr.port());
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        SseTestServer {
            port,
            handle,
            state,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:{port}/sse`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }

    pub fn faults(&self) -> SseFaults {
        SseFaults(self.state.clone())
    }

    /// GETs of the stream so far.
    pub fn gets(&self) -> usize {
        self.state.gets.load(Ordering::SeqCst)
    }

    /// POSTs to `/sse`, refused.
    pub fn refused_posts(&self) -> usize {
        self.state.refused_posts.load(Ordering::SeqCst)
    }

    /// POSTs to `/messages` of `method`.
    pub fn posts(&self, method: &str) -> usize {
        lock(&self.state.methods)
            .iter()
            .filter(|m| *m == method)
            .count()
    }

    /// Every POST to `/messages`.
    /// TCP connections the server accepted.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    pub fn all_posts(&self) -> usize {
        lock(&self.state.methods).len()
    }

    pub fn tool_calls(&self, tool: &str) -> u64 {
        lock(&self.state.tool_calls).get(tool).copied().unwrap_or(0)
    }

    /// Stops listening and ends every stream.
    pub async fn stop(self) {
        self.handle.stop(false).await;
        lock(&self.state.sessions).clear();
    }
}

async fn refuse(state: web::Data<State>) -> HttpResponse {
    state.refused_posts.fetch_add(1, Ordering::SeqCst);
    let status = *lock(&state.refuse_status);
    let status = actix_web::http::StatusCode::from_u16(status)
        .unwrap_or(actix_web::http::StatusCode::NOT_FOUND);
    HttpResponse::build(status)
        .content_type("text/html")
        .body("<!DOCTYPE html><html><body><pre>Cannot POST /sse</pre></body></html>")
}

async fn stream(state: web::Data<State>) -> HttpResponse {
    state.gets.fetch_add(1, Ordering::SeqCst);
    let id = format!("s{}", state.next_session.fetch_add(1, Ordering::SeqCst));
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    let endpoint = lock(&state.endpoint)
        .clone()
        .unwrap_or_else(|| "/messages?sessionId={id}".to_owned())
        .replace("{id}", &id);
    let _ = tx.send(Bytes::from(format!(
        ": hello\n\nevent: endpoint\ndata: {endpoint}\n\n"
    )));
    lock(&state.sessions).insert(id, tx);
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        let chunk = rx.recv().await?;
        Some((Ok::<_, actix_web::Error>(chunk), rx))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .streaming(body)
}

/// Sends `message` on session `id`'s stream.
fn send(state: &State, id: &str, message: &Value) {
    if let Some(tx) = lock(&state.sessions).get(id) {
        let _ = tx.send(Bytes::from(format!("event: message\ndata: {message}\n\n")));
    }
}

async fn message(state: web::Data<State>, req: HttpRequest, body: Bytes) -> HttpResponse {
    let query = req.query_string();
    let id = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("sessionId="))
        .unwrap_or("")
        .to_owned();
    if !lock(&state.sessions).contains_key(&id) {
        return HttpResponse::NotFound().body("Could not find session");
    }
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return HttpResponse::BadRequest().body("Invalid message");
    };
    let method = msg["method"].as_str().unwrap_or("").to_owned();
    lock(&state.methods).push(method.clone());
    let Some(rid) = msg.get("id").cloned().filter(|_| !method.is_empty()) else {
        // A notification or an answer of the client's.
        return HttpResponse::Accepted().body("Accepted");
    };
    let answer = |result: Value| json!({"jsonrpc": "2.0", "id": rid, "result": result});
    match method.as_str() {
        "initialize" => {
            let asked = msg["params"]["protocolVersion"].as_str().unwrap_or("");
            let version = VERSIONS
                .iter()
                .find(|v| **v == asked)
                .unwrap_or(&"2024-11-05");
            send(
                &state,
                &id,
                &answer(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {}, "logging": {}},
                    "serverInfo": {"name": "test-sse-server", "version": "1.0.0"},
                })),
            );
        }
        "ping" => send(&state, &id, &answer(json!({}))),
        "tools/list" => {
            let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
            send(
                &state,
                &id,
                &answer(json!({"tools": [tool("echo"), tool("log"), tool("hang")]})),
            );
        }
        "tools/call" => {
            let name = msg["params"]["name"].as_str().unwrap_or("").to_owned();
            let calls = {
                let mut calls = lock(&state.tool_calls);
                let n = calls.entry(name.clone()).or_default();
                *n += 1;
                *n
            };
            let cut = {
                let mut cut = lock(&state.cut_on_call);
                (cut.as_deref() == Some(name.as_str())).then(|| cut.take())
            };
            if cut.is_some() {
                lock(&state.sessions).clear();
                return HttpResponse::Accepted().body("Accepted");
            }
            let text = msg["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            let content = |t: &str| answer(json!({"content": [{"type": "text", "text": t}]}));
            match name.as_str() {
                "echo" => send(&state, &id, &content(&text)),
                "log" => {
                    let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": text}});
                    send(&state, &id, &log);
                    send(&state, &id, &content("logged"));
                }
                "hang" if calls == 1 => {}
                "hang" => send(&state, &id, &content("done")),
                other => send(
                    &state,
                    &id,
                    &json!({"jsonrpc": "2.0", "id": rid,
                        "error": {"code": -32602, "message": format!("no tool {other}")}}),
                ),
            }
        }
        other => send(
            &state,
            &id,
            &json!({"jsonrpc": "2.0", "id": rid,
                "error": {"code": -32601, "message": format!("no method {other}")}}),
        ),
    }
    HttpResponse::Accepted().body("Accepted")
}
