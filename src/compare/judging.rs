//! After a compare: each expectation judged, printed and written
//! (`expectations.csv`, `junit.xml`, `pr-comment.md`, the step summary), and
//! the exit code of the whole plan.

use crate::config::Config;
use crate::error::Error;
use crate::export::ci;
use crate::metrics::RunReport;
use crate::plan::Plan;
use crate::{error, expect, output, results, scenario};

/// The expectations of every point of `plan` (see [`check_expectations`]);
/// with a sweep each line names its value and a last line names the values
/// that failed. Exit code 4 if a scenario did not run as written (and no
/// expectation names that outcome), else 3 if any expectation failed, else 0.
pub(super) fn check_plan_expectations(plan: &Plan, reports: &[RunReport]) -> Result<i32, Error> {
    let mut failed_at = Vec::new();
    let mut invalid = Vec::new();
    for (point, report) in plan.points.iter().zip(reports) {
        invalid.extend(scenario::validity::unexpected_invalid(
            &point.config.expectations,
            report,
        ));
        let label = point
            .value
            .as_deref()
            .zip(plan.sweep())
            .map(|(value, sweep)| sweep.label(value));
        if check_expectations(&point.config, report, label.as_deref())? {
            failed_at.push(label.unwrap_or_default());
        }
    }
    if plan.sweep().is_some() && !plan.base.expectations.is_empty() {
        output::write_stdout(&format!("{}\n", ci::sweep_verdict(&failed_at)))?;
    }
    if !invalid.is_empty() {
        stderrln!(
            "error: the scenario did not run as written, so these runs are no result: {}; \
             fix the workload (or name the outcome in an expectation, e.g. ddl_outcome = \"error\")",
            invalid.join("; ")
        );
        return Ok(error::exit_code::INVALID);
    }
    Ok(if failed_at.is_empty() {
        error::exit_code::SUCCESS
    } else {
        error::exit_code::EXPECTATION_FAILED
    })
}

/// Prints each expectation's verdict (after `label` and a colon, for a sweep
/// value; in CI, that there is no bound, if so), writes `expectations.csv`,
/// `junit.xml` and `pr-comment.md`, appends to `$GITHUB_STEP_SUMMARY` if set;
/// whether any failed.
fn check_expectations(
    config: &Config,
    report: &RunReport,
    label: Option<&str>,
) -> Result<bool, Error> {
    let results = expect::evaluate(&config.expectations, report);
    if config.ci && results.is_empty() {
        stderrln!("warning: {}", ci::NO_BOUNDS);
    }
    for line in ci::report_lines_at(label, &results) {
        output::write_stdout(&format!("{line}\n"))?;
    }
    let files = ci::result_files(report, &results, &config.out_dir)?;
    results::write_files(&config.out_dir, &files)?;
    ci::append_github_step_summary(ci::github_step_summary_path().as_deref(), report, &results)?;
    Ok(expect::any_failed(&results))
}
