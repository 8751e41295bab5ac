//! A scenario that did not happen is not a result: statements that cannot
//! run on the schema are exit 2 before any load, and a blocker that fails
//! mid-run makes its strategy invalid (exit 4, set apart in the ranking).

use std::time::{Duration, Instant};

use crate::common::workload::{self, small_reference};
use crate::common::{ShortRun, cpus_shared, shared_server, stdout_of};

/// Exit 2 before the load: stderr names `source` and the server's message,
/// and the run measured nothing.
fn assert_found_before_the_load(run: &ShortRun, flags: &[&str], source: &str, message: &str) {
    let assert = run.command("compare").args(flags).assert().code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stderr.contains(source), "{stderr}");
    assert!(stderr.contains(message), "{stderr}");
    assert!(stderr.contains("before the load started"), "{stderr}");
    for file in ["timeline.csv", "summary.csv", "summary.md"] {
        assert!(!run.out.join(file).exists(), "{file} was written: {stderr}");
    }
}

#[test]
fn a_blocker_typo_is_exit_2_before_any_load() {
    let _cpus = cpus_shared();
    let run = ShortRun::on_shared_server(&small_reference());
    assert_found_before_the_load(
        &run,
        &["--blocker", "SELECT count(*) FROM acounts"],
        "--blocker (statement 1): the server rejects this statement: \"SELECT count(*) FROM acounts\"",
        "relation \"acounts\" does not exist (SQLSTATE 42P01)",
    );
}

#[test]
fn a_ddl_typo_and_a_simple_protocol_script_typo_are_exit_2_before_any_load() {
    let _cpus = cpus_shared();
    let run = ShortRun::on_shared_server(&small_reference());
    assert_found_before_the_load(
        &run,
        &[
            "--ddl",
            "ALTER TABLE orders ALTER COLUMN totl TYPE numeric(12,2)",
        ],
        "--ddl (step 1): the server rejects this statement: \"ALTER TABLE orders ALTER COLUMN totl TYPE numeric(12,2)\"",
        "column \"totl\" of relation \"orders\" does not exist (SQLSTATE 42703)",
    );

    let mut workload = small_reference();
    workload.load.scripts = vec![workload::script(
        "read-order",
        "\\set c random(1, 1000)\nSELECT count(*) FROM orders WHERE customr_id = :c;\n",
    )];
    // Under --protocol simple the workers prepare nothing, so the check does.
    let run = ShortRun::on_shared_server(&workload);
    assert_found_before_the_load(
        &run,
        &["--protocol", "simple"],
        "[[load.scripts]] read-order (line 2): the server rejects this statement: \"SELECT count(*) FROM orders WHERE customr_id = :c;\"",
        "column \"customr_id\" does not exist (SQLSTATE 42703)",
    );
}

#[test]
fn a_blocker_terminated_mid_run_makes_its_strategy_invalid_and_exit_4() {
    let _cpus = cpus_shared();
    let mut workload = small_reference();
    workload.load.duration = "4s".into();
    workload.blocker = Some(workload::report("1s", "2s"));
    workload.ddl = Some(workload::ddl("1.5s", workload::ADD_NOTE));
    let run = ShortRun::on_shared_server(&workload);
    let database = run.database.as_ref().unwrap().name.clone();
    // The first report to hold (naive's) is terminated from outside, as a DBA would.
    let terminator = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let terminated = shared_server().query_texts(
                &database,
                "SELECT pg_terminate_backend(pid)::text FROM pg_stat_activity \
                 WHERE datname = current_database() AND application_name LIKE '%-report' \
                 AND query LIKE '%pg_sleep%'",
            );
            if !terminated.is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    });
    let assert = run
        .command("compare")
        .args(["--strategies", "naive,retry"])
        .assert()
        .code(4);
    assert!(terminator.join().unwrap(), "the report was never seen");
    let stdout = stdout_of(&assert);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    let note = "naive: not ranked, invalid: the report failed at ";
    assert!(stdout.contains(note), "{stdout}");
    assert!(stdout.contains("naive (invalid)"), "{stdout}");
    assert!(stdout.contains("(SQLSTATE 57P01)"), "{stdout}");
    assert!(
        stderr.contains("the scenario did not run as written"),
        "{stderr}"
    );
    let summary = std::fs::read_to_string(run.out.join("summary.md")).unwrap();
    assert!(summary.contains(note), "{summary}");
    // Nothing compares it: no headline names it as a winner or a loser.
    assert!(!stdout.contains("retry kept"), "{stdout}");
}
