//! The command line: bad input exits 2 with a message naming the input and the
//! fix, runtime failures exit 1, and no server or temp folder is left behind.

use std::time::{Duration, Instant};

use crate::common::*;
use predicates::prelude::*;

/// `compare` of the workload `text`, written as `file_name` into a temp
/// folder, refused as bad input (exit 2); the caller checks the message.
fn compare_refuses(file_name: &str, text: &str) -> assert_cmd::assert::Assert {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file_name);
    std::fs::write(&path, text).unwrap();
    stallbench_command()
        .arg("compare")
        .arg(&path)
        .assert()
        .code(2)
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
    let mut file = toml::Value::try_from(reference()).unwrap();
    file["load"]
        .as_table_mut()
        .unwrap()
        .insert("threads".into(), 2.into());
    compare_refuses("extra.toml", &toml::to_string(&file).unwrap())
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
    let mut workload = reference();
    workload.ddl.as_mut().unwrap().at = "3".into();
    compare_refuses("unitless.toml", &to_toml(&workload)).stderr(predicate::str::contains(
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
    let mut workload = reference();
    workload.load.scripts[0].sql = Some("\\set c random(1, 1000)\n\\shell echo hi\n".into());
    compare_refuses("shell.toml", &to_toml(&workload))
        .stderr(predicate::str::contains("shell.toml"))
        .stderr(predicate::str::contains("line 2"))
        .stderr(predicate::str::contains(r"\shell"));
}

#[test]
fn a_statement_the_server_rejects_names_the_script_line_and_the_reason() {
    let _cpus = cpus_shared();
    let mut workload = small_reference();
    workload.load.scripts = vec![workload::script(
        "read-order",
        "\\set c random(1, 1000)\nSELECT count(*) FROM no_such_table WHERE customer_id = :c;\n",
    )];
    let run = ShortRun::throwaway(&workload);
    let tmpdir = private_tmpdir();
    run.command("run")
        .arg("--load-only")
        .env("TMPDIR", tmpdir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 2"))
        .stderr(predicate::str::contains(
            "the server rejects this statement",
        ))
        .stderr(predicate::str::contains("no_such_table"))
        .stderr(predicate::str::contains("42P01"));
    assert_nothing_left_in(tmpdir.path());
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
            "cannot connect to postgres://app:***@127.0.0.1:1/shop as user app \
             (stallbench's admin session)",
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
    let _cpus = cpus_shared();
    let mut workload = small_reference();
    workload.setup = workload
        .setup
        .replace("ANALYZE orders;", "ANALYZE no_such_table;");
    let run = ShortRun::throwaway(&workload);
    let tmpdir = private_tmpdir();
    run.command("compare")
        .env("TMPDIR", tmpdir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("setup SQL failed"))
        .stderr(predicate::str::contains("no_such_table"));
    // Nothing was measured: the run removes the folder it made; the
    // server's message is in the error.
    assert!(
        !run.out.exists(),
        "a run that measured nothing leaves no folder"
    );
    assert_nothing_left_in(tmpdir.path());
}

#[test]
fn ctrl_c_and_kill_leave_no_server() {
    let _cpus = cpus_shared();
    let run = ShortRun::throwaway(&small_reference());
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let tmpdir = private_tmpdir();
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("stallbench"))
            .arg("run")
            .arg(&run.workload)
            .args(["--load-only", "--duration", "60s", "--quiet", "--out"])
            .arg(run.dir.path().join(format!("out-{signal}")))
            .env_remove("DATABASE_URL")
            .env("TMPDIR", tmpdir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Wait until the server is up and the load runs.
        let (_, folder) = postmaster_of(child.id());
        std::thread::sleep(Duration::from_secs(3));
        assert!(
            !processes_in(&folder).is_empty(),
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
            assert_nothing_left_in(tmpdir.path());
        }
        // After SIGKILL the server stops by itself (PR_SET_PDEATHSIG); its folder stays.
        assert_no_process_in(&folder);
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
    let text = r#"
name = "backslash"
setup = "CREATE TABLE orders (id int)"

[load]
clients = 4
duration = "8s"

[[load.scripts]]
name = "read-order"
sql = """
\set c random(1, 1000)
SELECT count(*) FROM orders WHERE id = :c;
"""
"#;
    let assert = compare_refuses("backslash.toml", text);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("backslash.toml: line 12, key load.scripts.sql: "),
        "{stderr}"
    );
    assert!(stderr.contains(r"write \\set"), "{stderr}");
}

#[test]
fn an_earlier_run_in_out_is_refused_and_force_replaces_it() {
    let _cpus = cpus_shared();
    let run = ShortRun::on_shared_server(&reference());
    std::fs::create_dir(&run.out).unwrap();
    for name in ["timeline.csv", "latency-retry.hgrm", "notes.txt"] {
        std::fs::write(run.out.join(name), "earlier").unwrap();
    }
    let load_only = || {
        let mut command = run.command("run");
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
}
