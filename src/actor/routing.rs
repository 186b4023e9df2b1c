//! The [`Supervisor`](crate::Supervisor)'s forwarding of calls: it neither waits for an answer
//! nor spawns anything per call. A call goes to its server's actor with the caller's reply
//! channel ([`Routed`]), which the server's actor answers. A call its actor never took never
//! reached the server, and is answered as the session's one decision for such a call says
//! (`session::outcome`): `unavailable` (safe to make again) if the actor crashed — a new one is
//! on its way — and `stopped` if it was stopped. That the actor crashed is known in two ways:
//! the call is dropped with the actor's mailbox while the actor's panic unwinds, or the
//! supervisor finds the actor already gone before it has heard so (its notice is queued behind
//! the call: the actor died unexpectedly, or was shut down through its own address a moment
//! ago; either way the call is safe to make again).

use actix::dev::{MessageResponse, OneshotSender};
use actix::prelude::*;

use crate::actor::server::ServerActor;
use crate::actor::supervisor::Supervisor;
use crate::error::Error;
use crate::policy::retry::RetryPolicy;
use crate::session::outcome::{decide, Facts, Fate, Why};

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
        let error = match self.addr {
            // A dead actor would drop the message unanswered: its crash is not heard yet.
            Ok(addr) if !addr.connected() => never_taken(self.server, true),
            // A dead actor drops the message, whose reply channel then answers (`ReplyGuard`).
            Ok(addr) => return addr.do_send(Routed::new(self.msg, self.server, tx)),
            Err(e) => e,
        };
        if let Some(tx) = tx {
            let _ = tx.send(Err(error));
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
    /// never reached the server. Dropped while a panic unwinds, with the mailbox of the actor
    /// that panicked: the actor crashed.
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            let server = std::mem::take(&mut self.server);
            let _ = reply.send(Err(never_taken(server, std::thread::panicking())));
        }
    }
}

/// The error for a call of `server` that its actor never took, the actor having `crashed` or
/// been stopped: the session's decision for a call never sent (whose method and policy play
/// no part in it).
fn never_taken(server: String, crashed: bool) -> Error {
    let call = Facts {
        method: "",
        retry: RetryPolicy::Never,
        sends: 0,
        hints: None,
        trusted: false,
    };
    match decide(&server, &call, Why::ActorGone { panicked: crashed }) {
        Fate::Answer(error) => error,
        // Not for a call never sent; should the rules change, it is still safe to make again.
        Fate::Resend => Error::Unavailable {
            server,
            reason: "the server's actor went before it took the call".into(),
            attempts: 0,
            stderr_tail: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use tokio::sync::oneshot;

    use super::*;

    /// Issue 22, item 12 (found by the soak): a call dropped with the mailbox of an actor
    /// whose panic unwinds never reached the server, and a new actor is on its way:
    /// `unavailable`, not `stopped`, which says the server was stopped.
    #[test]
    fn a_routed_call_dropped_by_a_crashing_actor_is_answered_unavailable() {
        let (tx, mut rx) = oneshot::channel::<Result<Value, Error>>();
        let routed = Routed::new(crate::Call::new("s", "ping", None), "s".into(), Some(tx));
        let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _mailbox = routed;
            panic!("the actor's handler panics");
        }));
        assert!(crashed.is_err());
        match rx.try_recv().unwrap() {
            Err(e @ Error::Unavailable { .. }) => {
                assert_eq!(e.kind(), crate::ErrorKind::Unavailable);
                assert!(e.to_string().contains("crashed"), "{e}");
            }
            other => panic!("expected unavailable, got {other:?}"),
        }
    }

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
