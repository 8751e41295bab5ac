//! What became of the DDL is said as it was: a retry schedule longer than the
//! run is `cut_off` with the tries it made, never `gave_up`; a try that fails
//! with an error other than a lock timeout is named on stdout with its
//! SQLSTATE and message.

use crate::common::workload::{ddl, report};
use crate::common::*;
use stallbench::metrics::Summary;
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
    // No report; at 1 s of a 2 s run the ALTER adds a column that exists already: 42701.
    let mut workload = without_blocker(2, 1);
    workload.ddl = Some(ddl("1s", "ALTER TABLE orders ADD COLUMN total numeric"));
    let (stdout, summary, _) = run(&workload, "naive");
    assert_eq!(summary.ddl_outcome, "error", "{summary:?}");
    assert!(
        stdout.contains(
            "naive: DDL try 1 failed: 42701 column \"total\" of relation \"orders\" already exists\n"
        ),
        "{stdout}"
    );
}
