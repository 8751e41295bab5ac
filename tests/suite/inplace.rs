//! `--in-place` against a server set up like a managed one (TLS only, a
//! non-superuser `app` owning `public.orders`): the naive ALTER on the user's
//! own table stalls the load as in the reference experiment while retry does not, and the table
//! has exactly its columns and rows afterwards (each step is rolled back); a
//! step that cannot be rolled back, or `--apply` without reset SQL, is refused
//! before anything runs; `--apply` commits.

use std::path::Path;

use crate::common::managed::{APP_PASSWORD, ManagedServer, ORDERS_ROWS};
use crate::common::workload::{READ_ORDER, ddl, load, plain, script};
use crate::common::*;
use assert_cmd::Command;
use predicates::prelude::*;
use stallbench::workload::WorkloadFile;

/// The [`reference`] outage on the user's `orders` (customer ids 1 to 100):
/// its load, blocker, DDL and strategies, with no setup (`--in-place` runs
/// none) and no reset.
fn orders_in_place() -> WorkloadFile {
    let mut workload = reference();
    workload.name = "orders-in-place".into();
    workload.description = "the reference outage on the user's own orders table".into();
    workload.setup = String::new();
    workload.reset = String::new();
    workload.load.scripts = vec![script(
        "read-order",
        &READ_ORDER.replace("random(1, 1000)", "random(1, 100)"),
    )];
    workload
}

/// A 2 s run of 2 readers on the user's orders, no blocker, one step
/// `ddl_sql` at 1 s run by `naive`.
fn one_step_in_place(name: &str, description: &str, ddl_sql: &str) -> WorkloadFile {
    WorkloadFile {
        name: name.into(),
        description: description.into(),
        setup: String::new(),
        reset: String::new(),
        load: load(
            2,
            "2s",
            vec![script("read-order", "SELECT count(*) FROM orders;")],
        ),
        blocker: None,
        ddl: Some(ddl("1s", ddl_sql)),
        strategies: vec![plain("naive")],
        expect: Default::default(),
        sweep: None,
        replica: None,
        variants: Vec::new(),
        invariants: Vec::new(),
    }
}

/// The binary in the server's client folder (where `ca.pem` is), with an
/// environment of its own: PATH, a HOME there, and the password.
fn stallbench(server: &ManagedServer) -> Command {
    let mut command = Command::cargo_bin("stallbench").unwrap();
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", server.client_dir())
        .env("PGPASSWORD", APP_PASSWORD)
        .current_dir(server.client_dir());
    command
}

fn verified_url(server: &ManagedServer) -> String {
    server.url("sslmode=verify-full&sslrootcert=ca.pem")
}

/// The columns of `public.orders`, in order, comma separated.
fn orders_columns(server: &ManagedServer) -> String {
    server
        .admin_sql(
            "shop",
            "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) \
             FROM information_schema.columns \
             WHERE table_schema = 'public' AND table_name = 'orders'",
        )
        .unwrap()
}

/// The outcome of the last DDL attempt of `strategy` in a ddl_attempts.csv.
fn last_outcome(attempts: &Path, strategy: &str) -> String {
    let mut reader = csv::Reader::from_path(attempts).unwrap();
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (strategy_column, outcome_column) = (column("strategy"), column("outcome"));
    reader
        .records()
        .map(Result::unwrap)
        .filter(|row| &row[strategy_column] == strategy)
        .last()
        .map(|row| row[outcome_column].to_string())
        .unwrap_or_default()
}

