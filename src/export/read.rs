//! Reads a results folder back into a [`RunReport`], so `stallbench plot DIR`
//! can redraw the charts without rerunning anything.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::metrics::lock_trace::{RelationKind, TracedStatement};
use crate::metrics::locks::SecondLocks;
use crate::metrics::{BlockerWindow, DdlAttempt, RunReport, SecondRow, StrategyReport, Summary};

use super::ci::ExpectationRecord;
use super::csv::{
    AttemptRecord, FailureRecord, LockRecord, LockTraceRecord, TimelineRecord, header_of,
    statements_from_records,
};
use super::hgrm::parse_percentile_distribution;
use crate::results::{
    ATTEMPTS_CSV, DDL_LOCKS_CSV, EXPECTATIONS_CSV, FAILURES_CSV, LOCKS_CSV, SUMMARY_CSV,
    SUMMARY_JSON, TIMELINE_CSV, hgrm_file_name,
};

/// Reads a results folder back (timeline.csv, ddl_attempts.csv, summary.csv, ddl_locks.csv,
/// locks.csv, failures.csv, latency-*.hgrm) into a RunReport, one entry per run (strategy and repeat) as summary.csv
/// lists them, with `latency.histogram = None` and percentiles from the .hgrm files (a
/// strategy's repeats share its file), so `stallbench plot DIR` can redraw the charts. The
/// workload name comes from summary.json.
///
/// The folder is one this version writes: a file or a column it lacks is an error that
/// names it. The blocker window comes from summary.csv's `blocker_started_s` and
/// `blocker_ended_s`. A strategy without an `.hgrm` file (it measured no latency) gets an
/// empty percentile curve.
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
        if strategies
            .iter()
            .any(|s| s.strategy == summary.strategy && s.repeat() == summary.repeat)
        {
            bail!(
                "{}: strategy \"{}\" has two rows of repeat {}; keep one",
                dir.join(SUMMARY_CSV).display(),
                summary.strategy,
                summary.repeat
            );
        }
        let blocker = blocker_window(&summary);
        let mut strategy = StrategyReport::from_summary(summary);
        strategy.blocker = blocker;
        strategies.push(strategy);
    }

    let timeline_path = required_file(dir, TIMELINE_CSV)?;
    for (line, (strategy, repeat), row, locks) in read_timeline(&timeline_path)? {
        let target = find_strategy(&mut strategies, &strategy, repeat, &timeline_path, line)?;
        target.seconds.push(row);
        target.locks.per_second.push(locks);
    }

    let attempts_path = required_file(dir, ATTEMPTS_CSV)?;
    for (line, (strategy, repeat), attempt) in read_attempts(&attempts_path)? {
        let target = find_strategy(&mut strategies, &strategy, repeat, &attempts_path, line)?;
        target.attempts.push(attempt);
    }

    let trace_path = required_file(dir, DDL_LOCKS_CSV)?;
    let records = read_records::<LockTraceRecord>(&trace_path)?;
    let first_lines: Vec<(String, u64)> = records
        .iter()
        .map(|(line, record)| (record.strategy.clone(), *line))
        .collect();
    let records = records.into_iter().map(|(_, record)| record).collect();
    for (strategy, statements) in statements_from_records(records) {
        let line = first_lines
            .iter()
            .find(|(name, _)| *name == strategy)
            .map_or(0, |(_, line)| *line);
        let target = find_strategy(&mut strategies, &strategy, 1, &trace_path, line)?;
        target.lock_trace = statements;
    }

    let locks_path = required_file(dir, LOCKS_CSV)?;
    for (line, record) in read_records::<LockRecord>(&locks_path)? {
        let target = find_strategy(
            &mut strategies,
            &record.strategy,
            record.repeat,
            &locks_path,
            line,
        )?;
        target.locks.samples.push(record.into_sample());
    }

    let failures_path = required_file(dir, FAILURES_CSV)?;
    for (line, record) in read_records::<FailureRecord>(&failures_path)? {
        let target = find_strategy(
            &mut strategies,
            &record.strategy,
            record.repeat,
            &failures_path,
            line,
        )?;
        target.failures.push(record.into_count());
    }

    // locks.csv names no table: a lock on a relation is on the DDL's table
    // when its trace (kept with a strategy's first run) locks exactly one.
    for index in 0..strategies.len() {
        let name = strategies[index].strategy.clone();
        let table = (strategies.iter())
            .filter(|strategy| strategy.strategy == name)
            .find_map(|strategy| only_table(&strategy.lock_trace));
        if let Some(table) = table {
            for sample in &mut strategies[index].locks.samples {
                if sample.wait_event == "relation" || sample.granted {
                    sample.relation = table.clone();
                }
            }
        }
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
        interruption: None,
    })
}

