//! Connections sized to the run: the throwaway server makes room for 300
//! clients, and a real server without enough free slots (server-wide, or the
//! role's own limit) is refused before the load starts, with the numbers.
//! The 300 clients, whose sessions are counted, run alone (`alone::connections`).

use crate::common::managed::{APP_PASSWORD, ManagedServer};
use crate::common::*;
use assert_cmd::Command;

fn stallbench() -> Command {
    let mut command = Command::cargo_bin("stallbench").unwrap();
    for variable in ["DATABASE_URL", "PGPASSWORD", "PGSSLMODE"] {
        command.env_remove(variable);
    }
    command
}

#[test]
fn a_server_with_too_few_free_slots_is_refused_with_the_numbers() {
    require_postgres();
    let _cpus = cpus_shared();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_server(&runtime, 20);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let output = stallbench()
        .args(["run", "--load-only", "--clients", "40", "--quiet"])
        .args(["--db-url", &server.connection_string(), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    // The harness's readiness check may still be exiting (its backend leaves
    // pg_stat_activity a moment after the client closes), so "in use" is 0
    // or 1 and the free slots follow from it.
    let (free, in_use) = free_and_in_use(&stderr);
    assert!(in_use <= 1, "{stderr}");
    let expected = format!(
        "the run needs 43 connections (40 clients + observer + admin + lock), \
         the server has {free} free (max_connections 20, 3 reserved, {in_use} in use); \
         lower --clients or raise max_connections"
    );
    assert_eq!(free, 17 - in_use, "{stderr}");
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(!out.exists(), "refused before the results folder is made");
    stop_and_check(server);
}

/// The free slots and sessions in use that a refusal names.
fn free_and_in_use(stderr: &str) -> (i64, i64) {
    let number_before = |marker: &str| -> i64 {
        let end = stderr
            .find(marker)
            .unwrap_or_else(|| panic!("no {marker:?}: {stderr}"));
        let digits = stderr[..end].rsplit(' ').next().unwrap();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("{digits:?} before {marker:?}: {stderr}"))
    };
    (number_before(" free ("), number_before(" in use)"))
}

#[test]
fn a_role_connection_limit_is_refused_with_the_numbers() {
    require_postgres();
    let _cpus = cpus_shared();
    let server = ManagedServer::start();
    server.admin_sql("postgres", "ALTER ROLE app CONNECTION LIMIT 5");
    let url = server.url("sslmode=verify-full&sslrootcert=ca.pem");
    let output = stallbench()
        .current_dir(server.client_dir())
        .env("HOME", server.client_dir())
        .env("PGPASSWORD", APP_PASSWORD)
        .args(["run", "--load-only", "--clients", "8", "--quiet"])
        .args(["--db-url", &url, "--out", "results"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "the run needs 11 connections (8 clients + observer + admin + lock), the role app may \
             open 5 more (CONNECTION LIMIT 5, 0 in use); lower --clients or raise the limit \
             (ALTER ROLE app CONNECTION LIMIT 11)"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains(APP_PASSWORD));
}
