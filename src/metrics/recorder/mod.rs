//! Collects what the load workers measured into per-second figures, without
//! any worker ever waiting on another, in memory that does not grow with the
//! length of the run.
//!
//! Each worker keeps the histogram of its current second to itself and hands
//! it over (a channel send, once a second) when it completes a transaction in
//! a later second. A second is settled, reduced to a few figures and merged
//! into the run's histogram, once no worker can still add to it; only the
//! seconds a stalled worker may still report stay as histograms. The progress
//! line reads [`super::LiveCounters`], plain atomics the workers bump, so a stalled
//! worker never delays it.

mod pool;

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

use pool::pool_figures;
pub use pool::{PoolFigures, PoolSecond};

use super::failures::{FailureCount, normalise_message};
use super::{CompressedSeconds, new_latency_histogram};

/// The SQLSTATE under which transactions that hit `--client-timeout` are counted.
pub const TIMEOUT_SQLSTATE: &str = "timeout";
/// The message under which transactions that hit `--client-timeout` are counted.
const TIMEOUT_MESSAGE: &str = "cancelled after --client-timeout";
/// The SQLSTATE under which a request that gave up waiting for a pool connection is counted.
pub const POOL_TIMEOUT_SQLSTATE: &str = "pool_timeout";
const POOL_TIMEOUT_MESSAGE: &str = "timed out waiting for a database connection (--pool-timeout)";
/// The SQLSTATE under which a request rejected for `--max-in-flight` is counted.
pub const REJECTED_SQLSTATE: &str = "rejected";
const REJECTED_MESSAGE: &str = "rejected: too many requests in flight (--max-in-flight)";
/// The SQLSTATE under which a transaction whose connection broke without a
/// server error saying why (a reset, an end of stream) is counted.
pub const CONNECTION_LOST_SQLSTATE: &str = "connection_lost";

/// What one worker measured during one second of the run clock.
#[derive(Debug)]
pub struct WorkerSecond {
    pub second: u32,
    /// Latency of the transactions that completed in this second, in microseconds.
    pub latency_us: Histogram<u64>,
    /// Failed transactions in this second.
    pub failed: u64,
    /// Failed transactions in this second by SQLSTATE (`timeout` for `--client-timeout`).
    pub failed_by_sqlstate: BTreeMap<String, u64>,
    /// Failed transactions in this second by (SQLSTATE, normalised message);
    /// empty (not allocated) unless something failed.
    pub failed_by_kind: BTreeMap<(String, String), u64>,
    /// Of `failed`, those that hit `--client-timeout`.
    pub timeouts: u64,
    /// Transactions skipped for `--latency-limit` (never sent).
    pub skipped: u64,
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
        WorkerSecond {
            second,
            latency_us: new_latency_histogram(),
            failed: 0,
            failed_by_sqlstate: BTreeMap::new(),
            failed_by_kind: BTreeMap::new(),
            timeouts: 0,
            skipped: 0,
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
            && self.lag_count == 0
            && self.conn_lost == 0
            && self.reconnects == 0
            && self.reconnect_failures == 0
            && self.longest_disconnected_us == 0
            && self.pool.is_none()
    }

    /// Counts one failed transaction under `sqlstate` and its `message`
    /// (normalised here, on the error path only).
    pub fn add_failure(&mut self, sqlstate: &str, message: &str) {
        self.failed += 1;
        match self.failed_by_sqlstate.get_mut(sqlstate) {
            Some(count) => *count += 1,
            None => {
                self.failed_by_sqlstate.insert(sqlstate.to_string(), 1);
            }
        }
        let kind = (sqlstate.to_string(), normalise_message(message));
        *self.failed_by_kind.entry(kind).or_insert(0) += 1;
    }

    /// Counts one request that gave up waiting for a pool connection: failed,
    /// under [`POOL_TIMEOUT_SQLSTATE`], and `wait_us` as its wait.
    pub fn add_pool_timeout(&mut self, wait_us: u64) {
        self.add_failure(POOL_TIMEOUT_SQLSTATE, POOL_TIMEOUT_MESSAGE);
        let pool = self.pool();
        pool.timeouts += 1;
        pool.wait_us.saturating_record(wait_us.max(1));
    }

