//! When things break: the throwaway server killed mid-run ends the run at
//! once, a harness killed with SIGKILL leaves a folder the next run removes,
//! and a closed stdout ends the program quietly with status 141.
//!
//! The leftover-server checks scan every process on the machine: while others
//! run tests, run these in their own pid namespace
//! (`unshare --pid --fork --mount-proc cargo test --test faults`).

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn stallbench() -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("stallbench"));
    command
        .env_remove("DATABASE_URL")
        .env_remove("STALLBENCH_PG_BIN");
    command
}

/// A load-only run of the short workload for `duration`, stderr piped.
fn start_load_only(workload: &Path, out: &Path, duration: &str) -> Child {
    stallbench()
        .args(["run", workload.to_str().unwrap(), "--load-only", "--quiet"])
        .args(["--duration", duration, "--out"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The pid and folder of the postmaster whose parent is `harness`, once it is up.
fn postmaster_of(harness: u32) -> (u32, PathBuf) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // `pid (comm) state ppid ...`; the comm may hold spaces.
            let Some((comm, rest)) = stat.split_once(") ") else {
                continue;
            };
            let parent = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            if !comm.ends_with("(postgres") || parent != Some(harness) {
                continue;
            }
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let args: Vec<String> = String::from_utf8_lossy(&cmdline)
                .split('\0')
                .map(str::to_string)
                .collect();
            let data_dir = args.iter().skip_while(|arg| *arg != "-D").nth(1);
            if let Some(folder) = data_dir.and_then(|dir| Path::new(dir).parent()) {
                return (pid, folder.to_path_buf());
            }
        }
        assert!(
            Instant::now() < deadline,
            "the harness {harness} started no postgres within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
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
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let run = short_add_column();
    let mut harness = start_load_only(&run.workload, &run.out, "60s");
    let (postmaster, folder) = postmaster_of(harness.id());
    // Setup done and the load running: the results folder appears once the target is ready.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !run.out.join("run.json").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
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
    assert_no_leftover_server();
    assert!(!folder.exists(), "{} is left behind", folder.display());
}

#[test]
fn a_new_run_removes_the_folder_of_a_harness_killed_earlier() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let run = short_add_column();
    let mut killed_harness = start_load_only(&run.workload, &run.dir.path().join("killed"), "60s");
    let (_, folder) = postmaster_of(killed_harness.id());
    std::thread::sleep(Duration::from_secs(2));
    kill(killed_harness.id(), libc::SIGKILL);
    killed_harness.wait().unwrap();
    // The server stops by itself (PR_SET_PDEATHSIG); its folder stays.
    assert_no_leftover_server();
    assert!(
        folder.exists(),
        "{} should be left behind",
        folder.display()
    );

    let mut next = start_load_only(&run.workload, &run.out, "2s");
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
}

/// Runs `command` with a stdout whose reader has gone before the first line,
/// as `| head -1` has for every line after its first; returns the exit code and stderr.
fn with_closed_stdout(mut command: Command) -> (Option<i32>, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
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
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let run = short_add_column();
    let mut command = stallbench();
    command
        .args(["compare", run.workload.to_str().unwrap(), "--quiet"])
        .args(["--strategies", "retry", "--duration", "8s", "--out"])
        .arg(&run.out);
    let (code, stderr) = with_closed_stdout(command);
    assert_eq!(code, Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
    assert_no_leftover_server();
}
