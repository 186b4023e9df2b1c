//! How the supervisor hears that a [`ServerActor`](super::server::ServerActor) is gone: a
//! notice the actor carries and that sends [`ActorGone`] when it is dropped.
//!
//! Its own room because it is the one contract between the two actors that must hold even when
//! the server's actor panics: a `Drop` runs during a panic's unwinding, where `stopped()` does
//! not.

use actix::prelude::*;

/// Sent to the supervisor when a `ServerActor` is dropped for any reason (a panic included).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct ActorGone {
    pub name: String,
    pub epoch: u64,
    /// Stopped by a `Shutdown` message, not by a crash: not to be replaced.
    pub deliberate: bool,
}

/// Sends [`ActorGone`] when dropped: a `Drop` runs during a panic's unwinding too, where
/// `stopped()` does not.
pub(crate) struct GoneNotice {
    pub supervisor: Recipient<ActorGone>,
    pub name: String,
    pub epoch: u64,
    pub deliberate: bool,
}

impl Drop for GoneNotice {
    fn drop(&mut self) {
        self.supervisor.do_send(ActorGone {
            name: std::mem::take(&mut self.name),
            epoch: self.epoch,
            deliberate: self.deliberate,
        });
    }
}
