//! Retry policy and circuit breaker: how a subscription's worker treats an
//! appender that fails.

use std::time::{Duration, Instant};

/// How often, and how patiently, a worker retries a record its appender
/// failed to write, before handing it to the dead-letter route.
///
/// The worker retries a record before taking the next, so order is kept.
/// The wait before attempt `n` (for `n >= 2`) is
/// `min(initial_backoff * multiplier^(n - 2), max_backoff)`: with the
/// defaults, 10 ms before the second attempt and 20 ms before the third.
///
/// | setting | default |
/// |---|---|
/// | max attempts (first try included) | 3 |
/// | initial backoff | 10 ms |
/// | multiplier | 2 |
/// | max backoff | 1 s |
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use logbus::RetryPolicy;
///
/// let policy = RetryPolicy::new()
///     .max_attempts(4)
///     .initial_backoff(Duration::from_millis(100))
///     .multiplier(3)
///     .max_backoff(Duration::from_millis(500));
/// assert_eq!(policy.backoff(2), Duration::from_millis(100));
/// assert_eq!(policy.backoff(3), Duration::from_millis(300));
/// assert_eq!(policy.backoff(4), Duration::from_millis(500)); // capped
/// assert_eq!(RetryPolicy::none().attempts(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct RetryPolicy {
    max_attempts: u32,
    initial_backoff: Duration,
    multiplier: u32,
    max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy::new()
    }
}

impl RetryPolicy {
    /// The default policy (see the table above).
    pub const fn new() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(10),
            multiplier: 2,
            max_backoff: Duration::from_secs(1),
        }
    }

    /// One attempt, no retries: a failed record goes straight to the
    /// dead-letter route.
    pub const fn none() -> RetryPolicy {
        RetryPolicy::new().max_attempts(1)
    }

    /// Attempts per record, the first included (0 is taken as 1).
    pub const fn max_attempts(mut self, attempts: u32) -> RetryPolicy {
        self.max_attempts = if attempts == 0 { 1 } else { attempts };
        self
    }

    /// The wait before the first retry.
    pub const fn initial_backoff(mut self, backoff: Duration) -> RetryPolicy {
        self.initial_backoff = backoff;
        self
    }

    /// The factor each further wait grows by.
    pub const fn multiplier(mut self, multiplier: u32) -> RetryPolicy {
        self.multiplier = multiplier;
        self
    }

    /// The longest wait between two attempts.
    pub const fn max_backoff(mut self, backoff: Duration) -> RetryPolicy {
        self.max_backoff = backoff;
        self
    }

    /// Attempts per record, the first included (what
    /// [`max_attempts`](RetryPolicy::max_attempts) set).
    #[must_use]
    pub const fn attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The wait before attempt `attempt` (1-based; the first attempt does not
    /// wait).
    #[must_use]
    pub fn backoff(&self, attempt: u32) -> Duration {
        if attempt <= 1 {
            return Duration::ZERO;
        }
        let mut wait = self.initial_backoff;
        for _ in 2..attempt {
            wait = wait.saturating_mul(self.multiplier);
            if wait >= self.max_backoff {
                break;
            }
        }
        wait.min(self.max_backoff)
    }
}

/// Trips an appender after consecutive failures, so that a dead disk does
/// not turn into a queue full of retries.
///
/// After `threshold` consecutive failed attempts the breaker *opens*: for
/// `cooldown`, records skip the appender and go straight to the dead-letter
/// route. Then it lets one record through as a *probe* (one attempt, no
/// retries): success closes it, failure opens it again.
///
/// The default opens after 8 consecutive failed attempts for 1 s.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use logbus::CircuitBreaker;
///
/// let breaker = CircuitBreaker::new(5, Duration::from_secs(2));
/// assert_eq!(breaker.threshold(), 5);
/// assert_eq!(CircuitBreaker::disabled().threshold(), u32::MAX);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct CircuitBreaker {
    threshold: u32,
    cooldown: Duration,
}

impl Default for CircuitBreaker {
    fn default() -> CircuitBreaker {
        CircuitBreaker::new(8, Duration::from_secs(1))
    }
}

impl CircuitBreaker {
    /// Opens after `threshold` consecutive failed attempts (at least 1), for
    /// `cooldown`.
    pub const fn new(threshold: u32, cooldown: Duration) -> CircuitBreaker {
        CircuitBreaker {
            threshold: if threshold == 0 { 1 } else { threshold },
            cooldown,
        }
    }

    /// Never opens: every record gets its full retries.
    pub const fn disabled() -> CircuitBreaker {
        CircuitBreaker {
            threshold: u32::MAX,
            cooldown: Duration::ZERO,
        }
    }

    /// Consecutive failed attempts that open the breaker.
    #[must_use]
    pub const fn threshold(&self) -> u32 {
        self.threshold
    }

    /// How long the breaker stays open before probing.
    #[must_use]
    pub const fn cooldown(&self) -> Duration {
        self.cooldown
    }
}

/// The state of a subscription's circuit breaker, as shown in its stats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum BreakerState {
    /// Records reach the appender.
    #[default]
    Closed,
    /// Records go straight to the dead-letter route until the cool-down ends.
    Open,
    /// The next record is a probe.
    HalfOpen,
}

