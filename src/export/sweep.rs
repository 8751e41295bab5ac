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
use crate::metrics::growth::{GROWTH_MARGIN, Growth, Step, growth};
use crate::metrics::ranking::ranking_rows;
use crate::results::{OutputFile, SUMMARY_MD, SWEEP_CSV};

use super::csv::csv_file;
pub use super::csv::sweep::SweepRecord;
use super::format::{
    format_count, format_ms, format_percent, format_seconds, format_spread, format_thousands,
};
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
    let anomalies = records.iter().any(|record| record.anomalies.is_some());
    let mut columns = vec![
        ("value", Left),
        ("strategy", Left),
        ("tps", Right),
        ("stall s", Right),
        ("zero-tps s", Right),
        ("worst %", Right),
        ("worst lat ms", Right),
        ("max ms", Right),
        ("failed", Right),
        ("tries", Right),
        ("done at s", Right),
    ];
    if anomalies {
        columns.push(("anomalies", Right));
    }
    let mut table = Table::new(&columns);
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
        let mut row = vec![
            r.value.clone(),
            r.strategy.clone(),
            cell(r.mean_tps, r.mean_tps_min, r.mean_tps_max, format_count, ""),
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
        ];
        if anomalies {
            row.push(r.anomalies.map_or("-".to_string(), |n| n.to_string()));
        }
        table.push(row);
    }
    table
}

/// One sentence per strategy the sweep varies (a strategy's `lock_timeout`
/// varies that strategy alone), naming the value that kept its longest stall
/// smallest while every run still finished the migration, and the value
/// that stalled longest: "retry: lock_timeout 100ms kept every second above
/// 60% of baseline and finished in 4 tries; 2s stalled 2 s." A strategy
/// that ran no DDL gets one only when it stalled. When the sweep adds
/// clients or raises the rate, a second sentence per strategy says where its
/// throughput stops growing ([`growth_sentence`]).
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
    let rows_of = |strategy: &str| -> Vec<&SweepRecord> {
        records
            .iter()
            .filter(|record| record.strategy == strategy)
            .collect()
    };
    let mut sentences: Vec<String> = strategies
        .iter()
        .filter_map(|strategy| {
            let rows = rows_of(strategy);
            match rows.iter().all(|row| row.ran_no_ddl()) {
                true => no_ddl_sentence(sweep.short_name(), strategy, &rows),
                false => Some(strategy_sentence(sweep.short_name(), strategy, &rows)),
            }
        })
        .collect();
    if matches!(sweep.setting, SweepSetting::Clients | SweepSetting::Rate) {
        sentences.extend(
            strategies
                .iter()
                .map(|strategy| growth_sentence(&sweep.setting, strategy, &rows_of(strategy))),
        );
    }
    sentences
}

/// The stall sentence of a strategy that ran no DDL: none when no value
/// stalled, else the value that stalled longest.
fn no_ddl_sentence(setting: &str, strategy: &str, rows: &[&SweepRecord]) -> Option<String> {
    let longest = rows
        .iter()
        .filter(|row| row.longest_stall_s > 0.0)
        .max_by(|a, b| a.longest_stall_s.total_cmp(&b.longest_stall_s))?;
    Some(format!(
        "{strategy}: ran no DDL; its longest stall was {} s, at {setting} {}.",
        format_count(longest.longest_stall_s),
        longest.value
    ))
}

/// A value of a clients or rate sweep in words: `1 client`, `16 clients`, `rate 200`.
fn value_words(setting: &SweepSetting, value: &str) -> String {
    match setting {
        SweepSetting::Clients if value.trim() == "1" => "1 client".to_string(),
        SweepSetting::Clients => format!("{} clients", value.trim()),
        _ => format!("rate {}", value.trim()),
    }
}

/// Mean tps in words: `1,599/s`.
fn per_second(tps: f64) -> String {
    format!("{}/s", format_thousands(tps.round() as u64))
}

