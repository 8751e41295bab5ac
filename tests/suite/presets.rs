//! The presets that terminate sessions, on a real server: pg-osc stalls the
//! readers for its lock_timeout, then terminates the report and the readers in
//! flight; django-pgmigrate terminates the report a second after the DDL starts.

use crate::common::shared::LockElsewhere;
use crate::common::workload::{ADD_NOTE, READ_ORDER, REFERENCE_TABLES, ddl, load, report, script};
use crate::common::*;
use stallbench::metrics::{AttemptOutcome, DdlAttempt, StrategyReport};
use stallbench::workload::StrategyFile;

fn terminated_roles(attempt: &DdlAttempt) -> Vec<&str> {
    attempt
        .terminated
        .iter()
        .map(|session| session.role.as_str())
        .collect()
}

/// Runs the preset `name` alone (each test runs one, so that both run at once).
fn run_preset(name: &str) -> (ShortRun, StrategyReport) {
    let _cpus = cpus_shared();
    // The report holds ACCESS SHARE from 1 s to 7 s; the DDL starts at 1.5 s. pg-osc
    // runs with a 4 s lock_timeout (pg-osc's --wait-time-for-lock 4) so the first
    // try times out at about 5.5 s, while the report still runs.
    // Each reader's transaction keeps its ACCESS SHARE lock for 20 ms, as an
    // application's transaction does, so the readers hold it when pg-osc looks
    // (a bare 1 ms query would mostly be over between the timeout and the kill).
    let read_and_wait = READ_ORDER.replace("SELECT count(*)", "BEGIN;\nSELECT count(*)")
        + "SELECT pg_sleep(0.02);\nEND;\n";
    let mut workload = reference();
    workload.load = load(4, "8s", vec![script("read-and-wait", &read_and_wait)]);
    workload.blocker = Some(report("1s", "6s"));
    workload.ddl = Some(ddl("1.5s", ADD_NOTE));
    workload.strategies.push(StrategyFile {
        name: "pg-osc".into(),
        kind: Some("kill-lock-holders".into()),
        lock_timeout: Some("4s".into()),
        ..StrategyFile::default()
    });
    let run = ShortRun::on_shared_server(&workload);
    let report = run.execute(compare_only(&[name]));
    let strategy = strategy_named(&report, name).clone();
    (run, strategy)
}

#[test]
fn pg_osc_stalls_for_its_lock_timeout_then_kills() {
    // The first try waits its 4 s and times out; every reader queued behind it
    // stalls meanwhile. Then the report and the readers in flight are
    // terminated, and the second try gets the table at once.
    // A session of another database, whose orders has the same OID, is no lock holder of the run's.
    let elsewhere = LockElsewhere::hold(REFERENCE_TABLES, "orders");
    let (run, osc) = run_preset("pg-osc");
    assert!(
        elsewhere.still_alive(),
        "pg-osc terminated a session of another database"
    );
    let waits: Vec<(AttemptOutcome, f64)> = osc
        .attempts
        .iter()
        .map(|a| (a.outcome, a.waited_ms))
        .collect();
    assert_eq!(osc.attempts.len(), 2, "{:?}", osc.attempts);
    let first = &osc.attempts[0];
    assert_eq!(first.outcome, AttemptOutcome::LockTimeout, "{waits:?}");
    assert_eq!(first.sqlstate_cell(), "55P03");
    assert!(
        first.waited_ms >= 3_990.0 && first.waited_ms < 5_500.0,
        "the first try waits the 4 s lock_timeout: {waits:?}"
    );
    assert_eq!(osc.attempts[1].outcome, AttemptOutcome::Ok, "{waits:?}");
    assert!(
        osc.summary.zero_tps_seconds >= 3,
        "the readers stall behind the first try: {} zero-tps seconds",
        osc.summary.zero_tps_seconds
    );
    let roles = terminated_roles(first);
    assert!(
        roles.contains(&"report"),
        "the report is terminated: {roles:?}"
    );
    // A reader holds its lock only for its short transaction, so whether one
    // is in flight at the instant of the kill is chance (none was once, under
    // load 11); what is certain is that only sessions on orders are killed.
    assert!(
        roles
            .iter()
            .all(|role| *role == "report" || role.starts_with("reader-")),
        "only the report and readers holding a lock on orders are terminated: {roles:?}"
    );
    assert!(
        osc.summary.blocker_outcome.contains("57P01"),
        "{}",
        osc.summary.blocker_outcome
    );
    assert!(
        osc.summary.conn_lost > 0 && osc.summary.reconnects > 0,
        "terminated readers lose their connection and reconnect: lost {}, reconnects {}",
        osc.summary.conn_lost,
        osc.summary.reconnects
    );
    let summary_md = std::fs::read_to_string(run.out.join("summary.md")).unwrap();
    let phrase = format!("terminated {} sessions (", first.terminated.len());
    let line = summary_md
        .lines()
        .find(|line| line.contains(&phrase))
        .unwrap_or_else(|| panic!("summary.md says \"{phrase}...\": {summary_md}"));
    assert!(
        line.contains("report") && line.contains("reader-"),
        "{line}"
    );
}

#[test]
fn django_pgmigrate_kills_the_report_a_second_after_the_ddl_starts() {
    // No lock_timeout; one second after the DDL starts it terminates the
    // DDL's blocker, the report, and the DDL succeeds.
    let (_run, django) = run_preset("django-pgmigrate");
    assert_eq!(django.attempts.len(), 1, "{:?}", django.attempts);
    let attempt = &django.attempts[0];
    assert_eq!(attempt.outcome, AttemptOutcome::Ok, "{attempt:?}");
    assert_eq!(terminated_roles(attempt), ["report"], "{attempt:?}");
    let report_end = django.blocker.as_ref().unwrap().ended_s;
    assert!(
        report_end >= attempt.started_s + 0.9 && report_end < attempt.started_s + 2.0,
        "the report ends about 1 s after the DDL's start ({:.3} s): {report_end:.3} s",
        attempt.started_s
    );
    assert!(
        attempt.waited_ms >= 900.0 && attempt.waited_ms < 2_500.0,
        "{attempt:?}"
    );
    assert!(
        django.summary.zero_tps_seconds <= 2,
        "{} zero-tps seconds",
        django.summary.zero_tps_seconds
    );
}
