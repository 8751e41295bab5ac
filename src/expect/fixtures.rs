//! Expectations, summaries and results shared by the tests of this module.

use std::collections::BTreeMap;

use crate::metrics::{DdlOutcome, RunReport, StrategyReport, Summary};

use super::{Bound, ExpectFile, Expectation, ExpectationResult, Verdict, collect, evaluate};

pub fn known() -> Vec<String> {
    vec!["naive".to_string(), "retry".to_string()]
}

pub fn flags(list: &[&str]) -> Vec<String> {
    list.iter().map(|flag| flag.to_string()).collect()
}

/// The tables of the module doc's example workload.
pub fn example_file() -> BTreeMap<String, ExpectFile> {
    let mut tables = BTreeMap::new();
    tables.insert(
        "naive".to_string(),
        ExpectFile {
            min_zero_tps_seconds: Some(3),
            ..Default::default()
        },
    );
    tables.insert(
        "retry".to_string(),
        ExpectFile {
            max_zero_tps_seconds: Some(0),
            max_longest_stall_s: Some(1),
            max_p99_ms: Some(600.0),
            ddl_outcome: Some("ok".to_string()),
            max_failed: Some(0),
            ..Default::default()
        },
    );
    tables
}

pub fn collect_ok(
    from_file: &BTreeMap<String, ExpectFile>,
    flag_list: &[&str],
) -> Vec<Expectation> {
    collect("workload x.toml", from_file, &flags(flag_list), &known()).unwrap()
}

pub fn collect_err(from_file: &BTreeMap<String, ExpectFile>, flag_list: &[&str]) -> String {
    match collect("workload x.toml", from_file, &flags(flag_list), &known()) {
        Ok(expectations) => panic!("expected an error, got {expectations:?}"),
        Err(error) => {
            assert_eq!(error.exit_code(), 2, "{error}");
            error.to_string()
        }
    }
}

pub fn expectation(strategy: &str, bound: Bound) -> Expectation {
    Expectation {
        strategy: strategy.to_string(),
        bound,
        source: "--expect".to_string(),
    }
}

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
