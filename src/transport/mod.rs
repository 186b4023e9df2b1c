//! What a transport gives the actor: a way to send messages, a stream of what the server sends
//! (ending in exactly one [`TransportEvent::Closed`] that says why), and a handle to stop it.
//!
//! Transports do IO only. They know nothing of calls, retries or states: framing and parsing
//! come from [`crate::protocol`], every decision from [`crate::policy`].

pub(crate) mod stdio;

use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::stream::LocalBoxStream;
use tokio::sync::mpsc;

use crate::error::Error;
use crate::protocol::jsonrpc::Inbound;

/// One thing that came from the server.
#[derive(Debug)]
pub(crate) enum TransportEvent {
    /// A message.
    Message(Inbound),
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
}

/// Sends serialized, newline-terminated messages to the server. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Outbound(pub mpsc::UnboundedSender<Vec<u8>>);

impl Outbound {
    /// Queues one message for writing; false if the connection is already gone.
    pub fn send(&self, line: Vec<u8>) -> bool {
        self.0.send(line).is_ok()
    }
}

/// A live connection, as the actor holds it.
pub(crate) struct Connection {
    pub outbound: Outbound,
    pub events: LocalBoxStream<'static, TransportEvent>,
    pub process: stdio::ProcessHandle,
}