impl BreakerState {
    pub(crate) fn to_u8(self) -> u8 {
        match self {
            BreakerState::Closed => 0,
            BreakerState::Open => 1,
            BreakerState::HalfOpen => 2,
        }
    }

    pub(crate) fn from_u8(v: u8) -> BreakerState {
        match v {
            1 => BreakerState::Open,
            2 => BreakerState::HalfOpen,
            _ => BreakerState::Closed,
        }
    }
}

/// The worker's side of the breaker: its state machine.
///
/// States and transitions:
/// - `Closed` --`threshold` consecutive failed attempts--> `Open(until)`
/// - `Open(until)` --time passes `until`--> `HalfOpen` (next record probes)
/// - `HalfOpen` --probe succeeds--> `Closed`; --probe fails--> `Open`
#[derive(Debug)]
pub(crate) struct Breaker {
    config: CircuitBreaker,
    consecutive_failures: u32,
    state: Tripped,
}

/// Whether, and until when, the breaker is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tripped {
    Closed,
    Until(Instant),
    /// The cool-down does not fit in an `Instant` (e.g. `Duration::MAX`):
    /// open for the life of the process.
    Forever,
}

/// The breaker's verdict on the next record: what the worker does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Write normally, with retries (the breaker is closed).
    Pass,
    /// One attempt, no retries (half open).
    Probe,
    /// Skip the appender: straight to the dead-letter route (open).
    Skip,
}

impl Breaker {
    pub(crate) fn new(config: CircuitBreaker) -> Breaker {
        Breaker {
            config,
            consecutive_failures: 0,
            state: Tripped::Closed,
        }
    }

    pub(crate) fn verdict(&self, now: Instant) -> Verdict {
        match self.state {
            Tripped::Closed => Verdict::Pass,
            Tripped::Until(until) if now < until => Verdict::Skip,
            Tripped::Until(_) => Verdict::Probe,
            Tripped::Forever => Verdict::Skip,
        }
    }

    pub(crate) fn state(&self, now: Instant) -> BreakerState {
        match self.verdict(now) {
            Verdict::Pass => BreakerState::Closed,
            Verdict::Skip => BreakerState::Open,
            Verdict::Probe => BreakerState::HalfOpen,
        }
    }

    pub(crate) fn is_open(&self) -> bool {
        self.state != Tripped::Closed
    }

    pub(crate) fn success(&mut self) {
        self.consecutive_failures = 0;
        self.state = Tripped::Closed;
    }

    /// Records a failed attempt; returns whether the breaker is now open.
    pub(crate) fn failure(&mut self, now: Instant) -> bool {
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        if self.is_open() || self.consecutive_failures >= self.config.threshold {
            // A cool-down too long to represent (say `Duration::MAX`) means
            // "stay open"; it must not overflow and panic on the worker.
            self.state = now
                .checked_add(self.config.cooldown)
                .map_or(Tripped::Forever, Tripped::Until);
        }
        self.is_open()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(policy: RetryPolicy, expected_ms: &[u64]) {
        let got: Vec<u64> = (1..=expected_ms.len() as u32)
            .map(|n| policy.backoff(n).as_millis() as u64)
            .collect();
        assert_eq!(got, expected_ms);
    }

    #[test]
    fn backoff_arithmetic() {
        check(
            RetryPolicy::new(),
            &[0, 10, 20, 40, 80, 160, 320, 640, 1000, 1000],
        );
        check(
            RetryPolicy::new()
                .multiplier(1)
                .initial_backoff(Duration::from_millis(5)),
            &[0, 5, 5, 5],
        );
        check(
            RetryPolicy::new().initial_backoff(Duration::ZERO),
            &[0, 0, 0],
        );
        check(
            RetryPolicy::new()
                .multiplier(10)
                .max_backoff(Duration::from_millis(150)),
            &[0, 10, 100, 150, 150],
        );
        // No overflow with absurd settings.
        assert_eq!(
            RetryPolicy::new().multiplier(u32::MAX).backoff(50),
            Duration::from_secs(1)
        );
        assert_eq!(RetryPolicy::new().max_attempts(0).attempts(), 1);
    }

    #[test]
    fn breaker_transitions() {
        let start = Instant::now();
        let mut b = Breaker::new(CircuitBreaker::new(3, Duration::from_secs(10)));
        assert_eq!(b.verdict(start), Verdict::Pass);
        assert!(!b.failure(start));
        assert!(!b.failure(start));
        b.success();
        assert!(!b.failure(start));
        assert!(!b.failure(start));
        assert!(b.failure(start));
        assert_eq!(b.state(start), BreakerState::Open);
        assert_eq!(b.verdict(start + Duration::from_secs(9)), Verdict::Skip);
        let later = start + Duration::from_secs(10);
        assert_eq!(b.verdict(later), Verdict::Probe);
        assert!(b.failure(later));
        assert_eq!(b.verdict(later), Verdict::Skip);
        b.success();
        assert_eq!(b.state(later), BreakerState::Closed);
        let mut forever = Breaker::new(CircuitBreaker::new(1, Duration::MAX));
        assert!(forever.failure(start));
        assert_eq!(
            forever.verdict(start + Duration::from_secs(1 << 40)),
            Verdict::Skip
        );
        let mut never = Breaker::new(CircuitBreaker::disabled());
        for _ in 0..1000 {
            assert!(!never.failure(start));
        }
    }
}
