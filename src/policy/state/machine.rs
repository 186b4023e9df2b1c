//! [`ConnectionMachine`]: every transition of the connection state machine (see the diagram in
//! [`policy::state`](super)), so that the whole connect, retry, give-up, revive and reconnect
//! logic reads in this one file.

use std::time::{Duration, Instant};

use rand::Rng;

use super::{Action, Event, MachinePolicy, ServerState};
use crate::error::Error;
use crate::policy::deadline::saturating_add;

/// The connection state machine of one server.
#[derive(Debug)]
pub struct ConnectionMachine {
    policy: MachinePolicy,
    state: ServerState,
    since: Instant,
    /// A connection attempt is under way.
    connecting: bool,
    /// When the current Ready period began.
    ready_since: Option<Instant>,
    /// Attempts made before giving up, while Failed.
    failed_after: u32,
    /// Background revival attempts made since the server became Failed.
    revivals: u32,
    /// How far the reconnect backoff has grown: reconnect attempts in recent outages. Time
    /// spent Ready pays it down in proportion to the stability window (all of it after a full
    /// window), so a crash loop backs off instead of spinning, and a server that stays up a
    /// while between short outages keeps short waits.
    streak: u32,
    /// Identifies the one backoff timer that is current.
    token: u64,
}

impl ConnectionMachine {
    /// A machine that has not started yet (state `Connecting{attempt: 0}`).
    pub fn new(policy: MachinePolicy, now: Instant) -> Self {
        let max = policy.max_connect_retries;
        ConnectionMachine {
            policy,
            state: ServerState::Connecting { attempt: 0, max },
            since: now,
            connecting: false,
            ready_since: None,
            failed_after: 0,
            revivals: 0,
            streak: 0,
            token: 0,
        }
    }

    /// The current state.
    pub fn state(&self) -> &ServerState {
        &self.state
    }

    /// When the current state was entered.
    pub fn since(&self) -> Instant {
        self.since
    }

    /// Whether a connection attempt is under way.
    pub fn is_connecting(&self) -> bool {
        self.connecting
    }

    /// Connection attempts made in the current start-up or outage (while Failed: before giving
    /// up), for error reports.
    pub fn attempts(&self) -> u32 {
        match self.state {
            ServerState::Connecting { attempt, .. } => attempt + 1,
            ServerState::Reconnecting { attempt, .. } => attempt,
            ServerState::Failed { .. } => self.failed_after,
            _ => 0,
        }
    }

    /// Background revival attempts made since the server became Failed (0 when it is not).
    pub fn revivals(&self) -> u32 {
        match self.state {
            ServerState::Failed { .. } => self.revivals,
            _ => 0,
        }
    }

    /// Feeds one event; returns what to do, in order.
    pub fn on<R: Rng + ?Sized>(&mut self, event: Event, now: Instant, rng: &mut R) -> Vec<Action> {
        if self.state == ServerState::Stopped {
            return Vec::new();
        }
        match event {
            Event::Start => self.start_attempt(),
            Event::Connected => self.on_connected(now),
            Event::ConnectFailed(error) => self.on_connect_failed(error, now, rng),
            // The same connection would be refused the same way (its authorization is gone for
            // good): no reconnect to hammer the server with, straight to Failed.
            Event::ConnectionLost(error) if !error.retry_can_help() => {
                self.on_lost_for_good(error, now, rng)
            }
            Event::ConnectionLost(error) => self.on_lost(&error.to_string(), now, rng, false),
            Event::RetryTimer { token } => self.on_timer(token),
            Event::Reconnect => self.on_reconnect_requested(now, rng),
            Event::Stop => {
                self.token += 1;
                self.connecting = false;
                self.enter(ServerState::Stopped, now);
                vec![
                    Action::Disconnect,
                    Action::FailWaiting,
                    Action::Announce {
                        message: "Stopped".into(),
                        warn: false,
                    },
                ]
            }
        }
    }

    fn on_timer(&mut self, token: u64) -> Vec<Action> {
        if token != self.token || self.connecting {
            return Vec::new();
        }
        match &mut self.state {
            ServerState::Connecting { .. } => {}
            ServerState::Reconnecting { retry_at, .. } => *retry_at = None,
            // The revival time stays shown (now in the past) while its attempt runs.
            ServerState::Failed {
                revive_at: Some(_), ..
            } => self.revivals = self.revivals.saturating_add(1),
            _ => return Vec::new(),
        }
        self.start_attempt()
    }

    fn enter(&mut self, state: ServerState, now: Instant) {
        self.state = state;
        self.since = now;
    }

    fn start_attempt(&mut self) -> Vec<Action> {
        if self.connecting {
            return Vec::new();
        }
        self.connecting = true;
        vec![Action::Connect]
    }

    fn on_connected(&mut self, now: Instant) -> Vec<Action> {
        if !self.connecting {
            return Vec::new();
        }
        self.connecting = false;
        let message = match self.state {
            ServerState::Reconnecting { attempt, .. } => {
                format!("Reconnected (after {attempt} attempt{})", plural(attempt))
            }
            ServerState::Failed { .. } => {
                // The reconnect streak is kept: a server that was Failed after a crash loop
                // and dies again at once goes on backing off (Ready time pays it down).
                format!(
                    "Revived in the background (revival attempt {})",
                    self.revivals
                )
            }
            _ => "Connected".to_string(),
        };
        self.ready_since = Some(now);
        self.enter(ServerState::Ready, now);
        vec![
            Action::Announce {
                message,
                warn: false,
            },
            Action::FlushWaiting,
        ]
    }

