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
