//! Waiting for the lock versus holding it, on a real server: a table-rewriting
//! ALTER behind a report queues for its lock until the report ends, then holds
//! it for the rewrite; `wait-for-idle` waits for idle first and then holds
//! the lock just as long. Each phase lands in its own column.
//! The two rewrites, whose times are compared, run alone (`alone::wait_hold`).

use crate::common::workload::{ddl, load, plain, qty_orders, report, script};
use crate::common::*;
use stallbench::metrics::{DdlAttempt, LockPhases, RunReport, StrategyReport};
use stallbench::workload::{BlockerFile, WorkloadFile};

/// 500,000 orders, so that changing `qty` to bigint rewrites for about half
/// a second: a report from 1 s to 4 s, the ALTER at 2 s, the run's end at
/// 6 s, 1.5 s after the rewrite's.
pub(crate) fn rewrite() -> WorkloadFile {
    WorkloadFile {
        name: "rewrite".into(),
        description: "a table-rewriting ALTER behind a report".into(),
        setup: qty_orders(500_000),
        reset: "ALTER TABLE orders ALTER COLUMN qty TYPE int;".into(),
        load: load(
            2,
            "6s",
            vec![script(
                "read-order",
                "\\set c random(1, 1000)\nSELECT count(*) FROM orders WHERE customer_id = :c;\n",
            )],
        ),
        blocker: Some(BlockerFile {
            sql: "SELECT count(*) FROM orders WHERE id < 10".into(),
            ..report("1s", "3s")
        }),
        ddl: Some(ddl("2s", "ALTER TABLE orders ALTER COLUMN qty TYPE bigint")),
        strategies: vec![plain("naive")],
        expect: Default::default(),
        sweep: None,
        replica: None,
        variants: Vec::new(),
        invariants: Vec::new(),
    }
}

pub(crate) fn strategy<'a>(report: &'a RunReport, name: &str) -> &'a StrategyReport {
    report
        .strategies
        .iter()
        .find(|s| s.strategy == name)
        .unwrap_or_else(|| panic!("no strategy {name}"))
}

/// The attempt's lock phases, which the observer must have timed; the two
/// phases add up to the attempt's duration.
pub(crate) fn phases(attempt: &DdlAttempt) -> LockPhases {
    let lock = attempt
        .lock
        .unwrap_or_else(|| panic!("not timed: {attempt:?}"));
    assert!(
        (lock.wait_ms + lock.held_ms - attempt.waited_ms).abs() < 1.0,
        "waiting and holding add up to the attempt: {attempt:?}"
    );
    lock
}

/// A small table whose ALTER then sleeps in the same transaction: the lock is
/// held for 1.5 s whatever the machine's speed, across a progress tick.
fn held_while_sleeping() -> WorkloadFile {
    WorkloadFile {
        name: "held".into(),
        description: "an ALTER that holds its lock for 1.5 s".into(),
        setup: "CREATE TABLE orders (id bigserial PRIMARY KEY, qty int NOT NULL);
INSERT INTO orders (qty) SELECT g % 7 FROM generate_series(1, 10000) g;
"
        .into(),
        reset: "ALTER TABLE orders ALTER COLUMN qty TYPE int;".into(),
        load: load(
            2,
            "5s",
            vec![script(
                "read",
                "SELECT count(*) FROM orders WHERE id < 100;",
            )],
        ),
        blocker: Some(BlockerFile {
            sql: "SELECT count(*) FROM orders WHERE id < 10".into(),
            ..report("0.5s", "2s")
        }),
        ddl: Some(ddl(
            "1.2s",
            "ALTER TABLE orders ALTER COLUMN qty TYPE bigint; SELECT pg_sleep(1.5)",
        )),
        strategies: vec![plain("naive")],
        expect: Default::default(),
        sweep: None,
        replica: None,
        variants: Vec::new(),
        invariants: Vec::new(),
    }
}

#[test]
fn the_progress_line_says_when_the_ddl_holds_its_lock() {
    let _cpus = cpus_shared();
    let run = ShortRun::on_shared_server(&held_while_sleeping());
    let out = &run.out;
    // Not --quiet: the progress lines are the subject (in CI they are off).
    let output = stallbench_command()
        .env_remove("CI")
        .arg("run")
        .arg(&run.workload)
        .args(["--strategy", "naive", "--seed", "1", "--out"])
        .arg(out)
        .args(["--db-url", run.db_url().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("progress:"))
        .collect();
    let waiting = progress
        .iter()
        .position(|line| line.contains("ddl: try 1 waiting"));
    let holding = progress
        .iter()
        .position(|line| line.contains("ddl: try 1 holds the lock (rewriting)"));
    assert!(
        matches!((waiting, holding), (Some(w), Some(h)) if w < h),
        "the DDL waits, then holds the lock: {progress:#?}"
    );
    let csv = std::fs::read_to_string(out.join("ddl_attempts.csv")).unwrap();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let held_ms: f64 = row[10].parse().unwrap();
    assert!(held_ms >= 1400.0, "the sleep holds the lock: {csv}");
}
