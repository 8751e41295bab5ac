//! When things break: the throwaway server killed mid-run ends the run at
//! once and keeps the seconds it measured, Ctrl-C writes the strategy in
//! progress up to its last whole second, a harness killed with SIGKILL leaves
//! a folder the next run removes, and a closed stdout ends the program quietly
//! with status 141. Each run's server folder goes into a `TMPDIR` of the
//! test's own, where the test looks for what was left.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use stallbench::export::csv::TimelineRecord;

fn stallbench() -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("stallbench"));
    command.env_remove("DATABASE_URL");
    command
}

/// `run --load-only` of `run`'s workload for `duration` on a throwaway server
/// whose folder goes into `tmpdir`, results into `out`.
fn load_only(run: &ShortRun, duration: &str, out: &Path, tmpdir: &Path) -> Command {
    let mut command = load_only_process(&run.workload, None, duration, out);
    command.env("TMPDIR", tmpdir);
    command
}

/// Waits until the postmaster `postmaster` has at least `sessions` client
/// backends (`[local]` in their title): the run's sessions are connected and
/// its clock starts a moment later.
fn wait_for_sessions(postmaster: u32, sessions: usize) {
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
fn timeline_rows(out: &Path, strategy: &str) -> Vec<(u32, u64)> {
    read_records::<TimelineRecord>(&out.join("timeline.csv"))
        .into_iter()
        .filter(|row| row.strategy == strategy)
        .map(|row| (row.second, row.tps))
        .collect()
}

/// The `interrupted` field of each strategy in a results folder's `summary.json`.
fn interrupted_of(out: &Path) -> Vec<(String, String)> {
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

fn run_json_of(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap()
}

fn kill(pid: u32, signal: libc::c_int) {
    // SAFETY: plain kill(2) on a pid this test found.
    let result = unsafe { libc::kill(pid as libc::pid_t, signal) };
    assert_eq!(result, 0, "kill {pid}: {}", std::io::Error::last_os_error());
}

fn stderr_of(child: &mut Child) -> String {
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
fn a_killed_server_ends_the_run_at_once_naming_its_death() {
    // Alone: the run must end within seconds of the kill.
    let _cpus = cpus_alone();
    let run = ShortRun::throwaway(&small_reference());
    let tmpdir = private_tmpdir();
    let mut harness = load_only(&run, "60s", &run.out, tmpdir.path())
        .spawn()
        .unwrap();
    let (postmaster, folder) = postmaster_of(harness.id());
    // Setup done and the load running: the results folder appears once the target is ready.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !run.out.join("run.json").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for_sessions(postmaster, 4);
    std::thread::sleep(Duration::from_secs(3));

    kill(postmaster, libc::SIGKILL);
    let killed = Instant::now();
    let stderr = stderr_of(&mut harness);
    let status = harness.wait().unwrap();
    let took = killed.elapsed();

    assert!(
        took < Duration::from_secs(3),
        "exited {took:?} after the kill"
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: the throwaway server died (killed by signal 9)"),
        "{stderr}"
    );
    assert!(stderr.contains("last lines of its log:"), "{stderr}");
    assert_eq!(
        stderr.lines().filter(|line| line.contains("error")).count(),
        1,
        "one error line: {stderr}"
    );
    assert_nothing_left_in(tmpdir.path());
    assert!(!folder.exists(), "{} is left behind", folder.display());

    // The seconds measured before the kill are results.
    let rows = timeline_rows(&run.out, "load");
    assert!(rows.len() >= 2, "{rows:?}\n{stderr}");
    assert!(rows.len() <= 4, "only seconds before the kill: {rows:?}");
    assert!(rows[..2].iter().all(|&(_, tps)| tps > 0), "{rows:?}");
    let interrupted = interrupted_of(&run.out);
    assert_eq!(interrupted.len(), 1, "{interrupted:?}");
    assert!(
        interrupted[0]
            .1
            .starts_with("the throwaway server died (killed by signal 9)"),
        "{interrupted:?}"
    );
    assert_eq!(
        run_json_of(&run.out)["interrupted"]["strategy"].as_str(),
        Some("load")
    );
}

#[test]
fn ctrl_c_writes_the_strategy_in_progress_up_to_its_last_whole_second() {
    // Alone: the interrupt comes at a planned second of the run's clock.
    let _cpus = cpus_alone();
    let run = ShortRun::throwaway(&small_reference());
    let tmpdir = private_tmpdir();
    let mut harness = stallbench()
        .args(["compare", run.workload.to_str().unwrap(), "--quiet"])
        .args(["--strategies", "naive,retry", "--out"])
        .arg(&run.out)
        .env("TMPDIR", tmpdir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (postmaster, _) = postmaster_of(harness.id());
    // Four readers, the observer, the report and the DDL: the clock starts once they are in.
    wait_for_sessions(postmaster, 7);
    std::thread::sleep(Duration::from_millis(4600));

    kill(harness.id(), libc::SIGINT);
    let stderr = stderr_of(&mut harness);
    let status = harness.wait().unwrap();

    assert_eq!(status.code(), Some(1), "Ctrl-C exits 1: {stderr}");
    assert!(
        stderr.contains("error: interrupted by Ctrl-C (SIGINT)"),
        "{stderr}"
    );
    // The ALTER queued behind the report was rolled back; the server was the run's own.
    assert!(
        stderr.contains(
            "; nothing was applied; the throwaway server was stopped; results so far are in "
        ),
        "{stderr}"
    );
    assert!(
        stderr.lines().any(|line| line == "not run: retry"),
        "{stderr}"
    );
    assert_nothing_left_in(tmpdir.path());

    let seconds: Vec<u32> = timeline_rows(&run.out, "naive")
        .iter()
        .map(|&(second, _)| second)
        .collect();
    assert!(
        seconds.starts_with(&[0, 1, 2, 3]),
        "rows up to second 3: {seconds:?}"
    );
    assert!(seconds.len() <= 5, "only whole seconds: {seconds:?}");
    assert!(timeline_rows(&run.out, "retry").is_empty());
    let interrupted = interrupted_of(&run.out);
    assert_eq!(
        interrupted,
        [("naive".to_string(), "Ctrl-C (SIGINT)".to_string())]
    );
    let run_json = run_json_of(&run.out);
    assert_eq!(run_json["interrupted"]["strategy"], "naive");
    assert_eq!(run_json["not_run"], serde_json::json!(["retry"]));
    for chart in ["timeline.png", "latency.png", "latency-timeline.png"] {
        assert!(run.out.join(chart).is_file(), "{chart} is drawn");
    }
    assert!(run.out.join("latency-naive.hlog").is_file());

    // The folder of an interrupted run is a results folder like any other.
    for chart in ["timeline.png", "latency.png", "latency-timeline.png"] {
        std::fs::remove_file(run.out.join(chart)).unwrap();
    }
    let plot = stallbench().arg("plot").arg(&run.out).output().unwrap();
    assert!(
        plot.status.success(),
        "{}",
        String::from_utf8_lossy(&plot.stderr)
    );
    assert!(run.out.join("timeline.png").is_file());
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
