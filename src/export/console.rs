//! What the harness prints at the end of a run: the summary table on stdout,
//! the lock chains, and (with 2+ strategies) the ranking with its headline.
//! The console picks its columns from the rows [`crate::export::table`] builds
//! (short titles, fixed decimals) and lays them out two spaces apart.

use crate::config::Sweep;
use crate::export::format::{format_count, format_seconds, format_spread};
use crate::export::sentences::{
    describe_chain, failures_sentence, invariants_sentence, labelled_runs, losses,
    migration_done_cell, opening_lines, pool_sentence, retries_sentence, worst_latency_cell,
    worst_share,
};
use crate::export::sweep::{self, SweepRecord};
use crate::export::table::{
    self, Align, Column, RankedRow, SummaryRow, Table, invalid_notes, ranking, strategy_cell,
};
use crate::metrics::RunReport;
use crate::metrics::locks::chain;

use Align::{Left, Right};

/// A plain-text table, one row per strategy, for stdout, followed by the lock
/// chains and, with 2+ strategies, the ranking (see [`ranking_lines`]);
/// opened by the lines that say the run was interrupted or wrote to the
/// user's tables (see [`opening_lines`]).
pub fn summary_table(report: &RunReport) -> String {
    let mut out = String::new();
    for line in opening_lines(report) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&render_table(&summary_rows(report)));
    for strategy in &labelled_runs(report) {
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
    labelled_runs(report)
        .iter()
        .flat_map(|run| {
            [
                failures_sentence(run),
                retries_sentence(&run.summary),
                invariants_sentence(run),
            ]
        })
        .flatten()
        .map(|sentence| sentence + "\n")
        .collect()
}

/// The summary figures the console shows, one row per strategy (with
/// repeats, each figure's median and range over them).
fn summary_rows(report: &RunReport) -> Table {
    table::summary_table(SUMMARY_COLUMNS, &table::summary_rows(report))
}

/// The console's summary columns: short titles, latencies in fixed decimals.
const SUMMARY_COLUMNS: &[Column<SummaryRow>] = &[
    Column::new("strategy", Left, |r| r.text(strategy_cell)),
    Column::new("txns", Right, |r| {
        r.cell(|s| s.transactions as f64, |n| format!("{n:.0}"))
    }),
    Column::new("mean tps", Right, |r| {
        r.cell(|s| s.mean_tps, |n| format!("{n:.1}"))
    }),
    Column::new("zero-tps s", Right, |r| {
        r.cell(|s| f64::from(s.zero_tps_seconds), format_count)
    }),
    Column::new("stall s", Right, |r| {
        r.cell(|s| f64::from(s.longest_stall_s), format_count)
    }),
    Column::new("p50 ms", Right, |r| {
        r.cell(|s| s.lat_p50_ms, |n| format!("{n:.3}"))
    }),
    Column::new("p99 ms", Right, |r| {
        r.cell(|s| s.lat_p99_ms, |n| format!("{n:.3}"))
    }),
    Column::new("max ms", Right, |r| {
        r.cell(|s| s.lat_max_ms, |n| format!("{n:.1}"))
    }),
    Column::new("failed", Right, |r| {
        r.cell(|s| s.failed as f64, format_count)
    }),
    Column::new("ddl tries", Right, |r| {
        r.cell(|s| f64::from(s.ddl_attempts), format_count)
    }),
    Column::new("ddl s", Right, |r| {
        r.cell(|s| s.ddl_total_ms / 1000.0, format_seconds)
    }),
    Column::new("outcome", Right, |r| r.text(|s| s.ddl_outcome.to_string())),
    Column::new("lock waiters", Right, |r| {
        r.cell(|s| f64::from(s.max_lock_waiters), format_count)
    }),
];

/// A blank line, `ranking:`, an aligned table of the strategies in rank order
/// (best first), notes for strategies measured over the whole run, and the
/// headline sentence; empty when the run has fewer than 2 strategies.
pub fn ranking_lines(report: &RunReport) -> String {
    let Some(ranking) = ranking(report) else {
        return invalid_notes(report)
            .iter()
            .map(|note| format!("{note}\n"))
            .collect();
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

/// The console's ranking columns, in rank order: short titles, latencies with
/// one decimal, the worst second as a share of the strategy's own baseline.
const RANKING_COLUMNS: &[Column<RankedRow>] = &[
    Column::new("rank", Right, |r| r.rank.to_string()),
    Column::new("strategy", Left, |r| r.row.strategy.clone()),
    Column::new("decided by", Left, |r| r.decided_by.clone()),
    Column::new("stall s", Right, |r| {
        format_spread(&r.row.longest_stall_s(), format_count, "")
    }),
    Column::new("zero-tps s", Right, |r| {
        format_spread(&r.row.zero_tps_seconds(), format_count, "")
    }),
    Column::new("worst %", Right, |r| worst_share(&r.row)),
    Column::new("worst lat ms", Right, |r| {
        worst_latency_cell(&r.row, one_decimal)
    }),
    Column::new("max ms", Right, |r| {
        format_spread(&r.row.window_max_latency_ms(), one_decimal, "")
    }),
    Column::new("failed", Right, |r| {
        format_spread(&r.row.failed_transactions(), format_count, "")
    }),
    Column::new("done at s", Right, |r| migration_done_cell(&r.row)),
    Column::new("tries", Right, |r| {
        format_spread(&r.row.ddl_tries(), format_count, "")
    }),
    Column::new("blocker", Left, |r| r.row.blocker_outcome()),
];

/// A number with one decimal.
fn one_decimal(value: f64) -> String {
    format!("{value:.1}")
}

/// The table and the sentences of a sweep, as stdout shows them at its end.
pub fn sweep_text(sweep: &Sweep, records: &[SweepRecord]) -> String {
    let mut text = render_table(&sweep::table(records));
    for sentence in sweep::sentences(sweep, records) {
        text.push_str(&sentence);
        text.push('\n');
    }
    text
}

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
                "rank  strategy  decided by                stall s  zero-tps s  worst %    \
                 worst lat ms  max ms  failed  done at s  tries  blocker",
                "   1  retry     longest stall 0 s vs 9 s        0           0      57%           \
                 420.0   500.0       0       18.0      5  ok",
                "   2  naive     longest stall 9 s vs 0 s        9           9       0%  \
                 9700.0 stalled  9700.0       0       15.7      1  ok",
                "naive: no transaction ended in second 6, so it has no p99; its worst-second \
                 latency is the 9700 ms of the transactions stalled through it, which ended in \
                 second 15.",
                "retry kept 57% of its baseline in its worst second (naive: 0%) and finished the \
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

    #[test]
    fn the_console_shows_retries_and_failures_by_kind_when_there_are_any() {
        let mut report = reference_report();
        assert!(!summary_table(&report).contains("retried"));
        let retry = &mut report.strategies[1].summary;
        retry.retried = 40;
        retry.retries = 55;
        retry.failed_deadlock = 1;
        let text = summary_table(&report);
        let header = text.lines().next().unwrap();
        assert!(
            header.ends_with(
                "retried  retries  failed serialization  failed deadlock  failed lock timeout"
            ),
            "{header}"
        );
        assert!(
            text.contains("retry: 40 transactions retried (55 retries, "),
            "{text}"
        );
        assert!(
            text.contains(
                "retry: 40 transactions retried (55 retries); ranked by those that failed after \
                 their last try: deadlock 1."
            ),
            "{text}"
        );
    }
}
