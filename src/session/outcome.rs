//! The one decision about a call that will not get the server's answer on the connection it
//! was meant for: send it again, or answer it now — `outcome_unknown` if it may have run,
//! `unavailable` (or `stopped`) if it certainly did not, or if running it twice does no harm.
//!
//! Every path that ends a call without the server's answer comes here: a connection lost with
//! the call in flight, a server that went Failed or Stopped with calls waiting, a deadline that
//! passed before a re-send, an actor that went away. The rules (see docs/calls.md, "Call
//! semantics"):
//!
//! - a call never written to any connection had no effect: it may be made again
//!   (`unavailable`, or `stopped` when the server was stopped);
//! - a call in flight on a broken connection is re-sent once if [`after_disconnect`] allows it
//!   (safe by nature, or allowed by its [`RetryPolicy`]);
//! - otherwise a call that was written and is not safe by nature may have run:
//!   `outcome_unknown`, never a silent second run.

use crate::error::Error;
use crate::policy::retry::{
    after_disconnect, is_safe_by_nature, AfterDisconnect, RetryPolicy, ToolHints,
};
use crate::policy::state::ServerState;

/// What the decision needs to know of a call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts<'a> {
    pub method: &'a str,
    pub retry: RetryPolicy,
    /// Times it was written to a connection (a request the server refused unprocessed does
    /// not count).
    pub sends: u32,
    /// A `tools/call`'s cached annotations.
    pub hints: Option<ToolHints>,
    /// Whether the server's annotations may be believed.
    pub trusted: bool,
}

/// Why a call gets no answer from the server.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Why<'a> {
    /// The connection it was in flight on broke (or its one exchange did): `error` says how.
    Lost(&'a Error),
    /// It is answered now, without being sent (again): `reason` says why (the server is
    /// failed or stopped, its deadline passed), `situation` what the server is doing.
    NotSent {
        reason: &'a str,
        situation: &'a Situation<'a>,
    },
    /// Its actor went away; `panicked`: it crashed (and will be replaced).
    ActorGone { panicked: bool },
}

/// What the session knows of its server right now, for the errors of calls that cannot be
/// sent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Situation<'a> {
    pub state: &'a ServerState,
    /// Connection attempts of the state machine, for `Unavailable` errors.
    pub attempts: u32,
    /// The last connection error, quoted in "not sent" errors.
    pub last_error: Option<&'a Error>,
}

/// The decision.
#[derive(Debug)]
pub(crate) enum Fate {
    /// Send it again on the next connection (at most once, within its deadline).
    Resend,
    /// Answer it with this error now.
    Answer(Error),
}

/// Decides what happens to a call of `server` that gets no answer, and why.
pub(crate) fn decide(server: &str, call: &Facts, why: Why) -> Fate {
    let may_have_run = call.sends > 0 && !is_safe_by_nature(call.method);
    let server = server.to_owned();
    match why {
        Why::Lost(error) => {
            match after_disconnect(
                call.method,
                call.retry,
                call.sends,
                call.hints,
                call.trusted,
            ) {
                AfterDisconnect::Resend => Fate::Resend,
                AfterDisconnect::OutcomeUnknown => Fate::Answer(Error::OutcomeUnknown {
                    server,
                    method: call.method.to_owned(),
                    reason: error.without_stderr(),
                }),
                AfterDisconnect::Unavailable => Fate::Answer(Error::Unavailable {
                    server,
                    reason: format!(
                        "connection lost while the call was in flight: {}",
                        error.without_stderr()
                    ),
                    attempts: 0,
                    stderr_tail: error.stderr_tail().to_vec(),
                }),
            }
        }
        Why::NotSent { reason, .. } if may_have_run => Fate::Answer(Error::OutcomeUnknown {
            server,
            method: call.method.to_owned(),
            reason: format!("it was sent before, and {reason}"),
        }),
        Why::NotSent { situation, .. } => Fate::Answer(not_sent(server, situation)),
        Why::ActorGone { panicked } => {
            let who = if panicked {
                "the server's actor crashed"
            } else {
                "the server's actor stopped"
            };
            Fate::Answer(if may_have_run {
                Error::OutcomeUnknown {
                    server,
                    method: call.method.to_owned(),
                    reason: format!("{who} after the call was sent"),
                }
            } else if call.sends > 0 {
                Error::Unavailable {
                    server,
                    reason: format!("{who} after the call was sent; it is safe to make again"),
                    attempts: 0,
                    stderr_tail: Vec::new(),
                }
            } else if panicked {
                // Never reached the server; a crashed actor is replaced: try again.
                Error::Unavailable {
                    server,
                    reason: format!("{who} before the call was sent"),
                    attempts: 0,
                    stderr_tail: Vec::new(),
                }
            } else {
                Error::Stopped { server }
            })
        }
    }
}