/// The CI bounds' verdicts of the folder (`expectations.csv`); none when
/// the file is missing (a check's migration folder has none).
pub fn read_expectations(dir: &Path) -> anyhow::Result<Vec<ExpectationRecord>> {
    let path = dir.join(EXPECTATIONS_CSV);
    if !path.is_file() {
        return Ok(Vec::new());
    }
    Ok(read_records::<ExpectationRecord>(&path)?
        .into_iter()
        .map(|(_, record)| record)
        .collect())
}

/// The one table `trace` locks; `None` for none or several.
fn only_table(trace: &[TracedStatement]) -> Option<String> {
    let mut tables = (trace.iter())
        .flat_map(|statement| &statement.locks)
        .filter(|lock| lock.kind == RelationKind::Table)
        .map(|lock| lock.relation.clone());
    let first = tables.next()?;
    tables.all(|table| table == first).then_some(first)
}

/// The blocker window a summary row records, if it has both ends.
fn blocker_window(summary: &Summary) -> Option<BlockerWindow> {
    Some(BlockerWindow {
        started_s: summary.blocker_started_s?,
        ended_s: summary.blocker_ended_s?,
    })
}

/// `dir/name`, or an error saying the folder lacks it.
fn required_file(dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let path = dir.join(name);
    if !path.is_file() {
        bail!(
            "{}: no {} here; pass a results folder this stallbench version wrote (run the \
             benchmark again with it)",
            dir.display(),
            name
        );
    }
    Ok(path)
}

