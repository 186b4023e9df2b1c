//! Decisions, pure: time and randomness are passed in, so every rule is testable exactly.

pub mod backoff;
pub mod retry;
pub mod state;
