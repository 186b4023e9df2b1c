//! The messages that steer the actor itself rather than make calls: status queries, event
//! subscribers, the request handler, `Reconnect`, `Shutdown` (which answers only once every
//! process the actor started is gone, however many are sent) and the test hook `InjectPanic`.

use actix::prelude::*;

use super::{InjectPanic, ServerActor};
use crate::actor::call_table::Situation;
use crate::actor::messages::*;
use crate::actor::status::ServerStatus;
use crate::error::Error;
use crate::policy::state::{Event, ServerState};

impl ServerActor {
    pub(super) fn status(&self) -> ServerStatus {
        let negotiated = self.negotiated.as_ref();
        let mut counters = self.calls.counters().clone();
        counters.reconnects = self.reconnects;
        counters.skipped_non_json = self.skips.non_json();
        counters.skipped_oversized = self.skips.oversized();
        let fanout = self.events.counts();
        counters.events_dropped = fanout.dropped;
        counters.state_changes_coalesced = fanout.coalesced;
        ServerStatus {
            name: self.name.to_string(),
            transport: self.config.transport().kind(),
            state: self.machine.state().clone(),
            in_state_for: self.machine.since().elapsed(),
            server_info: negotiated.and_then(|n| n.server_info.clone()),
            era: negotiated.map(|n| n.era),
            protocol_version: negotiated.map(|n| n.version.clone()),
            capabilities: negotiated.map(|n| n.capabilities.clone()),
            tools: self.tools.clone(),
            subscriptions: self.subscriptions.iter().cloned().collect(),
            counters,
            last_error: self.last_error.clone(),
            pid: self.live.as_ref().and_then(|l| l.closer.pid()),
            pending_calls: self.calls.len(),
        }
    }
}

impl Handler<GetStatus> for ServerActor {
    type Result = Result<Vec<ServerStatus>, Error>;

    fn handle(&mut self, msg: GetStatus, _: &mut Context<Self>) -> Self::Result {
        match msg.server {
            Some(name) if name != *self.name => Err(Error::ServerNotFound { server: name }),
            _ => Ok(vec![self.status()]),
        }
    }
}

impl Handler<SubscribeEvents> for ServerActor {
    type Result = ();

    fn handle(&mut self, SubscribeEvents(recipient): SubscribeEvents, _: &mut Context<Self>) {
        self.events.subscribe(recipient);
    }
}

impl Handler<SetRequestHandler> for ServerActor {
    type Result = ();

    fn handle(&mut self, msg: SetRequestHandler, _: &mut Context<Self>) {
        self.server_requests = self.server_requests.with_handler(msg.handler);
        self.client_capabilities = msg.capabilities;
    }
}

impl Handler<Reconnect> for ServerActor {
    type Result = Result<(), Error>;

    fn handle(&mut self, _: Reconnect, ctx: &mut Context<Self>) -> Self::Result {
        match self.machine.state() {
            ServerState::Stopped => {
                return Err(Error::Stopped {
                    server: self.name.to_string(),
                })
            }
            ServerState::Ready => {
                // The connection is dropped on purpose: its calls are settled like on a crash.
                let error = Error::connection(&self.name, "reconnect requested");
                self.calls.settle(&error, None, &self.tools);
            }
            _ => {}
        }
        self.feed(Event::Reconnect, ctx);
        Ok(())
    }
}

impl Handler<Shutdown> for ServerActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) -> Self::Result {
        let mut stopped = self.stopped.subscribe();
        if *self.machine.state() != ServerState::Stopped {
            // The first Shutdown stops the server; later ones wait for the same end.
            if let Some(gone) = &mut self._gone {
                gone.deliberate = true;
            }
            self.feed(Event::Stop, ctx);
            // Calls in flight get their answer now rather than at their deadline.
            let situation = Situation::of(&self.machine, self.last_error.as_ref());
            self.calls.fail_all_stopped(&situation);
            let closing = std::mem::take(&mut self.closing);
            let reaping = self.reaping.clone();
            ctx.spawn(
                async move {
                    for closed in closing {
                        let _ = closed.await;
                    }
                    // Also the processes of failed attempts and broken connections, which are
                    // killed in the background.
                    reaping.idle().await;
                }
                .into_actor(self)
                .map(|_, act, ctx| {
                    act.stopped.send_replace(true);
                    ctx.stop();
                }),
            );
        }
        // Not tied to the actor's context, so that it answers after the actor has stopped;
        // should the actor die first, the sender's drop ends the wait too.
        Box::pin(async move {
            let _ = stopped.wait_for(|done| *done).await;
        })
    }
}

impl Handler<InjectPanic> for ServerActor {
    type Result = ();

    fn handle(&mut self, _: InjectPanic, _: &mut Context<Self>) {
        panic!(
            "InjectPanic: a test asked ServerActor `{}` to panic",
            self.name
        );
    }
}
