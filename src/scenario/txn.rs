//! One transaction's life, once for both engines: the lean workers
//! ([`super::load`]) and the application pool ([`super::pool`]) each bring
//! their way to run a script once ([`Attempt`]), and every transaction of
//! either goes through [`Txn`]: [`Txn::run`] tries it, and [`Txn::end`] says
//! how it ended as a [`TxnOutcome`] and hands it to [`Recording::record`],
//! which counts it. A rule about tries or about what an end counts as (which
//! second, which figures, what the latency covers) is written here and
//! nowhere else.
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
//!
//! A transaction is tried as pgbench 15+ tries it ([`Txn::run`], for both
//! engines): a try that failed is rolled back first (what its `CSTATE_ERROR`
//! does: `ROLLBACK` when a transaction block is open, [`Attempt::roll_back`]),
//! and then, if it failed with a serialization failure (40001) or a
//! deadlock (40P01), tried again from the script's start, its state rewound (the variables as they were when the transaction began,
//! so a failed try's `\gset` results are gone, and the random state, so its
//! draws repeat), while [`RetryRule`] allows: fewer tries than `--max-tries`
//! (0: no limit), within `--latency-limit` of its schedule, before the load's
//! end and its `--client-timeout`. A lock timeout (55P03) is retried only
//! with `--retry-lock-timeouts`. Its latency runs from when it was due to the
//! end of its last try, a failed one's rollback included (as pgbench's); one
//! that needed more than one try counts as `retried`, its extra tries as
//! `retries`, whether it completed or failed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::RunClock;
use crate::engine::{ErrorClass, ErrorCode};
use crate::metrics::LiveCounters;
use crate::metrics::failures::{Failure, FailureKind};
use crate::metrics::recorder::{WorkerPart, WorkerSecond};
use crate::script::{Prng, Script, Vars};

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
    /// ended it with this error (`ends_session`, as the engine knows it).
    pub fn server_error(code: ErrorCode, message: String, ends_session: bool) -> TxnOutcome {
        let failure = Failure::new(FailureKind::Server(code), message);
        match ends_session {
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
    /// How many times it was tried: more than 1 after retries ([`Txn::run`]).
    pub tries: u32,
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

/// pgbench's rule for a try that failed (its `doRetry`): which failures are
/// tried again, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryRule {
    /// The most tries of one transaction (`--max-tries`); 0: no limit but
    /// the others; 1 (the default): never tried again.
    pub max_tries: u32,
    /// No new try this long after the transaction was due (`--latency-limit`).
    pub latency_limit: Option<Duration>,
    /// Lock timeouts (55P03) are tried again too (`--retry-lock-timeouts`).
    pub lock_timeouts: bool,
}

impl RetryRule {
    /// One try per transaction: pgbench's default.
    pub const ONE_TRY: RetryRule = RetryRule {
        max_tries: 1,
        latency_limit: None,
        lock_timeouts: false,
    };

    /// Whether a failed try can ever be tried again.
    #[inline]
    pub fn retries(&self) -> bool {
        self.max_tries != 1
    }

    /// Whether a failure of this kind is tried again: a serialization
    /// failure or a deadlock, and a lock timeout when asked.
    pub fn retryable(&self, kind: &FailureKind) -> bool {
        kind.server_code().is_some_and(|code| match code.class() {
            ErrorClass::Serialization | ErrorClass::Deadlock => true,
            ErrorClass::LockTimeout => self.lock_timeouts,
            _ => false,
        })
    }

    /// Whether a transaction whose try number `tries` failed with `failure`
    /// at `now` is tried again: a retryable kind, tries left, within the
    /// latency limit of when it was due, and before `window.until`.
    pub fn try_again(
        &self,
        failure: &Failure,
        tries: u32,
        window: TryWindow,
        now: Instant,
    ) -> bool {
        self.retryable(&failure.kind)
            && (self.max_tries == 0 || tries < self.max_tries)
            && self
                .latency_limit
                .is_none_or(|limit| now.saturating_duration_since(window.scheduled) <= limit)
            && now < window.until
    }
}

/// When a transaction was due, and until when a new try of it may start.
#[derive(Debug, Clone, Copy)]
pub struct TryWindow {
    /// When it was due: `--latency-limit` counts from here.
    pub scheduled: Instant,
    /// The end of the load, or the transaction's `--client-timeout` deadline if earlier.
    pub until: Instant,
}

impl TryWindow {
    /// The window of a transaction due at `scheduled` in a load that ends at `end`.
    pub fn new(scheduled: Instant, end: Instant, client_timeout: Option<Duration>) -> TryWindow {
        let until = match client_timeout {
            Some(timeout) => end.min(scheduled + timeout),
            None => end,
        };
        TryWindow { scheduled, until }
    }
}

/// An engine's way to run a transaction's script once on its connection,
/// and to roll back what a failed try left open.
pub trait Attempt {
    /// One try of the script; the error is how it ended when it did not complete.
    fn try_once(
        &mut self,
        vars: &mut Vars,
        prng: &mut Prng,
    ) -> impl Future<Output = Result<(), TxnOutcome>>;

    /// Rolls back the transaction block a try that failed with `failure`
    /// left open, if it left one; false if the connection cannot go on (no
    /// more tries then).
    fn roll_back(&mut self, failure: &Failure) -> impl Future<Output = bool>;
}

/// What a transaction rewinds to before a new try: its variables and random
/// state as they were when it began. `saved` is a buffer of the script's
/// variables kept from one transaction to the next (no allocation per
/// transaction); `None` when the rule never retries.
pub struct Rewind<'a> {
    pub vars: &'a mut Vars,
    pub saved: Option<&'a mut Vars>,
    pub prng: &'a mut Prng,
}

