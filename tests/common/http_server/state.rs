//! The server's state behind its mutexes: sessions, their SSE streams' event logs (kept for
//! replay) and the clients attached to them.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use actix_web::HttpRequest;
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use super::faults::FaultState;
use super::stats::Counters;
use super::{GetMode, SessionGone};

pub(super) struct Shared {
    pub(super) faults: Mutex<FaultState>,
    pub(super) counters: Mutex<Counters>,
    pub(super) sessions: Mutex<HashMap<String, Session>>,
    /// The `counter` tool's value.
    pub(super) counter: AtomicU64,
    /// Makes session ids unique within the server.
    pub(super) next_session: AtomicU64,
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
    pub(super) fn new() -> Self {
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
            }),
            counters: Mutex::default(),
            sessions: Mutex::default(),
            counter: AtomicU64::new(0),
            next_session: AtomicU64::new(1),
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
