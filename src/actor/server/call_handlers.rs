//! The handlers of the call messages: a raw [`Call`] and every typed call ([`CallTool`],
//! [`ListTools`], ...), sent to the server's actor or forwarded by the
//! [`Supervisor`](crate::Supervisor) ([`Routed`]). A typed call is a `Call` on the way in and a
//! parsed output on the way out; one macro makes them all, so that every call takes exactly
//! the same path through the call table. No handler spawns a future: the caller's reply
//! channel goes into the call's entry (see [`reply`](crate::actor::reply)), and the call's
//! deadline into the table's one deadline structure.

use actix::prelude::*;
use serde_json::Value;

use super::ServerActor;
use crate::actor::messages::*;
use crate::actor::reply::{self, CallResponse, Routed, Slot};

impl Handler<Call> for ServerActor {
    type Result = CallResponse<Value>;

    fn handle(&mut self, call: Call, ctx: &mut Context<Self>) -> Self::Result {
        let slot = Slot::empty(reply::raw, "Call");
        self.begin_call(call, slot.clone(), ctx);
        CallResponse(slot)
    }
}

impl Handler<Routed<Call, Value>> for ServerActor {
    type Result = ();

    fn handle(&mut self, routed: Routed<Call, Value>, ctx: &mut Context<Self>) {
        // A `do_send` through the supervisor has no channel: the call runs all the same.
        let (call, tx) = routed.into_parts();
        self.begin_call(call, Slot::to_any(tx, reply::raw, "Call"), ctx);
    }
}

macro_rules! typed_handlers {
    ($($t:ident),*) => {$(
        impl Handler<$t> for ServerActor {
            type Result = CallResponse<<$t as TypedCall>::Output>;

            fn handle(&mut self, msg: $t, ctx: &mut Context<Self>) -> Self::Result {
                let slot = Slot::empty(reply::typed, stringify!($t));
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
                let slot = Slot::to_any(tx, reply::typed, stringify!($t));
                self.begin_call(msg.into(), slot, ctx);
            }
        }
    )*};
}

typed_handlers!(
    CallTool,
    ListTools,
    ListResources,
    ReadResource,
    ListPrompts,
    GetPrompt,
    Ping
);
