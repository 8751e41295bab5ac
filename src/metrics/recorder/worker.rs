//! What one worker (a lean connection, or the application pool's collector)
//! measured in one second, as it hands it to the recorder.
//!
//! A worker keeps its latencies as they come, one `u32` of microseconds per
//! transaction, not in a histogram of its own: a latency histogram of 1 us ..
//! 1 h at 3 significant digits is about 190 KB, and at 1,000 clients one per
//! worker and second was most of the memory of a run (about 230 KB per
//! connection). The recorder records the values into the second's histogram,
//! so the figures are the same; a worker's memory grows with the transactions
//! it completes in its current second (4 bytes each), not with the histogram's
//! range.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::pool::PoolSecond;
use crate::metrics::failures::{Failure, FailureKind, normalise_message};

/// The latencies of one worker's transactions in one second, in microseconds,
/// in the order they completed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencySamples(Vec<u32>);

impl LatencySamples {
    /// Room for `capacity` latencies (a worker's last second's count: no growing on the hot path).
    pub fn with_capacity(capacity: usize) -> LatencySamples {
        LatencySamples(Vec::with_capacity(capacity))
    }

    /// Keeps one latency; past `u32::MAX` us (71 min) it is kept as that, beyond
    /// the histogram's 1 h, where the histogram saturates anyway.
    pub fn record(&mut self, latency_us: u64) {
        self.0.push(u32::try_from(latency_us).unwrap_or(u32::MAX));
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Records every latency into `histogram` (saturating at its highest value).
    pub fn add_to(&self, histogram: &mut Histogram<u64>) {
        for &latency_us in &self.0 {
            histogram.saturating_record(u64::from(latency_us));
        }
    }
}

/// What one worker measured during one second of the run clock.
#[derive(Debug)]
pub struct WorkerSecond {
    pub second: u32,
    /// Latency of the transactions that ended in this second, completed or
    /// failed (until their error arrived), in microseconds.
    pub latency_us: LatencySamples,
    /// Of `latency_us`, the failed transactions' latencies: kept apart for the
    /// successful-only figures (`ok_*`); empty (not allocated) unless something failed.
    pub failed_latency_us: LatencySamples,
    /// Failed transactions in this second.
    pub failed: u64,
    /// Failed transactions in this second by kind.
    pub failed_by_kind: BTreeMap<FailureKind, u64>,
    /// Failed transactions in this second by kind and normalised message;
    /// empty (not allocated) unless something failed.
    pub failed_by_message: BTreeMap<(FailureKind, String), u64>,
    /// Of `failed`, those that hit `--client-timeout`.
    pub timeouts: u64,
    /// Transactions skipped for `--latency-limit` (never sent).
    pub skipped: u64,
    /// Transactions that ended in this second after more than one try
    /// (completed or failed), and their tries beyond the first.
    pub retried: u64,
    pub retries: u64,
    /// Open loop: the schedule lag (start minus scheduled start) of the
    /// transactions sent that ended in this second, summed, and their count.
    pub lag_sum_us: u64,
    pub lag_count: u64,
    /// Connections lost in this second (their transaction in flight is in `failed`).
    pub conn_lost: u64,
    /// Connections opened again in this second after a loss.
    pub reconnects: u64,
    /// Attempts to open a lost connection again that failed in this second.
    pub reconnect_failures: u64,
    /// The longest time without a connection that ended in this second, in microseconds.
    pub longest_disconnected_us: u64,
    /// The application pool's figures (`--pool-size`); `None` (nothing
    /// allocated) for the lean connections.
    pub pool: Option<Box<PoolSecond>>,
}

impl WorkerSecond {
    pub fn new(second: u32) -> WorkerSecond {
        WorkerSecond::with_capacity(second, 0)
    }

    /// A second with room for `latencies` latencies.
    pub fn with_capacity(second: u32, latencies: usize) -> WorkerSecond {
        WorkerSecond {
            second,
            latency_us: LatencySamples::with_capacity(latencies),
            failed_latency_us: LatencySamples::default(),
            failed: 0,
            failed_by_kind: BTreeMap::new(),
            failed_by_message: BTreeMap::new(),
            timeouts: 0,
            skipped: 0,
            retried: 0,
            retries: 0,
            lag_sum_us: 0,
            lag_count: 0,
            conn_lost: 0,
            reconnects: 0,
            reconnect_failures: 0,
            longest_disconnected_us: 0,
            pool: None,
        }
    }

    /// The pool's figures of this second, allocated on first use.
    pub fn pool(&mut self) -> &mut PoolSecond {
        self.pool.get_or_insert_with(Box::default)
    }

    pub fn is_empty(&self) -> bool {
        self.latency_us.is_empty()
            && self.failed == 0
            && self.skipped == 0
            && self.retried == 0
            && self.lag_count == 0
            && self.conn_lost == 0
            && self.reconnects == 0
            && self.reconnect_failures == 0
            && self.longest_disconnected_us == 0
            && self.pool.is_none()
    }

    /// Counts one transaction that failed after `latency_us` (its wait counts
    /// in the second's latency as a completed one's does) with [`Self::add_failure`].
    pub fn record_failure(&mut self, failure: &Failure, latency_us: u64) {
        self.latency_us.record(latency_us);
        self.failed_latency_us.record(latency_us);
        self.add_failure(failure);
    }

    /// Counts one failed transaction under its kind and message (normalised
    /// here, on the error path only); a client timeout, a pool timeout and a
    /// rejection count in their own columns too.
    pub fn add_failure(&mut self, failure: &Failure) {
        self.failed += 1;
        match self.failed_by_kind.get_mut(&failure.kind) {
            Some(count) => *count += 1,
            None => {
                self.failed_by_kind.insert(failure.kind.clone(), 1);
            }
        }
        let key = (failure.kind.clone(), normalise_message(&failure.message));
        *self.failed_by_message.entry(key).or_insert(0) += 1;
        match failure.kind {
            FailureKind::ClientTimeout => self.timeouts += 1,
            FailureKind::PoolTimeout => self.pool().timeouts += 1,
            FailureKind::Rejected => self.pool().rejected += 1,
            _ => {}
        }
    }

    /// Adds the counters (not the latencies) of `other`.
    pub(super) fn add_counts(&mut self, other: &WorkerSecond) {
        self.failed += other.failed;
        for (kind, count) in &other.failed_by_kind {
            *self.failed_by_kind.entry(kind.clone()).or_insert(0) += count;
        }
        for (key, count) in &other.failed_by_message {
            *self.failed_by_message.entry(key.clone()).or_insert(0) += count;
        }
        self.timeouts += other.timeouts;
        self.skipped += other.skipped;
        self.retried += other.retried;
        self.retries += other.retries;
        self.lag_sum_us += other.lag_sum_us;
        self.lag_count += other.lag_count;
        self.conn_lost += other.conn_lost;
        self.reconnects += other.reconnects;
        self.reconnect_failures += other.reconnect_failures;
        self.longest_disconnected_us = self
            .longest_disconnected_us
            .max(other.longest_disconnected_us);
        if let Some(pool) = &other.pool {
            self.pool().add(pool);
        }
    }
}

/// A worker's message to the recorder: the second it just left (if it measured
/// anything there) and the second it is in now (`u32::MAX` once it has stopped).
#[derive(Debug)]
pub struct WorkerPart {
    pub worker: usize,
    pub finished: Option<WorkerSecond>,
    pub now_in: u32,
}
