//! Retries as pgbench 15+ does them (`--max-tries`), on the shared server:
//! two clients that make conflicts certain, run once without retries (every
//! conflict is a failure, as before) and once with them (the conflicts are
//! tried again, counted as `retried`/`retries`, and fail only when the tries
//! run out), read from `timeline.csv` and `summary.csv`.

use crate::common::workload::{load, script};
use crate::common::*;
use stallbench::export::csv::TimelineRecord;
use stallbench::metrics::Summary;
use stallbench::workload::WorkloadFile;

/// Two rows both clients update.
const HOT_ROWS: &str = "CREATE TABLE hot_rows (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO hot_rows VALUES (1, 0), (2, 0);";

/// A read-modify-write of one row under SERIALIZABLE. Both clients read the
/// row, sleep 10-60 ms (the server's random, so a retry does not repeat it)
/// and write it: whichever writes second read a snapshot older than the
/// other's commit and fails with 40001, in every round where the two
/// transactions overlap, which with these sleeps is nearly every round. The
/// sleep being random, the loser of one round wins the next one half of the
/// time, so ten tries in a row fail about once in 500 transactions.
const READ_MODIFY_WRITE: &str = "BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT n FROM hot_rows WHERE id = 1;
SELECT pg_sleep(0.01 + random() * 0.05);
UPDATE hot_rows SET n = n + 1 WHERE id = 1;
COMMIT;";

/// [`READ_MODIFY_WRITE`] sent as one pipeline: a conflict fails the
/// pipeline's statements up to its sync, and the whole script is tried again.
const READ_MODIFY_WRITE_PIPELINED: &str = "\\startpipeline
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT n FROM hot_rows WHERE id = 1;
SELECT pg_sleep(0.01 + random() * 0.05);
UPDATE hot_rows SET n = n + 1 WHERE id = 1;
COMMIT;
\\endpipeline";

/// The two rows updated in opposite orders by client 0 and client 1, with a
/// sleep between: each holds its first row while it waits for the other's,
/// a deadlock (40P01) the server finds after `deadlock_timeout` (100 ms here).
const UNORDERED_UPDATES: &str = "\\set first 1 + :client_id % 2
\\set second 3 - :first
SET deadlock_timeout = '100ms';
BEGIN;
UPDATE hot_rows SET n = n + 1 WHERE id = :first;
SELECT pg_sleep(0.05);
UPDATE hot_rows SET n = n + 1 WHERE id = :second;
COMMIT;";

/// [`UNORDERED_UPDATES`] as one pipeline: the victim's deadlock fails its
/// block, which the server reports as failed at the pipeline's sync.
const UNORDERED_UPDATES_PIPELINED: &str = "\\set first 1 + :client_id % 2
\\set second 3 - :first
SET deadlock_timeout = '100ms';
\\startpipeline
BEGIN;
UPDATE hot_rows SET n = n + 1 WHERE id = :first;
SELECT pg_sleep(0.05);
UPDATE hot_rows SET n = n + 1 WHERE id = :second;
COMMIT;
\\endpipeline";

/// Write skew in one pipeline under SERIALIZABLE: each client reads both
/// rows and writes its own, then waits before its COMMIT; the server refuses
/// one of two overlapping transactions at its COMMIT ("canceled on
/// identification as a pivot, during commit attempt"), which ends the block:
/// the try failed, and nothing is left to roll back.
const WRITE_SKEW_PIPELINED: &str = "\\set mine 1 + :client_id % 2
\\startpipeline
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT sum(n) FROM hot_rows;
SELECT pg_sleep(0.01);
UPDATE hot_rows SET n = n + 1 WHERE id = :mine;
SELECT pg_sleep(0.01);
COMMIT;
\\endpipeline";

/// Two clients running `sql` for 3 s, no blocker, no DDL.
fn two_clients(sql: &str) -> WorkloadFile {
    let mut workload = reference();
    workload.name = "retries".into();
    workload.setup = HOT_ROWS.into();
    workload.reset = String::new();
    workload.load = load(2, "3s", vec![script("conflict", sql)]);
    workload.blocker = None;
    workload.ddl = None;
    workload
}

/// The load-only run's summary and its timeline's sums of the retry
/// columns: (retried, retries, failed_serialization, failed_deadlock).
fn run_with(workload: &WorkloadFile, flags: &[&str]) -> (Summary, [u64; 4]) {
    let run = ShortRun::on_shared_server(workload);
    run.command("run")
        .arg("--load-only")
        .args(flags)
        .assert()
        .success();
    let summaries: Vec<Summary> = read_records(&run.out.join("summary.csv"));
    let timeline: Vec<TimelineRecord> = read_records(&run.out.join("timeline.csv"));
    let sum = |column: fn(&TimelineRecord) -> u64| timeline.iter().map(column).sum::<u64>();
    let sums = [
        sum(|row| row.retried),
        sum(|row| row.retries),
        sum(|row| row.failed_serialization),
        sum(|row| row.failed_deadlock),
    ];
    assert_eq!(summaries.len(), 1, "{summaries:?}");
    let summary = summaries.into_iter().next().unwrap();
    let totals = [
        summary.retried,
        summary.retries,
        summary.failed_serialization,
        summary.failed_deadlock,
    ];
    assert_eq!(sums, totals, "timeline.csv's sums against summary.csv");
    (summary, sums)
}

