use super::*;
use crate::metrics::failures::Failure;

fn server(code: &str) -> FailureKind {
    FailureKind::from_cell(code)
}

fn part(worker: usize, second: u32, latencies_us: &[u64], now_in: u32) -> WorkerPart {
    let mut finished = WorkerSecond::new(second);
    for &latency in latencies_us {
        finished.latency_us.record(latency);
    }
    WorkerPart {
        worker,
        finished: Some(finished),
        now_in,
    }
}

#[test]
fn parts_of_the_same_second_merge_and_settle() {
    let mut recorder = Recorder::new(2);
    let mut failing = part(0, 3, &[1_000], 4);
    let finished = failing.finished.as_mut().unwrap();
    finished.add_failure(&Failure::new(server("40P01"), "deadlock"));
    recorder.add(failing, 4);
    recorder.add(part(1, 3, &[9_000], 5), 5);
    recorder.add(part(1, 5, &[2_000], u32::MAX), 5);
    recorder.finish();
    let third = recorder.second(3).unwrap();
    assert_eq!(third.completed, 2);
    assert_eq!(third.failed, 1);
    assert!((third.mean_ms - 5.0).abs() < 0.01);
    assert!(recorder.second(4).is_none());
    assert_eq!(recorder.total_latency_us().len(), 3);
    assert_eq!(recorder.failed_by_kind().get(&server("40P01")), Some(&1));
}

#[test]
fn a_failed_transactions_wait_counts_in_its_second_and_the_run_but_not_in_ok() {
    let cached_plan = Failure::new(server("0A000"), "cached plan");
    let mut recorder = Recorder::new(1);
    let mut held = part(0, 6, &[1_000, 3_000], 7);
    let finished = held.finished.as_mut().unwrap();
    finished.record_failure(&cached_plan, 6_043_000);
    recorder.add(held, 7);
    // A late hand-over of the same second, with another failed wait.
    recorder.add(part(0, 6, &[], 8), 20);
    let mut late = part(0, 6, &[2_000], u32::MAX);
    late.finished
        .as_mut()
        .unwrap()
        .record_failure(&cached_plan, 5_000_000);
    recorder.add(late, 21);
    recorder.finish();
    let sixth = recorder.second(6).unwrap();
    assert_eq!((sixth.completed, sixth.failed), (3, 2));
    assert!((sixth.max_ms - 6043.0).abs() < 5.0, "{sixth:?}");
    assert_eq!(sixth.latency_count, 5);
    assert_eq!(recorder.total_latency_us().len(), 5);
    let ok = recorder.ok_latency_us();
    assert_eq!(ok.len(), 3);
    assert!((ok.max() as f64 - 3_000.0).abs() < 5.0, "{}", ok.max());
}

#[test]
fn memory_stays_flat_while_a_stalled_worker_keeps_its_second() {
    let mut recorder = Recorder::new(2);
    // Worker 1 completes something in second 0, then stalls: it stays in second 0.
    // Worker 0 runs on for 600 seconds.
    for second in 0..600 {
        recorder.add(part(0, second, &[1_000], second + 1), second + 1);
    }
    // Only the stalled worker's second (and the last, too recent ones) wait:
    // every second got a hand-over, so a second not settled is still pending.
    let pending = (0..600)
        .filter(|&second| recorder.second(second).is_none())
        .count();
    assert!(pending <= 4, "pending: {pending}");
    assert!(
        recorder.second(0).is_none(),
        "worker 1 may still add to second 0"
    );
    assert_eq!(recorder.second(100).unwrap().completed, 1);
    // The stalled worker finally hands second 0 over.
    recorder.add(part(1, 0, &[5_000], u32::MAX), 600);
    recorder.finish();
    assert_eq!(recorder.second(0).unwrap().completed, 2);
    assert_eq!(recorder.total_latency_us().len(), 601);
}

#[test]
fn a_late_hand_over_still_counts() {
    let mut recorder = Recorder::new(2);
    recorder.add(part(1, 3, &[3_000], 4), 4);
    // Worker 0 reports leaving second 0 for second 1 only at second 10:
    // second 3 looks final and settles.
    recorder.add(part(0, 0, &[1_000], 1), 10);
    assert_eq!(recorder.second(3).unwrap().completed, 1);
    // Yet worker 0 had completed transactions in second 3: they arrive late.
    recorder.add(part(0, 1, &[2_000], 3), 10);
    recorder.add(part(0, 3, &[7_000], u32::MAX), 11);
    recorder.finish();
    let third = recorder.second(3).unwrap();
    assert_eq!(third.completed, 2);
    assert!((third.max_ms - 7.0).abs() < 0.01);
    assert!((third.mean_ms - 5.0).abs() < 0.01);
    assert_eq!(recorder.total_latency_us().len(), 4);
}