/// The run of strategy `name`, repeat `repeat`; an error naming `path` and
/// `line` when the summary has no such row.
fn find_strategy<'a>(
    strategies: &'a mut [StrategyReport],
    name: &str,
    repeat: u32,
    path: &Path,
    line: u64,
) -> anyhow::Result<&'a mut StrategyReport> {
    let repeated = strategies.iter().any(|s| s.repeat() > 1);
    match strategies
        .iter_mut()
        .find(|s| s.strategy == name && s.repeat() == repeat)
    {
        Some(strategy) => Ok(strategy),
        None => bail!(
            "{} line {}: strategy \"{}\"{} has no row in {}; do the files come from the same run?",
            path.display(),
            line,
            name,
            if repeated || repeat > 1 {
                format!(" (repeat {repeat})")
            } else {
                String::new()
            },
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
    check_header(path, &header, header_of::<Summary>())?;
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

/// A run as the files name it: (strategy, repeat).
type RunKey = (String, u32);

/// Rows of `timeline.csv` as (line number, run, row, lock figures).
fn read_timeline(path: &Path) -> anyhow::Result<Vec<(u64, RunKey, SecondRow, SecondLocks)>> {
    let records = read_records::<TimelineRecord>(path)?;
    Ok(records
        .into_iter()
        .map(|(line, record)| {
            let (row, locks) = record.second_row();
            (line, (record.strategy, record.repeat), row, locks)
        })
        .collect())
}

/// Rows of `ddl_attempts.csv` as (line number, run, attempt).
fn read_attempts(path: &Path) -> anyhow::Result<Vec<(u64, RunKey, DdlAttempt)>> {
    let records = read_records::<AttemptRecord>(path)?;
    Ok(records
        .into_iter()
        .map(|(line, record)| {
            let attempt = record.attempt();
            (line, (record.strategy, record.repeat), attempt)
        })
        .collect())
}

/// The records of a CSV file whose header must be the fields of `R` (or the first of them),
/// with their line numbers. Errors name the file, the line and the column.
fn read_records<R: DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<(u64, R)>> {
    let expected = header_of::<R>();
    // Spaces around a value are forgiven, as people edit these files by hand.
    let mut reader = ::csv::ReaderBuilder::new()
        .trim(::csv::Trim::Fields)
        .from_path(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let header = reader
        .headers()
        .with_context(|| format!("reading {}", path.display()))?
        .clone();
    check_header(path, &header, expected)?;
    let mut records = Vec::new();
    for record in reader.records() {
        // The reader is not flexible: a row with a missing or extra column is an error here.
        let record = record.with_context(|| format!("reading {}", path.display()))?;
        let line = line_of(&record);
        match record.deserialize::<R>(Some(&header)) {
            Ok(row) => records.push((line, row)),
            Err(error) => bail!(
                "{} line {}: {}",
                path.display(),
                line,
                field_problem::<R>(&error, &header, &record)
            ),
        }
    }
    Ok(records)
}

/// Checks that a CSV file's header is the columns this version writes, in
/// order; otherwise the error names the file, the columns it lacks (or has
/// beyond them) and the fix: the folder comes from another version.
pub(crate) fn check_header(
    path: &Path,
    header: &::csv::StringRecord,
    expected: &[&str],
) -> anyhow::Result<()> {
    if header.iter().eq(expected.iter().copied()) {
        return Ok(());
    }
    let missing: Vec<&str> = (expected.iter().copied())
        .filter(|column| !header.iter().any(|given| given == *column))
        .collect();
    let unknown: Vec<&str> = (header.iter())
        .filter(|given| !expected.contains(given))
        .collect();
    let problem = match (missing.as_slice(), unknown.as_slice()) {
        ([], []) => "the columns are in another order".to_string(),
        ([], unknown) => format!("no stallbench column is called {}", unknown.join(", ")),
        (missing, _) => format!("it has no column {}", missing.join(", ")),
    };
    bail!(
        "{} line 1: the header is \"{}\", expected \"{}\": {problem}; the folder was written by \
         another stallbench version: run the benchmark again with this one",
        path.display(),
        header.iter().collect::<Vec<_>>().join(","),
        expected.join(",")
    )
}

/// What is wrong with a field of a record: `column tps is "abc", not a number`.
fn field_problem<R: DeserializeOwned>(
    error: &::csv::Error,
    header: &::csv::StringRecord,
    record: &::csv::StringRecord,
) -> String {
    let ::csv::ErrorKind::Deserialize { err, .. } = error.kind() else {
        return error.to_string();
    };
    let what = match err.kind() {
        ::csv::DeserializeErrorKind::ParseInt(_) | ::csv::DeserializeErrorKind::ParseFloat(_) => {
            "not a number".to_string()
        }
        // serde says "unknown variant `x`, expected one of `a`, `b`"; keep the list.
        ::csv::DeserializeErrorKind::Message(message) => match message.split_once("expected ") {
            Some((_, allowed)) if message.starts_with("unknown variant") => {
                let allowed = allowed.trim_start_matches("one of ").replace('`', "");
                format!("not one of {allowed}")
            }
            _ => message.clone(),
        },
        other => other.to_string(),
    };
    match failing_column::<R>(header, record) {
        Some((index, name)) => format!(
            "column {name} is \"{}\", {what}",
            record.get(index).unwrap_or("")
        ),
        None => format!("{what}; was the file written by another stallbench version?"),
    }
}

/// The name of the column where reading `record` as `R` fails. The csv crate knows
/// the column only of its own errors, not of serde's (an unknown enum variant, a bad
/// flag), so this hides one column at a time: hiding the failing one leaves only
/// its "missing field" error (the other fields read fine, in column order).
fn failing_column<'a, R: DeserializeOwned>(
    header: &'a ::csv::StringRecord,
    record: &::csv::StringRecord,
) -> Option<(usize, &'a str)> {
    header.iter().enumerate().find(|&(hidden, name)| {
        let partial: ::csv::StringRecord = header
            .iter()
            .enumerate()
            .map(|(index, column)| if index == hidden { "" } else { column })
            .collect();
        match record.deserialize::<R>(Some(&partial)) {
            Ok(_) => false,
            Err(error) => error
                .to_string()
                .ends_with(&format!("missing field `{name}`")),
        }
    })
}

fn line_of(record: &::csv::StringRecord) -> u64 {
    record.position().map_or(0, |position| position.line())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::write_all;
    use crate::metrics::DdlState;
    use crate::testing::{open_loop_report, reference_report};

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
            assert_eq!(back.blocker, original.blocker);
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
            assert_eq!(a.worst_second_tps, b.worst_second_tps);
            assert!(close(a.worst_second_p99_ms, b.worst_second_p99_ms, 0.0005));
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
    fn the_example_folders_render_again_byte_for_byte() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut examples: Vec<String> = [
            "results/example",
            "results/example-open-loop",
            "results/example-pool",
        ]
        .map(String::from)
        .to_vec();
        // The sweep's sweep.csv and summary.md, then each value's folder.
        let sweep_dir = root.join("results/example-sweep");
        let records = crate::export::sweep::read_records(&sweep_dir)
            .unwrap()
            .unwrap();
        let sweep = crate::export::sweep::sweep_of(&records).unwrap();
        let reports: Vec<RunReport> = sweep
            .values
            .iter()
            .map(|value| read_report(&sweep_dir.join(sweep.folder(value))).unwrap())
            .collect();
        let again = crate::export::sweep::records(&sweep, &sweep.values, &reports);
        let workload = &reports[0].workload;
        for file in crate::export::sweep::render(&sweep, workload, &again).unwrap() {
            let original = std::fs::read(sweep_dir.join(&file.name)).unwrap();
            assert!(
                original == file.bytes,
                "results/example-sweep/{}",
                file.name
            );
        }
        for value in &sweep.values {
            examples.push(format!("results/example-sweep/{}", sweep.folder(value)));
        }
        for example in &examples {
            let dir = root.join(example);
            let report = read_report(&dir).unwrap();
            let exporters: [&dyn crate::export::Exporter; 5] = [
                &crate::export::csv::TimelineCsv,
                &crate::export::csv::AttemptsCsv,
                &crate::export::csv::SummaryCsv,
                &crate::export::json::SummaryJson,
                &crate::export::csv::LockTraceCsv,
            ];
            for exporter in exporters {
                for file in exporter.render(&report).unwrap() {
                    let original = std::fs::read(dir.join(&file.name)).unwrap();
                    assert!(original == file.bytes, "{example}/{}", file.name);
                }
            }
        }
    }

    #[test]
    fn a_repeated_run_reads_back_run_by_run() {
        let report = crate::testing::repeated_report();
        let dir = tempfile::tempdir().unwrap();
        write_all(&report, dir.path()).unwrap();
        let read = read_report(dir.path()).unwrap();
        let runs: Vec<(&str, u32, usize)> = read
            .strategies
            .iter()
            .map(|run| (run.strategy.as_str(), run.repeat(), run.attempts.len()))
            .collect();
        assert_eq!(
            runs,
            [
                ("naive", 1, 1),
                ("retry", 1, 5),
                ("naive", 2, 1),
                ("retry", 2, 5)
            ]
        );
        assert_eq!(read.strategies[2].seconds[0].tps, 2_700);
        // One .hgrm per strategy, of both repeats; one .hlog per run.
        let hgrm = std::fs::read_to_string(dir.path().join("latency-naive.hgrm")).unwrap();
        let one = report.strategies[0]
            .latency
            .histogram
            .as_ref()
            .unwrap()
            .len();
        assert!(
            hgrm.contains(&format!("Total count    = {:12}]", 2 * one)),
            "{hgrm}"
        );
        for name in ["latency-naive.hlog", "latency-retry-repeat-2.hlog"] {
            assert!(dir.path().join(name).is_file(), "{name}");
        }
        assert!(!dir.path().join("latency-naive-repeat-1.hlog").exists());
        // The same percentile curve for both repeats of a strategy.
        assert_eq!(
            read.strategies[0].latency.percentiles,
            read.strategies[2].latency.percentiles
        );
        let again = tempfile::tempdir().unwrap();
        write_all(&read, again.path()).unwrap();
        for name in [TIMELINE_CSV, ATTEMPTS_CSV, SUMMARY_CSV, SUMMARY_JSON] {
            assert_eq!(
                std::fs::read_to_string(dir.path().join(name)).unwrap(),
                std::fs::read_to_string(again.path().join(name)).unwrap(),
                "{name}"
            );
        }
    }

    #[test]
    fn a_summary_without_a_column_names_it_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        write_all(&reference_report(), dir.path()).unwrap();
        let path = dir.path().join(SUMMARY_CSV);
        let text = std::fs::read_to_string(&path).unwrap();
        // Every row without its worst_second_tps cell.
        let dropped = text
            .lines()
            .next()
            .unwrap()
            .split(',')
            .position(|column| column == "worst_second_tps")
            .unwrap();
        let rows: Vec<String> = text
            .lines()
            .map(|line| {
                let mut cells: Vec<&str> = line.split(',').collect();
                cells.remove(dropped);
                cells.join(",")
            })
            .collect();
        std::fs::write(&path, rows.join("\n") + "\n").unwrap();
        let error = read_report(dir.path()).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("{} line 1: the header is", path.display()))
                && error.ends_with(
                    ": it has no column worst_second_tps; the folder was written by another \
                     stallbench version: run the benchmark again with this one"
                ),
            "{error}"
        );
    }

    #[test]
    fn a_folder_without_the_lock_trace_says_so() {
        let dir = written_folder();
        std::fs::remove_file(dir.path().join(DDL_LOCKS_CSV)).unwrap();
        let error = read_report(dir.path()).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "{}: no ddl_locks.csv here; pass a results folder this stallbench version wrote \
                 (run the benchmark again with it)",
                dir.path().display()
            )
        );
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
                "{}: no timeline.csv here; pass a results folder this stallbench version wrote \
                 (run the benchmark again with it)",
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
    fn a_bad_flag_and_a_bad_outcome_name_their_column() {
        let dir = written_folder();
        let path = dir.path().join(TIMELINE_CSV);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen(",0,idle,", ",yes,idle,", 1)).unwrap();
        let error = read_report(dir.path()).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "{} line 2: column blocker_active is \"yes\", not 0 or 1",
                path.display()
            )
        );

        let dir = written_folder();
        let path = dir.path().join(ATTEMPTS_CSV);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen(",ok,", ",fine,", 1)).unwrap();
        let error = read_report(dir.path()).unwrap_err().to_string();
        assert!(
            error.ends_with(
                "line 2: column outcome is \"fine\", not one of ok, lock_timeout, error, gave_up"
            ),
            "{error}"
        );
    }

    #[test]
    fn spaces_around_a_value_are_forgiven() {
        let dir = written_folder();
        let path = dir.path().join(TIMELINE_CSV);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen(",0,idle,", ", 0 , idle ,", 1)).unwrap();
        let read = read_report(dir.path()).unwrap();
        assert_eq!(read.strategies[0].seconds[0].ddl_state, DdlState::Idle);
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
