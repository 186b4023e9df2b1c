//! The application's request handler: what the servers ask the application for input goes
//! here — an `input_required` round of a 2026-07-28 `confirm`, or the `elicitation/create`
//! request a session-era server sends — and is answered `accept` with `{"ok": true}`, so
//! every `confirm` that completes answers `confirmed: true`. Anything else is refused with
//! "method not found" (none is expected). It counts what it answered.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use actix::prelude::*;
use mcp_supervisor::{RpcError, ServerRequest};
use serde_json::{json, Value};

/// The capabilities announced for the handler.
pub fn capabilities() -> Value {
    json!({ "elicitation": {} })
}

pub struct Accept {
    pub answered: Arc<AtomicU64>,
}

impl Actor for Accept {
    type Context = Context<Self>;
}

impl Handler<ServerRequest> for Accept {
    type Result = Result<Value, RpcError>;

    fn handle(&mut self, request: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        if request.method != "elicitation/create" {
            let message = format!("the soak answers no {}", request.method);
            return Err(RpcError::new(-32601, message));
        }
        self.answered.fetch_add(1, Ordering::Relaxed);
        Ok(json!({ "action": "accept", "content": { "ok": true } }))
    }
}
