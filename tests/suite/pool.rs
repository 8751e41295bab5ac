//! The application model (`--rate` with `--pool-size`): a real
//! deadpool-postgres pool in front of the stall. Below capacity a request
//! hardly waits for a connection; in a naive stall the pool runs dry within
//! about a second of the ALTER, requests time out at the pool while the
//! database reports no error, and retry keeps the pool serving; a pool
//! session terminated mid-run is replaced and the load recovers; the pool's
//! expectations pass and fail as bounded; the pool connects over verified TLS
//! like every other session.
//! The wait below capacity is timed alone (`alone::pool`).

use std::time::{Duration, Instant};

use crate::common::managed::{APP_PASSWORD, ManagedServer};
use crate::common::*;
use stallbench::config::{Config, Mode};
use stallbench::expect::Verdict;
use stallbench::metrics::failures::FailureKind;
use stallbench::metrics::{PoolRow, StrategyReport};

/// The pool's figures of every second, for failure messages.
pub(crate) fn pool_rows(report: &StrategyReport) -> Vec<(u32, u64, u64, PoolRow)> {
    report
        .seconds
        .iter()
        .map(|row| (row.second, row.tps, row.failed, row.pool.unwrap()))
        .collect()
}

#[test]
fn in_a_naive_stall_the_pool_runs_dry_and_times_out_while_the_database_reports_no_error() {
    let _cpus = cpus_shared();
    let mut run = ShortRun::on_shared_server(&reference());
    run.args.rate = Some(200.0);
    run.args.pool_size = Some(4);
    run.args.pool.pool_timeout = Some(Duration::from_secs(1));
    run.args.expect = [
        "naive.max_pool_timeouts=0",
        "retry.max_pool_timeouts=0",
        "retry.max_pool_wait_p99_ms=60000",
        "naive.max_pool_wait_p99_ms=100",
    ]
    .map(String::from)
    .to_vec();
    let mode = Mode::Compare {
        strategies: vec!["naive".to_string(), "retry".to_string()],
    };
    let config = Config::new(Some(run.workload.to_str().unwrap()), mode, &run.args).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let report = runtime.block_on(stallbench::execute(&config)).unwrap();
    let (naive, retry) = (&report.strategies[0], &report.strategies[1]);
    let rows = pool_rows(naive);

    // The ALTER starts at 1.5 s and waits behind the report (1 s .. 5 s).
    let alter = &naive.attempts[0];
    assert!(alter.waited_ms > 2_500.0, "{alter:?}");
    let alter_second = alter.started_s.floor() as usize;
    // Within about a second of the ALTER, every connection is stuck behind it.
    assert!(
        rows[alter_second..=alter_second + 1]
            .iter()
            .any(|(_, _, _, pool)| pool.in_use == 4),
        "ALTER at {:.1} s: {rows:?}",
        alter.started_s
    );
    // Requests time out at the pool during the stall ...
    let stall = alter_second + 1..alter.ended_s.floor() as usize;
    let timed_out: u64 = rows[stall.clone()].iter().map(|row| row.3.timeouts).sum();
    assert!(timed_out > 0, "stall seconds {stall:?}: {rows:?}");
    let dry_at_s = naive.summary.pool_dry_at_s.unwrap();
    assert!(
        (alter.started_s - 0.5..alter.started_s + 2.0).contains(&dry_at_s),
        "the pool ran dry at {dry_at_s} s, the ALTER started at {} s",
        alter.started_s
    );
    // ... and every failure is the pool's: the database reported none.
    assert!(!naive.failures.is_empty(), "{rows:?}");
    for failure in &naive.failures {
        assert_eq!(failure.kind, FailureKind::PoolTimeout, "{failure:?}");
    }
    assert_eq!(naive.summary.failed, naive.summary.pool_timeouts);

    // Retry's short tries never hold the connections as long as the pool's timeout.
    assert_eq!(retry.summary.pool_timeouts, 0, "{:?}", pool_rows(retry));
    assert_eq!(retry.summary.failed, 0, "{:?}", pool_rows(retry));

    // The pool's expectations pass and fail as bounded.
    let results = stallbench::expect::evaluate(&config.expectations, &report);
    let verdicts: Vec<(String, String, Verdict)> = results
        .iter()
        .map(|result| {
            let expectation = &result.expectation;
            (
                expectation.strategy.clone(),
                expectation.bound.key(),
                result.verdict,
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("naive", "max_pool_timeouts", Verdict::Fail),
            ("retry", "max_pool_timeouts", Verdict::Pass),
            ("retry", "max_pool_wait_p99_ms", Verdict::Pass),
            ("naive", "max_pool_wait_p99_ms", Verdict::Fail),
        ]
        .map(|(strategy, key, verdict)| (strategy.to_string(), key.to_string(), verdict))
    );
    // The summary says what the application saw.
    let summary_md = std::fs::read_to_string(run.out.join("summary.md")).unwrap();
    assert!(
        summary_md.contains("naive: the pool ran dry at ")
            && summary_md.contains(
                "timed out waiting for a connection; the database itself returned no error"
            ),
        "{summary_md}"
    );
    assert!(run.out.join("pool.png").exists());
}

#[test]
fn a_terminated_pool_session_is_replaced_and_the_load_recovers() {
    let _cpus = cpus_shared();
    let mut run = ShortRun::on_shared_server(&reference());
    // Once the pool's 4 connections are open, wait a moment, then terminate one.
    let url = run.db_url().unwrap().to_string();
    let terminator = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let (client, connection) = url
                .parse::<tokio_postgres::Config>()
                .unwrap()
                .connect(tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let pool_sessions = "SELECT count(*) FROM pg_stat_activity \
                                 WHERE application_name LIKE 'stallbench-%-reader-pool' \
                                 AND datname = current_database()";
            let deadline = Instant::now() + Duration::from_secs(60);
            while client
                .query_one(pool_sessions, &[])
                .await
                .unwrap()
                .get::<_, i64>(0)
                < 4
            {
                assert!(
                    Instant::now() < deadline,
                    "the pool never opened 4 connections"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
            let terminated: i64 = client
                .query_one(
                    "SELECT count(*) FROM (SELECT pid FROM pg_stat_activity \
                     WHERE application_name LIKE 'stallbench-%-reader-pool' \
                     AND datname = current_database() LIMIT 1) one \
                     WHERE pg_terminate_backend(pid)",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            tokio::time::sleep(Duration::from_millis(500)).await;
            let open: i64 = client.query_one(pool_sessions, &[]).await.unwrap().get(0);
            (terminated, open)
        })
    });
    run.args.rate = Some(100.0);
    run.args.pool_size = Some(4);
    run.args.pool.pool_timeout = Some(Duration::from_secs(1));
    run.args.duration = Some(Duration::from_secs(6));
    let report = run.execute(Mode::LoadOnly);
    let (terminated, open_after) = terminator.join().unwrap();
    assert_eq!(terminated, 1, "the test terminated one pool session");

    let load = &report.strategies[0];
    let rows = pool_rows(load);
    // The pool opened a new session in its place (at most the 4 of its size).
    assert!((1..=4).contains(&open_after), "{open_after} open: {rows:?}");
    // The session was idle or busy: at most its one request failed, and only
    // as a lost connection.
    assert!(load.summary.failed <= 1, "{rows:?}");
    for failure in &load.failures {
        assert!(
            matches!(failure.kind.cell(), "57P01" | "connection_lost"),
            "{failure:?}"
        );
    }
    assert_eq!(load.summary.pool_timeouts, 0, "{rows:?}");
    // Every later second keeps serving at the rate (100 a second, wide margin).
    let later = &rows[4..];
    assert!(
        later
            .iter()
            .all(|(_, tps, failed, _)| *tps >= 50 && *failed == 0),
        "{rows:?}"
    );
}

#[test]
fn the_pool_connects_over_verified_tls_like_the_other_sessions() {
    require_postgres();
    let _cpus = cpus_shared();
    // TLS only, scram-sha-256, a user with a password: a plain connection is refused.
    let server = ManagedServer::start();
    let workload = write_workload(&server.client_dir(), "short.toml", &reference());
    let out = server.client_dir().join("pool-over-tls");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_stallbench"))
        .args(["run", workload.to_str().unwrap(), "--load-only", "--quiet"])
        .args([
            "--rate",
            "100",
            "--pool-size",
            "2",
            "--duration",
            "3s",
            "--db-url",
        ])
        .arg(server.url("sslmode=verify-full&sslrootcert=ca.pem"))
        .arg("--out")
        .arg(&out)
        .current_dir(server.client_dir())
        .env("HOME", server.client_dir())
        .env("PGPASSWORD", APP_PASSWORD)
        .env_remove("DATABASE_URL")
        .env_remove("PGSSLMODE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "a pool run over TLS failed: {stderr}"
    );
    let report = stallbench::export::read_report(&out).unwrap();
    let summary = &report.strategies[0].summary;
    assert!(summary.transactions > 150, "{summary:?}");
    assert_eq!(
        (summary.failed, summary.pool_timeouts),
        (0, 0),
        "{summary:?}"
    );
    assert!(summary.pool_wait_p99_ms.is_some(), "{summary:?}");
    server.stop_and_check();
}

#[test]
fn the_pool_is_deadpool_postgres_a_normal_dependency() {
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--edges",
            "normal",
            "--invert",
            "deadpool-postgres",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let tree = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cargo tree failed: {stderr}");
    assert!(tree.starts_with("deadpool-postgres v0."), "{tree}");
    assert!(tree.contains("stallbench v"), "{tree}");
}
