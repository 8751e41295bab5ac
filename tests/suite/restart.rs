//! A server restarted in the middle of a migration loses no more than the
//! restart: a `--db-url` run against a server the test runs with `pg_ctl`,
//! restarted (`pg_ctl restart -m fast`) while the report holds the table and
//! a lock-timeout retry strategy is retrying behind it. Afterwards the DDL
//! opened its session again and finished, the lock observer sampled again
//! (a lock the test holds after the restart shows in locks.csv), and the
//! report names the observer's time without a connection. And on a server
//! that stays up, a pg-osc migration whose session (and the observer's) the
//! test terminates tries again on a new session.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::workload::{
    ADD_NOTE, DROP_NOTE, READ_ORDER, ddl, load, report, retry, script, small_orders,
};
use crate::common::*;
use stallbench::metrics::AttemptOutcome;
use stallbench::workload::{StrategyFile, WorkloadFile};

/// 16 s of load; the report holds the table from 1 s to 11 s (the restart
/// ends it sooner); the ALTER from 2 s waits up to 1 s a try, 3 s
/// apart: long enough for the test to take its own lock on the restarted
/// server before the DDL is back. A try starts every 4 s, so a restart as
/// late as 7 s (a busy machine: seen at 6 s) still leaves two tries after
/// it before the run ends.
fn restart_mid_migration() -> WorkloadFile {
    WorkloadFile {
        name: "restart-mid-migration".into(),
        description: "a lock-timeout retry whose server restarts while it retries".into(),
        setup: small_orders(20_000),
        reset: DROP_NOTE.into(),
        load: load(2, "16s", vec![script("read-order", READ_ORDER)]),
        blocker: Some(report("1s", "10s")),
        ddl: Some(ddl("2s", ADD_NOTE)),
        strategies: vec![retry("retry", "1s", "3s", "3s")],
        expect: Default::default(),
        sweep: None,
        replica: None,
        variants: Vec::new(),
        invariants: Vec::new(),
    }
}

/// Whether the run's DDL session waits for a lock now.
const DDL_WAITS_SQL: &str = "SELECT count(*) FROM pg_stat_activity \
    WHERE application_name LIKE 'stallbench-%-ddl' AND wait_event_type = 'Lock'";

#[test]
fn a_retrying_migration_and_the_lock_observer_outlive_a_server_restart() {
    require_postgres();
    let _cpus = cpus_shared();
    let server = OperatorServer::start();
    let url = server.connection_string();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let harness = start_run(dir.path(), &restart_mid_migration(), "retry", &url, &out);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    // The DDL retries behind the report: restart the server under it.
    runtime.block_on(wait_until_ddl_waits(&url, Duration::from_secs(30)));
    std::thread::sleep(Duration::from_millis(300));
    let restarted_at = Instant::now();
    server.pg_ctl(&["restart", "-m", "fast"]);
    // After the restart the report is gone; the test holds the table instead,
    // until the DDL (on its new session) waits behind it for a while.
    let held_s = runtime.block_on(async {
        let client = connect(&url).await;
        client
            .batch_execute("BEGIN; LOCK TABLE stallbench.orders IN ACCESS SHARE MODE")
            .await
            .unwrap();
        wait_until_ddl_waits(&url, Duration::from_secs(8)).await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        client.batch_execute("COMMIT").await.unwrap();
        restarted_at.elapsed().as_secs_f64()
    });

    let output = harness.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The restart ended the report 10 s early: the run is written whole, but
    // it is not the scenario as written, so it exits 4 and says why.
    assert_eq!(output.status.code(), Some(4), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("retry: not ranked, invalid: the report failed at "),
        "{stdout}"
    );

    // The DDL: lock timeouts, one try lost with the restart, more tries on the
    // new session, the last one done.
    let report = stallbench::export::read_report(&out).unwrap();
    let retry = &report.strategies[0];
    let outcomes: Vec<(AttemptOutcome, &str, f64)> = retry
        .attempts
        .iter()
        .map(|a| (a.outcome, a.sqlstate_cell(), a.started_s))
        .collect();
    let lost = retry
        .attempts
        .iter()
        .position(|a| a.outcome == AttemptOutcome::Error)
        .unwrap_or_else(|| panic!("no try lost its connection: {outcomes:?}"));
    assert!(
        ["57P01", "connection_lost"].contains(&retry.attempts[lost].sqlstate_cell()),
        "{outcomes:?}"
    );
    assert!(
        retry.attempts[..lost]
            .iter()
            .all(|a| a.outcome == AttemptOutcome::LockTimeout),
        "{outcomes:?}"
    );
    let after = &retry.attempts[lost + 1..];
    assert!(
        after.len() >= 2,
        "tries behind the test's lock, then done: {outcomes:?}"
    );
    assert_eq!(
        after.last().unwrap().outcome,
        AttemptOutcome::Ok,
        "{outcomes:?}"
    );
    assert!(
        after[..after.len() - 1]
            .iter()
            .all(|a| a.outcome == AttemptOutcome::LockTimeout),
        "{outcomes:?}"
    );

    // The observer sampled again: the DDL waiting behind the test's session.
    let lost_s = retry.attempts[lost].ended_s;
    let locks = std::fs::read_to_string(out.join("locks.csv")).unwrap();
    let ddl_waits_after: Vec<&str> = locks
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            fields[1].parse::<f64>().unwrap() > lost_s && fields[3] == "ddl" && fields[8] == "0"
        })
        .collect();
    // Each names the test's session as its blocker, but a sample taken as a
    // try's 1 s lock_timeout fires (wait 1003.8 ms, seen once) meets a session
    // that `pg_locks` still shows waiting and `pg_blocking_pids` no longer
    // names a blocker of: a moment of the try's end, not of the queue.
    let blocker_of = |line: &&str| line.split(',').nth(9).unwrap().to_string();
    let named: Vec<&str> = (ddl_waits_after.iter().copied())
        .filter(|line| !blocker_of(line).is_empty())
        .collect();
    assert!(
        named.len() >= 2,
        "lock samples after the restart at {lost_s:.1} s (held {held_s:.1} s after it): {locks}"
    );
    assert!(
        named
            .iter()
            .all(|line| blocker_of(line).starts_with("external:")),
        "{ddl_waits_after:#?}"
    );
    assert!(
        (ddl_waits_after.iter())
            .filter(|line| blocker_of(line).is_empty())
            .all(|line| line.split(',').nth(10).unwrap().parse::<f64>().unwrap() >= 990.0),
        "only a try at its lock_timeout names no blocker: {ddl_waits_after:#?}"
    );

    // The report names the observer's gap, in the console and in summary.md.
    let phrase = "the lock observer lost its connection at ";
    assert!(stdout.contains(phrase), "{stdout}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains(phrase), "{summary}");
    assert!(summary.contains(" and was back at "), "{summary}");
}

