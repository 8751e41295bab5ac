//! The progress line: once a second on stderr, in pgbench's `-P 1` shape plus
//! lock waiters and the DDL state. Reads only atomics and a watch channel, so a
//! stalled worker never delays it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::RunClock;
use super::arrivals::Arrivals;
use crate::metrics::LiveCounters;
use crate::metrics::live::LiveSecond;

/// What the DDL injector is doing, for the progress line: a short text, and
/// while it sleeps between tries, when the next one starts.
#[derive(Debug, Clone, PartialEq)]
pub struct DdlStatus {
    pub text: String,
    /// When the next try starts, in seconds on the run's clock.
    pub next_try_at_s: Option<f64>,
}

impl DdlStatus {
    /// A status without a next try.
    pub fn says(text: impl Into<String>) -> DdlStatus {
        DdlStatus {
            text: text.into(),
            next_try_at_s: None,
        }
    }

    /// The text as of `now_s` on the run's clock: with `next in X s`, counted
    /// down to the next try, while one is due.
    pub fn render(&self, now_s: f64) -> String {
        match self.next_try_at_s {
            Some(at_s) => format!("{}, next in {:.1} s", self.text, (at_s - now_s).max(0.0)),
            None => self.text.clone(),
        }
    }
}

/// Prints one line per completed second until the load ends.
pub async fn report_each_second(
    clock: RunClock,
    live: Arc<LiveCounters>,
    ddl_status: watch::Receiver<DdlStatus>,
    queue_status: watch::Receiver<String>,
    has_ddl: bool,
    arrivals: Option<Arc<Arrivals>>,
) {
    for second in 1..=clock.duration_s() {
        clock
            .sleep_until(Duration::from_secs(u64::from(second)))
            .await;
        let status = has_ddl.then(|| ddl_status.borrow().render(clock.now_s()));
        let mut line = progress_line(second, &live.second(second - 1), status.as_deref());
        if let Some(arrivals) = &arrivals {
            let lag = arrivals.lag(std::time::Instant::now());
            line.push_str(&format!(", schedule lag {:.1} s", lag.as_secs_f64()));
        }
        // The head of the lock queue, while anyone waits.
        let queue = queue_status.borrow().clone();
        if !queue.is_empty() {
            line.push_str("; ");
            line.push_str(&queue);
        }
        stderrln!("{line}");
    }
}

/// `progress: 7.0 s, 0.0 tps, lat 0.000 ms max 0.000 ms, 0 failed, 4 waiting on locks, ddl: try 1 waiting`;
/// a second with retries says `0 failed, 3 retried, 5 retries, ...` as pgbench's `-P` does.
pub fn progress_line(elapsed_s: u32, second: &LiveSecond, ddl_status: Option<&str>) -> String {
    let retries = match second.retried {
        0 => String::new(),
        retried => format!(", {retried} retried, {} retries", second.retries),
    };
    let mut line = format!(
        "progress: {elapsed_s}.0 s, {:.1} tps, lat {:.3} ms max {:.3} ms, {} failed{retries}, {} waiting on locks",
        second.completed as f64,
        second.latency_mean_ms,
        second.latency_max_ms,
        second.failed,
        second.lock_waiters
    );
    if let Some(status) = ddl_status {
        line.push_str(", ddl: ");
        line.push_str(status);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_has_pgbench_shape_plus_locks_and_ddl() {
        let stalled = LiveSecond {
            completed: 0,
            failed: 0,
            latency_mean_ms: 0.0,
            latency_max_ms: 0.0,
            lock_waiters: 4,
            ..LiveSecond::default()
        };
        assert_eq!(
            progress_line(7, &stalled, Some("try 1 waiting")),
            "progress: 7.0 s, 0.0 tps, lat 0.000 ms max 0.000 ms, 0 failed, 4 waiting on locks, ddl: try 1 waiting"
        );
        let busy = LiveSecond {
            completed: 2123,
            failed: 1,
            latency_mean_ms: 1.6434,
            latency_max_ms: 12.5,
            lock_waiters: 0,
            ..LiveSecond::default()
        };
        assert_eq!(
            progress_line(1, &busy, None),
            "progress: 1.0 s, 2123.0 tps, lat 1.643 ms max 12.500 ms, 1 failed, 0 waiting on locks"
        );
    }

    #[test]
    fn a_second_with_retries_says_them_as_pgbench_does() {
        let retrying = LiveSecond {
            completed: 40,
            failed: 1,
            latency_mean_ms: 2.0,
            latency_max_ms: 9.0,
            retried: 3,
            retries: 5,
            ..LiveSecond::default()
        };
        assert_eq!(
            progress_line(2, &retrying, None),
            "progress: 2.0 s, 40.0 tps, lat 2.000 ms max 9.000 ms, 1 failed, 3 retried, 5 retries, 0 waiting on locks"
        );
    }
}
