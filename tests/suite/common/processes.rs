//! What the tests check about servers concerns only the processes and folders
//! a test started itself: a run's throwaway server (found from the run's
//! results folder or from the harness's process tree) or a server the test
//! holds. Other test binaries and other people's runs go on beside, on the
//! same machine, with servers of their own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The throwaway server of the run that wrote `out`: its postmaster's pid and
/// its folder, from the first lines of `out/server.log` (the postmaster logs
/// its start, then the socket it listens on).
pub fn server_of_run(out: &Path) -> (u32, PathBuf) {
    let path = out.join("server.log");
    let log = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("{}: {err}; the run kept no server log", path.display()));
    let pid = log
        .lines()
        .next()
        .and_then(|line| line.split_once(" [")?.1.split_once(']'))
        .and_then(|(pid, _)| pid.parse().ok())
        .unwrap_or_else(|| panic!("{}: no [pid] on the first line", path.display()));
    let socket = log
        .lines()
        .find_map(|line| {
            let quoted = line.split('"').nth(1)?;
            quoted.contains("/.s.PGSQL.").then_some(quoted)
        })
        .unwrap_or_else(|| panic!("{}: no socket path logged", path.display()));
    let folder = Path::new(socket).parent().unwrap().to_path_buf();
    (pid, folder)
}

/// Asserts that the run that wrote `out` stopped its throwaway server and
/// removed the server's folder (allowing 10 s for the last process to exit).
pub fn assert_run_stopped_its_server(out: &Path) {
    let (postmaster, folder) = server_of_run(out);
    assert_no_process_in(&folder);
    assert!(
        !is_running(postmaster, &folder),
        "the postmaster {postmaster} still runs"
    );
    assert!(!folder.exists(), "{} is left behind", folder.display());
}

/// Asserts that no process runs with `folder` in its command line (a
/// postmaster's `-D folder/data`), allowing 10 s for the last one to exit.
pub fn assert_no_process_in(folder: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_in(folder);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes still run in {}: {left:#?}",
            folder.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The command lines of the processes whose command line names `folder`.
pub fn processes_in(folder: &Path) -> Vec<String> {
    let folder = folder.to_string_lossy();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&*folder) {
            found.push(cmdline);
        }
    }
    found
}

/// Whether process `pid` runs with `folder` in its command line.
fn is_running(pid: u32, folder: &Path) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(&*folder.to_string_lossy()))
}

/// The parent pid of process `pid`, from `/proc/PID/stat` (the field after the name).
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(1)?.parse().ok()
}

/// The pids of the running processes whose parent is `parent`.
pub fn children_of(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| parent_of(*pid) == Some(parent))
        .collect()
}

/// The pid and folder of the postmaster whose parent is `harness` (a
/// stallbench process the test started), once it is up; panics after 60 s.
pub fn postmaster_of(harness: u32) -> (u32, PathBuf) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for pid in children_of(harness) {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<String> = String::from_utf8_lossy(&cmdline)
                .split('\0')
                .map(str::to_string)
                .collect();
            if !args[0].ends_with("/postgres") {
                continue;
            }
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

/// Stops a throwaway server the test started itself (by dropping it) and
/// asserts that it left no process and no folder.
pub fn stop_and_check(server: stallbench::engine::postgres::server::Server) {
    let folder = server.log_path().parent().unwrap().to_path_buf();
    drop(server);
    assert_no_process_in(&folder);
    assert!(!folder.exists(), "{} is left behind", folder.display());
}

/// A temp folder for a stallbench child process's `TMPDIR`, where its
/// throwaway server's folder goes: the test then checks that folder, not the
/// machine's `/tmp`. Readable by the server's user (`postgres` under root).
pub fn private_tmpdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new().prefix("sbt-").tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// The server folders (`stallbench-*`) in `tmpdir`.
pub fn server_folders_in(tmpdir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmpdir)
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

/// Asserts that the runs given `tmpdir` as `TMPDIR` left no process running
/// there and no server folder in it.
pub fn assert_nothing_left_in(tmpdir: &Path) {
    assert_no_process_in(tmpdir);
    let folders = server_folders_in(tmpdir);
    assert!(
        folders.is_empty(),
        "server folders left behind: {folders:?}"
    );
}
