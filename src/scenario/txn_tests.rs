//! Tests of [`super`]: the tries of a transaction and what its end counts as.

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
    /// How long a rollback takes.
    roll_back_takes: Duration,
    g: usize,
}

impl Attempt for Scripted {
    async fn try_once(&mut self, vars: &mut Vars, prng: &mut Prng) -> Result<(), TxnOutcome> {
        self.seen.push((prng.next_u64(), vars.get(self.g).cloned()));
        vars.set(self.g, crate::script::Value::Text("from a try".into()));
        match self.plan.get(self.seen.len() - 1) {
            None => Ok(()),
            Some(code) => Err(TxnOutcome::server_error(
                crate::engine::ErrorCode::new(*code),
                "m".into(),
                false,
            )),
        }
    }

    async fn roll_back(&mut self, _failure: &Failure) -> bool {
        self.rollbacks += 1;
        tokio::time::sleep(self.roll_back_takes).await;
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
    tried_with(plan, rule, window, (true, Duration::ZERO)).await
}

/// [`tried`], with an engine whose rollback works or not (`roll_back.0`)
/// and takes `roll_back.1`.
async fn tried_with(
    plan: &[&'static str],
    rule: RetryRule,
    window: TryWindow,
    roll_back: (bool, Duration),
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
        roll_back_works: roll_back.0,
        roll_back_takes: roll_back.1,
        g,
    };
    let rewind = Rewind {
        vars: &mut vars,
        saved: Some(&mut saved),
        prng: &mut prng,
    };
    let mut txn = Txn::due(Instant::now());
    let result = txn.run(&mut engine, rule, window, rewind).await;
    let tries = txn.tries;
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
    // One try (the default): never again, rolled back all the same.
    let (code, tries, engine) = tried(&["40001"], RetryRule::ONE_TRY, open_window()).await;
    assert_eq!(
        (code.as_deref(), tries, engine.rollbacks),
        (Some("40001"), 1, 1)
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
    let broken = (false, Duration::ZERO);
    let (code, tries, engine) = tried_with(&["40001"], rule(5), open_window(), broken).await;
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

#[tokio::test]
async fn the_rollback_comes_before_the_rule_is_asked_as_in_pgbench() {
    // A rollback that takes the transaction past its latency limit: no new try.
    let late = RetryRule {
        latency_limit: Some(Duration::from_millis(20)),
        ..rule(5)
    };
    let slow = (true, Duration::from_millis(50));
    let (code, tries, engine) = tried_with(&["40001"], late, open_window(), slow).await;
    assert_eq!(
        (code.as_deref(), tries, engine.rollbacks),
        (Some("40001"), 1, 1)
    );
    // Any failure is rolled back, retried or not.
    let (code, tries, engine) = tried(&["23505"], rule(5), open_window()).await;
    assert_eq!(
        (code.as_deref(), tries, engine.rollbacks),
        (Some("23505"), 1, 1)
    );
}

#[test]
fn a_retried_transaction_counts_as_retried_with_its_extra_tries() {
    let interrupt = CancellationToken::new();
    let (mut recording, received, clock, live) = recording(&interrupt);
    let mut retried = times(clock, 100, 900);
    retried.tries = 3;
    recording.record(&TxnOutcome::Done, &retried);
    let failed = Failure::new(FailureKind::from_cell("40P01"), "d");
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
    let server = Failure::new(FailureKind::from_cell("57014"), "cancelled");
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

#[test]
fn a_txn_ends_with_its_lag_and_the_pools_wait_and_database_time() {
    let interrupt = CancellationToken::new();
    let (mut recording, received, clock, _) = recording(&interrupt);
    let at = |ms| clock.started_at() + Duration::from_millis(ms);
    let sent = Txn::due(at(100)).sent_late(Duration::from_millis(30));
    assert_eq!(
        sent.end(&TxnOutcome::Done, at(200), &mut recording),
        Ended::InTheLoad
    );
    let mut request = Txn::due(at(300)).asking_the_pool(at(310));
    assert!(request.got_no_connection());
    request.checked_out(at(350));
    assert!(!request.got_no_connection());
    request.end(&TxnOutcome::Done, at(450), &mut recording);
    recording.finish();
    let seconds = handed_over(received);
    let second = &seconds[0];
    assert_eq!((second.lag_sum_us, second.lag_count), (30_000, 1));
    assert_eq!(second.latency_us.len(), 2);
    let pool = second.pool.as_deref().unwrap();
    // The histograms keep 3 significant digits.
    assert!(pool.wait_us.equivalent(pool.wait_us.max(), 40_000));
    assert!(pool.db_us.equivalent(pool.db_us.max(), 100_000));
}