#[test]
fn in_place_naive_stalls_the_users_table_retry_does_not_the_table_is_unchanged_and_apply_commits() {
    require_postgres();
    let _cpus = cpus_shared();
    let server = ManagedServer::start();
    let workload = write_workload(&server.client_dir(), "orders.toml", &orders_in_place());
    let out = server.client_dir().join("in-place");
    let columns_before = orders_columns(&server);
    assert_eq!(columns_before, "id,customer_id,total");

    let output = stallbench(&server)
        .arg("compare")
        .arg(&workload)
        .args(["--in-place", "--quiet", "--db-url"])
        .arg(verified_url(&server))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "compare --in-place failed: {stderr}"
    );

    let naive_zero = zero_tps_seconds(&out.join("timeline.csv"), "naive");
    assert!(
        naive_zero >= 2,
        "the naive ALTER on the user's orders should stall the readers: {naive_zero} zero-tps seconds"
    );
    let retry_zero = zero_tps_seconds(&out.join("timeline.csv"), "retry");
    assert_eq!(retry_zero, 0, "retry should keep the readers going");
    // Both ALTERs succeeded: naive's column was rolled back before retry added it again.
    let attempts = out.join("ddl_attempts.csv");
    assert_eq!(last_outcome(&attempts, "naive"), "ok");
    assert_eq!(last_outcome(&attempts, "retry"), "ok");

    assert_eq!(
        orders_columns(&server),
        columns_before,
        "the DDL was rolled back"
    );
    let rows = server.admin_sql("shop", "SELECT count(*) FROM public.orders");
    assert_eq!(rows, Some(ORDERS_ROWS.to_string()));
    let schemas = server.admin_sql(
        "shop",
        "SELECT count(*) FROM pg_namespace WHERE nspname = 'stallbench'",
    );
    assert_eq!(schemas.as_deref(), Some("0"), "no schema of the run's own");

    // On the same server, which the run left as it found it (one server
    // start, about as long as the run, instead of two): what cannot be
    // rolled back is refused before anything runs, and --apply commits.
    let dir = server.client_dir();
    let url = verified_url(&server);

    // The only step cannot run in a transaction block.
    let concurrent_index = one_step_in_place(
        "orders-concurrent-index",
        "a CONCURRENTLY build on the user's orders",
        "CREATE INDEX CONCURRENTLY orders_total_idx ON orders (total)",
    );
    let concurrent = write_workload(&dir, "concurrent.toml", &concurrent_index);
    let refused_out = dir.join("refused");
    stallbench(&server)
        .arg("compare")
        .arg(&concurrent)
        .args(["--in-place", "--quiet", "--db-url", &url, "--out"])
        .arg(&refused_out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "DDL step \"CREATE INDEX CONCURRENTLY orders_total_idx ON orders (total)\" \
             cannot run inside a transaction block",
        ))
        .stderr(predicate::str::contains("add --apply"));
    assert!(!refused_out.join("timeline.csv").exists(), "nothing ran");
    let indexes = server.admin_sql(
        "shop",
        "SELECT count(*) FROM pg_indexes WHERE tablename = 'orders'",
    );
    assert_eq!(indexes.as_deref(), Some("1"), "only the primary key");

    let orders = write_workload(&dir, "orders.toml", &orders_in_place());
    stallbench(&server)
        .arg("compare")
        .arg(&orders)
        .args([
            "--in-place",
            "--apply",
            "--quiet",
            "--db-url",
            &url,
            "--out",
        ])
        .arg(dir.join("no-reset"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("has no reset SQL"));

    stallbench(&server)
        .arg("compare")
        .arg(&orders)
        .args(["--in-place", "--quiet", "--out"])
        .arg(dir.join("throwaway"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "the throwaway server has no tables of yours",
        ));

    let add_applied_column = one_step_in_place(
        "orders-apply",
        "an ADD COLUMN that --apply commits",
        "ALTER TABLE orders ADD COLUMN applied_note text",
    );
    let apply = write_workload(&dir, "apply.toml", &add_applied_column);
    stallbench(&server)
        .arg("run")
        .arg(&apply)
        .args(["--strategy", "naive", "--in-place", "--apply", "--quiet"])
        .args(["--db-url", &url, "--out"])
        .arg(dir.join("applied"))
        .assert()
        .success();
    assert_eq!(orders_columns(&server), "id,customer_id,total,applied_note");
    server.stop_and_check();
}
