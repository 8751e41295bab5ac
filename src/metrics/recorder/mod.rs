//! Collects what the load workers measured into per-second figures, without
//! any worker ever waiting on another, in memory that does not grow with the
//! length of the run.
//!
//! Each worker keeps the latencies of its current second to itself and hands
//! them over (a channel send, once a second) when it completes a transaction
//! in a later second (`worker.rs` says why as values, not a histogram). A
//! second is settled, reduced to a few figures and merged into the run's
//! histogram, once no worker can still add to it; only the seconds a stalled
//! worker may still report stay as histograms. The progress line reads
//! [`super::LiveCounters`], plain atomics the workers bump, so a stalled worker
//! never delays it.

mod pool;
mod worker;

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

use pool::pool_figures;
pub use pool::{PoolFigures, PoolSecond};
pub use worker::{LatencySamples, WorkerPart, WorkerSecond};

use super::failures::{FailureCount, FailureKind};
use super::{CompressedSeconds, new_latency_histogram};
use crate::engine::{ErrorClass, ErrorCode};

/// The figures of one settled second of the timeline. The latency figures
/// cover every transaction that ended in it, completed or failed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SecondFigures {
    pub completed: u64,
    pub failed: u64,
    /// How many transactions the latency figures cover (completed and failed
    /// with a latency), to fold in late hand-overs.
    pub latency_count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub timeouts: u64,
    pub skipped: u64,
    /// Mean schedule lag of the transactions sent (open loop), in ms.
    pub lag_ms: f64,
    /// How many transactions the lag mean covers (to fold in late hand-overs).
    pub lag_count: u64,
    /// Connections lost in this second.
    pub conn_lost: u64,
    /// Connections opened again in this second after a loss.
    pub reconnects: u64,
    /// Transactions that ended after more than one try, and their extra tries.
    pub retried: u64,
    pub retries: u64,
    /// Of `failed`: serialization failures (40001), deadlocks (40P01) and
    /// lock timeouts (55P03), each after its last try.
    pub failed_serialization: u64,
    pub failed_deadlock: u64,
    pub failed_lock_timeout: u64,
    /// The application pool's figures; `None` without a pool.
    pub pool: Option<PoolFigures>,
}

/// A second is settled only once the run clock is this many seconds past it,
/// so a worker's hand-over still in the channel is not missed.
const SETTLE_MARGIN_S: u32 = 2;

/// The measurements of all workers: settled seconds as figures, the run's histogram.
#[derive(Debug)]
pub struct Recorder {
    /// The second each worker is in (its unsent latencies are for that second).
    worker_in: Vec<u32>,
    /// Seconds some worker may still add to, merged.
    pending: BTreeMap<u32, PendingSecond>,
    settled: BTreeMap<u32, SecondFigures>,
    /// Every transaction that ended, completed or failed.
    total_latency_us: Histogram<u64>,
    /// The failed ones of `total_latency_us`; `None` until one failed.
    total_failed_latency_us: Option<Histogram<u64>>,
    failed_by_kind: BTreeMap<FailureKind, u64>,
    /// Failed transactions by (second, kind, normalised message).
    failed_by_message: BTreeMap<(u32, FailureKind, String), u64>,
    /// Failed attempts to open a lost connection again, whole run.
    reconnect_failures: u64,
    /// The longest time one worker was without a connection, in microseconds.
    longest_disconnected_us: u64,
    /// Settled seconds' histograms, compressed, in settling order.
    intervals: Vec<(u32, Vec<u8>)>,
    /// The pool's histograms of the whole run and per second; empty without a pool.
    pool: PoolTotals,
}

/// The application pool's histograms: the whole run's and, compressed, each settled second's.
#[derive(Debug, Default)]
struct PoolTotals {
    wait_us: Option<Histogram<u64>>,
    db_us: Option<Histogram<u64>>,
    wait_intervals: Vec<(u32, Vec<u8>)>,
    db_intervals: Vec<(u32, Vec<u8>)>,
}

impl Recorder {
    /// A recorder for `workers` workers, all starting in second 0.
    pub fn new(workers: usize) -> Recorder {
        Recorder {
            worker_in: vec![0; workers],
            pending: BTreeMap::new(),
            settled: BTreeMap::new(),
            total_latency_us: new_latency_histogram(),
            total_failed_latency_us: None,
            failed_by_kind: BTreeMap::new(),
            failed_by_message: BTreeMap::new(),
            reconnect_failures: 0,
            longest_disconnected_us: 0,
            intervals: Vec::new(),
            pool: PoolTotals::default(),
        }
    }

