//! The liveness check after a timeout. A slow call must not cost a healthy connection, so a
//! timeout does not mark the connection broken: it sends one short `ping` (in the 2026-07-28
//! revision, which has no `ping`, a `server/discover`, which every modern server answers and
//! which has no effect), and only a check that gets no answer does. Its own room because this is the one place the actor decides a
//! connection is broken without the transport telling it so.

use actix::prelude::*;

use super::ServerActor;
use crate::actor::messages::Call;
use crate::error::{Error, ErrorKind};
use crate::policy::retry::RetryPolicy;
use crate::protocol::era::Era;

impl ServerActor {
    /// After a timeout: is the server alive at all? A slow call must not cost a healthy
    /// connection, so only a ping that gets no answer counts as a broken connection.
    pub(super) fn check_liveness(&mut self, ctx: &mut Context<Self>) {
        if self.ping_in_flight || self.live.is_none() {
            return;
        }
        let Some((seq, era)) = self.live.as_ref().map(|l| (l.seq, l.wire.era())) else {
            return;
        };
        let ping_timeout = self.settings.ping_timeout;
        // The wire asks a modern server `server/discover` instead, its revision having no ping.
        let check = match era {
            Era::Legacy => "liveness ping",
            Era::Modern => "liveness ping (as server/discover)",
        };
        let call = Call::new(self.name.to_string(), "ping", None)
            .timeout(ping_timeout)
            .retry(RetryPolicy::Never);
        let Ok(waiter) = self.start_call(call, ctx) else {
            return;
        };
        self.ping_in_flight = true;
        ctx.spawn(waiter.wait().into_actor(self).map(move |result, act, ctx| {
            act.ping_in_flight = false;
            match result {
                Ok(_) => {
                    tracing::debug!(server = %act.name, "liveness ping answered; connection kept")
                }
                Err(e) if e.kind() == ErrorKind::Timeout => {
                    if act.live.as_ref().is_some_and(|l| l.seq == seq) {
                        let error = Error::connection(
                            &act.name,
                            format!("{check} got no answer within {ping_timeout:?}"),
                        );
                        act.connection_lost(error, ctx);
                    }
                }
                // An error answer means the server is alive; other errors mean the connection
                // is already being dealt with.
                Err(_) => {}
            }
        }));
    }
}