/// One transaction from when it was due until it is counted, the one path
/// of both engines: its tries ([`Txn::run`]: a try of the script, and more
/// while the [`RetryRule`] allows, each after a rollback and a rewind) and
/// its end ([`Txn::end`]: what it counts as, handed to the [`Recording`]).
/// One never sent (skipped, rejected, timed out waiting) ends without a try.
#[derive(Debug, Clone, Copy)]
pub struct Txn {
    /// When it was due: its latency and `--latency-limit` count from here.
    scheduled: Instant,
    /// Open loop: how late it was sent behind its schedule.
    lag: Option<Duration>,
    /// The tries started so far (0: never sent).
    tries: u32,
    /// The application: when it asked the pool for a connection and when it got one.
    checkout: Option<(Instant, Option<Instant>)>,
}

impl Txn {
    /// A transaction due at `scheduled`.
    #[inline]
    pub fn due(scheduled: Instant) -> Txn {
        Txn {
            scheduled,
            lag: None,
            tries: 0,
            checkout: None,
        }
    }

    /// An open loop's transaction, sent `lag` behind its schedule.
    #[inline]
    pub fn sent_late(mut self, lag: Duration) -> Txn {
        self.lag = Some(lag);
        self
    }

    /// A request of the application, which asked the pool for a connection at `asked`.
    pub fn asking_the_pool(mut self, asked: Instant) -> Txn {
        self.checkout = Some((asked, None));
        self
    }

    /// The application's request got its connection at `at`.
    pub fn checked_out(&mut self, at: Instant) {
        if let Some((_, checked_out)) = &mut self.checkout {
            *checked_out = Some(at);
        }
    }

    /// Whether the application's request never got a connection.
    pub fn got_no_connection(&self) -> bool {
        matches!(self.checkout, Some((_, None)))
    }

    /// Runs the transaction: a try of `attempt`, and more while `rule`
    /// allows, each after a rewind. A failed try is rolled back before the
    /// rule is asked, as pgbench does (its `CSTATE_ERROR`, then `doRetry`),
    /// so the rollback counts in the time the rule sees and in the latency.
    /// The tries count as they start, so a transaction whose future is
    /// dropped (a timeout) keeps them. The error is how the last try ended.
    pub async fn run<A: Attempt>(
        &mut self,
        attempt: &mut A,
        rule: RetryRule,
        window: TryWindow,
        state: Rewind<'_>,
    ) -> Result<(), TxnOutcome> {
        let Rewind { vars, saved, prng } = state;
        self.tries = 1;
        if !rule.retries() {
            let tried = attempt.try_once(vars, prng).await;
            if let Err(TxnOutcome::Failed(failure)) = &tried {
                attempt.roll_back(failure).await;
            }
            return tried;
        }
        let prng_at_start = prng.clone();
        let mut saved = saved;
        if let Some(saved) = saved.as_deref_mut() {
            saved.copy_from(vars);
        }
        loop {
            let outcome = match attempt.try_once(vars, prng).await {
                Ok(()) => return Ok(()),
                Err(outcome) => outcome,
            };
            let TxnOutcome::Failed(failure) = &outcome else {
                return Err(outcome);
            };
            if !attempt.roll_back(failure).await
                || !rule.try_again(failure, self.tries, window, Instant::now())
            {
                return Err(outcome);
            }
            self.tries += 1;
            prng.clone_from(&prng_at_start);
            if let Some(saved) = saved.as_deref() {
                vars.copy_from(saved);
            }
        }
    }

    /// Counts how the transaction ended (`outcome`, at `ended`) into
    /// `recording`: the one place where an engine's transaction is counted.
    #[inline]
    pub fn end(self, outcome: &TxnOutcome, ended: Instant, recording: &mut Recording) -> Ended {
        let pool = self.checkout.map(|(asked, checked_out)| PoolTimes {
            wait_us: micros(
                checked_out
                    .unwrap_or(ended)
                    .saturating_duration_since(asked),
            ),
            db_us: checked_out.map(|at| micros(ended.saturating_duration_since(at))),
        });
        let times = TxnTimes {
            scheduled: self.scheduled,
            ended,
            lag: self.lag,
            pool,
            tries: self.tries,
        };
        recording.record(outcome, &times)
    }
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
    /// place that says what an end counts as (the module comment has the
    /// rules); the engines come here through [`Txn::end`].
    #[inline]
    fn record(&mut self, outcome: &TxnOutcome, times: &TxnTimes) -> Ended {
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
        if times.tries > 1 {
            record_retries(current, live, second, times.tries);
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

/// A transaction that needed `tries` tries (more than one): retried once,
/// with `tries - 1` retries, whether it completed or failed at the end.
#[cold]
fn record_retries(current: &mut WorkerSecond, live: &LiveCounters, second: u32, tries: u32) {
    let retries = u64::from(tries - 1);
    current.retried += 1;
    current.retries += retries;
    live.record_retries(second, retries);
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
#[path = "txn_tests.rs"]
mod tests;
