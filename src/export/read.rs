//! Reads a results folder back into a [`RunReport`], so `stallbench plot DIR`
//! can redraw the charts without rerunning anything.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::metrics::locks::SecondLocks;
use crate::metrics::{
    AttemptOutcome, DdlAttempt, DdlState, RunReport, SecondRow, StrategyReport, Summary,
};

use super::csv::{ATTEMPTS_HEADER, TIMELINE_HEADER};
use super::hgrm::parse_percentile_distribution;
use super::{ATTEMPTS_CSV, SUMMARY_CSV, SUMMARY_JSON, TIMELINE_CSV, hgrm_file_name};

/// Reads a results folder back (timeline.csv, ddl_attempts.csv, summary.csv, latency-*.hgrm)
/// into a RunReport with `latency.histogram = None` and percentiles from the .hgrm files,
/// so `stallbench plot DIR` can redraw the charts. The workload name comes from summary.json.
///
/// The files do not keep the blocker window, so every `blocker` is `None`; the seconds'
/// `blocker_active` flags still say when it was open. A strategy without an `.hgrm` file
/// gets an empty percentile curve.
pub fn read_report(dir: &Path) -> anyhow::Result<RunReport> {
    if !dir.is_dir() {
        bail!(
            "{}: no such folder; pass the results folder that a run wrote",
            dir.display()
        );
    }
    let workload = read_workload(&required_file(dir, SUMMARY_JSON)?)?;
    let summaries = read_summaries(&required_file(dir, SUMMARY_CSV)?)?;
    let mut strategies: Vec<StrategyReport> = Vec::new();
    for summary in summaries {
        if strategies.iter().any(|s| s.strategy == summary.strategy) {
            bail!(
                "{}: strategy \"{}\" has two rows; keep one",
                dir.join(SUMMARY_CSV).display(),
                summary.strategy
            );
        }
        strategies.push(StrategyReport::from_summary(summary));
    }

    let timeline_path = required_file(dir, TIMELINE_CSV)?;
    for (line, strategy, row, locks) in read_timeline(&timeline_path)? {
        let target = find_strategy(&mut strategies, &strategy, &timeline_path, line)?;
        target.seconds.push(row);
        target.locks.per_second.push(locks);
    }

    let attempts_path = required_file(dir, ATTEMPTS_CSV)?;
    for (line, strategy, attempt) in read_attempts(&attempts_path)? {
        let target = find_strategy(&mut strategies, &strategy, &attempts_path, line)?;
        target.attempts.push(attempt);
    }

    for strategy in &mut strategies {
        let path = dir.join(hgrm_file_name(&strategy.strategy));
        if path.exists() {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            strategy.latency.percentiles = parse_percentile_distribution(&path, &text)?;
        }
    }

    Ok(RunReport {
        workload,
        strategies,
    })
}

/// `dir/name`, or an error saying the folder lacks it.
fn required_file(dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let path = dir.join(name);
    if !path.is_file() {
        bail!(
            "{}: no {} here; is this a stallbench results folder?",
            dir.display(),
            name
        );
    }
    Ok(path)
}

fn find_strategy<'a>(
    strategies: &'a mut [StrategyReport],
    name: &str,
    path: &Path,
    line: u64,
) -> anyhow::Result<&'a mut StrategyReport> {
    match strategies.iter_mut().find(|s| s.strategy == name) {
        Some(strategy) => Ok(strategy),
        None => bail!(
            "{} line {}: strategy \"{}\" has no row in {}; do the files come from the same run?",
            path.display(),
            line,
            name,
            SUMMARY_CSV
        ),
    }
}

