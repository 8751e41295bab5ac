//! `pr-comment.md`, what a CI step posts on the pull request: `check.md`'s
//! verdict and introduction after a marker line, then the migrations'
//! sections worst first while they fit under GitHub's limit for a comment;
//! the others listed by name, pointing to `check.md` and `report.html`.

use std::fmt::Write as _;
use std::path::Path;

use super::CheckReport;
use super::check_md::{intro, migration_section, unordered_section};
use crate::engine::postgres::check_verdict::checked::CheckedMigration;
use crate::engine::postgres::check_verdict::verdict::{Judged, MigrationVerdict};
use crate::export::ci::comment_marker;
use crate::export::format::format_thousands;
use crate::export::markdown::table_cell;
use crate::results::{CHECK_MD, OutputFile, PR_COMMENT_MD, REPORT_HTML};

/// The longest `pr-comment.md`, in bytes (so in characters too): under
/// GitHub's 65,536 characters for a comment, with room for what a CI step adds.
pub const PR_COMMENT_MAX: usize = 60_000;

/// The part of [`PR_COMMENT_MAX`] kept for the list of the migrations whose
/// sections do not fit, and the closing lines.
const LEFT_OUT_ROOM: usize = 6_000;

/// `pr-comment.md`: what a CI step posts on the pull request, after the
/// marker line (`<!-- stallbench:check/<folder> -->`) by which the step
/// finds its earlier comment to update: `check.md`'s verdict and
/// introduction, then the migrations' sections worst first (failed, no
/// result, flagged, then the others) as many as fit in [`PR_COMMENT_MAX`];
/// the others are listed by name, and check.md and report.html have them all.
pub fn pr_comment(report: &CheckReport) -> OutputFile {
    OutputFile {
        name: PR_COMMENT_MD.to_string(),
        bytes: pr_comment_text(report, PR_COMMENT_MAX).into_bytes(),
    }
}

/// The text of `pr-comment.md`, at most `max_bytes` long.
fn pr_comment_text(report: &CheckReport, max_bytes: usize) -> String {
    let marker = comment_marker(&format!("check/{}", report.dir.display()));
    let page = report.out_dir.join(REPORT_HTML);
    let check_md = report.out_dir.join(CHECK_MD);
    let mut text = format!("{marker}\n{}\n\n{}", report.verdict_line(), intro(report));
    if let Some(unordered) = &report.unordered {
        text.push_str(&unordered_section(unordered));
    }
    let mut worst_first: Vec<&(CheckedMigration, Judged)> = report.migrations.iter().collect();
    worst_first.sort_by_key(|(_, judged)| severity(judged.verdict));
    let mut left_out: Vec<&(CheckedMigration, Judged)> = Vec::new();
    for migration in worst_first {
        let (checked, judged) = migration;
        let section = migration_section(report, checked, judged);
        let fits = text.len() + section.len() + LEFT_OUT_ROOM <= max_bytes;
        match left_out.is_empty() && fits {
            true => text.push_str(&section),
            false => left_out.push(migration),
        }
    }
    if !left_out.is_empty() {
        text.push_str(&left_out_list(&left_out, &check_md, &page));
    }
    let _ = writeln!(
        text,
        "Open `{}` in this job's artifacts: this report with each measured migration's runs, \
         second by second.",
        page.display()
    );
    cut_to(text, max_bytes)
}

/// The order of the PR comment's sections: failed, no result, flagged, then the others.
fn severity(verdict: MigrationVerdict) -> u8 {
    match verdict {
        MigrationVerdict::Fail => 0,
        MigrationVerdict::Invalid => 1,
        MigrationVerdict::Flagged => 2,
        MigrationVerdict::Pass | MigrationVerdict::NotMeasured => 3,
    }
}

