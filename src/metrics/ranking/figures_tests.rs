use super::*;
use crate::export::sentences::{migration_done_cell, window_note};
use crate::metrics::failures::test_failure as failure;
use crate::metrics::{
    AttemptOutcome, LatencyDistribution, Summary, new_latency_histogram, summarize,
};
use crate::testing::neutral_row as row;

fn second(second: u32, tps: u64, p99_ms: f64, max_ms: f64) -> SecondRow {
    SecondRow {
        lat_p99_ms: p99_ms,
        lat_max_ms: max_ms,
        ..crate::metrics::test_second(second, tps)
    }
}

fn attempt(number: u32, started_s: f64, ended_s: f64, outcome: AttemptOutcome) -> DdlAttempt {
    crate::metrics::test_attempt(number, started_s, ended_s, outcome)
}

/// A strategy from per-second TPS (p99 1 ms, max 2 ms each) and attempts.
fn strategy(name: &str, tps: &[u64], attempts: Vec<DdlAttempt>) -> StrategyReport {
    let seconds: Vec<SecondRow> = tps
        .iter()
        .enumerate()
        .map(|(index, &tps)| second(index as u32, tps, 1.0, 2.0))
        .collect();
    let histogram = new_latency_histogram();
    let summary = summarize(
        name,
        &seconds,
        &attempts,
        None,
        &histogram,
        &crate::metrics::RunFacts::default(),
    );
    StrategyReport {
        strategy: name.to_string(),
        seconds,
        attempts,
        blocker: None,
        latency: LatencyDistribution::from_histogram(histogram),
        summary,
        locks: Default::default(),
        intervals: Default::default(),
        failures: Vec::new(),
        lock_trace: Vec::new(),
        invariants: Vec::new(),
    }
}

#[test]
fn the_window_runs_from_the_first_start_to_the_last_end_plus_one_second() {
    let seconds: Vec<SecondRow> = (0..10).map(|s| second(s, 100, 1.0, 1.0)).collect();
    let attempts = vec![
        attempt(1, 2.5, 3.0, AttemptOutcome::LockTimeout),
        attempt(2, 4.0, 4.2, AttemptOutcome::Ok),
    ];
    let window = ddl_window(&seconds, &attempts).unwrap();
    assert_eq!(window.start_s, 2.5);
    assert_eq!(window.end_s, 5.2);
    assert!(!window.overlaps_second(1));
    assert!(window.overlaps_second(2));
    assert!(window.overlaps_second(5));
    assert!(!window.overlaps_second(6));
}

#[test]
fn the_window_is_clamped_to_the_timeline() {
    let seconds: Vec<SecondRow> = (0..5).map(|s| second(s, 100, 1.0, 1.0)).collect();
    let window = ddl_window(&seconds, &[attempt(1, 3.0, 9.0, AttemptOutcome::Ok)]).unwrap();
    assert_eq!(window.end_s, 5.0);
    assert_eq!(
        ddl_window(&seconds, &[attempt(1, 7.0, 9.0, AttemptOutcome::Ok)]),
        None
    );
    assert_eq!(ddl_window(&seconds, &[]), None);
}

#[test]
fn a_stall_inside_the_window_gives_worst_tps_zero() {
    let mut report = strategy(
        "naive",
        &[1000, 1000, 0, 0, 800, 1000, 1000],
        vec![attempt(1, 2.0, 3.6, AttemptOutcome::Ok)],
    );
    report.seconds[4].lat_p99_ms = 3000.0;
    report.seconds[4].lat_max_ms = 3600.0;
    // Outside the window (ends at 4.6 s): must not count.
    report.seconds[6].lat_p99_ms = 9999.0;
    let row = run_figures(&report);
    assert_eq!(
        row.window,
        Some(DdlWindow {
            start_s: 2.0,
            end_s: 4.6
        })
    );
    assert_eq!(row.worst_second_tps, 0);
    // Second 2 had no transaction: it stands for those stalled through
    // it, the slowest of which ended in second 4 after 3.6 s.
    assert_eq!(row.worst_second_p99_ms, 3600.0);
    assert_eq!(
        row.worst_latency,
        WorstLatency::Stalled {
            stalled_s: 2,
            ended_s: 4
        }
    );
    assert_eq!(row.window_max_latency_ms, 3600.0);
    assert_eq!(row.migration_done_at_s, Some(3.6));
    assert_eq!(row.ddl_tries, 1);
    assert_eq!(row.zero_tps_seconds, 2);
    assert_eq!(row.longest_stall_s, 2);
}

#[test]
fn a_second_without_transactions_has_no_p99_of_its_own() {
    // results/example's naive: 52 tps in second 6, none in 7-15, then the
    // stalled transactions end in second 16 after 10,052 ms, among 4,649
    // fast ones whose p99 is 1.9 ms.
    let mut seconds: Vec<SecondRow> = (0..20)
        .map(|s| match s {
            7..=15 => second(s, 0, 0.0, 0.0),
            _ => second(s, 5000, 3.0, 9.0),
        })
        .collect();
    seconds[6] = second(6, 52, 3.08, 3.08);
    seconds[16] = second(16, 4649, 1.92, 10_051.6);
    assert_eq!(
        second_latency(&seconds, 7),
        Some((
            10_051.6,
            WorstLatency::Stalled {
                stalled_s: 7,
                ended_s: 16
            }
        ))
    );
    assert_eq!(
        second_latency(&seconds, 6),
        Some((3.08, WorstLatency::SecondP99))
    );
    let worst = worst_seconds(&seconds, &[attempt(1, 6.05, 16.1, AttemptOutcome::Ok)]);
    assert_eq!(worst.worst_second_tps, 0);
    assert_eq!(worst.worst_second_p99_ms, 10_051.6);
    assert_eq!(
        worst.worst_latency,
        WorstLatency::Stalled {
            stalled_s: 7,
            ended_s: 16
        }
    );
    // A failed transaction ends a second too: its latency counts.
    seconds[7].failed = 3;
    seconds[7].lat_p99_ms = 40.0;
    assert_eq!(
        second_latency(&seconds, 7),
        Some((40.0, WorstLatency::SecondP99))
    );
}

