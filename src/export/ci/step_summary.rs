//! The GitHub step summary: when `GITHUB_STEP_SUMMARY` names a file, the
//! verdict, the ranking, the key figures and the bounds of the run are
//! appended to it, so the job page shows them.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::export::markdown::{summary_table, table_cell};
use crate::metrics::RunReport;

use super::sections::{
    bounds_table, ranking_section, section, strategies_section, verdict_markdown,
    what_happened_markdown,
};
use crate::expect::ExpectationResult;

/// The file named by the `GITHUB_STEP_SUMMARY` environment variable, if it is set and not empty.
pub fn github_step_summary_path() -> Option<PathBuf> {
    std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// Appends the run's step summary (see [`step_summary_text`]) to the file `path`
/// (the value of `GITHUB_STEP_SUMMARY`, see [`github_step_summary_path`]); does
/// nothing when `path` is `None` or empty. The file is created if missing and
/// never truncated.
pub fn append_github_step_summary(
    path: Option<&Path>,
    report: &RunReport,
    results: &[ExpectationResult],
) -> anyhow::Result<()> {
    append_to_step_summary(path, &step_summary_text(report, results))
}

/// Appends `markdown` to the file `path` (the value of `GITHUB_STEP_SUMMARY`),
/// after a blank line when the file holds an earlier step's text; does nothing
/// when `path` is `None` or empty. The file is created if missing and never truncated.
pub fn append_to_step_summary(path: Option<&Path>, markdown: &str) -> anyhow::Result<()> {
    let Some(path) = path.filter(|path| !path.as_os_str().is_empty()) else {
        return Ok(());
    };
    let append = || -> anyhow::Result<()> {
        let mut file = OpenOptions::new().create(true).append(true).open(path)?;
        let mut text = String::new();
        // Keep our heading off the end of whatever an earlier step wrote.
        if file.metadata()?.len() > 0 {
            text.push('\n');
        }
        text.push_str(markdown);
        file.write_all(text.as_bytes())?;
        file.flush()?;
        Ok(())
    };
    append().with_context(|| {
        format!(
            "appending the run summary to {} (named by GITHUB_STEP_SUMMARY); \
             make the file writable or unset GITHUB_STEP_SUMMARY",
            path.display()
        )
    })
}

/// The Markdown appended to the GitHub step summary, which the job page shows
/// under the job's own heading: `## stallbench: <workload>`, the verdict first,
/// then `###` sections: the ranking, a sentence per strategy, the key figures
/// (the summary table of `summary.md`) and the bounds.
fn step_summary_text(report: &RunReport, results: &[ExpectationResult]) -> String {
    let mut text = format!("## stallbench: {}\n\n", table_cell(&report.workload));
    text.push_str(&verdict_markdown(results));
    text.push('\n');
    let happened = what_happened_markdown(report);
    if !happened.is_empty() {
        text.push_str(&happened);
        text.push('\n');
    }
    text.push_str(&ranking_section(report));
    text.push_str(&strategies_section(report));
    text.push_str(&section("Key figures", &summary_table(report)));
    if !results.is_empty() {
        text.push_str(&section("Bounds", &bounds_table(results)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::fixtures::{expectation, mixed_results};
    use crate::expect::{Bound, evaluate};
    use crate::testing::reference_report;

    #[test]
    fn the_step_summary_is_appended_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("step_summary.md");
        std::fs::write(&path, "earlier step").unwrap();
        let report = reference_report();
        let results = mixed_results();
        append_github_step_summary(Some(&path), &report, &results).unwrap();
        append_github_step_summary(Some(&path), &report, &results[..1]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();

        assert!(
            text.starts_with("earlier step\n## stallbench: add-column\n\n**FAIL**: 2 of 4"),
            "{text}"
        );
        assert_eq!(text.matches("## stallbench: add-column\n").count(), 2);
        assert_eq!(text.matches("### Bounds").count(), 2);
        assert!(text.contains(
            "| result | strategy | expectation | limit | measured | source |\n\
             | :--- | :--- | :--- | :--- | :--- | :--- |\n\
             | pass | retry | max_p99_ms | &lt;= 600 ms | 512.255 ms | --expect |\n\
             | **FAIL** | retry | max_failed | &lt;= 0 | 2 | --expect |\n\
             | skipped | naive | min_zero_tps_seconds | &gt;= 3 | not run | --expect |\n"
        ));
        assert!(
            text.contains("| a&lt;&amp;\"'&gt;b | ddl_outcome |"),
            "{text}"
        );
        // The second append passed its one bound.
        let second = &text[text.rfind("## stallbench").unwrap()..];
        assert!(
            second.contains(
                "\n**pass**: 1 of 1 bound met: the workload's expectations of each strategy \
                 hold.\n\n**What happened**: retry never stalled traffic"
            ),
            "{second}"
        );
        assert_eq!(second.matches("| **FAIL** |").count(), 0);
    }

    #[test]
    fn the_verdict_comes_first_and_no_heading_is_above_the_job_s() {
        let report = reference_report();
        let results = evaluate(
            &[expectation("naive", Bound::MinWorstSecondTps(1))],
            &report,
        );
        let text = step_summary_text(&report, &results);
        let headings: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
        assert_eq!(
            headings,
            [
                "## stallbench: add-column",
                "### Ranking",
                "### Strategies",
                "### Key figures",
                "### Bounds"
            ]
        );
        let first_paragraph = text.split("\n\n").nth(1).unwrap();
        assert_eq!(first_paragraph, "**FAIL**: 1 of 1 bound failed:");
        assert!(text.contains("- `naive.min_worst_second_tps >= 1 tps`: measured 0 tps\n"));
        assert!(
            text.contains("| strategy | transactions | mean tps |"),
            "{text}"
        );
    }

    #[test]
    fn the_step_summary_is_created_and_skipped_when_unset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.md");
        let mut report = reference_report();
        report.strategies.truncate(1);
        append_github_step_summary(Some(&path), &report, &[]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("## stallbench: add-column\n\n**no bounds**: "),
            "{text}"
        );
        assert!(
            !text.contains("### Ranking") && !text.contains("### Bounds"),
            "{text}"
        );
        append_github_step_summary(None, &report, &[]).unwrap();
        append_github_step_summary(Some(Path::new("")), &report, &[]).unwrap();
    }

    #[test]
    fn a_step_summary_error_names_the_file_and_the_variable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-folder").join("summary.md");
        let error = append_github_step_summary(Some(&path), &reference_report(), &[]).unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("GITHUB_STEP_SUMMARY"), "{message}");
    }
}
