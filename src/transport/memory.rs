//! An in-memory transport, for the actor's unit tests: a real connection as the actor sees it
//! (an [`Outbound`], an event stream ending in `Closed`, a [`Closer`]), whose other end is a
//! [`Peer`] the test plays — it reads what the client wrote, answers, sends notifications,
//! stalls (reads nothing, answers nothing) and closes. No process, no socket, no clock of its
//! own: with tokio's paused clock, a test of the whole actor runs in virtual time.

use std::cell::RefCell;
use std::rc::Rc;

use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::{Closer, Connection, Outbound, Outgoing, TransportEvent};
use crate::error::Error;
use crate::protocol::jsonrpc::parse_frame;

/// Where the actor's connection attempts arrive: each dial makes a connection and hands its
/// other end to the test ([`Network::accept`]), or is refused while the test says so.
#[derive(Clone)]
pub(crate) struct Network(Rc<RefCell<State>>);

struct State {
    peers: mpsc::UnboundedSender<Peer>,
    /// Dials refused from now on (a server that is down), with this error.
    refuse: Option<String>,
    /// Dials so far, refused ones included.
    dials: watch::Sender<usize>,
}

/// The test's side of a [`Network`].
pub(crate) struct Listener {
    network: Network,
    peers: mpsc::UnboundedReceiver<Peer>,
}

impl Network {
    /// A network, and the listener its dials arrive at.
    pub fn new() -> (Network, Listener) {
        let (tx, rx) = mpsc::unbounded_channel();
        let network = Network(Rc::new(RefCell::new(State {
            peers: tx,
            refuse: None,
            dials: watch::Sender::new(0),
        })));
        let listener = Listener {
            network: network.clone(),
            peers: rx,
        };
        (network, listener)
    }

    /// A new connection for `server`'s attempt.
    pub fn dial(&self, server: &str) -> Result<Connection, Error> {
        let state = self.0.borrow();
        state.dials.send_modify(|n| *n += 1);
        if let Some(why) = &state.refuse {
            return Err(Error::connection(server, why.clone()));
        }
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (closed_tx, closed_rx) = watch::channel(None);
        let peer = Peer {
            written: out_rx,
            events: events_tx,
            closed: closed_rx,
        };
        let _ = state.peers.send(peer);
        let events = futures_util::stream::unfold(events_rx, |mut rx| async move {
            let event = rx.recv().await?;
            Some((event, rx))
        })
        .boxed_local();
        Ok(Connection {
            outbound: Outbound::channel(out_tx),
            events,
            closer: Closer::Memory(MemoryHandle(closed_tx)),
        })
    }
}

impl Listener {
    /// The next connection the actor opened.
    pub async fn accept(&mut self) -> Peer {
        self.peers
            .recv()
            .await
            .expect("the network lives as long as the listener")
    }

    /// Refuses every dial from now on with `why` (`None`: accepts them again).
    pub fn refuse(&self, why: Option<&str>) {
        self.network.0.borrow_mut().refuse = why.map(str::to_owned);
    }

    /// Dials so far, refused ones included.
    pub fn dials(&self) -> usize {
        *self.network.0.borrow().dials.borrow()
    }
}

/// The server's end of one in-memory connection.
pub(crate) struct Peer {
    written: mpsc::UnboundedReceiver<Outgoing>,
    events: mpsc::UnboundedSender<TransportEvent>,
    /// How the client closed it: `Some(true)` politely, `Some(false)` killed.
    closed: watch::Receiver<Option<bool>>,
}

impl Peer {
    /// The next message the client wrote, as JSON (an abandoned request as
    /// `{"abandon": id}`); `None` once the client dropped the connection.
    pub async fn recv(&mut self) -> Option<Value> {
        let item = self.written.recv().await?;
        Some(match item {
            Outgoing::Line(line) | Outgoing::Modern { line, .. } => {
                serde_json::from_slice(&line).expect("the client writes JSON")
            }
            Outgoing::Abandon(id) => serde_json::json!({ "abandon": id }),
        })
    }

    /// What the client wrote that the test has not read yet, without waiting (a transport
    /// letting go of a request counts too).
    pub fn pending(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Ok(item) = self.written.try_recv() {
            out.push(match item {
                Outgoing::Line(line) | Outgoing::Modern { line, .. } => {
                    serde_json::from_slice(&line).expect("the client writes JSON")
                }
                Outgoing::Abandon(id) => serde_json::json!({ "abandon": id }),
            });
        }
        out
    }

    /// Sends the client one message (a response, a notification, a request), parsed as a
    /// transport would.
    pub fn send(&self, message: Value) {
        let line = serde_json::to_vec(&message).expect("a test's message serializes");
        for inbound in parse_frame(&line).expect("a test sends JSON-RPC") {
            let _ = self.events.send(TransportEvent::Message(inbound));
        }
    }

    /// Answers request `request` (a message the client wrote) with `result`.
    pub fn answer(&self, request: &Value, result: Value) {
        self.send(serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
    }

    /// Answers request `request` with a JSON-RPC error.
    pub fn refuse(&self, request: &Value, code: i64, message: &str) {
        self.send(serde_json::json!({"jsonrpc": "2.0", "id": request["id"],
            "error": {"code": code, "message": message}}));
    }

    /// Reports any transport event (requests refused unprocessed, interrupted, ...).
    pub fn event(&self, event: TransportEvent) {
        let _ = self.events.send(event);
    }

    /// Ends the connection from the server's side, with `why`.
    pub fn close(&self, why: Error) {
        let _ = self.events.send(TransportEvent::Closed(why));
    }

    /// How the client closed the connection, if it did: politely (`true`) or at once.
    pub fn closed_by_client(&self) -> Option<bool> {
        *self.closed.borrow()
    }
}

/// The client's handle on an in-memory connection.
pub(crate) struct MemoryHandle(watch::Sender<Option<bool>>);

impl MemoryHandle {
    pub fn close(&self, polite: bool) {
        self.0.send_replace(Some(polite));
    }
}
