//! Change notifications in the 2026-07-28 revision: one `subscriptions/listen` stream per
//! connection carries the resource updates the application subscribed to and the server's
//! tool-list changes, instead of the session era's `resources/subscribe` and GET stream.
//!
//! - It is opened once the connection is Ready, with the application's current subscriptions,
//!   and again after every reconnect or respawn (the revision says a client must: the server
//!   keeps no state).
//! - Its filter cannot be changed: a new subscription opens a new listen, and the old one is
//!   cancelled once the new one is acknowledged; `Subscribe` answers at that acknowledgement.
//! - A listen the server ends gracefully (its result) is opened again, no sooner than
//!   [`REOPEN_AFTER`] after the last; one lost by error (its stream broke) is a lost
//!   connection, as the GET stream's loss is in the session era; `-32601` means the server has
//!   none, and no more is asked.

use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::ServerActor;
use crate::error::Error;
use crate::protocol::era::Era;
use crate::protocol::jsonrpc::{codes, Id, RpcError};

/// A listen the server ends at once is opened again no sooner than this after the last one.
pub(super) const REOPEN_AFTER: Duration = Duration::from_secs(1);

/// The `_meta` key that names the listen a notification belongs to.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The listen stream of one connection.
pub(super) struct Listen {
    /// The request id of the newest listen.
    id: u64,
    opened: Instant,
    acknowledged: bool,
    /// The listen this one replaces, cancelled once this one is acknowledged.
    replaces: Option<u64>,
    /// `Subscribe`/`Unsubscribe` callers waiting for this listen's acknowledgement.
    waiting: Vec<oneshot::Sender<Result<(), Error>>>,
}

impl Drop for Listen {
    fn drop(&mut self) {
        // The connection is gone: the subscriptions are kept, and sent with the next one.
        for waiter in self.waiting.drain(..) {
            let _ = waiter.send(Ok(()));
        }
    }
}

impl ServerActor {
    /// What to ask a listen for, if anything: the tool-list changes and the application's
    /// resource subscriptions, as far as the server offers them.
    fn listen_filter(&self) -> Option<Value> {
        let caps = &self.negotiated.as_ref()?.capabilities;
        let tools = caps
            .tools
            .as_ref()
            .and_then(|t| t.list_changed)
            .unwrap_or(false);
        let resources = caps
            .resources
            .as_ref()
            .and_then(|r| r.subscribe)
            .unwrap_or(false)
            && !self.subscriptions.is_empty();
        if !tools && !resources {
            return None;
        }
        let mut filter = json!({});
        if tools {
            filter["toolsListChanged"] = json!(true);
        }
        if resources {
            filter["resourceSubscriptions"] = json!(self.subscriptions.iter().collect::<Vec<_>>());
        }
        Some(filter)
    }

    /// Opens a listen with the current filter (replacing the one open, if any); `waiter` is
    /// answered at its acknowledgement. Nothing to do outside the modern era or while not Ready.
    pub(super) fn open_listen(&mut self, waiter: Option<oneshot::Sender<Result<(), Error>>>) {
        let filter = self.listen_filter();
        let Some(live) = self.live.as_mut().filter(|l| l.wire.era() == Era::Modern) else {
            if let Some(waiter) = waiter {
                let _ = waiter.send(Ok(())); // Kept; sent with the next connection.
            }
            return;
        };
        let old = live.listen.take();
        let Some(filter) = filter else {
            // Nothing to listen for any more.
            if let Some(mut old) = old {
                live.wire.cancel(old.id, "no longer needed");
                for waiter in old.waiting.drain(..).chain(waiter) {
                    let _ = waiter.send(Ok(()));
                }
            }
            return;
        };
        let id = self.ids.next();
        live.wire.request_value(
            id,
            "subscriptions/listen",
            Some(&json!({ "notifications": filter })),
        );
        let mut listen = Listen {
            id,
            opened: Instant::now(),
            acknowledged: false,
            replaces: None,
            waiting: waiter.into_iter().collect(),
        };
        if let Some(mut old) = old {
            listen.waiting.append(&mut old.waiting);
            // An acknowledged one keeps delivering until the new one is; an unacknowledged
            // one is replaced outright.
            if old.acknowledged {
                listen.replaces = Some(old.id);
            } else {
                live.wire.cancel(old.id, "replaced");
            }
        }
        live.listen = Some(listen);
    }

    /// `notifications/subscriptions/acknowledged`: the listen it names is in force.
    pub(super) fn on_listen_acknowledged(&mut self, params: Option<&Value>) {
        let named = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(SUBSCRIPTION_ID))
            .and_then(Value::as_u64);
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let Some(listen) = live.listen.as_mut().filter(|l| Some(l.id) == named) else {
            return;
        };
        listen.acknowledged = true;
        if let Some(old) = listen.replaces.take() {
            live.wire.cancel(old, "replaced");
        }
        for waiter in listen.waiting.drain(..) {
            let _ = waiter.send(Ok(()));
        }
    }

    /// Whether request `id` is a listen of the current connection (the newest or the one it
    /// replaces): its end is not an answer for the call table.
    pub(super) fn is_listen(&self, id: &Id) -> bool {
        let Some(listen) = self.live.as_ref().and_then(|l| l.listen.as_ref()) else {
            return false;
        };
        let id = id.as_ours();
        id == Some(listen.id) || (id.is_some() && id == listen.replaces)
    }

    /// A listen ended: with its result (gracefully: open it again), or with an error.
    pub(super) fn on_listen_end(
        &mut self,
        id: &Id,
        outcome: Result<(), RpcError>,
        ctx: &mut Context<Self>,
    ) {
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let Some(listen) = live.listen.as_mut() else {
            return;
        };
        if id.as_ours() != Some(listen.id) {
            // The replaced one ended: nothing to do.
            listen.replaces = None;
            return;
        }
        match outcome {
            Ok(()) => {
                let wait = REOPEN_AFTER.saturating_sub(listen.opened.elapsed());
                tracing::debug!(server = %self.name, wait_ms = wait.as_millis() as u64, "the server ended the listen stream; opening it again");
                let seq = live.seq;
                ctx.run_later(wait, move |act, _| {
                    if act.live.as_ref().is_some_and(|l| l.seq == seq) {
                        act.open_listen(None);
                    }
                });
            }
            Err(error) => {
                let unsupported = error.code == codes::METHOD_NOT_FOUND;
                if !unsupported {
                    tracing::warn!(server = %self.name, code = error.code, "the server refused the listen stream: no change notifications until the next connection");
                }
                if let Some(mut listen) = live.listen.take() {
                    let refused = Error::rpc(&self.name, "subscriptions/listen", error);
                    for waiter in listen.waiting.drain(..) {
                        let _ = waiter.send(if unsupported {
                            Ok(())
                        } else {
                            Err(refused.clone())
                        });
                    }
                }
            }
        }
    }

    /// Whether the requests in `ids` include the current listen: its stream broke.
    pub(super) fn listen_interrupted(&self, ids: &[u64]) -> bool {
        self.live
            .as_ref()
            .and_then(|l| l.listen.as_ref())
            .is_some_and(|l| ids.contains(&l.id))
    }
}
