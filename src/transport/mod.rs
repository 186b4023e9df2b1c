//! What a transport gives the actor: a way to send messages, a stream of what the server sends
//! (ending in exactly one [`TransportEvent::Closed`] that says why), and a handle to stop it.
//!
//! Transports do IO only. They know nothing of calls, retries or states: framing and parsing
//! come from [`crate::protocol`], every decision from [`crate::policy`].

#[cfg(any(feature = "stdio", feature = "http"))]
mod backlog;
#[cfg(feature = "http")]
pub(crate) mod http;
#[cfg(test)]
pub(crate) mod memory;
#[cfg(feature = "stdio")]
mod process_tree;
#[cfg(feature = "stdio")]
pub(crate) mod stdio;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use futures_util::stream::LocalBoxStream;
use tokio::sync::{mpsc, Notify};

use crate::error::Error;
use crate::protocol::jsonrpc::{FrameError, Inbound};
use crate::protocol::response::Reparsed;
use crate::protocol::text::{server_bytes, server_text};

/// One thing that came from the server.
#[derive(Debug)]
// Only HTTP refuses or fails single requests; a stdio-only build never makes those events.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) enum TransportEvent {
    /// A message.
    Message(Inbound),
    /// These requests never reached the server, or it refused them unprocessed (its session
    /// was gone): they may be sent again whatever their retry policy.
    Rejected(Vec<u64>),
    /// This request failed on its own (e.g. HTTP 401); the connection is fine.
    CallFailed {
        /// Our request id.
        id: u64,
        /// What to answer.
        error: Error,
    },
    /// This request did not reach the server whole: the server closed the connection while
    /// it was being written, so it did not run. The connection (the session) may be fine.
    Unwritten {
        /// Our request id.
        id: u64,
        /// What to answer if it happens again.
        error: Error,
    },
    /// The answers to these requests were lost and cannot be recovered, though the connection
    /// still works: the retry rules decide what happens to them.
    Interrupted {
        /// Our request ids.
        ids: Vec<u64>,
        /// Why.
        error: Error,
        /// Its socket closed or was reset before any answer came (rather than an answer that
        /// could not be read, or a 5xx): nothing says whether the server is still there.
        socket: bool,
    },
    /// The connection is gone; nothing follows.
    Closed(Error),
}

/// Lines the transport dropped, shared with the actor for status reports.
#[derive(Debug, Default)]
pub(crate) struct SkipCounters {
    pub non_json: AtomicU64,
    pub oversized: AtomicU64,
}

impl SkipCounters {
    pub fn non_json(&self) -> u64 {
        self.non_json.load(Ordering::Relaxed)
    }
    pub fn oversized(&self) -> u64 {
        self.oversized.load(Ordering::Relaxed)
    }

    /// A stdio line that is not JSON-RPC was skipped (`why`: the parse's error): counted, and
    /// logged with the line, escaped and bounded.
    pub fn skipped_line(&self, server: &str, why: &FrameError, line: &[u8]) {
        self.non_json.fetch_add(1, Ordering::Relaxed);
        crate::telemetry::message_skipped(server, "non_json");
        tracing::warn!(server, error = %server_text(&why.to_string()), line = %server_bytes(line), "skipped a line on stdout that is not JSON-RPC");
    }

    /// The messages of a line that only looked like a response (see
    /// [`RawResult::unless_plain`](crate::protocol::response::RawResult::unless_plain)), to be
    /// routed as what they are: none if it is not JSON-RPC at all, a skip counted and logged as
    /// the reader would have.
    pub fn messages_of(&self, server: &str, reparsed: Reparsed) -> Vec<Inbound> {
        match reparsed.parsed {
            Ok(messages) => messages,
            Err(why) => {
                self.skipped_line(server, &why, &reparsed.line);
                Vec::new()
            }
        }
    }
}

