//! The last phase of a run: the report is assembled from what the tasks
//! returned and what the server said after the run, in one pure function, so
//! that every figure of the summary is computed once, from its inputs, and
//! never patched in afterwards.
//!
//! An interrupted run is assembled the same way, from its whole seconds only:
//! the DDL tries and lock samples of the second it was interrupted in go with
//! that second, so every file of the strategy covers the same seconds.

use super::blocker::BlockerResult;
use crate::metrics::locks::{LockReport, LockSample, ObserverGap, SecondLocks, across_servers};
use crate::metrics::recorder::p99_ms;
use crate::metrics::replica::{ReplicaSample, replica_seconds};
use crate::metrics::timeline::replica_load_rows;
use crate::metrics::writes::TableWrites;
use crate::metrics::{
    DdlAttempt, DdlPoll, LatencyDistribution, LatencyFigures, LatencyIntervals, PoolFacts,
    PoolGauge, Recorder, RunFacts, StrategyReport, build_timeline, lock_phases, summarize,
};

/// What the tasks of one run returned, as plain data: the wind-down's result.
#[derive(Debug)]
pub struct Measured {
    /// Rows of the timeline: the load's duration in whole seconds, rounded up;
    /// for an interrupted run, the whole seconds before the interrupt.
    pub duration_s: u32,
    /// Wall-clock time of second 0, in seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// What the load workers measured, every second settled.
    pub recorder: Recorder,
    /// What the replica's clients measured, when the load ran on both
    /// servers (`recorder` is then the primary's); `None` otherwise.
    pub replica_recorder: Option<Recorder>,
    /// Most sessions seen waiting on a lock, per second.
    pub lock_waiters: Vec<u32>,
    /// Open loop: transactions behind schedule at the end of each second.
    pub behind_schedule: Vec<u64>,
    /// Workers whose connection was lost during the run.
    pub lost_connections: u32,
    /// How the blocker's transaction went; `None` when the run had no blocker.
    pub blocker: Option<BlockerResult>,
    /// Every DDL attempt in order; empty when the run had no DDL.
    pub attempts: Vec<DdlAttempt>,
    /// The lock observer's polls of the DDL session, in time order; `None`
    /// when it did not poll (no observer, or no DDL).
    pub ddl_polls: Option<Vec<DdlPoll>>,
    /// The lock observer's figures per second.
    pub lock_per_second: Vec<SecondLocks>,
    /// Every sampled session that waited for a lock or blocked another.
    pub lock_samples: Vec<LockSample>,
    /// The sample moment with the most waiting sessions.
    pub lock_worst: Vec<LockSample>,
    /// When the lock observer was without a connection.
    pub observer_gaps: Vec<ObserverGap>,
    /// The replica observer's looks at the standby, in time order; `None`
    /// for a run without a standby (or without observers).
    pub replica_samples: Option<Vec<ReplicaSample>>,
    /// Why the run ended before its time (Ctrl-C, the server's death, ...); `None` if it ran to its end.
    pub interrupted: Option<String>,
    /// When the run was interrupted, in seconds on its clock; `None` if it ran to its end.
    pub interrupted_at_s: Option<f64>,
    /// The age of each transaction in flight at the end of the load that did
    /// not complete, in microseconds: a lower bound of its latency, in no second.
    pub unfinished_ages_us: Vec<u64>,
    /// The application pool's own figures; `None` for the lean connections.
    pub pool: Option<PoolMeasured>,
    /// `--in-place --allow-writes`: the rows the run wrote to the user's
    /// tables; `None` when they were not counted (or the run was interrupted).
    pub rows_written: Option<Vec<TableWrites>>,
}

/// What the application pool measured besides the recorder's histograms.
#[derive(Debug, Clone, Default)]
pub struct PoolMeasured {
    /// Its gauges at the end of each second.
    pub gauges: Vec<PoolGauge>,
    /// When the first request that timed out waiting for a connection began to wait, on the run clock.
    pub dry_at_s: Option<f64>,
}

/// What the server tells about a run outside its clock: the lock trace taken
/// before it, and what is read after the wind-down, before the report is assembled.
#[derive(Debug, Clone, Default)]
pub struct ServerNotes {
    /// The DDL's lock trace, taken on the quiet server before the run.
    pub lock_trace: Vec<crate::metrics::lock_trace::TracedStatement>,
    /// Sentences from the throwaway server's log about this run (empty on `--db-url`).
    pub server_log: Vec<String>,
    /// Indexes the run left INVALID (a failed `CREATE INDEX CONCURRENTLY`).
    pub invalid_indexes: Vec<String>,
}

