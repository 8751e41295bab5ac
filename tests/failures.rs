//! Failures by kind on a real throwaway server: an `ALTER COLUMN ... TYPE`
//! under a load that reads the column breaks the workers' prepared statements
//! (0A000 cached plan must not change result type); the failures are grouped
//! by kind in `failures.csv`, stdout and `summary.md`, the workers prepare
//! again and recover, and expectations on the failures fail the run (exit 3).

mod common;

use common::workload::{READ_QTY, ddl, load, plain, qty_orders, retry, script};
use common::*;
use predicates::prelude::*;
use stallbench::expect::ExpectFile;
use stallbench::export::csv::{AttemptRecord, FailureRecord, TimelineRecord};
use stallbench::workload::WorkloadFile;

/// A column changes type while 4 clients read its sum: no blocker, the ALTER
/// runs at 2 s of a 6 s clock and takes a moment to rewrite the table.
fn alter_type() -> WorkloadFile {
    let mut naive_bounds = ExpectFile::default();
    naive_bounds
        .max_failed_by_class
        .insert("max_failed_0A".into(), 0);
    WorkloadFile {
        name: "alter-type".into(),
        description: "ALTER COLUMN qty TYPE bigint while the load reads sum(qty)".into(),
        setup: qty_orders(200_000),
        reset: "ALTER TABLE orders ALTER COLUMN qty TYPE int;".into(),
        load: load(4, "6s", vec![script("read-qty", READ_QTY)]),
        blocker: None,
        ddl: Some(ddl("2s", "ALTER TABLE orders ALTER COLUMN qty TYPE bigint")),
        strategies: vec![plain("naive"), retry("retry", "500ms", "1s", "5s")],
        expect: [("naive".to_string(), naive_bounds)].into(),
        sweep: None,
    }
}

const CACHED_PLAN: &str = "cached plan must not change result type";

#[test]
fn a_changed_column_type_fails_by_kind_then_recovers_and_fails_the_expectations() {
    let _cpus = cpus_shared();
    let run = ShortRun::on_shared_server(&alter_type());
    let out = &run.out;
    let assert = run
        .command("compare")
        .args(["--expect", "retry.max_failed=0"])
        .assert()
        .code(3)
        .stdout(predicate::str::contains(
            "FAIL  naive.max_failed_0A <= 0: measured",
        ))
        .stdout(predicate::str::contains(
            "FAIL  retry.max_failed <= 0: measured",
        ));
    let stdout = stdout_of(&assert);

    let failures: Vec<FailureRecord> = read_records(&out.join("failures.csv"));
    let timeline: Vec<TimelineRecord> = read_records(&out.join("timeline.csv"));
    let attempts: Vec<AttemptRecord> = read_records(&out.join("ddl_attempts.csv"));
    let summary_md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for strategy in ["naive", "retry"] {
        let of_strategy: Vec<&FailureRecord> =
            failures.iter().filter(|f| f.strategy == strategy).collect();
        assert!(!of_strategy.is_empty(), "{strategy}: {failures:?}");
        for failure in &of_strategy {
            assert_eq!(
                (failure.sqlstate.cell(), failure.message.as_str()),
                ("0A000", CACHED_PLAN),
                "{failure:?}"
            );
        }
        // Each worker fails once, prepares again and goes on (a driver's behaviour).
        let failed: u64 = of_strategy.iter().map(|f| f.count).sum();
        assert!(failed <= 8, "{strategy}: {failed} failed: {of_strategy:?}");
        let seconds: Vec<&TimelineRecord> =
            timeline.iter().filter(|r| r.strategy == strategy).collect();
        let failed_in_timeline: u64 = seconds.iter().map(|r| r.failed).sum();
        assert_eq!(failed_in_timeline, failed, "{strategy}");

        // Throughput is back within about a second of the DDL's end: every
        // later second at half the median of the seconds before the DDL (2 s) or more.
        let mut before: Vec<u64> = seconds
            .iter()
            .filter(|r| r.second < 2)
            .map(|r| r.tps)
            .collect();
        before.sort_unstable();
        let baseline_tps = before[before.len() / 2];
        assert!(baseline_tps > 0, "{strategy}: {before:?}");
        let ended_s = attempts
            .iter()
            .filter(|a| a.strategy == strategy)
            .map(|a| a.ended_s)
            .fold(0.0, f64::max);
        assert!(ended_s > 2.0, "{strategy}: {attempts:?}");
        let back_from = ended_s.ceil() as u32 + 1;
        let after: Vec<u64> = seconds
            .iter()
            .filter(|r| r.second >= back_from)
            .map(|r| r.tps)
            .collect();
        assert!(!after.is_empty(), "{strategy}: DDL ended at {ended_s} s");
        assert!(
            after.iter().all(|&tps| tps * 2 >= baseline_tps),
            "{strategy}: tps after the DDL ended at {ended_s} s: {after:?}, \
             before it: {baseline_tps}"
        );

        // The ranking shows the burst; a driver-like recovery fails far under
        // 1% of the transactions, so the failure share decides no place.
        let ranking_row = summary_md
            .lines()
            .find(|line| line.starts_with("| ") && line.contains(&format!(" | {strategy} | ")))
            .unwrap_or_else(|| panic!("{strategy}: no ranking row\n{summary_md}"));
        let cells: Vec<&str> = ranking_row.split('|').map(str::trim).collect();
        assert_eq!(cells[9], failed.to_string(), "{ranking_row}");
        assert!(!cells[3].contains("of transactions"), "{ranking_row}");

        let sentence = format!("{strategy}: {failed} failed: 0A000 {CACHED_PLAN} (100%) from ");
        assert!(stdout.contains(&sentence), "{sentence}\n{stdout}");
        assert!(summary_md.contains(&sentence), "{sentence}\n{summary_md}");
    }
}
