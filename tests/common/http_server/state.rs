//! The server's state behind its mutexes: sessions, their SSE streams' event logs (kept for
//! replay) and the clients attached to them; the modern era's listens and `confirm` flows.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use actix_web::HttpRequest;
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use super::era::Era;
use super::faults::FaultState;
use super::headers::default_versions;
use super::listen::Listens;
use super::mrtr::Flows;
use super::stats::{Counters, Seen, MAX_SEEN};
use super::tasks::Jobs;
use super::{GetMode, SessionGone};

pub(super) struct Shared {
    pub(super) faults: Mutex<FaultState>,
    pub(super) counters: Mutex<Counters>,
    pub(super) sessions: Mutex<HashMap<String, Session>>,
    /// The modern era's open `subscriptions/listen` streams.
    pub(super) listens: Mutex<Listens>,
    /// The `confirm` tool's multi round-trip flows.
    pub(super) flows: Mutex<Flows>,
    /// The `job` tool's tasks (the Tasks extension).
    pub(super) jobs: Mutex<Jobs>,
    /// The `counter` tool's value.
    pub(super) counter: AtomicU64,
    /// Makes session ids unique within the server.
    pub(super) next_session: AtomicU64,
    /// TCP connections accepted.
    pub(super) connections: AtomicU64,
}

#[derive(Default)]
pub(super) struct Session {
    pub(super) next_stream: u64,
    pub(super) streams: HashMap<u64, EventLog>,
    /// The stream opened by the last GET without `Last-Event-ID`.
    pub(super) standalone: Option<u64>,
    pub(super) subscriptions: HashSet<String>,
}

/// One SSE stream's events, kept for replay, and the client attached to it, if any.
#[derive(Default)]
pub(super) struct EventLog {
    pub(super) next_seq: u64,
    /// `(seq, frame)` of the data events (priming events are not replayed).
    pub(super) events: Vec<(u64, Bytes)>,
    /// The final response is stored: a resumption ends after the replay.
    pub(super) done: bool,
    pub(super) live: Option<Live>,
}

/// A client attached to a stream: the sender feeding its response body.
pub(super) struct Live {
    pub(super) tx: mpsc::UnboundedSender<Chunk>,
    /// Data events still to send before dropping the stream (`drop_sse_after`).
    pub(super) budget: Option<usize>,
}

pub(super) enum Chunk {
    Data(Bytes),
    /// End the body abruptly (the connection is closed without the last chunk).
    Abort,
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub(super) fn new(era: Era) -> Self {
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
                canned: Vec::new(),
                era,
                modern_versions: default_versions(),
                discover_ttl_ms: 0,
                list_ttl_ms: 0,
                server_info: true,
                echo_prefix: String::new(),
                listen_ack_delay_ms: 0,
                modern_tools: false,
                invalid_header_tools: false,
                listen_lifetime_ms: None,
                confirm_rounds: 1,
                confirm_state_only: 0,
                task_poll_ms: 50,
                hold_tasks: false,
                bearer: None,
            }),
            counters: Mutex::default(),
            sessions: Mutex::default(),
            listens: Mutex::default(),
            flows: Mutex::default(),
            jobs: Mutex::default(),
            counter: AtomicU64::new(0),
            next_session: AtomicU64::new(1),
            connections: AtomicU64::new(0),
        }
    }

    pub(super) fn record(&self, req: &HttpRequest) {
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

    /// Records a request on `/mcp` for [`super::Stats::seen`] (`message`: a POST's body).
    pub(super) fn see(&self, req: &HttpRequest, message: Option<&Value>, modern: bool) {
        let headers = req
            .headers()
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_ascii_lowercase(), value)
            })
            .collect();
        let field = |key: &str| message.and_then(|m| m.get(key));
        let seen = Seen {
            http_method: req.method().as_str().to_owned(),
            rpc_method: field("method").and_then(Value::as_str).map(str::to_owned),
            id: field("id").cloned(),
            modern,
            headers,
            body: message.cloned().unwrap_or(Value::Null),
        };
        let mut counters = lock(&self.counters);
        if counters.seen.len() >= MAX_SEEN {
            counters.seen.pop_front();
        }
        counters.seen.push_back(seen);
    }

    pub(super) fn new_session(&self) -> String {
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
    pub(super) fn emit(&self, session: &str, stream: u64, message: &Value, last: bool) {
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
    pub(super) fn next_id(&mut self, stream: u64) -> (u64, String) {
        let seq = self.next_seq;
        self.next_seq += 1;
        (seq, format!("{stream}-{seq}"))
    }

    pub(super) fn attached(&self) -> bool {
        self.live.as_ref().is_some_and(|live| !live.tx.is_closed())
    }

    pub(super) fn push(&mut self, stream: u64, message: &Value, last: bool) {
        let (seq, id) = self.next_id(stream);
        let frame = Bytes::from(format!("id: {id}\ndata: {message}\n\n"));
        self.events.push((seq, frame.clone()));
        self.done |= last;
        Live::deliver(&mut self.live, frame, last);
    }
}

impl Live {
    /// Sends a data event to the attached client, if any, and detaches it after the last one:
    /// cleanly after the final response, abruptly (`Abort`) when its `budget` runs out.
    pub(super) fn deliver(live: &mut Option<Live>, frame: Bytes, last: bool) {
        let Some(attached) = live.as_mut() else {
            return;
        };
        let keep = match attached.budget.as_mut() {
            // A stream set to drop never carries the final response.
            Some(_) if last => false,
            Some(left) => {
                *left -= 1;
                attached.tx.send(Chunk::Data(frame)).is_ok() && *left > 0
            }
            None => attached.tx.send(Chunk::Data(frame)).is_ok() && !last,
        };
        if !keep {
            if let Some(gone) = live.take() {
                if gone.budget.is_some() {
                    let _ = gone.tx.send(Chunk::Abort);
                }
            }
        }
    }
}
