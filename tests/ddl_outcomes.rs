//! What became of the DDL is said as it was: a retry schedule longer than the
//! run is `cut_off` with the tries it made, never `gave_up`; a try that fails
//! with an error other than a lock timeout is named on stdout with its
//! SQLSTATE and message.

mod common;

use assert_cmd::Command;
use common::*;
use stallbench::metrics::Summary;

fn stallbench() -> Command {
    let mut command = Command::cargo_bin("stallbench").unwrap();
    command
        .env_remove("DATABASE_URL")
        .env_remove("STALLBENCH_PG_BIN")
        .env_remove("GITHUB_STEP_SUMMARY");
    command
}

/// Runs `strategy` of `text` and returns its stdout and its summary.
fn run(text: &str, strategy: &str) -> (String, Summary, String) {
    let dir = tempfile::tempdir().unwrap();
    let workload = write_workload(dir.path(), "workload.toml", text);
    let out = dir.path().join("out");
    let assert = stallbench()
        .args(["run", workload.to_str().unwrap(), "--strategy", strategy])
        .args(["--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let mut summaries: Vec<Summary> = csv::Reader::from_path(out.join("summary.csv"))
        .unwrap()
        .deserialize()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(summaries.len(), 1);
    let summary_md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    (stdout, summaries.remove(0), summary_md)
}

#[test]
fn a_retry_schedule_longer_than_the_run_is_cut_off_not_gave_up() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    // The report holds the table from 2 s to 7 s of an 8 s run; retry's first
    // try (3 s) times out at 3.5 s and its next one would come 10 s later.
    let text = SHORT_ADD_COLUMN
        .replace("duration = \"12s\"", "duration = \"8s\"")
        .replace(
            "backoff = { kind = \"linear\", step = \"1s\", cap = \"5s\" }",
            "backoff = { kind = \"linear\", step = \"10s\", cap = \"10s\" }",
        );
    assert!(text.contains("step = \"10s\"") && text.contains("\"8s\""));
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
    let text = SHORT_ADD_COLUMN
        .replace(
            "[blocker]\nat = \"2s\"\nhold = \"5s\"\nsql = \"SELECT count(*) FROM orders\"\n",
            "",
        )
        .replace("duration = \"12s\"", "duration = \"4s\"")
        .replace("[ddl]\nat = \"3s\"", "[ddl]\nat = \"1s\"")
        .replace(
            "sql = \"ALTER TABLE orders ADD COLUMN note text\"",
            "sql = \"ALTER TABLE orders ADD COLUMN total numeric\"",
        );
    assert!(!text.contains("[blocker]") && text.contains("ADD COLUMN total"));
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
