//! A session outside the harness that holds a lock shows up as `external`
//! at the root of the chain (on a staging server, the real culprit).

mod common;

use std::time::Duration;

use common::*;

/// A small table, no blocker of its own: the blocker is a session the test opens.
const NO_BLOCKER: &str = r#"
name = "external-blocker"
setup = """
CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id int NOT NULL, total numeric(10,2) NOT NULL);
INSERT INTO orders (customer_id, total) SELECT 1 + g % 100, g % 50 FROM generate_series(1, 5000) g;
CREATE INDEX ON orders (customer_id);
ANALYZE orders;
"""
reset = "ALTER TABLE orders DROP COLUMN IF EXISTS note;"

[load]
clients = 2
duration = "6s"

[[load.scripts]]
sql = """
\\set c random(1, 100)
SELECT count(*) FROM orders WHERE customer_id = :c;
"""

[ddl]
at = "2s"
sql = "ALTER TABLE orders ADD COLUMN note text"

[[strategies]]
name = "naive"
kind = "plain"
"#;

#[test]
fn a_session_outside_the_harness_is_named_external_at_the_root() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_throwaway_server(&runtime);
    let url = server.connection_string();

    // The outside session: waits until the harness's readers are connected (the
    // run is about to start; reset is done), then reads the table in a
    // transaction it keeps open for 5 s, like a forgotten report.
    let outside_url = url.clone();
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
            tokio::time::sleep(Duration::from_secs(5)).await;
            client.batch_execute("COMMIT").await.unwrap();
            pid as u32
        })
    });

    let mut run = short_run("external.toml", NO_BLOCKER);
    run.args.db_url = Some(url);
    let report = run_in_process(&run.workload, compare_all(), &run.args);
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
    drop(server);
    assert_no_leftover_server();
}