/// The error for a call that never reached the server: safe to make again later.
fn not_sent(server: String, situation: &Situation) -> Error {
    match situation.state {
        ServerState::Stopped => Error::Stopped { server },
        state => {
            let reason = match situation.last_error {
                Some(e) => format!(
                    "the call was not sent: server is {} ({})",
                    state.name(),
                    e.without_stderr()
                ),
                None => format!("the call was not sent: server is {}", state.name()),
            };
            Error::Unavailable {
                server,
                reason,
                attempts: situation.attempts,
                stderr_tail: situation
                    .last_error
                    .map(|e| e.stderr_tail().to_vec())
                    .unwrap_or_default(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn facts(method: &str, sends: u32) -> Facts<'_> {
        Facts {
            method,
            retry: RetryPolicy::IfIdempotent,
            sends,
            hints: None,
            trusted: false,
        }
    }

    fn kind(fate: Fate) -> Option<ErrorKind> {
        match fate {
            Fate::Resend => None,
            Fate::Answer(e) => Some(e.kind()),
        }
    }

    const RECONNECTING: ServerState = ServerState::Reconnecting {
        attempt: 1,
        retry_at: None,
    };

    #[test]
    fn a_call_never_written_is_unavailable_whatever_it_is() {
        let situation = Situation {
            state: &RECONNECTING,
            attempts: 2,
            last_error: None,
        };
        let why = Why::NotSent {
            reason: "its deadline passed",
            situation: &situation,
        };
        for method in ["tools/call", "tools/list", "prompts/get"] {
            assert_eq!(
                kind(decide("s", &facts(method, 0), why)),
                Some(ErrorKind::Unavailable),
                "{method}"
            );
        }
        let stopped = Situation {
            state: &ServerState::Stopped,
            attempts: 0,
            last_error: None,
        };
        let why = Why::NotSent {
            reason: "the server was stopped",
            situation: &stopped,
        };
        assert_eq!(
            kind(decide("s", &facts("tools/call", 0), why)),
            Some(ErrorKind::Stopped)
        );
        assert_eq!(
            kind(decide("s", &facts("tools/call", 1), why)),
            Some(ErrorKind::OutcomeUnknown),
            "a tool call written before may have run"
        );
    }

    #[test]
    fn a_lost_call_is_resent_once_if_safe_and_otherwise_may_have_run() {
        let lost = Error::connection("s", "gone");
        assert_eq!(
            kind(decide("s", &facts("tools/list", 1), Why::Lost(&lost))),
            None
        );
        assert_eq!(
            kind(decide("s", &facts("tools/list", 2), Why::Lost(&lost))),
            Some(ErrorKind::Unavailable),
            "only once"
        );
        assert_eq!(
            kind(decide("s", &facts("tools/call", 1), Why::Lost(&lost))),
            Some(ErrorKind::OutcomeUnknown)
        );
        let always = Facts {
            retry: RetryPolicy::Always,
            ..facts("tools/call", 1)
        };
        assert_eq!(kind(decide("s", &always, Why::Lost(&lost))), None);
    }

    #[test]
    fn an_actor_that_went_away_answers_by_what_was_sent() {
        let gone = |method, sends, panicked| {
            kind(decide(
                "s",
                &facts(method, sends),
                Why::ActorGone { panicked },
            ))
        };
        assert_eq!(gone("tools/call", 0, false), Some(ErrorKind::Stopped));
        assert_eq!(gone("tools/call", 0, true), Some(ErrorKind::Unavailable));
        assert_eq!(gone("tools/list", 1, false), Some(ErrorKind::Unavailable));
        assert_eq!(gone("tools/call", 1, true), Some(ErrorKind::OutcomeUnknown));
    }
}
