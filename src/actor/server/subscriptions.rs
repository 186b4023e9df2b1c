//! The application's resource subscriptions. The set is kept in the actor and re-sent by every
//! handshake (see [`connect`](crate::actor::connect)); while the server is Ready a change is
//! also sent at once, as an ordinary call, and a change made while a handshake ran is sent as
//! soon as it is done. In the 2026-07-28 revision the set is the filter of the listen stream
//! (see `listen`), and a change opens a new one.

use std::collections::BTreeSet;

use actix::prelude::*;
use serde_json::json;

use tokio::sync::oneshot;

use super::ServerActor;
use crate::actor::messages::{Call, Subscribe, Unsubscribe};
use crate::error::Error;
use crate::protocol::era::Era;

impl Handler<Subscribe> for ServerActor {
    type Result = ResponseFuture<Result<(), Error>>;

    fn handle(&mut self, msg: Subscribe, ctx: &mut Context<Self>) -> Self::Result {
        self.subscriptions.insert(msg.uri.clone());
        if !self.machine.state().is_ready() {
            // Sent with the next handshake.
            return Box::pin(std::future::ready(Ok(())));
        }
        if let Some(acknowledged) = self.relisten() {
            return acknowledged;
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
        if let Some(acknowledged) = self.relisten() {
            return acknowledged;
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

impl ServerActor {
    /// In the 2026-07-28 revision: a listen with the changed set, answered once the server
    /// acknowledged it. `None` in the session era.
    fn relisten(&mut self) -> Option<ResponseFuture<Result<(), Error>>> {
        if self.live.as_ref()?.wire.era() != Era::Modern {
            return None;
        }
        let (waiter, acknowledged) = oneshot::channel();
        self.open_listen(Some(waiter));
        let server = self.name.to_string();
        Some(Box::pin(async move {
            acknowledged.await.unwrap_or(Err(Error::Stopped { server }))
        }))
    }

    /// After a handshake that sent `subscribed`: (un)subscribes what the application changed
    /// while it ran, so that a `Subscribe` made during a connection attempt is not lost.
    pub(super) fn reconcile_subscriptions(
        &mut self,
        subscribed: Vec<String>,
        ctx: &mut Context<Self>,
    ) {
        let can_subscribe = self
            .negotiated
            .as_ref()
            .and_then(|n| n.capabilities.resources.as_ref())
            .and_then(|r| r.subscribe)
            .unwrap_or(false);
        if !can_subscribe {
            return;
        }
        let sent: BTreeSet<String> = subscribed.into_iter().collect();
        let added: Vec<String> = self.subscriptions.difference(&sent).cloned().collect();
        let removed: Vec<String> = sent.difference(&self.subscriptions).cloned().collect();
        let changes = added
            .into_iter()
            .map(|uri| ("resources/subscribe", uri))
            .chain(
                removed
                    .into_iter()
                    .map(|uri| ("resources/unsubscribe", uri)),
            );
        for (method, uri) in changes {
            let call = Call::new(self.name.to_string(), method, Some(json!({ "uri": uri })));
            let Ok(waiter) = self.start_call(call, ctx) else {
                continue;
            };
            ctx.spawn(waiter.wait().into_actor(self).map(move |result, act, _| {
                if let Err(e) = result {
                    tracing::warn!(server = %act.name, method, uri = ?uri, error = %e, "subscription change after the handshake failed");
                }
            }));
        }
    }
}
