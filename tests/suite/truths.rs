//! Small truths: each line stallbench prints says what is
//! so. The runs are short and on the shared server; each test states the
//! message it checks.

use crate::common::*;

/// stderr of a finished command, as text.
fn stderr_text(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(assert.get_output().stderr.clone()).unwrap()
}

#[test]
fn a_run_that_fails_before_measuring_names_no_folder_and_leaves_none() {
    let _cpus = cpus_shared();
    let mut workload = reference();
    workload.reset = "SELECT * FROM no_such_table".into();
    let run = ShortRun::on_shared_server(&workload);
    // Not quiet: the lines a user sees.
    let assert = stallbench_command()
        .args(["compare", run.workload.to_str().unwrap()])
        .args(["--db-url", run.db_url().unwrap(), "--out"])
        .arg(&run.out)
        .assert()
        .failure();
    let stderr = stderr_text(&assert);
    assert!(stderr.contains("no_such_table"), "{stderr}");
    // `results in DIR` comes once the folder exists: after the target is ready.
    let lines: Vec<&str> = stderr.lines().collect();
    let results_line = format!("results in {}", run.out.display());
    let said_at = lines.iter().position(|line| *line == results_line);
    let target_at = lines.iter().position(|line| line.starts_with("target: "));
    assert!(said_at > target_at && target_at.is_some(), "{stderr}");
    assert!(!lines[0].contains("results in"), "{stderr}");
    // Nothing was measured: the folder the run made is gone, and it says so.
    assert!(
        stderr.contains(&format!(
            "nothing was measured; removed the results in {}",
            run.out.display()
        )),
        "{stderr}"
    );
    assert!(!run.out.exists(), "{stderr}");
}

#[test]
fn a_writer_blocker_is_named_writer_and_stdout_names_one_worst_queue() {
    let _cpus = cpus_shared();
    // The throwaway server: its log is the second source of a worst queue.
    let mut workload = small_reference();
    let mut writer = workload::report("1s", "4s");
    writer.kind = Some("writer".into());
    writer.sql = "UPDATE orders SET total = total WHERE id = 1".into();
    workload.blocker = Some(writer);
    let run = ShortRun::throwaway(&workload);
    let assert = run
        .command("run")
        .args(["--strategy", "naive"])
        .assert()
        .success();
    let stdout = stdout_of(&assert);
    let chain = stdout
        .lines()
        .find(|line| line.starts_with("naive: lock queue at its worst"))
        .unwrap_or_else(|| panic!("no lock chain: {stdout}"));
    assert!(chain.contains(": writer (pid "), "{chain}");
    assert!(chain.contains("blocked by writer"), "{chain}");
    assert!(!chain.contains("report"), "{chain}");
    let worst: Vec<&str> = stdout
        .lines()
        .filter(|line| line.contains("worst queue") || line.contains("queue at its worst"))
        .collect();
    assert_eq!(worst, [chain], "{stdout}");
    // The server log was read and logged the waits, queue and all.
    assert!(stdout.contains("naive: server logged "), "{stdout}");
    assert!(!stdout.contains("server logged no lock waits"), "{stdout}");
}

#[test]
fn a_load_only_run_prints_no_skip_lines_for_the_strategies() {
    let _cpus = cpus_shared();
    let mut workload = reference();
    workload.expect.insert(
        "naive".into(),
        stallbench::expect::ExpectFile {
            min_zero_tps_seconds: Some(1),
            ..Default::default()
        },
    );
    let run = ShortRun::on_shared_server(&workload);
    let assert = run
        .command("run")
        .args(["--load-only", "--duration", "2s"])
        .args(["--expect", "load.max_failed=0"])
        .assert()
        .success();
    let stdout = stdout_of(&assert);
    assert!(!stdout.contains("skip"), "{stdout}");
    assert!(
        stdout.contains("pass  load.max_failed <= 0: measured 0"),
        "{stdout}"
    );
}

#[test]
fn a_missing_table_on_a_db_url_says_where_the_run_looks_for_it() {
    let _cpus = cpus_shared();
    let mut workload = reference();
    workload.load.scripts = vec![workload::script(
        "read-mine",
        "SELECT count(*) FROM my_events;\n",
    )];
    // The harness runs this setup itself, once per run.
    workload.setup = workload::small_orders(1000);
    let run = ShortRun::on_empty_database(&workload);
    let hint = "on --db-url the run's tables live in schema stallbench (its search_path), \
                made by the workload's setup; to run against your own tables, add --in-place";
    let assert = run
        .command("run")
        .args(["--load-only", "--duration", "2s"])
        .assert()
        .code(2);
    let stderr = stderr_text(&assert);
    assert!(
        stderr.contains(&format!(
            "script read-mine line 1: the server rejects this statement: relation \"my_events\" \
             does not exist (SQLSTATE 42P01); {hint}"
        )),
        "{stderr}"
    );
    // The application pool prepares the scripts too, and says the same.
    let assert = run
        .command("run")
        .args([
            "--load-only",
            "--duration",
            "2s",
            "--rate",
            "50",
            "--pool-size",
            "2",
        ])
        .assert()
        .code(2);
    let stderr = stderr_text(&assert);
    assert!(
        stderr.contains(&format!("(SQLSTATE 42P01); {hint}")),
        "{stderr}"
    );
    // Under --in-place the run looks in the user's own tables: no such hint.
    let assert = run
        .command("run")
        .args(["--load-only", "--duration", "2s", "--in-place"])
        .assert()
        .code(2);
    let stderr = stderr_text(&assert);
    assert!(stderr.contains("(SQLSTATE 42P01)"), "{stderr}");
    assert!(!stderr.contains("schema stallbench"), "{stderr}");
}