/// pg-osc's recipe on 1 s tries, behind a report held from 1 s to 5.5 s.
fn terminated_mid_migration() -> WorkloadFile {
    WorkloadFile {
        name: "terminated-mid-migration".into(),
        description: "a kill-lock-holders migration whose session someone terminates".into(),
        setup: small_orders(20_000),
        reset: String::new(),
        load: load(
            2,
            "6s",
            vec![script(
                "read-order",
                "SELECT count(*) FROM orders WHERE customer_id = 7;",
            )],
        ),
        blocker: Some(report("1s", "4.5s")),
        ddl: Some(ddl("2s", ADD_NOTE)),
        strategies: vec![StrategyFile {
            name: "osc".into(),
            kind: Some("kill-lock-holders".into()),
            lock_timeout: Some("1s".into()),
            max_tries: Some(4),
            ..StrategyFile::default()
        }],
        expect: Default::default(),
        sweep: None,
        replica: None,
        variants: Vec::new(),
        invariants: Vec::new(),
    }
}

#[test]
fn a_terminated_ddl_session_and_observer_come_back_on_the_same_server() {
    require_postgres();
    let _cpus = cpus_shared();
    let server = OperatorServer::start();
    let url = server.connection_string();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let harness = start_run(dir.path(), &terminated_mid_migration(), "osc", &url, &out);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let terminated: i64 = runtime.block_on(async {
        wait_until_ddl_waits(&url, Duration::from_secs(30)).await;
        connect(&url)
            .await
            .query_one(
                "WITH run AS MATERIALIZED (SELECT pid FROM pg_stat_activity \
                 WHERE application_name LIKE 'stallbench-%-ddl' \
                 OR application_name LIKE 'stallbench-%-observer') \
                 SELECT count(*) FROM run WHERE pg_terminate_backend(pid)",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    });
    assert_eq!(
        terminated, 2,
        "the test terminated the DDL and the observer"
    );
    let output = harness.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");

    // Try 1 lost, try 2 on the new session timed out and terminated the
    // report, try 3 done.
    let report = stallbench::export::read_report(&out).unwrap();
    let osc = &report.strategies[0];
    let outcomes: Vec<(AttemptOutcome, &str)> = osc
        .attempts
        .iter()
        .map(|a| (a.outcome, a.sqlstate_cell()))
        .collect();
    assert_eq!(
        outcomes,
        [
            (AttemptOutcome::Error, "57P01"),
            (AttemptOutcome::LockTimeout, "55P03"),
            (AttemptOutcome::Ok, "")
        ],
        "{stdout}\n{stderr}"
    );
    assert!(
        osc.attempts[1]
            .terminated
            .iter()
            .any(|session| session.role == "report"),
        "{:?}",
        osc.attempts[1].terminated
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("the lock observer lost its connection at "),
        "{summary}"
    );
    assert!(summary.contains(" and was back at "), "{summary}");
}

/// Starts `stallbench run` of `workload` (written into `dir`) with one
/// strategy against `url`, results into `out`; stdout and stderr piped.
fn start_run(
    dir: &std::path::Path,
    workload: &WorkloadFile,
    strategy: &str,
    url: &str,
    out: &std::path::Path,
) -> Child {
    let workload = write_workload(dir, "workload.toml", workload);
    Command::new(assert_cmd::cargo::cargo_bin("stallbench"))
        .env_remove("DATABASE_URL")
        .args(["run", workload.to_str().unwrap(), "--strategy", strategy])
        .args(["--db-url", url, "--out"])
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Polls until the run's DDL session waits for a lock; panics after `within`.
async fn wait_until_ddl_waits(url: &str, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        if let Ok(client) = try_connect(url).await {
            let waits: i64 = client
                .query_one(DDL_WAITS_SQL, &[])
                .await
                .map_or(0, |row| row.get(0));
            if waits > 0 {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the run's DDL never waited for a lock"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
