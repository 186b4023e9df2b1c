//! Exponential backoff with jitter. Pure: the randomness is passed in, so tests can pin exact
//! sequences with a seeded RNG.

use std::time::Duration;

use rand::Rng;

/// An exponential backoff schedule: `initial`, then multiplied by `multiplier` after every
/// attempt, capped at `max`, with up to `jitter` (a fraction) of random delay added on top.
///
/// Jitter spreads reconnecting clients apart so that a restarted server is not hit by all of them
/// in the same millisecond. A jittered delay never exceeds `max`: a delay that would overshoot is
/// reflected back below the cap (`max - overshoot`), so clients that all sit at the cap still
/// spread out instead of lining up on it.
///
/// ```
/// use mcp_supervisor::Backoff;
/// use std::time::Duration;
///
/// let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(30)).jitter(0.0);
/// let mut rng = rand::rng();
/// let delays: Vec<_> = (0..4).map(|n| b.delay(n, &mut rng)).collect();
/// assert_eq!(delays, [100, 200, 400, 800].map(Duration::from_millis));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    /// The cap as asked for, which may be below `initial` (then `max` is `initial`): kept so
    /// that validation can point out what is probably a mix-up of the two.
    requested_max: Duration,
    multiplier: f64,
    jitter: f64,
}

