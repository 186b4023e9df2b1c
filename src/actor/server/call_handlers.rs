//! The handlers of the call messages: a raw [`Call`], every typed call ([`CallTool`],
//! [`ListTools`], ...), and the [`Expire`] a caller's future sends when its deadline passes.
//! A typed call is a `Call` on the way in and a parsed output on the way out; one macro makes
//! them all, so that every call takes exactly the same path through the call table.

use actix::prelude::*;
use serde_json::Value;

use super::ServerActor;
use crate::actor::call_table::{AfterExpire, Situation};
use crate::actor::calls::Expire;
use crate::actor::messages::*;
use crate::error::Error;

impl Handler<Call> for ServerActor {
    type Result = ResponseFuture<Result<Value, Error>>;

    fn handle(&mut self, call: Call, ctx: &mut Context<Self>) -> Self::Result {
        match self.start_call(call, ctx) {
            Ok(waiter) => Box::pin(waiter.wait()),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }
}

impl Handler<Expire> for ServerActor {
    type Result = ();

    fn handle(&mut self, Expire { id }: Expire, ctx: &mut Context<Self>) {
        let situation = Situation::of(&self.machine, self.last_error.as_ref());
        let wire = self.live.as_ref().map(|l| &l.wire);
        if self.calls.expire(id, &situation, wire) == AfterExpire::CheckLiveness {
            self.check_liveness(ctx);
        }
    }
}

/// Parses a raw result into a typed call's output.
fn parse_output<T: TypedCall>(
    server: String,
    method: &'static str,
    raw: Result<Value, Error>,
) -> Result<T::Output, Error> {
    serde_json::from_value(raw?)
        .map_err(|e| Error::invalid_response(&server, method, e.to_string()))
}

macro_rules! typed_handlers {
    ($($t:ident),*) => {$(
        impl Handler<$t> for ServerActor {
            type Result = ResponseFuture<Result<<$t as TypedCall>::Output, Error>>;

            fn handle(&mut self, msg: $t, ctx: &mut Context<Self>) -> Self::Result {
                let call: Call = msg.into();
                let server = call.server.clone();
                let waiter = self.start_call(call, ctx);
                Box::pin(async move {
                    let raw = match waiter {
                        Ok(w) => w.wait().await,
                        Err(e) => Err(e),
                    };
                    parse_output::<$t>(server, stringify!($t), raw)
                })
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