/// Counts the processes a server's actor started that are not gone yet: not reaped, or with
/// descendants still to kill. The processes of failed or abandoned connection attempts are
/// killed in the background, so this is how `Shutdown` knows to wait for them too.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reaping(Arc<ReapingState>);

#[derive(Debug, Default)]
struct ReapingState {
    live: AtomicUsize,
    idle: Notify,
}

/// One process (or one piece of work on it) that is not gone yet; dropping it says it is.
#[derive(Debug)]
#[cfg(feature = "stdio")]
pub(crate) struct ReapGuard(Reaping);

impl Reaping {
    /// Counts one more process until the guard is dropped.
    #[cfg(feature = "stdio")]
    pub fn track(&self) -> ReapGuard {
        self.0.live.fetch_add(1, Ordering::AcqRel);
        ReapGuard(self.clone())
    }

    /// Returns once every tracked process is gone.
    pub async fn idle(&self) {
        loop {
            let notified = self.0.idle.notified();
            tokio::pin!(notified);
            // Registered before the check, so a guard dropped in between still wakes us.
            notified.as_mut().enable();
            if self.0.live.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(feature = "stdio")]
impl Drop for ReapGuard {
    fn drop(&mut self) {
        if self.0 .0.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0 .0.idle.notify_waiters();
        }
    }
}

/// What the actor hands a transport.
#[derive(Debug)]
// Headers and abandoned requests mean something to HTTP only.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) enum Outgoing {
    /// A serialized, newline-terminated message.
    Line(Vec<u8>),
    /// A request of the stateless 2026-07-28 revision, newline-terminated, with the HTTP
    /// headers that go with it (`MCP-Protocol-Version`, `Mcp-Method`, ...). Over HTTP its
    /// answer is read the modern way: no session, errors in the body whatever the status, no
    /// resumption of a broken stream. Over stdio it is just a line.
    Modern {
        /// The message.
        line: Vec<u8>,
        /// Its headers.
        headers: Vec<(String, String)>,
    },
    /// Nobody waits for the answer to this request any more (its call expired): a transport
    /// that holds resources for it (an HTTP request in flight) lets them go.
    Abandon(u64),
}

/// Where the session writes what goes to the server: a connection's outbound side, seen
/// without its IO (the session core holds one behind this trait; the real one is
/// [`Outbound`], the tests' a recorder).
///
/// Writing is a call, not a queued command: a request is serialized straight into the
/// transport's buffer (stdio), with no copy and no allocation of its own.
pub(crate) trait Link {
    /// Queues the message that `write` appends to the buffer it is given (newline included);
    /// false if the connection is already gone.
    fn send_with(&self, write: &mut dyn FnMut(&mut Vec<u8>)) -> bool;

    /// Queues one message (newline-terminated); false if the connection is already gone.
    fn send(&self, line: Vec<u8>) -> bool {
        let mut line = Some(line);
        self.send_with(&mut |buf| {
            if let Some(line) = line.take() {
                if buf.is_empty() {
                    *buf = line;
                } else {
                    buf.extend_from_slice(&line);
                }
            }
        })
    }

    /// Queues the answer to one of the server's requests (newline-terminated); false if it is
    /// not queued: the connection is already gone, or (stdio) too many answers wait for a
    /// server that does not read them, and this one is dropped. Every answer takes this way:
    /// the answers that wait to go out are what bounds a server's request flood (`backlog`).
    fn answer(&self, line: Vec<u8>) -> bool {
        self.send(line)
    }

    /// Queues one request of the modern era with its HTTP headers (a pipe ignores them).
    fn send_modern(&self, line: Vec<u8>, headers: Vec<(String, String)>) -> bool;

    /// Nobody waits for the answer to request `id` any more: a transport that holds resources
    /// for it (an HTTP request in flight) lets them go.
    fn abandon(&self, id: u64);
}

impl Link for Outbound {
    fn send_with(&self, write: &mut dyn FnMut(&mut Vec<u8>)) -> bool {
        Outbound::send_with(self, write)
    }

