//! Small truths (issue 22, item 8): each line stallbench prints says what is
//! so. The runs are short and on the shared server; each test states the
//! message it checks.

mod common;

use common::*;

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