/// The workload name from `summary.json`.
fn read_workload(path: &Path) -> anyhow::Result<String> {
    #[derive(Deserialize)]
    struct WorkloadOnly {
        workload: String,
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    match serde_json::from_str::<WorkloadOnly>(&text) {
        Ok(file) => Ok(file.workload),
        Err(error) => bail!(
            "{}: not the expected {{\"workload\": ..., \"strategies\": [...]}} JSON ({}); \
             rerun the benchmark or fix the file",
            path.display(),
            error
        ),
    }
}

fn read_summaries(path: &Path) -> anyhow::Result<Vec<Summary>> {
    let mut reader =
        ::csv::Reader::from_path(path).with_context(|| format!("reading {}", path.display()))?;
    let header = reader
        .headers()
        .with_context(|| format!("reading {}", path.display()))?
        .clone();
    let mut summaries = Vec::new();
    for record in reader.records() {
        let record = record.with_context(|| format!("reading {}", path.display()))?;
        let line = line_of(&record);
        match record.deserialize::<Summary>(Some(&header)) {
            Ok(summary) => summaries.push(summary),
            Err(error) => {
                let problem = match error.kind() {
                    ::csv::ErrorKind::Deserialize { err, .. } => match err.field() {
                        Some(index) => format!(
                            "column {} is \"{}\", not valid ({})",
                            header.get(index as usize).unwrap_or("?"),
                            record.get(index as usize).unwrap_or(""),
                            err.kind()
                        ),
                        None => format!(
                            "{}; was the file written by another stallbench version?",
                            err.kind()
                        ),
                    },
                    _ => error.to_string(),
                };
                bail!("{} line {}: {}", path.display(), line, problem);
            }
        }
    }
    Ok(summaries)
}

/// Rows of `timeline.csv` as (line number, strategy, row, lock figures).
fn read_timeline(path: &Path) -> anyhow::Result<Vec<(u64, String, SecondRow, SecondLocks)>> {
    let mut rows = Vec::new();
    for (line, record) in read_records(path, &TIMELINE_HEADER)? {
        let field = Field {
            path,
            line,
            header: &TIMELINE_HEADER,
            record: &record,
        };
        let row = SecondRow {
            second: field.number(1)?,
            tps: field.number(2)?,
            failed: field.number(3)?,
            lat_mean_ms: field.number(4)?,
            lat_p50_ms: field.number(5)?,
            lat_p99_ms: field.number(6)?,
            lat_max_ms: field.number(7)?,
            lock_waiters: field.number(8)?,
            blocker_active: field.flag(9)?,
            ddl_state: field.one_of(10, DdlState::parse, "idle, running, backoff, done, failed")?,
            timeouts: field.number(13)?,
            skipped: field.number(14)?,
            lag_ms: field.number(15)?,
            behind_schedule: field.number(16)?,
        };
        let locks = SecondLocks {
            waiting_behind_ddl: field.number(11)?,
            oldest_wait_ms: field.number(12)?,
        };
        rows.push((line, record[0].to_string(), row, locks));
    }
    Ok(rows)
}

/// Rows of `ddl_attempts.csv` as (line number, strategy, attempt).
fn read_attempts(path: &Path) -> anyhow::Result<Vec<(u64, String, DdlAttempt)>> {
    let mut attempts = Vec::new();
    for (line, record) in read_records(path, &ATTEMPTS_HEADER)? {
        let field = Field {
            path,
            line,
            header: &ATTEMPTS_HEADER,
            record: &record,
        };
        let attempt = DdlAttempt {
            attempt: field.number(1)?,
            started_s: field.number(2)?,
            ended_s: field.number(3)?,
            waited_ms: field.number(4)?,
            outcome: field.one_of(5, AttemptOutcome::parse, "ok, lock_timeout, error, gave_up")?,
            sqlstate: record[6].to_string(),
            message: record[7].to_string(),
        };
        attempts.push((line, record[0].to_string(), attempt));
    }
    Ok(attempts)
}

/// The records of a CSV file whose header must be exactly `expected`, with their line numbers.
fn read_records(path: &Path, expected: &[&str]) -> anyhow::Result<Vec<(u64, ::csv::StringRecord)>> {
    let mut reader =
        ::csv::Reader::from_path(path).with_context(|| format!("reading {}", path.display()))?;
    let header = reader
        .headers()
        .with_context(|| format!("reading {}", path.display()))?
        .clone();
    if header.iter().ne(expected.iter().copied()) {
        bail!(
            "{} line 1: the header is \"{}\", expected \"{}\"; was the file written by another \
             stallbench version?",
            path.display(),
            header.iter().collect::<Vec<_>>().join(","),
            expected.join(",")
        );
    }
    let mut records = Vec::new();
    for record in reader.records() {
        // The reader is not flexible: a row with a missing or extra column is an error here.
        let record = record.with_context(|| format!("reading {}", path.display()))?;
        records.push((line_of(&record), record));
    }
    Ok(records)
}

fn line_of(record: &::csv::StringRecord) -> u64 {
    record.position().map_or(0, |position| position.line())
}

/// One CSV row being parsed, for error messages that name file, line and column.
struct Field<'a> {
    path: &'a Path,
    line: u64,
    header: &'a [&'a str],
    record: &'a ::csv::StringRecord,
}