#[test]
fn a_stall_that_lasts_to_the_end_has_none_completed() {
    let seconds: Vec<SecondRow> = (0..10)
        .map(|s| match s {
            6.. => second(s, 0, 0.0, 0.0),
            _ => second(s, 1000, 2.0, 5.0),
        })
        .collect();
    let worst = worst_seconds(&seconds, &[attempt(1, 6.0, 9.5, AttemptOutcome::Ok)]);
    assert_eq!(
        worst.worst_second_p99_ms, 4000.0,
        "seconds 6-9: at least 4 s"
    );
    assert_eq!(
        worst.worst_latency,
        WorstLatency::NoneCompleted { stalled_s: 6 }
    );
}

#[test]
fn an_idle_second_that_nothing_stalled_through_has_no_figure() {
    // Nothing ended in second 2 and the next transactions, in second 5,
    // took 5 ms: none of them was in flight during second 2.
    let seconds: Vec<SecondRow> = (0..8)
        .map(|s| match s {
            2..5 => second(s, 0, 0.0, 0.0),
            _ => second(s, 100, 2.0, 5.0),
        })
        .collect();
    assert_eq!(second_latency(&seconds, 2), None);
    assert_eq!(
        second_latency(&seconds, 4),
        Some((
            5.0,
            WorstLatency::Stalled {
                stalled_s: 4,
                ended_s: 5
            }
        ))
    );
    let worst = worst_seconds(&seconds, &[attempt(1, 1.5, 3.0, AttemptOutcome::Ok)]);
    assert_eq!(worst.worst_second_p99_ms, 2.0);
    assert_eq!(worst.worst_latency, WorstLatency::SecondP99);
}

#[test]
fn a_dip_outside_the_window_does_not_count() {
    let report = strategy(
        "retry",
        &[10, 1000, 1000, 900, 1000],
        vec![attempt(1, 2.0, 2.5, AttemptOutcome::Ok)],
    );
    assert_eq!(run_figures(&report).worst_second_tps, 900);
}

#[test]
fn a_strategy_without_attempts_is_measured_over_the_whole_run() {
    let report = strategy("load", &[1000, 400, 1000], Vec::new());
    let row = ranking_row(0, &[&report]);
    assert_eq!(row.window(), None);
    assert_eq!(row.runs[0].worst_second_tps, 400);
    assert_eq!(row.migration_done_at_s(), None);
    assert_eq!(row.runs[0].ddl_tries, 0);
    assert_eq!(migration_done_cell(&row), "no DDL");
    assert_eq!(
        window_note(&row).unwrap(),
        "load: no DDL attempt, so its worst-second figures cover the whole run."
    );
}

#[test]
fn a_ddl_that_failed_has_no_completion_time() {
    let report = strategy(
        "deadlock",
        &[1000, 1000, 1000],
        vec![attempt(1, 1.0, 1.5, AttemptOutcome::Error)],
    );
    let row = ranking_row(0, &[&report]);
    assert_eq!(row.migration_done_at_s(), None);
    assert_eq!(migration_done_cell(&row), "did not finish");
}

#[test]
fn one_run_s_band_is_its_share_widened_by_its_steady_seconds() {
    let mut retry = row("retry", 0);
    retry.runs[0].worst_second_tps = 520;
    retry.runs[0].steady_shares = (0.93, 1.05);
    let (low, high) = retry.share_band();
    assert!(
        (low - 0.45).abs() < 1e-9 && (high - 0.57).abs() < 1e-9,
        "{low} {high}"
    );
    // Never below 0: a stall's band starts at 0.
    let mut naive = row("naive", 1);
    naive.runs[0].worst_second_tps = 0;
    naive.runs[0].steady_shares = (0.75, 1.25);
    assert_eq!(naive.share_band(), (0.0, 0.25));
}

#[test]
fn the_row_holds_the_transactions_and_the_main_kind_of_failure() {
    let mut report = strategy(
        "naive",
        &[1000, 1000, 0],
        vec![attempt(1, 1.0, 1.5, AttemptOutcome::Ok)],
    );
    report.failures = vec![
        failure(1, "40P01", "deadlock detected", 2),
        failure(2, "0A000", "cached plan must not change result type", 700),
    ];
    report.summary.failed = 702;
    let row = ranking_row(0, &[&report]);
    assert_eq!(row.runs[0].transactions, 2000);
    assert_eq!(
        row.main_failure(),
        Some("0A000 cached plan must not change result type")
    );
    assert!(row.failed_massively());
    assert_eq!(
        run_figures(&strategy("load", &[5], Vec::new())).main_failure,
        None
    );
}

#[test]
fn the_blocker_outcome_and_failures_come_from_the_summary() {
    let mut report = strategy(
        "kill-blockers",
        &[1000, 1000],
        vec![attempt(1, 0.5, 0.7, AttemptOutcome::Ok)],
    );
    report.summary = Summary {
        failed: 3,
        blocker_outcome: "failed: terminating connection due to administrator command \
                          (57P01)"
            .to_string(),
        ..report.summary.clone()
    };
    let row = ranking_row(2, &[&report]);
    assert_eq!(row.run_order, 2);
    assert_eq!(row.runs[0].failed_transactions, 3);
    assert!(row.blocker_outcome().ends_with("(57P01)"));
}