    /// Takes one worker's hand-over, then settles what can be settled at `now_second`.
    pub fn add(&mut self, part: WorkerPart, now_second: u32) {
        if let Some(slot) = self.worker_in.get_mut(part.worker) {
            *slot = part.now_in;
        }
        if let Some(finished) = part.finished {
            self.merge(finished);
        }
        self.settle(now_second);
    }

    /// Settles every pending second that no worker can still add to: one the
    /// clock is past (with a margin) and that is no worker's current second.
    /// A worker in second k adds only to k or, later, to seconds not yet begun.
    pub fn settle(&mut self, now_second: u32) {
        let ready: Vec<u32> = self
            .pending
            .keys()
            .copied()
            .filter(|&second| {
                second.saturating_add(SETTLE_MARGIN_S) < now_second
                    && !self.worker_in.contains(&second)
            })
            .collect();
        for second in ready {
            let part = self.pending.remove(&second).expect("listed above");
            self.settle_one(part);
        }
    }

    /// Settles everything (the run is over).
    pub fn finish(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for (_, part) in pending {
            self.settle_one(part);
        }
    }

    fn merge(&mut self, part: WorkerSecond) {
        if let Some(figures) = self.settled.get_mut(&part.second) {
            // Late for a settled second (a hand-over delayed past the margin):
            // counts and max stay exact, the percentiles keep what they were.
            let late = PendingSecond::from(part);
            add_late(figures, &late);
            self.add_to_totals(&late);
            self.keep_interval(&late);
            return;
        }
        let merged = self
            .pending
            .entry(part.second)
            .or_insert_with(|| PendingSecond::new(part.second));
        part.latency_us.add_to(&mut merged.latency_us);
        if !part.failed_latency_us.is_empty() {
            part.failed_latency_us.add_to(
                merged
                    .failed_latency_us
                    .get_or_insert_with(new_latency_histogram),
            );
        }
        merged.counts.add_counts(&part);
    }

    fn settle_one(&mut self, pending: PendingSecond) {
        let latency = &pending.latency_us;
        let part = &pending.counts;
        let mut figures = SecondFigures {
            failed: part.failed,
            timeouts: part.timeouts,
            skipped: part.skipped,
            lag_ms: mean_ms(part.lag_sum_us, part.lag_count),
            lag_count: part.lag_count,
            conn_lost: part.conn_lost,
            reconnects: part.reconnects,
            retried: part.retried,
            retries: part.retries,
            pool: part.pool.as_deref().map(pool_figures),
            ..SecondFigures::default()
        };
        add_failures_by_kind(&mut figures, &part.failed_by_kind);
        if !latency.is_empty() {
            figures.completed = latency.len() - pending.failed_latency_count();
            figures.latency_count = latency.len();
            figures.mean_ms = latency.mean() / 1000.0;
            figures.p50_ms = latency.value_at_quantile(0.5) as f64 / 1000.0;
            figures.p99_ms = latency.value_at_quantile(0.99) as f64 / 1000.0;
            figures.max_ms = latency.max() as f64 / 1000.0;
        }
        self.add_to_totals(&pending);
        self.keep_interval(&pending);
        self.settled.insert(part.second, figures);
    }

    /// Keeps a settled second's histograms, compressed, for the interval log.
    fn keep_interval(&mut self, pending: &PendingSecond) {
        let part = &pending.counts;
        if !pending.latency_us.is_empty() {
            self.intervals
                .push((part.second, compressed(&pending.latency_us)));
        }
        if let Some(pool) = &part.pool {
            let totals = &mut self.pool;
            if !pool.wait_us.is_empty() {
                totals
                    .wait_intervals
                    .push((part.second, compressed(&pool.wait_us)));
            }
            if !pool.db_us.is_empty() {
                totals
                    .db_intervals
                    .push((part.second, compressed(&pool.db_us)));
            }
        }
    }

    /// The compressed per-second histograms, in second order (settled seconds).
    pub fn intervals(&self) -> Vec<(u32, Vec<u8>)> {
        in_second_order(&self.intervals)
    }

