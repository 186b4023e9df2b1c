//! The [`Supervisor`](crate::Supervisor)'s forwarding of calls: it neither waits for an answer
//! nor spawns anything per call. A call goes to its server's actor with the caller's reply
//! channel ([`Routed`]), which the server's actor answers; if the server's actor is gone before
//! it takes the call, the channel is answered `Stopped`.

use actix::dev::{MessageResponse, OneshotSender};
use actix::prelude::*;

use crate::actor::server::ServerActor;
use crate::actor::supervisor::Supervisor;
use crate::error::Error;

/// What the supervisor answers a call message with: nothing of its own. The call goes to its
/// server's actor with the caller's reply channel ([`Routed`]), which the server's actor
/// answers; the supervisor neither waits nor spawns anything per call, so calls through it are
/// batched as calls sent to the server's actor directly are.
pub struct Forward<M, T> {
    msg: M,
    server: String,
    addr: Result<Addr<ServerActor>, Error>,
    _output: std::marker::PhantomData<fn() -> T>,
}

impl<M, T> Forward<M, T> {
    /// `msg` for `server`, whose actor is `addr` (or the error to answer).
    pub(crate) fn new(msg: M, server: String, addr: Result<Addr<ServerActor>, Error>) -> Self {
        Forward {
            msg,
            server,
            addr,
            _output: std::marker::PhantomData,
        }
    }
}

impl<M, T> MessageResponse<Supervisor, M> for Forward<M, T>
where
    M: Message<Result = Result<T, Error>> + Send + 'static,
    T: Send + 'static,
    ServerActor: Handler<Routed<M, T>>,
{
    fn handle(self, _: &mut Context<Supervisor>, tx: Option<OneshotSender<M::Result>>) {
        match self.addr {
            // A dead actor drops the message, whose reply channel then answers `Stopped`.
            Ok(addr) => addr.do_send(Routed::new(self.msg, self.server, tx)),
            Err(e) => {
                if let Some(tx) = tx {
                    let _ = tx.send(Err(e));
                }
            }
        }
    }
}

/// A call message forwarded by the [`Supervisor`](crate::Supervisor) to the server's actor,
/// with its caller's channel (of the message's `Result<T, Error>`): the supervisor does not
/// wait for the answer, so it forwards the next call at once and the server's actor gets them
/// in one batch (one write for many).
pub(crate) struct Routed<M, T> {
    msg: M,
    reply: ReplyGuard<T>,
}

impl<M: 'static, T: 'static> Message for Routed<M, T> {
    type Result = ();
}

impl<M, T> Routed<M, T> {
    /// `msg` for `server`, to be answered on `reply`.
    pub fn new(msg: M, server: String, reply: Option<OneshotSender<Result<T, Error>>>) -> Self {
        Routed {
            msg,
            reply: ReplyGuard { reply, server },
        }
    }

    /// The call and its caller's channel, taken by the actor that takes the call (`None` for
    /// a `do_send`: nobody waits).
    pub fn into_parts(self) -> (M, Option<OneshotSender<Result<T, Error>>>) {
        let Routed { msg, mut reply } = self;
        (msg, reply.reply.take())
    }
}

/// A routed call's channel until the server's actor takes it.
struct ReplyGuard<T> {
    reply: Option<OneshotSender<Result<T, Error>>>,
    server: String,
}

impl<T> Drop for ReplyGuard<T> {
    /// Not taken: the server's actor was gone (or went) before it handled the call, which so
    /// never reached the server.
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            let server = std::mem::take(&mut self.server);
            let _ = reply.send(Err(Error::Stopped { server }));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use tokio::sync::oneshot;

    use super::*;

    #[test]
    fn a_routed_call_its_actor_never_took_is_answered_stopped() {
        let (tx, mut rx) = oneshot::channel::<Result<Value, Error>>();
        let routed = Routed::new(crate::Call::new("s", "ping", None), "s".into(), Some(tx));
        drop(routed); // what a dead actor's mailbox does with it
        match rx.try_recv().unwrap() {
            Err(Error::Stopped { server }) => assert_eq!(server, "s"),
            other => panic!("expected stopped, got {other:?}"),
        }
        // Taken by the actor: the guard says nothing more.
        let (tx, mut rx) = oneshot::channel::<Result<Value, Error>>();
        let routed = Routed::new(crate::Call::new("s", "ping", None), "s".into(), Some(tx));
        let (_call, reply) = routed.into_parts();
        assert!(reply.is_some());
        assert!(rx.try_recv().is_err());
    }
}
