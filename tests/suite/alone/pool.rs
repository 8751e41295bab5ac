//! Below capacity a request hardly waits for a pool connection (the rest of
//! the topic and its helpers: `crate::pool`).

use std::time::Duration;

use crate::common::*;
use crate::pool::pool_rows;
use stallbench::config::Mode;

#[test]
fn below_capacity_a_request_hardly_waits_for_a_connection() {
    // Quiet: a connection's wait is bounded in milliseconds.
    let _cpus = cpus_quiet();
    let mut run = ShortRun::on_shared_server(&reference());
    run.args.rate = Some(100.0);
    run.args.pool_size = Some(4);
    run.args.pool.pool_timeout = Some(Duration::from_secs(1));
    run.args.duration = Some(Duration::from_secs(4));
    let report = run.execute(Mode::LoadOnly);
    let load = &report.strategies[0];
    let rows = pool_rows(load);
    let summary = &load.summary;

    // 400 scheduled; a Poisson count varies by about 5%, the bound is 20%.
    assert!(
        (320..=480).contains(&summary.transactions),
        "{} transactions: {rows:?}",
        summary.transactions
    );
    assert_eq!(summary.failed, 0, "{rows:?}");
    assert_eq!(summary.pool_timeouts, 0, "{rows:?}");
    // A free connection is handed out in microseconds; a few ms of margin for a busy machine.
    let wait_p99_ms = summary.pool_wait_p99_ms.unwrap();
    assert!(
        wait_p99_ms < 5.0,
        "pool wait p99 {wait_p99_ms} ms: {rows:?}"
    );
    assert!(summary.db_p99_ms.unwrap() > 0.0, "{summary:?}");
    assert!(summary.pool_in_use_max.unwrap() <= 4, "{summary:?}");

    // The interval log holds the three histograms of each second, tagged.
    let hlog = std::fs::read_to_string(run.out.join("latency-load.hlog")).unwrap();
    for tag in ["Tag=total,", "Tag=pool_wait,", "Tag=db,"] {
        assert_eq!(hlog.matches(tag).count(), 4, "{tag}\n{hlog}");
    }
    // timeline.csv has the pool's columns before the replica's, and they read back.
    let timeline = std::fs::read_to_string(run.out.join("timeline.csv")).unwrap();
    assert!(
        timeline.lines().next().unwrap().ends_with(
            ",pool_wait_p99_ms,db_p99_ms,pool_timeouts,pool_rejected,in_flight,pool_in_use,\
             replica_lag_s,replica_lag_bytes,replica_replay_waiting,replica_lock_waiters,\
             replica_cancelled,replica_tps,replica_failed,replica_lat_mean_ms,replica_lat_p50_ms,\
             replica_lat_p99_ms,replica_lat_max_ms,repeat,retried,retries,failed_serialization,\
             failed_deadlock,failed_lock_timeout"
        ),
        "{timeline}"
    );
    let read = stallbench::export::read_report(&run.out).unwrap();
    assert_eq!(pool_rows(&read.strategies[0]), rows);
}
