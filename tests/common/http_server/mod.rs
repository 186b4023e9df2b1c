//! An in-process MCP Streamable HTTP server on actix-web, with fault switches, for the HTTP
//! transport's integration tests. It speaks the session era (spec revisions 2025-03-26 ..
//! 2025-11-25) and the stateless 2026-07-28 revision: dual-era by default, one era only when
//! told ([`Era`]; [`TestHttpServer::start_with`], or [`Faults::era`] at run time).
//!
//! The server listens on `127.0.0.1` (port 0 unless restarted with [`TestHttpServer::start_on`])
//! with one actix-web worker, which runs on its own thread and runtime; all state is behind std
//! mutexes that are never held across an `.await`. The endpoint is `/mcp`. Each POST is
//! classified (`era`): a modern one carries `MCP-Protocol-Version: 2026-07-28` or a `_meta`
//! protocol version. In the session (legacy) era:
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
//! In the modern era there are no sessions, no GET stream and no DELETE (`405`): every request
//! is a POST that must follow the header rules (`headers`: `MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-*`, the `_meta` keys) and is answered by the modern service
//! (`modern`): `server/discover`, the lists and calls with `resultType`, `tools/call` streams
//! without event ids (a cut stream loses the request), `subscriptions/listen` streams (`listen`)
//! in place of the GET stream, multi round-trip input for `confirm` (`mrtr`), and the Tasks
//! extension's `job` with `tasks/get` and `tasks/cancel` (`tasks`).
//!
//! Tools: `echo {text}`, `slow {seconds, steps}` (one progress notification per step when the
//! call carries `_meta.progressToken`, then "done"), `counter {}` (increments a per-server
//! counter and answers its value) and `notify_resource {uri}` (sends
//! `notifications/resources/updated` on the caller's session's standalone stream if `uri` is
//! subscribed there; called the modern way, on every listen stream subscribed to `uri`). The
//! modern era also has `echo_region`, `confirm` and the tools with invalid header annotations
//! (`modern_tools`).
//!
//! Event ids are `<streamId>-<seq>`, unique per session. Every event of a session's stream is
//! stored, so a client that lost a stream can resume it; a running tool keeps producing events
//! whether or not a client is attached. Fault switches ([`Faults`]) change the behaviour at run
//! time; counters and the requests seen ([`Stats`]) tell tests what the server saw.
//!
//! The parts: here, starting the server and its routes; `state`, sessions and their streams'
//! event logs; `streams`, SSE response bodies and resumption; `handlers`, the endpoint;
//! `tools`, the tools and resources; `faults` and `stats`, the switches and counters tests use;
//! `canned`, the hostile switch that answers anything with any status, headers and body; and
//! for the modern era, `era` (the switch and the classification), `headers` (the header rules),
//! `modern` (the service), `modern_tools`, `listen` and `mrtr`; and `bearer`, the optional OAuth
//! gate in front of `/mcp` (its tokens checked with the in-tree authorization server).
#![allow(dead_code)]

mod bearer;
mod canned;
mod era;
mod faults;
mod handlers;
mod headers;
mod listen;
mod modern;
mod modern_tools;
mod mrtr;
mod state;
mod stats;
mod streams;
mod tasks;
mod tools;

use std::sync::Arc;

use actix_web::dev::{ServerHandle, Service as _};
use actix_web::{web, App, HttpServer};

#[allow(unused_imports)] // Only the soak protects the server with OAuth.
pub use bearer::Bearer;
#[allow(unused_imports)] // Not every test binary uses the hostile switches.
pub use canned::{Body, Canned, Target};
#[allow(unused_imports)] // Not every test binary speaks the modern era.
pub use era::{Era, MODERN_VERSION};
pub use faults::Faults;
use handlers::{delete, get, post};
#[allow(unused_imports)]
pub use modern_tools::INVALID_HEADER_TOOLS;
#[allow(unused_imports)]
pub use mrtr::{Round, RoundAnswer};
use state::{lock, Shared};
#[allow(unused_imports)]
pub use stats::{Seen, Stats};

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
    /// Session era only ([`Era::Legacy`]), as the tests of sessions, resumption and the GET
    /// stream need; [`TestHttpServer::start_with`] picks another era.
    pub async fn start() -> TestHttpServer {
        Self::start_on_with(0, Era::Legacy).await
    }

    /// Starts on 127.0.0.1:0 speaking `era` from its first request.
    pub async fn start_with(era: Era) -> TestHttpServer {
        Self::start_on_with(0, era).await
    }

    /// Starts on a given port (to restart "the same server" after stop()). Session era only.
    pub async fn start_on(port: u16) -> TestHttpServer {
        Self::start_on_with(port, Era::Legacy).await
    }

    /// Starts on a given port speaking `era` from its first request (to restart "the same
    /// server" upgraded, or downgraded).
    pub async fn start_on_with(port: u16, era: Era) -> TestHttpServer {
        let shared = Arc::new(Shared::new(era));
        let data = web::Data::from(shared.clone());
        let accepted = shared.clone();
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
                .route(bearer::METADATA_PATH, web::get().to(bearer::metadata))
        })
        .on_connect(move |connection, _| {
            accepted
                .connections
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // As Node, Python's asyncio and Go servers do. Without it an SSE answer written
            // in two pieces (the priming event, then the answer) waits on a reused connection
            // for the client's delayed ACK of the first: ~40 ms a call.
            if let Some(tcp) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() {
                let _ = tcp.set_nodelay(true);
            }
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

    /// Stops listening and drops all connections, sessions and listens (graceful=false:
    /// immediate).
    pub async fn stop(self) {
        self.handle.stop(false).await;
        lock(&self.shared.sessions).clear();
        listen::end_all(&self.shared, true);
    }
}

impl Drop for TestHttpServer {
    /// A server the test forgot to stop stops too (without waiting for it).
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}
