//! Decisions, pure: time and randomness are passed in, so every rule is testable exactly.
//!
//! - [`backoff`]: exponential backoff with jitter.
//! - [`retry`]: may an in-flight call be re-sent after a reconnect?
//! - [`state`]: the connection state machine.
//! - [`task_poll`]: when to ask a task how it is doing.
//! - `deadline`: instants ahead of now without overflow, for every `Instant + Duration` here.

pub mod backoff;
pub(crate) mod deadline;
pub mod retry;
pub mod state;
pub mod task_poll;