impl Field<'_> {
    fn problem(&self, column: usize, what: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "{} line {}: column {} is \"{}\", {}",
            self.path.display(),
            self.line,
            self.header[column],
            &self.record[column],
            what
        )
    }

    fn number<T: FromStr>(&self, column: usize) -> anyhow::Result<T> {
        self.record[column]
            .trim()
            .parse()
            .map_err(|_| self.problem(column, "not a number"))
    }

    fn flag(&self, column: usize) -> anyhow::Result<bool> {
        match self.record[column].trim() {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            _ => Err(self.problem(column, "not 0 or 1")),
        }
    }

    fn one_of<T>(
        &self,
        column: usize,
        parse: fn(&str) -> Option<T>,
        allowed: &str,
    ) -> anyhow::Result<T> {
        parse(self.record[column].trim())
            .ok_or_else(|| self.problem(column, &format!("not one of {allowed}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::sample::open_loop_report;
    use crate::export::write_all;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    fn written_folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        write_all(&open_loop_report(), dir.path()).unwrap();
        dir
    }

    #[test]
    fn a_written_folder_reads_back() {
        let report = open_loop_report();
        let dir = written_folder();
        let read = read_report(dir.path()).unwrap();

        assert_eq!(read.workload, report.workload);
        assert_eq!(read.strategies.len(), report.strategies.len());
        for (back, original) in read.strategies.iter().zip(&report.strategies) {
            assert_eq!(back.strategy, original.strategy);
            assert!(back.blocker.is_none());
            assert!(back.latency.histogram.is_none());

            assert_eq!(back.seconds.len(), original.seconds.len());
            for (a, b) in back.seconds.iter().zip(&original.seconds) {
                assert_eq!(a.second, b.second);
                assert_eq!(a.tps, b.tps);
                assert_eq!(a.failed, b.failed);
                assert_eq!(a.lock_waiters, b.lock_waiters);
                assert_eq!(a.blocker_active, b.blocker_active);
                assert_eq!(a.ddl_state, b.ddl_state);
                assert_eq!(
                    (a.timeouts, a.skipped, a.behind_schedule),
                    (b.timeouts, b.skipped, b.behind_schedule)
                );
                for (x, y) in [
                    (a.lag_ms, b.lag_ms),
                    (a.lat_mean_ms, b.lat_mean_ms),
                    (a.lat_p50_ms, b.lat_p50_ms),
                    (a.lat_p99_ms, b.lat_p99_ms),
                    (a.lat_max_ms, b.lat_max_ms),
                ] {
                    assert!(close(x, y, 0.0005), "{x} vs {y}");
                }
            }

            assert_eq!(back.attempts.len(), original.attempts.len());
            for (a, b) in back.attempts.iter().zip(&original.attempts) {
                assert_eq!(a.attempt, b.attempt);
                assert!(close(a.started_s, b.started_s, 0.0005));
                assert!(close(a.ended_s, b.ended_s, 0.0005));
                assert!(close(a.waited_ms, b.waited_ms, 0.05));
                assert_eq!(a.outcome, b.outcome);
                assert_eq!(a.sqlstate, b.sqlstate);
                assert_eq!(a.message, b.message);
            }

            let (a, b) = (&back.summary, &original.summary);
            assert_eq!(a.strategy, b.strategy);
            assert_eq!(a.transactions, b.transactions);
            assert_eq!(a.failed, b.failed);
            assert_eq!(a.zero_tps_seconds, b.zero_tps_seconds);
            assert_eq!(a.longest_stall_s, b.longest_stall_s);
            assert_eq!(a.ddl_attempts, b.ddl_attempts);
            assert_eq!(a.ddl_outcome, b.ddl_outcome);
            assert_eq!(a.max_lock_waiters, b.max_lock_waiters);
            assert_eq!(a.lost_connections, b.lost_connections);
            for (x, y) in [
                (a.mean_tps, b.mean_tps),
                (a.lat_p50_ms, b.lat_p50_ms),
                (a.lat_p99_ms, b.lat_p99_ms),
                (a.lat_p999_ms, b.lat_p999_ms),
                (a.lat_max_ms, b.lat_max_ms),
                (a.ddl_total_ms, b.ddl_total_ms),
                (a.ddl_last_wait_ms, b.ddl_last_wait_ms),
            ] {
                assert!(close(x, y, 0.0005), "{x} vs {y}");
            }

            assert!(!back.latency.percentiles.is_empty());
            assert_eq!(
                back.latency.percentiles.len(),
                original.latency.percentiles.len()
            );
            let (last_p, last_ms) = *back.latency.percentiles.last().unwrap();
            assert_eq!(last_p, 100.0);
            assert!(close(last_ms, b.lat_max_ms, 0.0005));
        }
    }

    #[test]
    fn a_folder_read_back_can_be_written_again() {
        let dir = written_folder();
        let read = read_report(dir.path()).unwrap();
        let again = tempfile::tempdir().unwrap();
        write_all(&read, again.path()).unwrap();
        for name in [TIMELINE_CSV, ATTEMPTS_CSV, SUMMARY_CSV, SUMMARY_JSON] {
            assert_eq!(
                std::fs::read_to_string(dir.path().join(name)).unwrap(),
                std::fs::read_to_string(again.path().join(name)).unwrap(),
                "{name}"
            );
        }
        // No histograms any more, hence no .hgrm files.
        assert!(!again.path().join("latency-naive.hgrm").exists());
    }

    #[test]
    fn a_missing_folder_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let error = read_report(&missing).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "{}: no such folder; pass the results folder that a run wrote",
                missing.display()
            )
        );
    }

    #[test]
    fn a_folder_without_timeline_says_so() {
        let dir = written_folder();
        std::fs::remove_file(dir.path().join(TIMELINE_CSV)).unwrap();
        let error = read_report(dir.path()).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "{}: no timeline.csv here; is this a stallbench results folder?",
                dir.path().display()
            )
        );
    }

    #[test]
    fn a_bad_number_names_file_line_and_column() {
        let dir = written_folder();
        let path = dir.path().join(TIMELINE_CSV);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines[3] = lines[3].replacen(",3050,", ",abc,", 1);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let error = read_report(dir.path()).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "{} line 4: column tps is \"abc\", not a number",
                path.display()
            )
        );
    }

    #[test]
    fn a_bad_state_and_a_bad_summary_are_explained() {
        let dir = written_folder();
        let path = dir.path().join(TIMELINE_CSV);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen(",idle,", ",sleeping,", 1)).unwrap();
        let error = read_report(dir.path()).unwrap_err().to_string();
        assert!(
            error.ends_with(
                "line 2: column ddl_state is \"sleeping\", not one of idle, running, backoff, \
                 done, failed"
            ),
            "{error}"
        );

        let dir = written_folder();
        let path = dir.path().join(SUMMARY_CSV);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines[2] = lines[2].replacen("retry,", "retry,many,", 1);
        lines[2] = lines[2].rsplit_once(',').unwrap().0.to_string();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let error = read_report(dir.path()).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!(
                "{} line 3: column transactions is \"many\", not valid",
                path.display()
            )),
            "{error}"
        );
    }

    #[test]
    fn a_wrong_header_is_explained() {
        let dir = written_folder();
        let path = dir.path().join(ATTEMPTS_CSV);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("waited_ms", "wait_ms", 1)).unwrap();
        let error = read_report(dir.path()).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!(
                "{} line 1: the header is \"strategy,attempt,started_s,ended_s,wait_ms,",
                path.display()
            )),
            "{error}"
        );
    }

    #[test]
    fn a_strategy_missing_from_the_summary_is_explained() {
        let dir = written_folder();
        let path = dir.path().join(ATTEMPTS_CSV);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("\nretry,", "\nlater,", 1)).unwrap();
        let error = read_report(dir.path()).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "{} line 3: strategy \"later\" has no row in summary.csv; do the files come \
                 from the same run?",
                path.display()
            )
        );
    }
}
