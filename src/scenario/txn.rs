//! What a transaction's end means, once for both engines: the lean workers
//! ([`super::load`]) and the application pool ([`super::pool`]) each run a
//! transaction their own way, say how it ended as a [`TxnOutcome`] with its
//! [`TxnTimes`], and [`Recording::record`] counts it. A rule about what an
//! end counts as (which second, which figures, what the latency covers) is
//! written there and nowhere else.
//!
//! A transaction counts in the second it ended (pgbench's `-P`); its latency
//! runs from when it was due (its start in a closed loop, its scheduled
//! arrival otherwise) to its end: its result, or its error, since a failed
//! transaction's wait is what the application waited for too (the failed
//! ones' latencies are also kept apart, for the successful-only `ok_*`
//! figures). One in flight at the end of the load counts
//! in the last second if it completed in the wind-down's grace, and as
//! unfinished (its age kept apart, in no second) if it did not; an
//! interrupted run counts none of them, as they would end in the second it
//! cuts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio_postgres::error::SqlState;
use tokio_util::sync::CancellationToken;

use super::RunClock;
use crate::metrics::LiveCounters;
use crate::metrics::failures::{Failure, FailureKind};
use crate::metrics::recorder::{WorkerPart, WorkerSecond};
use crate::script::Script;

/// How one transaction ended: a lean worker's, or one request of the application pool.
#[derive(Debug)]
pub enum TxnOutcome {
    /// It completed.
    Done,
    /// It failed on a connection that goes on: the server's error, the
    /// script's, `--client-timeout`, or the pool's own reasons (no connection
    /// within `--pool-timeout`, `--max-in-flight` reached).
    Failed(Failure),
    /// Its connection broke or the server ended the session: failed, and the
    /// connection is gone (a worker opens it again, the pool drops it).
    Lost(Failure),
    /// Too late for `--latency-limit`: never sent.
    Skipped,
    /// Still waiting or running when the load ended: given up.
    Unfinished,
}

impl TxnOutcome {
    /// The outcome of a server error: the session goes on, unless the server
    /// ended it (see [`ends_session`]).
    pub fn server_error(sqlstate: SqlState, message: String) -> TxnOutcome {
        let lost = ends_session(&sqlstate);
        let failure = Failure::new(FailureKind::Server(sqlstate), message);
        match lost {
            true => TxnOutcome::Lost(failure),
            false => TxnOutcome::Failed(failure),
        }
    }

    /// The outcome of a script that failed before its end (`script`), its
    /// place in the message.
    pub fn script_failed(script: &Script, failure: &crate::script::ScriptFailure) -> TxnOutcome {
        TxnOutcome::Failed(Failure::new(
            FailureKind::Script,
            script.failure_message(failure),
        ))
    }
}

/// When a transaction ran.
#[derive(Debug, Clone, Copy)]
pub struct TxnTimes {
    /// When it was due: its start in a closed loop, its scheduled arrival in
    /// an open loop and for the application; its latency counts from here.
    pub scheduled: Instant,
    /// When its result or its error arrived (or it was skipped or given up).
    pub ended: Instant,
    /// Open loop: how late it was sent behind its schedule; `None` in a
    /// closed loop, for the application, and for one never sent.
    pub lag: Option<Duration>,
    /// The application: its wait for a connection and its database time.
    pub pool: Option<PoolTimes>,
}

/// What a request of the application pool spent waiting for a connection and in the database.
#[derive(Debug, Clone, Copy)]
pub struct PoolTimes {
    /// From asking the pool to getting a connection or giving up, in microseconds.
    pub wait_us: u64,
    /// From checkout to the end of the script, in microseconds; `None` if it never got a connection.
    pub db_us: Option<u64>,
}

/// Whether a transaction ended during the load or after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    InTheLoad,
    /// At or after the end of the load, or given up there: the engine stops.
    AfterTheLoad,
}

/// SQLSTATEs with which the server ends the session (see [`super::reopen::ENDS_SESSION`]).
pub fn ends_session(sqlstate: &SqlState) -> bool {
    super::reopen::ENDS_SESSION.contains(sqlstate)
}