#[test]
fn serialization_failures_are_retried_with_max_tries_and_fail_without() {
    let _cpus = cpus_shared();
    let workload = two_clients(READ_MODIFY_WRITE);
    let (once, [retried, retries, serialization, _]) = run_with(&workload, &[]);
    // Without --max-tries every conflict fails, as before: about one per round.
    assert_eq!((retried, retries), (0, 0), "{once:?}");
    assert!(serialization >= 10, "{once:?}");
    assert_eq!(once.failed, serialization, "{once:?}");
    assert!(once.transactions >= 10, "{once:?}");

    let (tried, [retried, retries, serialization_tried, _]) =
        run_with(&workload, &["--max-tries", "10"]);
    // With it the conflicts are tried again, and a transaction fails only
    // when ten tries in a row lost.
    assert!(retried >= 10, "{tried:?}");
    assert!(retries >= retried, "{tried:?}");
    assert!(
        serialization_tried * 4 <= serialization,
        "failed {serialization_tried} with --max-tries 10 against {serialization} without"
    );
    assert!(tried.transactions >= 10, "{tried:?}");
}

#[test]
fn a_deadlock_is_retried_and_fails_only_when_its_tries_run_out() {
    let _cpus = cpus_shared();
    let workload = two_clients(UNORDERED_UPDATES);
    let (once, [retried, _, _, deadlocks]) = run_with(&workload, &[]);
    assert_eq!(retried, 0, "{once:?}");
    assert!(deadlocks >= 2, "{once:?}");
    assert_eq!(once.failed, deadlocks, "{once:?}");

    let (tried, [retried, retries, _, deadlocks]) = run_with(&workload, &["--max-tries", "2"]);
    // Every victim is tried again; one counts as failed_deadlock only after
    // its second try deadlocked too, so it is among the retried ones.
    assert!(retried >= 2, "{tried:?}");
    assert_eq!(retries, retried, "two tries at most: {tried:?}");
    assert!(deadlocks <= retried, "{tried:?}");
    assert_eq!(tried.failed, deadlocks, "{tried:?}");
}

#[test]
fn the_simple_protocol_the_application_pool_and_a_pipeline_retry_the_same_way() {
    let _cpus = cpus_shared();
    let workload = two_clients(READ_MODIFY_WRITE);
    let simple = ["--protocol", "simple", "--max-tries", "10"];
    // Requests at 50 a second on 2 connections: two often run at once.
    let pool = ["--rate", "50", "--pool-size", "2", "--max-tries", "10"];
    for flags in [&simple[..], &pool[..]] {
        let (summary, [retried, retries, _, _]) = run_with(&workload, flags);
        assert!(retried >= 3, "{flags:?}: {summary:?}");
        assert!(retries >= retried, "{flags:?}: {summary:?}");
    }
    let pipelined = two_clients(READ_MODIFY_WRITE_PIPELINED);
    let (summary, [retried, retries, serialization, _]) =
        run_with(&pipelined, &["--protocol", "extended", "--max-tries", "10"]);
    assert!(retried >= 3, "pipeline: {summary:?}");
    assert!(retries >= retried, "pipeline: {summary:?}");
    assert!(serialization * 4 <= retried, "pipeline: {summary:?}");
}

#[test]
fn a_pipelines_deadlock_is_rolled_back_and_retried() {
    let _cpus = cpus_shared();
    let workload = two_clients(UNORDERED_UPDATES_PIPELINED);
    let flags = ["--protocol", "extended", "--max-tries", "3"];
    let (summary, [retried, retries, _, deadlocks]) = run_with(&workload, &flags);
    assert!(retried >= 2, "{summary:?}");
    assert!(retries >= retried, "{summary:?}");
    // Rolled back before each new try: no try fails on a block left open
    // (25P02), so every failure is a deadlock whose tries ran out.
    assert_eq!(summary.failed, deadlocks, "{summary:?}");
}

#[test]
fn a_pipeline_that_failed_at_its_commit_is_retried_without_a_rollback() {
    let _cpus = cpus_shared();
    let workload = two_clients(WRITE_SKEW_PIPELINED);
    let run = ShortRun::throwaway(&workload);
    run.command("run")
        .args(["--load-only", "--protocol", "extended", "--max-tries", "10"])
        .assert()
        .success();
    let summaries: Vec<Summary> = read_records(&run.out.join("summary.csv"));
    let summary = &summaries[0];
    assert!(summary.retried >= 10, "{summary:?}");
    // The server's log is text: its messages are what can be read there.
    let log = std::fs::read_to_string(run.out.join("server.log")).unwrap();
    let at_commit = log.matches("during commit attempt").count();
    assert!(
        at_commit >= 10,
        "{at_commit} failures at COMMIT: {summary:?}"
    );
    // pgbench's rule: ROLLBACK only when the server says a block is open,
    // which it does not after a failed COMMIT; a ROLLBACK then would warn.
    assert_eq!(
        log.matches("there is no transaction in progress").count(),
        0,
        "{log}"
    );
}