/// The migrations whose sections did not fit in the PR comment, one line
/// each while they fit in [`LEFT_OUT_ROOM`], and where to read them.
fn left_out_list(left_out: &[&(CheckedMigration, Judged)], check_md: &Path, page: &Path) -> String {
    let mut text = format!(
        "## {} more migration{}\n\nA pull request comment holds at most {} characters, so \
         {} here by name only, worst first; `{}` and `{}` in this job's artifacts have every \
         section.\n\n",
        left_out.len(),
        if left_out.len() == 1 { "" } else { "s" },
        format_thousands(PR_COMMENT_MAX as u64),
        if left_out.len() == 1 {
            "it is"
        } else {
            "they are"
        },
        check_md.display(),
        page.display()
    );
    let room = LEFT_OUT_ROOM - 1_000;
    for (index, (checked, judged)) in left_out.iter().enumerate() {
        let line = format!(
            "- {}: {}\n",
            table_cell(&checked.migration.name),
            judged.verdict.words()
        );
        if text.len() + line.len() > room {
            let _ = writeln!(text, "- and {} more", left_out.len() - index);
            break;
        }
        text.push_str(&line);
    }
    text.push('\n');
    text
}

/// `text` cut at its last line end within `max_bytes`, saying so, when longer.
fn cut_to(text: String, max_bytes: usize) -> String {
    const CUT: &str = "\n(cut here: the comment reached its size limit; check.md has the rest)\n";
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes - CUT.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').unwrap_or(end);
    format!("{}{CUT}", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::check_report::check_md::check_text;
    use crate::export::check_report::tests::two_migrations;

    /// A check of `count` migrations, every third from `fail_from` on
    /// failing (the measured add-column), the others creating a table.
    fn many_migrations(count: usize, fail_from: usize) -> CheckReport {
        let mut report = two_migrations();
        let failing = report.migrations[0].clone();
        let quiet = report.migrations[1].clone();
        report.migrations = (0..count)
            .map(|index| {
                let (mut checked, judged) = match index >= fail_from && index % 3 == 0 {
                    true => failing.clone(),
                    false => quiet.clone(),
                };
                checked.migration.name = format!("{index:04}_a_migration_with_a_long_name.sql");
                (checked, judged)
            })
            .collect();
        report
    }

    /// 400 migrations, the failing ones last in apply order: the comment
    /// stays under its limit, shows the failures' sections first and lists
    /// the rest by name, pointing to check.md and report.html.
    #[test]
    fn the_pr_comment_fits_whatever_the_count_worst_first() {
        let report = many_migrations(400, 200);
        let full = check_text(&report);
        assert!(full.len() > 2 * PR_COMMENT_MAX, "{}", full.len());
        let comment = String::from_utf8(pr_comment(&report).bytes).unwrap();
        assert!(comment.len() <= PR_COMMENT_MAX, "{}", comment.len());
        assert!(
            comment.starts_with(&format!(
                "<!-- stallbench:check/migrations -->\n{}\n\n# stallbench check",
                report.verdict_line()
            )),
            "{comment}"
        );
        let sections: Vec<&str> = comment
            .lines()
            .filter(|line| line.starts_with("## 0"))
            .collect();
        assert!(sections.len() > 5, "{sections:?}");
        assert!(
            sections.iter().all(|line| line.ends_with("**FAIL**")),
            "failures first: {sections:?}"
        );
        assert!(
            comment.contains(
                "more migrations\n\nA pull request comment holds at most 60,000 \
                 characters, so they are here by name only, worst first; \
                 `results/check/check.md` and `results/check/report.html`"
            ),
            "{comment}"
        );
        assert!(
            comment.contains("- 0399_a_migration_with_a_long_name.sql: FAIL\n")
                || comment.contains("\n- and "),
            "{comment}"
        );
        assert!(comment.ends_with("second by second.\n"), "{comment}");

        // Even when one section alone is longer than the limit, it is cut.
        let mut huge = many_migrations(1, 0);
        huge.migrations[0].0.migration.name = "0001_".to_string() + &"x".repeat(70_000);
        let comment = String::from_utf8(pr_comment(&huge).bytes).unwrap();
        assert!(comment.len() <= PR_COMMENT_MAX, "{}", comment.len());
    }
}