    fn send(&self, line: Vec<u8>) -> bool {
        Outbound::send(self, line)
    }

    fn answer(&self, line: Vec<u8>) -> bool {
        Outbound::answer(self, line)
    }

    fn send_modern(&self, line: Vec<u8>, headers: Vec<(String, String)>) -> bool {
        Outbound::send_modern(self, line, headers)
    }

    fn abandon(&self, id: u64) {
        Outbound::abandon(self, id)
    }
}

/// Sends messages to the server. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Outbound(Sink);

#[derive(Debug, Clone)]
enum Sink {
    /// Messages to the transport's sending task (HTTP, which sends each as a request).
    // A stdio-only build sends lines only; tests look at what was sent through a channel.
    #[cfg_attr(not(any(feature = "http", test)), allow(dead_code))]
    Channel(mpsc::UnboundedSender<Outgoing>),
    /// Lines appended to the stdio writer's buffer.
    #[cfg(feature = "stdio")]
    Lines(stdio::LineSender),
}

impl Outbound {
    /// Messages go to `tx`.
    #[cfg_attr(not(any(feature = "http", test)), allow(dead_code))]
    pub fn channel(tx: mpsc::UnboundedSender<Outgoing>) -> Self {
        Outbound(Sink::Channel(tx))
    }

    /// Lines go to the stdio writer of `lines`.
    #[cfg(feature = "stdio")]
    fn lines(lines: stdio::LineSender) -> Self {
        Outbound(Sink::Lines(lines))
    }

    /// Queues one message for writing; false if the connection is already gone.
    pub fn send(&self, line: Vec<u8>) -> bool {
        match &self.0 {
            Sink::Channel(tx) => tx.send(Outgoing::Line(line)).is_ok(),
            #[cfg(feature = "stdio")]
            Sink::Lines(lines) => lines.send_with(|buf| buf.extend_from_slice(&line)),
        }
    }

    /// Queues the answer to one of the server's requests (newline-terminated), counted among
    /// the answers that wait to go out; false if it is not queued (see [`Link::answer`]).
    pub fn answer(&self, line: Vec<u8>) -> bool {
        match &self.0 {
            // HTTP's send loop counts every line it has yet to POST.
            Sink::Channel(tx) => tx.send(Outgoing::Line(line)).is_ok(),
            #[cfg(feature = "stdio")]
            Sink::Lines(lines) => lines.answer(&line),
        }
    }

    /// Queues the message that `write` appends to the buffer it is given (newline included),
    /// written there directly where the transport keeps one buffer (stdio); false if the
    /// connection is already gone.
    pub fn send_with(&self, write: impl FnOnce(&mut Vec<u8>)) -> bool {
        match &self.0 {
            Sink::Channel(tx) => {
                // Room for a typical request at once.
                let mut line = Vec::with_capacity(256);
                write(&mut line);
                tx.send(Outgoing::Line(line)).is_ok()
            }
            #[cfg(feature = "stdio")]
            Sink::Lines(lines) => lines.send_with(write),
        }
    }

    /// Queues one request of the modern era with its HTTP headers; false if the connection is
    /// already gone.
    pub fn send_modern(&self, line: Vec<u8>, headers: Vec<(String, String)>) -> bool {
        match &self.0 {
            Sink::Channel(tx) => tx.send(Outgoing::Modern { line, headers }).is_ok(),
            // A pipe has no headers.
            #[cfg(feature = "stdio")]
            Sink::Lines(_) => self.send(line),
        }
    }

    /// Tells the transport the answer to request `id` is no longer awaited.
    pub fn abandon(&self, id: u64) {
        match &self.0 {
            Sink::Channel(tx) => {
                let _ = tx.send(Outgoing::Abandon(id));
            }
            // A pipe holds no per-request resources.
            #[cfg(feature = "stdio")]
            Sink::Lines(_) => {}
        }
    }
}

