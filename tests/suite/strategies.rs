//! The strategy presets on a real server: each does what its recipe says, and
//! its cost shows in the results.

use crate::common::shared::LockElsewhere;
use crate::common::workload::{ADD_NOTE, REFERENCE_TABLES, ddl, report};
use crate::common::*;
use stallbench::metrics::{AttemptOutcome, StrategyReport};

/// Runs the preset `name` alone (each test runs one, so that two run at once):
/// the report runs from 1 s to 5 s; the DDL starts at 2.5 s, when the
/// report's transaction is clearly older than the presets' 1 s threshold (at
/// 2 s it would be exactly 1 s old: a race wait-for-idle may lose).
fn run_preset(name: &str) -> StrategyReport {
    let _cpus = cpus_shared();
    let mut workload = reference();
    workload.load.duration = "7s".into();
    workload.blocker = Some(report("1s", "4s"));
    workload.ddl = Some(ddl("2.5s", ADD_NOTE));
    let run = ShortRun::on_shared_server(&workload);
    let report = run.execute(compare_only(&[name]));
    strategy_named(&report, name).clone()
}

#[test]
fn kill_blockers_terminates_the_report_after_its_grace() {
    // After its 1 s grace it terminates the report; the DDL then succeeds at
    // once, and the report's failure is in the summary.
    let kill = &run_preset("kill-blockers");
    assert_eq!(kill.attempts.len(), 1);
    let attempt = &kill.attempts[0];
    assert_eq!(attempt.outcome, AttemptOutcome::Ok);
    assert!(
        attempt.waited_ms >= 900.0 && attempt.waited_ms < 3000.0,
        "the DDL waits about the grace period: {attempt:?}"
    );
    let terminated: Vec<&str> = attempt
        .terminated
        .iter()
        .map(|session| session.role.as_str())
        .collect();
    assert_eq!(terminated, ["report"], "{attempt:?}");
    assert!(
        kill.summary.blocker_outcome.starts_with("failed:")
            && kill.summary.blocker_outcome.contains("57P01"),
        "the terminated report counts as failed: {}",
        kill.summary.blocker_outcome
    );
    let window = kill.blocker.as_ref().unwrap();
    assert!(window.ended_s < 4.5, "the report was cut short: {window:?}");
}

#[test]
fn wait_for_idle_tries_only_once_the_report_ended() {
    // No try while the report's transaction is open, so nobody queues.
    // An old transaction of another database, whose orders has the same OID, is not the run's to wait for.
    let elsewhere = LockElsewhere::hold(REFERENCE_TABLES, "orders");
    let idle = &run_preset("wait-for-idle");
    assert!(elsewhere.still_alive());
    let first = &idle.attempts[0];
    let report_end = idle.blocker.as_ref().unwrap().ended_s;
    assert!(
        first.started_s >= report_end - 0.05,
        "the first try waits for the report to end ({report_end:.3} s): {first:?}"
    );
    assert_eq!(idle.attempts.last().unwrap().outcome, AttemptOutcome::Ok);
    assert_eq!(idle.summary.zero_tps_seconds, 0);
    // Nobody queues behind the report: the server's own records, not the
    // per-second waiter count. Behind the report the DDL would wait 2.5 s
    // and the readers behind it as long; a try once it ended waits at most
    // for the readers' transactions in flight, and the readers for the
    // DDL's hold of a few milliseconds. (On a starved CPU the observer did
    // see 4 readers queued in that hold once: the count is no signal.)
    let granted = idle
        .attempts
        .last()
        .unwrap()
        .lock
        .expect("the observer timed the lock");
    assert!(granted.wait_ms < 1000.0, "the try queued: {granted:?}");
    let readers_waited_ms = idle
        .locks
        .samples
        .iter()
        .filter(|sample| sample.role.starts_with("reader-") && !sample.granted)
        .map(|sample| sample.wait_ms)
        .fold(0.0, f64::max);
    assert!(
        readers_waited_ms < 1000.0,
        "a reader queued behind the DDL for {readers_waited_ms} ms"
    );
}

#[test]
fn gitlab_follows_the_with_lock_retries_schedule() {
    // 100 ms, 100 ms, 200 ms, 300 ms, ... then success.
    let gitlab = &run_preset("gitlab");
    let waits: Vec<f64> = gitlab.attempts.iter().map(|a| a.waited_ms).collect();
    for (attempt, expected_ms) in gitlab
        .attempts
        .iter()
        .zip([100.0, 100.0, 200.0, 300.0, 400.0])
    {
        assert_eq!(attempt.outcome, AttemptOutcome::LockTimeout, "{waits:?}");
        assert_eq!(attempt.sqlstate_cell(), "55P03");
        assert!(
            attempt.waited_ms >= expected_ms - 10.0 && attempt.waited_ms < expected_ms + 400.0,
            "try {} should time out after about {expected_ms} ms: {waits:?}",
            attempt.attempt
        );
    }
    assert_eq!(
        gitlab.attempts.last().unwrap().outcome,
        AttemptOutcome::Ok,
        "{waits:?}"
    );
    assert_eq!(gitlab.summary.zero_tps_seconds, 0);
}
