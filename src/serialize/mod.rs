//! The serde forms of what operators look at (feature `serde`): [`ServerStatus`],
//! [`ServerState`], [`Counters`], [`ServerEvent`], [`ErrorKind`] and [`Error`] (through
//! [`ErrorView`]), for status endpoints, dashboards and logs.
//!
//! The forms, chosen so that a reader in any language needs no clock of ours:
//!
//! - **durations** are whole milliseconds in fields whose names end in `_ms`
//!   (`in_state_for_ms`, `retry_after_ms`), saturating at `u64::MAX`;
//! - **instants** become durations measured when the value is serialized: how long ago
//!   (`in_state_for_ms`) or how long from now (`retry_in_ms`, `revive_in_ms`; 0 once passed);
//! - **kinds and names** are the stable short strings of [`ErrorKind::code`],
//!   [`ServerState::name`] and the era (`legacy`, `modern`);
//! - **enums** are internally tagged: a state is `{"name": "reconnecting", "attempt": 1,
//!   "retry_in_ms": 200}`, an event `{"type": "state_changed", "server": ..., ...}`;
//! - an **error** is `{"code", "message", "server", ...}` ([`ErrorView`]): the headline
//!   without the stderr tail, which comes in `stderr_tail`, line by line. Server text in it is
//!   escaped and bounded, as in the error itself.
//!
//! `Deserialize` exists where the form holds everything the value does: [`Counters`],
//! [`ErrorKind`] and [`ErrorView`]. A state, an event or a status holds instants and rmcp
//! types that do not come back from JSON as they were; read those as JSON.
//!
//! ```
//! use mcp_supervisor::{Counters, ErrorKind, ServerState};
//! let state = serde_json::to_value(ServerState::Connecting { attempt: 1, max: 3 }).unwrap();
//! assert_eq!(state, serde_json::json!({"name": "connecting", "attempt": 1, "max": 3}));
//! assert_eq!(serde_json::to_value(ErrorKind::OutcomeUnknown).unwrap(), "outcome_unknown");
//! let counters: Counters = serde_json::from_str(r#"{"calls_ok": 2}"#).unwrap();
//! assert_eq!(counters.calls_ok, 2);
//! ```
//!
//! [`ServerStatus`]: crate::ServerStatus
//! [`ServerState`]: crate::ServerState
//! [`Counters`]: crate::Counters
//! [`ServerEvent`]: crate::ServerEvent
//! [`ErrorKind`]: crate::ErrorKind
//! [`ErrorKind::code`]: crate::ErrorKind::code
//! [`ServerState::name`]: crate::ServerState::name
//! [`Error`]: crate::Error

use std::time::{Duration, Instant};

mod error;
mod event;
mod state;
mod status;

pub use error::ErrorView;

/// Whole milliseconds, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Milliseconds from now until `at`, 0 once it has passed.
fn millis_until(at: Instant) -> u64 {
    millis(at.saturating_duration_since(Instant::now()))
}
