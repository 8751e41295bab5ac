//! Reads a results folder back into a [`RunReport`], so `stallbench plot DIR`
//! can redraw the charts without rerunning anything.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::choices::{LoadLoop, LoadOn};
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
    ATTEMPTS_CSV, DDL_LOCKS_CSV, EXPECTATIONS_CSV, FAILURES_CSV, LOCKS_CSV, RUN_JSON, SUMMARY_CSV,
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
    // `server`, then `row_of`, came after the rest: a folder without them was
    // sampled on the primary and names no row wait's table.
    for (line, record) in read_records_since::<LockRecord>(&locks_path, 2)? {
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

    let (load_on, load_loop) = read_load(&dir.join(RUN_JSON))?;
    Ok(RunReport {
        workload,
        strategies,
        interruption: None,
        load_on,
        load_loop,
    })
}

/// What `run.json` says of the load: the server it ran on (its
/// `replica.load_on`: the primary when the run had no replica) and its loop
/// (its `loop`, or in a folder written before that field, `open` when it has a
/// `rate_tps`); the primary and a closed loop when the folder has no `run.json`.
fn read_load(path: &Path) -> anyhow::Result<(LoadOn, LoadLoop)> {
    #[derive(Deserialize)]
    struct RunOnly {
        replica: Option<ReplicaOnly>,
        #[serde(rename = "loop")]
        load_loop: Option<LoadLoop>,
        rate_tps: Option<f64>,
    }
    #[derive(Deserialize)]
    struct ReplicaOnly {
        load_on: LoadOn,
    }
    if !path.is_file() {
        return Ok((LoadOn::Primary, LoadLoop::Closed));
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    match serde_json::from_str::<RunOnly>(&text) {
        Ok(run) => Ok((
            run.replica
                .map_or(LoadOn::Primary, |replica| replica.load_on),
            run.load_loop
                .unwrap_or_else(|| LoadLoop::of_rate(run.rate_tps)),
        )),
        Err(error) => bail!(
            "{}: not the run.json this version writes ({error}); rerun the benchmark or fix the file",
            path.display()
        ),
    }
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
    read_records_since::<R>(path, 0)
}

/// [`read_records`] of a file whose last `added` columns came in later
/// versions (fields with `#[serde(default)]`): a header without some of the
/// last ones is an earlier version's, and its rows read with their defaults.
fn read_records_since<R: DeserializeOwned>(
    path: &Path,
    added: usize,
) -> anyhow::Result<Vec<(u64, R)>> {
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
    let is_earlier = (1..=added).any(|dropped| {
        let earlier = &expected[..expected.len().saturating_sub(dropped)];
        header.iter().eq(earlier.iter().copied())
    });
    if !is_earlier {
        check_header(path, &header, expected)?;
    }
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
#[path = "read_tests.rs"]
mod tests;
