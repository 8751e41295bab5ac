//! The middle phases of a run: every task started on one clock, then wound
//! down in an order that loses nothing. The workers go first (their last
//! transaction still counts, in the last second; one that does not complete
//! within [`LAST_TRANSACTION`] is cancelled and counted as unfinished, apart
//! from every second, with its age as a lower bound of its latency), then the
//! blocker and the DDL (cancelled if they outlive the load), then the
//! observer, and the recorder last, once every worker's hand-over is in.
//!
//! An [`Interrupt`] ends the load early. The DDL goes first: cancelled, its
//! rollback confirmed (or its backend terminated) before any other session
//! lets go of a lock, so a migration queued behind the report never gets the
//! report's lock and commits (`ddl::abort`). Then the workers stop between
//! transactions, the rest winds down as at the end, and the recorder drops
//! what was measured in the second the interrupt came in, which is not whole.

use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_postgres::error::SqlState;

use crate::engine::postgres::errors;
use tokio_postgres::{CancelToken, NoTls};
use tokio_util::sync::CancellationToken;

use super::reopen::SharedCancel;

use super::blocker;
use super::connect::Sessions;
use super::ddl;
use super::ddl::abort::{DdlStopped, DdlWatch, stop_ddl};
use super::load;
use super::observer::{self, ObserverOutput};
use super::pool::{PoolOutcome, run_pool_app};
use super::replica_observer::{ReplicaObserved, observe_replica};
use crate::choices::Side;
use crate::config::{Config, ReplicaConfig};
use crate::engine::postgres::database::Database;
use crate::error::Error;
use crate::metrics::recorder::WorkerPart;
use crate::metrics::{AttemptOutcome, DdlActivity, DdlAttempt, LiveCounters, PoolGauge, Recorder};
use crate::role::Role;
use crate::scenario::PoolMeasured;
use crate::scenario::arrivals::Arrivals;
use crate::scenario::blocker::BlockerResult;
use crate::scenario::progress;
use crate::scenario::progress::DdlStatus;
use crate::scenario::runtime::LoadRuntime;
use crate::scenario::{Interrupt, Measured, RunClock, RunNotes};
use crate::strategy::NamedStrategy;

/// Mixed into the run's seed for the arrival schedule, so it does not repeat a worker's draws.
const ARRIVALS_SEED: u64 = 0x5eed_a221_7a15;

/// How long the workers get to finish their last transaction at the end of the load.
const LAST_TRANSACTION: Duration = Duration::from_millis(200);

/// A load worker's task, with the handle that cancels its running query.
type WorkerTask = (JoinHandle<load::WorkerOutcome>, load::WorkerCancel);

/// The tasks of a run in progress, with what it takes to stop each one.
pub struct RunningTasks {
    clock: RunClock,
    live: Arc<LiveCounters>,
    arrivals: Option<Arc<Arrivals>>,
    recorder: JoinHandle<Recorder>,
    workers: Vec<WorkerTask>,
    /// The replica's clients beside the primary's, with their own recorder;
    /// `None` unless the load runs on both servers.
    replica_load: Option<(JoinHandle<Recorder>, Vec<WorkerTask>)>,
    /// The application pool's task and the token that makes its last requests give up.
    pool: Option<(JoinHandle<PoolOutcome>, CancellationToken)>,
    /// Turns true when the load ends (the observer stops, the DDL starts no new try).
    stop: watch::Sender<bool>,
    observer: Option<JoinHandle<ObserverOutput>>,
    replica_observer: Option<JoinHandle<ReplicaObserved>>,
    blocker: Option<(JoinHandle<BlockerResult>, CancelToken)>,
    ddl: Option<(JoinHandle<Vec<DdlAttempt>>, SharedCancel)>,
    /// How a stop confirms that the DDL's transaction was rolled back.
    ddl_watch: DdlWatch,
    /// The observer polls the DDL session (a run with both).
    observes_ddl: bool,
    progress: Option<JoinHandle<()>>,
}

