//! Expectations, summaries and results shared by the tests of this module.

use crate::metrics::{DdlOutcome, RunReport, StrategyReport, Summary};

pub use crate::config::expect::fixtures::{collect_ok, example_file, expectation};

use super::{Bound, ExpectationResult, Verdict, evaluate};

/// A summary with the figures the tests check; built by `summarize` so that
/// fields added to `Summary` later need no change here.
pub fn summary(strategy: &str) -> Summary {
    let empty = crate::metrics::new_latency_histogram();
    let mut summary = crate::metrics::summarize(
        strategy,
        &[],
        &[],
        None,
        &empty,
        &crate::metrics::RunFacts::default(),
    );
    summary.transactions = 70_000;
    summary.failed = 2;
    summary.zero_tps_seconds = 3;
    summary.longest_stall_s = 4;
    summary.lat_p99_ms = 512.2554;
    summary.ddl_outcome = DdlOutcome::GaveUp;
    summary
}

pub fn strategy_report(summary: Summary) -> StrategyReport {
    StrategyReport::from_summary(summary)
}

/// A run of `add-column` in which only `retry` ran, with [`summary`]'s figures.
pub fn retry_only_report() -> RunReport {
    RunReport {
        workload: "add-column".to_string(),
        strategies: vec![strategy_report(summary("retry"))],
        interruption: None,
        load_on: crate::choices::LoadOn::Primary,
        load_loop: crate::choices::LoadLoop::Closed,
    }
}

pub fn verdict_of(bound: Bound, report: &RunReport) -> (String, Verdict) {
    let results = evaluate(&[expectation("retry", bound)], report);
    assert_eq!(results.len(), 1);
    (results[0].measured.clone(), results[0].verdict)
}

/// Results of three verdicts, the last with a strategy name and a measured
/// value full of XML specials.
pub fn mixed_results() -> Vec<ExpectationResult> {
    let odd = summary("a<&\"'>b");
    let report = RunReport {
        workload: "add-column".to_string(),
        strategies: vec![strategy_report(summary("retry")), strategy_report(odd)],
        interruption: None,
        load_on: crate::choices::LoadOn::Primary,
        load_loop: crate::choices::LoadLoop::Closed,
    };
    let expectations = vec![
        expectation("retry", Bound::MaxP99Ms(600.0)),
        expectation("retry", Bound::MaxFailed(0)),
        expectation("naive", Bound::MinZeroTpsSeconds(3)),
        expectation("a<&\"'>b", Bound::DdlOutcome(DdlOutcome::Ok)),
    ];
    let mut results = evaluate(&expectations, &report);
    // A DDL outcome cannot hold such text; the measured value, a free text, can.
    results[3].measured = "x<&\"'>y".to_string();
    results
}
