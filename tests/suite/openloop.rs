//! Open-loop load (`--rate`): the schedule is kept below capacity and each
//! request is sent on time, the queue behind a stall shows in the latency,
//! `--client-timeout` turns queued requests into failures and cancels them on
//! the server, and the interval log holds every transaction.
//! The schedule kept and each request sent on time are timed in the quiet
//! lane (`alone::openloop`).

use std::time::Duration;

use crate::common::*;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use stallbench::config::{Config, Mode};
use stallbench::metrics::{AttemptOutcome, StrategyReport};

fn naive() -> Mode {
    Mode::Run {
        strategy: "naive".to_string(),
    }
}

/// The naive ALTER's wait: how long the readers were stalled.
fn stall_ms(report: &StrategyReport) -> f64 {
    let alter = report.attempts.first().expect("naive runs one attempt");
    assert_eq!(alter.outcome, AttemptOutcome::Ok, "{alter:?}");
    assert!(
        alter.waited_ms >= 3000.0,
        "the ALTER should queue: {alter:?}"
    );
    alter.waited_ms
}

/// Every interval of an `.hlog` file, decoded: (start second, transactions).
pub(crate) fn hlog_counts(path: &std::path::Path) -> Vec<(u64, u64)> {
    use base64::Engine;
    let bytes = std::fs::read(path).unwrap();
    let mut deserializer = Deserializer::new();
    let mut counts = Vec::new();
    for entry in IntervalLogIterator::new(&bytes) {
        if let LogEntry::Interval(interval) = entry.unwrap() {
            let encoded = base64::engine::general_purpose::STANDARD
                .decode(interval.encoded_histogram())
                .unwrap();
            let histogram: hdrhistogram::Histogram<u64> =
                deserializer.deserialize(&mut encoded.as_slice()).unwrap();
            counts.push((interval.start_timestamp().as_secs(), histogram.len()));
        }
    }
    counts
}

#[test]
fn under_a_rate_the_p99_latency_shows_the_queue_behind_a_stall() {
    let _cpus = cpus_shared();
    let mut run = ShortRun::on_shared_server(&reference());
    run.args.rate = Some(200.0);
    // 3 s after the stall for the queue to drain, on a busy machine too.
    run.args.duration = Some(Duration::from_secs(8));
    let report = run.execute(naive());
    let naive = &report.strategies[0];
    let stall_ms = stall_ms(naive);

    // Requests kept arriving during the stall and waited for it: their latency
    // counts from the scheduled start, so the p99 is close to the stall itself.
    assert!(
        naive.summary.lat_p99_ms >= 0.8 * stall_ms,
        "open loop: p99 {} ms for a {stall_ms} ms stall",
        naive.summary.lat_p99_ms
    );
    // The queue: hundreds behind schedule at the worst second, then drained.
    assert!(
        naive.summary.max_behind_schedule >= 300,
        "{:?}",
        naive.summary
    );
    // Drained by the last second: one or two arrivals of that very instant
    // may still wait for a client on a busy machine (200 arrive per second).
    let last = naive.seconds.last().unwrap();
    assert!(
        last.behind_schedule <= 3,
        "not drained at the end: {last:?}"
    );
    let worst_lag = naive
        .seconds
        .iter()
        .map(|row| row.lag_ms)
        .fold(0.0, f64::max);
    assert!(
        worst_lag >= 0.3 * stall_ms,
        "lag per second: {worst_lag} ms"
    );
}

#[test]
fn a_client_timeout_fails_queued_requests_and_cancels_them_on_the_server() {
    let _cpus = cpus_shared();
    let mut run = ShortRun::on_shared_server(&reference());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    run.args.rate = Some(200.0);
    run.args.pool_size = Some(4);
    run.args.client_timeout = Some(Duration::from_secs(1));
    let config = Config::new(Some(run.workload.to_str().unwrap()), naive(), &run.args).unwrap();
    let report = runtime.block_on(stallbench::execute(&config)).unwrap();
    let naive = &report.strategies[0];
    let stall_ms = stall_ms(naive);

    // Requests that waited past 1 s failed as timeouts, second by second through the stall.
    let seconds_with_timeouts = naive.seconds.iter().filter(|row| row.timeouts > 0).count();
    assert!(
        seconds_with_timeouts >= 3,
        "timeouts per second: {:?}",
        naive
            .seconds
            .iter()
            .map(|row| row.timeouts)
            .collect::<Vec<_>>()
    );
    assert!(naive.summary.timeouts >= 300, "{:?}", naive.summary);
    assert!(naive.summary.failed >= naive.summary.timeouts);
    for row in &naive.seconds {
        assert!(row.failed >= row.timeouts, "{row:?}");
    }
    // Successful requests never took longer than the timeout (plus scheduling
    // noise); the timed-out ones count their wait in lat_* (a second or more).
    let ok_max_ms = naive.summary.ok_max_ms.expect("ok_max_ms is measured");
    assert!(ok_max_ms < 1500.0, "{:?}", naive.summary);
    assert!(naive.summary.lat_max_ms >= 1000.0, "{:?}", naive.summary);

    // The server's side: a cancelled query leaves the lock queue, so no reader
    // was seen waiting much longer than the timeout while the ALTER waited for seconds.
    let longest_reader_wait = naive
        .locks
        .samples
        .iter()
        .filter(|sample| sample.role.starts_with("reader-"))
        .map(|sample| sample.wait_ms)
        .fold(0.0, f64::max);
    assert!(
        longest_reader_wait > 0.0 && longest_reader_wait < 2_000.0,
        "readers waited up to {longest_reader_wait} ms in a {stall_ms} ms stall"
    );

    // And after the run no query of the harness is still running in its database.
    let leftovers = query_int(
        &runtime,
        run.db_url().unwrap(),
        "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'stallbench-%' \
         AND state <> 'idle' AND datname = current_database()",
    );
    assert_eq!(
        leftovers, 0,
        "queries of the harness still running after the run"
    );
}