/// Where a strategy's throughput (mean tps over the run, the median repeat)
/// stops growing over its rows, in the order of the swept values (see
/// [`growth`]): "skip-locked: still growing at 16 clients (1,599/s)" or
/// "for-update: stops growing at 1 client (468/s); 2 clients did 366/s, 22%
/// less." It says what was measured, not why.
pub fn growth_sentence(setting: &SweepSetting, strategy: &str, rows: &[&SweepRecord]) -> String {
    let mut rows = rows.to_vec();
    if rows.iter().all(|row| row.value_number.is_some()) {
        rows.sort_by(|a, b| a.value_number.unwrap().total_cmp(&b.value_number.unwrap()));
    }
    let spreads: Vec<Spread> = rows.iter().map(|row| row.tps_spread()).collect();
    let margin = format_percent(GROWTH_MARGIN);
    let at = |row: &SweepRecord| {
        format!(
            "{} ({})",
            value_words(setting, &row.value),
            per_second(row.mean_tps)
        )
    };
    match (growth(&spreads), rows.as_slice()) {
        (_, []) => format!("{strategy}: no value ran."),
        (_, [only]) => format!(
            "{strategy}: {}, one value only: no growth to judge.",
            at(only)
        ),
        (Growth::StillGrowing, [.., last]) => format!(
            "{strategy}: still growing at {}: each step gave more than {margin}% more mean tps.",
            at(last)
        ),
        (Growth::StopsAt { at: index, step }, _) => {
            let (here, next) = (rows[index], rows[index + 1]);
            let change = match here.mean_tps > 0.0 {
                true => (next.mean_tps / here.mean_tps - 1.0).abs(),
                false => 0.0,
            };
            let how = match step {
                Step::Fell => format!("{}% less", format_percent(change)),
                Step::Flat => format!(
                    "{}% more, not more than the {margin}% margin",
                    format_percent(change)
                ),
                Step::WithinSpread => format!(
                    "{}% more, but within the runs' spread ({}-{}, then {}-{})",
                    format_percent(change),
                    format_thousands(here.mean_tps_min.round() as u64),
                    per_second(here.mean_tps_max),
                    format_thousands(next.mean_tps_min.round() as u64),
                    per_second(next.mean_tps_max)
                ),
            };
            format!(
                "{strategy}: stops growing at {}; {} did {}, {how}.",
                at(here),
                value_words(setting, &next.value),
                per_second(next.mean_tps)
            )
        }
    }
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
    use crate::metrics::RunFigures;
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

    /// A job-queue row at `clients` clients: no DDL, `tps` per run.
    fn clients_record(strategy: &str, clients: &str, tps: &[f64]) -> SweepRecord {
        let runs = tps
            .iter()
            .map(|&tps| RunFigures {
                mean_tps: tps,
                ddl_tries: 0,
                ddl_outcome: crate::metrics::DdlOutcome::None,
                migration_done_at_s: None,
                ..neutral_run()
            })
            .collect();
        let row = crate::metrics::RankingRow {
            strategy: strategy.to_string(),
            run_order: 0,
            runs,
        };
        SweepRecord::new("clients", clients, sweep_x_value(false, clients), &row)
    }

    fn clients_sweep(values: &[&str]) -> Sweep {
        Sweep {
            setting: SweepSetting::Clients,
            values: values.iter().map(|value| value.to_string()).collect(),
        }
    }

    #[test]
    fn a_clients_sweep_says_where_each_strategy_s_throughput_stops_growing() {
        let values = ["1", "2", "4", "8", "16"];
        let series = [
            ("skip-locked", [506.0, 600.0, 866.0, 1216.0, 1599.0]),
            ("for-update", [468.0, 366.0, 517.0, 279.0, 361.0]),
            ("no-lock", [330.0, 434.0, 456.0, 1319.0, 1194.0]),
        ];
        let records: Vec<SweepRecord> = values
            .iter()
            .enumerate()
            .flat_map(|(index, value)| {
                series
                    .iter()
                    .map(move |(name, tps)| clients_record(name, value, &[tps[index]]))
            })
            .collect();
        assert_eq!(
            sentences(&clients_sweep(&values), &records),
            [
                "skip-locked: still growing at 16 clients (1,599/s): each step gave more than \
                 10% more mean tps.",
                "for-update: stops growing at 1 client (468/s); 2 clients did 366/s, 22% less.",
                "no-lock: stops growing at 2 clients (434/s); 4 clients did 456/s, 5% more, \
                 not more than the 10% margin."
            ]
        );
    }

    #[test]
    fn with_repeats_a_growth_within_the_runs_spread_does_not_count() {
        let records = vec![
            clients_record("skip-locked", "1", &[450.0, 500.0, 520.0]),
            clients_record("skip-locked", "2", &[510.0, 600.0, 700.0]),
        ];
        assert_eq!(
            sentences(&clients_sweep(&["1", "2"]), &records),
            [
                "skip-locked: stops growing at 1 client (500/s); 2 clients did 600/s, 20% more, \
                 but within the runs' spread (450-520/s, then 510-700/s)."
            ]
        );
        assert_eq!(records[1].mean_tps_min, 510.0);
        assert_eq!(records[1].mean_tps_max, 700.0);
        assert_eq!(records[1].anomalies, None);
    }

    #[test]
    fn the_table_reads_the_same_from_the_file_as_from_the_run() {
        // 0.41496 of baseline is 41%; its cell, 0.415, must not read 42%.
        let mut records = vec![record("retry", "500ms", 0.0, 0.0, true)];
        let mut run = neutral_run();
        run.worst_second_tps = 41_496;
        run.baseline_tps = 100_000.0;
        let row = crate::metrics::RankingRow {
            strategy: "retry".to_string(),
            run_order: 0,
            runs: vec![run],
        };
        records[0] = SweepRecord::new("retry.lock_timeout", "500ms", Some(0.5), &row);
        let file = csv_file(SWEEP_CSV, records.iter().cloned()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SWEEP_CSV), &file.bytes).unwrap();
        let back = read_records(dir.path()).unwrap().unwrap();
        assert_eq!(table(&back).rows, table(&records).rows);
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
        // Every row without its last cell, anomalies.
        let rows: Vec<&str> = text
            .lines()
            .map(|line| line.rsplit_once(',').unwrap().0)
            .collect();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SWEEP_CSV), rows.join("\n") + "\n").unwrap();
        let error = read_records(dir.path()).unwrap_err().to_string();
        assert!(
            error.contains(
                ": it has no column anomalies; the folder was written by \
                            another stallbench version: run the benchmark again with this one"
            ),
            "{error}"
        );
    }
}