    /// The pool's compressed per-second histograms of the wait for a
    /// connection and of the database time, in second order; empty without a pool.
    pub fn pool_intervals(&self) -> (CompressedSeconds, CompressedSeconds) {
        (
            in_second_order(&self.pool.wait_intervals),
            in_second_order(&self.pool.db_intervals),
        )
    }

    /// The pool's histograms of the whole run (wait for a connection, database
    /// time), in microseconds; `None` without a pool.
    pub fn pool_totals(&self) -> Option<(Histogram<u64>, Histogram<u64>)> {
        let (wait, db) = (self.pool.wait_us.as_ref()?, self.pool.db_us.as_ref()?);
        Some((wait.clone(), db.clone()))
    }

    fn add_to_totals(&mut self, pending: &PendingSecond) {
        let part = &pending.counts;
        self.total_latency_us
            .add(&pending.latency_us)
            .expect("histograms share the same bounds");
        if let Some(failed) = &pending.failed_latency_us {
            self.total_failed_latency_us
                .get_or_insert_with(new_latency_histogram)
                .add(failed)
                .expect("histograms share the same bounds");
        }
        for (kind, count) in &part.failed_by_kind {
            *self.failed_by_kind.entry(kind.clone()).or_insert(0) += count;
        }
        for ((kind, message), count) in &part.failed_by_message {
            let key = (part.second, kind.clone(), message.clone());
            *self.failed_by_message.entry(key).or_insert(0) += count;
        }
        self.reconnect_failures += part.reconnect_failures;
        self.longest_disconnected_us = self
            .longest_disconnected_us
            .max(part.longest_disconnected_us);
        if let Some(pool) = &part.pool {
            let totals = &mut self.pool;
            totals
                .wait_us
                .get_or_insert_with(new_latency_histogram)
                .add(&pool.wait_us)
                .expect("histograms share the same bounds");
            totals
                .db_us
                .get_or_insert_with(new_latency_histogram)
                .add(&pool.db_us)
                .expect("histograms share the same bounds");
        }
    }

    /// The figures of `second`, if any worker reported anything in it and it is settled.
    pub fn second(&self, second: u32) -> Option<&SecondFigures> {
        self.settled.get(&second)
    }

    /// The latency histogram of the whole run (settled seconds): every
    /// transaction that ended, completed or failed.
    pub fn total_latency_us(&self) -> Histogram<u64> {
        self.total_latency_us.clone()
    }

    /// The latency histogram of the completed transactions only (settled
    /// seconds): the whole run's without the failed ones.
    pub fn ok_latency_us(&self) -> Histogram<u64> {
        let mut ok = self.total_latency_us.clone();
        if let Some(failed) = &self.total_failed_latency_us {
            ok.subtract(failed)
                .expect("the failed latencies are recorded in the total too");
        }
        ok
    }

    /// Failed transactions of the whole run by kind (settled seconds).
    pub fn failed_by_kind(&self) -> BTreeMap<FailureKind, u64> {
        self.failed_by_kind.clone()
    }

    /// Failed transactions by second, kind and message, in second order (settled seconds).
    pub fn failures(&self) -> Vec<FailureCount> {
        self.failed_by_message
            .iter()
            .map(|((second, kind, message), count)| FailureCount {
                second: *second,
                kind: kind.clone(),
                message: message.clone(),
                count: *count,
            })
            .collect()
    }

    /// Failed attempts to open a lost connection again, whole run (settled seconds).
    pub fn reconnect_failures(&self) -> u64 {
        self.reconnect_failures
    }

    /// The longest time one worker was without a connection, in ms (settled seconds).
    pub fn max_disconnected_ms(&self) -> f64 {
        self.longest_disconnected_us as f64 / 1000.0
    }
}

/// A second as the recorder holds it until it settles: the workers'
/// latencies recorded into one histogram, their counters added up.
#[derive(Debug)]
struct PendingSecond {
    /// Every transaction that ended in the second, completed or failed.
    latency_us: Histogram<u64>,
    /// The failed ones of `latency_us`; `None` until one failed.
    failed_latency_us: Option<Histogram<u64>>,
    /// Every counter of the second; its latencies are in `latency_us`.
    counts: WorkerSecond,
}

impl PendingSecond {
    fn new(second: u32) -> PendingSecond {
        PendingSecond {
            latency_us: new_latency_histogram(),
            failed_latency_us: None,
            counts: WorkerSecond::new(second),
        }
    }

