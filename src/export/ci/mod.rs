//! The expectation results for people and CI: one verdict line each on
//! stdout, and the result files of the results folder (`expectations.csv`,
//! `junit.xml`, `pr-comment.md`) rendered in memory for the caller to write;
//! `step_summary` appends to `$GITHUB_STEP_SUMMARY`, `pr_comment` and it are
//! built from the pieces of `sections`.

mod pr_comment;
mod sections;
mod step_summary;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use std::path::Path;

use crate::export::csv::csv_file;
use crate::export::junit::{JunitCase, JunitOutcome, JunitSuite};
use crate::metrics::RunReport;

use crate::expect::{ExpectationResult, Verdict};
use crate::results::{EXPECTATIONS_CSV, OutputFile};

pub use pr_comment::pr_comment;
pub use sections::{NO_BOUNDS, bounds_verdict, comment_marker, verdict_markdown};
pub use step_summary::{
    append_github_step_summary, append_to_step_summary, github_step_summary_path,
};

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

/// [`report_lines`], each after `label` and a colon when a sweep value names them.
pub fn report_lines_at(label: Option<&str>, results: &[ExpectationResult]) -> Vec<String> {
    report_lines(results)
        .into_iter()
        .map(|line| match label {
            Some(label) => format!("{label}: {line}"),
            None => line,
        })
        .collect()
}

/// A sweep's last verdict line: every bound held, or the values (their
/// labels, `hold=100ms`) at which one failed.
pub fn sweep_verdict(failed_at: &[String]) -> String {
    match failed_at.is_empty() {
        true => "expectations: every bound held at every value".to_string(),
        false => format!("expectations failed at {}", failed_at.join(", ")),
    }
}

/// The files the results folder `out_dir` gets once `report`'s verdicts are
/// known: `expectations.csv`, `junit.xml`, `pr-comment.md`, and
/// `report.html` again, now with the verdicts.
pub fn result_files(
    report: &RunReport,
    results: &[ExpectationResult],
    out_dir: &Path,
) -> anyhow::Result<Vec<OutputFile>> {
    let records: Vec<ExpectationRecord> = results.iter().map(ExpectationRecord::new).collect();
    Ok(vec![
        expectations_csv(results)?,
        junit_xml(&report.workload, results),
        pr_comment(report, results, out_dir),
        crate::export::html::run_page_file(report, &records)?,
    ])
}

/// `expectations.csv`: the header of [`ExpectationRecord`], then one row per result.
fn expectations_csv(results: &[ExpectationResult]) -> anyhow::Result<OutputFile> {
    csv_file(EXPECTATIONS_CSV, results.iter().map(ExpectationRecord::new))
        .with_context(|| format!("rendering {EXPECTATIONS_CSV}"))
}

/// `junit.xml`: one `<testsuite name="stallbench <workload>">` with one
/// `<testcase classname="<workload>.<strategy>" name="<key> <limit>">` per
/// result; a failure carries `<failure message="measured X, expected <limit>">`,
/// a skipped one `<skipped/>`.
pub fn junit_xml(workload: &str, results: &[ExpectationResult]) -> OutputFile {
    junit_suite(workload, results).file()
}

/// The whole text of `junit.xml`.
#[cfg(test)]
fn junit_text(workload: &str, results: &[ExpectationResult]) -> String {
    junit_suite(workload, results).render()
}

/// The expectations' results as a JUnit suite: a case per result.
fn junit_suite(workload: &str, results: &[ExpectationResult]) -> JunitSuite {
    let cases = results
        .iter()
        .map(|result| {
            let expectation = &result.expectation;
            let limit = expectation.bound.limit_text();
            let outcome = match result.verdict {
                Verdict::Pass => JunitOutcome::Passed,
                Verdict::Fail => JunitOutcome::Failed {
                    message: format!("measured {}, expected {limit}", result.measured),
                    body: format!(
                        "{}: measured {} (from {})",
                        expectation.label(),
                        result.measured,
                        expectation.source
                    ),
                },
                Verdict::Skipped => JunitOutcome::Skipped {
                    message: format!("strategy {} did not run", expectation.strategy),
                },
            };
            JunitCase {
                classname: format!("{workload}.{}", expectation.strategy),
                name: format!("{} {limit}", expectation.bound.key()),
                outcome,
            }
        })
        .collect();
    JunitSuite {
        name: format!("stallbench {workload}"),
        cases,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::fixtures::*;
    use crate::expect::{Bound, any_failed, evaluate};
    use crate::export::junit::xml_check::{check_xml, count};
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
            load_on: crate::choices::LoadOn::Primary,
            load_loop: crate::choices::LoadLoop::Closed,
        };
        let files = result_files(&report, &[], dir.path()).unwrap();
        let message = format!("{:#}", write(&files[0]).unwrap_err());
        let expected = format!("writing {}", dir.path().join(EXPECTATIONS_CSV).display());
        assert!(message.starts_with(&expected), "{message}");
        let message = format!("{:#}", write(&files[1]).unwrap_err());
        let expected = format!("writing {}", dir.path().join(JUNIT_XML).display());
        assert!(message.starts_with(&expected), "{message}");
    }

    #[test]
    fn junit_xml_is_well_formed_and_its_counts_match() {
        let results = mixed_results();
        let file = junit_xml("add-column", &results);
        assert_eq!(file.name, JUNIT_XML);
        let text = String::from_utf8(file.bytes).unwrap();
        let elements = check_xml(&text);

        let suite = &elements[0];
        assert_eq!(suite.name, "testsuite");
        assert_eq!(suite.attributes["name"], "stallbench add-column");
        assert_eq!(suite.attributes["tests"], "4");
        assert_eq!(suite.attributes["failures"], "2");
        assert_eq!(suite.attributes["skipped"], "1");
        assert_eq!(suite.attributes["errors"], "0");
        assert_eq!(count(&elements, "testcase"), 4);
        assert_eq!(count(&elements, "failure"), 2);
        assert_eq!(count(&elements, "skipped"), 1);

        let case = &elements[1];
        assert_eq!(case.attributes["classname"], "add-column.retry");
        assert_eq!(case.attributes["name"], "max_p99_ms &lt;= 600 ms");
        let failure = elements.iter().find(|e| e.name == "failure").unwrap();
        assert_eq!(
            failure.attributes["message"],
            "measured 2, expected &lt;= 0"
        );
        // The strategy and the measured outcome carry every special character.
        let odd_case = &elements[elements.len() - 2];
        assert_eq!(
            odd_case.attributes["classname"],
            "add-column.a&lt;&amp;&quot;&apos;&gt;b"
        );
        let odd_failure = &elements[elements.len() - 1];
        assert_eq!(
            odd_failure.attributes["message"],
            "measured x&lt;&amp;&quot;&apos;&gt;y, expected = ok"
        );
        assert!(text.contains(
            "a&lt;&amp;&quot;&apos;&gt;b.ddl_outcome = ok: measured x&lt;&amp;&quot;&apos;&gt;y \
             (from --expect)</failure>"
        ));
    }

    #[test]
    fn junit_xml_without_expectations_is_an_empty_suite() {
        let text = junit_text("w&w", &[]);
        let elements = check_xml(&text);
        assert_eq!(elements.len(), 1);
        assert_eq!(elements[0].attributes["name"], "stallbench w&amp;w");
        assert_eq!(elements[0].attributes["tests"], "0");
    }
}
