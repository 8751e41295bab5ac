//! The GitHub step summary: when `GITHUB_STEP_SUMMARY` names a file, the
//! run's `summary.md` and a table of the expectation results are appended to
//! it, so the job page shows them.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::export::markdown::{render_table, table_cell};
use crate::export::table::{Align::Left, Column, Table};

use super::{ExpectationRecord, ExpectationResult, Verdict};

/// The file named by the `GITHUB_STEP_SUMMARY` environment variable, if it is set and not empty.
pub fn github_step_summary_path() -> Option<PathBuf> {
    std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// Appends `## stallbench: <workload>`, `summary_markdown` and a Markdown
/// table of the results to the file `path` (the value of `GITHUB_STEP_SUMMARY`,
/// see [`github_step_summary_path`]); does nothing when `path` is `None` or empty.
/// The file is created if missing and never truncated.
pub fn append_github_step_summary(
    path: Option<&Path>,
    workload: &str,
    summary_markdown: &str,
    results: &[ExpectationResult],
) -> anyhow::Result<()> {
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
        text.push_str(&step_summary_text(workload, summary_markdown, results));
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

/// The expectation columns of the step summary: a failure in bold, a skipped
/// strategy measured as `not run`.
const EXPECTATION_COLUMNS: &[Column<ExpectationRecord>] = &[
    Column::new("result", Left, |r| {
        match r.verdict {
            Verdict::Pass => "pass",
            Verdict::Fail => "**FAIL**",
            Verdict::Skipped => "skipped",
        }
        .to_string()
    }),
    Column::new("strategy", Left, |r| r.strategy.clone()),
    Column::new("expectation", Left, |r| r.expectation.clone()),
    Column::new("limit", Left, |r| r.limit.clone()),
    Column::new("measured", Left, |r| match r.verdict {
        Verdict::Skipped => "not run".to_string(),
        _ => r.measured.clone(),
    }),
    Column::new("source", Left, |r| r.source.clone()),
];

/// The Markdown appended to the GitHub step summary: `## stallbench: <workload>`,
/// `summary_markdown`, and an `### Expectations` table when there are results.
fn step_summary_text(
    workload: &str,
    summary_markdown: &str,
    results: &[ExpectationResult],
) -> String {
    let mut text = format!("## stallbench: {}\n\n", table_cell(workload));
    text.push_str(summary_markdown.trim_end());
    text.push_str("\n\n");
    if results.is_empty() {
        return text;
    }
    text.push_str("### Expectations\n\n");
    let records: Vec<ExpectationRecord> = results.iter().map(ExpectationRecord::new).collect();
    let table = Table::build(EXPECTATION_COLUMNS, &records);
    text.push_str(&render_table(&table));
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::fixtures::mixed_results;

    #[test]
    fn the_step_summary_is_appended_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("step_summary.md");
        std::fs::write(&path, "earlier step").unwrap();
        let results = mixed_results();
        let summary_md = "# add-column\n\n| strategy |\n| :--- |\n| retry |\n";
        append_github_step_summary(Some(&path), "add-column", summary_md, &results).unwrap();
        append_github_step_summary(Some(&path), "add-column", summary_md, &results[..1]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();

        assert!(text.starts_with("earlier step\n## stallbench: add-column\n\n# add-column\n"));
        assert_eq!(text.matches("## stallbench: add-column\n").count(), 2);
        assert_eq!(text.matches("### Expectations").count(), 2);
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
        // The second append added one row only.
        let second = &text[text.rfind("## stallbench").unwrap()..];
        assert_eq!(second.matches("| pass |").count(), 1);
        assert_eq!(second.matches("| **FAIL** |").count(), 0);
    }

    #[test]
    fn the_step_summary_is_created_and_skipped_when_unset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.md");
        append_github_step_summary(Some(&path), "w", "# w\n", &[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "## stallbench: w\n\n# w\n\n"
        );
        append_github_step_summary(None, "w", "# w\n", &[]).unwrap();
        append_github_step_summary(Some(Path::new("")), "w", "# w\n", &[]).unwrap();
    }

    #[test]
    fn a_step_summary_error_names_the_file_and_the_variable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-folder").join("summary.md");
        let error = append_github_step_summary(Some(&path), "w", "", &[]).unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("GITHUB_STEP_SUMMARY"), "{message}");
    }
}