/// Starts the clock and every task: the recorder, the load workers (on the
/// load runtime), the observer, the blocker, the DDL injector and the progress line.
pub fn start(
    sessions: Sessions,
    target: &Database,
    config: &Config,
    strategy: &NamedStrategy,
    seed: u64,
    load_runtime: &LoadRuntime,
    interrupt: &Interrupt,
) -> RunningTasks {
    let clock = RunClock::start(config.load.duration);
    let live = Arc::new(LiveCounters::new(clock.duration_s()));
    let arrivals = config.load.rate_tps.map(|rate_tps| {
        let mut arrivals_rng = rand::rngs::SmallRng::seed_from_u64(seed ^ ARRIVALS_SEED);
        Arc::new(Arrivals::new(
            clock.started_at(),
            config.load.duration,
            rate_tps,
            &mut arrivals_rng,
        ))
    });
    let (parts_tx, parts_rx) = mpsc::unbounded_channel();
    let hand_overs = sessions.workers.len() + usize::from(sessions.pool.is_some());
    let recorder = spawn_recorder(clock, hand_overs, parts_rx, interrupt.clone());
    let workers = start_workers(
        sessions.workers,
        clock,
        &arrivals,
        &live,
        &parts_tx,
        load_runtime,
        interrupt,
    );
    let replica_load = start_replica_load(sessions.replica_workers, clock, load_runtime, interrupt);
    let pool = match (sessions.pool, &arrivals) {
        (Some(app), Some(arrivals)) => {
            let abandon = CancellationToken::new();
            let task = load_runtime.spawn(run_pool_app(
                app,
                clock,
                arrivals.clone(),
                live.clone(),
                parts_tx,
                interrupt.token(),
                abandon.clone(),
            ));
            Some((task, abandon))
        }
        _ => None,
    };

    let (stop, stop_rx) = watch::channel(false);
    let (queue_tx, queue_rx) = watch::channel(String::new());
    // The observer polls the DDL session while a try runs; the injector
    // follows it for the progress line.
    let (ddl_activity_tx, ddl_activity_rx) = watch::channel(DdlActivity::Idle);
    let (try_running_tx, try_running_rx) = watch::channel(false);
    let observes_ddl = sessions.observer.is_some() && sessions.ddl.is_some();
    let observer = sessions.observer.map(|session| {
        let reports = observer::LiveReports {
            live: live.clone(),
            queue_status: queue_tx,
            ddl: observes_ddl.then(|| observer::DdlActivityWatch {
                application_name: target.application_name(Role::Ddl),
                activity: ddl_activity_tx,
                try_running: try_running_rx,
            }),
        };
        tokio::spawn(observer::observe(
            session,
            clock,
            target.session_prefix.clone(),
            target.server_version_num,
            reports,
            stop_rx.clone(),
        ))
    });
    // Closed when the blocker's task ends; a DDL scheduled after the
    // blocker on the same server waits for its lock (`ddl::blocker_first`).
    let (blocker_running, blocker_running_rx) = watch::channel(());
    let blocker_first = match (&config.blocker, &config.ddl) {
        (Some(blocker), Some(ddl)) => {
            let side = ReplicaConfig::blocker_on(config.replica.as_ref());
            (blocker.at <= ddl.at && side == Side::Primary).then(|| {
                ddl::blocker_first::BlockerFirst {
                    application_name: target.application_name(Role::Blocker(blocker.kind)),
                    running: blocker_running_rx,
                }
            })
        }
        _ => None,
    };
    let blocker = match (sessions.blocker, &config.blocker) {
        (Some(client), Some(blocker)) => {
            let cancel = client.cancel_token();
            let run = blocker::run_blocker(client, clock, blocker.clone());
            // The sender is dropped with the task, which the DDL's wait sees.
            let run = async move {
                let _running = blocker_running;
                run.await
            };
            Some((tokio::spawn(run), cancel))
        }
        _ => None,
    };
    let (status_tx, status_rx) = watch::channel(DdlStatus::says("not started"));
    let ddl = match (sessions.ddl, &config.ddl) {
        (Some(session), Some(ddl)) => {
            let cancel = SharedCancel::new(&session.client);
            let injector = ddl::DdlInjector {
                session,
                cancel: cancel.clone(),
                killer: sessions.killer,
                replica_watch: sessions.replica_watch,
                clock,
                at: ddl.at,
                steps: strategy
                    .ddl_steps
                    .clone()
                    .unwrap_or_else(|| ddl.steps.clone()),
                strategy: strategy.strategy.clone(),
                seed,
                session_prefix: target.session_prefix.clone(),
                status: status_tx,
                run_over: stop_rx.clone(),
                rollback: config.objects.rolls_back_ddl(),
                observed: observes_ddl.then_some(ddl::ObservedTries {
                    activity: ddl_activity_rx,
                    try_running: try_running_tx,
                }),
                invalid_indexes_before: None,
                blocker_first: blocker_first.filter(|_| blocker.is_some()),
            };
            Some((tokio::spawn(ddl::run_ddl(injector)), cancel))
        }
        _ => {
            status_tx.send_replace(DdlStatus::says("none"));
            None
        }
    };
    let progress = config.progress.then(|| {
        tokio::spawn(progress::report_each_second(
            clock,
            live.clone(),
            status_rx,
            queue_rx,
            config.ddl.is_some(),
            arrivals.clone(),
        ))
    });
    let replica_observer = sessions
        .replica_observer
        .map(|client| tokio::spawn(observe_replica(client, clock, stop_rx.clone())));
    RunningTasks {
        clock,
        live,
        arrivals,
        recorder,
        workers,
        replica_load,
        pool,
        stop,
        observer,
        replica_observer,
        blocker,
        ddl,
        ddl_watch: DdlWatch {
            admin: target.connector(Role::Cleanup, &[]),
            application_name: target.application_name(Role::Ddl),
            throwaway: target.is_throwaway(),
        },
        observes_ddl,
        progress,
    }
}