    fn on_connect_failed<R: Rng + ?Sized>(
        &mut self,
        error: Error,
        now: Instant,
        rng: &mut R,
    ) -> Vec<Action> {
        if !self.connecting {
            return Vec::new();
        }
        self.connecting = false;
        if let ServerState::Failed { .. } = self.state {
            return self.on_revival_failed(error, now, rng);
        }
        if !error.retry_can_help() {
            // The same attempt would fail the same way (refused credentials, no protocol
            // version in common, no program to run): retrying would only hammer the server.
            let attempts = self.attempts();
            return self.give_up(error, attempts, now, rng);
        }
        match self.state.clone() {
            ServerState::Connecting { attempt, max } if attempt < max => {
                let backoff = self.policy.startup_backoff.delay(attempt, rng);
                let after = self.wait_after(&error, backoff);
                self.token += 1;
                self.enter(
                    ServerState::Connecting {
                        attempt: attempt + 1,
                        max,
                    },
                    now,
                );
                vec![
                    Action::Announce {
                        message: format!(
                            "Reconnecting to MCP server (attempt {}/{max})…",
                            attempt + 1
                        ),
                        warn: true,
                    },
                    Action::ScheduleRetry {
                        after,
                        token: self.token,
                    },
                ]
            }
            ServerState::Connecting { attempt, .. } => self.give_up(error, attempt + 1, now, rng),
            ServerState::Reconnecting { attempt, .. } => {
                if self
                    .policy
                    .max_reconnect_attempts
                    .is_some_and(|max| attempt >= max)
                {
                    return self.give_up(error, attempt, now, rng);
                }
                let backoff = self.next_reconnect_delay(rng);
                let after = self.wait_after(&error, backoff);
                self.token += 1;
                self.enter(
                    ServerState::Reconnecting {
                        attempt: attempt + 1,
                        retry_at: Some(saturating_add(now, after)),
                    },
                    now,
                );
                vec![
                    Action::Announce {
                        message: format!(
                            "Reconnecting to MCP server (attempt {}{})… in {} ms",
                            attempt + 1,
                            self.of_max(),
                            after.as_millis()
                        ),
                        warn: true,
                    },
                    Action::ScheduleRetry {
                        after,
                        token: self.token,
                    },
                ]
            }
            _ => Vec::new(),
        }
    }

    /// `requested`: the application asked for it, so no spreading either.
    fn on_lost<R: Rng + ?Sized>(
        &mut self,
        reason: &str,
        now: Instant,
        rng: &mut R,
        requested: bool,
    ) -> Vec<Action> {
        if self.state != ServerState::Ready {
            return Vec::new();
        }
        let up = self
            .ready_since
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        self.streak = paid_down(self.streak, up, self.policy.stability_window);
        self.ready_since = None;
        let mut actions = vec![Action::Disconnect];
        // The first reconnect after a stable period is immediate (or spread, see
        // `first_reconnect_spread`); inside a crash loop the backoff goes on growing.
        let after = if self.streak == 0 {
            self.streak = 1;
            let spread = self.policy.first_reconnect_spread;
            if requested
                || spread.is_zero()
                || self.policy.reconnect_backoff.jitter_fraction() == 0.0
            {
                Duration::ZERO
            } else {
                spread.mul_f64(rng.random::<f64>())
            }
        } else {
            self.next_reconnect_delay(rng)
        };
        self.token += 1;
        let immediate = after.is_zero();
        self.enter(
            ServerState::Reconnecting {
                attempt: 1,
                retry_at: (!immediate).then(|| saturating_add(now, after)),
            },
            now,
        );
        actions.push(Action::Announce {
            message: if immediate {
                format!("Connection lost ({reason}); reconnecting now")
            } else {
                format!(
                    "Connection lost ({reason}); reconnecting in {} ms",
                    after.as_millis()
                )
            },
            warn: true,
        });
        if immediate {
            actions.extend(self.start_attempt());
        } else {
            actions.push(Action::ScheduleRetry {
                after,
                token: self.token,
            });
        }
        actions
    }

    fn on_reconnect_requested<R: Rng + ?Sized>(
        &mut self,
        now: Instant,
        rng: &mut R,
    ) -> Vec<Action> {
        match self.state {
            ServerState::Failed { .. } => {
                // Start-up again; a revival timer armed before is stale now, and a revival
                // attempt under way counts as the first attempt.
                self.token += 1;
                self.streak = 0;
                self.revivals = 0;
                let max = self.policy.max_connect_retries;
                self.enter(ServerState::Connecting { attempt: 0, max }, now);
                let mut actions = vec![Action::Announce {
                    message: "Reconnect requested; connecting".into(),
                    warn: false,
                }];
                actions.extend(self.start_attempt());
                actions
            }
            ServerState::Ready => {
                // Asked for explicitly: no backoff.
                self.streak = 0;
                self.ready_since = None;
                self.on_lost("reconnect requested", now, rng, true)
            }
            _ => {
                // Waiting for a backoff timer: skip the wait (the old timer is now stale).
                if self.connecting {
                    return Vec::new();
                }
                self.token += 1;
                if let ServerState::Reconnecting { retry_at, .. } = &mut self.state {
                    *retry_at = None;
                }
                self.start_attempt()
            }
        }
    }