    /// Counts one request rejected for `--max-in-flight`: failed, under [`REJECTED_SQLSTATE`].
    pub fn add_rejected(&mut self) {
        self.add_failure(REJECTED_SQLSTATE, REJECTED_MESSAGE);
        self.pool().rejected += 1;
    }

    /// Counts one transaction that hit `--client-timeout`: failed, under [`TIMEOUT_SQLSTATE`].
    pub fn add_timeout(&mut self) {
        self.add_failure(TIMEOUT_SQLSTATE, TIMEOUT_MESSAGE);
        self.timeouts += 1;
    }

    /// Adds the counters (not the histogram) of `other`.
    fn add_counts(&mut self, other: &WorkerSecond) {
        self.failed += other.failed;
        for (sqlstate, count) in &other.failed_by_sqlstate {
            *self.failed_by_sqlstate.entry(sqlstate.clone()).or_insert(0) += count;
        }
        for (kind, count) in &other.failed_by_kind {
            *self.failed_by_kind.entry(kind.clone()).or_insert(0) += count;
        }
        self.timeouts += other.timeouts;
        self.skipped += other.skipped;
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

/// The figures of one settled second of the timeline.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SecondFigures {
    pub completed: u64,
    pub failed: u64,
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
    /// The application pool's figures; `None` without a pool.
    pub pool: Option<PoolFigures>,
}

/// A second is settled only once the run clock is this many seconds past it,
/// so a worker's hand-over still in the channel is not missed.
const SETTLE_MARGIN_S: u32 = 2;

/// The measurements of all workers: settled seconds as figures, the run's histogram.
#[derive(Debug)]
pub struct Recorder {
    /// The second each worker is in (its unsent histogram is for that second).
    worker_in: Vec<u32>,
    /// Merged histograms of seconds some worker may still add to.
    pending: BTreeMap<u32, WorkerSecond>,
    settled: BTreeMap<u32, SecondFigures>,
    total_latency_us: Histogram<u64>,
    failed_by_sqlstate: BTreeMap<String, u64>,
    /// Failed transactions by (second, SQLSTATE, normalised message).
    failed_by_kind: BTreeMap<(u32, String, String), u64>,
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
            failed_by_sqlstate: BTreeMap::new(),
            failed_by_kind: BTreeMap::new(),
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
            add_late(figures, &part);
            self.add_to_totals(&part);
            self.keep_interval(&part);
            return;
        }
        let merged = self
            .pending
            .entry(part.second)
            .or_insert_with(|| WorkerSecond::new(part.second));
        merged
            .latency_us
            .add(&part.latency_us)
            .expect("histograms share the same bounds");
        merged.add_counts(&part);
    }

    fn settle_one(&mut self, part: WorkerSecond) {
        let latency = &part.latency_us;
        let mut figures = SecondFigures {
            failed: part.failed,
            timeouts: part.timeouts,
            skipped: part.skipped,
            lag_ms: mean_ms(part.lag_sum_us, part.lag_count),
            lag_count: part.lag_count,
            conn_lost: part.conn_lost,
            reconnects: part.reconnects,
            pool: part.pool.as_deref().map(pool_figures),
            ..SecondFigures::default()
        };
        if !latency.is_empty() {
            figures.completed = latency.len();
            figures.mean_ms = latency.mean() / 1000.0;
            figures.p50_ms = latency.value_at_quantile(0.5) as f64 / 1000.0;
            figures.p99_ms = latency.value_at_quantile(0.99) as f64 / 1000.0;
            figures.max_ms = latency.max() as f64 / 1000.0;
        }
        self.add_to_totals(&part);
        self.keep_interval(&part);
        self.settled.insert(part.second, figures);
    }

    /// Keeps a settled second's histograms, compressed, for the interval log.
    fn keep_interval(&mut self, part: &WorkerSecond) {
        if !part.latency_us.is_empty() {
            self.intervals
                .push((part.second, compressed(&part.latency_us)));
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

    fn add_to_totals(&mut self, part: &WorkerSecond) {
        self.total_latency_us
            .add(&part.latency_us)
            .expect("histograms share the same bounds");
        for (sqlstate, count) in &part.failed_by_sqlstate {
            *self.failed_by_sqlstate.entry(sqlstate.clone()).or_insert(0) += count;
        }
        for ((sqlstate, message), count) in &part.failed_by_kind {
            let kind = (part.second, sqlstate.clone(), message.clone());
            *self.failed_by_kind.entry(kind).or_insert(0) += count;
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

    /// The latency histogram of the whole run (settled seconds).
    pub fn total_latency_us(&self) -> Histogram<u64> {
        self.total_latency_us.clone()
    }

    /// Failed transactions of the whole run by SQLSTATE (settled seconds).
    pub fn failed_by_sqlstate(&self) -> BTreeMap<String, u64> {
        self.failed_by_sqlstate.clone()
    }

    /// Failed transactions by second and kind, in second order (settled seconds).
    pub fn failures(&self) -> Vec<FailureCount> {
        self.failed_by_kind
            .iter()
            .map(|((second, sqlstate, message), count)| FailureCount {
                second: *second,
                sqlstate: sqlstate.clone(),
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

/// Folds a late hand-over into a settled second's figures.
fn add_late(figures: &mut SecondFigures, part: &WorkerSecond) {
    let late = part.latency_us.len();
    if late > 0 {
        let sum_ms = figures.mean_ms * figures.completed as f64
            + part.latency_us.mean() / 1000.0 * late as f64;
        figures.completed += late;
        figures.mean_ms = sum_ms / figures.completed as f64;
        figures.max_ms = figures.max_ms.max(part.latency_us.max() as f64 / 1000.0);
    }
    figures.failed += part.failed;
    figures.timeouts += part.timeouts;
    figures.skipped += part.skipped;
    figures.conn_lost += part.conn_lost;
    figures.reconnects += part.reconnects;
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
mod tests {
    use super::*;

    fn part(worker: usize, second: u32, latencies_us: &[u64], now_in: u32) -> WorkerPart {
        let mut finished = WorkerSecond::new(second);
        for &latency in latencies_us {
            finished.latency_us.record(latency).unwrap();
        }
        WorkerPart {
            worker,
            finished: Some(finished),
            now_in,
        }
    }

    #[test]
    fn parts_of_the_same_second_merge_and_settle() {
        let mut recorder = Recorder::new(2);
        let mut failing = part(0, 3, &[1_000], 4);
        let finished = failing.finished.as_mut().unwrap();
        finished.failed = 1;
        finished.failed_by_sqlstate.insert("40P01".into(), 1);
        recorder.add(failing, 4);
        recorder.add(part(1, 3, &[9_000], 5), 5);
        recorder.add(part(1, 5, &[2_000], u32::MAX), 5);
        recorder.finish();
        let third = recorder.second(3).unwrap();
        assert_eq!(third.completed, 2);
        assert_eq!(third.failed, 1);
        assert!((third.mean_ms - 5.0).abs() < 0.01);
        assert!(recorder.second(4).is_none());
        assert_eq!(recorder.total_latency_us().len(), 3);
        assert_eq!(recorder.failed_by_sqlstate().get("40P01"), Some(&1));
    }

    #[test]
    fn memory_stays_flat_while_a_stalled_worker_keeps_its_second() {
        let mut recorder = Recorder::new(2);
        // Worker 1 completes something in second 0, then stalls: it stays in second 0.
        // Worker 0 runs on for 600 seconds.
        for second in 0..600 {
            recorder.add(part(0, second, &[1_000], second + 1), second + 1);
        }
        // Only the stalled worker's second (and the last, too recent ones) wait:
        // every second got a hand-over, so a second not settled is still pending.
        let pending = (0..600)
            .filter(|&second| recorder.second(second).is_none())
            .count();
        assert!(pending <= 4, "pending: {pending}");
        assert!(
            recorder.second(0).is_none(),
            "worker 1 may still add to second 0"
        );
        assert_eq!(recorder.second(100).unwrap().completed, 1);
        // The stalled worker finally hands second 0 over.
        recorder.add(part(1, 0, &[5_000], u32::MAX), 600);
        recorder.finish();
        assert_eq!(recorder.second(0).unwrap().completed, 2);
        assert_eq!(recorder.total_latency_us().len(), 601);
    }

    #[test]
    fn a_late_hand_over_still_counts() {
        let mut recorder = Recorder::new(2);
        recorder.add(part(1, 3, &[3_000], 4), 4);
        // Worker 0 reports leaving second 0 for second 1 only at second 10:
        // second 3 looks final and settles.
        recorder.add(part(0, 0, &[1_000], 1), 10);
        assert_eq!(recorder.second(3).unwrap().completed, 1);
        // Yet worker 0 had completed transactions in second 3: they arrive late.
        recorder.add(part(0, 1, &[2_000], 3), 10);
        recorder.add(part(0, 3, &[7_000], u32::MAX), 11);
        recorder.finish();
        let third = recorder.second(3).unwrap();
        assert_eq!(third.completed, 2);
        assert!((third.max_ms - 7.0).abs() < 0.01);
        assert!((third.mean_ms - 5.0).abs() < 0.01);
        assert_eq!(recorder.total_latency_us().len(), 4);
    }

    #[test]
    fn open_loop_counts_merge_and_late_ones_still_count() {
        let mut recorder = Recorder::new(2);
        let mut first = part(0, 2, &[1_000], 3);
        let finished = first.finished.as_mut().unwrap();
        finished.add_timeout();
        finished.skipped = 2;
        finished.lag_sum_us = 3_000;
        finished.lag_count = 2;
        recorder.add(first, 3);
        let mut second = part(1, 2, &[], 3);
        second.finished.as_mut().unwrap().lag_sum_us = 6_000;
        second.finished.as_mut().unwrap().lag_count = 1;
        recorder.add(second, 10);
        let figures = *recorder.second(2).unwrap();
        assert_eq!(
            (figures.failed, figures.timeouts, figures.skipped),
            (1, 1, 2)
        );
        assert!((figures.lag_ms - 3.0).abs() < 1e-9, "{figures:?}");
        // A late hand-over for the settled second.
        let mut late = part(0, 2, &[], u32::MAX);
        let finished = late.finished.as_mut().unwrap();
        finished.add_timeout();
        finished.lag_sum_us = 1_000;
        finished.lag_count = 1;
        recorder.add(late, 11);
        recorder.finish();
        let figures = recorder.second(2).unwrap();
        assert_eq!((figures.failed, figures.timeouts), (2, 2));
        assert!((figures.lag_ms - 2.5).abs() < 1e-9, "{figures:?}");
        assert_eq!(
            recorder.failed_by_sqlstate().get(TIMEOUT_SQLSTATE),
            Some(&2)
        );
    }

    #[test]
    fn lost_connections_and_reconnects_settle_per_second_and_add_up() {
        let mut recorder = Recorder::new(2);
        let mut lost = part(0, 2, &[], 3);
        let finished = lost.finished.as_mut().unwrap();
        finished.add_failure(CONNECTION_LOST_SQLSTATE, "the server closed the connection");
        finished.conn_lost = 1;
        recorder.add(lost, 3);
        let mut back = part(0, 3, &[1_000], 4);
        let finished = back.finished.as_mut().unwrap();
        finished.reconnect_failures = 3;
        finished.reconnects = 1;
        finished.longest_disconnected_us = 1_250_000;
        recorder.add(back, 4);
        let mut other = part(1, 2, &[], u32::MAX);
        let finished = other.finished.as_mut().unwrap();
        finished.conn_lost = 1;
        finished.reconnects = 1;
        finished.longest_disconnected_us = 20_000;
        recorder.add(other, 10);
        // Settled by now; a late hand-over of worker 0 still counts.
        assert_eq!(recorder.second(2).unwrap().conn_lost, 2);
        let mut late = part(0, 2, &[], u32::MAX);
        late.finished.as_mut().unwrap().conn_lost = 1;
        recorder.add(late, 11);
        recorder.finish();
        let (second_2, second_3) = (recorder.second(2).unwrap(), recorder.second(3).unwrap());
        assert_eq!((second_2.conn_lost, second_2.reconnects), (3, 1));
        assert_eq!((second_3.conn_lost, second_3.reconnects), (0, 1));
        assert_eq!(second_2.failed, 1);
        assert_eq!(recorder.reconnect_failures(), 3);
        assert_eq!(recorder.max_disconnected_ms(), 1250.0);
        assert_eq!(
            recorder.failed_by_sqlstate().get(CONNECTION_LOST_SQLSTATE),
            Some(&1)
        );
    }

    #[test]
    fn failures_by_kind_merge_per_second() {
        const CACHED_PLAN: &str = "cached plan must not change result type";
        let mut recorder = Recorder::new(2);
        let mut first = part(0, 2, &[], 3);
        first
            .finished
            .as_mut()
            .unwrap()
            .add_failure("0A000", CACHED_PLAN);
        recorder.add(first, 3);
        let mut second = part(1, 2, &[], u32::MAX);
        let finished = second.finished.as_mut().unwrap();
        finished.add_failure("0A000", CACHED_PLAN);
        finished.add_failure("22P02", "invalid input syntax for type integer: 'x1'");
        recorder.add(second, 3);
        recorder.finish();
        let failure = |sqlstate: &str, message: &str, count| FailureCount {
            second: 2,
            sqlstate: sqlstate.to_string(),
            message: message.to_string(),
            count,
        };
        assert_eq!(
            recorder.failures(),
            [
                failure("0A000", CACHED_PLAN, 2),
                failure("22P02", "invalid input syntax for type integer: '?'", 1),
            ]
        );
        assert_eq!(recorder.second(2).unwrap().failed, 3);
    }

    #[test]
    fn pool_waits_and_database_time_settle_apart_and_late_ones_still_count() {
        assert!(
            WorkerSecond::new(0).pool.is_none(),
            "lean seconds allocate no pool figures"
        );
        let mut recorder = Recorder::new(1);
        let mut first = part(0, 2, &[1_001_000], 3);
        let finished = first.finished.as_mut().unwrap();
        finished.pool().wait_us.record(1_000_000).unwrap();
        finished.pool().db_us.record(1_000).unwrap();
        finished.add_pool_timeout(1_000_000);
        recorder.add(first, 10);
        let figures = recorder.second(2).unwrap().pool.unwrap();
        assert_eq!((figures.timeouts, figures.rejected), (1, 0));
        assert!((figures.wait_p99_ms - 1000.0).abs() < 1.0, "{figures:?}");
        assert!((figures.db_p99_ms - 1.0).abs() < 0.01, "{figures:?}");
        assert_eq!(recorder.second(2).unwrap().failed, 1);

        let mut late = part(0, 2, &[], u32::MAX);
        late.finished.as_mut().unwrap().add_rejected();
        recorder.add(late, 11);
        recorder.finish();
        let figures = recorder.second(2).unwrap().pool.unwrap();
        assert_eq!((figures.timeouts, figures.rejected), (1, 1));
        let (wait_us, db_us) = recorder.pool_totals().unwrap();
        assert_eq!((wait_us.len(), db_us.len()), (2, 1));
        let (wait_intervals, db_intervals) = recorder.pool_intervals();
        assert_eq!((wait_intervals.len(), db_intervals.len()), (1, 1));
        let failed = recorder.failed_by_sqlstate();
        assert_eq!(failed.get(POOL_TIMEOUT_SQLSTATE), Some(&1));
        assert_eq!(failed.get(REJECTED_SQLSTATE), Some(&1));
    }

    #[test]
    fn a_second_with_only_a_reconnect_is_handed_over() {
        let mut second = WorkerSecond::new(4);
        assert!(second.is_empty());
        second.reconnect_failures = 1;
        assert!(!second.is_empty());
    }
}