/// SQLSTATEs after which a driver prepares its statements again:
/// feature_not_supported (0A000, "cached plan must not change result type"
/// once a column's type changed) and invalid_sql_statement_name (26000).
pub fn statements_are_stale(kind: &FailureKind) -> bool {
    kind.sqlstate().is_some_and(|sqlstate| {
        *sqlstate == SqlState::FEATURE_NOT_SUPPORTED
            || *sqlstate == SqlState::INVALID_SQL_STATEMENT_NAME
    })
}

/// An engine's figures of its current second, handed to the recorder when
/// it records something in a later second, and the counters of the progress
/// line; what [`Recording::record`] writes into.
pub struct Recording {
    seconds: Seconds,
    clock: RunClock,
    /// The number of seconds of the load.
    duration_s: u32,
    live: Arc<LiveCounters>,
    /// Fired when the run is stopped early.
    interrupt: CancellationToken,
    /// The age of each transaction in flight at the end that did not complete, in microseconds.
    unfinished_ages_us: Vec<u64>,
}

impl Recording {
    /// The recording of worker `worker` (the application is worker 0).
    pub fn new(
        worker: usize,
        parts: UnboundedSender<WorkerPart>,
        clock: RunClock,
        live: Arc<LiveCounters>,
        interrupt: CancellationToken,
    ) -> Recording {
        Recording {
            seconds: Seconds {
                worker,
                current: WorkerSecond::new(0),
                parts,
            },
            clock,
            duration_s: clock.duration_s(),
            live,
            interrupt,
            unfinished_ages_us: Vec::new(),
        }
    }

    /// Counts how one transaction ended, in the second it ended: the one
    /// place that says what an end counts as (the module comment has the rules).
    #[inline]
    pub fn record(&mut self, outcome: &TxnOutcome, times: &TxnTimes) -> Ended {
        let second = self.clock.second_of(times.ended);
        let latency_us = micros(times.ended.saturating_duration_since(times.scheduled)).max(1);
        if second >= self.duration_s || matches!(outcome, TxnOutcome::Unfinished) {
            self.in_flight_at_the_end(outcome, latency_us);
            return Ended::AfterTheLoad;
        }
        let live = &self.live;
        let current = self.seconds.at(second);
        if let Some(lag) = times.lag {
            current.lag_sum_us += micros(lag);
            current.lag_count += 1;
        }
        match outcome {
            TxnOutcome::Done => {
                current.latency_us.record(latency_us);
                live.record_success(second, latency_us);
            }
            TxnOutcome::Failed(failure) => {
                current.record_failure(failure, latency_us);
                live.record_failure(second, latency_us);
            }
            TxnOutcome::Lost(failure) => {
                current.record_failure(failure, latency_us);
                current.conn_lost += 1;
                live.record_failure(second, latency_us);
            }
            TxnOutcome::Skipped => current.skipped += 1,
            TxnOutcome::Unfinished => unreachable!("counted as in flight at the end above"),
        }
        if let Some(pool) = times.pool {
            record_pool_times(current, outcome, pool);
        }
        Ended::InTheLoad
    }

    /// A transaction in flight at the end of the load: one that completed
    /// counts in the last second, one that did not is unfinished; none of
    /// them counts when the run was interrupted.
    fn in_flight_at_the_end(&mut self, outcome: &TxnOutcome, age_us: u64) {
        if self.interrupt.is_cancelled() {
            return;
        }
        match outcome {
            TxnOutcome::Done => {
                let last = self.duration_s - 1;
                self.at(last).latency_us.record(age_us);
            }
            _ => self.unfinished_ages_us.push(age_us),
        }
    }

    /// The progress line's counters, which the engine bumps besides (the open-loop queue).
    pub fn live(&self) -> &LiveCounters {
        &self.live
    }

    /// The figures of `second`, or of the current second if that is later
    /// (a request the application's collector hears of late counts there).
    pub fn at(&mut self, second: u32) -> &mut WorkerSecond {
        self.seconds.at(second)
    }

    /// Hands the last second over and says the worker has stopped; returns
    /// the ages of the transactions left unfinished at the end, in microseconds.
    pub fn finish(self) -> Vec<u64> {
        let seconds = self.seconds;
        let _ = seconds.parts.send(WorkerPart {
            worker: seconds.worker,
            finished: (!seconds.current.is_empty()).then_some(seconds.current),
            now_in: u32::MAX,
        });
        self.unfinished_ages_us
    }
}

