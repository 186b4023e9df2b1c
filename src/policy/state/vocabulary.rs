//! What the connection state machine and the actor say to each other: the [`ServerState`] it
//! reports, the [`Event`]s it is fed, the [`Action`]s it asks for, and the [`MachinePolicy`]
//! (the settings it decides by).
//!
//! Its own room so that the transitions in `machine` read as one piece: the actor, status
//! queries and subscribers know these types, and none of them needs to know how they are
//! decided.

use std::time::{Duration, Instant};

use crate::config::Settings;
use crate::error::Error;
use crate::policy::backoff::Backoff;

/// Where a server's connection is, as status queries and events report it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerState {
    /// Starting up. `attempt` is 0 for the first try and counts retries after it, up to `max`.
    Connecting {
        /// Retry number (0: the first try).
        attempt: u32,
        /// Retries allowed (`max_connect_retries`).
        max: u32,
    },
    /// Connected and initialized: calls are sent at once.
    Ready,
    /// A Ready connection broke and is being re-established.
    Reconnecting {
        /// Reconnect attempt in this outage (1: the immediate one).
        attempt: u32,
        /// When the next attempt starts, if one is waiting for its backoff timer.
        retry_at: Option<Instant>,
    },
    /// Gave up for now: calls fail at once (`unavailable`). Unless retrying cannot help (see
    /// [`Error::retry_can_help`]) or revival is off (the `revive` setting), the server is
    /// revived in the background, one attempt at `revive_at`, then on the reconnect backoff; a
    /// `Reconnect` message starts it up again at once either way.
    Failed {
        /// The last connection error.
        error: Error,
        /// When the next background revival attempt starts (a time in the past while that
        /// attempt runs). `None`: none will; the server waits for `Reconnect`.
        revive_at: Option<Instant>,
    },
    /// Shut down for good.
    Stopped,
}

impl ServerState {
    /// A short name: `connecting`, `ready`, `reconnecting`, `failed` or `stopped`.
    pub fn name(&self) -> &'static str {
        match self {
            ServerState::Connecting { .. } => "connecting",
            ServerState::Ready => "ready",
            ServerState::Reconnecting { .. } => "reconnecting",
            ServerState::Failed { .. } => "failed",
            ServerState::Stopped => "stopped",
        }
    }

    /// Whether calls are sent at once.
    pub fn is_ready(&self) -> bool {
        matches!(self, ServerState::Ready)
    }
}

/// Something that happened to the connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Begin: make the first connection attempt.
    Start,
    /// The current attempt connected and completed the handshake.
    Connected,
    /// The current attempt failed.
    ConnectFailed(Error),
    /// A Ready connection broke.
    ConnectionLost(Error),
    /// A backoff or revival timer armed by [`Action::ScheduleRetry`] fired.
    RetryTimer {
        /// The token the timer was armed with.
        token: u64,
    },
    /// The application asked for a reconnect (starts a Failed server up again at once).
    Reconnect,
    /// Shut down.
    Stop,
}

/// Something the actor must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Start a connection attempt (spawn the transport and run the handshake).
    Connect,
    /// Arm a timer that delivers [`Event::RetryTimer`] with this token after `after`.
    ScheduleRetry {
        /// Delay.
        after: Duration,
        /// Token to hand back; older tokens are stale.
        token: u64,
    },
    /// Close the current connection, if any.
    Disconnect,
    /// The connection is Ready: send the calls that were waiting.
    FlushWaiting,
    /// Answer every waiting call with an error: the server is Failed or Stopped.
    FailWaiting,
    /// Tell subscribers and the log about the new state.
    Announce {
        /// A sentence for people, e.g. `Reconnecting to MCP server (attempt 1/3)…`.
        message: String,
        /// Log at WARN (retries, losses) rather than INFO.
        warn: bool,
    },
}

/// The parts of [`Settings`] the machine needs.
#[derive(Debug, Clone, PartialEq)]
pub struct MachinePolicy {
    /// Retries after the first failed start-up attempt.
    pub max_connect_retries: u32,
    /// Delays between start-up retries.
    pub startup_backoff: Backoff,
    /// Delays between reconnect attempts (the first one is immediate).
    pub reconnect_backoff: Backoff,
    /// Reconnect attempts per outage before giving up; `None`: never give up.
    pub max_reconnect_attempts: Option<u32>,
    /// Delays between the background revival attempts of a Failed server; `None`: a Failed
    /// server waits for `Reconnect`.
    pub revive: Option<Backoff>,
    /// How long Ready must last before the reconnect backoff starts over.
    pub stability_window: Duration,
    /// The first reconnect after a stable connection waits a random time below this (when
    /// the reconnect backoff has jitter), so that the clients of a restarted server do not all
    /// come back in the same instant. Zero: at once.
    pub first_reconnect_spread: Duration,
}

impl MachinePolicy {
    /// The policy for one server. An HTTP server is shared by many clients, so by default its
    /// first reconnect is spread over a second; a stdio server is ours alone and comes back at
    /// once.
    pub fn new(s: &Settings, transport: &crate::config::Transport) -> Self {
        let spread_by_default = match transport {
            crate::config::Transport::Stdio(_) => Duration::ZERO,
            crate::config::Transport::Http(_) => Duration::from_secs(1),
        };
        MachinePolicy {
            max_connect_retries: s.max_connect_retries,
            startup_backoff: s.startup_backoff,
            reconnect_backoff: s.reconnect_backoff,
            max_reconnect_attempts: s.max_reconnect_attempts,
            revive: s.revive.then(|| revival_backoff(s)),
            stability_window: s.stability_window,
            // Never longer than any later wait (a set spread that is, is refused by validation).
            first_reconnect_spread: s
                .first_reconnect_spread
                .unwrap_or(spread_by_default)
                .min(s.reconnect_backoff.max()),
        }
    }
}

/// Revival continues where the start-up retries stopped: from `startup_backoff`'s cap, then on
/// the reconnect backoff (its multiplier and jitter) up to `reconnect_backoff`'s cap, never
/// faster than either's first delay.
fn revival_backoff(s: &Settings) -> Backoff {
    let start = s.startup_backoff.max().max(s.reconnect_backoff.initial());
    s.reconnect_backoff.starting_at(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServerConfig;

    #[test]
    fn the_policy_follows_the_settings() {
        let http = ServerConfig::http("h", "http://x/mcp");
        let p = MachinePolicy::new(&Settings::default(), http.transport());
        let revive = p.revive.expect("revival is on by default");
        assert_eq!(revive.initial(), Duration::from_secs(2), "the start-up cap");
        assert_eq!(revive.max(), Duration::from_secs(30), "the reconnect cap");
        assert_eq!(p.first_reconnect_spread, Duration::from_secs(1));

        let s = Settings {
            revive: false,
            reconnect_backoff: Backoff::new(Duration::from_millis(100), Duration::from_millis(500)),
            ..Settings::default()
        };
        let p = MachinePolicy::new(&s, http.transport());
        assert_eq!(p.revive, None);
        assert_eq!(p.first_reconnect_spread, Duration::from_millis(500));
    }
}
