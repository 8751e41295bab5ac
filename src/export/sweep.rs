//! What a sweep writes beside its values' folders: `sweep.csv` (see
//! [`SweepRecord`]), `summary.md` (the table and one sentence per strategy
//! that names the value keeping the stall smallest while still finishing the
//! migration), and the same table and sentences on stdout. `sweep.png` is
//! drawn from the same records (`plot::draw_sweep`).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;

use crate::config::{Sweep, SweepSetting, sweep_x_value};
use crate::metrics::RunReport;
use crate::metrics::ranking::ranking_rows;
use crate::results::{OutputFile, SUMMARY_MD, SWEEP_CSV};

use super::csv::csv_file;
pub use super::csv::sweep::SweepRecord;
use super::format::{format_count, format_ms, format_percent, format_seconds, format_spread};
use super::table::{Align, Table};
use crate::metrics::spread::Spread;

use Align::{Left, Right};

/// The rows of `sweep.csv`: each value in order, each strategy of its report
/// in run order. `reports` holds one report per value of `values`.
pub fn records(sweep: &Sweep, values: &[String], reports: &[RunReport]) -> Vec<SweepRecord> {
    let name = sweep.name();
    values
        .iter()
        .zip(reports)
        .flat_map(|(value, report)| {
            let number = sweep_x_value(sweep.is_duration(), value);
            ranking_rows(report)
                .into_iter()
                .map(|row| SweepRecord::new(&name, value, number, &row))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `sweep.csv` and the sweep's `summary.md`, rendered.
pub fn render(
    sweep: &Sweep,
    workload: &str,
    records: &[SweepRecord],
) -> anyhow::Result<Vec<OutputFile>> {
    let csv = csv_file(SWEEP_CSV, records.iter().cloned())?;
    let markdown = OutputFile {
        name: SUMMARY_MD.to_string(),
        bytes: summary_markdown(sweep, workload, records).into_bytes(),
    };
    Ok(vec![csv, markdown])
}

/// The sweep's `summary.md`: a heading, the table, a sentence per strategy,
/// and where each value's own results are.
pub fn summary_markdown(sweep: &Sweep, workload: &str, records: &[SweepRecord]) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "# {workload}: sweep of {}\n", sweep.name());
    text.push_str(&super::markdown::render_table(&table(records)));
    text.push('\n');
    for sentence in sentences(sweep, records) {
        let _ = writeln!(text, "{sentence}\n");
    }
    let _ = writeln!(
        text,
        "Each value's own results (summary, ranking, charts) are in its folder: {}.",
        folders(sweep, records).join(", ")
    );
    text
}

/// The value folders, in order, each once, as Markdown code: `` `lock_timeout=1s/` ``.
fn folders(sweep: &Sweep, records: &[SweepRecord]) -> Vec<String> {
    value_folders(sweep, records)
        .iter()
        .map(|folder| format!("`{folder}/`"))
        .collect()
}

/// The value folders' names, in order, each once.
pub fn value_folders(sweep: &Sweep, records: &[SweepRecord]) -> Vec<String> {
    let mut folders: Vec<String> = Vec::new();
    for record in records {
        let folder = sweep.folder(&record.value);
        if !folders.contains(&folder) {
            folders.push(folder);
        }
    }
    folders
}

/// The sweep's table: one row per value and strategy, the figures the
/// planner asks about, each a median with its range over the repeats.
pub fn table(records: &[SweepRecord]) -> Table {
    let mut table = Table::new(&[
        ("value", Left),
        ("strategy", Left),
        ("stall s", Right),
        ("zero-tps s", Right),
        ("worst %", Right),
        ("worst lat ms", Right),
        ("max ms", Right),
        ("failed", Right),
        ("tries", Right),
        ("done at s", Right),
    ]);
    for record in records {
        let n = record.repeats as usize;
        let cell = |median: f64, min: f64, max: f64, number: fn(f64) -> String, unit: &str| {
            format_spread(&Spread::from_range(median, min, max, n), number, unit)
        };
        let r = record;
        let done = match r.done_spread() {
            Some(done) if !r.finished_every_run() => format!(
                "{} ({} of {} finished)",
                format_spread(&done, format_seconds, ""),
                r.migration_done_runs,
                r.repeats
            ),
            Some(done) => format_spread(&done, format_seconds, ""),
            None if r.ddl_tries == 0.0 => "no DDL".to_string(),
            None => "did not finish".to_string(),
        };
        table.push(vec![
            r.value.clone(),
            r.strategy.clone(),
            cell(
                r.longest_stall_s,
                r.longest_stall_s_min,
                r.longest_stall_s_max,
                format_count,
                "",
            ),
            cell(
                r.zero_tps_seconds,
                r.zero_tps_seconds_min,
                r.zero_tps_seconds_max,
                format_count,
                "",
            ),
            cell(
                r.worst_second_share,
                r.worst_second_share_min,
                r.worst_second_share_max,
                format_percent,
                "%",
            ),
            cell(
                r.worst_second_p99_ms,
                r.worst_second_p99_ms_min,
                r.worst_second_p99_ms_max,
                format_ms,
                "",
            ),
            cell(
                r.max_latency_ms,
                r.max_latency_ms_min,
                r.max_latency_ms_max,
                format_ms,
                "",
            ),
            cell(r.failed, r.failed_min, r.failed_max, format_count, ""),
            cell(
                r.ddl_tries,
                r.ddl_tries_min,
                r.ddl_tries_max,
                format_count,
                "",
            ),
            done,
        ]);
    }
    table
}

/// One sentence per strategy the sweep varies (a strategy's `lock_timeout`
/// varies that strategy alone), naming the value that kept its longest stall
/// smallest while every run still finished the migration, and the value
/// that stalled longest: "retry: lock_timeout 100ms kept every second above
/// 60% of baseline and finished in 4 tries; 2s stalled 2 s."
pub fn sentences(sweep: &Sweep, records: &[SweepRecord]) -> Vec<String> {
    let mut strategies: Vec<&str> = Vec::new();
    for record in records {
        if !strategies.contains(&record.strategy.as_str())
            && sweep
                .varied_strategy()
                .is_none_or(|varied| varied == record.strategy)
        {
            strategies.push(&record.strategy);
        }
    }
    strategies
        .iter()
        .map(|strategy| {
            let rows: Vec<&SweepRecord> = records
                .iter()
                .filter(|record| record.strategy == *strategy)
                .collect();
            strategy_sentence(sweep.short_name(), strategy, &rows)
        })
        .collect()
}

/// The sentence of one strategy over its rows (one per value).
fn strategy_sentence(setting: &str, strategy: &str, rows: &[&SweepRecord]) -> String {
    let by_stall = |a: &&&SweepRecord, b: &&&SweepRecord| {
        a.longest_stall_s
            .total_cmp(&b.longest_stall_s)
            .then(b.worst_second_share.total_cmp(&a.worst_second_share))
    };
    let longest = rows
        .iter()
        .max_by(|a, b| a.longest_stall_s.total_cmp(&b.longest_stall_s));
    let Some(best) = rows
        .iter()
        .filter(|row| row.finished_every_run())
        .min_by(by_stall)
    else {
        let least = rows.iter().min_by(by_stall);
        return match least {
            Some(least) => format!(
                "{strategy}: at no {setting} did every run finish the migration within the run; \
                 {} stalled least ({} s).",
                least.value,
                format_count(least.longest_stall_s)
            ),
            None => format!("{strategy}: no value ran."),
        };
    };
    let tries = match best.ddl_tries {
        1.0 => "1 try".to_string(),
        tries => format!("{} tries", format_count(tries)),
    };
    let kept = if best.longest_stall_s == 0.0 {
        let floor = (best.worst_second_share_min * 10.0).floor() * 10.0;
        match floor > 0.0 {
            true => format!("kept every second above {floor:.0}% of baseline"),
            false => format!(
                "kept its worst second at {}% of baseline",
                format_percent(best.worst_second_share)
            ),
        }
    } else {
        format!(
            "stalled {} s, the least of its values,",
            format_count(best.longest_stall_s)
        )
    };
    let mut sentence = format!(
        "{strategy}: {setting} {} {kept} and finished in {tries}",
        best.value
    );
    if let Some(longest) = longest
        && longest.longest_stall_s > best.longest_stall_s
    {
        let _ = write!(
            sentence,
            "; {} stalled {} s",
            longest.value,
            format_count(longest.longest_stall_s)
        );
    }
    sentence.push('.');
    sentence
}

/// Reads `sweep.csv` back from a sweep's folder; `None` when the folder has none.
pub fn read_records(dir: &Path) -> anyhow::Result<Option<Vec<SweepRecord>>> {
    let path = dir.join(SWEEP_CSV);
    if !path.is_file() {
        return Ok(None);
    }
    let mut reader =
        ::csv::Reader::from_path(&path).with_context(|| format!("reading {}", path.display()))?;
    let header = reader
        .headers()
        .with_context(|| format!("reading {}", path.display()))?;
    super::read::check_header(&path, header, super::csv::header_of::<SweepRecord>())?;
    let records = reader
        .deserialize()
        .collect::<Result<Vec<SweepRecord>, _>>()
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(Some(records))
}

/// The sweep a `sweep.csv` describes: its setting and values, in order.
pub fn sweep_of(records: &[SweepRecord]) -> anyhow::Result<Sweep> {
    let name = records.first().map_or("", |record| record.setting.as_str());
    let Some(setting) = SweepSetting::named(name) else {
        anyhow::bail!("sweep.csv names the setting \"{name}\", which no sweep takes");
    };
    let mut values: Vec<String> = Vec::new();
    for record in records {
        if !values.contains(&record.value) {
            values.push(record.value.clone());
        }
    }
    Ok(Sweep { setting, values })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::neutral_run;

    fn record(strategy: &str, value: &str, stall_s: f64, share: f64, done: bool) -> SweepRecord {
        let mut run = neutral_run();
        run.longest_stall_s = stall_s as u32;
        run.worst_second_tps = (share * 1000.0) as u64;
        run.ddl_tries = 4;
        if !done {
            run.migration_done_at_s = None;
            run.ddl_outcome = crate::metrics::DdlOutcome::GaveUp;
        }
        let row = crate::metrics::RankingRow {
            strategy: strategy.to_string(),
            run_order: 0,
            runs: vec![run],
        };
        SweepRecord::new(
            "retry.lock_timeout",
            value,
            sweep_x_value(true, value),
            &row,
        )
    }

    fn lock_timeout_sweep() -> Sweep {
        Sweep {
            setting: SweepSetting::LockTimeout {
                strategy: "retry".to_string(),
            },
            values: vec!["50ms".into(), "100ms".into(), "2s".into()],
        }
    }

    #[test]
    fn the_sentence_names_the_smallest_stall_that_still_finished() {
        let records = vec![
            record("naive", "50ms", 9.0, 0.0, true),
            record("retry", "50ms", 0.0, 0.9, false),
            record("naive", "100ms", 9.0, 0.0, true),
            record("retry", "100ms", 0.0, 0.63, true),
            record("naive", "2s", 9.0, 0.0, true),
            record("retry", "2s", 2.0, 0.0, true),
        ];
        assert_eq!(
            sentences(&lock_timeout_sweep(), &records),
            [
                "retry: lock_timeout 100ms kept every second above 60% of baseline and finished \
              in 4 tries; 2s stalled 2 s."
            ]
        );
        let none_finished = vec![record("retry", "50ms", 1.0, 0.9, false)];
        assert_eq!(
            sentences(&lock_timeout_sweep(), &none_finished),
            [
                "retry: at no lock_timeout did every run finish the migration within the run; \
              50ms stalled least (1 s)."
            ]
        );
    }

    #[test]
    fn a_sweep_of_every_strategy_has_a_sentence_for_each() {
        let sweep = Sweep {
            setting: SweepSetting::BlockerHold,
            values: vec!["2s".into(), "5s".into()],
        };
        let records = vec![
            record("naive", "2s", 2.0, 0.0, true),
            record("retry", "2s", 0.0, 0.55, true),
            record("naive", "5s", 5.0, 0.0, true),
            record("retry", "5s", 0.0, 0.5, true),
        ];
        let text = sentences(&sweep, &records);
        assert_eq!(
            text,
            [
                "naive: hold 2s stalled 2 s, the least of its values, and finished in 4 tries; \
                 5s stalled 5 s.",
                "retry: hold 2s kept every second above 50% of baseline and finished in 4 tries."
            ]
        );
    }

    #[test]
    fn sweep_csv_reads_back_byte_for_byte_and_names_its_sweep() {
        let records = [
            record("naive", "50ms", 9.0, 0.0, true),
            record("retry", "50ms", 0.0, 0.52, false),
        ];
        let file = csv_file(SWEEP_CSV, records.iter().cloned()).unwrap();
        let text = String::from_utf8(file.bytes.clone()).unwrap();
        let mut lines = text.lines();
        assert!(
            lines
                .next()
                .unwrap()
                .starts_with("setting,value,value_number,strategy,repeats,longest_stall_s,"),
            "{text}"
        );
        assert!(
            lines
                .nth(1)
                .unwrap()
                .starts_with("retry.lock_timeout,50ms,0.050,retry,1,0.0,0.0,0.0,"),
            "{text}"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SWEEP_CSV), &file.bytes).unwrap();
        let back = read_records(dir.path()).unwrap().unwrap();
        let again = csv_file(SWEEP_CSV, back.iter().cloned()).unwrap();
        assert_eq!(again.bytes, file.bytes);
        let sweep = sweep_of(&back).unwrap();
        assert_eq!(sweep.name(), "retry.lock_timeout");
        assert_eq!(sweep.values, ["50ms"]);
        assert_eq!(read_records(&dir.path().join("none")).unwrap(), None);
    }

    #[test]
    fn a_sweep_csv_without_a_column_names_it() {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/example-sweep");
        let text = std::fs::read_to_string(example.join(SWEEP_CSV)).unwrap();
        // Every row without its last cell, migration_done_runs.
        let rows: Vec<&str> = text
            .lines()
            .map(|line| line.rsplit_once(',').unwrap().0)
            .collect();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SWEEP_CSV), rows.join("\n") + "\n").unwrap();
        let error = read_records(dir.path()).unwrap_err().to_string();
        assert!(
            error.contains(
                ": it has no column migration_done_runs; the folder was written by \
                            another stallbench version: run the benchmark again with this one"
            ),
            "{error}"
        );
    }
}
