//! The clock ports: how long each stage of a run took, and what time it is.

use std::time::Duration;

use crate::contracts::Timestamp;

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

/// The wall clock: what time it is, for rules that depend on the date (a document's expiry).
///
/// # Contract
///
/// - [`now_utc`](Self::now_utc) is the current instant in UTC, to the second.
/// - It may jump (the system clock is set); callers compare instants, they do not time with it.
pub trait WallClock: Send + Sync {
    /// The current instant.
    fn now_utc(&self) -> Timestamp;
}

/// A wall clock stopped at one instant: for deterministic tests, and for a run that must judge
/// every document at the same moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedWallClock(pub Timestamp);

impl WallClock for FixedWallClock {
    fn now_utc(&self) -> Timestamp {
        self.0
    }
}