#[test]
fn retries_and_the_failures_a_retry_is_about_count_per_second_late_ones_too() {
    let server = |code: &str| Failure::new(FailureKind::from_cell(code), "m");
    let mut recorder = Recorder::new(2);
    let mut first = part(0, 2, &[1_000], 3);
    let finished = first.finished.as_mut().unwrap();
    for code in ["40001", "40001", "40P01", "55P03", "42P01"] {
        finished.add_failure(&server(code));
    }
    finished.retried = 3;
    finished.retries = 7;
    recorder.add(first, 3);
    recorder.add(part(1, 2, &[], 10), 10);
    let figures = *recorder.second(2).unwrap();
    assert_eq!((figures.retried, figures.retries), (3, 7));
    assert_eq!(
        (
            figures.failed,
            figures.failed_serialization,
            figures.failed_deadlock,
            figures.failed_lock_timeout
        ),
        (5, 2, 1, 1)
    );
    // A late hand-over for the settled second.
    let mut late = part(0, 2, &[], u32::MAX);
    let finished = late.finished.as_mut().unwrap();
    finished.add_failure(&server("40P01"));
    finished.retried = 1;
    finished.retries = 1;
    recorder.add(late, 11);
    let figures = *recorder.second(2).unwrap();
    assert_eq!(
        (figures.retried, figures.retries, figures.failed_deadlock),
        (4, 8, 2)
    );
}

#[test]
fn mariadb_error_numbers_count_by_their_class() {
    let mut recorder = Recorder::new(1);
    let mut first = part(0, 1, &[], u32::MAX);
    let finished = first.finished.as_mut().unwrap();
    // A deadlock (its SQLSTATE would be 40001), a lock wait timeout, a
    // changed record, a missing table.
    for code in ["1213", "1205", "1205", "1020", "1146"] {
        finished.add_failure(&Failure::new(FailureKind::from_cell(code), "m"));
    }
    recorder.add(first, 2);
    recorder.finish();
    let figures = *recorder.second(1).unwrap();
    assert_eq!(
        (
            figures.failed,
            figures.failed_serialization,
            figures.failed_deadlock,
            figures.failed_lock_timeout
        ),
        (5, 1, 1, 2)
    );
}

#[test]
fn open_loop_counts_merge_and_late_ones_still_count() {
    let mut recorder = Recorder::new(2);
    let mut first = part(0, 2, &[1_000], 3);
    let finished = first.finished.as_mut().unwrap();
    finished.add_failure(&Failure::client_timeout());
    finished.skipped = 2;
    finished.lag_sum_us = 3_000;
    finished.lag_count = 2;
    recorder.add(first, 3);
    let mut second = part(1, 2, &[], 3);
    second.finished.as_mut().unwrap().lag_sum_us = 6_000;
    second.finished.as_mut().unwrap().lag_count = 1;
    recorder.add(second, 10);
    let figures = *recorder.second(2).unwrap();
    assert_eq!(
        (figures.failed, figures.timeouts, figures.skipped),
        (1, 1, 2)
    );
    assert!((figures.lag_ms - 3.0).abs() < 1e-9, "{figures:?}");
    // A late hand-over for the settled second.
    let mut late = part(0, 2, &[], u32::MAX);
    let finished = late.finished.as_mut().unwrap();
    finished.add_failure(&Failure::client_timeout());
    finished.lag_sum_us = 1_000;
    finished.lag_count = 1;
    recorder.add(late, 11);
    recorder.finish();
    let figures = recorder.second(2).unwrap();
    assert_eq!((figures.failed, figures.timeouts), (2, 2));
    assert!((figures.lag_ms - 2.5).abs() < 1e-9, "{figures:?}");
    assert_eq!(
        recorder.failed_by_kind().get(&FailureKind::ClientTimeout),
        Some(&2)
    );
}

