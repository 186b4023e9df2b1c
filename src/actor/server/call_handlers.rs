//! The handlers of the call messages: a raw [`Call`] and every typed call ([`CallTool`],
//! [`ListTools`], ...), sent to the server's actor or forwarded by the
//! [`Supervisor`](crate::Supervisor) ([`Routed`]). A typed call is a `Call` on the way in and a
//! parsed output on the way out; one macro makes them all, so that every call takes exactly
//! the same path through the call table. No handler spawns a future: the caller's reply
//! channel goes into the call's entry (see [`reply`](crate::actor::reply)), and the call's
//! deadline into the table's one deadline structure, whose one timer is
//! [`deadline_timer`](super::deadline_timer)'s.

use std::rc::Rc;
use std::time::Instant;

use actix::prelude::*;
use serde_json::Value;

use super::ServerActor;
use crate::actor::call_table::Situation;
use crate::actor::messages::*;
use crate::actor::reply::Answer;
use crate::actor::reply::{self, CallResponse, Routed, Slot};
use crate::actor::request::CallRequest;

impl Handler<Call> for ServerActor {
    type Result = CallResponse<Value>;

    fn handle(&mut self, call: Call, ctx: &mut Context<Self>) -> Self::Result {
        let slot = Slot::empty(reply::raw, "Call");
        self.begin_call(call.into(), slot.clone(), ctx);
        CallResponse(slot)
    }
}

impl Handler<Routed<Call, Value>> for ServerActor {
    type Result = ();

    fn handle(&mut self, routed: Routed<Call, Value>, ctx: &mut Context<Self>) {
        // A `do_send` through the supervisor has no channel: the call runs all the same.
        let (call, tx) = routed.into_parts();
        self.begin_call(call.into(), Slot::to_any(tx, reply::raw, "Call"), ctx);
    }
}

impl ServerActor {
    /// Registers a caller's call, answered on `reply` (at once, if the table refuses it).
    pub(super) fn begin_call(
        &mut self,
        call: CallRequest,
        reply: Rc<dyn Answer>,
        ctx: &mut Context<Self>,
    ) {
        let situation = Situation::of(&self.machine, self.last_error.as_ref());
        if let Err(e) = self.calls.admit(&call, &situation) {
            return reply.answer(&self.name, Err(e));
        }
        let wire = self.live.as_ref().map(|l| &l.wire);
        let key = self
            .calls
            .open(call, reply, &situation, wire, Instant::now());
        // The timer fires no later than every deadline in the table: a call due after it needs
        // nothing (the usual case, calls sharing one timeout); only an earlier one moves it.
        let timer = self.deadline_timer.as_ref().map(|(at, _)| *at);
        let in_time = match (self.calls.deadline_of(key), timer) {
            (Some(deadline), Some(at)) => at <= deadline,
            (None, _) => true, // already answered
            (Some(_), None) => false,
        };
        if !in_time {
            self.arm_deadlines(ctx);
        }
    }
}

macro_rules! typed_handlers {
    ($($t:ident => $convert:path),*) => {$(
        impl Handler<$t> for ServerActor {
            type Result = CallResponse<<$t as TypedCall>::Output>;

            fn handle(&mut self, msg: $t, ctx: &mut Context<Self>) -> Self::Result {
                let slot = Slot::empty($convert, stringify!($t));
                self.begin_call(msg.into(), slot.clone(), ctx);
                CallResponse(slot)
            }
        }

        impl Handler<Routed<$t, <$t as TypedCall>::Output>> for ServerActor {
            type Result = ();

            fn handle(
                &mut self,
                routed: Routed<$t, <$t as TypedCall>::Output>,
                ctx: &mut Context<Self>,
            ) {
                let (msg, tx) = routed.into_parts();
                let slot = Slot::to_any(tx, $convert, stringify!($t));
                self.begin_call(msg.into(), slot, ctx);
            }
        }
    )*};
}

// A tool call's result, the one on every hot path, has a parser of its own (see
// `protocol::tool_result`); the others are parsed by rmcp's own `Deserialize`.
typed_handlers!(
    CallTool => reply::tool_result,
    ListTools => reply::typed,
    ListResources => reply::typed,
    ReadResource => reply::typed,
    ListPrompts => reply::typed,
    GetPrompt => reply::typed,
    Ping => reply::typed
);
