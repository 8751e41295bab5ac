//! The Markdown pieces the CI documents share (the GitHub step summary and
//! `pr-comment.md`): the marker line a CI step finds a comment by, the
//! verdict, the table of bounds, the ranking and the sentence per strategy.
//! Each is built from the tables and sentences `export` builds for
//! `summary.md`; the documents only choose and order them. The marker and the
//! verdict take nothing specific to `compare`, so that the migration gate's
//! own pull-request comment can use them too.

use std::fmt::Write as _;

use crate::export::markdown::{ranking_table, render_table, table_cell};
use crate::export::sentences::strategy_sentence;
use crate::export::table::{Align::Left, Column, Table, ranking, what_happened_of};
use crate::metrics::RunReport;

use super::ExpectationRecord;
use crate::expect::{ExpectationResult, Verdict};

/// The heading level of the sections under a document's own `##` heading.
const SECTION: &str = "###";

/// The first line of a pull-request comment about `name` (a workload, or a
/// check), e.g. `<!-- stallbench:add-column -->`: invisible on the page, and
/// what a CI step looks for to update its comment instead of adding one.
/// Characters other than letters, digits, `-`, `_`, `.` and `/` become `_`, so
/// the comment cannot end early.
pub fn comment_marker(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() || "-_./".contains(c) {
            true => c,
            false => '_',
        })
        .collect();
    format!("<!-- stallbench:{safe} -->")
}

/// What a run with no bound at all is told (on stderr in CI, and as the verdict).
pub const NO_BOUNDS: &str = "no bounds: the workload has no [expect.*] and no --expect was \
     given, so this run passes whatever it measured";

/// The verdict as a Markdown paragraph: `**pass**: 3 of 3 bounds met: the
/// workload's expectations of each strategy hold.` (what the bounds say, not
/// what happened to traffic: see [`what_happened_markdown`]);
/// `**FAIL**: 1 of 3 bounds failed:` and a list of the failed ones with their
/// measured values; or `**no bounds**: ...` when there were none.
pub fn verdict_markdown(results: &[ExpectationResult]) -> String {
    let verdicts: Vec<Verdict> = results.iter().map(|result| result.verdict).collect();
    let (head, rest) = bounds_verdict(&verdicts);
    if !verdicts.contains(&Verdict::Fail) {
        return format!("**{head}**: {}.\n", table_cell(&rest));
    }
    let mut text = format!("**{head}**: {rest}:\n\n");
    for result in results.iter().filter(|r| r.verdict == Verdict::Fail) {
        let _ = writeln!(
            text,
            "- `{}`: measured {}",
            result.expectation.label(),
            table_cell(&result.measured)
        );
    }
    text
}

/// The verdict of `verdicts` (one per bound) in two parts: `pass` and `3 of
/// 3 bounds met: the workload's expectations of each strategy hold`, `FAIL` and `1 of 3 bounds failed (1 skipped: ...)`, or
/// `no bounds` and why that passes.
pub fn bounds_verdict(verdicts: &[Verdict]) -> (&'static str, String) {
    if verdicts.is_empty() {
        let (head, rest) = NO_BOUNDS.split_once(": ").unwrap_or((NO_BOUNDS, ""));
        return (head, rest.to_string());
    }
    let count = |wanted: Verdict| verdicts.iter().filter(|v| **v == wanted).count();
    let (failed, skipped) = (count(Verdict::Fail), count(Verdict::Skipped));
    let bounds = if verdicts.len() == 1 {
        "bound"
    } else {
        "bounds"
    };
    let skipped_note = match skipped {
        0 => String::new(),
        n => format!(" ({n} skipped: the strategy did not run)"),
    };
    match failed {
        0 => (
            "pass",
            format!(
                "{} of {} {bounds} met{skipped_note}: the workload's expectations of each \
                 strategy hold",
                verdicts.len() - skipped,
                verdicts.len()
            ),
        ),
        _ => (
            "FAIL",
            format!(
                "{failed} of {} {bounds} failed{skipped_note}",
                verdicts.len()
            ),
        ),
    }
}

/// The bounds' columns: a failure in bold, a skipped strategy measured as `not run`.
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

/// Every bound with its verdict, as a Markdown table (the rows of `expectations.csv`).
pub fn bounds_table(results: &[ExpectationResult]) -> String {
    let records: Vec<ExpectationRecord> = results.iter().map(ExpectationRecord::new).collect();
    render_table(&Table::build(EXPECTATION_COLUMNS, &records))
}

