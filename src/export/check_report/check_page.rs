//! `report.html` of a check's folder: the verdict, then each migration's
//! section of `check.md` (its verdict, fixes, statements with their locks,
//! what each blocks and whether it rewrites, the measured rows) as HTML,
//! followed by its runs' timelines and a link to its own folder's page.

use std::fmt::Write as _;

use super::CheckReport;
use super::check_md::{intro, migration_section, unordered_section};
use crate::engine::postgres::check_verdict::checked::Outcome;
use crate::export::html::pages::{href, markdown_html};
use crate::export::html::sections::escape;
use crate::export::html::{PageRun, runs_page};
use crate::results::{OutputFile, REPORT_HTML};

/// The check's `report.html`.
pub fn check_page(report: &CheckReport) -> anyhow::Result<OutputFile> {
    let title = format!("stallbench check: {}", report.dir.display());
    let mut body = String::from("<header>\n");
    body.push_str(&markdown_html(&intro(report)));
    let _ = writeln!(
        body,
        "<div class=\"verdict\">{}</div>\n</header>\n<main>\n<p class=\"hint\">Under each \
         measured migration, its runs: hover a second for its figures and its lock chain; drag \
         to zoom, double-click to zoom out.</p>",
        markdown_html(&report.verdict_line())
    );
    if let Some(unordered) = &report.unordered {
        body.push_str("<section class=\"migration\">\n");
        body.push_str(&markdown_html(&unordered_section(unordered)));
        body.push_str("</section>\n");
    }
    let mut runs = Vec::new();
    for (checked, judged) in &report.migrations {
        body.push_str("<section class=\"migration\">\n");
        body.push_str(&markdown_html(&migration_section(report, checked, judged)));
        if let Outcome::Measured(run) = &checked.outcome {
            let target = format!("run-{}", runs.len() + 1);
            let _ = writeln!(
                body,
                "<div id=\"{target}\" class=\"timelines\" aria-label=\"{}\"></div>",
                escape(&format!("Timelines of {}", checked.migration.name))
            );
            let folder = run
                .folder
                .strip_prefix(&report.out_dir)
                .unwrap_or(&run.folder);
            let _ = writeln!(
                body,
                "<p>Its folder: <a href=\"{}\">{}</a>, with every file of its runs.</p>",
                href(&folder.join(REPORT_HTML)),
                escape(&folder.join(REPORT_HTML).display().to_string())
            );
            runs.push(PageRun {
                target,
                label: checked.migration.name.clone(),
                report: &run.report,
            });
        }
        body.push_str("</section>\n");
    }
    body.push_str("</main>\n");
    Ok(OutputFile {
        name: REPORT_HTML.to_string(),
        bytes: runs_page(&title, &body, &runs)?.into_bytes(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::check_report::tests::two_migrations;

    #[test]
    fn the_page_has_each_section_and_links_the_measured_migration_to_its_page() {
        let page = String::from_utf8(check_page(&two_migrations()).unwrap().bytes).unwrap();
        assert!(
            page.contains("<h1>stallbench check: migrations</h1>"),
            "{page}"
        );
        assert!(
            page.contains("<h2>0002_add_note: <strong>FAIL</strong></h2>"),
            "{page}"
        );
        assert!(page.contains("<h2>0003_notes: "), "{page}");
        assert!(page.contains("<table>"), "{page}");
        assert!(
            page.contains("<a href=\"0002_add_note/report.html\">"),
            "{page}"
        );
        assert_eq!(page.matches("<a href=").count(), 1, "{page}");
        assert!(
            page.contains("<div id=\"run-1\" class=\"timelines\""),
            "{page}"
        );
        assert!(!page.contains("id=\"run-2\""), "{page}");
        assert!(page.contains("\"runs\":[{\"target\":\"run-1\",\"label\":\"0002_add_note\""));
    }

    #[test]
    fn a_hostile_migration_name_and_statement_stay_text() {
        let mut report = two_migrations();
        let hostile = "</script><script>alert(1)</script>\"><img src=x onerror=alert(2)>";
        let (checked, _) = &mut report.migrations[0];
        checked.migration.name = format!("0002_{hostile}");
        checked.statements[0].sql = hostile.to_string();
        if let Outcome::Measured(run) = &mut checked.outcome {
            run.folder = report.out_dir.join(format!("0002_{hostile}"));
        }
        let page = String::from_utf8(check_page(&report).unwrap().bytes).unwrap();
        // The page's own three scripts, no other; the name only escaped.
        assert_eq!(page.matches("<script").count(), 4, "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(
            page.contains("&lt;/script&gt;&lt;script&gt;alert(1)"),
            "{page}"
        );
        assert!(
            page.contains("<a href=\"0002_%3C/script%3E%3Cscript%3Ealert%281%29"),
            "{page}"
        );
    }

    /// Two measured migrations: each run's charts draw, follow a cursor of
    /// their own, and the readout names the migration.
    #[test]
    #[ignore = "opens chromium; scripts/test runs it (cargo test -- --include-ignored)"]
    fn each_migration_s_timelines_draw_in_a_browser_with_a_cursor_of_their_own() {
        let mut report = two_migrations();
        let mut second = report.migrations[0].clone();
        second.0.migration.name = "0004_again".to_string();
        report.migrations.push(second);
        let page = String::from_utf8(check_page(&report).unwrap().bytes).unwrap();
        let seen = crate::export::html::browser_tests::open(&page, "naive:10");
        assert_eq!(seen.errors, Vec::<String>::new(), "{seen:?}");
        assert_eq!(seen.resources, 0, "{seen:?}");
        assert_eq!(seen.blank, Vec::<String>::new(), "{seen:?}");
        assert!(
            seen.charts >= 6 && seen.charts.is_multiple_of(2),
            "{seen:?}"
        );
        let hover = seen.hover.as_ref().expect("the hover");
        assert!(
            hover.text.starts_with("0002_add_note: naive, second 10"),
            "{hover:?}"
        );
        let half = seen.synced.len() / 2;
        assert!(
            seen.synced[..half].iter().all(|i| *i == Some(10)),
            "{seen:?}"
        );
        assert!(
            seen.synced[half..].iter().all(|i| *i != Some(10)),
            "{seen:?}"
        );
    }
}
