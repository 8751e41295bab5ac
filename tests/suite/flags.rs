//! A workload from flags alone (`-f`, `--ddl-file`, `--blocker`, no TOML)
//! reproduces the outage on a server with the user's own table, and the
//! `workload.toml` it leaves in the results folder reruns it to the same shape.

use std::path::Path;

use crate::common::managed::{APP_PASSWORD, ManagedServer, ORDERS_ROWS, stallbench_in};
use crate::common::*;
use assert_cmd::Command;
use predicates::prelude::*;

/// The binary, run in `dir` (where the scripts are) with no libpq variable but
/// the password.
fn stallbench(dir: &Path) -> Command {
    let mut command = stallbench_in(dir);
    command.env("PGPASSWORD", APP_PASSWORD);
    command
}

/// Naive stalls the readers; retry stalls them less.
fn assert_outage_shape(out: &Path) {
    let timeline = out.join("timeline.csv");
    let naive = zero_tps_seconds(&timeline, "naive");
    let retry = zero_tps_seconds(&timeline, "retry");
    assert!(
        naive >= 2,
        "{}: the naive ALTER should stall the readers: {naive} zero-tps seconds",
        out.display()
    );
    assert!(
        retry < naive,
        "{}: retry should stall less than naive: {retry} against {naive} zero-tps seconds",
        out.display()
    );
}

#[test]
fn a_workload_from_flags_reproduces_the_outage_and_its_workload_toml_reruns_it() {
    require_postgres();
    let _cpus = cpus_shared();
    let server = ManagedServer::start();
    let dir = server.client_dir();
    std::fs::write(
        dir.join("read.sql"),
        "\\set c random(1, 100)\nSELECT count(*), sum(total) FROM public.orders WHERE customer_id = :c;\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("write.sql"),
        "\\set id random(1, 1000)\nUPDATE public.orders SET total = total WHERE id = :id;\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("migrate.sql"),
        "-- add a column; then drop it, so the table ends as it began\n\
         ALTER TABLE public.orders ADD COLUMN note text;\n\
         ALTER TABLE public.orders DROP COLUMN note\n",
    )
    .unwrap();
    let url = server.url(&format!(
        "sslmode=verify-full&sslrootcert={}",
        server.ca_pem.display()
    ));

    stallbench(&dir)
        .args(["compare", "-f", "read.sql@9", "-f", "write.sql@1"])
        .args(["--ddl-file", "migrate.sql", "--ddl-at", "1.5s"])
        .args(["--blocker", "SELECT count(*) FROM public.orders"])
        .args([
            "--blocker-at",
            "1s",
            "--blocker-hold",
            "4s",
            "--duration",
            "6s",
        ])
        .args(["--strategies", "naive,retry", "--quiet", "--out", "first"])
        .args(["--db-url", &url])
        .assert()
        .success();
    assert_outage_shape(&dir.join("first"));
    let saved = std::fs::read_to_string(dir.join("first/workload.toml")).unwrap();
    assert!(!saved.contains(APP_PASSWORD), "{saved}");
    assert!(!saved.contains("127.0.0.1"), "{saved}");
    assert!(
        saved.contains("UPDATE public.orders SET total = total WHERE id = :id;"),
        "{saved}"
    );

    // On another machine the folder is all there is: no script files beside it.
    let moved = dir.join("elsewhere");
    std::fs::create_dir(&moved).unwrap();
    std::fs::write(moved.join("workload.toml"), &saved).unwrap();
    for script in ["read.sql", "write.sql", "migrate.sql"] {
        std::fs::remove_file(dir.join(script)).unwrap();
    }
    stallbench(&moved)
        .args(["compare", "workload.toml", "--quiet", "--out", "second"])
        .args(["--db-url", &url])
        .assert()
        .success();
    assert_outage_shape(&moved.join("second"));

    let columns = server.admin_sql(
        "shop",
        "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns \
         WHERE table_schema = 'public' AND table_name = 'orders'",
    );
    assert_eq!(columns.as_deref(), Some("id,customer_id,total"));
    let rows = server.admin_sql("shop", "SELECT count(*) FROM public.orders");
    assert_eq!(rows, Some(ORDERS_ROWS.to_string()));
    server.stop_and_check();
}

#[test]
fn flag_mistakes_are_bad_input_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("read.sql"), "SELECT 1;\n").unwrap();
    stallbench(dir.path())
        .args(["compare", "-f", "missing.sql@3", "--ddl", "SELECT 1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "-f missing.sql@3: cannot read file missing.sql",
        ));
    stallbench(dir.path())
        .args(["compare", "-f", "read.sql", "--ddl", "SELECT 1"])
        .args(["--ddl-file", "migrate.sql"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
    stallbench(dir.path())
        .args(["compare", "-f", "read.sql", "--ddl", "SELECT 1"])
        .args(["--no-blocker", "--blocker-hold", "3s"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
    stallbench(dir.path())
        .args(["compare", "-f", "read.sql", "--blocker-kind", "sleepy"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("report, writer, idle"));
    stallbench(dir.path())
        .args(["compare", "-f", "read.sql", "--ddl", "SELECT 1"])
        .args(["--sweep", "clients=1,2,1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "invalid value 'clients=1,2,1' for '--sweep <NAME=V1,V2,...>': \
             1 is listed twice; list each value once",
        ));
    stallbench(dir.path())
        .args(["compare", "-f", "read.sql", "--ddl", "SELECT 1"])
        .args(["--sweep", "retry.max_tries=1, 2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--sweep retry.max_tries=1, 2: retry.max_tries cannot be swept",
        ));
    stallbench(dir.path())
        .args(["compare", "-f", "read.sql"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "workload from flags: no [ddl] section",
        ));
}
