//! When to ask a task (the Tasks extension) how it is doing next. Pure: the randomness is
//! passed in.
//!
//! The server says how often it wants to be asked (`pollIntervalMs`, which may change from one
//! answer to the next); we never ask sooner than that, so that a thousand tasks on one server
//! cost it no more requests than it asked for. Two bounds hold whatever it says: a floor, so
//! that a server asking for `0` does not get a busy loop, and a ceiling, so that a server
//! asking for an hour still hears from us (a task's end is only ever learnt by asking, or
//! from a notification that may never come). A little jitter is added, never taken away, so
//! that tasks started together do not stay in lockstep.

use std::time::Duration;

use rand::Rng;

/// The interval when the server names none.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// How long to wait before the next `tasks/get`: the server's `asked` interval (or
/// [`DEFAULT_INTERVAL`]) within `[floor, ceiling]`, plus up to a tenth of it at random.
pub fn next_poll_in(
    asked: Option<Duration>,
    floor: Duration,
    ceiling: Duration,
    rng: &mut impl Rng,
) -> Duration {
    let ceiling = ceiling.max(floor);
    let base = asked.unwrap_or(DEFAULT_INTERVAL).clamp(floor, ceiling);
    let spread = u64::try_from((base / 10).as_millis()).unwrap_or(u64::MAX);
    let jitter = if spread == 0 {
        0
    } else {
        rng.random_range(0..=spread)
    };
    base.saturating_add(Duration::from_millis(jitter))
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;

    const FLOOR: Duration = Duration::from_millis(100);
    const CEILING: Duration = Duration::from_secs(60);

    #[test]
    fn the_servers_interval_is_kept_and_only_ever_lengthened() {
        let mut rng = StdRng::seed_from_u64(7);
        let asked = Duration::from_millis(500);
        for _ in 0..1000 {
            let wait = next_poll_in(Some(asked), FLOOR, CEILING, &mut rng);
            assert!(wait >= asked && wait <= asked + asked / 10, "{wait:?}");
        }
    }

    #[test]
    fn the_bounds_hold_whatever_the_server_asks() {
        let mut rng = StdRng::seed_from_u64(7);
        let zero = next_poll_in(Some(Duration::ZERO), FLOOR, CEILING, &mut rng);
        assert!(zero >= FLOOR && zero <= FLOOR + FLOOR / 10, "{zero:?}");
        let hour = next_poll_in(Some(Duration::from_secs(3600)), FLOOR, CEILING, &mut rng);
        assert!(
            hour >= CEILING && hour <= CEILING + CEILING / 10,
            "{hour:?}"
        );
        let unsaid = next_poll_in(None, FLOOR, CEILING, &mut rng);
        assert!(unsaid >= DEFAULT_INTERVAL, "{unsaid:?}");
        // A ceiling set below the floor does not panic: the floor wins.
        let odd = next_poll_in(None, CEILING, FLOOR, &mut rng);
        assert!(odd >= CEILING, "{odd:?}");
    }
}
