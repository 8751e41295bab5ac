//! The CSV files: `timeline.csv`, `ddl_attempts.csv` and `summary.csv`.

use std::path::Path;

use crate::metrics::RunReport;

use super::{
    ATTEMPTS_CSV, Exporter, LOCKS_CSV, SUMMARY_CSV, TIMELINE_CSV, rounded_summary, write_file,
};

/// The exact header of `timeline.csv`.
pub const TIMELINE_HEADER: [&str; 17] = [
    "strategy",
    "second",
    "tps",
    "failed",
    "lat_mean_ms",
    "lat_p50_ms",
    "lat_p99_ms",
    "lat_max_ms",
    "lock_waiters",
    "blocker_active",
    "ddl_state",
    "waiting_behind_ddl",
    "oldest_wait_ms",
    "timeouts",
    "skipped",
    "lag_ms",
    "behind_schedule",
];

/// The exact header of `locks.csv`.
pub const LOCKS_HEADER: [&str; 11] = [
    "strategy",
    "t_s",
    "pid",
    "role",
    "state",
    "wait_event_type",
    "wait_event",
    "lock_mode",
    "granted",
    "blocked_by",
    "wait_ms",
];

/// The exact header of `ddl_attempts.csv`.
pub const ATTEMPTS_HEADER: [&str; 8] = [
    "strategy",
    "attempt",
    "started_s",
    "ended_s",
    "waited_ms",
    "outcome",
    "sqlstate",
    "message",
];

/// Writes `timeline.csv`: one row per strategy and second, zero seconds included.
pub struct TimelineCsv;

impl Exporter for TimelineCsv {
    fn name(&self) -> &'static str {
        TIMELINE_CSV
    }

    fn write(&self, report: &RunReport, dir: &Path) -> anyhow::Result<()> {
        write_file(&dir.join(TIMELINE_CSV), |out| {
            let mut writer = ::csv::Writer::from_writer(out);
            writer.write_record(TIMELINE_HEADER)?;
            for strategy in &report.strategies {
                for row in &strategy.seconds {
                    let locks = strategy.locks.second(row.second);
                    writer.write_record([
                        strategy.strategy.clone(),
                        row.second.to_string(),
                        row.tps.to_string(),
                        row.failed.to_string(),
                        format!("{:.3}", row.lat_mean_ms),
                        format!("{:.3}", row.lat_p50_ms),
                        format!("{:.3}", row.lat_p99_ms),
                        format!("{:.3}", row.lat_max_ms),
                        row.lock_waiters.to_string(),
                        if row.blocker_active { "1" } else { "0" }.to_string(),
                        row.ddl_state.as_str().to_string(),
                        locks.waiting_behind_ddl.to_string(),
                        format!("{:.1}", locks.oldest_wait_ms),
                        row.timeouts.to_string(),
                        row.skipped.to_string(),
                        format!("{:.3}", row.lag_ms),
                        row.behind_schedule.to_string(),
                    ])?;
                }
            }
            writer.flush()?;
            Ok(())
        })
    }
}

/// Writes `locks.csv`: every sampled session that waited for a lock or blocked
/// another, with `blocked_by` as roles separated by spaces.
pub struct LocksCsv;

impl Exporter for LocksCsv {
    fn name(&self) -> &'static str {
        LOCKS_CSV
    }

    fn write(&self, report: &RunReport, dir: &Path) -> anyhow::Result<()> {
        write_file(&dir.join(LOCKS_CSV), |out| {
            let mut writer = ::csv::Writer::from_writer(out);
            writer.write_record(LOCKS_HEADER)?;
            for strategy in &report.strategies {
                for sample in &strategy.locks.samples {
                    writer.write_record([
                        strategy.strategy.clone(),
                        format!("{:.3}", sample.t_s),
                        sample.pid.to_string(),
                        sample.role.clone(),
                        sample.state.clone(),
                        sample.wait_event_type.clone(),
                        sample.wait_event.clone(),
                        sample.lock_mode.clone(),
                        if sample.granted { "1" } else { "0" }.to_string(),
                        sample.blocked_by.join(" "),
                        format!("{:.1}", sample.wait_ms),
                    ])?;
                }
            }
            writer.flush()?;
            Ok(())
        })
    }
}

/// Writes `ddl_attempts.csv`: one row per DDL attempt of every strategy (only the header
/// when the run had no DDL).
pub struct AttemptsCsv;

impl Exporter for AttemptsCsv {
    fn name(&self) -> &'static str {
        ATTEMPTS_CSV
    }

    fn write(&self, report: &RunReport, dir: &Path) -> anyhow::Result<()> {
        write_file(&dir.join(ATTEMPTS_CSV), |out| {
            let mut writer = ::csv::Writer::from_writer(out);
            writer.write_record(ATTEMPTS_HEADER)?;
            for strategy in &report.strategies {
                for attempt in &strategy.attempts {
                    writer.write_record([
                        strategy.strategy.clone(),
                        attempt.attempt.to_string(),
                        format!("{:.3}", attempt.started_s),
                        format!("{:.3}", attempt.ended_s),
                        format!("{:.1}", attempt.waited_ms),
                        attempt.outcome.as_str().to_string(),
                        attempt.sqlstate.clone(),
                        attempt.message.clone(),
                    ])?;
                }
            }
            writer.flush()?;
            Ok(())
        })
    }
}

/// Writes `summary.csv`: one row per strategy, the fields of `metrics::Summary` in
/// their order, the header being their serde names.
pub struct SummaryCsv;