/// Builds the report of repeat `repeat` (from 1) of strategy `strategy` from
/// what its run measured and what the server said afterwards.
pub fn assemble_report(
    strategy: &str,
    repeat: u32,
    measured: Measured,
    server_notes: ServerNotes,
) -> StrategyReport {
    let measured = match measured.interrupted {
        Some(_) => whole_seconds_only(measured),
        None => measured,
    };
    let measured = with_lock_phases(measured);
    let blocker_window = measured
        .blocker
        .as_ref()
        .map(|result| result.window.clone());
    let mut seconds = build_timeline(
        measured.duration_s,
        &measured.recorder,
        &measured.lock_waiters,
        &measured.behind_schedule,
        measured.pool.as_ref().map(|pool| pool.gauges.as_slice()),
        blocker_window.as_ref(),
        &measured.attempts,
    );
    if let Some(recorder) = &measured.replica_recorder {
        let replica_load = replica_load_rows(measured.duration_s, recorder);
        for (row, load) in seconds.iter_mut().zip(replica_load) {
            row.replica_load = Some(load);
        }
    }
    if let Some(samples) = &measured.replica_samples {
        let replica = replica_seconds(samples, measured.duration_s);
        for (row, replica) in seconds.iter_mut().zip(replica) {
            row.replica = Some(replica);
        }
    }
    // The unfinished count in the run's latency (their age a lower bound), in no second's.
    let mut latency_us = measured.recorder.total_latency_us();
    for &age_us in &measured.unfinished_ages_us {
        latency_us.saturating_record(age_us);
    }
    let (pool_wait, db) = measured.recorder.pool_intervals();
    let mut failures = measured.recorder.failures();
    failures.retain(|failure| failure.second < measured.duration_s);
    let pool = pool_facts(&measured);
    let standby_moments =
        (measured.replica_samples.iter().flatten()).map(|look| look.locks.as_slice());
    let (lock_samples, lock_worst) =
        across_servers(measured.lock_samples, measured.lock_worst, standby_moments);
    let facts = RunFacts {
        repeat,
        lost_connections: measured.lost_connections,
        blocker_error: measured.blocker.and_then(|result| result.error),
        invalid_indexes: server_notes.invalid_indexes,
        reconnect_failures: measured.recorder.reconnect_failures(),
        max_disconnected_ms: measured.recorder.max_disconnected_ms(),
        interrupted: measured.interrupted.clone(),
        unfinished: measured.unfinished_ages_us.len() as u64,
        unfinished_oldest_ms: measured
            .unfinished_ages_us
            .iter()
            .max()
            .map_or(0.0, |&age_us| age_us as f64 / 1000.0),
        pool,
        rows_written: measured.rows_written.clone(),
        ok_latency: LatencyFigures::of(&measured.recorder.ok_latency_us()),
    };
    let summary = summarize(
        strategy,
        &seconds,
        &measured.attempts,
        blocker_window.as_ref(),
        &latency_us,
        &facts,
    );
    StrategyReport {
        strategy: strategy.to_string(),
        seconds,
        attempts: measured.attempts,
        blocker: blocker_window,
        latency: LatencyDistribution::from_histogram(latency_us),
        summary,
        locks: LockReport {
            per_second: measured.lock_per_second,
            samples: lock_samples,
            worst: lock_worst,
            server_log: server_notes.server_log,
            observer_gaps: measured.observer_gaps,
        },
        intervals: LatencyIntervals {
            started_unix_s: measured.started_unix_s,
            per_second: measured.recorder.intervals(),
            pool_wait,
            db,
        },
        failures,
        lock_trace: server_notes.lock_trace,
        invariants: Vec::new(),
    }
}

/// `measured` with each attempt's lock grant placed from the DDL session's polls.
fn with_lock_phases(mut measured: Measured) -> Measured {
    let Some(polls) = &measured.ddl_polls else {
        return measured;
    };
    for attempt in &mut measured.attempts {
        attempt.lock = Some(lock_phases(attempt, polls));
    }
    measured
}

/// The pool's whole-run figures, from the recorder's histograms and when it ran dry.
fn pool_facts(measured: &Measured) -> Option<PoolFacts> {
    let pool = measured.pool.as_ref()?;
    let totals = measured.recorder.pool_totals();
    Some(PoolFacts {
        wait_p99_ms: totals.as_ref().map_or(0.0, |(wait_us, _)| p99_ms(wait_us)),
        db_p99_ms: totals.as_ref().map_or(0.0, |(_, db_us)| p99_ms(db_us)),
        dry_at_s: pool.dry_at_s,
    })
}

