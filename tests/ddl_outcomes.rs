//! What became of the DDL is said as it was: a retry schedule longer than the
//! run is `cut_off` with the tries it made, never `gave_up`; a try that fails
//! with an error other than a lock timeout is named on stdout with its
//! SQLSTATE and message.

mod common;

use common::*;
use stallbench::metrics::Summary;

/// Runs `strategy` of `text` and returns its stdout, its summary and summary.md.
fn run(text: &str, strategy: &str) -> (String, Summary, String) {
    let run = short_run("workload.toml", text);
    let assert = stallbench_quiet("run", &run.workload, &run.out)
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
    require_postgres();
    let _serial = one_database_run_at_a_time();
    // The report holds the table from 2 s to 7 s of an 8 s run; retry's first
    // try (3 s) times out at 3.5 s and its next one would come 10 s later.
    let text = replaced(SHORT_ADD_COLUMN, "duration = \"12s\"", "duration = \"8s\"");
    let text = replaced(
        &text,
        "backoff = { kind = \"linear\", step = \"1s\", cap = \"5s\" }",
        "backoff = { kind = \"linear\", step = \"10s\", cap = \"10s\" }",
    );
    let (stdout, summary, summary_md) = run(&text, "retry");
    assert_eq!(summary.ddl_outcome, "cut_off", "{summary:?}");
    assert_eq!(summary.ddl_attempts, 1, "{summary:?}");
    assert!(stdout.contains(" cut_off "), "{stdout}");
    assert!(
        summary_md.contains("cut off by the end of the run"),
        "{summary_md}"
    );
    assert_no_leftover_server();
}

#[test]
fn a_ddl_error_other_than_a_lock_timeout_is_named_on_stdout() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    // No report; at 1 s of a 4 s run the ALTER adds a column that exists already: 42701.
    let text = replaced(
        &without_blocker(4, 1),
        "sql = \"ALTER TABLE orders ADD COLUMN note text\"",
        "sql = \"ALTER TABLE orders ADD COLUMN total numeric\"",
    );
    let (stdout, summary, _) = run(&text, "naive");
    assert_eq!(summary.ddl_outcome, "error", "{summary:?}");
    assert!(
        stdout.contains(
            "naive: DDL try 1 failed: 42701 column \"total\" of relation \"orders\" already exists\n"
        ),
        "{stdout}"
    );
    assert_no_leftover_server();
}
