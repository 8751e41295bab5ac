//! A synthetic run shaped like the reference experiment, for tests (no database).
//!
//! `naive`: about 3000 tps in seconds 0-5, nothing in seconds 6-14 while its
//! ALTER waits behind the blocker (4 s .. 16 s), then recovery; one attempt
//! 6.0 s .. 15.7 s that succeeds. `retry`: never at zero; four attempts cancelled
//! by `lock_timeout`, the fifth at 18 s succeeds.

use crate::metrics::failures::FailureKind;

use crate::metrics::{
    AttemptOutcome, BlockerWindow, DdlAttempt, DdlOutcome, DdlState, DdlWindow,
    LatencyDistribution, RankingRow, RunFigures, RunReport, SecondRow, StrategyReport,
    new_latency_histogram, summarize, test_second,
};

/// Seconds of load in each strategy of the sample.
pub const SAMPLE_SECONDS: u32 = 25;

/// The sample run as an open loop with a client timeout: during naive's stall
/// requests queue behind schedule, time out, and some are skipped.
pub fn open_loop_report() -> RunReport {
    let mut report = reference_report();
    report.load_loop = crate::choices::LoadLoop::Open;
    let naive = &mut report.strategies[0];
    for row in &mut naive.seconds {
        if (6..=14).contains(&row.second) {
            row.failed = 40;
            row.timeouts = 40;
            row.skipped = 3;
            row.lag_ms = 512.25;
            row.behind_schedule = 300 * u64::from(row.second - 5);
        }
    }
    let histogram = naive
        .latency
        .histogram
        .clone()
        .expect("a sample has a histogram");
    naive.summary = summarize(
        &naive.strategy,
        &naive.seconds,
        &naive.attempts,
        naive.blocker.as_ref(),
        &histogram,
        &crate::metrics::RunFacts::default(),
    );
    report
}

/// The sample run with each strategy run twice, interleaved (`naive, retry,
/// naive, retry`); the second repeat of each has 10% fewer transactions every second.
pub fn repeated_report() -> RunReport {
    let first = reference_report();
    let mut strategies = first.strategies.clone();
    for run in &first.strategies {
        let mut again = run.clone();
        for row in &mut again.seconds {
            row.tps = row.tps * 9 / 10;
        }
        again.summary = summarize(
            &again.strategy,
            &again.seconds,
            &again.attempts,
            again.blocker.as_ref(),
            again
                .latency
                .histogram
                .as_ref()
                .expect("a sample has a histogram"),
            &crate::metrics::RunFacts {
                repeat: 2,
                ..crate::metrics::RunFacts::default()
            },
        );
        strategies.push(again);
    }
    RunReport {
        workload: first.workload,
        strategies,
        interruption: None,
        load_on: crate::choices::LoadOn::Primary,
        load_loop: crate::choices::LoadLoop::Closed,
    }
}

/// The two-strategy sample run of workload `add-column`.
pub fn reference_report() -> RunReport {
    RunReport {
        workload: "add-column".to_string(),
        strategies: vec![naive(), retry()],
        interruption: None,
        load_on: crate::choices::LoadOn::Primary,
        load_loop: crate::choices::LoadLoop::Closed,
    }
}

fn blocker() -> BlockerWindow {
    BlockerWindow {
        started_s: 4.0,
        ended_s: 16.0,
    }
}

/// A normal second: `tps` transactions of about 1.25 ms.
fn busy_second(second: u32, tps: u64, state: DdlState) -> SecondRow {
    SecondRow {
        lat_mean_ms: 1.25,
        lat_p50_ms: 1.1,
        lat_p99_ms: 4.0,
        lat_max_ms: 9.5,
        blocker_active: (4..16).contains(&second),
        ddl_state: state,
        ..test_second(second, tps)
    }
}

/// A stalled second: no transaction, 100 sessions waiting for a lock.
fn zero_second(second: u32, state: DdlState) -> SecondRow {
    SecondRow {
        lat_mean_ms: 0.0,
        lat_p50_ms: 0.0,
        lat_p99_ms: 0.0,
        lat_max_ms: 0.0,
        lock_waiters: 100,
        blocker_active: (4..16).contains(&second),
        ddl_state: state,
        ..test_second(second, 0)
    }
}

fn attempt(number: u32, started_s: f64, ended_s: f64, outcome: AttemptOutcome) -> DdlAttempt {
    let mut attempt = crate::metrics::test_attempt(number, started_s, ended_s, outcome);
    // The last 300 ms (or the whole try, if shorter) hold the lock.
    let duration_ms = (ended_s - started_s) * 1000.0;
    let held_ms = match outcome {
        AttemptOutcome::Ok => duration_ms.min(300.0),
        _ => 0.0,
    };
    attempt.lock = Some(crate::metrics::LockPhases {
        granted_s: (outcome == AttemptOutcome::Ok).then_some(ended_s - held_ms / 1000.0),
        wait_ms: duration_ms - held_ms,
        held_ms,
        held_waiting_ms: 0.0,
    });
    if outcome != AttemptOutcome::Ok {
        attempt.sqlstate = Some(FailureKind::from_cell("55P03"));
        attempt.message = "canceling statement due to lock timeout".to_string();
    }
    attempt
}

/// Records `count` latencies spread evenly from `low_us` to `high_us`.
fn record_spread(
    histogram: &mut hdrhistogram::Histogram<u64>,
    count: u64,
    low_us: u64,
    high_us: u64,
) {
    for index in 0..count {
        let value = low_us + (high_us - low_us) * index / count.max(1);
        histogram.record(value).unwrap();
    }
}

