//! The command line: bad input exits 2 with a message naming the input and the
//! fix, runtime failures exit 1, and no server or temp folder is left behind.

mod common;

use std::time::{Duration, Instant};

use common::*;
use predicates::prelude::*;

/// `compare` of the workload `text`, written as `file_name` into a temp
/// folder, refused as bad input (exit 2); the caller checks the message.
fn compare_refuses(file_name: &str, text: &str) -> assert_cmd::assert::Assert {
    let dir = tempfile::tempdir().unwrap();
    let path = write_workload(dir.path(), file_name, text);
    stallbench_command()
        .arg("compare")
        .arg(&path)
        .assert()
        .code(2)
}

fn temp_folders() -> std::collections::BTreeSet<std::path::PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("stallbench-"))
        })
        .collect()
}

#[test]
fn workloads_lists_the_bundled_ones() {
    stallbench_command()
        .arg("workloads")
        .assert()
        .success()
        .stdout(predicate::str::contains("add-column"));
}

#[test]
fn an_unknown_workload_is_bad_input() {
    stallbench_command()
        .args(["compare", "no-such-workload"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown workload \"no-such-workload\"",
        ))
        .stderr(predicate::str::contains("stallbench workloads"));
}

#[test]
fn malformed_toml_names_the_file_and_line() {
    compare_refuses("broken.toml", "name = \"x\"\nsetup = \n")
        .stderr(predicate::str::contains("broken.toml"))
        .stderr(predicate::str::contains("line 2"));
}

#[test]
fn an_unknown_key_is_named() {
    let text = replaced(SHORT_ADD_COLUMN, "[load]\n", "[load]\nthreads = 2\n");
    compare_refuses("extra.toml", &text)
        .stderr(predicate::str::contains("extra.toml"))
        .stderr(predicate::str::contains("threads"));
}

#[test]
fn a_duration_without_unit_says_how_to_write_it() {
    stallbench_command()
        .args(["compare", "--duration", "10"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--duration 10 has no unit; write \"10s\"",
        ));
    let text = replaced(SHORT_ADD_COLUMN, "at = \"3s\"", "at = \"3\"");
    compare_refuses("unitless.toml", &text).stderr(predicate::str::contains(
        "unitless.toml: [ddl] at = \"3\" has no unit; write \"3s\"",
    ));
}

#[test]
fn a_ddl_after_the_end_of_the_run_is_bad_input() {
    stallbench_command()
        .args(["compare", "--duration", "5s"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "[ddl] at = \"6s\" is not before the end of the run",
        ));
}

#[test]
fn zero_clients_is_bad_input() {
    stallbench_command()
        .args(["compare", "--clients", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--clients 0: need at least 1 client",
        ));
}

#[test]
fn a_bad_script_names_the_line() {
    // In the TOML text a backslash is written twice.
    let text = replaced(
        SHORT_ADD_COLUMN,
        r"\\set c random(1, 1000)",
        r"\\set c random(1, 1000)
\\shell echo hi",
    );
    compare_refuses("shell.toml", &text)
        .stderr(predicate::str::contains("shell.toml"))
        .stderr(predicate::str::contains("line 2"))
        .stderr(predicate::str::contains(r"\shell"));
}

#[test]
fn a_statement_the_server_rejects_names_the_script_line_and_the_reason() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let text = replaced(
        SHORT_ADD_COLUMN,
        "SELECT count(*), sum(total) FROM orders WHERE customer_id = :c;",
        "SELECT count(*) FROM no_such_table WHERE customer_id = :c;",
    );
    let path = write_workload(dir.path(), "missing-table.toml", &text);
    stallbench_quiet("run", &path, &dir.path().join("out"))
        .arg("--load-only")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 2"))
        .stderr(predicate::str::contains(
            "the server rejects this statement",
        ))
        .stderr(predicate::str::contains("no_such_table"))
        .stderr(predicate::str::contains("42P01"));
    assert_no_leftover_server();
}

#[test]
fn an_unknown_strategy_names_the_defined_ones() {
    stallbench_command()
        .args(["compare", "--strategies", "naive,yolo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown strategy \"yolo\""))
        .stderr(predicate::str::contains("naive, retry"));
}

