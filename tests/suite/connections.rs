//! Connections sized to the run: the throwaway server makes room for 300
//! clients, and a real server without enough free slots (server-wide, or the
//! role's own limit) is refused before the load starts, with the numbers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::managed::{APP_PASSWORD, ManagedServer};
use crate::common::*;
use assert_cmd::Command;
use predicates::prelude::*;
use stallbench::config::Mode;

fn stallbench() -> Command {
    let mut command = Command::cargo_bin("stallbench").unwrap();
    for variable in ["DATABASE_URL", "PGPASSWORD", "PGSSLMODE"] {
        command.env_remove(variable);
    }
    command
}

/// Client sessions on the unix socket of this test process's own servers now:
/// children of a postmaster the test process started whose title says `[local]`.
fn own_client_sessions() -> usize {
    children_of(std::process::id())
        .into_iter()
        .flat_map(children_of)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains("[local]"))
        })
        .count()
}

#[test]
fn three_hundred_clients_run_on_the_throwaway_server() {
    // Alone: the sessions counted are those of the one server this process runs.
    let _cpus = cpus_alone();
    let mut run = ShortRun::throwaway(&small_reference());
    run.args.clients = Some(300);
    run.args.duration = Some("3s".into());

    // Counts the server's client sessions while the run goes on, at its busiest.
    let running = Arc::new(AtomicBool::new(true));
    let sampler = {
        let running = running.clone();
        std::thread::spawn(move || {
            let mut most = 0;
            while running.load(Ordering::Relaxed) {
                most = most.max(own_client_sessions());
                std::thread::sleep(Duration::from_millis(100));
            }
            most
        })
    };
    let report = run.execute(Mode::LoadOnly);
    running.store(false, Ordering::Relaxed);
    let most_sessions = sampler.join().unwrap();

    let load = &report.strategies[0];
    // 300 workers, the observer and the harness's admin session at once.
    assert!(
        most_sessions >= 301,
        "the server saw at most {most_sessions} client sessions"
    );
    assert_eq!(load.summary.lost_connections, 0, "{:?}", load.summary);
    assert_eq!(load.summary.failed, 0, "{:?}", load.summary);
    assert_eq!(load.seconds.len(), 3);
    assert!(
        load.seconds.iter().all(|second| second.tps > 0),
        "tps per second: {:?}",
        load.seconds.iter().map(|s| s.tps).collect::<Vec<_>>()
    );
    // Every client connected and ran: far more transactions than clients.
    assert!(load.summary.transactions >= 300, "{:?}", load.summary);
    assert_run_stopped_its_server(&run.out);
}

#[test]
fn a_server_with_too_few_free_slots_is_refused_with_the_numbers() {
    require_postgres();
    let _cpus = cpus_shared();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_server(&runtime, 20);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    stallbench()
        .args(["run", "--load-only", "--clients", "40", "--quiet"])
        .args(["--db-url", &server.connection_string(), "--out"])
        .arg(&out)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "the run needs 43 connections (40 clients + observer + admin + lock), \
             the server has 17 free (max_connections 20, 3 reserved, 0 in use); \
             lower --clients or raise max_connections",
        ));
    assert!(!out.exists(), "refused before the results folder is made");
    stop_and_check(server);
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