/// Starts the replica's clients beside the primary's (a load on both
/// servers); `None` without them. They count into a recorder and live
/// counters of their own: the progress line and the lock figures stay the primary's.
fn start_replica_load(
    workers: Vec<load::Worker>,
    clock: RunClock,
    load_runtime: &LoadRuntime,
    interrupt: &Interrupt,
) -> Option<(JoinHandle<Recorder>, Vec<WorkerTask>)> {
    if workers.is_empty() {
        return None;
    }
    let (parts_tx, parts_rx) = mpsc::unbounded_channel();
    let recorder = spawn_recorder(clock, workers.len(), parts_rx, interrupt.clone());
    let live = Arc::new(LiveCounters::new(clock.duration_s()));
    let tasks = start_workers(
        workers,
        clock,
        &None,
        &live,
        &parts_tx,
        load_runtime,
        interrupt,
    );
    Some((recorder, tasks))
}

/// Starts the load workers on the load runtime, which hand their
/// measurements to the recorder through `parts_tx`; returns each worker's
/// task with the handle that cancels its query. The workers stop early when `interrupt` fires.
fn start_workers(
    workers: Vec<load::Worker>,
    clock: RunClock,
    arrivals: &Option<Arc<Arrivals>>,
    live: &Arc<LiveCounters>,
    parts_tx: &mpsc::UnboundedSender<WorkerPart>,
    load_runtime: &LoadRuntime,
    interrupt: &Interrupt,
) -> Vec<WorkerTask> {
    let mut tasks = Vec::with_capacity(workers.len());
    for worker in workers {
        let cancel = worker.cancel.clone();
        let task = load_runtime.spawn(load::run_worker(
            worker,
            clock,
            arrivals.clone(),
            live.clone(),
            parts_tx.clone(),
            interrupt.token(),
        ));
        tasks.push((task, cancel));
    }
    tasks
}

/// The recorder's task: takes the workers' hand-overs as they come and settles
/// the seconds once a second; returns the recorder once every worker is done.
/// Once `interrupt` fired, seconds from the one it fired in are dropped: no
/// worker could hand them over before, so what is kept is whole.
fn spawn_recorder(
    clock: RunClock,
    workers: usize,
    mut parts: mpsc::UnboundedReceiver<WorkerPart>,
    interrupt: Interrupt,
) -> JoinHandle<Recorder> {
    tokio::spawn(async move {
        let mut recorder = Recorder::new(workers);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                part = parts.recv() => match part {
                    Some(mut part) => {
                        if let Some(cut) = interrupt.cut_second(&clock)
                            && part.finished.as_ref().is_some_and(|second| second.second >= cut)
                        {
                            part.finished = None;
                        }
                        recorder.add(part, clock.second_now());
                    }
                    None => break,
                },
                _ = tick.tick() => recorder.settle(clock.second_now()),
            }
        }
        recorder.finish();
        recorder
    })
}

