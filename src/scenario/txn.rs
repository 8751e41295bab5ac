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
//!
//! A transaction is tried as pgbench 15+ tries it ([`transaction`], for both
//! engines): a try that failed with a serialization failure (40001) or a
//! deadlock (40P01) is rolled back and tried again from the script's start,
//! its state rewound (the variables as they were when the transaction began,
//! so a failed try's `\gset` results are gone, and the random state, so its
//! draws repeat), while [`RetryRule`] allows: fewer tries than `--max-tries`
//! (0: no limit), within `--latency-limit` of its schedule, before the load's
//! end and its `--client-timeout`. A lock timeout (55P03) is retried only
//! with `--retry-lock-timeouts`. Its latency runs from when it was due to the
//! end of its last try; one that needed more than one try counts as
//! `retried`, its extra tries as `retries`, whether it completed or failed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio_postgres::error::SqlState;
use tokio_util::sync::CancellationToken;

use super::RunClock;
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
    /// How many times it was tried: more than 1 after retries ([`transaction`]).
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
        kind.sqlstate().is_some_and(|sqlstate| {
            *sqlstate == SqlState::T_R_SERIALIZATION_FAILURE
                || *sqlstate == SqlState::T_R_DEADLOCK_DETECTED
                || (self.lock_timeouts && *sqlstate == SqlState::LOCK_NOT_AVAILABLE)
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

    /// Rolls back the transaction a failed try left open, if it opened one;
    /// false if the connection cannot go on (no more tries then).
    fn roll_back(&mut self) -> impl Future<Output = bool>;
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

/// Runs one transaction: a try of `attempt`, and more while `rule` allows,
/// each after a rollback and a rewind; `tries` counts them as they start
/// (read it even when the future is dropped, e.g. at a timeout). The error
/// is how the last try ended.
pub async fn transaction<A: Attempt>(
    attempt: &mut A,
    rule: RetryRule,
    window: TryWindow,
    state: Rewind<'_>,
    tries: &mut u32,
) -> Result<(), TxnOutcome> {
    let Rewind { vars, saved, prng } = state;
    *tries = 1;
    if !rule.retries() {
        return attempt.try_once(vars, prng).await;
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
        if !rule.try_again(failure, *tries, window, Instant::now()) || !attempt.roll_back().await {
            return Err(outcome);
        }
        *tries += 1;
        prng.clone_from(&prng_at_start);
        if let Some(saved) = saved.as_deref() {
            vars.copy_from(saved);
        }
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
            tries: 1,
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

    /// An engine whose tries fail with the SQLSTATEs of `plan` in turn, then
    /// complete; it keeps what each try saw of the random state and of the
    /// variable `g`, and sets `g` as a `\gset` would.
    struct Scripted {
        plan: Vec<&'static str>,
        seen: Vec<(u64, Option<crate::script::Value>)>,
        rollbacks: u32,
        roll_back_works: bool,
        g: usize,
    }

    impl Attempt for Scripted {
        async fn try_once(&mut self, vars: &mut Vars, prng: &mut Prng) -> Result<(), TxnOutcome> {
            self.seen.push((prng.next_u64(), vars.get(self.g).cloned()));
            vars.set(self.g, crate::script::Value::Text("from a try".into()));
            match self.plan.get(self.seen.len() - 1) {
                None => Ok(()),
                Some(code) => Err(TxnOutcome::server_error(
                    SqlState::from_code(code),
                    "m".into(),
                )),
            }
        }

        async fn roll_back(&mut self) -> bool {
            self.rollbacks += 1;
            self.roll_back_works
        }
    }

    /// Runs a transaction whose tries fail as `plan` says under `rule`; returns
    /// the failure's SQLSTATE (None: completed), the tries, and the engine.
    async fn tried(
        plan: &[&'static str],
        rule: RetryRule,
        window: TryWindow,
    ) -> (Option<String>, u32, Scripted) {
        tried_with(plan, rule, window, true).await
    }

    async fn tried_with(
        plan: &[&'static str],
        rule: RetryRule,
        window: TryWindow,
        roll_back_works: bool,
    ) -> (Option<String>, u32, Scripted) {
        let script = crate::script::parse("t", "\\set x 1\nSELECT :g;").unwrap();
        let g = script.variable_slot("g").unwrap();
        let automatic = crate::script::RandomSeeds::new(1, 1).client(0).1;
        let mut vars = script.new_vars(automatic, &[]);
        let mut saved = vars.clone();
        let mut prng = Prng::new(42);
        let mut engine = Scripted {
            plan: plan.to_vec(),
            seen: Vec::new(),
            rollbacks: 0,
            roll_back_works,
            g,
        };
        let rewind = Rewind {
            vars: &mut vars,
            saved: Some(&mut saved),
            prng: &mut prng,
        };
        let mut tries = 0;
        let result = transaction(&mut engine, rule, window, rewind, &mut tries).await;
        let code = result.err().map(|outcome| match outcome {
            TxnOutcome::Failed(failure) => failure.kind.to_string(),
            other => panic!("{other:?}"),
        });
        (code, tries, engine)
    }

    fn rule(max_tries: u32) -> RetryRule {
        RetryRule {
            max_tries,
            ..RetryRule::ONE_TRY
        }
    }

    fn open_window() -> TryWindow {
        TryWindow::new(
            Instant::now(),
            Instant::now() + Duration::from_secs(60),
            None,
        )
    }

    #[tokio::test]
    async fn a_serialization_failure_is_tried_again_from_the_start_of_the_script() {
        let (code, tries, engine) = tried(&["40001", "40P01"], rule(10), open_window()).await;
        assert_eq!((code, tries, engine.rollbacks), (None, 3, 2));
        // Each try drew the same numbers and found `g` as the transaction began (undefined).
        let first = engine.seen[0].clone();
        assert_eq!(first.1, None);
        assert!(
            engine.seen.iter().all(|seen| *seen == first),
            "{:?}",
            engine.seen
        );
    }

    #[tokio::test]
    async fn tries_run_out_at_max_tries_and_the_last_failure_is_the_outcome() {
        let (code, tries, _) = tried(&["40001", "40P01", "40P01"], rule(2), open_window()).await;
        assert_eq!((code.as_deref(), tries), (Some("40P01"), 2));
        // One try (the default): never again.
        let (code, tries, engine) = tried(&["40001"], RetryRule::ONE_TRY, open_window()).await;
        assert_eq!(
            (code.as_deref(), tries, engine.rollbacks),
            (Some("40001"), 1, 0)
        );
        // 0: no limit but the others.
        let many = ["40001"; 30];
        assert_eq!(tried(&many, rule(0), open_window()).await.1, 31);
    }

    #[tokio::test]
    async fn only_serialization_failures_and_deadlocks_are_retried_unless_asked() {
        for code in ["42P01", "57014", "55P03", "23505"] {
            let (failed, tries, _) = tried(&[code], rule(5), open_window()).await;
            assert_eq!((failed.as_deref(), tries), (Some(code), 1));
        }
        let locks = RetryRule {
            lock_timeouts: true,
            ..rule(5)
        };
        assert_eq!(tried(&["55P03"], locks, open_window()).await.1, 2);
    }

    #[tokio::test]
    async fn no_new_try_past_the_window_or_the_latency_limit_or_a_failed_rollback() {
        let now = Instant::now();
        let over = TryWindow {
            scheduled: now,
            until: now,
        };
        assert_eq!(tried(&["40001"], rule(5), over).await.1, 1);
        let late = RetryRule {
            latency_limit: Some(Duration::from_millis(10)),
            ..rule(5)
        };
        let long_ago = TryWindow {
            scheduled: now - Duration::from_secs(1),
            until: now + Duration::from_secs(60),
        };
        assert_eq!(tried(&["40001"], late, long_ago).await.1, 1);
        assert_eq!(tried(&["40001"], late, open_window()).await.1, 2);
        let (code, tries, engine) = tried_with(&["40001"], rule(5), open_window(), false).await;
        assert_eq!(
            (code.as_deref(), tries, engine.rollbacks),
            (Some("40001"), 1, 1)
        );
        let window = TryWindow::new(
            now,
            now + Duration::from_secs(60),
            Some(Duration::from_secs(2)),
        );
        assert_eq!(window.until, now + Duration::from_secs(2));
    }

    #[test]
    fn a_retried_transaction_counts_as_retried_with_its_extra_tries() {
        let interrupt = CancellationToken::new();
        let (mut recording, received, clock, live) = recording(&interrupt);
        let mut retried = times(clock, 100, 900);
        retried.tries = 3;
        recording.record(&TxnOutcome::Done, &retried);
        let failed = Failure::new(FailureKind::Server(SqlState::T_R_DEADLOCK_DETECTED), "d");
        retried.tries = 2;
        recording.record(&TxnOutcome::Failed(failed), &retried);
        recording.record(&TxnOutcome::Done, &times(clock, 100, 900));
        recording.finish();
        let seconds = handed_over(received);
        assert_eq!((seconds[0].retried, seconds[0].retries), (2, 3));
        assert_eq!((live.second(0).retried, live.second(0).retries), (2, 3));
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
