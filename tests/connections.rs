//! Connections sized to the run: the throwaway server makes room for 300
//! clients, and a real server without enough free slots (server-wide, or the
//! role's own limit) is refused before the load starts, with the numbers.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use assert_cmd::Command;
use common::managed::{APP_PASSWORD, ManagedServer};
use common::*;
use predicates::prelude::*;
use stallbench::config::Mode;

fn stallbench() -> Command {
    let mut command = Command::cargo_bin("stallbench").unwrap();
    for variable in ["DATABASE_URL", "PGPASSWORD", "PGSSLMODE"] {
        command.env_remove(variable);
    }
    command
}

/// The parent pid of process `pid`, from `/proc/PID/stat` (the field after the name).
fn parent_of(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(1).map(str::to_string)
}

/// Client sessions on the unix socket of the harness's servers now: children
/// of a postmaster in a `stallbench-` folder whose title says `[local]`.
fn harness_client_sessions() -> usize {
    let mut postmasters = Vec::new();
    let mut backends = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("postgres -D") && cmdline.contains("/stallbench-") {
            postmasters.push(pid);
        } else if cmdline.starts_with("postgres: ") && cmdline.contains("[local]") {
            backends.push(pid);
        }
    }
    backends
        .iter()
        .filter(|pid| parent_of(pid).is_some_and(|parent| postmasters.contains(&parent)))
        .count()
}

#[test]
fn three_hundred_clients_run_on_the_throwaway_server() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let mut run = short_add_column();
    run.args.clients = Some(300);
    run.args.duration = Some("3s".into());

    // Counts the server's client sessions while the run goes on, at its busiest.
    let running = Arc::new(AtomicBool::new(true));
    let sampler = {
        let running = running.clone();
        std::thread::spawn(move || {
            let mut most = 0;
            while running.load(Ordering::Relaxed) {
                most = most.max(harness_client_sessions());
                std::thread::sleep(Duration::from_millis(100));
            }
            most
        })
    };
    let report = run_in_process(&run.workload, Mode::LoadOnly, &run.args);
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
    assert_no_leftover_server();
}

#[test]
fn a_server_with_too_few_free_slots_is_refused_with_the_numbers() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
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
    drop(server);
    assert_no_leftover_server();
}

#[test]
fn a_role_connection_limit_is_refused_with_the_numbers() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
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
