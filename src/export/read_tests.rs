//! The tests of `read`: folders `write_all` wrote read back (the example
//! folders byte for byte), and broken files, each error naming the file,
//! the line and the fix.

use super::*;
use crate::choices::Side;
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

/// Fails naming the file, the first line that differs (both versions) and
/// how to make the committed examples anew, unless `rendered` is
/// `committed` byte for byte.
fn assert_renders_as_committed(example: &str, name: &str, committed: &[u8], rendered: &[u8]) {
    if committed == rendered {
        return;
    }
    let committed = String::from_utf8_lossy(committed);
    let rendered = String::from_utf8_lossy(rendered);
    let (mut old_lines, mut new_lines) = (committed.lines(), rendered.lines());
    let mut line = 1;
    let (old, new) = loop {
        match (old_lines.next(), new_lines.next()) {
            (Some(old), Some(new)) if old == new => line += 1,
            (old, new) => {
                break (
                    old.unwrap_or("(end of file)"),
                    new.unwrap_or("(end of file)"),
                );
            }
        }
    };
    panic!(
        "{example}/{name}: line {line} is not what this version renders from the folder\n\
         committed: {old}\n\
         rendered:  {new}\n\
         A change of format that is meant needs the example folders made anew from real runs: \
         scripts/regenerate-examples.sh (about 7 minutes), then commit results/example*/"
    );
}

#[test]
fn a_changed_example_file_is_named_with_its_first_differing_line() {
    let failure = std::panic::catch_unwind(|| {
        assert_renders_as_committed(
            "results/example",
            "summary.csv",
            b"a,b\n1,2\n",
            b"a,b\n1,3\n",
        )
    })
    .unwrap_err();
    let message = failure.downcast_ref::<String>().unwrap();
    assert!(
        message.starts_with("results/example/summary.csv: line 2 "),
        "{message}"
    );
    assert!(
        message.contains("committed: 1,2\nrendered:  1,3\n"),
        "{message}"
    );
    assert!(
        message.contains("scripts/regenerate-examples.sh"),
        "{message}"
    );
}

#[test]
fn the_example_folders_render_again_byte_for_byte() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut examples: Vec<String> = [
        "results/example",
        "results/example-open-loop",
        "results/example-pool",
        "results/example-replica",
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
        assert_renders_as_committed("results/example-sweep", &file.name, &original, &file.bytes);
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
                assert_renders_as_committed(example, &file.name, &original, &file.bytes);
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
fn the_wal_of_each_try_statement_and_strategy_reads_back() {
    let mut report = reference_report();
    let naive = &mut report.strategies[0];
    naive.attempts[0].wal_bytes = Some(584);
    naive.summary.wal_bytes = Some(584);
    naive.lock_trace = vec![crate::metrics::lock_trace::TracedStatement {
        step: 1,
        statement: 1,
        sql: "ALTER TABLE orders ADD COLUMN note text".to_string(),
        duration_ms: 1.5,
        held_ms: 1.5,
        locks: Vec::new(),
        wal_bytes: Some(448),
    }];
    let dir = tempfile::tempdir().unwrap();
    write_all(&report, dir.path()).unwrap();
    let read = read_report(dir.path()).unwrap();
    let (naive, retry) = (&read.strategies[0], &read.strategies[1]);
    assert_eq!(naive.attempts[0].wal_bytes, Some(584));
    assert_eq!(naive.summary.wal_bytes, Some(584));
    assert_eq!(naive.lock_trace[0].wal_bytes, Some(448));
    assert!(
        retry
            .attempts
            .iter()
            .all(|attempt| attempt.wal_bytes.is_none())
    );
    assert_eq!(retry.summary.wal_bytes, None);
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
            "line 2: column outcome is \"fine\", not one of ok, lock_timeout, error, gave_up, cut_off"
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

#[test]
fn locks_csv_reads_its_server_and_a_folder_without_the_column_reads_as_primary() {
    let mut report = reference_report();
    let mut replica = crate::metrics::locks::replica_moment();
    for sample in &mut replica {
        sample.t_s = 9.0;
    }
    report.strategies[0].locks.samples.extend(replica);
    let dir = tempfile::tempdir().unwrap();
    write_all(&report, dir.path()).unwrap();
    let servers = |dir: &Path| -> Vec<Side> {
        let read = read_report(dir).unwrap();
        read.strategies[0]
            .locks
            .samples
            .iter()
            .map(|s| s.server)
            .collect()
    };
    let written = servers(dir.path());
    assert_eq!(written.iter().filter(|s| **s == Side::Replica).count(), 6);
    // The same file as a version before the column (and row_of after it) wrote it.
    let path = dir.path().join(LOCKS_CSV);
    let text = std::fs::read_to_string(&path).unwrap();
    let earlier: String = text
        .lines()
        .map(|line| {
            let without_row_of = line.rsplit_once(',').unwrap().0;
            without_row_of.rsplit_once(',').unwrap().0.to_string() + "\n"
        })
        .collect();
    assert!(earlier.starts_with("strategy,t_s,pid,role,"), "{earlier}");
    std::fs::write(&path, earlier).unwrap();
    let read_earlier = servers(dir.path());
    assert_eq!(read_earlier.len(), written.len());
    assert!(read_earlier.iter().all(|s| *s == Side::Primary));
    // A header with a column of its own is still an error naming it.
    std::fs::write(&path, text.replacen(",server", ",host", 1)).unwrap();
    let error = read_report(dir.path()).unwrap_err().to_string();
    assert!(error.contains("no column server"), "{error}");
}