/// A worker's figures of its current second, and where they go once it is over.
struct Seconds {
    worker: usize,
    current: WorkerSecond,
    parts: UnboundedSender<WorkerPart>,
}

impl Seconds {
    #[inline]
    fn at(&mut self, second: u32) -> &mut WorkerSecond {
        if second > self.current.second {
            let next = WorkerSecond::with_capacity(second, self.current.latency_us.len());
            let finished = std::mem::replace(&mut self.current, next);
            let _ = self.parts.send(WorkerPart {
                worker: self.worker,
                finished: (!finished.is_empty()).then_some(finished),
                now_in: second,
            });
        }
        &mut self.current
    }
}

/// The application's part: the wait for a connection of a request that got
/// an answer (completed, or failed with the server's or the script's error)
/// or gave up at the pool, and the database time of one that completed. One
/// given up by `--client-timeout`, rejected, skipped or lost adds neither.
#[cold]
fn record_pool_times(current: &mut WorkerSecond, outcome: &TxnOutcome, times: PoolTimes) {
    let waited = match outcome {
        TxnOutcome::Done => true,
        TxnOutcome::Failed(failure) => matches!(
            failure.kind,
            FailureKind::Server(_) | FailureKind::Script | FailureKind::PoolTimeout
        ),
        _ => false,
    };
    if waited {
        current
            .pool()
            .wait_us
            .saturating_record(times.wait_us.max(1));
    }
    if let (TxnOutcome::Done, Some(db_us)) = (outcome, times.db_us) {
        current.pool().db_us.saturating_record(db_us.max(1));
    }
}

/// A duration in whole microseconds.
pub fn micros(duration: Duration) -> u64 {
    duration.as_micros() as u64
}

#[cfg(test)]
mod tests {
    use tokio::sync::mpsc;

    use super::*;

    /// A recording on a 3 s clock; what it hands over arrives on the receiver.
    fn recording(
        interrupt: &CancellationToken,
    ) -> (
        Recording,
        mpsc::UnboundedReceiver<WorkerPart>,
        RunClock,
        Arc<LiveCounters>,
    ) {
        let (parts, received) = mpsc::unbounded_channel();
        let clock = RunClock::start(Duration::from_secs(3));
        let live = Arc::new(LiveCounters::new(3));
        let recording = Recording::new(7, parts, clock, live.clone(), interrupt.clone());
        (recording, received, clock, live)
    }

    /// A transaction due at `due_ms` on the clock that ended at `ended_ms`.
    fn times(clock: RunClock, due_ms: u64, ended_ms: u64) -> TxnTimes {
        let at = |ms| clock.started_at() + Duration::from_millis(ms);
        TxnTimes {
            scheduled: at(due_ms),
            ended: at(ended_ms),
            lag: None,
            pool: None,
        }
    }

    fn handed_over(mut received: mpsc::UnboundedReceiver<WorkerPart>) -> Vec<WorkerSecond> {
        let mut seconds = Vec::new();
        while let Ok(part) = received.try_recv() {
            assert_eq!(part.worker, 7);
            seconds.extend(part.finished);
        }
        seconds
    }

