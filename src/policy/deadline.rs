//! Points in time ahead of a given one, computed without overflow: `Instant + Duration` panics
//! when the sum does not fit, and a duration from a configuration or a server (a timeout of
//! `Duration::MAX`, a backoff capped at it) must not panic an actor. Pure, like the rest of
//! [`policy`](super).

use std::time::{Duration, Instant};

/// `now + after`, or the latest instant the platform can represent on the way there: so far
/// ahead that it never comes, which is what an enormous duration means.
pub(crate) fn saturating_add(now: Instant, after: Duration) -> Instant {
    if let Some(at) = now.checked_add(after) {
        return at;
    }
    // Walk as far as the platform allows: add while it fits, halve the step when it does not.
    // At most ~2 x 96 steps (a Duration has 64 bits of seconds and 30 of nanoseconds).
    let mut at = now;
    let mut step = after;
    while !step.is_zero() {
        match at.checked_add(step) {
            Some(next) => at = next,
            None => step /= 2,
        }
    }
    at
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
        assert!(far > now + Duration::from_secs(100 * 365 * 24 * 3600));
        // Nothing is left to add: it is the latest representable instant.
        assert!(far.checked_add(Duration::from_nanos(1)).is_none());
        assert_eq!(saturating_add(far, Duration::MAX), far);
    }
}