/// Waits for the end of the load (or the interrupt), then stops every task and
/// collects what each returned; things worth telling the user go to the notes.
/// Interrupted, the DDL is stopped first: rolled back (or its backend
/// terminated) before any other session lets go of anything.
pub async fn wind_down(
    running: RunningTasks,
    strategy_name: &str,
    interrupt: &Interrupt,
) -> Result<(Measured, RunNotes), Error> {
    let clock = running.clock;
    tokio::select! {
        _ = tokio::time::sleep_until(tokio::time::Instant::from_std(clock.end())) => {}
        _ = interrupt.fired() => {}
    }
    running.stop.send_replace(true);
    let mut notes = RunNotes::default();

    // Interrupted, nothing in flight can still count: it would end in the cut second.
    let last_transaction = match interrupt.reason() {
        Some(_) => Duration::ZERO,
        None => LAST_TRANSACTION,
    };
    // Interrupted, the DDL goes first: see the module documentation.
    let mut ddl = running.ddl;
    let stopped_first = match interrupt.reason() {
        Some(_) => Some(
            finish_ddl(
                ddl.take(),
                &running.ddl_watch,
                interrupt,
                strategy_name,
                &mut notes,
            )
            .await,
        ),
        None => None,
    };
    let (mut workers, replica_load) = finish_both_loads(
        running.workers,
        running.replica_load,
        last_transaction,
        &mut notes,
    )
    .await;
    let pool = finish_pool(running.pool, &mut workers, &mut notes).await;
    warn_of_unfinished(strategy_name, "", &workers, last_transaction, &mut notes);
    // A task that failed loses its own part only: the run is written, marked interrupted.
    let blocker = finish_blocker(running.blocker, strategy_name, &mut notes)
        .await
        .unwrap_or_else(|error| interrupted_by(interrupt, error));
    let ddl_finished = match stopped_first {
        Some(finished) => finished,
        None => {
            finish_ddl(
                ddl,
                &running.ddl_watch,
                interrupt,
                strategy_name,
                &mut notes,
            )
            .await
        }
    };
    let attempts = ddl_finished.unwrap_or_else(|error| interrupted_by(interrupt, error));
    let observed = match running.observer {
        Some(task) => task.await.unwrap_or_else(|error| {
            interrupted_by(
                interrupt,
                Error::runtime(format!("lock observer task: {error}")),
            )
        }),
        None => ObserverOutput::default(),
    };
    if let Some(message) = &observed.error {
        notes.warnings.push(message.clone());
    }
    let replica_samples = match running.replica_observer {
        Some(task) => {
            let replica = task.await.unwrap_or_default();
            notes.warnings.extend(replica.error);
            Some(replica.samples)
        }
        None => None,
    };
    notes.roles = observed.roles;
    if let Some(task) = running.progress {
        task.abort();
    }
    let recorder = running
        .recorder
        .await
        .map_err(|err| Error::runtime(format!("recorder task: {err}")))?;
    notes.failed_by_kind = recorder.failed_by_kind().into_iter().collect();
    let replica_recorder = match replica_load {
        Some((task, replica_workers)) => {
            let ended = (strategy_name, &replica_workers, last_transaction);
            Some(finish_replica_recorder(task, ended, &mut notes).await?)
        }
        None => None,
    };

    // Cut at the last whole second when interrupted (by the end, the cut is the duration).
    let duration_s = interrupt
        .cut_second(&clock)
        .map_or(clock.duration_s(), |cut| cut.min(clock.duration_s()));
    let live = running.live;
    let lock_waiters: Vec<u32> = (0..duration_s)
        .map(|second| live.second(second).lock_waiters)
        .collect();
    if let Some(arrivals) = &running.arrivals {
        arrivals.count_unclaimed(&live);
    }
    let measured = Measured {
        duration_s,
        started_unix_s: clock.started_unix_s(),
        recorder,
        replica_recorder,
        lock_waiters,
        behind_schedule: live.behind_schedule(duration_s),
        lost_connections: workers.lost_connections,
        blocker,
        attempts,
        ddl_polls: running.observes_ddl.then_some(observed.ddl_polls),
        lock_per_second: observed.per_second,
        lock_samples: observed.samples,
        lock_worst: observed.worst,
        observer_gaps: observed.gaps,
        replica_samples,
        interrupted: interrupt.reason().map(str::to_string),
        interrupted_at_s: interrupt.fired_at_s(&clock),
        // Counted once the run's sessions are gone (`run_strategy`).
        rows_written: None,
        unfinished_ages_us: workers.unfinished_ages_us,
        pool: pool.map(|dry_at_s| PoolMeasured {
            gauges: (0..duration_s)
                .map(|second| {
                    let figures = live.second(second);
                    PoolGauge {
                        in_flight: figures.in_flight,
                        in_use: figures.pool_in_use,
                    }
                })
                .collect(),
            dry_at_s,
        }),
    };
    Ok((measured, notes))
}

