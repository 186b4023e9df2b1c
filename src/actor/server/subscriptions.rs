//! The application's resource subscriptions. The set is kept in the actor and re-sent by every
//! handshake (see [`connect`](crate::actor::connect)); while the server is Ready a change is
//! also sent at once, as an ordinary call.

use actix::prelude::*;
use serde_json::json;

use super::ServerActor;
use crate::actor::messages::{Call, Subscribe, Unsubscribe};
use crate::error::Error;

impl Handler<Subscribe> for ServerActor {
    type Result = ResponseFuture<Result<(), Error>>;

    fn handle(&mut self, msg: Subscribe, ctx: &mut Context<Self>) -> Self::Result {
        self.subscriptions.insert(msg.uri.clone());
        if !self.machine.state().is_ready() {
            // Sent with the next handshake.
            return Box::pin(std::future::ready(Ok(())));
        }
        let call = Call::new(
            msg.server,
            "resources/subscribe",
            Some(json!({ "uri": msg.uri })),
        );
        let waiter = self.start_call(call, ctx);
        Box::pin(async move { waiter?.wait().await.map(drop) })
    }
}

impl Handler<Unsubscribe> for ServerActor {
    type Result = ResponseFuture<Result<(), Error>>;

    fn handle(&mut self, msg: Unsubscribe, ctx: &mut Context<Self>) -> Self::Result {
        if !self.subscriptions.remove(&msg.uri) || !self.machine.state().is_ready() {
            return Box::pin(std::future::ready(Ok(())));
        }
        let call = Call::new(
            msg.server,
            "resources/unsubscribe",
            Some(json!({ "uri": msg.uri })),
        );
        let waiter = self.start_call(call, ctx);
        Box::pin(async move { waiter?.wait().await.map(drop) })
    }
}
