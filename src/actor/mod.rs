//! The actors: [`Supervisor`](supervisor::Supervisor) and [`ServerActor`](server::ServerActor),
//! the messages they take, and what they report. What a server's calls and connection do is
//! decided in the session core ([`crate::session`]); the actors carry it out.

pub(crate) mod connect;
pub(crate) mod fanout;
pub(crate) mod gone;
pub mod messages;
pub(crate) mod reply;
pub(crate) mod routing;
pub mod server;
pub(crate) mod server_requests;
pub mod supervisor;

/// What a status query reports about one server.
pub mod status {
    pub use crate::session::status::{Counters, ServerStatus};
}
