//! The liveness rule after a timeout. A slow call must not cost a healthy connection, so a
//! timeout does not mark the connection broken: it starts one short check, a `ping` (asked as
//! `server/discover` in the 2026-07-28 revision, which has none), and only a check that sees no
//! sign of life within `ping_timeout` breaks the connection.
//!
//! A sign of life is anything the server sends while the check runs, not only the ping's own
//! answer: a server busy with the calls the check is judging, whose answers or progress keep
//! coming, is alive even if the ping waits behind them (in a full pipe, or a full connection
//! pool). The ping itself never waits for room: it goes before the calls waiting for the
//! connection and is not counted against `max_in_flight`.
//!
//! This is the one place the session decides a connection is broken without the transport
//! telling it so.

/// The check under way, if any.
#[derive(Debug, Default)]
pub(crate) struct Liveness {
    check: Option<Check>,
}

#[derive(Debug)]
struct Check {
    /// The connection it judges.
    seq: u64,
    /// The server sent something since it started.
    life_seen: bool,
}

/// What the check concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The server answered, or showed it is alive: the connection stays.
    Alive,
    /// Nothing came from the server: the connection is broken.
    Dead,
    /// The check is moot: its connection is gone already.
    Moot,
}

impl Liveness {
    /// Whether a check may start (one at a time).
    pub fn idle(&self) -> bool {
        self.check.is_none()
    }

    /// A check of connection `seq` started.
    pub fn started(&mut self, seq: u64) {
        self.check = Some(Check {
            seq,
            life_seen: false,
        });
    }

    /// The server of connection `seq` sent something.
    pub fn saw_life(&mut self, seq: u64) {
        if let Some(check) = self.check.as_mut().filter(|c| c.seq == seq) {
            check.life_seen = true;
        }
    }

    /// The check's ping ended: `answered` (a result or an error answer: the server is there),
    /// or `timed_out`, or neither (its connection broke first). `live` is the connection now.
    pub fn finished(&mut self, answered: bool, timed_out: bool, live: Option<u64>) -> Verdict {
        let Some(check) = self.check.take() else {
            return Verdict::Moot;
        };
        if live != Some(check.seq) {
            return Verdict::Moot;
        }
        if answered || check.life_seen {
            Verdict::Alive
        } else if timed_out {
            Verdict::Dead
        } else {
            Verdict::Moot
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_silence_until_the_ping_times_out_is_death() {
        let mut l = Liveness::default();
        l.started(1);
        assert!(!l.idle());
        assert_eq!(l.finished(false, true, Some(1)), Verdict::Dead);
        assert!(l.idle());

        l.started(1);
        l.saw_life(1);
        assert_eq!(
            l.finished(false, true, Some(1)),
            Verdict::Alive,
            "other answers came"
        );

        l.started(1);
        l.saw_life(2); // another connection's news
        assert_eq!(l.finished(false, true, Some(1)), Verdict::Dead);

        l.started(1);
        assert_eq!(l.finished(true, false, Some(1)), Verdict::Alive);

        l.started(1);
        assert_eq!(
            l.finished(false, true, Some(2)),
            Verdict::Moot,
            "reconnected meanwhile"
        );
    }
}
