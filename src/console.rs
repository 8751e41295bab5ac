//! What the harness prints at the end of a run: the summary table on stdout,
//! the lock chains, and (with 2+ strategies) the ranking with its headline.

use crate::metrics::RunReport;
use crate::metrics::locks::{chain, describe_chain};
use crate::metrics::ranking::{
    format_thousands, headline, migration_done_cell, rank_strategies, window_note,
};

/// A plain-text table, one row per strategy, for stdout, followed by the lock
/// chains and, with 2+ strategies, the ranking (see [`ranking_lines`]).
pub fn summary_table(report: &RunReport) -> String {
    let header = [
        "strategy",
        "txns",
        "mean tps",
        "zero-tps s",
        "stall s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "failed",
        "ddl tries",
        "ddl s",
        "outcome",
        "lock waiters",
    ];
    let rows: Vec<Vec<String>> = report
        .strategies
        .iter()
        .map(|strategy| {
            let s = &strategy.summary;
            vec![
                s.strategy.clone(),
                s.transactions.to_string(),
                format!("{:.1}", s.mean_tps),
                s.zero_tps_seconds.to_string(),
                s.longest_stall_s.to_string(),
                format!("{:.3}", s.lat_p50_ms),
                format!("{:.3}", s.lat_p99_ms),
                format!("{:.1}", s.lat_max_ms),
                s.failed.to_string(),
                s.ddl_attempts.to_string(),
                format!("{:.1}", s.ddl_total_ms / 1000.0),
                s.ddl_outcome.clone(),
                s.max_lock_waiters.to_string(),
            ]
        })
        .collect();
    let mut out = aligned_table(&header, &rows, &[0]);
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
        let losses = strategy.summary.losses();
        if !losses.is_empty() {
            out.push_str(&format!("{}: {}\n", strategy.strategy, losses.join("; ")));
        }
    }
    out.push_str(&ranking_lines(report));
    out
}

/// A blank line, `ranking:`, an aligned table of the strategies in rank order
/// (best first), notes for strategies measured over the whole run, and the
/// headline sentence; empty when the run has fewer than 2 strategies.
pub fn ranking_lines(report: &RunReport) -> String {
    if report.strategies.len() < 2 {
        return String::new();
    }
    let ranked = rank_strategies(report);
    let header = [
        "rank",
        "strategy",
        "stall s",
        "zero-tps s",
        "worst tps",
        "worst p99 ms",
        "max ms",
        "failed",
        "done at s",
        "tries",
        "blocker",
    ];
    let rows: Vec<Vec<String>> = ranked
        .iter()
        .enumerate()
        .map(|(index, row)| {
            vec![
                (index + 1).to_string(),
                row.strategy.clone(),
                row.longest_stall_s.to_string(),
                row.zero_tps_seconds.to_string(),
                format_thousands(row.worst_second_tps),
                format!("{:.1}", row.worst_second_p99_ms),
                format!("{:.1}", row.window_max_latency_ms),
                row.failed_transactions.to_string(),
                migration_done_cell(row),
                row.ddl_tries.to_string(),
                row.blocker_outcome.clone(),
            ]
        })
        .collect();
    let mut out = String::from("\nranking:\n");
    out.push_str(&aligned_table(&header, &rows, &[1, 10]));
    for row in &ranked {
        if let Some(note) = window_note(row) {
            out.push_str(&note);
            out.push('\n');
        }
    }
    out.push_str(&headline(&ranked));
    out.push('\n');
    out
}

/// The header and rows as lines of columns two spaces apart; the columns in
/// `left_aligned` are padded on the right, the others on the left; no trailing spaces.
fn aligned_table(header: &[&str], rows: &[Vec<String>], left_aligned: &[usize]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .chain([header[column].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let format_row = |cells: &[String]| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(column, cell)| {
                if left_aligned.contains(&column) {
                    format!("{cell:<width$}", width = widths[column])
                } else {
                    format!("{cell:>width$}", width = widths[column])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = String::new();
    out.push_str(&format_row(
        &header
            .iter()
            .map(|cell| cell.to_string())
            .collect::<Vec<_>>(),
    ));
    out.push('\n');
    for row in rows {
        out.push_str(&format_row(row));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::sample::reference_report;

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
                "rank  strategy  stall s  zero-tps s  worst tps  worst p99 ms  max ms  failed  \
                 done at s  tries  blocker",
                "   1  retry           0           0      1,700         420.0   500.0       0       \
                 18.0      5  ok",
                "   2  naive           9           9          0        9100.0  9700.0       0       \
                 15.7      1  ok",
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
