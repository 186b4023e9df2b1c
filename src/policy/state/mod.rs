//! THE connection state machine: every decision about connecting, retrying, giving up and
//! reconnecting is made here, and nowhere else.
//!
//! It does no IO and reads no clock: [`ConnectionMachine::on`] takes an [`Event`], the current
//! time and a random source, updates the state and returns the [`Action`]s the actor must carry
//! out (spawn a connection, arm a timer, answer waiting calls, tell subscribers). Tests drive it
//! event by event with a fake clock and a seeded RNG.
//!
//! ```text
//!            Start                    Connected
//!   ──────► Connecting{attempt,max} ───────────► Ready ◄─────────────┐
//!              │  ConnectFailed:                   │ ConnectionLost   │ Connected
//!              │  retry after 500 ms, 1 s, 2 s     ▼                  │
//!              │  (attempt N/max), then            Reconnecting{attempt, retry_at}
//!              ▼                                   │  at once, then 100 ms, 200 ms, ... 30 s
//!           Failed{error, revive_at} ◄─────────────┘  (only if max_reconnect_attempts is set)
//!              │ RetryTimer: a revival attempt (2 s, 4 s, ... 30 s); Connected: Ready
//!              │ Reconnect: start-up again
//!   any ──Stop──► Stopped
//! ```
//!
//! An error that retrying cannot fix ([`Error::retry_can_help`](crate::Error::retry_can_help)
//! is false: refused credentials, no protocol version in common, a program that cannot be
//! started, invalid settings) goes straight to `Failed` from any attempt, with no revival
//! (`revive_at: None`). Time spent Ready pays the reconnect backoff down in proportion to the
//! stability window, so a crash loop backs off and a server with short, rare outages does not.
//!
//! The vocabulary the machine and the actor share ([`ServerState`], [`Event`], [`Action`],
//! [`MachinePolicy`]) is in `vocabulary`; the transitions, which are the whole connect, retry,
//! give-up and reconnect logic, are in `machine`, with their tests.

mod machine;
mod vocabulary;

pub use machine::ConnectionMachine;
pub use vocabulary::{Action, Event, MachinePolicy, ServerState};
