//! Lost connections are an outage to measure, not the end of a worker: readers
//! terminated with `pg_terminate_backend` come back, and a real server
//! restarted with `pg_ctl restart -m fast` during a `--db-url` run shows as a
//! gap and a recovery in the timeline, with the run's schema still dropped.

use std::time::Duration;

use crate::common::*;
use stallbench::config::Mode;
use stallbench::metrics::StrategyReport;

/// Waits until the four readers of a run are connected (the clock starts a
/// moment later), waits `after`, then runs `sql` once and returns its count.
fn when_readers_run(
    url: String,
    after: Duration,
    sql: &'static str,
) -> std::thread::JoinHandle<i64> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let client = connect(&url).await;
            wait_for_readers(&client, 4).await;
            tokio::time::sleep(after).await;
            client.query_one(sql, &[]).await.unwrap().get(0)
        })
    })
}

/// The per-second figures of `report` for failure messages: (tps, conn_lost, reconnects).
fn per_second(report: &StrategyReport) -> Vec<(u64, u64, u64)> {
    report
        .seconds
        .iter()
        .map(|row| (row.tps, row.conn_lost, row.reconnects))
        .collect()
}

#[test]
fn terminated_readers_reconnect_and_the_load_goes_on() {
    let _cpus = cpus_shared();
    let mut run = ShortRun::on_shared_server(&reference());
    let terminated = when_readers_run(
        run.db_url().unwrap().to_string(),
        Duration::from_secs(2),
        // The readers of this test's database first, then terminated: in one
        // WHERE the planner may call pg_terminate_backend on the activity
        // function's rows before the join to pg_database filters them by
        // database, ending other tests' readers on the shared server.
        "WITH own AS MATERIALIZED (SELECT pid FROM pg_stat_activity \
         WHERE application_name LIKE 'stallbench-%-reader-%' AND datname = current_database()) \
         SELECT count(*) FROM own WHERE pg_terminate_backend(pid)",
    );
    run.args.duration = Some(Duration::from_secs(5));
    let report = run.execute(Mode::LoadOnly);
    assert_eq!(
        terminated.join().unwrap(),
        4,
        "the test terminated 4 readers"
    );

    let load = &report.strategies[0];
    let seconds = per_second(load);
    let conn_lost: u64 = load.seconds.iter().map(|row| row.conn_lost).sum();
    let reconnects: u64 = load.seconds.iter().map(|row| row.reconnects).sum();
    assert_eq!((conn_lost, reconnects), (4, 4), "{seconds:?}");
    let first_loss = load
        .seconds
        .iter()
        .position(|row| row.conn_lost > 0)
        .unwrap();
    assert!(
        (1..=4).contains(&first_loss),
        "lost at about 2 s: {seconds:?}"
    );
    assert!(
        load.seconds[first_loss + 1..].iter().all(|row| row.tps > 0),
        "the load goes on after the readers came back: {seconds:?}"
    );
    // Each terminated reader failed the one transaction it had in flight.
    let summary = &load.summary;
    assert_eq!(summary.failed, 4, "{summary:?}");
    assert_eq!(
        (summary.conn_lost, summary.reconnects),
        (4, 4),
        "{summary:?}"
    );
    assert_eq!(summary.lost_connections, 4, "{summary:?}");
    assert!(
        summary.max_disconnected_ms > 0.0 && summary.max_disconnected_ms < 2_000.0,
        "{summary:?}"
    );
    // The files say the same, in timeline.csv's two columns before the pool's.
    let timeline = std::fs::read_to_string(run.out.join("timeline.csv")).unwrap();
    assert!(
        timeline
            .lines()
            .next()
            .unwrap()
            .contains(",conn_lost,reconnects,pool_wait_p99_ms,"),
        "{timeline}"
    );
    let read = stallbench::export::read_report(&run.out).unwrap();
    assert_eq!(per_second(&read.strategies[0]), seconds);
    assert_eq!(read.strategies[0].summary.reconnects, 4);
}

#[test]
fn a_real_server_restarted_mid_run_shows_a_gap_and_a_recovery() {
    require_postgres();
    let _cpus = cpus_shared();
    let server = OperatorServer::start();
    let url = server.connection_string();
    let readers_up = when_readers_run(url.clone(), Duration::from_secs(2), "SELECT 1::int8");
    // The workload's files; the run goes to the operator's server.
    let run = ShortRun::throwaway(&small_reference());
    let harness = load_only_process(&run.workload, Some(&url), "7s", &run.out)
        .spawn()
        .unwrap();
    readers_up.join().unwrap();
    server.pg_ctl(&["restart", "-m", "fast"]);
    let output = harness.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");

    let report = stallbench::export::read_report(&run.out).unwrap();
    let load = &report.strategies[0];
    let seconds = per_second(load);
    assert_eq!(seconds.len(), 7, "{seconds:?}");
    assert!(
        load.seconds
            .iter()
            .any(|row| row.tps == 0 || row.conn_lost > 0),
        "the restart shows as a gap: {seconds:?}"
    );
    assert!(
        load.seconds[5..].iter().all(|row| row.tps > 0),
        "the load recovered: {seconds:?}"
    );
    let summary = &load.summary;
    assert!(
        summary.conn_lost >= 4,
        "every reader was cut off: {summary:?}"
    );
    assert_eq!(summary.reconnects, summary.conn_lost, "{summary:?}");
    assert!(summary.failed >= summary.conn_lost, "{summary:?}");
    assert!(summary.max_disconnected_ms > 0.0, "{summary:?}");

    // The run's own schema is dropped at the end, on the restarted server.
    let schemas: i64 = tokio::runtime::Runtime::new().unwrap().block_on(async {
        connect(&url)
            .await
            .query_one(
                "SELECT count(*) FROM pg_namespace WHERE nspname = 'stallbench'",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    });
    assert_eq!(schemas, 0, "the stallbench schema is left: {stderr}");
}
