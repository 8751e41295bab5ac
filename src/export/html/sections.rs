//! The page's text, written as HTML in Rust so that it reads without a
//! script: the heading, the opening lines (a stop, the rows written), the
//! ranking with its headline and notes, the bounds with their verdicts, the
//! summary table and what each strategy did. The tables are the ones `summary.md` builds
//! ([`markdown::SUMMARY_COLUMNS`], [`markdown::RANKING_COLUMNS`]), laid out
//! as HTML, every text through [`escape`].

use std::fmt::Write as _;

use crate::expect::Verdict;
use crate::export::ci::{ExpectationRecord, bounds_verdict};
use crate::export::markdown::{self, RANKING_RULE, run_sentences};
use crate::export::sentences::opening_lines;
use crate::export::table::{self, Align, Column, Table, invalid_notes, ranking, what_happened_of};
use crate::metrics::RunReport;

/// The `<header>` and `<main>` text of `report`'s page, escaped; the charts
/// go in `<div id="timelines">`, which the script fills. `bounds` are the
/// CI bounds with their verdicts (none: the page says nothing of bounds).
pub fn body(report: &RunReport, bounds: &[ExpectationRecord]) -> String {
    let mut html = String::new();
    // Writing into a String cannot fail, hence the ignored results.
    let _ = writeln!(html, "<header>\n<h1>{}</h1>", escape(&report.workload));
    for line in opening_lines(report) {
        let _ = writeln!(html, "<p class=\"alert\">{}</p>", escape(&line));
    }
    if !bounds.is_empty() {
        let verdicts: Vec<Verdict> = bounds.iter().map(|bound| bound.verdict).collect();
        let (head, rest) = bounds_verdict(&verdicts);
        let _ = writeln!(
            html,
            "<p class=\"verdict bounds-{}\">{}: {}. <a href=\"#bounds\">The bounds</a></p>",
            escape(&head.to_lowercase().replace(' ', "-")),
            escape(head),
            escape(&rest)
        );
    }
    if let Some(happened) = what_happened_of(report) {
        let _ = writeln!(
            html,
            "<p class=\"verdict happened\">What happened: {}</p>",
            escape(&happened)
        );
    }
    match ranking(report) {
        Some(ranking) => {
            let _ = writeln!(
                html,
                "<p class=\"verdict\">{}</p>",
                escape(&ranking.headline)
            );
            html.push_str("</header>\n<main>\n<section id=\"ranking\">\n<h2>Ranking</h2>\n");
            html.push_str(&render_table(&Table::build(
                markdown::RANKING_COLUMNS,
                &ranking.rows,
            )));
            for note in &ranking.notes {
                let _ = writeln!(html, "<p class=\"alert\">{}</p>", escape(note));
            }
            let _ = writeln!(html, "<p class=\"rule\">{}</p>", escape(RANKING_RULE));
            html.push_str("</section>\n");
        }
        None => {
            for note in invalid_notes(report) {
                let _ = writeln!(html, "<p class=\"alert\">{}</p>", escape(&note));
            }
            html.push_str("</header>\n<main>\n");
        }
    }
    if !bounds.is_empty() {
        html.push_str("<section id=\"bounds\">\n<h2>Bounds</h2>\n");
        html.push_str(&render_table(&Table::build(BOUND_COLUMNS, bounds)));
        html.push_str("</section>\n");
    }
    html.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
    html.push_str(&render_table(&table::summary_table(
        markdown::SUMMARY_COLUMNS,
        &table::summary_rows(report),
    )));
    for sentence in run_sentences(report) {
        let _ = writeln!(html, "<p>{}</p>", escape(&sentence));
    }
    html.push_str("</section>\n");
    html.push_str(
        "<section id=\"timelines\" aria-label=\"Timelines per strategy\">\n<h2>Timelines</h2>\n\
         <p class=\"hint\">Hover a second for its figures and its lock chain; drag to zoom, \
         double-click to zoom out, click a legend entry to hide its line.</p>\n\
         <noscript><p>The charts need JavaScript; the figures are in timeline.csv and \
         the PNG charts beside this page.</p></noscript>\n</section>\n</main>\n",
    );
    html
}

/// The bounds' columns, as `expectations.csv` has them.
const BOUND_COLUMNS: &[Column<ExpectationRecord>] = &[
    Column::new("result", Align::Left, |r| match r.verdict {
        Verdict::Pass => "pass".to_string(),
        Verdict::Fail => "FAIL".to_string(),
        Verdict::Skipped => "skipped".to_string(),
    }),
    Column::new("strategy", Align::Left, |r| r.strategy.clone()),
    Column::new("expectation", Align::Left, |r| r.expectation.clone()),
    Column::new("limit", Align::Left, |r| r.limit.clone()),
    Column::new("measured", Align::Left, |r| match r.verdict {
        Verdict::Skipped => "not run".to_string(),
        _ => r.measured.clone(),
    }),
    Column::new("source", Align::Left, |r| r.source.clone()),
];

/// `table` as an HTML table, every cell escaped; numbers aligned right.
pub fn render_table(table: &Table) -> String {
    let class = |align: &Align| match align {
        Align::Left => "",
        Align::Right => " class=\"num\"",
    };
    let mut html = String::from("<div class=\"table\"><table>\n<thead><tr>");
    for (title, align) in table.header.iter().zip(&table.align) {
        let _ = write!(html, "<th{}>{}</th>", class(align), escape(title));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        html.push_str("<tr>");
        for (cell, align) in row.iter().zip(&table.align) {
            let _ = write!(html, "<td{}>{}</td>", class(align), escape(cell));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody>\n</table></div>\n");
    html
}

/// `text` safe as HTML element content and as a quoted attribute value:
/// the crate's one markup escaper, `junit`'s, whose entities and character
/// references HTML reads as XML does.
pub fn escape(text: &str) -> String {
    crate::export::junit::xml_escape(text)
}
