//! What the progress line reads while the run goes on: per-second counters the
//! workers bump, plain relaxed atomics, so that a stalled worker never delays
//! the line; exact once the second is over. The lock observer and the open-loop
//! schedule add their per-second figures here too.

use std::sync::atomic::{AtomicU64, Ordering};

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
    retried: AtomicU64,
    retries: AtomicU64,
    latency_sum_us: AtomicU64,
    latency_max_us: AtomicU64,
    lock_waiters: AtomicU64,
    arrived: AtomicU64,
    dequeued: AtomicU64,
    in_flight: AtomicU64,
    pool_in_use: AtomicU64,
}

/// A snapshot of one second of [`LiveCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LiveSecond {
    pub completed: u64,
    pub failed: u64,
    /// Transactions that ended after more than one try (`--max-tries`), and their tries beyond the first.
    pub retried: u64,
    pub retries: u64,
    /// The mean and max latency of the transactions that ended, completed or failed.
    pub latency_mean_ms: f64,
    pub latency_max_ms: f64,
    /// Most sessions seen waiting on a heavyweight lock in this second.
    pub lock_waiters: u32,
    /// Open loop: transactions scheduled to start in this second.
    pub arrived: u64,
    /// Open loop: scheduled transactions taken off the queue in this second
    /// (sent, skipped or timed out before being sent).
    pub dequeued: u64,
    /// Application pool: requests waiting or running at the end of this second.
    pub in_flight: u64,
    /// Application pool: connections checked out at the end of this second.
    pub pool_in_use: u64,
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

    /// Counts a transaction that failed after `latency_us`: its wait counts in
    /// the second's latency as a completed one's does.
    pub fn record_failure(&self, second: u32, latency_us: u64) {
        if let Some(slot) = self.slots.get(second as usize) {
            slot.failed.fetch_add(1, Ordering::Relaxed);
            slot.latency_sum_us.fetch_add(latency_us, Ordering::Relaxed);
            slot.latency_max_us.fetch_max(latency_us, Ordering::Relaxed);
        }
    }

    /// Counts a transaction that ended in `second` after `retries` tries beyond the first.
    pub fn record_retries(&self, second: u32, retries: u64) {
        if let Some(slot) = self.slots.get(second as usize) {
            slot.retried.fetch_add(1, Ordering::Relaxed);
            slot.retries.fetch_add(retries, Ordering::Relaxed);
        }
    }

    /// Keeps the highest count of lock waiters seen in `second`.
    pub fn record_lock_waiters(&self, second: u32, waiters: u32) {
        if let Some(slot) = self.slots.get(second as usize) {
            slot.lock_waiters
                .fetch_max(u64::from(waiters), Ordering::Relaxed);
        }
    }

    /// Counts a scheduled arrival (open loop) in the second it is scheduled for.
    pub fn record_arrival(&self, second: u32) {
        self.record_arrivals(second, 1);
    }

    /// Counts `count` scheduled arrivals in `second`.
    pub fn record_arrivals(&self, second: u32, count: u64) {
        if let Some(slot) = self.slots.get(second as usize) {
            slot.arrived.fetch_add(count, Ordering::Relaxed);
        }
    }

    /// Counts an arrival leaving the queue (open loop) in the second it did.
    pub fn record_dequeue(&self, second: u32) {
        if let Some(slot) = self.slots.get(second as usize) {
            slot.dequeued.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Keeps the application pool's gauges at the end of `second`.
    pub fn record_pool_gauges(&self, second: u32, in_flight: u64, pool_in_use: u64) {
        if let Some(slot) = self.slots.get(second as usize) {
            slot.in_flight.store(in_flight, Ordering::Relaxed);
            slot.pool_in_use.store(pool_in_use, Ordering::Relaxed);
        }
    }

    /// Transactions behind schedule at the end of each second `0..seconds`:
    /// arrived by then and not yet taken off the queue.
    pub fn behind_schedule(&self, seconds: u32) -> Vec<u64> {
        let mut queued: i64 = 0;
        (0..seconds)
            .map(|second| {
                let figures = self.second(second);
                queued += figures.arrived as i64 - figures.dequeued as i64;
                queued.max(0) as u64
            })
            .collect()
    }

    pub fn second(&self, second: u32) -> LiveSecond {
        let Some(slot) = self.slots.get(second as usize) else {
            return LiveSecond::default();
        };
        let completed = slot.completed.load(Ordering::Relaxed);
        let failed = slot.failed.load(Ordering::Relaxed);
        let sum_us = slot.latency_sum_us.load(Ordering::Relaxed);
        let ended = completed + failed;
        LiveSecond {
            completed,
            failed,
            retried: slot.retried.load(Ordering::Relaxed),
            retries: slot.retries.load(Ordering::Relaxed),
            latency_mean_ms: if ended == 0 {
                0.0
            } else {
                sum_us as f64 / ended as f64 / 1000.0
            },
            latency_max_ms: slot.latency_max_us.load(Ordering::Relaxed) as f64 / 1000.0,
            lock_waiters: slot.lock_waiters.load(Ordering::Relaxed) as u32,
            arrived: slot.arrived.load(Ordering::Relaxed),
            dequeued: slot.dequeued.load(Ordering::Relaxed),
            in_flight: slot.in_flight.load(Ordering::Relaxed),
            pool_in_use: slot.pool_in_use.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behind_schedule_is_arrived_minus_dequeued_so_far() {
        let live = LiveCounters::new(4);
        for (second, arrived, dequeued) in [(0, 10, 10), (1, 10, 2), (2, 10, 3), (3, 10, 35)] {
            for _ in 0..arrived {
                live.record_arrival(second);
            }
            for _ in 0..dequeued {
                live.record_dequeue(second);
            }
        }
        assert_eq!(live.behind_schedule(4), [0, 8, 15, 0]);
    }

    #[test]
    fn live_counters_give_mean_and_max_of_every_transaction_that_ended() {
        let live = LiveCounters::new(2);
        live.record_success(1, 1_000);
        live.record_success(1, 3_000);
        live.record_failure(1, 5_000);
        live.record_lock_waiters(1, 4);
        live.record_lock_waiters(1, 2);
        live.record_success(7, 1_000); // past the end: ignored
        let second = live.second(1);
        assert_eq!(second.completed, 2);
        assert_eq!(second.failed, 1);
        assert_eq!(second.latency_mean_ms, 3.0);
        assert_eq!(second.latency_max_ms, 5.0);
        assert_eq!(second.lock_waiters, 4);
        assert_eq!(live.second(0), LiveSecond::default());
    }
}
