//! A killed server and a Ctrl-C, each at a planned moment of the run's clock
//! (the rest of the topic and its helpers: `crate::faults`).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::faults::{
    interrupted_of, kill, load_only, run_json_of, stallbench, stderr_of, timeline_rows,
    wait_for_sessions,
};

#[test]
fn a_killed_server_ends_the_run_at_once_naming_its_death() {
    // Quiet: the run must end within seconds of the kill.
    let _cpus = cpus_quiet();
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
    // Quiet: the interrupt comes at a planned second of the run's clock.
    let _cpus = cpus_quiet();
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
