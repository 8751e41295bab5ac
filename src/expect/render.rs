//! The expectation results for people and CI: one verdict line each on
//! stdout, and the result files of the results folder (`expectations.csv`,
//! `junit.xml`, `pr-comment.md`) rendered in memory for the caller to write.

use anyhow::Context;
use serde::{Deserialize, Serialize};

use std::path::Path;

use crate::export::csv::csv_file;
use crate::metrics::RunReport;

use super::junit::junit_xml;
use super::pr_comment::pr_comment;
use super::{ExpectationResult, Verdict};
use crate::results::{EXPECTATIONS_CSV, OutputFile};

/// One row of `expectations.csv`; the header is the field names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpectationRecord {
    /// The strategy name as the workload defines it.
    pub strategy: String,
    /// The expectation key, e.g. `max_p99_ms`.
    pub expectation: String,
    /// The limit for people, e.g. `<= 600 ms`.
    pub limit: String,
    /// The measured value, e.g. `512.255 ms`; empty when skipped.
    pub measured: String,
    /// `pass`, `fail` or `skipped`.
    pub verdict: Verdict,
    /// Where the expectation came from: `--expect` or `workload x.toml [expect.retry]`.
    pub source: String,
}

impl ExpectationRecord {
    /// The record of one result.
    pub fn new(result: &ExpectationResult) -> ExpectationRecord {
        let expectation = &result.expectation;
        ExpectationRecord {
            strategy: expectation.strategy.clone(),
            expectation: expectation.bound.key().to_string(),
            limit: expectation.bound.limit_text(),
            measured: result.measured.clone(),
            verdict: result.verdict,
            source: expectation.source.clone(),
        }
    }
}

/// One line per result for stdout:
/// `pass  retry.max_p99_ms <= 600 ms: measured 512.255 ms`,
/// `FAIL  naive.min_zero_tps_seconds >= 3: measured 0`,
/// `skip  retry.max_failed <= 0: strategy not run`.
pub fn report_lines(results: &[ExpectationResult]) -> Vec<String> {
    results
        .iter()
        .map(|result| {
            let label = result.expectation.label();
            match result.verdict {
                Verdict::Pass => format!("pass  {label}: measured {}", result.measured),
                Verdict::Fail => format!("FAIL  {label}: measured {}", result.measured),
                Verdict::Skipped => format!("skip  {label}: strategy not run"),
            }
        })
        .collect()
}

/// The files the results folder `out_dir` gets once `report`'s verdicts are
/// known: `expectations.csv`, `junit.xml`, then `pr-comment.md`.
pub fn result_files(
    report: &RunReport,
    results: &[ExpectationResult],
    out_dir: &Path,
) -> anyhow::Result<Vec<OutputFile>> {
    Ok(vec![
        expectations_csv(results)?,
        junit_xml(&report.workload, results),
        pr_comment(report, results, out_dir),
    ])
}

/// `expectations.csv`: the header of [`ExpectationRecord`], then one row per result.
fn expectations_csv(results: &[ExpectationResult]) -> anyhow::Result<OutputFile> {
    csv_file(EXPECTATIONS_CSV, results.iter().map(ExpectationRecord::new))
        .with_context(|| format!("rendering {EXPECTATIONS_CSV}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::fixtures::*;
    use crate::expect::{Bound, any_failed, evaluate};
    use crate::metrics::DdlOutcome;
    use crate::results::JUNIT_XML;

    #[test]
    fn report_lines_show_verdict_limit_and_measured_value() {
        let report = retry_only_report();
        let expectations = vec![
            expectation("retry", Bound::MaxP99Ms(600.0)),
            expectation("retry", Bound::MinZeroTpsSeconds(5)),
            expectation("naive", Bound::MaxFailed(0)),
            expectation("retry", Bound::DdlOutcome(DdlOutcome::Ok)),
        ];
        let results = evaluate(&expectations, &report);
        assert_eq!(
            report_lines(&results),
            vec![
                "pass  retry.max_p99_ms <= 600 ms: measured 512.255 ms",
                "FAIL  retry.min_zero_tps_seconds >= 5: measured 3",
                "skip  naive.max_failed <= 0: strategy not run",
                "FAIL  retry.ddl_outcome = ok: measured gave_up",
            ]
        );
        assert!(any_failed(&results));
        assert!(!any_failed(&results[..1]));
        assert!(!any_failed(&[]));
    }

    #[test]
    fn expectations_csv_has_the_exact_header_and_one_row_per_result() {
        let file = expectations_csv(&mixed_results()).unwrap();
        assert_eq!(file.name, EXPECTATIONS_CSV);
        let text = String::from_utf8(file.bytes.clone()).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("strategy,expectation,limit,measured,verdict,source")
        );
        assert_eq!(
            lines.next(),
            Some("retry,max_p99_ms,<= 600 ms,512.255 ms,pass,--expect")
        );
        assert_eq!(lines.next(), Some("retry,max_failed,<= 0,2,fail,--expect"));
        assert_eq!(
            lines.next(),
            Some("naive,min_zero_tps_seconds,>= 3,,skipped,--expect")
        );

        let mut reader = ::csv::Reader::from_reader(file.bytes.as_slice());
        let rows: Vec<::csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 4);
        assert_eq!(&rows[3][0], "a<&\"'>b");
        assert_eq!(&rows[3][3], "x<&\"'>y");
    }

    #[test]
    fn an_empty_expectations_csv_is_just_the_header() {
        let file = expectations_csv(&[]).unwrap();
        let text = String::from_utf8(file.bytes).unwrap();
        assert_eq!(text, "strategy,expectation,limit,measured,verdict,source\n");
    }

    #[test]
    fn a_write_error_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        for name in [EXPECTATIONS_CSV, JUNIT_XML] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        // Written as `check_expectations` in lib.rs writes the result files.
        let write = |file: &OutputFile| -> anyhow::Result<()> {
            let path = dir.path().join(&file.name);
            std::fs::write(&path, &file.bytes)
                .with_context(|| format!("writing {}", path.display()))
        };
        let report = crate::metrics::RunReport {
            workload: "w".to_string(),
            strategies: Vec::new(),
            interruption: None,
        };
        let files = result_files(&report, &[], dir.path()).unwrap();
        let message = format!("{:#}", write(&files[0]).unwrap_err());
        let expected = format!("writing {}", dir.path().join(EXPECTATIONS_CSV).display());
        assert!(message.starts_with(&expected), "{message}");
        let message = format!("{:#}", write(&files[1]).unwrap_err());
        let expected = format!("writing {}", dir.path().join(JUNIT_XML).display());
        assert!(message.starts_with(&expected), "{message}");
    }
}
