//! The console's last lines of a check: where its time went (the same
//! figures as check.json's `phases`).

use crate::engine::postgres::check_verdict::phases::CheckPhases;
use crate::export::format::format_thousands as thousands;

/// The console's last lines: the phases of the whole check, then of each
/// migration that was traced.
pub fn phase_lines(phases: &CheckPhases) -> String {
    let rows = match phases.fill_rows_per_s {
        Some(rate) => format!(
            " ({} rows, {} rows/s)",
            thousands(phases.fill_rows),
            thousands(rate.round() as u64)
        ),
        None => String::new(),
    };
    let mut text = format!(
        "time: server start {:.1} s, earlier migrations {:.1} s, fill {:.1} s{rows}, \
         report {:.1} s; total {:.1} s\n",
        phases.server_start_s,
        phases.earlier_migrations_s,
        phases.fill_s,
        phases.report_s,
        phases.total_s
    );
    for migration in &phases.migrations {
        let mut parts = vec![format!("trace {:.1} s", migration.trace_s)];
        parts.extend(migration.runs.iter().map(|run| {
            let replica = if run.replica { " on the replica" } else { "" };
            format!("{}{replica} {:.1} s", run.strategy, run.run_s)
        }));
        parts.push(format!("apply {:.1} s", migration.apply_s));
        text.push_str(&format!(
            "time of {}: {}\n",
            migration.name,
            parts.join(", ")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::postgres::check_verdict::phases::{MigrationPhases, RunPhase};

    #[test]
    fn the_lines_name_every_phase_and_the_fills_rate() {
        let phases = CheckPhases {
            server_start_s: 0.42,
            earlier_migrations_s: 2.0,
            fill_s: 8.0,
            fill_rows: 4_000_000,
            fill_rows_per_s: Some(500_000.0),
            fill_tables: 40,
            tables_left_empty: 0,
            fill_key_tables: 0,
            migrations: vec![MigrationPhases {
                name: "0021_add_note.sql".into(),
                trace_s: 0.04,
                runs: vec![RunPhase {
                    strategy: "naive".into(),
                    replica: false,
                    copy_s: 0.3,
                    run_s: 16.25,
                }],
                apply_s: 0.01,
            }],
            report_s: 0.2,
            total_s: 27.0,
        };
        assert_eq!(
            phase_lines(&phases),
            "time: server start 0.4 s, earlier migrations 2.0 s, fill 8.0 s (4,000,000 rows, \
             500,000 rows/s), report 0.2 s; total 27.0 s\n\
             time of 0021_add_note.sql: trace 0.0 s, naive 16.2 s, apply 0.0 s\n"
        );
    }
}