    #[test]
    fn a_transaction_counts_in_the_second_it_ended_from_when_it_was_due() {
        let interrupt = CancellationToken::new();
        let (mut recording, received, clock, live) = recording(&interrupt);
        let mut open_loop = times(clock, 900, 1_250);
        open_loop.lag = Some(Duration::from_millis(100));
        assert_eq!(
            recording.record(&TxnOutcome::Done, &open_loop),
            Ended::InTheLoad
        );
        let lost = TxnOutcome::Lost(Failure::new(FailureKind::ConnectionLost, "reset"));
        assert_eq!(
            recording.record(&lost, &times(clock, 1_300, 1_400)),
            Ended::InTheLoad
        );
        recording.record(&TxnOutcome::Skipped, &times(clock, 1_500, 2_100));
        assert!(recording.finish().is_empty());
        let seconds = handed_over(received);
        assert_eq!(seconds.len(), 2);
        let first = &seconds[0];
        assert_eq!(first.second, 1);
        let samples = |latencies_us: &[u64]| {
            let mut expected = crate::metrics::recorder::LatencySamples::default();
            for &latency_us in latencies_us {
                expected.record(latency_us);
            }
            expected
        };
        // The failed one's wait counts too, and is kept apart for the ok_* figures.
        assert_eq!(first.latency_us, samples(&[350_000, 100_000]));
        assert_eq!(first.failed_latency_us, samples(&[100_000]));
        assert_eq!((first.lag_sum_us, first.lag_count), (100_000, 1));
        assert_eq!((first.failed, first.conn_lost), (1, 1));
        assert_eq!(
            first.failed_by_kind.get(&FailureKind::ConnectionLost),
            Some(&1)
        );
        assert_eq!((seconds[1].second, seconds[1].skipped), (2, 1));
        let progress = live.second(1);
        assert_eq!((progress.completed, progress.failed), (1, 1));
        assert_eq!(progress.latency_max_ms, 350.0);
        assert_eq!(progress.latency_mean_ms, 225.0);
    }

    #[test]
    fn in_flight_at_the_end_completed_counts_in_the_last_second_else_unfinished() {
        let interrupt = CancellationToken::new();
        let (mut recording, received, clock, live) = recording(&interrupt);
        let failed = TxnOutcome::Failed(Failure::client_timeout());
        assert_eq!(
            recording.record(&TxnOutcome::Done, &times(clock, 2_800, 3_100)),
            Ended::AfterTheLoad
        );
        assert_eq!(
            recording.record(&failed, &times(clock, 2_500, 3_150)),
            Ended::AfterTheLoad
        );
        // Given up during the load's last second: unfinished too.
        assert_eq!(
            recording.record(&TxnOutcome::Unfinished, &times(clock, 1_000, 2_900)),
            Ended::AfterTheLoad
        );
        assert_eq!(recording.finish(), [650_000, 1_900_000]);
        let seconds = handed_over(received);
        assert_eq!(seconds.len(), 1);
        assert_eq!((seconds[0].second, seconds[0].latency_us.len()), (2, 1));
        assert_eq!(seconds[0].failed, 0);
        // Not on the progress line: it is over by then.
        assert_eq!(live.second(2).completed, 0);
    }

    #[test]
    fn an_interrupted_run_counts_nothing_in_flight_at_the_end() {
        let interrupt = CancellationToken::new();
        let (mut recording, received, clock, _) = recording(&interrupt);
        interrupt.cancel();
        recording.record(&TxnOutcome::Done, &times(clock, 2_800, 3_100));
        recording.record(&TxnOutcome::Unfinished, &times(clock, 1_000, 2_900));
        assert!(recording.finish().is_empty());
        assert!(handed_over(received).is_empty());
    }

    #[test]
    fn the_pools_wait_counts_for_answers_and_pool_timeouts_only() {
        let interrupt = CancellationToken::new();
        let (mut recording, received, clock, _) = recording(&interrupt);
        let pool = |wait_us, db_us| {
            let mut times = times(clock, 100, 200);
            times.pool = Some(PoolTimes { wait_us, db_us });
            times
        };
        // Given up by the client timeout before a connection came: no pool figures at all.
        let timed_out = TxnOutcome::Failed(Failure::client_timeout());
        recording.record(&timed_out, &pool(100_000, None));
        assert!(recording.at(0).pool.is_none());
        recording.record(&TxnOutcome::Done, &pool(10, Some(90_000)));
        let server = Failure::new(FailureKind::Server(SqlState::QUERY_CANCELED), "cancelled");
        recording.record(&TxnOutcome::Failed(server), &pool(20, Some(5)));
        recording.record(
            &TxnOutcome::Failed(Failure::pool_timeout()),
            &pool(100_000, None),
        );
        recording.record(&TxnOutcome::Failed(Failure::rejected()), &pool(0, None));
        recording.finish();
        let seconds = handed_over(received);
        let second = &seconds[0];
        let pool = second.pool.as_deref().unwrap();
        assert_eq!((pool.wait_us.len(), pool.db_us.len()), (3, 1));
        assert_eq!((pool.timeouts, pool.rejected), (1, 1));
        assert_eq!((second.failed, second.timeouts), (4, 1));
    }
}