/// Fires `interrupt` for `error` (unless it fired before) and stands in for
/// what the failed task would have returned.
fn interrupted_by<T: Default>(interrupt: &Interrupt, error: Error) -> T {
    interrupt.fire(error.to_string());
    T::default()
}

/// Finishes the load's workers and, with a load on both servers, the
/// replica's beside them (at once, so both get the same grace); returns how
/// each side's ended, the replica's with its recorder's task.
async fn finish_both_loads(
    workers: Vec<WorkerTask>,
    replica_load: Option<(JoinHandle<Recorder>, Vec<WorkerTask>)>,
    last_transaction: Duration,
    notes: &mut RunNotes,
) -> (WorkersEnded, Option<(JoinHandle<Recorder>, WorkersEnded)>) {
    let Some((recorder, replica_workers)) = replica_load else {
        return (finish_workers(workers, last_transaction, notes).await, None);
    };
    let mut replica_notes = RunNotes::default();
    let (ended, replica_ended) = tokio::join!(
        finish_workers(workers, last_transaction, notes),
        finish_workers(replica_workers, last_transaction, &mut replica_notes),
    );
    notes.warnings.extend(
        (replica_notes.warnings.into_iter()).map(|warning| format!("on the replica: {warning}")),
    );
    (ended, Some((recorder, replica_ended)))
}

/// The replica's clients' recorder once every hand-over is in; their
/// failures join the run's by kind, and their unfinished transactions get a warning.
async fn finish_replica_recorder(
    task: JoinHandle<Recorder>,
    (strategy_name, workers, last_transaction): (&str, &WorkersEnded, Duration),
    notes: &mut RunNotes,
) -> Result<Recorder, Error> {
    let recorder = task
        .await
        .map_err(|err| Error::runtime(format!("the replica's recorder task: {err}")))?;
    for (kind, count) in recorder.failed_by_kind() {
        match notes
            .failed_by_kind
            .iter_mut()
            .find(|(known, _)| *known == kind)
        {
            Some((_, total)) => *total += count,
            None => notes.failed_by_kind.push((kind, count)),
        }
    }
    let whose = "on the replica, ";
    warn_of_unfinished(strategy_name, whose, workers, last_transaction, notes);
    Ok(recorder)
}

/// Warns of the transactions still in flight at the end of the load that
/// were cancelled (`whose`: `""` for the load's, `on the replica, ` for the
/// replica's clients beside it).
fn warn_of_unfinished(
    strategy_name: &str,
    whose: &str,
    workers: &WorkersEnded,
    last_transaction: Duration,
    notes: &mut RunNotes,
) {
    if let Some(oldest_us) = workers.unfinished_ages_us.iter().max() {
        notes.warnings.push(format!(
            "{strategy_name}: {whose}{} transactions were still in flight {} ms after the end of \
             the load and were cancelled; they count as unfinished, their age (up to {:.1} s) as \
             a lower bound of their latency",
            workers.unfinished_ages_us.len(),
            last_transaction.as_millis(),
            *oldest_us as f64 / 1e6
        ));
    }
}

