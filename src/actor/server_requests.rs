//! Requests a server sends us (`roots/list`, `sampling/createMessage`, `elicitation/create`,
//! `ping`): answered through the application's handler, bounded so that a server cannot make
//! us hold an unbounded number of them. At most [`MAX_IN_FLIGHT`] wait for the handler at once
//! (the others are refused at once with a JSON-RPC error), and each waits at most the server's
//! call timeout.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::Recipient;
use serde_json::{json, Value};

use crate::actor::messages::ServerRequest;
use crate::protocol::jsonrpc::{self, codes, Id, RpcError};
use crate::protocol::text::server_text;
use crate::transport::Outbound;

/// Server requests waiting for the application's handler at once, per server.
pub(crate) const MAX_IN_FLIGHT: usize = 64;

/// How one server's requests are answered. Cheap to clone: clones share the in-flight count.
#[derive(Clone)]
pub(crate) struct ServerRequests {
    server: Arc<str>,
    handler: Option<Recipient<ServerRequest>>,
    /// How long the handler may take to answer.
    timeout: Duration,
    in_flight: Arc<AtomicUsize>,
}

impl ServerRequests {
    /// Requests of `server`, answered by `handler` (or refused, without one) within `timeout`.
    pub fn new(
        server: Arc<str>,
        handler: Option<Recipient<ServerRequest>>,
        timeout: Duration,
    ) -> Self {
        ServerRequests {
            server,
            handler,
            timeout,
            in_flight: Arc::default(),
        }
    }

    /// The same, with another handler (the in-flight count carries over).
    pub fn with_handler(&self, handler: Recipient<ServerRequest>) -> Self {
        ServerRequests {
            handler: Some(handler),
            ..self.clone()
        }
    }

    /// Answers request `id` on `outbound`: `ping` at once; anything else through the handler,
    /// or with "method not found" without one, or with "busy" when too many are in flight.
    pub fn answer(&self, outbound: &Outbound, id: Id, method: String, params: Option<Value>) {
        if method == "ping" {
            outbound.answer(jsonrpc::response_line(&id, &Ok(json!({}))));
            return;
        }
        let Some(asked) = self.ask(method, params) else {
            let error = RpcError::new(
                codes::METHOD_NOT_FOUND,
                "the client has no handler for this method",
            );
            outbound.answer(jsonrpc::response_line(&id, &Err(error)));
            return;
        };
        let outbound = outbound.clone();
        actix::spawn(async move {
            let outcome = asked.await;
            outbound.answer(jsonrpc::response_line(&id, &outcome));
        });
    }

    /// Asks the application's handler `method` (a server's request, or an input request of a
    /// multi-round-trip result), within the timeout and the in-flight bound; `None` without a
    /// handler. A handler that is gone, busy or slow is an error answer, never a wait.
    pub fn ask(
        &self,
        method: String,
        params: Option<Value>,
    ) -> Option<impl std::future::Future<Output = Result<Value, RpcError>> + 'static> {
        let Some(handler) = self.handler.clone() else {
            tracing::debug!(server = %self.server, method = %server_text(&method), "server request without a handler");
            return None;
        };
        let slot = Slot::take(&self.in_flight);
        let busy = slot.0 > MAX_IN_FLIGHT;
        if busy {
            tracing::debug!(server = %self.server, method = %server_text(&method), "server request refused: too many in flight");
        }
        let request = ServerRequest {
            server: self.server.to_string(),
            method,
            params,
        };
        let timeout = self.timeout;
        Some(async move {
            let _slot = slot;
            let outcome = if busy {
                Err(RpcError::new(
                    codes::INTERNAL_ERROR,
                    format!("the client is busy: {MAX_IN_FLIGHT} requests from this server are already waiting"),
                ))
            } else {
                match tokio::time::timeout(timeout, handler.send(request)).await {
                    Ok(Ok(outcome)) => outcome,
                    Ok(Err(e)) => Err(RpcError::new(
                        codes::INTERNAL_ERROR,
                        format!("the client's request handler is gone: {e}"),
                    )),
                    Err(_) => Err(RpcError::new(
                        codes::INTERNAL_ERROR,
                        format!("the client's request handler did not answer within {timeout:?}"),
                    )),
                }
            };
            outcome
        })
    }
}

/// One request counted in flight until dropped, however its future ends (answered, or
/// dropped with an actor that stopped).
struct Slot(usize, Arc<AtomicUsize>);

impl Slot {
    /// Counts one more; `.0` is the count with it.
    fn take(in_flight: &Arc<AtomicUsize>) -> Self {
        let now = in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        Slot(now, in_flight.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.1.fetch_sub(1, Ordering::Relaxed);
    }
}