/// What happened to traffic, as a paragraph after the bounds' verdict:
/// `**What happened**: naive stalled traffic for 10 s, ...`; empty when no
/// run ended as written.
pub fn what_happened_markdown(report: &RunReport) -> String {
    match what_happened_of(report) {
        Some(happened) => format!("**What happened**: {}\n", table_cell(&happened)),
        None => String::new(),
    }
}

/// `### Ranking`: the table, its headline and its notes (a worst second
/// without transactions, a strategy measured over the whole run, one not
/// ranked); empty with fewer than 2 strategies.
pub fn ranking_section(report: &RunReport) -> String {
    let Some(ranking) = ranking(report) else {
        return String::new();
    };
    let mut text = format!(
        "{SECTION} Ranking\n\n{}\n{}\n\n",
        ranking_table(&ranking),
        ranking.headline
    );
    for note in &ranking.notes {
        let _ = writeln!(text, "{}\n", table_cell(note));
    }
    text
}

/// `### Strategies`: the sentence of `summary.md` for each strategy (with
/// repeats, of its median repeat), as a list.
pub fn strategies_section(report: &RunReport) -> String {
    let mut text = format!("{SECTION} Strategies\n\n");
    for strategy in &crate::export::sentences::labelled_runs(report) {
        let _ = writeln!(text, "- {}", table_cell(&strategy_sentence(strategy)));
    }
    text.push('\n');
    text
}

/// A section titled `title` holding `body`, a level under the document's heading.
pub fn section(title: &str, body: &str) -> String {
    format!("{SECTION} {title}\n\n{}\n\n", body.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::fixtures::*;
    use crate::expect::{Bound, evaluate};

    #[test]
    fn the_marker_names_the_workload_and_cannot_end_early() {
        assert_eq!(
            comment_marker("add-column"),
            "<!-- stallbench:add-column -->"
        );
        assert_eq!(
            comment_marker("my migrations/0042 --> x"),
            "<!-- stallbench:my_migrations/0042_--__x -->"
        );
    }

    #[test]
    fn the_verdict_names_each_failed_bound_with_its_measured_value() {
        let results = mixed_results();
        assert_eq!(
            verdict_markdown(&results),
            "**FAIL**: 2 of 4 bounds failed (1 skipped: the strategy did not run):\n\n\
             - `retry.max_failed <= 0`: measured 2\n\
             - `a<&\"'>b.ddl_outcome = ok`: measured x&lt;&amp;\"'&gt;y\n"
        );
        let report = retry_only_report();
        let passed = evaluate(&[expectation("retry", Bound::MaxFailed(2))], &report);
        assert_eq!(
            verdict_markdown(&passed),
            "**pass**: 1 of 1 bound met: the workload's expectations of each strategy hold.\n"
        );
        let with_skipped = evaluate(
            &[
                expectation("retry", Bound::MaxFailed(2)),
                expectation("naive", Bound::MaxFailed(0)),
            ],
            &report,
        );
        assert_eq!(
            verdict_markdown(&with_skipped),
            "**pass**: 1 of 2 bounds met (1 skipped: the strategy did not run): the workload's \
             expectations of each strategy hold.\n"
        );
        assert_eq!(
            verdict_markdown(&[]),
            "**no bounds**: the workload has no [expect.*] and no --expect was given, \
             so this run passes whatever it measured.\n"
        );
    }

    #[test]
    fn sections_sit_one_level_under_the_document_heading() {
        let report = crate::testing::reference_report();
        let ranking = ranking_section(&report);
        assert!(ranking.starts_with("### Ranking\n\n| rank |"), "{ranking}");
        assert!(ranking.contains("\nretry kept 57% of its baseline in its worst second"));
        assert!(
            ranking.ends_with(
                "\n\nnaive: no transaction ended in second 6, so it has no p99; its worst-second \
                 latency is the 9700 ms of the transactions stalled through it, which ended in \
                 second 15.\n\n"
            ),
            "{ranking}"
        );
        let strategies = strategies_section(&report);
        assert!(
            strategies.starts_with("### Strategies\n\n- naive: 9 s at 0 tps;"),
            "{strategies}"
        );
        let mut one = report.clone();
        one.strategies.truncate(1);
        assert_eq!(ranking_section(&one), "");
    }
}
