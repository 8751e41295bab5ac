//! Checks each expectation against the strategies that ran: pass, fail or
//! skipped, with the measured value as the result files show it.

use serde::{Deserialize, Serialize};

use crate::metrics::RunReport;

use super::Expectation;

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
            let (measured, passed) = expectation.bound.measure(strategy);
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

/// Whether any result failed (the run then exits with [`EXIT_CODE_FAILED`]).
pub fn any_failed(results: &[ExpectationResult]) -> bool {
    results.iter().any(|result| result.verdict == Verdict::Fail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::Bound;
    use crate::expect::fixtures::*;
    use crate::expect::render::report_lines;
    use crate::metrics::DdlOutcome;

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
        for (at_limit, below, measured) in cases {
            assert_eq!(
                verdict_of(at_limit.clone(), &report),
                (measured.to_string(), Verdict::Pass),
                "{at_limit:?}"
            );
            assert_eq!(
                verdict_of(below.clone(), &report),
                (measured.to_string(), Verdict::Fail),
                "{below:?}"
            );
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
        for (at_limit, below, measured) in cases {
            assert_eq!(
                verdict_of(at_limit.clone(), &pooled),
                (measured.to_string(), Verdict::Pass),
                "{at_limit:?}"
            );
            assert_eq!(
                verdict_of(below.clone(), &pooled),
                (measured.to_string(), Verdict::Fail),
                "{below:?}"
            );
        }
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
