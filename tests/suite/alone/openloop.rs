//! An open loop below capacity keeps its schedule and sends each request on
//! time (the rest of the topic: `crate::openloop`).

use std::time::Duration;

use crate::common::*;
use crate::openloop::hlog_counts;
use stallbench::config::Mode;

#[test]
fn below_capacity_each_request_is_sent_on_time() {
    // Quiet: the lag is measured in fractions of a millisecond; a light
    // neighbour leaves it at about 0.5 ms (see below), four busy ones may not.
    let _cpus = cpus_quiet();
    let mut run = ShortRun::on_shared_server(&reference());
    run.args.rate = Some(200.0);
    run.args.duration = Some(Duration::from_secs(7));
    let report = run.execute(Mode::LoadOnly);
    let load = &report.strategies[0];

    // The steady state: the first and the last second left out. A millisecond
    // timer makes each request about 1 ms late, a schedule that falls behind
    // makes it later every second; the benchmark script carries the precise
    // figure against pgbench -R, this bound is a loose one. It holds for the
    // median second: a neighbour's busy core (a shared CI runner) once made
    // one second 1.5 ms late on average while the others were 0.2-0.3 ms, a
    // moment the machine took, not a schedule that is late. With other
    // processes' builds beside the suite (load 11) the median second was
    // 0.51 ms late (0.43 to 0.59): the bound is 1 ms, still half of what a
    // second of a falling-behind schedule adds.
    let steady = &load.seconds[1..load.seconds.len() - 1];
    let mut lags_ms: Vec<f64> = steady.iter().map(|row| row.lag_ms).collect();
    lags_ms.sort_by(f64::total_cmp);
    let median_lag_ms = lags_ms[lags_ms.len() / 2];
    assert!(
        median_lag_ms < 1.0,
        "--rate 200: median second's schedule lag {median_lag_ms:.3} ms, per second {:?}",
        steady.iter().map(|row| row.lag_ms).collect::<Vec<_>>()
    );
}

#[test]
fn a_rate_below_capacity_is_kept_and_the_interval_log_holds_every_transaction() {
    // Quiet: every second's lag is bounded (100 ms); beside four shared
    // tests one second once fell 1 s behind (2026-12-07, `scripts/test`).
    let _cpus = cpus_quiet();
    let mut run = ShortRun::on_shared_server(&reference());
    // 400 a second: below what four scenarios on one free core leave this
    // one (about 780 a second with a neighbour's busy core, HOG=1: at 800 the
    // schedule fell 107 ms behind).
    run.args.rate = Some(400.0);
    run.args.duration = Some(Duration::from_secs(5));
    let report = run.execute(Mode::LoadOnly);
    let load = &report.strategies[0];

    // 2,000 scheduled; a Poisson count varies by about 2.2% (45), the bound
    // is 7.5% (150, more than three times that).
    let transactions = load.summary.transactions;
    assert!(
        (1_850..=2_150).contains(&transactions),
        "--rate 400 for 5 s: {transactions} transactions"
    );
    assert_eq!(load.summary.failed, 0);
    for row in &load.seconds {
        assert!(
            row.lag_ms < 100.0,
            "below capacity the schedule keeps up: {row:?}"
        );
    }
    assert!(load.summary.max_behind_schedule < 100, "{:?}", load.summary);

    // The interval log parses back with the hdrhistogram crate and counts every transaction.
    let counts = hlog_counts(&run.out.join("latency-load.hlog"));
    let seconds: Vec<u64> = counts.iter().map(|(second, _)| *second).collect();
    assert_eq!(seconds, (0..5).collect::<Vec<u64>>());
    let total: u64 = counts.iter().map(|(_, count)| count).sum();
    assert_eq!(total, transactions);
}
