//! Failures by kind on a real throwaway server: an `ALTER COLUMN ... TYPE`
//! under a load that reads the column breaks the workers' prepared statements
//! (0A000 cached plan must not change result type); the failures are grouped
//! by kind in `failures.csv`, stdout and `summary.md`, the workers prepare
//! again and recover, and expectations on the failures fail the run (exit 3).
//! Reads held behind the queued ALTER and then failed count their wait in the latency.

mod common;

use common::*;
use predicates::prelude::*;
use stallbench::export::csv::{AttemptRecord, FailureRecord, TimelineRecord};

/// A column changes type while 4 clients read its sum: no blocker, the ALTER
/// runs at 3 s of an 8 s clock and takes about a second to rewrite the table.
const ALTER_TYPE: &str = r#"
name = "alter-type"
description = "ALTER COLUMN qty TYPE bigint while the load reads sum(qty)"
setup = """
CREATE TABLE orders (
    id bigserial PRIMARY KEY,
    customer_id int NOT NULL,
    qty int NOT NULL
);
INSERT INTO orders (customer_id, qty) SELECT 1 + g % 1000, 1 + g % 7 FROM generate_series(1, 200000) g;
CREATE INDEX ON orders (customer_id);
ANALYZE orders;
"""
reset = "ALTER TABLE orders ALTER COLUMN qty TYPE int;"

[load]
clients = 4
duration = "8s"

[[load.scripts]]
name = "read-qty"
sql = """
\\set c random(1, 1000)
SELECT sum(qty) FROM orders WHERE customer_id = :c;
"""

[ddl]
at = "3s"
sql = "ALTER TABLE orders ALTER COLUMN qty TYPE bigint"

[[strategies]]
name = "naive"
kind = "plain"

[[strategies]]
name = "retry"
kind = "lock-timeout-retry"
lock_timeout = "500ms"
max_tries = 10
backoff = { kind = "linear", step = "1s", cap = "5s" }

[expect.naive]
max_failed_0A = 0
"#;

const CACHED_PLAN: &str = "cached plan must not change result type";

#[test]
fn a_changed_column_type_fails_by_kind_then_recovers_and_fails_the_expectations() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let run = short_run("alter-type.toml", ALTER_TYPE);
    let out = &run.out;
    let assert = stallbench_quiet("compare", &run.workload, out)
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
        // later second at half the median of the seconds before the DDL (3 s) or more.
        let mut before: Vec<u64> = seconds
            .iter()
            .filter(|r| r.second < 3)
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
        assert!(ended_s > 3.0, "{strategy}: {attempts:?}");
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
    assert_no_leftover_server();
}

/// The same change queued behind a report: the ALTER (at 2 s) waits for the
/// report (1 s to 4 s), the readers queue behind it, and once it commits each
/// held read fails with 0A000. A 6 s clock and a small table.
const HELD_THEN_FAILED: &str = r#"
name = "held-then-failed"
description = "readers held behind a queued ALTER COLUMN TYPE, then failed with 0A000"
setup = """
CREATE TABLE orders (
    id bigserial PRIMARY KEY,
    customer_id int NOT NULL,
    qty int NOT NULL
);
INSERT INTO orders (customer_id, qty) SELECT 1 + g % 1000, 1 + g % 7 FROM generate_series(1, 20000) g;
CREATE INDEX ON orders (customer_id);
ANALYZE orders;
"""
reset = "ALTER TABLE orders ALTER COLUMN qty TYPE int;"

[load]
clients = 4
duration = "6s"

[[load.scripts]]
name = "read-qty"
sql = """
\\set c random(1, 1000)
SELECT sum(qty) FROM orders WHERE customer_id = :c;
"""

[blocker]
at = "1s"
hold = "3s"
sql = "SELECT count(*) FROM orders"

[ddl]
at = "2s"
sql = "ALTER TABLE orders ALTER COLUMN qty TYPE bigint"

[[strategies]]
name = "naive"
kind = "plain"
"#;

/// A failed transaction's wait counts: what the application waited for until
/// the error arrived is in every latency figure (summary, per second, .hgrm),
/// and the successful-only figures stay apart in `ok_*`.
#[test]
fn a_held_read_that_then_fails_counts_its_wait_in_the_latency() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let run = short_run("held-then-failed.toml", HELD_THEN_FAILED);
    let report = run_in_process(&run.workload, compare_all(), &run.args);
    let naive = strategy_named(&report, "naive");

    // The ALTER queued behind the report for about 2 s, then the held reads failed.
    let summary = &naive.summary;
    assert!(summary.ddl_last_wait_ms >= 1_500.0, "{summary:?}");
    assert!(summary.failed >= 1, "{summary:?}");
    let failures: Vec<FailureRecord> = read_records(&run.out.join("failures.csv"));
    assert!(!failures.is_empty());
    for failure in &failures {
        assert_eq!(failure.sqlstate.cell(), "0A000", "{failure:?}");
    }

    // A reader queued within a transaction's time of the ALTER and waited
    // until it committed: at least the ALTER's wait, less a margin.
    let held_ms = summary.ddl_last_wait_ms - 500.0;
    let summaries: Vec<stallbench::metrics::Summary> = read_records(&run.out.join("summary.csv"));
    let written = &summaries[0];
    assert!(written.lat_max_ms >= held_ms, "{written:?}");
    // The completed ones alone (what pgbench reports) never waited that long.
    let ok_max_ms = written.ok_max_ms.expect("ok_max_ms is written");
    assert!(ok_max_ms < held_ms, "{written:?}");
    assert!(written.ok_p99_ms.unwrap() <= ok_max_ms, "{written:?}");

    // Per second: the second the held reads failed in shows their wait.
    let timeline: Vec<TimelineRecord> = read_records(&run.out.join("timeline.csv"));
    let failed_second = timeline
        .iter()
        .filter(|row| row.failed > 0)
        .max_by(|a, b| a.lat_max_ms.total_cmp(&b.lat_max_ms))
        .expect("a second with failures");
    assert!(failed_second.lat_max_ms >= held_ms, "{failed_second:?}");

    // The .hgrm file's max is the same figure.
    let hgrm = std::fs::read_to_string(run.out.join("latency-naive.hgrm")).unwrap();
    let max_line = hgrm
        .lines()
        .find(|line| line.starts_with("#[Max"))
        .expect("a #[Max line");
    let hgrm_max_ms: f64 = max_line
        .trim_start_matches("#[Max")
        .trim_start_matches([' ', '='])
        .split(',')
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(hgrm_max_ms >= held_ms, "{max_line}");
    assert_no_leftover_server();
}