/// Records one normal second: mostly 0.8-1.6 ms, 1% up to 4 ms, one 9.5 ms.
fn record_busy_second(histogram: &mut hdrhistogram::Histogram<u64>, tps: u64) {
    let slow = tps / 100;
    record_spread(histogram, tps - slow - 1, 800, 1_600);
    record_spread(histogram, slow, 1_600, 4_000);
    histogram.record(9_500).unwrap();
}

fn strategy_report(
    name: &str,
    seconds: Vec<SecondRow>,
    attempts: Vec<DdlAttempt>,
    histogram: hdrhistogram::Histogram<u64>,
) -> StrategyReport {
    let blocker = blocker();
    let summary = summarize(
        name,
        &seconds,
        &attempts,
        Some(&blocker),
        &histogram,
        &crate::metrics::RunFacts::default(),
    );
    StrategyReport {
        strategy: name.to_string(),
        seconds,
        attempts,
        blocker: Some(blocker),
        latency: LatencyDistribution::from_histogram(histogram),
        summary,
        locks: Default::default(),
        intervals: Default::default(),
        failures: Vec::new(),
        lock_trace: Vec::new(),
        invariants: Vec::new(),
    }
}

fn naive() -> StrategyReport {
    let mut histogram = new_latency_histogram();
    let mut seconds = Vec::new();
    for second in 0..SAMPLE_SECONDS {
        let row = match second {
            0..=5 => {
                let tps = [3000, 2950, 3050, 3010, 2980, 3020][second as usize];
                record_busy_second(&mut histogram, tps);
                busy_second(second, tps, DdlState::Idle)
            }
            6..=14 => zero_second(second, DdlState::Running),
            15 => {
                // The queue drains: 100 transactions that waited up to 9.7 s, then a burst.
                record_spread(&mut histogram, 100, 700_000, 9_700_000);
                record_busy_second(&mut histogram, 1_000);
                let mut row = busy_second(second, 1_100, DdlState::Running);
                row.lat_mean_ms = 470.0;
                row.lat_p50_ms = 1.3;
                row.lat_p99_ms = 9_100.0;
                row.lat_max_ms = 9_700.0;
                row.lock_waiters = 100;
                row
            }
            _ => {
                let tps = 2990 + u64::from(second % 3) * 10;
                record_busy_second(&mut histogram, tps);
                busy_second(second, tps, DdlState::Done)
            }
        };
        seconds.push(row);
    }
    let attempts = vec![attempt(1, 6.0, 15.7, AttemptOutcome::Ok)];
    strategy_report("naive", seconds, attempts, histogram)
}

fn retry() -> StrategyReport {
    let mut histogram = new_latency_histogram();
    let attempts = vec![
        attempt(1, 6.0, 6.5, AttemptOutcome::LockTimeout),
        attempt(2, 7.5, 8.0, AttemptOutcome::LockTimeout),
        attempt(3, 10.0, 10.5, AttemptOutcome::LockTimeout),
        attempt(4, 13.5, 14.0, AttemptOutcome::LockTimeout),
        attempt(5, 18.0, 18.01, AttemptOutcome::Ok),
    ];
    let mut seconds = Vec::new();
    for second in 0..SAMPLE_SECONDS {
        let state = match second {
            0..=5 => DdlState::Idle,
            6 | 7 | 10 | 13 | 18 => DdlState::Running,
            8..=17 => DdlState::Backoff,
            _ => DdlState::Done,
        };
        let dipped = matches!(second, 6 | 7 | 10 | 13);
        let tps = if dipped {
            1_700
        } else {
            2_980 + u64::from(second % 4) * 15
        };
        record_busy_second(&mut histogram, tps);
        let mut row = busy_second(second, tps, state);
        if dipped {
            // Transactions queued behind the attempt for up to 500 ms.
            record_spread(&mut histogram, 100, 50_000, 500_000);
            row.lat_mean_ms = 17.0;
            row.lat_p99_ms = 420.0;
            row.lat_max_ms = 500.0;
            row.lock_waiters = 100;
        }
        seconds.push(row);
    }
    strategy_report("retry", seconds, attempts, histogram)
}

/// A ranking row of one run with neutral figures, for ordering tests: a
/// baseline of 1000 tps, steady seconds without noise, a worst second of
/// 1000 tps, a migration done at 6 s in one try.
pub fn neutral_row(name: &str, run_order: usize) -> RankingRow {
    RankingRow {
        strategy: name.to_string(),
        run_order,
        runs: vec![neutral_run()],
    }
}

/// The figures of [`neutral_row`]'s run.
pub fn neutral_run() -> RunFigures {
    RunFigures {
        window: Some(DdlWindow {
            start_s: 5.0,
            end_s: 7.0,
        }),
        worst_second_tps: 1000,
        worst_second_p99_ms: 10.0,
        worst_latency: crate::metrics::ranking::WorstLatency::SecondP99,
        window_max_latency_ms: 20.0,
        baseline_tps: 1000.0,
        steady_shares: (1.0, 1.0),
        steady_p99_ms: (10.0, 10.0),
        failed_transactions: 0,
        transactions: 100_000,
        mean_tps: 1000.0,
        main_failure: None,
        longest_stall_s: 0,
        zero_tps_seconds: 0,
        migration_done_at_s: Some(6.0),
        ddl_tries: 1,
        ddl_outcome: DdlOutcome::Ok,
        blocker_outcome: "ok".to_string(),
        judged_on_replica: false,
        anomalies: 0,
        invariants: Vec::new(),
    }
}
