//! The application pool's part of a worker's second (`--pool-size`): the wait
//! for a connection and the database time as two histograms, the requests that
//! timed out at the pool or were rejected, and their settled figures. Kept
//! apart so the lean workers' seconds carry none of it (`None`, nothing allocated).

use hdrhistogram::Histogram;

use super::p99_ms;
use crate::metrics::new_latency_histogram;

/// What the application pool measured in one second, for the requests that ended in it.
#[derive(Debug)]
pub struct PoolSecond {
    /// How long the requests waited for a connection (those that timed out too), in microseconds.
    pub wait_us: Histogram<u64>,
    /// How long the database took, from checkout to the end of the script, in microseconds.
    pub db_us: Histogram<u64>,
    /// Requests that gave up waiting for a connection (`--pool-timeout`).
    pub timeouts: u64,
    /// Requests rejected at once for `--max-in-flight`.
    pub rejected: u64,
}

impl PoolSecond {
    pub fn new() -> PoolSecond {
        PoolSecond {
            wait_us: new_latency_histogram(),
            db_us: new_latency_histogram(),
            timeouts: 0,
            rejected: 0,
        }
    }

    pub(super) fn add(&mut self, other: &PoolSecond) {
        self.wait_us
            .add(&other.wait_us)
            .expect("histograms share the same bounds");
        self.db_us
            .add(&other.db_us)
            .expect("histograms share the same bounds");
        self.timeouts += other.timeouts;
        self.rejected += other.rejected;
    }
}

impl Default for PoolSecond {
    fn default() -> PoolSecond {
        PoolSecond::new()
    }
}

/// The application pool's figures of one settled second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PoolFigures {
    /// The 99th percentile of the wait for a connection, in ms.
    pub wait_p99_ms: f64,
    /// The 99th percentile of the database time, in ms.
    pub db_p99_ms: f64,
    /// Requests that gave up waiting for a connection.
    pub timeouts: u64,
    /// Requests rejected for `--max-in-flight`.
    pub rejected: u64,
}

/// The settled figures of a second's pool measurements.
pub(super) fn pool_figures(pool: &PoolSecond) -> PoolFigures {
    PoolFigures {
        wait_p99_ms: p99_ms(&pool.wait_us),
        db_p99_ms: p99_ms(&pool.db_us),
        timeouts: pool.timeouts,
        rejected: pool.rejected,
    }
}
