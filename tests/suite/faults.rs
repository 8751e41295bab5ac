//! When things break: the throwaway server killed mid-run ends the run at
//! once and keeps the seconds it measured, Ctrl-C writes the strategy in
//! progress up to its last whole second, a harness killed with SIGKILL leaves
//! a folder the next run removes, and a closed stdout ends the program quietly
//! with status 141. Each run's server folder goes into a `TMPDIR` of the
//! test's own, where the test looks for what was left.
//! The kill and the Ctrl-C at a planned moment run alone (`alone::faults`).

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use stallbench::export::csv::TimelineRecord;

pub(crate) fn stallbench() -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("stallbench"));
    command.env_remove("DATABASE_URL");
    command
}

/// `run --load-only` of `run`'s workload for `duration` on a throwaway server
/// whose folder goes into `tmpdir`, results into `out`.
pub(crate) fn load_only(run: &ShortRun, duration: &str, out: &Path, tmpdir: &Path) -> Command {
    let mut command = load_only_process(&run.workload, None, duration, out);
    command.env("TMPDIR", tmpdir);
    command
}

/// Waits until the postmaster `postmaster` has at least `sessions` client
/// backends (`[local]` in their title): the run's sessions are connected and
/// its clock starts a moment later.
pub(crate) fn wait_for_sessions(postmaster: u32, sessions: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut backends = 0;
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let Some((_, rest)) = stat.split_once(") ") else {
                continue;
            };
            let parent = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            if parent == Some(postmaster) && String::from_utf8_lossy(&cmdline).contains("[local]") {
                backends += 1;
            }
        }
        if backends >= sessions {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server {postmaster} had no {sessions} sessions within 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The rows of `strategy` in a results folder's `timeline.csv`: (second, tps).
pub(crate) fn timeline_rows(out: &Path, strategy: &str) -> Vec<(u32, u64)> {
    read_records::<TimelineRecord>(&out.join("timeline.csv"))
        .into_iter()
        .filter(|row| row.strategy == strategy)
        .map(|row| (row.second, row.tps))
        .collect()
}

/// The `interrupted` field of each strategy in a results folder's `summary.json`.
pub(crate) fn interrupted_of(out: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    summary["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|strategy| {
            (
                strategy["strategy"].as_str().unwrap().to_string(),
                strategy["interrupted"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

pub(crate) fn run_json_of(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap()
}

pub(crate) fn kill(pid: u32, signal: libc::c_int) {
    // SAFETY: plain kill(2) on a pid this test found.
    let result = unsafe { libc::kill(pid as libc::pid_t, signal) };
    assert_eq!(result, 0, "kill {pid}: {}", std::io::Error::last_os_error());
}

pub(crate) fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

#[test]
fn a_new_run_removes_the_folder_of_a_harness_killed_earlier() {
    let _cpus = cpus_shared();
    let run = ShortRun::throwaway(&small_reference());
    // Both runs' server folders go here: the next run looks for leftovers there.
    let tmpdir = private_tmpdir();
    let killed = run.dir.path().join("killed");
    let mut killed_harness = load_only(&run, "60s", &killed, tmpdir.path())
        .spawn()
        .unwrap();
    let (_, folder) = postmaster_of(killed_harness.id());
    std::thread::sleep(Duration::from_secs(2));
    kill(killed_harness.id(), libc::SIGKILL);
    killed_harness.wait().unwrap();
    // The server stops by itself (PR_SET_PDEATHSIG); its folder stays.
    assert_no_process_in(&folder);
    assert!(
        folder.exists(),
        "{} should be left behind",
        folder.display()
    );

    let mut next = load_only(&run, "2s", &run.out, tmpdir.path())
        .spawn()
        .unwrap();
    let stderr = stderr_of(&mut next);
    let status = next.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!folder.exists(), "{} is still there", folder.display());
    let removed_line = stderr
        .lines()
        .find(|line| line.starts_with("removed "))
        .unwrap_or_else(|| panic!("no line about the removed folder: {stderr}"));
    assert!(
        removed_line.contains("killed earlier")
            && removed_line.contains(&*folder.to_string_lossy()),
        "{removed_line}"
    );
    assert_nothing_left_in(tmpdir.path());
}

/// Runs `command` with a stdout whose reader has gone before the first line,
/// as `| head -1` has for every line after its first; returns the exit code and stderr.
fn with_closed_stdout(mut command: Command) -> (Option<i32>, String) {
    // The reading end is closed before the child starts, so even its first
    // write fails (with a pipe read only after the spawn, a short output could
    // fit in the pipe's buffer before the reader is gone).
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = command
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = stderr_of(&mut child);
    (child.wait().unwrap().code(), stderr)
}

#[test]
fn a_closed_stdout_ends_workloads_quietly_with_141() {
    let mut command = stallbench();
    command.arg("workloads");
    let (code, stderr) = with_closed_stdout(command);
    assert_eq!(code, Some(141), "{stderr}");
    assert_eq!(stderr, "", "nothing on stderr");
}

#[test]
fn a_closed_stdout_ends_compare_quietly_with_141_and_no_server_left() {
    let _cpus = cpus_shared();
    let mut workload = without_blocker(2, 1);
    workload.setup = small_reference().setup;
    let run = ShortRun::throwaway(&workload);
    let tmpdir = private_tmpdir();
    let mut command = stallbench();
    command
        .args(["compare", run.workload.to_str().unwrap(), "--quiet"])
        .args(["--strategies", "retry", "--out"])
        .arg(&run.out)
        .env("TMPDIR", tmpdir.path());
    let (code, stderr) = with_closed_stdout(command);
    assert_eq!(code, Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
    assert_nothing_left_in(tmpdir.path());
}
