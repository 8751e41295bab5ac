//! stderr is for people: a closed stderr (`2>&-`) or a reader that went away
//! never ends a run (nor keeps its server running), and progress lines
//! written to a pipe are plain lines, one a second, without carriage returns
//! or terminal escapes.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::common::*;

/// `stallbench ARGS` with stdout discarded and `--out out` appended, outside
/// CI (where the progress line is off).
fn stallbench(args: &[&str], out: &Path) -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("stallbench"));
    command
        .env_remove("DATABASE_URL")
        .env_remove("CI")
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null());
    command
}

/// `run --load-only` of `run`'s workload for 3 s, its stderr a pipe the test holds.
fn load_only_3s_stderr_piped(run: &ShortRun) -> Child {
    let workload = run.workload.to_str().unwrap();
    let url = run.db_url().expect("a run on the shared server");
    stallbench(
        &[
            "run",
            workload,
            "--load-only",
            "--duration",
            "3s",
            "--db-url",
            url,
        ],
        &run.out,
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

#[test]
fn compare_with_stderr_closed_finishes_and_writes_its_results() {
    let _cpus = cpus_shared();
    // On a throwaway server: a closed stderr must not keep it from stopping either.
    let mut workload = without_blocker(3, 1);
    workload.setup = small_reference().setup;
    let run = ShortRun::throwaway(&workload);
    let workload = run.workload.to_str().unwrap();
    // The shell closes fd 2 before starting stallbench, as `2>&-` does.
    let status = Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" \"$@\" 2>&-")
        .arg(assert_cmd::cargo::cargo_bin("stallbench"))
        .args(["compare", workload, "--strategies", "naive"])
        .arg("--out")
        .arg(&run.out)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(run.out.join("summary.csv").is_file());
    assert!(run.out.join("timeline.png").is_file());
    assert_run_stopped_its_server(&run.out);
}

#[test]
fn a_run_whose_stderr_reader_went_away_finishes() {
    let _cpus = cpus_shared();
    let run = ShortRun::on_shared_server(&reference());
    let mut child = load_only_3s_stderr_piped(&run);
    // Closing the only read end: every later write to stderr fails with EPIPE.
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(run.out.join("timeline.csv").is_file());
}

#[test]
fn progress_to_a_pipe_is_one_plain_line_a_second() {
    let _cpus = cpus_shared();
    let run = ShortRun::on_shared_server(&reference());
    let mut child = load_only_3s_stderr_piped(&run);
    let mut stderr = Vec::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let text = String::from_utf8(stderr).unwrap();
    assert!(
        !text.contains(['\r', '\x1b']),
        "control characters on stderr: {text:?}"
    );
    let progress: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("progress: "))
        .collect();
    assert_eq!(progress.len(), 3, "{text}");
    for (second, line) in (1..).zip(&progress) {
        assert!(
            line.starts_with(&format!("progress: {second}.0 s, ")),
            "{text}"
        );
    }
}
