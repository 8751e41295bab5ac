//! Open-loop arrivals (`--rate`): one Poisson process of scheduled start
//! times, shared by every connection, as pgbench `-R` schedules them.
//!
//! A free connection claims the next arrival; if that lies in the future it
//! waits for it (on a microsecond timer, [`super::precise_timer`]), if it
//! lies in the past the transaction is already late and its latency counts
//! from the scheduled time, so time spent queueing behind a stall is measured
//! (no coordinated omission). Claiming is one
//! compare-and-swap on a shared counter: no lock, nobody waits on anybody.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, RngExt};

use crate::metrics::LiveCounters;

/// The arrival schedule of one run: start times at `rate_tps` on average,
/// exponentially distributed gaps, from the start of the clock to its end.
#[derive(Debug)]
pub struct Arrivals {
    start: Instant,
    end_ns: u64,
    mean_gap_ns: f64,
    /// The next unclaimed arrival, in ns after `start`.
    next_ns: AtomicU64,
}

impl Arrivals {
    /// A schedule from `start` for `duration`; the first arrival is one random gap in.
    pub fn new(start: Instant, duration: Duration, rate_tps: f64, rng: &mut impl Rng) -> Arrivals {
        let mean_gap_ns = 1e9 / rate_tps;
        Arrivals {
            start,
            end_ns: duration.as_nanos() as u64,
            mean_gap_ns,
            next_ns: AtomicU64::new(exponential_gap_ns(mean_gap_ns, rng)),
        }
    }

    /// Claims the next arrival and counts it in the second it is scheduled in;
    /// `None` once the schedule has passed the end of the run.
    pub fn claim(&self, rng: &mut impl Rng, live: &LiveCounters) -> Option<Instant> {
        let gap_ns = exponential_gap_ns(self.mean_gap_ns, rng);
        let mut at_ns = self.next_ns.load(Ordering::Relaxed);
        loop {
            if at_ns >= self.end_ns {
                return None;
            }
            match self.next_ns.compare_exchange_weak(
                at_ns,
                at_ns + gap_ns,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(current) => at_ns = current,
            }
        }
        live.record_arrival(second_of_ns(at_ns));
        Some(self.start + Duration::from_nanos(at_ns))
    }

    /// How late the schedule is at `now`: the age of the oldest arrival no
    /// connection has taken yet (zero when the connections keep up).
    pub fn lag(&self, now: Instant) -> Duration {
        let next = self.start + Duration::from_nanos(self.next_ns.load(Ordering::Relaxed));
        now.saturating_duration_since(next)
    }

    /// Counts the arrivals nobody claimed before the run ended (the queue left
    /// behind when the clients could not keep up), so the per-second queue
    /// length is complete: the expected number, rate times the unclaimed part
    /// of each second, without drawing them one by one.
    pub fn count_unclaimed(&self, live: &LiveCounters) {
        let from_ns = self.next_ns.load(Ordering::Relaxed);
        let rate_per_ns = 1.0 / self.mean_gap_ns;
        let mut second = second_of_ns(from_ns);
        while u64::from(second) * NS_PER_SECOND < self.end_ns {
            let start_ns = (u64::from(second) * NS_PER_SECOND).max(from_ns);
            let end_ns = ((u64::from(second) + 1) * NS_PER_SECOND).min(self.end_ns);
            let expected = ((end_ns - start_ns) as f64 * rate_per_ns).round() as u64;
            live.record_arrivals(second, expected);
            second += 1;
        }
    }
}

/// One exponentially distributed gap between arrivals, at least 1 ns.
fn exponential_gap_ns(mean_gap_ns: f64, rng: &mut impl Rng) -> u64 {
    let uniform: f64 = rng.random_range(0.0..1.0);
    (-(1.0 - uniform).ln() * mean_gap_ns).max(1.0) as u64
}

const NS_PER_SECOND: u64 = 1_000_000_000;

fn second_of_ns(ns: u64) -> u32 {
    (ns / NS_PER_SECOND) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn arrivals_come_at_the_rate_and_stop_at_the_end() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let live = LiveCounters::new(10);
        let start = Instant::now();
        let arrivals = Arrivals::new(start, Duration::from_secs(10), 500.0, &mut rng);
        let mut count = 0u64;
        let mut last = start;
        while let Some(at) = arrivals.claim(&mut rng, &live) {
            assert!(at >= last, "arrivals are claimed in time order");
            last = at;
            count += 1;
        }
        // 5,000 expected; a Poisson count has a standard deviation of about 71.
        assert!((4_700..=5_300).contains(&count), "arrivals: {count}");
        assert!(last < start + Duration::from_secs(10));
        let per_second: u64 = (0..10).map(|second| live.second(second).arrived).sum();
        assert_eq!(per_second, count);
        assert!(arrivals.claim(&mut rng, &live).is_none());
    }

    #[test]
    fn unclaimed_arrivals_are_counted_at_the_end() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let live = LiveCounters::new(4);
        let arrivals = Arrivals::new(Instant::now(), Duration::from_secs(4), 100.0, &mut rng);
        arrivals.claim(&mut rng, &live).unwrap();
        arrivals.count_unclaimed(&live);
        let per_second: Vec<u64> = (0..4).map(|second| live.second(second).arrived).collect();
        // The claimed one plus about 100 a second.
        assert!((99..=102).contains(&per_second[0]), "{per_second:?}");
        assert_eq!(&per_second[1..], &[100, 100, 100]);
    }
}
