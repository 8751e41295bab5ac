//! What the harness prints at the end of a run: the summary table on stdout,
//! the lock chains, and (with 2+ strategies) the ranking with its headline.
//! The console picks its columns from the rows [`crate::export::table`] builds
//! (short titles, fixed decimals) and lays them out two spaces apart.

use crate::export::format::{format_seconds, format_thousands};
use crate::export::markdown::failures_sentence;
use crate::export::sentences::{describe_chain, losses, migration_done_cell, pool_sentence};
use crate::export::table::{Align, Column, RankedRow, Table, ranking};
use crate::metrics::locks::chain;
use crate::metrics::{RunReport, Summary};

use Align::{Left, Right};

/// A plain-text table, one row per strategy, for stdout, followed by the lock
/// chains and, with 2+ strategies, the ranking (see [`ranking_lines`]).
pub fn summary_table(report: &RunReport) -> String {
    let mut out = render_table(&summary_rows(report));
    for strategy in &report.strategies {
        let locks = &strategy.locks;
        if let Some(first) = locks.worst.first() {
            out.push_str(&format!(
                "{}: lock queue at its worst ({:.1} s): {}\n",
                strategy.strategy,
                first.t_s,
                describe_chain(&chain(&locks.worst))
            ));
        }
        for sentence in &locks.server_log {
            out.push_str(&format!("{}: {sentence}\n", strategy.strategy));
        }
        let losses = losses(strategy);
        if !losses.is_empty() {
            out.push_str(&format!("{}: {}\n", strategy.strategy, losses.join("; ")));
        }
        if let Some(sentence) = pool_sentence(&strategy.summary) {
            out.push_str(&format!("{sentence}\n"));
        }
    }
    out.push_str(&failure_lines(report));
    out.push_str(&ranking_lines(report));
    out
}

/// One line per strategy that had failed transactions: their kinds and when.
fn failure_lines(report: &RunReport) -> String {
    report
        .strategies
        .iter()
        .filter_map(failures_sentence)
        .map(|sentence| sentence + "\n")
        .collect()
}

/// The summary figures the console shows, one row per strategy.
fn summary_rows(report: &RunReport) -> Table {
    Table::build(
        SUMMARY_COLUMNS,
        report.strategies.iter().map(|strategy| &strategy.summary),
    )
}

/// The console's summary columns: short titles, latencies in fixed decimals.
const SUMMARY_COLUMNS: &[Column<Summary>] = &[
    Column::new("strategy", Left, |s| s.strategy.clone()),
    Column::new("txns", Right, |s| s.transactions.to_string()),
    Column::new("mean tps", Right, |s| format!("{:.1}", s.mean_tps)),
    Column::new("zero-tps s", Right, |s| s.zero_tps_seconds.to_string()),
    Column::new("stall s", Right, |s| s.longest_stall_s.to_string()),
    Column::new("p50 ms", Right, |s| format!("{:.3}", s.lat_p50_ms)),
    Column::new("p99 ms", Right, |s| format!("{:.3}", s.lat_p99_ms)),
    Column::new("max ms", Right, |s| format!("{:.1}", s.lat_max_ms)),
    Column::new("failed", Right, |s| s.failed.to_string()),
    Column::new("ddl tries", Right, |s| s.ddl_attempts.to_string()),
    Column::new("ddl s", Right, |s| format_seconds(s.ddl_total_ms / 1000.0)),
    Column::new("outcome", Right, |s| s.ddl_outcome.to_string()),
    Column::new("lock waiters", Right, |s| s.max_lock_waiters.to_string()),
];

/// A blank line, `ranking:`, an aligned table of the strategies in rank order
/// (best first), notes for strategies measured over the whole run, and the
/// headline sentence; empty when the run has fewer than 2 strategies.
pub fn ranking_lines(report: &RunReport) -> String {
    let Some(ranking) = ranking(report) else {
        return String::new();
    };
    let mut out = String::from("\nranking:\n");
    out.push_str(&render_table(&Table::build(RANKING_COLUMNS, &ranking.rows)));
    for note in &ranking.notes {
        out.push_str(note);
        out.push('\n');
    }
    out.push_str(&ranking.headline);
    out.push('\n');
    out
}

/// The console's ranking columns, in rank order: short titles, latencies with one decimal.
const RANKING_COLUMNS: &[Column<RankedRow>] = &[
    Column::new("rank", Right, |r| r.rank.to_string()),
    Column::new("strategy", Left, |r| r.row.strategy.clone()),
    Column::new("decided by", Left, |r| r.decided_by.clone()),
    Column::new("stall s", Right, |r| r.row.longest_stall_s.to_string()),
    Column::new("zero-tps s", Right, |r| r.row.zero_tps_seconds.to_string()),
    Column::new("worst tps", Right, |r| {
        format_thousands(r.row.worst_second_tps)
    }),
    Column::new("worst p99 ms", Right, |r| {
        format!("{:.1}", r.row.worst_second_p99_ms)
    }),
    Column::new("max ms", Right, |r| {
        format!("{:.1}", r.row.window_max_latency_ms)
    }),
    Column::new("failed", Right, |r| r.row.failed_transactions.to_string()),
    Column::new("done at s", Right, |r| migration_done_cell(&r.row)),
    Column::new("tries", Right, |r| r.row.ddl_tries.to_string()),
    Column::new("blocker", Left, |r| r.row.blocker_outcome.clone()),
];

/// The header and rows as lines of columns two spaces apart, each column as
/// wide as its widest cell and padded as its [`Align`] says; no trailing spaces.
pub fn render_table(table: &Table) -> String {
    let widths: Vec<usize> = (0..table.header.len())
        .map(|column| {
            table
                .rows
                .iter()
                .map(|row| row[column].chars().count())
                .chain([table.header[column].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let render_row = |cells: &[String]| -> String {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(column, cell)| match table.align[column] {
                Align::Left => format!("{cell:<width$}", width = widths[column]),
                Align::Right => format!("{cell:>width$}", width = widths[column]),
            })
            .collect();
        let mut line = padded.join("  ").trim_end().to_string();
        line.push('\n');
        line
    };
    let mut out = render_row(&table.header);
    for row in &table.rows {
        out.push_str(&render_row(row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::reference_report;

    #[test]
    fn the_ranking_follows_the_summary_table() {
        let text = summary_table(&reference_report());
        let lines: Vec<&str> = text.lines().collect();
        // Header, naive, retry, then the ranking.
        assert!(lines[0].starts_with("strategy   txns"), "{text}");
        assert_eq!(lines[3], "", "{text}");
        assert_eq!(lines[4], "ranking:");
        assert_eq!(
            &lines[5..],
            [
                "rank  strategy  decided by                stall s  zero-tps s  worst tps  \
                 worst p99 ms  max ms  failed  done at s  tries  blocker",
                "   1  retry     longest stall 0 s vs 9 s        0           0      1,700         \
                 420.0   500.0       0       18.0      5  ok",
                "   2  naive     longest stall 9 s vs 0 s        9           9          0        \
                 9100.0  9700.0       0       15.7      1  ok",
                "retry kept the worst second at 1,700 tps (naive: 0 tps) and finished the \
                 migration 2.3 s later than naive.",
            ],
            "{text}"
        );
    }

    #[test]
    fn one_strategy_has_no_ranking() {
        let mut report = reference_report();
        report.strategies.truncate(1);
        let text = summary_table(&report);
        assert_eq!(ranking_lines(&report), "");
        assert!(!text.contains("ranking:"), "{text}");
        assert_eq!(text.lines().count(), 2, "{text}");
    }
}