#[test]
fn an_unreachable_db_url_fails_fast_without_the_password() {
    let started = Instant::now();
    stallbench_command()
        .args([
            "run",
            "--load-only",
            "--duration",
            "2s",
            "--db-url",
            "postgres://app:s3cret-pw@127.0.0.1:1/shop",
        ])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot connect to postgres://app:***@127.0.0.1:1/shop",
        ))
        .stderr(predicate::str::contains("s3cret-pw").not());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_pg_bin_without_a_server_is_a_bad_flag_naming_the_folder_and_what_was_looked_for() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    stallbench_command()
        .args(["run", "--load-only", "--duration", "2s"])
        .args(["--pg-bin", "/nonexistent/bin", "--out"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(
            "error: --pg-bin /nonexistent/bin: no PostgreSQL server there (looked for \
             /nonexistent/bin/initdb and /nonexistent/bin/postgres); point it at the bin folder \
             of a PostgreSQL installation (e.g. /usr/lib/postgresql/15/bin), or leave it out to \
             use an installed server or a downloaded one (--pg-version)\n",
        );
    assert!(!out.exists(), "a bad flag makes no results folder");
    // The variable is checked the same way.
    stallbench_command()
        .args(["run", "--load-only", "--duration", "2s"])
        .env("STALLBENCH_PG_BIN", dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(format!(
            "error: STALLBENCH_PG_BIN={}: no PostgreSQL server there",
            dir.path().display()
        )));
}

#[test]
fn a_failed_setup_leaves_no_server_and_no_temp_folder() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let before = temp_folders();
    let dir = tempfile::tempdir().unwrap();
    let text = replaced(
        SHORT_ADD_COLUMN,
        "ANALYZE orders;",
        "ANALYZE no_such_table;",
    );
    let path = write_workload(dir.path(), "badsetup.toml", &text);
    stallbench_quiet("compare", &path, &dir.path().join("out"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("setup SQL failed"))
        .stderr(predicate::str::contains("no_such_table"));
    assert!(
        dir.path().join("out/server.log").is_file(),
        "the server log is kept on failure"
    );
    assert_no_leftover_server();
    let after = temp_folders();
    let new: Vec<_> = after.difference(&before).collect();
    assert!(new.is_empty(), "temp folders left behind: {new:?}");
}

#[test]
fn ctrl_c_and_kill_leave_no_server() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("stallbench"))
            .args([
                "run",
                "--load-only",
                "--duration",
                "60s",
                "--quiet",
                "--out",
            ])
            .arg(dir.path().join(format!("out-{signal}")))
            .env_remove("DATABASE_URL")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Wait until the server is up and the load runs.
        let deadline = Instant::now() + Duration::from_secs(30);
        while harness_postgres_processes().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(3));
        assert!(
            !harness_postgres_processes().is_empty(),
            "the server should be running"
        );
        // SAFETY: plain kill(2) on our child.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        let status = child.wait().unwrap();
        if signal == libc::SIGINT {
            assert_eq!(
                status.code(),
                Some(1),
                "Ctrl-C is a runtime failure (exit 1)"
            );
        }
        assert_no_leftover_server();
    }
}

#[test]
fn a_blocker_longer_than_the_run_is_bad_input_and_leaves_no_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    stallbench_command()
        .args(["compare", "--duration", "10s", "--out"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "[blocker] starts at 4 s and holds 12 s, so it ends at 16 s, after the run's 10 s; \
             use --duration 17s or more, or shorten [blocker] hold",
        ));
    assert!(
        !out.exists(),
        "a run refused before it starts makes no folder"
    );
}

#[test]
fn listed_strategies_are_trimmed_and_a_duplicate_is_refused() {
    // Accepted: the run gets as far as checking the server binaries' folder.
    stallbench_command()
        .args(["compare", "--strategies", "naive, retry"])
        .args(["--pg-bin", "/nonexistent/bin"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--pg-bin /nonexistent/bin: no PostgreSQL server there",
        ));
    stallbench_command()
        .args(["compare", "--strategies", "naive,naive"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--strategies naive,naive: naive is listed twice; list each strategy once",
        ));
}

#[test]
fn a_toml_error_is_one_line_with_file_line_key_and_hint() {
    // One backslash where TOML's """ string needs two.
    let text = replaced(SHORT_ADD_COLUMN, r"\\set", r"\set");
    let assert = compare_refuses("backslash.toml", &text);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("backslash.toml: line 26, key load.scripts.sql: "),
        "{stderr}"
    );
    assert!(stderr.contains(r"write \\set"), "{stderr}");
}

#[test]
fn an_earlier_run_in_out_is_refused_and_force_replaces_it() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let run = short_add_column();
    std::fs::create_dir(&run.out).unwrap();
    for name in ["timeline.csv", "latency-retry.hgrm", "notes.txt"] {
        std::fs::write(run.out.join(name), "earlier").unwrap();
    }
    let load_only = || {
        let mut command = stallbench_quiet("run", &run.workload, &run.out);
        command.args(["--load-only", "--duration", "2s"]);
        command
    };
    load_only()
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "error: --out {}: holds files of an earlier run (latency-retry.hgrm, timeline.csv); \
             choose another folder or add --force to replace them",
            run.out.display()
        )));
    assert!(run.out.join("latency-retry.hgrm").is_file());

    load_only().arg("--force").assert().code(0);
    assert!(!run.out.join("latency-retry.hgrm").exists());
    assert!(run.out.join("latency-load.hgrm").is_file());
    let timeline = std::fs::read_to_string(run.out.join("timeline.csv")).unwrap();
    assert!(timeline.starts_with("strategy,second,"), "{timeline}");
    let notes = std::fs::read_to_string(run.out.join("notes.txt")).unwrap();
    assert_eq!(notes, "earlier", "files of others are kept");
    assert_no_leftover_server();
}