impl Exporter for SummaryCsv {
    fn name(&self) -> &'static str {
        SUMMARY_CSV
    }

    fn write(&self, report: &RunReport, dir: &Path) -> anyhow::Result<()> {
        write_file(&dir.join(SUMMARY_CSV), |out| {
            let mut writer = ::csv::Writer::from_writer(out);
            for strategy in &report.strategies {
                writer.serialize(rounded_summary(&strategy.summary))?;
            }
            writer.flush()?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::sample::reference_report;

    fn write_and_read(exporter: &dyn Exporter, file: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        exporter.write(&reference_report(), dir.path()).unwrap();
        std::fs::read_to_string(dir.path().join(file)).unwrap()
    }

    #[test]
    fn timeline_header_is_exact() {
        let text = write_and_read(&TimelineCsv, TIMELINE_CSV);
        assert_eq!(
            text.lines().next().unwrap(),
            "strategy,second,tps,failed,lat_mean_ms,lat_p50_ms,lat_p99_ms,lat_max_ms,\
             lock_waiters,blocker_active,ddl_state,waiting_behind_ddl,oldest_wait_ms,\
             timeouts,skipped,lag_ms,behind_schedule"
        );
    }

    #[test]
    fn locks_csv_has_the_exact_header_and_roles_as_blockers() {
        let mut report = reference_report();
        report.strategies[0]
            .locks
            .samples
            .push(crate::metrics::locks::LockSample {
                t_s: 8.2004,
                pid: 108,
                role: "ddl".into(),
                state: "active".into(),
                wait_event_type: "Lock".into(),
                wait_event: "relation".into(),
                lock_mode: "AccessExclusiveLock".into(),
                relation: "orders".into(),
                granted: false,
                blocked_by: vec!["report".into(), "external:4242".into()],
                wait_ms: 2300.04,
            });
        let dir = tempfile::tempdir().unwrap();
        LocksCsv.write(&report, dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(LOCKS_CSV)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], LOCKS_HEADER.join(","));
        assert_eq!(
            lines[0],
            "strategy,t_s,pid,role,state,wait_event_type,wait_event,lock_mode,granted,blocked_by,wait_ms"
        );
        assert_eq!(
            lines[1],
            "naive,8.200,108,ddl,active,Lock,relation,AccessExclusiveLock,0,report external:4242,2300.0"
        );
        assert_eq!(lines.len(), 2);
    }

    #[test]
    fn timeline_has_one_row_per_strategy_and_second() {
        let report = reference_report();
        let text = write_and_read(&TimelineCsv, TIMELINE_CSV);
        let rows: Vec<&str> = text.lines().skip(1).collect();
        let expected: usize = report.strategies.iter().map(|s| s.seconds.len()).sum();
        assert_eq!(rows.len(), expected);
        for strategy in &report.strategies {
            for row in &strategy.seconds {
                let prefix = format!("{},{},", strategy.strategy, row.second);
                assert_eq!(
                    rows.iter().filter(|line| line.starts_with(&prefix)).count(),
                    1,
                    "{prefix}"
                );
            }
        }
        // A zero second of naive, blocker on, DDL running; ms with 3 decimals.
        assert!(
            rows.contains(&"naive,7,0,0,0.000,0.000,0.000,0.000,100,1,running,0,0.0,0,0,0.000,0"),
            "{text}"
        );
        assert!(rows[0].starts_with("naive,0,3000,0,1.250,1.100,4.000,9.500,0,0,idle"));
    }

    #[test]
    fn open_loop_figures_are_the_last_columns() {
        let dir = tempfile::tempdir().unwrap();
        TimelineCsv
            .write(&crate::export::sample::open_loop_report(), dir.path())
            .unwrap();
        let text = std::fs::read_to_string(dir.path().join(TIMELINE_CSV)).unwrap();
        assert!(
            text.contains(
                "\nnaive,7,0,40,0.000,0.000,0.000,0.000,100,1,running,0,0.0,40,3,512.250,600\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn attempts_header_is_exact_and_figures_are_rounded() {
        let text = write_and_read(&AttemptsCsv, ATTEMPTS_CSV);
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            "strategy,attempt,started_s,ended_s,waited_ms,outcome,sqlstate,message"
        );
        assert_eq!(lines.next().unwrap(), "naive,1,6.000,15.700,9700.0,ok,,");
        assert_eq!(
            lines.next().unwrap(),
            "retry,1,6.000,6.500,500.0,lock_timeout,55P03,canceling statement due to lock timeout"
        );
    }

    #[test]
    fn a_message_with_a_comma_and_a_quote_round_trips() {
        let mut report = reference_report();
        let message = "relation \"items\", it says: \"busy\"";
        report.strategies[1].attempts[0].message = message.to_string();
        let dir = tempfile::tempdir().unwrap();
        AttemptsCsv.write(&report, dir.path()).unwrap();
        let mut reader = ::csv::Reader::from_path(dir.path().join(ATTEMPTS_CSV)).unwrap();
        let rows: Vec<::csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
        assert_eq!(rows.len(), 6);
        assert_eq!(&rows[1][7], message);
        assert_eq!(rows[1].len(), 8);
    }

    #[test]
    fn summary_header_is_the_serde_field_names() {
        let text = write_and_read(&SummaryCsv, SUMMARY_CSV);
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            "strategy,transactions,failed,mean_tps,zero_tps_seconds,longest_stall_s,\
             lat_p50_ms,lat_p99_ms,lat_p999_ms,lat_max_ms,ddl_attempts,ddl_total_ms,\
             ddl_outcome,ddl_last_wait_ms,max_lock_waiters,lost_connections,blocker_outcome,invalid_indexes,\
             timeouts,skipped,max_behind_schedule"
        );
        assert!(lines.next().unwrap().starts_with("naive,"));
        assert!(lines.next().unwrap().starts_with("retry,"));
        assert!(lines.next().is_none());
    }
}
