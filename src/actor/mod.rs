//! The actors: [`Supervisor`](supervisor::Supervisor) and [`ServerActor`](server::ServerActor),
//! the messages they take, and what they report.

pub(crate) mod call_table;
pub(crate) mod calls;
pub(crate) mod connect;
pub(crate) mod fanout;
pub(crate) mod gone;
pub mod messages;
pub(crate) mod reply;
pub(crate) mod request;
pub mod server;
pub(crate) mod server_requests;
pub mod status;
pub mod supervisor;
pub(crate) mod wire;