#[test]
fn lost_connections_and_reconnects_settle_per_second_and_add_up() {
    let mut recorder = Recorder::new(2);
    let mut lost = part(0, 2, &[], 3);
    let finished = lost.finished.as_mut().unwrap();
    finished.add_failure(&Failure::new(
        FailureKind::ConnectionLost,
        "the server closed the connection",
    ));
    finished.conn_lost = 1;
    recorder.add(lost, 3);
    let mut back = part(0, 3, &[1_000], 4);
    let finished = back.finished.as_mut().unwrap();
    finished.reconnect_failures = 3;
    finished.reconnects = 1;
    finished.longest_disconnected_us = 1_250_000;
    recorder.add(back, 4);
    let mut other = part(1, 2, &[], u32::MAX);
    let finished = other.finished.as_mut().unwrap();
    finished.conn_lost = 1;
    finished.reconnects = 1;
    finished.longest_disconnected_us = 20_000;
    recorder.add(other, 10);
    // Settled by now; a late hand-over of worker 0 still counts.
    assert_eq!(recorder.second(2).unwrap().conn_lost, 2);
    let mut late = part(0, 2, &[], u32::MAX);
    late.finished.as_mut().unwrap().conn_lost = 1;
    recorder.add(late, 11);
    recorder.finish();
    let (second_2, second_3) = (recorder.second(2).unwrap(), recorder.second(3).unwrap());
    assert_eq!((second_2.conn_lost, second_2.reconnects), (3, 1));
    assert_eq!((second_3.conn_lost, second_3.reconnects), (0, 1));
    assert_eq!(second_2.failed, 1);
    assert_eq!(recorder.reconnect_failures(), 3);
    assert_eq!(recorder.max_disconnected_ms(), 1250.0);
    assert_eq!(
        recorder.failed_by_kind().get(&FailureKind::ConnectionLost),
        Some(&1)
    );
}

#[test]
fn failures_by_kind_merge_per_second() {
    const CACHED_PLAN: &str = "cached plan must not change result type";
    let cached_plan = || Failure::new(server("0A000"), CACHED_PLAN);
    let mut recorder = Recorder::new(2);
    let mut first = part(0, 2, &[], 3);
    first.finished.as_mut().unwrap().add_failure(&cached_plan());
    recorder.add(first, 3);
    let mut second = part(1, 2, &[], u32::MAX);
    let finished = second.finished.as_mut().unwrap();
    finished.add_failure(&cached_plan());
    finished.add_failure(&Failure::new(
        server("22P02"),
        "invalid input syntax for type integer: 'x1'",
    ));
    recorder.add(second, 3);
    recorder.finish();
    let failure = |sqlstate: &str, message: &str, count| FailureCount {
        second: 2,
        kind: FailureKind::from_cell(sqlstate),
        message: message.to_string(),
        count,
    };
    assert_eq!(
        recorder.failures(),
        [
            failure("0A000", CACHED_PLAN, 2),
            failure("22P02", "invalid input syntax for type integer: '?'", 1),
        ]
    );
    assert_eq!(recorder.second(2).unwrap().failed, 3);
}

#[test]
fn pool_waits_and_database_time_settle_apart_and_late_ones_still_count() {
    assert!(
        WorkerSecond::new(0).pool.is_none(),
        "lean seconds allocate no pool figures"
    );
    let mut recorder = Recorder::new(1);
    let mut first = part(0, 2, &[1_001_000], 3);
    let finished = first.finished.as_mut().unwrap();
    finished.pool().wait_us.record(1_000_000).unwrap();
    finished.pool().db_us.record(1_000).unwrap();
    finished.add_failure(&Failure::pool_timeout());
    finished.pool().wait_us.record(1_000_000).unwrap();
    recorder.add(first, 10);
    let figures = recorder.second(2).unwrap().pool.unwrap();
    assert_eq!((figures.timeouts, figures.rejected), (1, 0));
    assert!((figures.wait_p99_ms - 1000.0).abs() < 1.0, "{figures:?}");
    assert!((figures.db_p99_ms - 1.0).abs() < 0.01, "{figures:?}");
    assert_eq!(recorder.second(2).unwrap().failed, 1);

    let mut late = part(0, 2, &[], u32::MAX);
    late.finished
        .as_mut()
        .unwrap()
        .add_failure(&Failure::rejected());
    recorder.add(late, 11);
    recorder.finish();
    let figures = recorder.second(2).unwrap().pool.unwrap();
    assert_eq!((figures.timeouts, figures.rejected), (1, 1));
    let (wait_us, db_us) = recorder.pool_totals().unwrap();
    assert_eq!((wait_us.len(), db_us.len()), (2, 1));
    let (wait_intervals, db_intervals) = recorder.pool_intervals();
    assert_eq!((wait_intervals.len(), db_intervals.len()), (1, 1));
    let failed = recorder.failed_by_kind();
    assert_eq!(failed.get(&FailureKind::PoolTimeout), Some(&1));
    assert_eq!(failed.get(&FailureKind::Rejected), Some(&1));
}

#[test]
fn a_second_with_only_a_reconnect_is_handed_over() {
    let mut second = WorkerSecond::new(4);
    assert!(second.is_empty());
    second.reconnect_failures = 1;
    assert!(!second.is_empty());
}