/// How the load workers ended, added up.
struct WorkersEnded {
    /// Workers that lost their connection during the run.
    lost_connections: u32,
    /// The age of each transaction in flight at the end that did not complete, in microseconds.
    unfinished_ages_us: Vec<u64>,
}

/// Gives workers `last_transaction` to finish their last transaction, cancels
/// those still in one (stuck in a lock queue), and adds up how they ended.
async fn finish_workers(
    tasks: Vec<WorkerTask>,
    last_transaction: Duration,
    notes: &mut RunNotes,
) -> WorkersEnded {
    tokio::time::sleep(last_transaction).await;
    for (task, cancel) in &tasks {
        if !task.is_finished() {
            let _ = cancel.cancel_query().await;
        }
    }
    let mut ended = WorkersEnded {
        lost_connections: 0,
        unfinished_ages_us: Vec::new(),
    };
    for (mut task, _) in tasks {
        let outcome = match tokio::time::timeout(Duration::from_secs(3), &mut task).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(err)) => load::WorkerOutcome {
                lost_connection: Some(format!("worker task failed: {err}")),
                unfinished_ages_us: Vec::new(),
            },
            Err(_) => {
                task.abort();
                load::WorkerOutcome::default()
            }
        };
        ended.unfinished_ages_us.extend(outcome.unfinished_ages_us);
        if let Some(message) = outcome.lost_connection {
            ended.lost_connections += 1;
            notes
                .warnings
                .push(format!("a worker lost its connection: {message}"));
        }
    }
    ended
}

/// Makes the application's last requests give up (the grace for them has
/// passed in [`finish_workers`]), waits for the application to end and adds its
/// unfinished requests to `workers`; returns when the pool ran dry, `None`
/// inside when it never did, `None` outside for a run without the pool.
async fn finish_pool(
    task: Option<(JoinHandle<PoolOutcome>, CancellationToken)>,
    workers: &mut WorkersEnded,
    notes: &mut RunNotes,
) -> Option<Option<f64>> {
    let (task, abandon) = task?;
    abandon.cancel();
    let outcome = task.await.unwrap_or_else(|err| PoolOutcome {
        last_loss: Some(format!("the application pool's task failed: {err}")),
        ..PoolOutcome::default()
    });
    workers
        .unfinished_ages_us
        .extend(&outcome.unfinished_ages_us);
    if let Some(message) = outcome.last_loss {
        workers.lost_connections += outcome.lost as u32;
        notes.warnings.push(format!(
            "{} connection(s) of the pool broke during the run and left it; the pool opens \
             a new one when a request needs it (last: {message})",
            outcome.lost
        ));
    }
    Some(outcome.dry_at_s)
}

/// Cancels the report if it is still running, and waits for its result.
async fn finish_blocker(
    task: Option<(JoinHandle<BlockerResult>, CancelToken)>,
    strategy_name: &str,
    notes: &mut RunNotes,
) -> Result<Option<BlockerResult>, Error> {
    let Some((task, cancel)) = task else {
        return Ok(None);
    };
    if !task.is_finished() {
        notes.warnings.push(format!(
            "{strategy_name}: the report was still running when the load ended; it was cancelled"
        ));
        let _ = cancel.cancel_query(NoTls).await;
    }
    let result = task
        .await
        .map_err(|err| Error::runtime(format!("blocker task: {err}")))?;
    if let Some(error) = &result.error {
        notes
            .warnings
            .push(format!("{strategy_name}: the report failed: {error}"));
    }
    Ok(Some(result))
}