    /// How many of the second's latencies are failed transactions'.
    fn failed_latency_count(&self) -> u64 {
        self.failed_latency_us.as_ref().map_or(0, Histogram::len)
    }
}

impl From<WorkerSecond> for PendingSecond {
    fn from(mut part: WorkerSecond) -> PendingSecond {
        let mut latency_us = new_latency_histogram();
        std::mem::take(&mut part.latency_us).add_to(&mut latency_us);
        let failed = std::mem::take(&mut part.failed_latency_us);
        let failed_latency_us = (!failed.is_empty()).then(|| {
            let mut histogram = new_latency_histogram();
            failed.add_to(&mut histogram);
            histogram
        });
        PendingSecond {
            latency_us,
            failed_latency_us,
            counts: part,
        }
    }
}

/// Adds the failures of the kinds a retry is about to their own counts, by
/// the neutral class of the engine's code (PostgreSQL's 40001, 40P01, 55P03;
/// MariaDB's 1020, 1213, 1205).
fn add_failures_by_kind(figures: &mut SecondFigures, failed_by_kind: &BTreeMap<FailureKind, u64>) {
    for (kind, count) in failed_by_kind {
        let class = kind.server_code().map(ErrorCode::class);
        match class {
            Some(ErrorClass::Serialization) => figures.failed_serialization += count,
            Some(ErrorClass::Deadlock) => figures.failed_deadlock += count,
            Some(ErrorClass::LockTimeout) => figures.failed_lock_timeout += count,
            _ => {}
        }
    }
}

/// Folds a late hand-over into a settled second's figures.
fn add_late(figures: &mut SecondFigures, pending: &PendingSecond) {
    let part = &pending.counts;
    let late = pending.latency_us.len();
    if late > 0 {
        let sum_ms = figures.mean_ms * figures.latency_count as f64
            + pending.latency_us.mean() / 1000.0 * late as f64;
        figures.completed += late - pending.failed_latency_count();
        figures.latency_count += late;
        figures.mean_ms = sum_ms / figures.latency_count as f64;
        figures.max_ms = figures.max_ms.max(pending.latency_us.max() as f64 / 1000.0);
    }
    figures.failed += part.failed;
    figures.timeouts += part.timeouts;
    figures.skipped += part.skipped;
    figures.conn_lost += part.conn_lost;
    figures.reconnects += part.reconnects;
    figures.retried += part.retried;
    figures.retries += part.retries;
    add_failures_by_kind(figures, &part.failed_by_kind);
    if let Some(pool) = &part.pool {
        // Counts stay exact; the late p99s only raise the second's.
        let late = pool_figures(pool);
        let figures = figures.pool.get_or_insert_with(PoolFigures::default);
        figures.timeouts += late.timeouts;
        figures.rejected += late.rejected;
        figures.wait_p99_ms = figures.wait_p99_ms.max(late.wait_p99_ms);
        figures.db_p99_ms = figures.db_p99_ms.max(late.db_p99_ms);
    }
    if part.lag_count > 0 {
        let lag_sum_us =
            figures.lag_ms * 1000.0 * figures.lag_count as f64 + part.lag_sum_us as f64;
        figures.lag_count += part.lag_count;
        figures.lag_ms = lag_sum_us / figures.lag_count as f64 / 1000.0;
    }
}

/// The 99th percentile of a histogram in microseconds, in ms; 0 when empty.
pub fn p99_ms(histogram: &Histogram<u64>) -> f64 {
    match histogram.is_empty() {
        true => 0.0,
        false => histogram.value_at_quantile(0.99) as f64 / 1000.0,
    }
}

/// A histogram compressed for the interval log (HdrHistogram V2 + deflate).
fn compressed(histogram: &Histogram<u64>) -> Vec<u8> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(histogram, &mut bytes)
        .expect("serializing into memory does not fail");
    bytes
}

/// Per-second intervals sorted by second (a late hand-over comes after its second's).
fn in_second_order(intervals: &[(u32, Vec<u8>)]) -> Vec<(u32, Vec<u8>)> {
    let mut sorted = intervals.to_vec();
    sorted.sort_by_key(|(second, _)| *second);
    sorted
}

/// `sum_us / count` in ms, 0 for no samples.
fn mean_ms(sum_us: u64, count: u64) -> f64 {
    if count == 0 {
        0.0
    } else {
        sum_us as f64 / count as f64 / 1000.0
    }
}

#[cfg(test)]
mod tests;
