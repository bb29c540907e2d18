//! The clock port: how long each stage of a run took.

use std::time::Duration;

/// A monotonic clock.
///
/// # Contract
///
/// - [`now`](Self::now) never goes backwards between two calls on the same clock.
/// - The origin is arbitrary; only differences mean anything.
pub trait Clock: Send + Sync {
    /// Time since the clock's origin.
    fn now(&self) -> Duration;
}

/// A clock that never moves: every stage takes zero time. For runs that do not report
/// latency, and for deterministic tests.
#[derive(Debug, Default, Clone, Copy)]
pub struct FrozenClock;

impl Clock for FrozenClock {
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

/// Milliseconds between two readings, rounded to microseconds.
pub fn elapsed_ms(from: Duration, to: Duration) -> f64 {
    let us = to.saturating_sub(from).as_micros() as f64;
    us / 1000.0
}