impl Backoff {
    /// A doubling backoff from `initial` up to `max`, with the default jitter of up to +50 %.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max: max.max(initial),
            requested_max: max,
            multiplier: 2.0,
            jitter: 0.5,
        }
    }

    /// The factor applied after each attempt (at least 1.0; non-finite values mean 2.0).
    pub fn multiplier(mut self, multiplier: f64) -> Self {
        self.multiplier = if multiplier.is_finite() {
            multiplier.max(1.0)
        } else {
            2.0
        };
        self
    }

    /// The largest random fraction added to each delay: 0.0 turns jitter off, 0.5 adds up to
    /// 50 %. Clamped to `0.0..=1.0`.
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = if jitter.is_finite() {
            jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self
    }

    /// The largest random fraction added to each delay (0.0: no jitter).
    pub fn jitter_fraction(&self) -> f64 {
        self.jitter
    }

    /// The first delay, before jitter.
    pub fn initial(&self) -> Duration {
        self.initial
    }

    /// The cap.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// The cap as it was asked for, when it is below the initial delay (and so was raised to
    /// it): probably the two were mixed up.
    pub fn cap_below_initial(&self) -> Option<Duration> {
        (self.requested_max < self.initial).then_some(self.requested_max)
    }

    /// The same schedule (multiplier, jitter, cap), starting at `initial` instead; the cap is
    /// raised to `initial` if it is below.
    pub fn starting_at(self, initial: Duration) -> Self {
        Backoff {
            initial,
            max: self.max.max(initial),
            requested_max: self.max,
            ..self
        }
    }

    /// The delay before retry number `n` (0-based: `n = 0` is the first retry).
    pub fn delay<R: Rng + ?Sized>(&self, n: u32, rng: &mut R) -> Duration {
        let base = self.base_delay(n);
        if self.jitter == 0.0 {
            return base;
        }
        let extra = base.mul_f64(self.jitter * rng.random::<f64>());
        let delay = base.saturating_add(extra);
        if delay > self.max {
            // Reflect the overshoot below the cap, so delays at the cap keep their spread.
            self.max.saturating_sub(delay - self.max)
        } else {
            delay
        }
    }

    /// The delay before retry `n` without jitter.
    pub fn base_delay(&self, n: u32) -> Duration {
        // Powers past 2^63 overflow f64's exact range long after the cap is reached; clamp the
        // exponent so `powi` stays finite.
        let factor = self.multiplier.powi(n.min(1023) as i32);
        let secs = self.initial.as_secs_f64() * factor;
        if !secs.is_finite() || secs >= self.max.as_secs_f64() {
            self.max
        } else {
            Duration::from_secs_f64(secs)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn doubles_up_to_the_cap_without_jitter() {
        let b = Backoff::new(ms(100), Duration::from_secs(30)).jitter(0.0);
        let mut rng = StdRng::seed_from_u64(1);
        let got: Vec<u64> = (0..12)
            .map(|n| b.delay(n, &mut rng).as_millis() as u64)
            .collect();
        assert_eq!(
            got,
            [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]
        );
        assert_eq!(b.delay(u32::MAX, &mut rng), Duration::from_secs(30));
    }

    #[test]
    fn startup_schedule_is_500ms_1s_2s() {
        let b = Backoff::new(ms(500), Duration::from_secs(2)).jitter(0.0);
        let mut rng = StdRng::seed_from_u64(1);
        let got: Vec<_> = (0..3).map(|n| b.delay(n, &mut rng)).collect();
        assert_eq!(got, [ms(500), ms(1000), ms(2000)]);
    }

    #[test]
    fn jitter_is_exact_for_a_seed_and_within_bounds() {
        let b = Backoff::new(ms(100), Duration::from_secs(30));
        let seq = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..5).map(|n| b.delay(n, &mut rng)).collect::<Vec<_>>()
        };
        // The same seed gives the same sequence: reproducible in tests.
        assert_eq!(seq(42), seq(42));
        assert_ne!(seq(42), seq(43));
        for (n, d) in seq(7).into_iter().enumerate() {
            let base = b.base_delay(n as u32);
            assert!(
                d >= base && d <= base.mul_f64(1.5),
                "{n}: {d:?} vs {base:?}"
            );
        }
    }

    #[test]
    fn jitter_at_the_cap_stays_below_it_and_spreads() {
        let b = Backoff::new(Duration::from_secs(30), Duration::from_secs(30));
        let mut rng = StdRng::seed_from_u64(3);
        let delays: Vec<_> = (0..50).map(|_| b.delay(10, &mut rng)).collect();
        assert!(delays.iter().all(|d| *d <= Duration::from_secs(30)));
        assert!(delays.iter().all(|d| *d >= Duration::from_secs(15)));
        let distinct: std::collections::HashSet<_> = delays.iter().collect();
        assert!(distinct.len() > 40, "jitter at the cap must still spread");
    }

    #[test]
    fn odd_parameters_are_tamed() {
        let b = Backoff::new(ms(10), ms(5))
            .multiplier(f64::NAN)
            .jitter(f64::INFINITY);
        let mut rng = StdRng::seed_from_u64(0);
        // max below initial is raised to initial; NaN multiplier means doubling; inf jitter off.
        assert_eq!(b.max(), ms(10));
        assert_eq!(b.delay(3, &mut rng), ms(10));
        assert_eq!(b.cap_below_initial(), Some(ms(5)));
        assert_eq!(Backoff::new(ms(5), ms(10)).cap_below_initial(), None);
    }

    #[test]
    fn the_largest_delays_saturate_instead_of_panicking() {
        let b = Backoff::new(Duration::MAX, Duration::MAX);
        let mut rng = StdRng::seed_from_u64(0);
        for n in [0, 1, u32::MAX] {
            assert_eq!(b.delay(n, &mut rng), Duration::MAX);
        }
    }

    #[test]
    fn starting_at_keeps_the_schedule_from_a_new_first_delay() {
        let b = Backoff::new(ms(100), Duration::from_secs(30)).jitter(0.0);
        let revival = b.starting_at(Duration::from_secs(2));
        let mut rng = StdRng::seed_from_u64(1);
        let got: Vec<u64> = (0..6)
            .map(|n| revival.delay(n, &mut rng).as_millis() as u64)
            .collect();
        assert_eq!(got, [2000, 4000, 8000, 16000, 30000, 30000]);
        // A start above the cap raises the cap: never faster than the start.
        let slow = b.starting_at(Duration::from_secs(60));
        assert_eq!(slow.delay(3, &mut rng), Duration::from_secs(60));
    }
}
