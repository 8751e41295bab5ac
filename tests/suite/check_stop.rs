//! Ctrl-C while `check` fills its tables (minutes on a real project) stops
//! it at once: the statement running on the server is dropped with the
//! server, nothing was measured, so nothing is written and the results
//! folder made for it is gone, and no process or server folder is left.

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

#[test]
fn ctrl_c_during_the_row_fill_stops_within_seconds_and_writes_nothing() {
    let _cpus = cpus_shared();
    let tmpdir = private_tmpdir();
    let out = tmpdir.path().join("check-out");
    let root = env!("CARGO_MANIFEST_DIR");
    // 3,000,000 rows per table: the fill takes far longer than the test.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("stallbench"))
        .args([
            "check",
            &format!("{root}/examples/migrations"),
            "--new",
            "1",
        ])
        .args(["--rows", "3000000", "--out"])
        .arg(&out)
        .env("TMPDIR", tmpdir.path())
        .env_remove("DATABASE_URL")
        .env_remove("CI")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("target: throwaway server") {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "{seen}");
        seen.push_str(&line);
    }
    // The earlier migrations apply in a blink; then the fill runs.
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let interrupted = Instant::now();
    let status = child.wait().unwrap();
    let took_s = interrupted.elapsed().as_secs_f64();
    stderr.read_to_string(&mut seen).unwrap();
    assert_eq!(status.code(), Some(1), "{seen}");
    assert!(took_s < 5.0, "stopped {took_s:.1} s after Ctrl-C\n{seen}");
    assert!(
        seen.contains(
            "interrupted by Ctrl-C (SIGINT); the server was stopped; no migration was measured \
             yet, so nothing was written"
        ),
        "{seen}"
    );
    assert!(
        !seen.contains("schema and rows:"),
        "the fill ended first: {seen}"
    );
    assert!(!out.exists(), "{} is left", out.display());
    assert_nothing_left_in(tmpdir.path());
}
