//! `pr-comment.md`: what a CI step posts on the pull request (or merge
//! request), written by every run. Its first line is the marker of the
//! workload ([`comment_marker`]), so the step can find its earlier comment and
//! update it instead of adding one per push; then the verdict, the ranking, a
//! sentence per strategy, the bounds, and where the chart is in the job's
//! artifacts.

use std::path::Path;

use crate::export::markdown::table_cell;
use crate::metrics::RunReport;
use crate::results::{OutputFile, PR_COMMENT_MD, REPORT_HTML, TIMELINE_PNG};

use super::sections::{
    bounds_table, comment_marker, ranking_section, strategies_section, verdict_markdown,
    what_happened_markdown,
};
use crate::expect::ExpectationResult;

/// `pr-comment.md` of `report` with its verdicts; `out_dir` is the results
/// folder as the command line named it, which the job uploads as its artifact.
pub fn pr_comment(report: &RunReport, results: &[ExpectationResult], out_dir: &Path) -> OutputFile {
    OutputFile {
        name: PR_COMMENT_MD.to_string(),
        bytes: pr_comment_text(report, results, out_dir).into_bytes(),
    }
}

fn pr_comment_text(report: &RunReport, results: &[ExpectationResult], out_dir: &Path) -> String {
    let mut text = comment_marker(&report.workload);
    text.push('\n');
    text.push_str(&format!(
        "## stallbench: {}\n\n",
        table_cell(&report.workload)
    ));
    text.push_str(&verdict_markdown(results));
    text.push('\n');
    let happened = what_happened_markdown(report);
    if !happened.is_empty() {
        text.push_str(&happened);
        text.push('\n');
    }
    text.push_str(&ranking_section(report));
    text.push_str(&strategies_section(report));
    if !results.is_empty() {
        text.push_str(&format!(
            "<details><summary>All {} bounds</summary>\n\n{}\n</details>\n\n",
            results.len(),
            bounds_table(results)
        ));
    }
    text.push_str(&format!(
        "Open `{}` in this job's artifacts (the results folder `{}`): every second of every \
         strategy, its lock chain and the ranking on one page; the chart alone: `{}`.\n",
        out_dir.join(REPORT_HTML).display(),
        out_dir.display(),
        out_dir.join(TIMELINE_PNG).display(),
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::fixtures::expectation;
    use crate::expect::{Bound, evaluate};
    use crate::testing::reference_report;

    fn comment(results: &[ExpectationResult]) -> String {
        let file = pr_comment(&reference_report(), results, Path::new("results/ci"));
        assert_eq!(file.name, "pr-comment.md");
        String::from_utf8(file.bytes).unwrap()
    }

    #[test]
    fn a_passing_run_starts_with_the_marker_then_the_verdict() {
        let report = reference_report();
        let results = evaluate(
            &[
                expectation("naive", Bound::MinZeroTpsSeconds(5)),
                expectation("retry", Bound::MinWorstSecondTps(1)),
            ],
            &report,
        );
        let text = comment(&results);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "<!-- stallbench:add-column -->");
        assert_eq!(lines[1], "## stallbench: add-column");
        // What passed (the workload's bounds) apart from what happened.
        assert_eq!(
            lines[3],
            "**pass**: 2 of 2 bounds met: the workload's expectations of each strategy hold."
        );
        assert_eq!(
            lines[5],
            "**What happened**: retry never stalled traffic (worst second 57% of its \
             baseline); naive stalled traffic for 9 s, 9 s of them without a completed \
             transaction. Ranked first: retry."
        );
        let ranking = text.find("### Ranking").unwrap();
        let strategies = text.find("### Strategies").unwrap();
        assert!(ranking < strategies, "{text}");
        assert!(
            text.contains("| 1 | retry | longest stall 0 s vs 9 s |"),
            "{text}"
        );
        assert!(text.contains("- retry: 0 s at 0 tps; 5 tries, ok after 12.0 s;"));
        assert!(text.contains("<details><summary>All 2 bounds</summary>"));
        assert!(text.ends_with(
            "Open `results/ci/report.html` in this job's artifacts (the results folder \
             `results/ci`): every second of every strategy, its lock chain and the ranking on \
             one page; the chart alone: `results/ci/timeline.png`.\n"
        ));
    }

    #[test]
    fn a_failing_run_names_the_failed_bound_right_after_the_marker() {
        let report = reference_report();
        let results = evaluate(
            &[
                expectation("naive", Bound::MinWorstSecondTps(1)),
                expectation("retry", Bound::MinWorstSecondTps(1)),
            ],
            &report,
        );
        let text = comment(&results);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "<!-- stallbench:add-column -->");
        assert_eq!(lines[3], "**FAIL**: 1 of 2 bounds failed:");
        assert_eq!(
            lines[5],
            "- `naive.min_worst_second_tps >= 1 tps`: measured 0 tps"
        );
    }
}
