//! What the harness prints at the end of a run: the summary table on stdout.

use crate::metrics::RunReport;
use crate::metrics::locks::{chain, describe_chain};

/// A plain-text table, one row per strategy, for stdout.
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
                s.ddl_attempts.to_string(),
                format!("{:.1}", s.ddl_total_ms / 1000.0),
                s.ddl_outcome.clone(),
                s.max_lock_waiters.to_string(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            rows.iter()
                .map(|row| row[column].len())
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
                if column == 0 {
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
    for row in &rows {
        out.push_str(&format_row(row));
        out.push('\n');
    }
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
    }
    out
}
