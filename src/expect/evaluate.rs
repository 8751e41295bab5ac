//! Checks each expectation against the strategies that ran: pass, fail or
//! skipped, with the measured value as the result files show it.

use serde::{Deserialize, Serialize};

use crate::config::Expectation;
use crate::expect::bounds::Bound;
use crate::metrics::failures::failed_in_class;
use crate::metrics::invariants::total_anomalies;
use crate::metrics::{DdlOutcome, RunReport, SecondRow, StrategyReport};

/// The verdict of one expectation. In `expectations.csv` as `pass`, `fail` or `skipped`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The strategy's summary meets the bound.
    Pass,
    /// The strategy's summary misses the bound: the run exits 3.
    Fail,
    /// The strategy did not run in this report (e.g. `run --strategy` picked another).
    Skipped,
}

/// One expectation checked against one run of its strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectationResult {
    /// The expectation that was checked.
    pub expectation: Expectation,
    /// The measured value, e.g. `512.255 ms` or `gave_up`; empty when skipped.
    pub measured: String,
    /// Whether the measured value meets the bound.
    pub verdict: Verdict,
}

/// Checks each expectation against every run of its strategy in `report`
/// (one result per run; normally exactly one). An expectation on a strategy
/// that did not run gets one `Skipped` result.
pub fn evaluate(expectations: &[Expectation], report: &RunReport) -> Vec<ExpectationResult> {
    let mut results = Vec::new();
    for expectation in expectations {
        let mut ran = false;
        for strategy in &report.strategies {
            if strategy.strategy != expectation.strategy {
                continue;
            }
            ran = true;
            let (measured, passed) = measure(&expectation.bound, strategy);
            results.push(ExpectationResult {
                expectation: expectation.clone(),
                measured,
                verdict: if passed { Verdict::Pass } else { Verdict::Fail },
            });
        }
        if !ran {
            results.push(ExpectationResult {
                expectation: expectation.clone(),
                measured: String::new(),
                verdict: Verdict::Skipped,
            });
        }
    }
    results
}

/// Whether any result failed (the run then exits with [`crate::error::exit_code::EXPECTATION_FAILED`]).
pub fn any_failed(results: &[ExpectationResult]) -> bool {
    results.iter().any(|result| result.verdict == Verdict::Fail)
}

/// The measured value of `bound` on `strategy` as text and whether it meets the bound.
fn measure(bound: &Bound, strategy: &StrategyReport) -> (String, bool) {
    let summary = &strategy.summary;
    match bound {
        Bound::MaxZeroTpsSeconds(limit) => {
            let value = summary.zero_tps_seconds;
            (value.to_string(), value <= *limit)
        }
        Bound::MinZeroTpsSeconds(limit) => {
            let value = summary.zero_tps_seconds;
            (value.to_string(), value >= *limit)
        }
        Bound::MaxReplicaZeroTpsSeconds(limit) => match summary.replica_zero_tps_seconds {
            None => (NO_REPLICA_LOAD.to_string(), false),
            Some(value) => (value.to_string(), value <= *limit),
        },
        Bound::MinReplicaZeroTpsSeconds(limit) => match summary.replica_zero_tps_seconds {
            None => (NO_REPLICA_LOAD.to_string(), false),
            Some(value) => (value.to_string(), value >= *limit),
        },
        Bound::MaxLongestStallS(limit) => {
            let value = summary.longest_stall_s;
            (value.to_string(), value <= *limit)
        }
        Bound::MinWorstSecondTps(limit) => {
            let value = summary.worst_second_tps;
            (format!("{value} tps"), value >= *limit)
        }
        Bound::MaxWorstSecondP99Ms(limit) => {
            let value = as_in_summary_csv(summary.worst_second_p99_ms);
            (format!("{value} ms"), value <= *limit)
        }
        Bound::MaxP99Ms(limit) => {
            let value = as_in_summary_csv(summary.lat_p99_ms);
            (format!("{value} ms"), value <= *limit)
        }
        Bound::MaxDdlS(limit) => match summary.ddl_outcome {
            DdlOutcome::Ok => {
                let value_s = summary.ddl_total_ms.round() / 1000.0;
                (format!("{value_s:.3} s"), value_s <= *limit)
            }
            DdlOutcome::None => ("no DDL ran".to_string(), false),
            not_done => (format!("not done ({not_done})"), false),
        },
        Bound::DdlOutcome(outcome) => {
            let value = summary.ddl_outcome;
            (value.to_string(), value == *outcome)
        }
        Bound::MaxFailed(limit) => {
            let value = summary.failed;
            (value.to_string(), value <= *limit)
        }
        Bound::MaxFailedClass { class, limit } => {
            let value = failed_in_class(&strategy.failures, class);
            (value.to_string(), value <= *limit)
        }
        Bound::MaxPoolTimeouts(limit) => match summary.pool_wait_p99_ms {
            None => (NO_POOL.to_string(), false),
            Some(_) => {
                let value = summary.pool_timeouts;
                (value.to_string(), value <= *limit)
            }
        },
        Bound::MaxPoolWaitP99Ms(limit) => match summary.pool_wait_p99_ms {
            None => (NO_POOL.to_string(), false),
            Some(p99_ms) => {
                let value = as_in_summary_csv(p99_ms);
                (format!("{value} ms"), value <= *limit)
            }
        },
        Bound::MaxAnomalies(limit) => match strategy.invariants.is_empty() {
            true => (NO_INVARIANTS.to_string(), false),
            false => {
                let value = total_anomalies(&strategy.invariants);
                (value.to_string(), value <= *limit)
            }
        },
        Bound::MinAnomalies(limit) => match strategy.invariants.is_empty() {
            true => (NO_INVARIANTS.to_string(), false),
            false => {
                let value = total_anomalies(&strategy.invariants);
                (value.to_string(), value >= *limit)
            }
        },
        Bound::MinDeadlockSeconds(limit) => {
            let value = deadlock_seconds(&strategy.seconds);
            (value.to_string(), value >= *limit)
        }
    }
}

