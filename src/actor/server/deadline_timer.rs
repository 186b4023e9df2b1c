//! The one timer of a server's call deadlines: set for the earliest deadline in the call table,
//! and on firing answers every call that is due and is set for the next.
//!
//! It is a task of its own that sends the actor [`DeadlinesDue`], not a future of the actor's
//! (`run_later`): actix polls every future an actor holds each time the actor wakes, which for
//! a timer that almost never fires would be one timer poll per call.

use std::time::Instant;

use actix::prelude::*;

use super::ServerActor;
use crate::actor::call_table::{AfterExpire, Situation};

/// The timer's task; dropping it (a timer replaced, the actor gone) cancels it.
pub(super) struct DeadlineTimer(tokio::task::JoinHandle<()>);

impl Drop for DeadlineTimer {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The timer set for this deadline fired.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct DeadlinesDue(Instant);

impl ServerActor {
    /// Keeps the one deadline timer set for the earliest deadline in the call table.
    pub(super) fn arm_deadlines(&mut self, ctx: &mut Context<Self>) {
        let Some(next) = self.calls.next_deadline() else {
            return; // A timer still set fires, finds nothing, and is not set again.
        };
        if self
            .deadline_timer
            .as_ref()
            .is_some_and(|(at, _)| *at <= next)
        {
            return;
        }
        let after = next.saturating_duration_since(Instant::now());
        let actor = ctx.address().downgrade();
        let task = actix::spawn(async move {
            tokio::time::sleep(after).await;
            if let Some(actor) = actor.upgrade() {
                actor.do_send(DeadlinesDue(next));
            }
        });
        // The timer it replaces, if any, is cancelled as it is dropped.
        self.deadline_timer = Some((next, DeadlineTimer(task)));
    }
}

impl Handler<DeadlinesDue> for ServerActor {
    type Result = ();

    /// Every call that is due is answered (and cancelled on the server if it was written), and
    /// the timer is set for the next deadline. The timer's own time counts as passed, whatever
    /// the clock says (the timer's clock may be a paused one, in tests). A replaced timer's
    /// late news changes nothing but answering what is due.
    fn handle(&mut self, DeadlinesDue(due): DeadlinesDue, ctx: &mut Context<Self>) {
        if self
            .deadline_timer
            .as_ref()
            .is_some_and(|(at, _)| *at == due)
        {
            self.deadline_timer = None;
        }
        let situation = Situation::of(&self.machine, self.last_error.as_ref());
        let wire = self.live.as_ref().map(|l| &l.wire);
        let now = Instant::now().max(due);
        if self.calls.expire_due(now, &situation, wire) == AfterExpire::CheckLiveness {
            self.check_liveness(ctx);
        }
        self.arm_deadlines(ctx);
    }
}