/// Gives a running DDL attempt [`ddl::GRACE_AFTER_RUN`] to end after the
/// load, then cancels it; interrupted (before or during that grace), stops it
/// as [`stop_ddl`] does, confirming its rollback. Returns every attempt.
async fn finish_ddl(
    task: Option<(JoinHandle<Vec<DdlAttempt>>, SharedCancel)>,
    watch: &DdlWatch,
    interrupt: &Interrupt,
    strategy_name: &str,
    notes: &mut RunNotes,
) -> Result<Vec<DdlAttempt>, Error> {
    let Some((mut task, cancel)) = task else {
        return Ok(Vec::new());
    };
    if interrupt.reason().is_none() {
        tokio::select! {
            joined = tokio::time::timeout(ddl::GRACE_AFTER_RUN, &mut task) => {
                if let Ok(joined) = joined {
                    return joined.map_err(|err| Error::runtime(format!("DDL task: {err}")));
                }
            }
            _ = interrupt.fired() => {}
        }
    }
    let joined = if interrupt.reason().is_some() {
        let (joined, stopped) = stop_ddl(task, &cancel, watch).await;
        match stopped {
            DdlStopped::RolledBack | DdlStopped::ServerGone => {}
            // Said even for an interrupted run: a step that was committing may have committed.
            DdlStopped::Terminated => stderrln!(
                "warning: {strategy_name}: the DDL did not end its transaction when cancelled; \
                 its session was terminated (a step that was committing may have committed: \
                 look at the table)"
            ),
            // Said even for an interrupted run, whose other warnings are left out.
            DdlStopped::Unconfirmed(why) => stderrln!(
                "warning: {strategy_name}: the rollback of the DDL could not be confirmed \
                 ({why}); look at the table before relying on it"
            ),
        }
        joined
    } else {
        let _ = cancel.cancel_query().await;
        let mut joined = task.await;
        if let Ok(attempts) = &mut joined {
            notes
                .warnings
                .push(cut_off_by_the_end(strategy_name, attempts));
        }
        joined
    };
    joined.map_err(|err| Error::runtime(format!("DDL task: {err}")))
}

/// Marks the try that stallbench cancelled, still running [`ddl::GRACE_AFTER_RUN`]
/// after the load ended, as `cut_off` (its 57014 is stallbench's, not the
/// migration's), and says so; a try that ended before the cancel came is
/// kept, with what it means for the figures.
fn cut_off_by_the_end(strategy_name: &str, attempts: &mut [DdlAttempt]) -> String {
    let grace_s = ddl::GRACE_AFTER_RUN.as_secs();
    let Some(last) = attempts.last_mut() else {
        return format!("{strategy_name}: the DDL did not start before the load ended");
    };
    let cancelled = last.outcome == AttemptOutcome::Error
        && last
            .sqlstate
            .as_ref()
            .is_some_and(|kind| errors::is_state(kind, &SqlState::QUERY_CANCELED));
    if cancelled {
        last.outcome = AttemptOutcome::CutOff;
        return format!(
            "{strategy_name}: the DDL was still running {grace_s} s after the load ended; \
             stallbench cancelled it (try {}: cut_off), so its stall is longer than measured: \
             lengthen --duration to see it end",
            last.attempt
        );
    }
    format!(
        "{strategy_name}: the DDL ended at {:.1} s, more than {grace_s} s after the load did, \
         so the load saw only part of it: lengthen --duration",
        last.ended_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::failures::FailureKind;
    use crate::metrics::test_attempt;

    #[test]
    fn a_try_stallbench_cancelled_at_the_end_is_cut_off_and_one_that_ended_is_kept() {
        let mut cancelled = vec![test_attempt(1, 1.5, 11.5, AttemptOutcome::Error)];
        cancelled[0].sqlstate = Some(FailureKind::from_cell("57014"));
        let said = cut_off_by_the_end("naive", &mut cancelled);
        assert_eq!(cancelled[0].outcome, AttemptOutcome::CutOff);
        assert!(
            said.starts_with(
                "naive: the DDL was still running 5 s after the load ended; \
                 stallbench cancelled it (try 1: cut_off)"
            ),
            "{said}"
        );

        let mut ended = vec![test_attempt(4, 1.5, 11.57, AttemptOutcome::Ok)];
        let said = cut_off_by_the_end("retry", &mut ended);
        assert_eq!(ended[0].outcome, AttemptOutcome::Ok);
        assert_eq!(
            said,
            "retry: the DDL ended at 11.6 s, more than 5 s after the load did, \
             so the load saw only part of it: lengthen --duration"
        );

        // Another error is the migration's own.
        let mut failed = vec![test_attempt(1, 1.5, 2.0, AttemptOutcome::Error)];
        failed[0].sqlstate = Some(FailureKind::from_cell("42703"));
        cut_off_by_the_end("naive", &mut failed);
        assert_eq!(failed[0].outcome, AttemptOutcome::Error);
    }
}
