//! Turns what a run recorded into the per-second rows of `timeline.csv`.

use super::{
    AttemptOutcome, BlockerWindow, DdlAttempt, DdlState, PoolGauge, PoolRow, Recorder,
    ReplicaLoadRow, SecondRow,
};

/// One row per second `0..duration_s`, zero seconds included.
/// `lock_waiters[k]` is the most lock waiters seen in second k, `behind_schedule[k]`
/// the open-loop queue at its end (missing: 0); `pool_gauges[k]` the
/// application pool's gauges at its end, `None` for a run without the pool.
pub fn build_timeline(
    duration_s: u32,
    recorder: &Recorder,
    lock_waiters: &[u32],
    behind_schedule: &[u64],
    pool_gauges: Option<&[PoolGauge]>,
    blocker: Option<&BlockerWindow>,
    attempts: &[DdlAttempt],
) -> Vec<SecondRow> {
    (0..duration_s)
        .map(|second| {
            let figures = recorder.second(second).copied().unwrap_or_default();
            SecondRow {
                second,
                tps: figures.completed,
                failed: figures.failed,
                lat_mean_ms: figures.mean_ms,
                lat_p50_ms: figures.p50_ms,
                lat_p99_ms: figures.p99_ms,
                lat_max_ms: figures.max_ms,
                lock_waiters: lock_waiters.get(second as usize).copied().unwrap_or(0),
                blocker_active: blocker
                    .is_some_and(|window| overlaps(second, window.started_s, window.ended_s)),
                ddl_state: ddl_state_in(second, attempts),
                timeouts: figures.timeouts,
                skipped: figures.skipped,
                lag_ms: figures.lag_ms,
                behind_schedule: behind_schedule.get(second as usize).copied().unwrap_or(0),
                conn_lost: figures.conn_lost,
                reconnects: figures.reconnects,
                retried: figures.retried,
                retries: figures.retries,
                failed_serialization: figures.failed_serialization,
                failed_deadlock: figures.failed_deadlock,
                failed_lock_timeout: figures.failed_lock_timeout,
                pool: pool_gauges.map(|gauges| {
                    let measured = figures.pool.unwrap_or_default();
                    let gauge = gauges.get(second as usize).copied().unwrap_or_default();
                    PoolRow {
                        wait_p99_ms: measured.wait_p99_ms,
                        db_p99_ms: measured.db_p99_ms,
                        timeouts: measured.timeouts,
                        rejected: measured.rejected,
                        in_flight: gauge.in_flight,
                        in_use: gauge.in_use,
                    }
                }),
                replica: None,
                replica_load: None,
            }
        })
        .collect()
}

/// The replica's clients per second `0..duration_s` (a load on both
/// servers), from their own recorder.
pub fn replica_load_rows(duration_s: u32, recorder: &Recorder) -> Vec<ReplicaLoadRow> {
    (0..duration_s)
        .map(|second| {
            let figures = recorder.second(second).copied().unwrap_or_default();
            ReplicaLoadRow {
                tps: figures.completed,
                failed: figures.failed,
                lat_mean_ms: figures.mean_ms,
                lat_p50_ms: figures.p50_ms,
                lat_p99_ms: figures.p99_ms,
                lat_max_ms: figures.max_ms,
            }
        })
        .collect()
}

/// Whether `[start_s, end_s]` touches second `[second, second+1)`.
fn overlaps(second: u32, start_s: f64, end_s: f64) -> bool {
    let from = f64::from(second);
    start_s < from + 1.0 && end_s >= from
}

/// What the DDL injector did in `second`: running beats everything; otherwise
/// the state left by the last attempt that ended before the second.
pub fn ddl_state_in(second: u32, attempts: &[DdlAttempt]) -> DdlState {
    if attempts
        .iter()
        .any(|attempt| overlaps(second, attempt.started_s, attempt.ended_s))
    {
        return DdlState::Running;
    }
    let from = f64::from(second);
    match attempts.iter().rev().find(|attempt| attempt.ended_s < from) {
        None => DdlState::Idle,
        Some(last) => match last.outcome {
            AttemptOutcome::Ok => DdlState::Done,
            AttemptOutcome::LockTimeout if attempts.last() != Some(last) => DdlState::Backoff,
            AttemptOutcome::LockTimeout
            | AttemptOutcome::Error
            | AttemptOutcome::GaveUp
            | AttemptOutcome::CutOff => DdlState::Failed,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::WorkerSecond;
    use crate::metrics::recorder::WorkerPart;

    fn attempt(number: u32, started_s: f64, ended_s: f64, outcome: AttemptOutcome) -> DdlAttempt {
        crate::metrics::test_attempt(number, started_s, ended_s, outcome)
    }

    #[test]
    fn every_second_gets_a_row_with_zero_seconds_included() {
        let mut recorder = Recorder::new(1);
        let mut part = WorkerSecond::new(0);
        part.latency_us.record(2_000);
        part.latency_us.record(4_000);
        let mut stalled = WorkerSecond::new(3);
        stalled.latency_us.record(2_500_000);
        stalled.failed = 1;
        for (finished, now_in) in [(part, 3), (stalled, u32::MAX)] {
            let handed_over = WorkerPart {
                worker: 0,
                finished: Some(finished),
                now_in,
            };
            recorder.add(handed_over, 4);
        }
        recorder.finish();
        let window = BlockerWindow {
            started_s: 1.2,
            ended_s: 2.9,
        };
        let rows = build_timeline(4, &recorder, &[0, 3, 4], &[], None, Some(&window), &[]);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].tps, 2);
        assert!((rows[0].lat_mean_ms - 3.0).abs() < 0.01);
        assert_eq!(rows[1].tps, 0);
        assert_eq!(rows[2].lock_waiters, 4);
        assert_eq!(rows[3].lock_waiters, 0);
        assert_eq!(rows[3].failed, 1);
        assert!(rows[3].lat_max_ms > 2400.0);
        let active: Vec<bool> = rows.iter().map(|row| row.blocker_active).collect();
        assert_eq!(active, [false, true, true, false]);
    }

    #[test]
    fn ddl_states_follow_the_attempts() {
        let attempts = vec![
            attempt(1, 2.0, 2.5, AttemptOutcome::LockTimeout),
            attempt(2, 3.5, 4.0, AttemptOutcome::LockTimeout),
            attempt(3, 6.2, 6.3, AttemptOutcome::Ok),
        ];
        let states: Vec<DdlState> = (0..8).map(|s| ddl_state_in(s, &attempts)).collect();
        use DdlState::*;
        assert_eq!(
            states,
            [
                Idle, Idle, Running, Running, Running, Backoff, Running, Done
            ]
        );
        let gave_up = vec![attempt(1, 0.5, 1.0, AttemptOutcome::GaveUp)];
        assert_eq!(ddl_state_in(2, &gave_up), Failed);
    }
}
