//! A session outside the harness that holds a lock shows up as `external`
//! at the root of the chain (on a staging server, the real culprit).

use std::time::Duration;

use crate::common::workload::{ADD_NOTE, READ_ORDER, ddl, load, plain, script, small_orders};
use crate::common::*;
use stallbench::workload::WorkloadFile;

/// A small table, no blocker of its own: the blocker is a session the test
/// opens. The DDL starts at 1 s of a 4 s run.
fn no_blocker() -> WorkloadFile {
    let mut workload = reference();
    workload.name = "external-blocker".into();
    workload.setup = small_orders(5000);
    workload.load = load(2, "4s", vec![script("read-order", READ_ORDER)]);
    workload.blocker = None;
    workload.ddl = Some(ddl("1s", ADD_NOTE));
    workload.strategies = vec![plain("naive")];
    workload
}

#[test]
fn a_session_outside_the_harness_is_named_external_at_the_root() {
    let _cpus = cpus_shared();
    let run = ShortRun::on_shared_server(&no_blocker());

    // The outside session: waits until the harness's readers are connected (the
    // run is about to start; reset is done), then reads the table in a
    // transaction it keeps open for 3 s, like a forgotten report.
    let outside_url = run.db_url().unwrap().to_string();
    let outside = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let client = connect(&outside_url).await;
            wait_for_readers(&client, 1).await;
            let pid: i32 = client
                .query_one("SELECT pg_backend_pid()", &[])
                .await
                .unwrap()
                .get(0);
            client
                .batch_execute("BEGIN; SELECT count(*) FROM stallbench.orders")
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_secs(3)).await;
            client.batch_execute("COMMIT").await.unwrap();
            pid as u32
        })
    });

    let report = run.execute(compare_all());
    let outside_pid = outside.join().unwrap();
    let external = format!("external:{outside_pid}");

    let naive = &report.strategies[0];
    let links = stallbench::metrics::locks::chain(&naive.locks.worst);
    assert!(
        !links.is_empty(),
        "someone waited: {:#?}",
        naive.locks.samples
    );
    assert_eq!(
        links[0].roles,
        std::slice::from_ref(&external),
        "the outside session is the root: {links:#?}"
    );
    assert!(links[0].holds);
    assert_eq!(links[0].lock_mode, "AccessShareLock");
    let ddl = naive.locks.worst.iter().find(|s| s.role == "ddl").unwrap();
    assert_eq!(ddl.blocked_by, [external]);
    // On --db-url the harness has no server log of its own: it says nothing, and does not fail.
    assert!(naive.locks.server_log.is_empty());
}

/// The lock observer's sample reads `pg_locks` (which takes every
/// lock-manager lock the load needs) only while a session waits for a lock:
/// a lock held with no one waiting leaves the scan unexecuted, and one
/// waiter runs it.
#[test]
fn the_observer_reads_pg_locks_only_while_a_session_waits() {
    let _cpus = cpus_shared();
    let database = shared_server().empty_database();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let observer = connect(&database.url).await;
        let holder = connect(&database.url).await;
        let waiter = connect(&database.url).await;
        let version: i32 = observer
            .query_one("SELECT current_setting('server_version_num')::int", &[])
            .await
            .unwrap()
            .get(0);
        let explain = format!(
            "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {}",
            stallbench::engine::postgres::scenario::observer::sample_sql(version as u32)
        );
        let lock_scan = async || -> String {
            let plan: Vec<String> = observer
                .query(&explain, &[])
                .await
                .unwrap()
                .iter()
                .map(|row| row.get(0))
                .collect();
            plan.iter()
                .find(|line| line.contains("Function Scan on pg_lock_status"))
                .unwrap_or_else(|| panic!("no scan of pg_locks in the plan:\n{}", plan.join("\n")))
                .clone()
        };
        holder
            .batch_execute("CREATE TABLE gate (id int)")
            .await
            .unwrap();
        holder
            .batch_execute("BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();
        let quiet = lock_scan().await;
        assert!(quiet.contains("never executed"), "{quiet}");

        let waiting = tokio::spawn(async move { waiter.query("SELECT * FROM gate", &[]).await });
        let mut waits = 0;
        for _ in 0..200 {
            waits = observer
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                    &[],
                )
                .await
                .unwrap()
                .get::<_, i64>(0);
            if waits > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(waits, 1, "the waiter never queued for the lock");
        let busy = lock_scan().await;
        assert!(
            !busy.contains("never executed") && busy.contains("loops=1"),
            "{busy}"
        );
        holder.batch_execute("COMMIT").await.unwrap();
        waiting.await.unwrap().unwrap();
    });
}