/// `measured` without what happened from second `duration_s` on: DDL tries
/// started, lock samples taken and observer gaps begun in the second the run
/// was interrupted in.
/// (The recorder never took that second; see `tasks::spawn_recorder`.)
fn whole_seconds_only(mut measured: Measured) -> Measured {
    let end_s = f64::from(measured.duration_s);
    let seconds = measured.duration_s as usize;
    measured.lock_waiters.truncate(seconds);
    measured.behind_schedule.truncate(seconds);
    if let Some(pool) = &mut measured.pool {
        pool.gauges.truncate(seconds);
        pool.dry_at_s = pool.dry_at_s.filter(|at_s| *at_s < end_s);
    }
    measured.lock_per_second.truncate(seconds);
    measured
        .attempts
        .retain(|attempt| attempt.started_s < end_s);
    measured.lock_samples.retain(|sample| sample.t_s < end_s);
    measured.observer_gaps.retain(|gap| gap.lost_s < end_s);
    if let Some(samples) = &mut measured.replica_samples {
        samples.retain(|sample| sample.at_s < end_s);
    }
    if measured.lock_worst.iter().any(|sample| sample.t_s >= end_s) {
        measured.lock_worst.clear();
    }
    measured
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choices::Side;
    use crate::metrics::recorder::{WorkerPart, WorkerSecond};
    use crate::metrics::{AttemptOutcome, BlockerWindow, DdlActivity, DdlState, test_attempt};

    /// A recorder where one worker completed one transaction of `latency_us`
    /// in each second of `seconds`.
    fn recorder(seconds: &[u32], latency_us: u64) -> Recorder {
        let mut recorder = Recorder::new(1);
        for &second in seconds {
            let mut finished = WorkerSecond::new(second);
            finished.latency_us.record(latency_us);
            let part = WorkerPart {
                worker: 0,
                finished: Some(finished),
                now_in: second + 1,
            };
            recorder.add(part, second + 1);
        }
        recorder.finish();
        recorder
    }

    fn measured(blocker: Option<BlockerResult>, attempts: Vec<DdlAttempt>) -> Measured {
        Measured {
            duration_s: 4,
            started_unix_s: 1_700_000_000.5,
            recorder: recorder(&[0, 1, 3], 2_000),
            replica_recorder: None,
            lock_waiters: vec![0, 3, 5],
            behind_schedule: vec![],
            lost_connections: 2,
            blocker,
            attempts,
            ddl_polls: None,
            lock_per_second: vec![SecondLocks::default(); 4],
            lock_samples: Vec::new(),
            lock_worst: Vec::new(),
            observer_gaps: Vec::new(),
            replica_samples: None,
            interrupted: None,
            interrupted_at_s: None,
            unfinished_ages_us: vec![4_100_000],
            pool: None,
            rows_written: None,
        }
    }

    #[test]
    fn the_report_holds_what_the_tasks_and_the_server_said() {
        let blocker = BlockerResult {
            window: BlockerWindow {
                started_s: 1.2,
                ended_s: 2.5,
            },
            error: Some("canceling statement due to user request (57014)".to_string()),
        };
        let attempts = vec![test_attempt(1, 1.5, 2.75, AttemptOutcome::Ok)];
        let server_notes = ServerNotes {
            server_log: vec!["ddl waited 1.0 s for report".to_string()],
            invalid_indexes: vec!["orders_a_idx".to_string(), "orders_b_idx".to_string()],
            ..ServerNotes::default()
        };
        let report = assemble_report("naive", 1, measured(Some(blocker), attempts), server_notes);

        assert_eq!(report.strategy, "naive");
        let tps: Vec<u64> = report.seconds.iter().map(|row| row.tps).collect();
        assert_eq!(tps, [1, 1, 0, 1]);
        let waiters: Vec<u32> = report.seconds.iter().map(|row| row.lock_waiters).collect();
        assert_eq!(waiters, [0, 3, 5, 0]);
        let active: Vec<bool> = report.seconds.iter().map(|r| r.blocker_active).collect();
        assert_eq!(active, [false, true, true, false]);
        assert_eq!(report.seconds[2].ddl_state, DdlState::Running);
        assert_eq!(report.seconds[3].ddl_state, DdlState::Done);

        let summary = &report.summary;
        assert_eq!(summary.strategy, "naive");
        assert_eq!(summary.transactions, 3);
        assert_eq!(summary.zero_tps_seconds, 1);
        assert_eq!(summary.ddl_attempts, 1);
        assert_eq!(summary.max_lock_waiters, 5);
        assert_eq!(summary.lost_connections, 2);
        assert_eq!(summary.unfinished, 1);
        assert_eq!(summary.unfinished_oldest_ms, 4_100.0);
        assert!(
            (summary.lat_max_ms - 4_100.0).abs() < 5.0,
            "the unfinished one's age is a lower bound of the run's max latency: {summary:?}"
        );
        assert_eq!(
            summary.blocker_outcome,
            "failed: canceling statement due to user request (57014)"
        );
        assert_eq!(summary.invalid_indexes, "orders_a_idx orders_b_idx");

        assert_eq!(report.blocker.as_ref().unwrap().started_s, 1.2);
        assert_eq!(report.attempts.len(), 1);
        // Three completed in their seconds, one unfinished in none (the tps above).
        assert_eq!(report.latency.histogram.as_ref().unwrap().len(), 4);
        assert!(!report.latency.percentiles.is_empty());
        assert_eq!(report.locks.server_log, ["ddl waited 1.0 s for report"]);
        assert_eq!(report.locks.per_second.len(), 4);
        assert_eq!(report.intervals.started_unix_s, 1_700_000_000.5);
        let interval_seconds: Vec<u32> = report.intervals.per_second.iter().map(|i| i.0).collect();
        assert_eq!(interval_seconds, [0, 1, 3]);
    }

    #[test]
    fn the_replicas_clients_beside_the_primarys_get_their_own_columns_and_judge_the_ranking() {
        let both = Measured {
            replica_recorder: Some(recorder(&[0, 1], 3_000)),
            ..measured(None, vec![test_attempt(1, 1.5, 1.6, AttemptOutcome::Ok)])
        };
        let report = assemble_report("retry", 1, both, ServerNotes::default());

        let primary: Vec<u64> = report.seconds.iter().map(|row| row.tps).collect();
        assert_eq!(primary, [1, 1, 0, 1]);
        let replica: Vec<u64> = (report.seconds.iter())
            .map(|row| row.replica_load.unwrap().tps)
            .collect();
        assert_eq!(replica, [1, 1, 0, 0]);
        assert!((report.seconds[0].replica_load.unwrap().lat_max_ms - 3.0).abs() < 0.01);
        let summary = &report.summary;
        assert_eq!(
            (summary.zero_tps_seconds, summary.replica_zero_tps_seconds),
            (1, Some(2))
        );
        assert_eq!(
            (summary.longest_stall_s, summary.replica_longest_stall_s),
            (1, Some(2))
        );
        assert!(
            (summary.replica_lat_max_ms.unwrap() - 3.0).abs() < 0.01,
            "{summary:?}"
        );
        assert_eq!(summary.transactions, 3, "the primary's only");

        let figures = crate::metrics::ranking::run_figures(&report);
        assert!(
            figures.judged_on_replica,
            "the replica fared worse: {figures:?}"
        );
        assert_eq!(figures.zero_tps_seconds, 2);
        assert_eq!(figures.transactions, 2);

        let alone = assemble_report(
            "retry",
            1,
            measured(None, Vec::new()),
            ServerNotes::default(),
        );
        assert!(alone.seconds.iter().all(|row| row.replica_load.is_none()));
        assert_eq!(alone.summary.replica_zero_tps_seconds, None);
        assert!(!crate::metrics::ranking::run_figures(&alone).judged_on_replica);
    }

    #[test]
    fn a_blocker_that_ended_well_is_ok_and_no_blocker_is_none() {
        let blocker = BlockerResult {
            window: BlockerWindow {
                started_s: 1.0,
                ended_s: 2.0,
            },
            error: None,
        };
        let with_blocker = assemble_report(
            "retry",
            1,
            measured(Some(blocker), Vec::new()),
            ServerNotes::default(),
        );
        assert_eq!(with_blocker.summary.blocker_outcome, "ok");
        assert_eq!(with_blocker.summary.invalid_indexes, "");
        assert!(with_blocker.locks.server_log.is_empty());

        let without = assemble_report(
            "load",
            1,
            measured(None, Vec::new()),
            ServerNotes::default(),
        );
        assert_eq!(without.summary.blocker_outcome, "none");
        assert!(without.blocker.is_none());
        assert!(without.seconds.iter().all(|row| !row.blocker_active));
    }

    #[test]
    fn each_attempt_gets_its_grant_from_the_polls() {
        let attempts = vec![
            test_attempt(1, 1.0, 1.5, AttemptOutcome::LockTimeout),
            test_attempt(2, 2.0, 3.0, AttemptOutcome::Ok),
        ];
        let poll = |t_s, activity| DdlPoll { t_s, activity };
        let mut observed = measured(None, attempts.clone());
        observed.ddl_polls = Some(vec![
            poll(1.2, DdlActivity::WaitingForLock),
            poll(1.7, DdlActivity::Idle),
            poll(2.2, DdlActivity::WaitingForLock),
            poll(2.4, DdlActivity::Running),
            poll(2.8, DdlActivity::Running),
        ]);
        let report = assemble_report("naive", 1, observed, ServerNotes::default());
        let timed_out = report.attempts[0].lock.unwrap();
        assert_eq!(timed_out.granted_s, None);
        assert!((timed_out.wait_ms - 500.0).abs() < 1e-6);
        let done = report.attempts[1].lock.unwrap();
        assert_eq!(done.granted_s, Some(2.4));
        assert!((done.wait_ms - 400.0).abs() < 1e-6);
        assert!((done.held_ms - 600.0).abs() < 1e-6);

        let unobserved =
            assemble_report("naive", 1, measured(None, attempts), ServerNotes::default());
        assert!(unobserved.attempts.iter().all(|a| a.lock.is_none()));
    }

    fn lock_sample(t_s: f64) -> LockSample {
        LockSample {
            t_s,
            pid: 42,
            role: "ddl".to_string(),
            state: "active".to_string(),
            wait_event_type: "Lock".to_string(),
            wait_event: "relation".to_string(),
            lock_mode: "AccessExclusiveLock".to_string(),
            relation: "orders".to_string(),
            granted: false,
            blocked_by: vec!["report".to_string()],
            wait_ms: 100.0,
            server: Side::Primary,
        }
    }

    #[test]
    fn an_interrupted_run_keeps_its_whole_seconds_only() {
        let attempts = vec![
            test_attempt(1, 1.5, 2.2, AttemptOutcome::LockTimeout),
            test_attempt(2, 3.1, 3.4, AttemptOutcome::Error),
        ];
        let mut interrupted = measured(None, attempts);
        interrupted.duration_s = 3;
        interrupted.lock_samples = vec![lock_sample(2.8), lock_sample(3.2)];
        interrupted.lock_worst = vec![lock_sample(3.2)];
        interrupted.interrupted = Some("Ctrl-C (SIGINT)".to_string());
        let report = assemble_report("naive", 1, interrupted, ServerNotes::default());

        assert_eq!(report.seconds.len(), 3);
        assert_eq!(report.locks.per_second.len(), 3);
        assert_eq!(report.attempts.len(), 1, "the try of second 3 is dropped");
        assert_eq!(report.summary.ddl_attempts, 1);
        assert_eq!(report.locks.samples, [lock_sample(2.8)]);
        assert!(
            report.locks.worst.is_empty(),
            "its worst moment was in second 3"
        );
        assert_eq!(report.summary.interrupted, "Ctrl-C (SIGINT)");
        assert_eq!(report.summary.transactions, 2);
    }

    #[test]
    fn the_standby_s_lock_samples_join_the_primary_s_and_its_worse_moment_wins() {
        let look = |at_s: f64| {
            let mut locks = crate::metrics::locks::replica_moment();
            for sample in &mut locks {
                sample.t_s = at_s;
            }
            ReplicaSample {
                at_s,
                locks,
                ..ReplicaSample::default()
            }
        };
        let mut observed = measured(None, Vec::new());
        observed.lock_samples = vec![lock_sample(1.0)];
        observed.lock_worst = vec![lock_sample(1.0)];
        observed.replica_samples = Some(vec![look(0.5), look(2.5)]);
        let report = assemble_report("naive", 1, observed, ServerNotes::default());
        let servers: Vec<(f64, Side)> = (report.locks.samples.iter())
            .map(|sample| (sample.t_s, sample.server))
            .collect();
        assert_eq!(servers.len(), 13);
        assert_eq!(
            servers[6],
            (1.0, Side::Primary),
            "in time order: {servers:?}"
        );
        // The standby's four readers behind replay beat the primary's lone ddl.
        assert_eq!(report.locks.worst.len(), 6);
        assert!(report.locks.worst.iter().all(|s| s.server == Side::Replica));
        assert_eq!(report.locks.worst[0].t_s, 0.5, "the first of equal moments");
    }
}
