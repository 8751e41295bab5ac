//! Collects what the load workers measured into per-second histograms,
//! without any worker ever waiting on another.
//!
//! Each worker keeps the histogram of its current second to itself and hands
//! it over (a channel send, once a second) when it completes a transaction in
//! a later second. The progress line reads [`LiveCounters`], plain atomics the
//! workers bump, so a stalled worker never delays it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use hdrhistogram::Histogram;

use super::new_latency_histogram;

/// What one worker measured during one second of the run clock.
#[derive(Debug)]
pub struct WorkerSecond {
    pub second: u32,
    /// Latency of the transactions that completed in this second, in microseconds.
    pub latency_us: Histogram<u64>,
    /// Failed transactions in this second.
    pub failed: u64,
    /// Failed transactions in this second by SQLSTATE.
    pub failed_by_sqlstate: BTreeMap<String, u64>,
}

impl WorkerSecond {
    pub fn new(second: u32) -> WorkerSecond {
        WorkerSecond {
            second,
            latency_us: new_latency_histogram(),
            failed: 0,
            failed_by_sqlstate: BTreeMap::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.latency_us.is_empty() && self.failed == 0
    }
}

/// The merged measurements of all workers: one histogram per second.
#[derive(Debug, Default)]
pub struct Recorder {
    seconds: BTreeMap<u32, WorkerSecond>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// Merges one worker's second into the run's second.
    pub fn add(&mut self, part: WorkerSecond) {
        let merged = self
            .seconds
            .entry(part.second)
            .or_insert_with(|| WorkerSecond::new(part.second));
        merged
            .latency_us
            .add(&part.latency_us)
            .expect("histograms share the same bounds");
        merged.failed += part.failed;
        for (sqlstate, count) in part.failed_by_sqlstate {
            *merged.failed_by_sqlstate.entry(sqlstate).or_insert(0) += count;
        }
    }

    /// The merged second `second`, if any worker reported anything in it.
    pub fn second(&self, second: u32) -> Option<&WorkerSecond> {
        self.seconds.get(&second)
    }

    /// The latency histogram of the whole run.
    pub fn total_latency_us(&self) -> Histogram<u64> {
        let mut total = new_latency_histogram();
        for part in self.seconds.values() {
            total
                .add(&part.latency_us)
                .expect("histograms share the same bounds");
        }
        total
    }

    /// Failed transactions of the whole run by SQLSTATE.
    pub fn failed_by_sqlstate(&self) -> BTreeMap<String, u64> {
        let mut total = BTreeMap::new();
        for part in self.seconds.values() {
            for (sqlstate, count) in &part.failed_by_sqlstate {
                *total.entry(sqlstate.clone()).or_insert(0) += count;
            }
        }
        total
    }
}

/// Per-second counters the workers bump and the progress line reads.
/// Relaxed atomics: no lock, no waiting, exact once the second is over.
#[derive(Debug)]
pub struct LiveCounters {
    slots: Vec<LiveSlot>,
}

#[derive(Debug, Default)]
struct LiveSlot {
    completed: AtomicU64,
    failed: AtomicU64,
    latency_sum_us: AtomicU64,
    latency_max_us: AtomicU64,
    lock_waiters: AtomicU64,
}

/// A snapshot of one second of [`LiveCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LiveSecond {
    pub completed: u64,
    pub failed: u64,
    pub latency_mean_ms: f64,
    pub latency_max_ms: f64,
    /// Most sessions seen waiting on a heavyweight lock in this second.
    pub lock_waiters: u32,
}

impl LiveCounters {
    /// Counters for seconds `0..seconds`; later seconds are ignored.
    pub fn new(seconds: u32) -> LiveCounters {
        LiveCounters {
            slots: (0..seconds).map(|_| LiveSlot::default()).collect(),
        }
    }

    pub fn record_success(&self, second: u32, latency_us: u64) {
        if let Some(slot) = self.slots.get(second as usize) {
            slot.completed.fetch_add(1, Ordering::Relaxed);
            slot.latency_sum_us.fetch_add(latency_us, Ordering::Relaxed);
            slot.latency_max_us.fetch_max(latency_us, Ordering::Relaxed);
        }
    }

    pub fn record_failure(&self, second: u32) {
        if let Some(slot) = self.slots.get(second as usize) {
            slot.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Keeps the highest count of lock waiters seen in `second`.
    pub fn record_lock_waiters(&self, second: u32, waiters: u32) {
        if let Some(slot) = self.slots.get(second as usize) {
            slot.lock_waiters
                .fetch_max(u64::from(waiters), Ordering::Relaxed);
        }
    }

    pub fn second(&self, second: u32) -> LiveSecond {
        let Some(slot) = self.slots.get(second as usize) else {
            return LiveSecond::default();
        };
        let completed = slot.completed.load(Ordering::Relaxed);
        let sum_us = slot.latency_sum_us.load(Ordering::Relaxed);
        LiveSecond {
            completed,
            failed: slot.failed.load(Ordering::Relaxed),
            latency_mean_ms: if completed == 0 {
                0.0
            } else {
                sum_us as f64 / completed as f64 / 1000.0
            },
            latency_max_ms: slot.latency_max_us.load(Ordering::Relaxed) as f64 / 1000.0,
            lock_waiters: slot.lock_waiters.load(Ordering::Relaxed) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_of_the_same_second_merge() {
        let mut recorder = Recorder::new();
        let mut a = WorkerSecond::new(3);
        a.latency_us.record(1_000).unwrap();
        a.failed = 1;
        a.failed_by_sqlstate.insert("40P01".into(), 1);
        let mut b = WorkerSecond::new(3);
        b.latency_us.record(9_000).unwrap();
        let mut c = WorkerSecond::new(5);
        c.latency_us.record(2_000).unwrap();
        recorder.add(a);
        recorder.add(b);
        recorder.add(c);
        let third = recorder.second(3).unwrap();
        assert_eq!(third.latency_us.len(), 2);
        assert_eq!(third.failed, 1);
        assert!(recorder.second(4).is_none());
        assert_eq!(recorder.total_latency_us().len(), 3);
        assert_eq!(recorder.failed_by_sqlstate().get("40P01"), Some(&1));
    }

    #[test]
    fn live_counters_give_mean_and_max() {
        let live = LiveCounters::new(2);
        live.record_success(1, 1_000);
        live.record_success(1, 3_000);
        live.record_failure(1);
        live.record_lock_waiters(1, 4);
        live.record_lock_waiters(1, 2);
        live.record_success(7, 1_000); // past the end: ignored
        let second = live.second(1);
        assert_eq!(second.completed, 2);
        assert_eq!(second.failed, 1);
        assert_eq!(second.latency_mean_ms, 2.0);
        assert_eq!(second.latency_max_ms, 3.0);
        assert_eq!(second.lock_waiters, 4);
        assert_eq!(live.second(0), LiveSecond::default());
    }
}
