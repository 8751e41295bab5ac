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

use tokio_postgres::CancelToken;
use tokio_util::sync::CancellationToken;

use super::reopen::SharedCancel;

use super::blocker;
use super::connect::Sessions;
use super::ddl;
use super::ddl::abort::DdlWatch;
use super::finish::{
    finish_blocker, finish_both_loads, finish_ddl, finish_pool, finish_replica_recorder,
    warn_of_unfinished,
};
use super::load;
use super::observer::{self, ObserverOutput};
use super::pool::{PoolOutcome, run_pool_app};
use super::replica_observer::{ReplicaObserved, observe_replica};
use crate::choices::Side;
use crate::config::{Config, ReplicaConfig};
use crate::engine::postgres::database::Database;
use crate::error::Error;
use crate::metrics::recorder::WorkerPart;
use crate::metrics::{DdlActivity, DdlAttempt, LiveCounters, PoolGauge, Recorder};
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
pub(super) type WorkerTask = (JoinHandle<load::WorkerOutcome>, load::WorkerCancel);

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