    /// How long to wait after a failed attempt, given the backoff's `delay`: the one place
    /// that decides it, for start-up retries, reconnects and revivals alike. A server that
    /// said how long to wait (HTTP 429/503 `Retry-After`, carried in `error`) is not asked
    /// again sooner, but only up to the reconnect backoff's cap: it cannot park us for good.
    fn wait_after(&self, error: &Error, delay: Duration) -> Duration {
        let asked = error
            .retry_after()
            .unwrap_or_default()
            .min(self.policy.reconnect_backoff.max());
        delay.max(asked)
    }

    fn next_reconnect_delay<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Duration {
        let after = self
            .policy
            .reconnect_backoff
            .delay(self.streak.saturating_sub(1), rng);
        self.streak = self.streak.saturating_add(1);
        after
    }

    fn of_max(&self) -> String {
        match self.policy.max_reconnect_attempts {
            Some(max) => format!("/{max}"),
            None => String::new(),
        }
    }

    /// The wait before the next revival of a Failed server after `error`, if there is to be
    /// one.
    fn revival_wait<R: Rng + ?Sized>(&self, error: &Error, rng: &mut R) -> Option<Duration> {
        let schedule = self.policy.revive.as_ref()?;
        if !error.retry_can_help() {
            return None;
        }
        Some(self.wait_after(error, schedule.delay(self.revivals, rng)))
    }

    /// A Ready connection was lost in a way a reconnect cannot mend (its authorization was
    /// refused for good): the server is Failed at once, waiting for `Reconnect`.
    fn on_lost_for_good<R: Rng + ?Sized>(
        &mut self,
        error: Error,
        now: Instant,
        rng: &mut R,
    ) -> Vec<Action> {
        if self.state != ServerState::Ready {
            return Vec::new();
        }
        self.ready_since = None;
        let lead = "Connection lost".to_owned();
        let mut actions = vec![Action::Disconnect];
        actions.extend(self.fail(error, 0, lead, now, rng));
        actions
    }

    fn give_up<R: Rng + ?Sized>(
        &mut self,
        error: Error,
        attempts: u32,
        now: Instant,
        rng: &mut R,
    ) -> Vec<Action> {
        let lead = format!("Failed after {attempts} attempt{}", plural(attempts));
        self.fail(error, attempts, lead, now, rng)
    }

    /// Enters Failed with `error` after `attempts`, announced as `lead: error`, with a
    /// revival scheduled if retrying can help.
    fn fail<R: Rng + ?Sized>(
        &mut self,
        error: Error,
        attempts: u32,
        lead: String,
        now: Instant,
        rng: &mut R,
    ) -> Vec<Action> {
        self.token += 1;
        self.failed_after = attempts;
        self.revivals = 0;
        let revive = self.revival_wait(&error, rng);
        let message = format!("{lead}: {error}{}", what_next(&error, revive));
        self.enter(
            ServerState::Failed {
                error,
                revive_at: revive.map(|after| saturating_add(now, after)),
            },
            now,
        );
        let mut actions = vec![
            Action::Announce {
                message,
                warn: true,
            },
            Action::FailWaiting,
        ];
        actions.extend(revive.map(|after| Action::ScheduleRetry {
            after,
            token: self.token,
        }));
        actions
    }

    /// A background revival attempt failed: the server stays Failed (since when it first
    /// failed), with the new error and the next revival time.
    fn on_revival_failed<R: Rng + ?Sized>(
        &mut self,
        error: Error,
        now: Instant,
        rng: &mut R,
    ) -> Vec<Action> {
        self.token += 1;
        let revive = self.revival_wait(&error, rng);
        let message = format!(
            "Revival attempt {} failed: {error}{}",
            self.revivals,
            what_next(&error, revive)
        );
        self.state = ServerState::Failed {
            error,
            revive_at: revive.map(|after| saturating_add(now, after)),
        };
        let mut actions = vec![Action::Announce {
            message,
            warn: true,
        }];
        actions.extend(revive.map(|after| Action::ScheduleRetry {
            after,
            token: self.token,
        }));
        actions
    }
}

/// What a Failed server does next, for its status message.
fn what_next(error: &Error, revive: Option<Duration>) -> String {
    match revive {
        Some(after) => format!("; reviving in {} ms", after.as_millis()),
        None if !error.retry_can_help() => {
            "; not retried, since retrying cannot help: waiting for Reconnect".to_string()
        }
        None => String::new(),
    }
}

