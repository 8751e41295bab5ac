//! A rewrite waits for its lock and then holds it; wait-for-idle waits first
//! (the rest of the topic and its helpers: `crate::wait_hold`).

use crate::common::*;
use crate::wait_hold::{phases, rewrite, strategy};
use stallbench::config::Mode;
use stallbench::metrics::AttemptOutcome;

#[test]
fn a_rewrite_waits_for_the_lock_then_holds_it_and_wait_for_idle_waits_first() {
    // Alone: the two rewrites' times are compared.
    let _cpus = cpus_alone();
    let run = ShortRun::on_shared_server(&rewrite());
    let out = &run.out;
    let report = run.execute(Mode::Compare {
        strategies: vec!["naive".into(), "wait-for-idle".into()],
    });

    // naive: queues until the report ends (about 2 s), then rewrites the table.
    let naive = strategy(&report, "naive");
    assert_eq!(naive.attempts.len(), 1, "{:?}", naive.attempts);
    let alter = &naive.attempts[0];
    assert_eq!(alter.outcome, AttemptOutcome::Ok, "{alter:?}");
    let lock = phases(alter);
    let report_end_s = naive.blocker.as_ref().unwrap().ended_s;
    let granted_s = lock.granted_s.expect("the ALTER got its lock");
    assert!(
        granted_s >= report_end_s - 0.05 && granted_s <= report_end_s + 0.5,
        "the lock is granted when the report ends ({report_end_s:.3} s): {alter:?}"
    );
    let queue_ms = (report_end_s - alter.started_s) * 1000.0;
    assert!(
        (lock.wait_ms - queue_ms).abs() < 500.0,
        "the wait covers the queue (about {queue_ms:.0} ms): {alter:?}"
    );
    assert!(
        lock.held_ms >= 200.0,
        "the rewrite holds the lock for a while: {alter:?}"
    );
    assert_eq!(alter.idle_wait_ms, 0.0);

    // wait-for-idle: waits for the report to end, then its try gets the lock at
    // once and holds it for the same rewrite.
    let idle = strategy(&report, "wait-for-idle");
    assert_eq!(idle.attempts.len(), 1, "{:?}", idle.attempts);
    let attempt = &idle.attempts[0];
    assert_eq!(attempt.outcome, AttemptOutcome::Ok, "{attempt:?}");
    let idle_report_end_s = idle.blocker.as_ref().unwrap().ended_s;
    let idle_expected_ms = (idle_report_end_s - 2.0) * 1000.0;
    assert!(
        (attempt.idle_wait_ms - idle_expected_ms).abs() < 500.0,
        "wait-for-idle waits for the report to end (about {idle_expected_ms:.0} ms): {attempt:?}"
    );
    let idle_lock = phases(attempt);
    assert!(idle_lock.wait_ms < 300.0, "no queue once idle: {attempt:?}");
    assert!(idle_lock.held_ms >= 200.0, "{attempt:?}");
    assert!(
        (idle_lock.held_ms - lock.held_ms).abs() < 0.5 * lock.held_ms.max(idle_lock.held_ms),
        "both hold the lock for the rewrite: {} vs {} ms",
        lock.held_ms,
        idle_lock.held_ms
    );

    // The files and the summary say the same.
    let csv = std::fs::read_to_string(out.join("ddl_attempts.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.ends_with(
            ",lock_granted_s,lock_wait_ms,lock_held_ms,held_waiting_ms,idle_wait_ms,terminated,\
             wal_bytes,repeat"
        ),
        "{header}"
    );
    let naive_row = csv.lines().find(|l| l.starts_with("naive,1,")).unwrap();
    assert!(
        naive_row.contains(&format!(",{granted_s:.3},")),
        "{naive_row}"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("it waited") && summary.contains("s for the lock and held it"),
        "{summary}"
    );
    assert!(summary.contains("s for idle, "), "{summary}");
}