/// A live connection, as the actor holds it.
pub(crate) struct Connection {
    pub outbound: Outbound,
    pub events: LocalBoxStream<'static, TransportEvent>,
    pub closer: Closer,
}

/// Stops a connection: a child process, or an HTTP session.
pub(crate) enum Closer {
    #[cfg(feature = "stdio")]
    Process(stdio::ProcessHandle),
    #[cfg(feature = "http")]
    Http(http::HttpHandle),
    #[cfg(test)]
    Memory(memory::MemoryHandle),
}

impl Closer {
    /// The child's process id (stdio only).
    pub fn pid(&self) -> Option<u32> {
        match self {
            #[cfg(feature = "stdio")]
            Closer::Process(p) => p.pid(),
            #[cfg(feature = "http")]
            Closer::Http(_) => None,
            #[cfg(test)]
            Closer::Memory(_) => None,
        }
    }

    /// The handshake is done with this protocol version.
    pub fn initialized(&self, protocol_version: &str) {
        #[cfg(feature = "http")]
        #[allow(irrefutable_let_patterns)] // a build without `stdio` has no other kind
        if let Closer::Http(h) = self {
            h.initialized(protocol_version);
        }
        #[cfg(not(feature = "http"))]
        let _ = protocol_version;
    }

    /// Streamable HTTP: the status (400, 404 or 405) with which the server refused our
    /// `initialize`, which says it may speak the legacy HTTP+SSE transport instead.
    #[cfg(feature = "http")]
    pub fn initialize_refused(&self) -> Option<u16> {
        match self {
            Closer::Http(h) => h.initialize_refused(),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// Legacy HTTP+SSE: the URL answered the GET, but not with an SSE stream that named an
    /// endpoint.
    pub fn not_sse(&self) -> bool {
        match self {
            #[cfg(feature = "http")]
            Closer::Http(h) => h.not_sse(),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Holds a child's stderr lines aside while a probe of ours runs, so that what it writes in
    /// answer to the probe does not push what explains a failure out of its stderr tail (stdio
    /// only; see `stdio::StderrTail`).
    pub fn hold_stderr(&self) {
        #[cfg(feature = "stdio")]
        #[allow(irrefutable_let_patterns)] // a build without `http` has no other kind
        if let Closer::Process(p) = self {
            p.hold_stderr();
        }
    }

    /// Bytes we wrote to a child's stdin that it has not read yet, while the opening runs
    /// (stdio only): a server that has not read a probe is still starting.
    pub fn stdin_unread(&self) -> Option<u64> {
        match self {
            #[cfg(feature = "stdio")]
            Closer::Process(p) => p.stdin_unread(),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The opening is over: a child's held stderr lines join its tail (`keep`) or are left
    /// out, and what the opening needed of its stdin is let go.
    pub fn opening_done(&mut self, keep: bool) {
        #[cfg(feature = "stdio")]
        #[allow(irrefutable_let_patterns)]
        if let Closer::Process(p) = self {
            p.opening_done(keep);
        }
        #[cfg(not(feature = "stdio"))]
        let _ = keep;
    }

    /// Ends a broken or hung connection at once.
    pub async fn kill(self) {
        match self {
            #[cfg(feature = "stdio")]
            Closer::Process(p) => p.kill().await,
            #[cfg(feature = "http")]
            Closer::Http(h) => h.kill(),
            #[cfg(test)]
            Closer::Memory(m) => m.close(false),
        }
    }

    /// Ends a healthy connection politely (stdin closed first / session deleted).
    pub async fn shutdown(self, grace: std::time::Duration) {
        match self {
            #[cfg(feature = "stdio")]
            Closer::Process(p) => p.shutdown(grace).await,
            #[cfg(feature = "http")]
            Closer::Http(h) => h.shutdown(grace).await,
            #[cfg(test)]
            Closer::Memory(m) => {
                let _ = grace;
                m.close(true)
            }
        }
    }
}
