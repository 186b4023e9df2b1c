//! Points in time ahead of a given one, computed without overflow: `Instant + Duration` panics
//! when the sum does not fit, and a duration from a configuration or a server (a timeout of
//! `Duration::MAX`, a backoff capped at it) must not panic an actor. Pure, like the rest of
//! [`policy`](super).
//!
//! Every deadline in the crate is computed here. An enormous duration saturates at a point a
//! century away: it never comes, and it is still far from the end of `Instant`'s range, so
//! timers that add a little to it themselves (tokio rounds deadlines up) cannot overflow either.

use std::time::{Duration, Instant};

/// Far enough to never arrive, near enough that adding it to a monotonic clock cannot overflow.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// `now + after`, or a century from `now` if `after` is longer than that.
pub(crate) fn saturating_add(now: Instant, after: Duration) -> Instant {
    now.checked_add(after.min(FAR_FUTURE))
        .or_else(|| now.checked_add(FAR_FUTURE))
        .unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_sums_are_exact_and_enormous_ones_saturate() {
        let now = Instant::now();
        assert_eq!(
            saturating_add(now, Duration::from_secs(2)),
            now + Duration::from_secs(2)
        );
        let far = saturating_add(now, Duration::MAX);
        assert!(far > now + Duration::from_secs(50 * 365 * 24 * 3600));
        assert_eq!(
            saturating_add(now, Duration::MAX),
            far,
            "one far future, stable"
        );
        // Room is left after it for timers that round a deadline up.
        assert!(far.checked_add(Duration::from_secs(3600)).is_some());
    }
}
