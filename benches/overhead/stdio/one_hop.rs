//! The floor of an actor design: the raw client (see [`raw`](super::raw)) behind ONE actix
//! actor, each call an `Addr::send` whose handler makes the raw client's request and answers
//! with its response (a `ResponseFuture`, the ordinary way to answer later). Nothing else: no
//! deadlines, no retries, no typed results. Our runtime's figures are divided by these to see
//! what it costs beyond the one actor hop that its design asks for.

use std::rc::Rc;

use actix::prelude::*;

use super::raw::{check_echo, RawClient};
use crate::echo::RawResponse;
use crate::workload::{Load, Measured};

/// Latencies and throughput of the raw client behind one actor, under `load`.
pub(super) async fn run(load: &Load) -> Measured {
    let addr = OneHop {
        raw: Rc::new(RawClient::start().await),
    }
    .start();
    let call = move || {
        let sent = addr.send(Echo);
        async move {
            let response = sent.await.expect("the one-hop actor is alive");
            check_echo(&response);
        }
    };
    load.run(call).await
}

/// The actor: it owns the raw client.
struct OneHop {
    raw: Rc<RawClient>,
}

impl Actor for OneHop {
    type Context = Context<Self>;
}

/// One echo call.
struct Echo;

impl Message for Echo {
    type Result = RawResponse;
}

impl Handler<Echo> for OneHop {
    type Result = ResponseFuture<RawResponse>;

    fn handle(&mut self, _: Echo, _: &mut Context<Self>) -> Self::Result {
        let raw = self.raw.clone();
        Box::pin(async move { raw.echo_call().await })
    }
}
