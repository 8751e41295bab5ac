//! Two runs against one database at the same time: the second refuses with a
//! message naming the first, the first finishes whole; a run killed with
//! `kill -9` releases the database with its session, and the next run drops
//! the schema it left and says so.

use std::process::{Child, Output};
use std::time::{Duration, Instant};

use crate::common::*;

/// Waits until `sql` counts `expected`, up to 60 s.
fn wait_for(runtime: &tokio::runtime::Runtime, url: &str, sql: &str, expected: i64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while query_int(runtime, url, sql) != expected {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Advisory locks held in the current database (the shared server has others).
const ADVISORY_LOCKS: &str = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' \
     AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_second_run_on_the_same_database_refuses_and_the_first_finishes_whole() {
    let _cpus = cpus_shared();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let run = ShortRun::on_shared_server(&reference());
    let url = run.db_url().unwrap().to_string();
    let first_out = run.dir.path().join("first");
    let first: Child = load_only_process(&run.workload, Some(&url), "4s", &first_out)
        .spawn()
        .unwrap();
    wait_for(
        &runtime,
        &url,
        READERS_CONNECTED,
        4,
        "the first run's readers",
    );

    let second_out = run.dir.path().join("second");
    let second = load_only_process(&run.workload, Some(&url), "2s", &second_out)
        .output()
        .unwrap();
    let message = stderr_of(&second);
    assert_eq!(second.status.code(), Some(1), "{message}");
    assert!(
        message.starts_with(&format!(
            "error: --db-url {url}: another stallbench run is using schema stallbench on this \
             server (application_name stallbench-"
        )),
        "{message}"
    );
    assert!(message.contains(", pid "), "{message}");
    assert!(
        message
            .trim_end()
            .ends_with("; wait for it to end, or run against another database"),
        "{message}"
    );
    assert!(
        !second_out.exists(),
        "the refused run made a results folder"
    );

    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", stderr_of(&first));
    let report = stallbench::export::read_report(&first_out).unwrap();
    let load = &report.strategies[0];
    assert_eq!(load.seconds.len(), 4, "{:?}", load.seconds);
    assert!(
        load.seconds.iter().all(|row| row.tps > 0),
        "{:?}",
        load.seconds
    );
    assert_eq!(load.summary.interrupted, "");
    assert_eq!(load.summary.failed, 0);
}

#[test]
fn a_run_killed_with_sigkill_releases_the_database_and_its_schema_is_dropped() {
    let _cpus = cpus_shared();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Both runs set the database up: the killed one, then the next.
    let run = ShortRun::on_empty_database(&reference());
    let url = run.db_url().unwrap().to_string();
    let mut killed = load_only_process(
        &run.workload,
        Some(&url),
        "6s",
        &run.dir.path().join("killed"),
    )
    .spawn()
    .unwrap();
    wait_for(
        &runtime,
        &url,
        READERS_CONNECTED,
        4,
        "the first run's readers",
    );
    killed.kill().unwrap();
    killed.wait().unwrap();
    // The server ends the dead run's sessions as it notices their sockets closed.
    wait_for(
        &runtime,
        &url,
        ADVISORY_LOCKS,
        0,
        "the killed run's lock released",
    );

    let next = load_only_process(
        &run.workload,
        Some(&url),
        "2s",
        &run.dir.path().join("next"),
    )
    .output()
    .unwrap();
    let message = stderr_of(&next);
    assert_eq!(next.status.code(), Some(0), "{message}");
    assert!(
        message.contains("dropped schema stallbench left by an earlier run that did not finish"),
        "{message}"
    );
    assert_eq!(
        query_int(
            &runtime,
            &url,
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'stallbench'"
        ),
        0,
        "{message}"
    );
}
