//! The one retry policy of kcp-rs: capped exponential backoff with jitter.
//!
//! Reconcile loops ask [`Backoff::delay`] how long to wait before attempt `n + 1` after `n`
//! consecutive failures. The delay doubles from `initial` up to `max`; jitter spreads retries of
//! many objects so they do not hit the API server in lock-step. The default (1 s, capped at 30 s,
//! ±20 % jitter) is what every kcp-rs controller uses for transient errors.

use std::time::Duration;

/// Capped exponential backoff with proportional jitter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Delay after the first failure.
    pub initial: Duration,
    /// Upper bound for any delay (before jitter is applied the value is capped; jitter never
    /// pushes it above `max`).
    pub max: Duration,
    /// Growth factor per consecutive failure (2.0 doubles).
    pub factor: f64,
    /// Fraction of the delay that is randomized, in `0.0..=1.0`: `0.2` gives a delay in
    /// `[0.8 d, 1.0 d]` where `d` is the un-jittered delay.
    pub jitter: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(30),
            factor: 2.0,
            jitter: 0.2,
        }
    }
}

impl Backoff {
    /// A backoff from `initial` to `max` with the default factor and jitter.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max,
            ..Backoff::default()
        }
    }

    /// The same policy without jitter (deterministic delays, for tests and tight polling).
    pub fn without_jitter(self) -> Self {
        Backoff {
            jitter: 0.0,
            ..self
        }
    }

    /// The un-jittered delay after `failures` consecutive failures (`failures >= 1`; 0 is
    /// treated as 1).
    pub fn base_delay(&self, failures: u32) -> Duration {
        let exponent = failures.saturating_sub(1).min(63) as i32;
        let initial = self.initial.as_secs_f64();
        let max = self.max.as_secs_f64();
        let secs = (initial * self.factor.max(1.0).powi(exponent)).min(max);
        Duration::from_secs_f64(secs.max(0.0))
    }

    /// The delay after `failures` consecutive failures, with jitter drawn from `unit`, a value
    /// in `[0, 1)`. Deterministic: the same inputs give the same delay.
    pub fn delay_with(&self, failures: u32, unit: f64) -> Duration {
        let base = self.base_delay(failures).as_secs_f64();
        let jitter = self.jitter.clamp(0.0, 1.0);
        let unit = unit.clamp(0.0, 1.0);
        Duration::from_secs_f64(base * (1.0 - jitter * unit))
    }

    /// The delay after `failures` consecutive failures, with random jitter.
    pub fn delay(&self, failures: u32) -> Duration {
        self.delay_with(failures, fastrand::f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_initial_until_the_cap() {
        let b = Backoff::default().without_jitter();
        let secs: Vec<u64> = (1..=7).map(|n| b.delay(n).as_secs()).collect();
        assert_eq!(secs, vec![1, 2, 4, 8, 16, 30, 30]);
    }

    #[test]
    fn zero_failures_is_treated_as_one() {
        let b = Backoff::default().without_jitter();
        assert_eq!(b.delay(0), Duration::from_secs(1));
    }

    #[test]
    fn huge_failure_counts_stay_at_the_cap() {
        let b = Backoff::default().without_jitter();
        assert_eq!(b.delay(u32::MAX), Duration::from_secs(30));
    }

    #[test]
    fn jitter_only_shortens_and_stays_within_its_fraction() {
        let b = Backoff::default();
        for n in 1..10 {
            let base = b.base_delay(n);
            let d = b.delay(n);
            assert!(d <= base, "{d:?} > {base:?}");
            assert!(d.as_secs_f64() >= base.as_secs_f64() * 0.8 - 1e-9);
        }
    }

    #[test]
    fn jitter_is_a_pure_function_of_the_unit_draw() {
        let b = Backoff::default();
        assert_eq!(b.delay_with(3, 0.5), Duration::from_secs_f64(4.0 * 0.9));
        assert_eq!(b.delay_with(3, 0.0), Duration::from_secs(4));
    }
}
