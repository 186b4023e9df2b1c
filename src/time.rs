//! Instant arithmetic that cannot panic. `Instant + Duration` panics on overflow, and a timeout
//! of `Duration::MAX` is a legitimate way to say "no timeout": every deadline in the crate is
//! computed here, saturating at a point so far away that it never comes.

use std::time::{Duration, Instant};

/// Far enough to never arrive, near enough that adding it to a monotonic clock cannot overflow.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// `now + after`, or a time that never comes if that overflows.
pub(crate) fn deadline(now: Instant, after: Duration) -> Instant {
    now.checked_add(after.min(FAR_FUTURE))
        .or_else(|| now.checked_add(FAR_FUTURE))
        .unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturates_instead_of_panicking() {
        let now = Instant::now();
        assert_eq!(
            deadline(now, Duration::from_secs(3)),
            now + Duration::from_secs(3)
        );
        let far = deadline(now, Duration::MAX);
        assert!(far > now + Duration::from_secs(50 * 365 * 24 * 3600));
        assert_eq!(deadline(now, Duration::MAX), far, "one far future, stable");
    }
}