/// The reconnect streak after `up` of Ready time: paid down in proportion to the stability
/// `window` (rounded up, so that a Ready period that ends within moments pays nothing), and
/// cleared by a full window.
fn paid_down(streak: u32, up: Duration, window: Duration) -> u32 {
    if up >= window {
        return 0;
    }
    let left = (window - up).as_nanos();
    let owed = (u128::from(streak) * left).div_ceil(window.as_nanos());
    u32::try_from(owed).unwrap_or(streak)
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::backoff::Backoff;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn policy(jitter: f64) -> MachinePolicy {
        MachinePolicy {
            max_connect_retries: 3,
            startup_backoff: Backoff::new(ms(500), Duration::from_secs(2)).jitter(jitter),
            reconnect_backoff: Backoff::new(ms(100), Duration::from_secs(30)).jitter(jitter),
            max_reconnect_attempts: None,
            revive: None,
            stability_window: Duration::from_secs(10),
            first_reconnect_spread: Duration::ZERO,
        }
    }

    fn err(msg: &str) -> Error {
        Error::connection("demo", msg)
    }

    /// Drives a machine with a fake clock that only moves when told.
    struct Harness {
        m: ConnectionMachine,
        now: Instant,
        rng: StdRng,
    }

    impl Harness {
        fn new(policy: MachinePolicy) -> Self {
            let now = Instant::now();
            Harness {
                m: ConnectionMachine::new(policy, now),
                now,
                rng: StdRng::seed_from_u64(7),
            }
        }
        fn on(&mut self, e: Event) -> Vec<Action> {
            self.m.on(e, self.now, &mut self.rng)
        }
        fn advance(&mut self, d: Duration) {
            self.now += d;
        }
        /// Fails the current attempt; returns the scheduled delay and fires its timer.
        fn fail_and_wait(&mut self) -> Option<Duration> {
            let actions = self.on(Event::ConnectFailed(err("refused")));
            let (after, token) = actions.iter().find_map(|a| match a {
                Action::ScheduleRetry { after, token } => Some((*after, *token)),
                _ => None,
            })?;
            self.advance(after);
            assert_eq!(self.on(Event::RetryTimer { token }), [Action::Connect]);
            Some(after)
        }
    }

    fn announced(actions: &[Action]) -> Vec<&str> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Announce { message, .. } => Some(message.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn startup_failing_twice_then_connecting() {
        let mut h = Harness::new(policy(0.0));
        assert_eq!(h.on(Event::Start), [Action::Connect]);
        let a = h.on(Event::ConnectFailed(err("exit 1")));
        assert_eq!(
            a,
            [
                Action::Announce {
                    message: "Reconnecting to MCP server (attempt 1/3)…".into(),
                    warn: true
                },
                Action::ScheduleRetry {
                    after: ms(500),
                    token: 1
                }
            ]
        );
        assert_eq!(h.m.state(), &ServerState::Connecting { attempt: 1, max: 3 });
        // A timer with a stale token does nothing.
        assert_eq!(h.on(Event::RetryTimer { token: 0 }), []);
        assert_eq!(h.on(Event::RetryTimer { token: 1 }), [Action::Connect]);
        let a = h.on(Event::ConnectFailed(err("exit 1")));
        assert_eq!(announced(&a), ["Reconnecting to MCP server (attempt 2/3)…"]);
        assert!(a.contains(&Action::ScheduleRetry {
            after: ms(1000),
            token: 2
        }));
        h.on(Event::RetryTimer { token: 2 });
        let a = h.on(Event::Connected);
        assert_eq!(
            a,
            [
                Action::Announce {
                    message: "Connected".into(),
                    warn: false
                },
                Action::FlushWaiting
            ]
        );
        assert!(h.m.state().is_ready());
    }

    #[test]
    fn startup_gives_up_after_max_retries() {
        let mut h = Harness::new(policy(0.0));
        h.on(Event::Start);
        let delays: Vec<_> = (0..3).filter_map(|_| h.fail_and_wait()).collect();
        assert_eq!(delays, [ms(500), ms(1000), ms(2000)]);
        let a = h.on(Event::ConnectFailed(err("last")));
        assert_eq!(
            announced(&a),
            ["Failed after 4 attempts: server `demo`: connection failed: last"]
        );
        assert_eq!(a.last(), Some(&Action::FailWaiting));
        assert_eq!(
            h.m.state(),
            &ServerState::Failed {
                error: err("last"),
                revive_at: None
            }
        );
        assert_eq!(h.m.attempts(), 4);
        // Nothing revives it but an explicit Reconnect, which starts over.
        assert_eq!(h.on(Event::RetryTimer { token: 3 }), []);
        let a = h.on(Event::Reconnect);
        assert!(a.ends_with(&[Action::Connect]));
        assert_eq!(h.m.state(), &ServerState::Connecting { attempt: 0, max: 3 });
    }

    fn ready(h: &mut Harness) {
        h.on(Event::Start);
        h.on(Event::Connected);
        assert!(h.m.state().is_ready());
    }

    #[test]
    fn reconnects_at_once_then_backs_off_to_the_cap() {
        let mut h = Harness::new(policy(0.0));
        ready(&mut h);
        h.advance(Duration::from_secs(60));
        let a = h.on(Event::ConnectionLost(err("EOF")));
        assert_eq!(a.first(), Some(&Action::Disconnect));
        assert_eq!(
            a.last(),
            Some(&Action::Connect),
            "first reconnect is immediate"
        );
        assert!(announced(&a)[0].contains("reconnecting now"));
        let delays: Vec<u64> = (0..12)
            .map(|_| h.fail_and_wait().unwrap().as_millis() as u64)
            .collect();
        assert_eq!(
            delays,
            [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]
        );
        assert_eq!(
            h.m.state(),
            &ServerState::Reconnecting {
                attempt: 13,
                retry_at: None
            }
        );
        let a = h.on(Event::Connected);
        assert_eq!(announced(&a), ["Reconnected (after 13 attempts)"]);
    }

    #[test]
    fn a_crash_loop_backs_off_instead_of_spinning() {
        let mut h = Harness::new(policy(0.0));
        ready(&mut h);
        let mut delays = Vec::new();
        for _ in 0..5 {
            // Crashes one second after every successful start: never stable.
            h.advance(Duration::from_secs(1));
            let a = h.on(Event::ConnectionLost(err("EOF")));
            let delay = a
                .iter()
                .find_map(|a| match a {
                    Action::ScheduleRetry { after, token } => Some((*after, *token)),
                    _ => None,
                })
                .map(|(after, token)| {
                    h.advance(after);
                    assert_eq!(h.on(Event::RetryTimer { token }), [Action::Connect]);
                    after
                })
                .unwrap_or(Duration::ZERO);
            delays.push(delay.as_millis() as u64);
            h.on(Event::Connected);
        }
        assert_eq!(delays, [0, 100, 200, 400, 800]);
        // Once a connection stays up for the stability window, the next loss is immediate again.
        h.advance(Duration::from_secs(10));
        let a = h.on(Event::ConnectionLost(err("EOF")));
        assert_eq!(a.last(), Some(&Action::Connect));
    }

    #[test]
    fn bounded_reconnects_end_in_failed() {
        let mut p = policy(0.0);
        p.max_reconnect_attempts = Some(2);
        let mut h = Harness::new(p);
        ready(&mut h);
        h.advance(Duration::from_secs(60));
        h.on(Event::ConnectionLost(err("EOF")));
        let a = h.on(Event::ConnectFailed(err("refused")));
        assert_eq!(
            announced(&a),
            ["Reconnecting to MCP server (attempt 2/2)… in 100 ms"]
        );
        let token = match a.last() {
            Some(Action::ScheduleRetry { token, .. }) => *token,
            other => panic!("{other:?}"),
        };
        h.on(Event::RetryTimer { token });
        let a = h.on(Event::ConnectFailed(err("refused")));
        assert_eq!(a.last(), Some(&Action::FailWaiting));
        assert!(matches!(h.m.state(), ServerState::Failed { .. }));
    }

    #[test]
    fn jittered_sequence_is_exact_for_a_seed() {
        let run = || {
            let mut h = Harness::new(policy(0.5));
            ready(&mut h);
            h.advance(Duration::from_secs(60));
            h.on(Event::ConnectionLost(err("EOF")));
            (0..6)
                .map(|_| h.fail_and_wait().unwrap().as_millis() as u64)
                .collect::<Vec<_>>()
        };
        let delays = run();
        assert_eq!(delays, run(), "the same seed gives the same delays");
        for (i, d) in delays.iter().enumerate() {
            let base = 100u64 << i;
            assert!(*d >= base && *d <= base * 3 / 2, "delay {i}: {d} ms");
        }
        assert_eq!(delays, JITTERED_SEED_7);
    }

    /// The delays `jittered_sequence_is_exact_for_a_seed` gets from `StdRng::seed_from_u64(7)`.
    const JITTERED_SEED_7: [u64; 6] = [101, 230, 428, 1017, 1817, 4721];

    #[test]
    fn manual_reconnect_skips_the_backoff_wait() {
        let mut h = Harness::new(policy(0.0));
        ready(&mut h);
        h.advance(Duration::from_secs(60));
        h.on(Event::ConnectionLost(err("EOF")));
        let a = h.on(Event::ConnectFailed(err("refused")));
        let stale = match a.last() {
            Some(Action::ScheduleRetry { token, .. }) => *token,
            other => panic!("{other:?}"),
        };
        assert_eq!(h.on(Event::Reconnect), [Action::Connect]);
        // The timer armed before is stale now.
        assert_eq!(h.on(Event::RetryTimer { token: stale }), []);
        // While connecting, another request changes nothing.
        assert_eq!(h.on(Event::Reconnect), []);
        h.on(Event::Connected);
        // From Ready, a requested reconnect drops the connection and reconnects at once.
        let a = h.on(Event::Reconnect);
        assert_eq!(a.first(), Some(&Action::Disconnect));
        assert_eq!(a.last(), Some(&Action::Connect));
    }

    #[test]
    fn a_shared_server_gets_its_first_reconnect_spread() {
        let mut p = policy(0.5);
        p.first_reconnect_spread = Duration::from_secs(1);
        let first_delays: Vec<Duration> = (0..20)
            .map(|seed| {
                let mut h = Harness::new(p.clone());
                h.rng = StdRng::seed_from_u64(seed);
                ready(&mut h);
                h.advance(Duration::from_secs(60));
                let a = h.on(Event::ConnectionLost(err("session gone")));
                match a.last() {
                    Some(Action::ScheduleRetry { after, .. }) => *after,
                    Some(Action::Connect) => Duration::ZERO,
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        assert!(first_delays.iter().all(|d| *d < Duration::from_secs(1)));
        let distinct: std::collections::HashSet<_> = first_delays.iter().collect();
        assert!(
            distinct.len() >= 18,
            "spread, not lined up: {first_delays:?}"
        );

        // Without jitter, or when the application asks, the reconnect is immediate.
        let mut no_jitter = policy(0.0);
        no_jitter.first_reconnect_spread = Duration::from_secs(1);
        let mut h = Harness::new(no_jitter);
        ready(&mut h);
        h.advance(Duration::from_secs(60));
        assert_eq!(
            h.on(Event::ConnectionLost(err("x"))).last(),
            Some(&Action::Connect)
        );
        let mut h = Harness::new(p);
        ready(&mut h);
        h.advance(Duration::from_secs(60));
        assert_eq!(h.on(Event::Reconnect).last(), Some(&Action::Connect));
    }

    #[test]
    fn refused_credentials_are_not_retried() {
        let unauthorized = || Error::Unauthorized {
            server: "demo".into(),
            status: 401,
            message: "Bearer".into(),
        };
        let mut h = Harness::new(policy(0.0));
        h.on(Event::Start);
        let a = h.on(Event::ConnectFailed(unauthorized()));
        assert_eq!(a.last(), Some(&Action::FailWaiting));
        assert!(matches!(h.m.state(), ServerState::Failed { .. }));
        assert_eq!(h.m.attempts(), 1);

        // Nor during a reconnect.
        let mut h = Harness::new(policy(0.0));
        ready(&mut h);
        h.on(Event::ConnectionLost(err("EOF")));
        let a = h.on(Event::ConnectFailed(unauthorized()));
        assert!(!a.iter().any(|a| matches!(a, Action::ScheduleRetry { .. })));
        assert!(matches!(h.m.state(), ServerState::Failed { .. }));
    }

    #[test]
    fn a_connection_lost_for_good_goes_straight_to_failed() {
        // A refresh refused with invalid_grant: the authorization is gone, and a reconnect
        // would only ask for it again. Ready -> Failed, no Reconnecting in between.
        let required = Error::AuthorizationRequired {
            server: "demo".into(),
            reason: "the refresh token was refused (invalid_grant)".into(),
        };
        let mut h = Harness::new(policy(0.5));
        ready(&mut h);
        let a = h.on(Event::ConnectionLost(required.clone()));
        assert_eq!(a.first(), Some(&Action::Disconnect));
        assert!(
            !a.iter()
                .any(|a| matches!(a, Action::Connect | Action::ScheduleRetry { .. })),
            "{a:?}"
        );
        assert_eq!(announced(&a).len(), 1, "one state change: {a:?}");
        assert!(announced(&a)[0].starts_with("Connection lost: "), "{a:?}");
        match h.m.state() {
            ServerState::Failed { error, revive_at } => {
                assert_eq!(*error, required);
                assert_eq!(*revive_at, None, "it waits for Reconnect");
            }
            other => panic!("expected failed, got {other:?}"),
        }
        // Reconnect starts it up again.
        let a = h.on(Event::Reconnect);
        assert!(a.contains(&Action::Connect), "{a:?}");
    }

    #[test]
    fn stop_is_final_and_answers_waiting_calls() {
        let mut h = Harness::new(policy(0.0));
        h.on(Event::Start);
        let a = h.on(Event::Stop);
        assert_eq!(&a[..2], [Action::Disconnect, Action::FailWaiting]);
        assert_eq!(h.m.state(), &ServerState::Stopped);
        for e in [Event::Connected, Event::Reconnect, Event::Start] {
            assert_eq!(h.on(e), []);
        }
    }

    #[test]
    fn results_of_attempts_nobody_waits_for_are_ignored() {
        let mut h = Harness::new(policy(0.0));
        assert_eq!(h.on(Event::Connected), []);
        assert_eq!(h.on(Event::ConnectFailed(err("x"))), []);
        assert_eq!(h.on(Event::ConnectionLost(err("x"))), []);
    }

    /// The test policy with background revival on, as `Settings::default()` has it.
    fn reviving(jitter: f64) -> MachinePolicy {
        let mut p = policy(jitter);
        p.revive = Some(p.reconnect_backoff.starting_at(p.startup_backoff.max()));
        p
    }

    fn scheduled(actions: &[Action]) -> Option<(Duration, u64)> {
        actions.iter().find_map(|a| match a {
            Action::ScheduleRetry { after, token } => Some((*after, *token)),
            _ => None,
        })
    }

    fn revive_at(h: &Harness) -> Option<Instant> {
        match h.m.state() {
            ServerState::Failed { revive_at, .. } => *revive_at,
            other => panic!("not failed: {other:?}"),
        }
    }

    /// Defect 13: start-up as before, then Failed with the next revival time, revived in the
    /// background on the reconnect backoff from the start-up cap, one WARN per attempt.
    #[test]
    fn a_failed_server_is_revived_in_the_background() {
        let mut h = Harness::new(reviving(0.0));
        h.on(Event::Start);
        let mut messages = Vec::new();
        for _ in 0..3 {
            let a = h.on(Event::ConnectFailed(err("refused")));
            messages.extend(announced(&a).into_iter().map(str::to_owned));
            let (after, token) = scheduled(&a).unwrap();
            h.advance(after);
            h.on(Event::RetryTimer { token });
        }
        assert_eq!(
            messages,
            [1, 2, 3].map(|n| format!("Reconnecting to MCP server (attempt {n}/3)…"))
        );
        let failed_at = h.now;
        let a = h.on(Event::ConnectFailed(err("refused")));
        assert_eq!(
            announced(&a),
            ["Failed after 4 attempts: server `demo`: connection failed: refused; reviving in 2000 ms"]
        );
        assert!(a.contains(&Action::FailWaiting));
        let (after, mut token) = scheduled(&a).unwrap();
        assert_eq!(after, ms(2000), "continues from the start-up cap");
        assert_eq!(revive_at(&h), Some(failed_at + ms(2000)));
        assert_eq!(
            h.m.attempts(),
            4,
            "the attempts before giving up, as before"
        );

        let mut waits = vec![after];
        for n in 1..=6u32 {
            h.advance(*waits.last().unwrap());
            assert_eq!(h.on(Event::RetryTimer { token: token - 1 }), [], "stale");
            assert_eq!(h.on(Event::RetryTimer { token }), [Action::Connect]);
            assert!(
                revive_at(&h).is_some_and(|t| t <= h.now),
                "shown while it runs"
            );
            let a = h.on(Event::ConnectFailed(err("refused")));
            let warns: Vec<_> = a
                .iter()
                .filter(|a| matches!(a, Action::Announce { warn: true, .. }))
                .collect();
            assert_eq!(warns.len(), 1, "one WARN per attempt: {a:?}");
            let (after, next) = scheduled(&a).unwrap();
            assert_eq!(
                announced(&a),
                [format!(
                    "Revival attempt {n} failed: server `demo`: connection failed: refused; reviving in {} ms",
                    after.as_millis()
                )]
            );
            assert_eq!(revive_at(&h), Some(h.now + after));
            assert_eq!(h.m.since(), failed_at, "still the same Failed period");
            assert_eq!(h.m.revivals(), n);
            waits.push(after);
            token = next;
        }
        assert_eq!(
            waits,
            [2000, 4000, 8000, 16000, 30000, 30000, 30000].map(ms),
            "up to the reconnect backoff's cap"
        );
        h.advance(ms(30000));
        assert_eq!(h.on(Event::RetryTimer { token }), [Action::Connect]);
        let a = h.on(Event::Connected);
        assert_eq!(
            announced(&a),
            ["Revived in the background (revival attempt 7)"]
        );
        assert!(a.contains(&Action::FlushWaiting));
        assert!(h.m.state().is_ready());
        // Back for a while, then lost: an ordinary immediate reconnect.
        h.advance(Duration::from_secs(60));
        assert_eq!(
            h.on(Event::ConnectionLost(err("EOF"))).last(),
            Some(&Action::Connect)
        );
    }

    /// A server Failed after a crash loop (bounded reconnects) and revived keeps its
    /// reconnect streak: dying again at once still backs off, not an immediate respawn.
    #[test]
    fn a_revived_crash_loop_still_backs_off() {
        let mut p = reviving(0.0);
        p.max_reconnect_attempts = Some(1);
        let mut h = Harness::new(p);
        ready(&mut h);
        for _ in 0..3 {
            h.advance(ms(100));
            let a = h.on(Event::ConnectionLost(err("EOF")));
            if let Some((after, token)) = scheduled(&a) {
                h.advance(after);
                h.on(Event::RetryTimer { token });
            }
            h.on(Event::Connected);
        }
        h.advance(ms(100));
        let (after, token) = scheduled(&h.on(Event::ConnectionLost(err("EOF")))).unwrap();
        assert_eq!(after, ms(400));
        h.advance(after);
        h.on(Event::RetryTimer { token });
        let (after, token) = scheduled(&h.on(Event::ConnectFailed(err("refused")))).unwrap();
        assert!(revive_at(&h).is_some());
        h.advance(after);
        h.on(Event::RetryTimer { token });
        assert!(announced(&h.on(Event::Connected))[0].starts_with("Revived"));
        h.advance(ms(100));
        let a = h.on(Event::ConnectionLost(err("EOF")));
        assert_eq!(
            scheduled(&a).map(|(after, _)| after),
            Some(ms(800)),
            "the next step after 400 ms, not an immediate respawn"
        );
    }

    #[test]
    fn reconnect_starts_a_failed_server_up_again_and_stales_its_revival() {
        let mut h = Harness::new(reviving(0.5));
        let mut p = reviving(0.5);
        p.max_connect_retries = 0;
        h.m = ConnectionMachine::new(p, h.now);
        h.on(Event::Start);
        let a = h.on(Event::ConnectFailed(err("refused")));
        let (_, token) = scheduled(&a).unwrap();
        let a = h.on(Event::Reconnect);
        assert_eq!(a.last(), Some(&Action::Connect));
        assert_eq!(h.m.state(), &ServerState::Connecting { attempt: 0, max: 0 });
        assert_eq!(h.on(Event::RetryTimer { token }), []);
        // A revival attempt under way when Reconnect comes counts as the start-up's attempt.
        let a = h.on(Event::ConnectFailed(err("refused")));
        let (_, token) = scheduled(&a).unwrap();
        assert_eq!(h.on(Event::RetryTimer { token }), [Action::Connect]);
        assert_eq!(
            h.on(Event::Reconnect),
            [Action::Announce {
                message: "Reconnect requested; connecting".into(),
                warn: false
            }]
        );
        assert_eq!(announced(&h.on(Event::Connected)), ["Connected"]);
    }

    fn unsupported() -> Error {
        Error::UnsupportedProtocolVersion {
            server: "demo".into(),
            version: "2099-01-01".into(),
            supported: "2025-11-25".into(),
        }
    }

    fn missing_binary() -> Error {
        Error::Spawn {
            server: "demo".into(),
            command: "/no/such/server".into(),
            cwd: None,
            field: "command".into(),
            message: "No such file or directory (os error 2)".into(),
        }
    }

    /// Defects 9 and 13: what retrying cannot fix fails at once, without start-up retries, and
    /// is not revived: it waits for `Reconnect`.
    #[test]
    fn failures_retrying_cannot_fix_fail_at_once_and_are_not_revived() {
        for error in [unsupported(), missing_binary()] {
            let mut h = Harness::new(reviving(0.0));
            h.on(Event::Start);
            let a = h.on(Event::ConnectFailed(error.clone()));
            assert_eq!(scheduled(&a), None, "{error}");
            assert_eq!(
                announced(&a),
                [format!(
                    "Failed after 1 attempt: {error}; not retried, since retrying cannot help: waiting for Reconnect"
                )]
            );
            assert_eq!(
                h.m.state(),
                &ServerState::Failed {
                    error,
                    revive_at: None
                }
            );
            assert_eq!(h.m.attempts(), 1);
            assert_eq!(h.on(Event::Reconnect).last(), Some(&Action::Connect));
        }
        // A revival that meets such a failure stops reviving.
        let mut p = reviving(0.0);
        p.max_connect_retries = 0;
        let mut h = Harness::new(p);
        h.on(Event::Start);
        let (after, token) = scheduled(&h.on(Event::ConnectFailed(err("refused")))).unwrap();
        h.advance(after);
        h.on(Event::RetryTimer { token });
        let a = h.on(Event::ConnectFailed(unsupported()));
        assert_eq!(scheduled(&a), None);
        assert!(announced(&a)[0].starts_with("Revival attempt 1 failed"));
        assert_eq!(revive_at(&h), None);
    }

    /// Defect 14: Ready time pays the reconnect streak down in proportion to the stability
    /// window. A server that is up 5 s between 2 s outages keeps short waits (it used to climb
    /// to the 30 s cap); one that dies a second after every start still backs off.
    #[test]
    fn ready_time_pays_the_backoff_down() {
        let outages = |up: Duration| {
            let mut h = Harness::new(policy(0.0));
            ready(&mut h);
            let mut waits = Vec::new();
            for _ in 0..40 {
                h.advance(up);
                let lost_at = h.now;
                let mut a = h.on(Event::ConnectionLost(err("EOF")));
                loop {
                    if let Some((after, token)) = scheduled(&a) {
                        waits.push(after);
                        h.advance(after);
                        assert_eq!(h.on(Event::RetryTimer { token }), [Action::Connect]);
                    }
                    // The server is back two seconds after it went away.
                    if h.now.duration_since(lost_at) >= Duration::from_secs(2) {
                        h.on(Event::Connected);
                        break;
                    }
                    a = h.on(Event::ConnectFailed(err("refused")));
                }
            }
            waits
        };
        let up_5s = outages(Duration::from_secs(5));
        let longest = up_5s.iter().max().copied().unwrap_or_default();
        assert!(longest <= ms(1600), "longest wait {longest:?}: {up_5s:?}");
        let crash_loop = outages(Duration::from_secs(1));
        let longest = crash_loop.iter().max().copied().unwrap_or_default();
        assert!(longest >= Duration::from_secs(25), "{crash_loop:?}");
    }

    #[test]
    fn the_streak_is_paid_down_in_proportion_rounded_up() {
        let w = Duration::from_secs(10);
        assert_eq!(paid_down(8, Duration::from_secs(5), w), 4);
        assert_eq!(paid_down(3, Duration::from_secs(1), w), 3);
        assert_eq!(paid_down(10, Duration::from_secs(1), w), 9);
        assert_eq!(paid_down(u32::MAX, Duration::from_secs(5), w), 1 << 31);
        assert_eq!(paid_down(7, w, w), 0);
        assert_eq!(paid_down(7, ms(1), Duration::ZERO), 0);
    }

    /// Every `Instant + Duration` here saturates: enormous backoffs give far-off retry and
    /// revival times, not a panic of the actor.
    #[test]
    fn enormous_backoffs_saturate_instead_of_panicking() {
        let mut p = reviving(0.0);
        p.max_connect_retries = 0;
        p.reconnect_backoff = Backoff::new(Duration::MAX, Duration::MAX).jitter(0.0);
        p.revive = Some(p.reconnect_backoff);
        let mut h = Harness::new(p);
        ready(&mut h);
        h.advance(Duration::from_secs(60));
        h.on(Event::ConnectionLost(err("EOF")));
        let a = h.on(Event::ConnectFailed(err("refused")));
        assert_eq!(scheduled(&a).map(|(after, _)| after), Some(Duration::MAX));
        match h.m.state() {
            ServerState::Reconnecting {
                retry_at: Some(at), ..
            } => assert!(*at > h.now + Duration::from_secs(50 * 365 * 24 * 3600)),
            other => panic!("{other:?}"),
        }
        let mut h = Harness::new(h.m.policy.clone());
        h.on(Event::Start);
        h.on(Event::ConnectFailed(err("refused")));
        assert!(
            revive_at(&h).is_some_and(|t| t > h.now + Duration::from_secs(50 * 365 * 24 * 3600))
        );
    }
}
