//! What became of the DDL is said as it was: a retry schedule longer than the
//! run is `cut_off` with the tries it made, never `gave_up`; a try that fails
//! with an error other than a lock timeout is named on stdout with its
//! SQLSTATE and message; a concurrent build that timed out is dropped
//! before the next try.

use crate::common::workload::{self, ddl, report};
use crate::common::*;
use stallbench::export::csv::AttemptRecord;
use stallbench::metrics::{AttemptOutcome, Summary};
use stallbench::workload::{BackoffFile, WorkloadFile};

/// Runs `strategy` of `workload` and returns its stdout, its summary and summary.md.
fn run(workload: &WorkloadFile, strategy: &str) -> (String, Summary, String) {
    let _cpus = cpus_shared();
    let run = ShortRun::on_shared_server(workload);
    let assert = run
        .command("run")
        .args(["--strategy", strategy])
        .assert()
        .success();
    let stdout = stdout_of(&assert);
    let mut summaries: Vec<Summary> = read_records(&run.out.join("summary.csv"));
    assert_eq!(summaries.len(), 1);
    let summary_md = std::fs::read_to_string(run.out.join("summary.md")).unwrap();
    (stdout, summaries.remove(0), summary_md)
}

#[test]
fn a_retry_schedule_longer_than_the_run_is_cut_off_not_gave_up() {
    // The report holds the table from 1 s to 3 s of a 4 s run; retry's first
    // try (1.5 s) times out at 2 s and its next one would come 10 s later.
    let mut workload = reference();
    workload.load.duration = "4s".into();
    workload.blocker = Some(report("1s", "2s"));
    workload.strategies[1].backoff = Some(BackoffFile {
        kind: "linear".into(),
        step: Some("10s".into()),
        base: None,
        cap: Some("10s".into()),
        jitter: None,
    });
    let (stdout, summary, summary_md) = run(&workload, "retry");
    assert_eq!(summary.ddl_outcome, "cut_off", "{summary:?}");
    assert_eq!(summary.ddl_attempts, 1, "{summary:?}");
    assert!(stdout.contains(" cut_off "), "{stdout}");
    assert!(
        summary_md.contains("cut off by the end of the run"),
        "{summary_md}"
    );
}

#[test]
fn a_ddl_error_other_than_a_lock_timeout_is_named_on_stdout() {
    // No report; from 0 s the load writes an order of a negative total, so at
    // 1 s of a 2 s run the CHECK the ALTER adds fails: 23514. The dry run
    // before the load passes (no such row yet); the run is invalid unless an
    // expectation names the error, as here.
    let _cpus = cpus_shared();
    let mut workload = without_blocker(2, 1);
    workload.load.scripts = vec![workload::script(
        "refund",
        "INSERT INTO orders (customer_id, total) VALUES (1, -1);\n",
    )];
    workload.ddl = Some(ddl(
        "1s",
        "ALTER TABLE orders ADD CONSTRAINT positive CHECK (total >= 0)",
    ));
    let run = ShortRun::on_shared_server(&workload);
    let assert = run
        .command("run")
        .args(["--strategy", "naive", "--expect", "naive.ddl_outcome=error"])
        .assert()
        .success();
    let stdout = stdout_of(&assert);
    assert!(
        stdout.contains(
            "naive: DDL try 1 failed: 23514 check constraint \"positive\" of relation \"orders\" \
             is violated by some row\n"
        ),
        "{stdout}"
    );
    let summaries: Vec<Summary> = read_records(&run.out.join("summary.csv"));
    assert_eq!(summaries[0].ddl_outcome, "error", "{:?}", summaries[0]);
    // Without the expectation, the scenario did not run as written: exit 4.
    let again = ShortRun::on_shared_server(&workload);
    let assert = again
        .command("run")
        .args(["--strategy", "naive"])
        .assert()
        .code(4);
    let stdout = stdout_of(&assert);
    assert!(
        stdout.contains("naive: not ranked, invalid: the DDL failed at 1."),
        "{stdout}"
    );
}

#[test]
fn a_concurrent_build_that_timed_out_leaves_no_invalid_index_in_the_next_tries_way() {
    // The report holds orders from 1 s to 4 s; retry's first try of the
    // concurrent build (1.5 s) times out after 500 ms waiting for the
    // report's snapshot, leaving an INVALID orders_total_idx; the next try
    // (about 3 s) drops it first and times out too; the third (about 5.5 s)
    // drops it again, then builds (without the drop it fails: 42P07, the
    // relation already exists). The build of 20,000 rows before the wait
    // would have to take 2 s for the first try to miss the report (with the
    // report held 1.5 s, a busy machine once made a try start 0.2 s late
    // and build 0.3 s, and its 0.8 s wait ended with the report).
    let mut workload = workload::small_reference();
    workload.load.duration = "8s".into();
    workload.blocker = Some(report("1s", "3s"));
    workload.ddl = Some(ddl(
        "1.5s",
        "CREATE INDEX CONCURRENTLY orders_total_idx ON orders (total)",
    ));
    workload.reset = "DROP INDEX IF EXISTS orders_total_idx".into();
    let _cpus = cpus_shared();
    let run = ShortRun::on_shared_server(&workload);
    run.command("run")
        .args(["--strategy", "retry"])
        .assert()
        .success();
    let attempts: Vec<AttemptRecord> = read_records(&run.out.join("ddl_attempts.csv"));
    assert_eq!(
        attempts[0].outcome,
        AttemptOutcome::LockTimeout,
        "{attempts:?}"
    );
    assert!(attempts.len() >= 2, "{attempts:?}");
    assert_eq!(
        attempts.last().unwrap().outcome,
        AttemptOutcome::Ok,
        "{attempts:?}"
    );
}