/// The seconds in which at least one transaction failed with 40P01.
fn deadlock_seconds(seconds: &[SecondRow]) -> u32 {
    let count = seconds.iter().filter(|row| row.failed_deadlock > 0).count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// What an anomalies bound measures on a run without invariants: it fails,
/// since what it bounds was not measured.
const NO_INVARIANTS: &str = "no invariants (add [[invariants]] to the workload)";

/// What a pool bound measures on a run without the application pool: it fails,
/// since what CI asked to bound was not measured.
const NO_POOL: &str = "no pool (run with --rate and --pool-size)";

/// What a bound on the replica's clients measures on a run whose load ran
/// on one server: it fails, since what it bounds was not measured.
const NO_REPLICA_LOAD: &str = "no load on the replica beside the primary ([load] on = \"both\")";

/// A latency as `summary.csv` shows it, rounded to 3 decimals, so that the
/// file and the verdict agree.
fn as_in_summary_csv(value_ms: f64) -> f64 {
    crate::export::format::round3(value_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::Bound;
    use crate::expect::fixtures::*;
    use crate::export::ci::report_lines;
    use crate::metrics::DdlOutcome;
    use std::collections::BTreeMap;

    /// Each case: a bound at the measured value passes, one just beyond it
    /// fails, and both show the value measured.
    fn passes_at_the_limit_and_fails_beyond_it<const N: usize>(
        report: &RunReport,
        cases: [(Bound, Bound, &str); N],
    ) {
        for (at_limit, beyond, measured) in cases {
            assert_eq!(
                verdict_of(at_limit.clone(), report),
                (measured.to_string(), Verdict::Pass),
                "{at_limit:?}"
            );
            assert_eq!(
                verdict_of(beyond.clone(), report),
                (measured.to_string(), Verdict::Fail),
                "{beyond:?}"
            );
        }
    }

    #[test]
    fn max_bounds_pass_at_the_limit_and_fail_above_it() {
        // summary(): zero_tps_seconds 3, longest_stall_s 4, p99 512.255 ms, failed 2.
        let report = retry_only_report();
        let cases = [
            (
                Bound::MaxZeroTpsSeconds(3),
                Bound::MaxZeroTpsSeconds(2),
                "3",
            ),
            (Bound::MaxLongestStallS(4), Bound::MaxLongestStallS(3), "4"),
            (
                Bound::MaxP99Ms(512.255),
                Bound::MaxP99Ms(512.254),
                "512.255 ms",
            ),
            (Bound::MaxFailed(2), Bound::MaxFailed(1), "2"),
        ];
        passes_at_the_limit_and_fails_beyond_it(&report, cases);
    }

    #[test]
    fn anomaly_bounds_read_the_invariants_and_fail_without_them() {
        let mut report = retry_only_report();
        let no_invariants = evaluate(&[expectation("retry", Bound::MaxAnomalies(0))], &report);
        assert_eq!(no_invariants[0].verdict, Verdict::Fail);
        assert_eq!(no_invariants[0].measured, NO_INVARIANTS);
        report.strategies[0].invariants = vec![crate::metrics::invariants::InvariantCheck::new(
            "counter",
            "lost updates",
            "10",
            "7",
        )];
        let cases = [
            (Bound::MaxAnomalies(3), Bound::MaxAnomalies(2), "3"),
            (Bound::MinAnomalies(3), Bound::MinAnomalies(4), "3"),
        ];
        passes_at_the_limit_and_fails_beyond_it(&report, cases);
    }

    #[test]
    fn min_deadlock_seconds_counts_the_seconds_with_a_40p01() {
        let mut report = retry_only_report();
        report.strategies[0].seconds = (0..5)
            .map(|second| {
                let mut row = crate::metrics::test_second(second, 10);
                // Seconds 1 and 3 had one and two deadlocks; the others none.
                row.failed_deadlock = [0, 1, 0, 2, 0][second as usize];
                row
            })
            .collect();
        let cases = [(
            Bound::MinDeadlockSeconds(2),
            Bound::MinDeadlockSeconds(3),
            "2",
        )];
        passes_at_the_limit_and_fails_beyond_it(&report, cases);
    }

    #[test]
    fn worst_second_bounds_pass_at_the_limit_and_fail_beyond_it() {
        let mut report = retry_only_report();
        let summary = &mut report.strategies[0].summary;
        summary.worst_second_tps = 1_700;
        summary.worst_second_p99_ms = 420.000_4;
        let cases = [
            (
                Bound::MinWorstSecondTps(1_700),
                Bound::MinWorstSecondTps(1_701),
                "1700 tps",
            ),
            (
                Bound::MaxWorstSecondP99Ms(420.0),
                Bound::MaxWorstSecondP99Ms(419.999),
                "420 ms",
            ),
        ];
        passes_at_the_limit_and_fails_beyond_it(&report, cases);
    }

    #[test]
    fn max_ddl_s_bounds_a_finished_migration_and_fails_an_unfinished_one() {
        let mut report = retry_only_report();
        let summary = &mut report.strategies[0].summary;
        summary.ddl_outcome = DdlOutcome::Ok;
        summary.ddl_total_ms = 12_010.178;
        assert_eq!(
            verdict_of(Bound::MaxDdlS(12.01), &report),
            ("12.010 s".to_string(), Verdict::Pass)
        );
        assert_eq!(
            verdict_of(Bound::MaxDdlS(12.009), &report),
            ("12.010 s".to_string(), Verdict::Fail)
        );
        let not_done = [
            (DdlOutcome::GaveUp, "not done (gave_up)"),
            (DdlOutcome::CutOff, "not done (cut_off)"),
            (DdlOutcome::Error, "not done (error)"),
            (DdlOutcome::None, "no DDL ran"),
        ];
        for (outcome, measured) in not_done {
            report.strategies[0].summary.ddl_outcome = outcome;
            assert_eq!(
                verdict_of(Bound::MaxDdlS(1e6), &report),
                (measured.to_string(), Verdict::Fail),
                "{outcome}"
            );
        }
    }

    #[test]
    fn the_sample_outage_fails_the_worst_second_bounds_and_retry_meets_them() {
        // The sample: naive at 0 tps for 9 s with a 9.1 s p99 second; retry never below 1,700 tps.
        let report = crate::testing::reference_report();
        let expectations = collect_ok(
            &BTreeMap::new(),
            &[
                "naive.min_worst_second_tps=1",
                "naive.max_worst_second_p99_ms=1000",
                "retry.min_worst_second_tps=1",
                "retry.max_worst_second_p99_ms=1000",
                "retry.max_ddl_s=12.5",
            ],
        );
        let lines = report_lines(&evaluate(&expectations, &report));
        assert_eq!(
            lines,
            [
                "FAIL  naive.min_worst_second_tps >= 1 tps: measured 0 tps",
                "FAIL  naive.max_worst_second_p99_ms <= 1000 ms: measured 9700 ms",
                "pass  retry.min_worst_second_tps >= 1 tps: measured 1700 tps",
                "pass  retry.max_worst_second_p99_ms <= 1000 ms: measured 420 ms",
                "pass  retry.max_ddl_s <= 12.5 s: measured 12.010 s",
            ]
        );
    }

    #[test]
    fn replica_bounds_read_the_replicas_clients_and_fail_without_them() {
        let mut report = retry_only_report();
        for bound in [
            Bound::MaxReplicaZeroTpsSeconds(100),
            Bound::MinReplicaZeroTpsSeconds(0),
        ] {
            assert_eq!(verdict_of(bound, &report).1, Verdict::Fail);
        }
        report.strategies[0].summary.replica_zero_tps_seconds = Some(9);
        let cases = [
            (Bound::MinReplicaZeroTpsSeconds(9), Verdict::Pass),
            (Bound::MinReplicaZeroTpsSeconds(10), Verdict::Fail),
            (Bound::MaxReplicaZeroTpsSeconds(9), Verdict::Pass),
            (Bound::MaxReplicaZeroTpsSeconds(8), Verdict::Fail),
        ];
        for (bound, verdict) in cases {
            assert_eq!(verdict_of(bound, &report), ("9".to_string(), verdict));
        }
    }

    #[test]
    fn pool_bounds_pass_at_the_limit_fail_above_it_and_fail_without_a_pool() {
        let without_pool = retry_only_report();
        for bound in [Bound::MaxPoolTimeouts(1_000), Bound::MaxPoolWaitP99Ms(1e6)] {
            let (measured, verdict) = verdict_of(bound.clone(), &without_pool);
            assert_eq!(verdict, Verdict::Fail, "{bound:?}");
            assert!(measured.starts_with("no pool"), "{measured}");
        }
        let mut pooled = retry_only_report();
        let summary = &mut pooled.strategies[0].summary;
        summary.pool_timeouts = 1_843;
        summary.pool_wait_p99_ms = Some(1_001.471_6);
        let cases = [
            (
                Bound::MaxPoolTimeouts(1_843),
                Bound::MaxPoolTimeouts(1_842),
                "1843",
            ),
            (
                Bound::MaxPoolWaitP99Ms(1_001.472),
                Bound::MaxPoolWaitP99Ms(1_001.471),
                "1001.472 ms",
            ),
        ];
        passes_at_the_limit_and_fails_beyond_it(&pooled, cases);
    }

    #[test]
    fn min_zero_tps_passes_at_the_limit_and_fails_below_it() {
        let report = retry_only_report();
        assert_eq!(
            verdict_of(Bound::MinZeroTpsSeconds(3), &report),
            ("3".to_string(), Verdict::Pass)
        );
        assert_eq!(
            verdict_of(Bound::MinZeroTpsSeconds(0), &report),
            ("3".to_string(), Verdict::Pass)
        );
        assert_eq!(
            verdict_of(Bound::MinZeroTpsSeconds(4), &report),
            ("3".to_string(), Verdict::Fail)
        );
    }

    #[test]
    fn ddl_outcome_must_match_exactly() {
        let report = retry_only_report();
        assert_eq!(
            verdict_of(Bound::DdlOutcome(DdlOutcome::GaveUp), &report),
            ("gave_up".to_string(), Verdict::Pass)
        );
        assert_eq!(
            verdict_of(Bound::DdlOutcome(DdlOutcome::Ok), &report),
            ("gave_up".to_string(), Verdict::Fail)
        );
    }

    #[test]
    fn every_bound_kind_is_skipped_when_its_strategy_did_not_run() {
        let report = retry_only_report();
        let bounds = [
            Bound::MaxZeroTpsSeconds(0),
            Bound::MinZeroTpsSeconds(3),
            Bound::MaxLongestStallS(1),
            Bound::MaxP99Ms(600.0),
            Bound::DdlOutcome(DdlOutcome::Ok),
            Bound::MaxFailed(0),
        ];
        let expectations: Vec<Expectation> = bounds
            .iter()
            .map(|bound| expectation("naive", bound.clone()))
            .collect();
        let results = evaluate(&expectations, &report);
        assert_eq!(results.len(), bounds.len());
        for result in &results {
            assert_eq!(result.verdict, Verdict::Skipped);
            assert_eq!(result.measured, "");
        }
        assert!(!any_failed(&results));
    }

    #[test]
    fn a_strategy_that_ran_twice_is_checked_twice() {
        let mut second = summary("retry");
        second.failed = 9;
        let report = RunReport {
            workload: "add-column".to_string(),
            strategies: vec![
                strategy_report(summary("retry")),
                strategy_report(summary("naive")),
                strategy_report(second),
            ],
            interruption: None,
            load_on: crate::choices::LoadOn::Primary,
            load_loop: crate::choices::LoadLoop::Closed,
        };
        let results = evaluate(&[expectation("retry", Bound::MaxFailed(2))], &report);
        let verdicts: Vec<Verdict> = results.iter().map(|r| r.verdict).collect();
        assert_eq!(verdicts, vec![Verdict::Pass, Verdict::Fail]);
        assert!(any_failed(&results));
    }

    #[test]
    fn the_sample_run_meets_the_example_expectations() {
        let report = crate::testing::reference_report();
        let expectations = collect_ok(&example_file(), &[]);
        let results = evaluate(&expectations, &report);
        let lines = report_lines(&results);
        assert!(!any_failed(&results), "{lines:#?}");
        assert_eq!(
            lines[0],
            "pass  naive.min_zero_tps_seconds >= 3: measured 9"
        );
    }
}
