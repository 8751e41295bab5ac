//! One run of one strategy on one clock: load workers, blocker, DDL injector
//! and lock observer, started together; the result is a `StrategyReport`.

pub mod arrivals;
pub mod blocker;
pub mod ddl;
pub mod load;
pub mod observer;
pub mod precise_timer;
pub mod progress;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_postgres::NoTls;

use rand::SeedableRng;

use crate::config::Config;
use crate::error::Error;
use crate::metrics::locks::LockReport;
use crate::metrics::{
    LatencyDistribution, LatencyIntervals, LiveCounters, Recorder, StrategyReport, build_timeline,
    summarize,
};
use crate::pgwire::WireCancel;
use crate::strategy::{NamedStrategy, Strategy};
use crate::target::Target;
use arrivals::Arrivals;

/// Mixed into the run's seed for the arrival schedule, so it does not repeat a worker's draws.
const ARRIVALS_SEED: u64 = 0x5eed_a221_7a15;

/// The run clock: `second k` is `[k, k+1)` after the load starts.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    start: Instant,
    /// The wall-clock time of `start`, for files read by other tools.
    start_wall: SystemTime,
    duration: Duration,
}

impl RunClock {
    /// Starts the clock now.
    pub fn start(duration: Duration) -> RunClock {
        RunClock {
            start: Instant::now(),
            start_wall: SystemTime::now(),
            duration,
        }
    }

    /// The wall-clock time of second 0, in seconds since the Unix epoch.
    pub fn started_unix_s(&self) -> f64 {
        self.start_wall
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |since| since.as_secs_f64())
    }

    /// When the clock started (second 0 begins).
    pub fn started_at(&self) -> Instant {
        self.start
    }

    /// Seconds since the start, ms precision is what the files keep.
    pub fn now_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// The second an instant falls into.
    pub fn second_of(&self, at: Instant) -> u32 {
        at.saturating_duration_since(self.start).as_secs() as u32
    }

    pub fn second_now(&self) -> u32 {
        self.second_of(Instant::now())
    }

    /// The number of one-second rows of the timeline.
    pub fn duration_s(&self) -> u32 {
        self.duration.as_secs_f64().ceil() as u32
    }

    /// When the load ends.
    pub fn end(&self) -> Instant {
        self.start + self.duration
    }

    /// Sleeps until `offset` after the start.
    pub async fn sleep_until(&self, offset: Duration) {
        tokio::time::sleep_until(tokio::time::Instant::from_std(self.start + offset)).await;
    }
}

/// What a strategy run produced besides its report: things to tell the user.
#[derive(Debug, Clone, Default)]
pub struct RunNotes {
    /// Lines worth a warning: lost connections, a failed report, observer errors.
    pub warnings: Vec<String>,
    /// Failed transactions by SQLSTATE.
    pub failed_by_sqlstate: Vec<(String, u64)>,
    /// The role of every session the observer saw, by backend pid.
    pub roles: BTreeMap<u32, String>,
}

/// Runs one strategy: connects everything, starts the clock, runs the load for
/// its duration with the blocker and the DDL on the same clock, and collects.
pub async fn run_strategy(
    target: &Target,
    config: &Config,
    strategy: &NamedStrategy,
    seed: u64,
) -> Result<(StrategyReport, RunNotes), Error> {
    let scripts = Arc::new(config.load.scripts.clone());
    let variables = Arc::new(config.load.variables.clone());

    // Every connection is open and every statement prepared before the clock
    // starts, on the load runtime so that their sockets belong to its I/O driver.
    let load_runtime = load::LoadRuntime::start()?;
    let mut workers = Vec::with_capacity(config.load.clients as usize);
    for client_id in 0..config.load.clients {
        let connector = target.connector(&format!("reader-{}", client_id + 1), &strategy.settings);
        let to_prepare = scripts.clone();
        let connected = load_runtime.spawn(async move {
            let mut connection = connector.connect_wire().await?;
            let prepared = load::prepare(&mut connection, &to_prepare).await?;
            Ok::<_, Error>((connection, prepared))
        });
        let (connection, prepared) = connected
            .await
            .map_err(|err| Error::runtime(format!("connecting a load worker: {err}")))??;
        workers.push(load::Worker {
            connection,
            client_id,
            scripts: scripts.clone(),
            prepared,
            variables: variables.clone(),
            seed,
            client_timeout: config.load.client_timeout,
            latency_limit: config.load.latency_limit,
        });
    }
    let observer_client = match config.observe_locks {
        true => Some(target.connect("observer").await?),
        false => None,
    };
    let blocker_client = match &config.blocker {
        Some(_) => Some(
            target
                .connect_with_settings("report", &strategy.settings)
                .await?,
        ),
        None => None,
    };
    let ddl_client = match &config.ddl {
        Some(_) => Some(
            target
                .connect_with_settings("ddl", &strategy.settings)
                .await?,
        ),
        None => None,
    };
    let killer_client = match (&config.ddl, &strategy.strategy) {
        (Some(_), Strategy::KillBlockers { .. }) => Some(target.connect("killer").await?),
        _ => None,
    };

    let clock = RunClock::start(config.load.duration);
    let duration_s = clock.duration_s();
    let live = Arc::new(LiveCounters::new(duration_s));
    let mut arrivals_rng = rand::rngs::SmallRng::seed_from_u64(seed ^ ARRIVALS_SEED);
    let arrivals = config.load.rate_tps.map(|rate_tps| {
        Arc::new(Arrivals::new(
            clock.started_at(),
            config.load.duration,
            rate_tps,
            &mut arrivals_rng,
        ))
    });
    let (parts_tx, mut parts_rx) = mpsc::unbounded_channel();
    let workers_count = config.load.clients as usize;
    let recorder_task = tokio::spawn(async move {
        let mut recorder = Recorder::new(workers_count);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                part = parts_rx.recv() => match part {
                    Some(part) => recorder.add(part, clock.second_now()),
                    None => break,
                },
                _ = tick.tick() => recorder.settle(clock.second_now()),
            }
        }
        recorder.finish();
        recorder
    });

    let mut worker_tasks: Vec<(JoinHandle<load::WorkerOutcome>, WireCancel)> = Vec::new();
    for worker in workers {
        let cancel = worker.connection.cancel_handle();
        let task = load_runtime.spawn(load::run_worker(
            worker,
            clock,
            arrivals.clone(),
            live.clone(),
            parts_tx.clone(),
        ));
        worker_tasks.push((task, cancel));
    }
    drop(parts_tx);

    let (stop_tx, stop_rx) = watch::channel(false);
    let (queue_tx, queue_rx) = watch::channel(String::new());
    let observer_task = observer_client.map(|client| {
        tokio::spawn(observer::observe(
            client,
            clock,
            target.session_prefix.clone(),
            target.server_version_num,
            live.clone(),
            queue_tx,
            stop_rx.clone(),
        ))
    });
    let blocker_task = match (blocker_client, &config.blocker) {
        (Some(client), Some(blocker)) => {
            let cancel = client.cancel_token();
            Some((
                tokio::spawn(blocker::run_blocker(client, clock, blocker.clone())),
                cancel,
            ))
        }
        _ => None,
    };
    let (status_tx, status_rx) = watch::channel(String::from("not started"));
    let ddl_task = match (ddl_client, &config.ddl) {
        (Some(client), Some(ddl)) => {
            let cancel = client.cancel_token();
            Some((
                tokio::spawn(ddl::run_ddl(ddl::DdlInjector {
                    client,
                    killer: killer_client,
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
                })),
                cancel,
            ))
        }
        _ => {
            status_tx.send_replace("none".into());
            None
        }
    };
    let progress_task = (!config.quiet).then(|| {
        tokio::spawn(progress::report_each_second(
            clock,
            live.clone(),
            status_rx,
            queue_rx,
            config.ddl.is_some(),
            arrivals.clone(),
        ))
    });

    // The load runs for its duration; then everything is wound down.
    tokio::time::sleep_until(tokio::time::Instant::from_std(clock.end())).await;
    stop_tx.send_replace(true);
    let mut notes = RunNotes::default();

    let lost_connections = finish_workers(worker_tasks, &mut notes).await;
    let blocker_result = match blocker_task {
        Some((task, cancel)) => {
            if !task.is_finished() {
                notes.warnings.push(format!(
                    "{}: the report was still running when the load ended; it was cancelled",
                    strategy.name
                ));
                let _ = cancel.cancel_query(NoTls).await;
            }
            Some(
                task.await
                    .map_err(|err| Error::runtime(format!("blocker task: {err}")))?,
            )
        }
        None => None,
    };
    if let Some(error) = blocker_result
        .as_ref()
        .and_then(|result| result.error.as_ref())
    {
        notes
            .warnings
            .push(format!("{}: the report failed: {error}", strategy.name));
    }
    let attempts = match ddl_task {
        Some((mut task, cancel)) => {
            match tokio::time::timeout(ddl::GRACE_AFTER_RUN, &mut task).await {
                Ok(joined) => joined,
                Err(_) => {
                    notes.warnings.push(format!(
                        "{}: the DDL was still running {} s after the load ended; it was cancelled",
                        strategy.name,
                        ddl::GRACE_AFTER_RUN.as_secs()
                    ));
                    let _ = cancel.cancel_query(NoTls).await;
                    task.await
                }
            }
            .map_err(|err| Error::runtime(format!("DDL task: {err}")))?
        }
        None => Vec::new(),
    };
    let observed = match observer_task {
        Some(task) => task
            .await
            .map_err(|err| Error::runtime(format!("lock observer task: {err}")))?,
        None => observer::ObserverOutput::default(),
    };
    if let Some(message) = &observed.error {
        notes.warnings.push(message.clone());
    }
    notes.roles = observed.roles;
    if let Some(task) = progress_task {
        task.abort();
    }
    let recorder = recorder_task
        .await
        .map_err(|err| Error::runtime(format!("recorder task: {err}")))?;

    let lock_waiters: Vec<u32> = (0..duration_s)
        .map(|second| live.second(second).lock_waiters)
        .collect();
    if let Some(arrivals) = &arrivals {
        arrivals.count_unclaimed(&live);
    }
    let behind_schedule = live.behind_schedule(duration_s);
    let blocker_error = blocker_result
        .as_ref()
        .and_then(|result| result.error.clone());
    let blocker_window = blocker_result.map(|result| result.window);
    let seconds = build_timeline(
        duration_s,
        &recorder,
        &lock_waiters,
        &behind_schedule,
        blocker_window.as_ref(),
        &attempts,
    );
    let latency_us = recorder.total_latency_us();
    let intervals = LatencyIntervals {
        started_unix_s: clock.started_unix_s(),
        per_second: recorder.intervals(),
    };
    let mut summary = summarize(
        &strategy.name,
        &seconds,
        &attempts,
        blocker_window.as_ref(),
        &latency_us,
        lost_connections,
    );
    if let Some(error) = blocker_error {
        summary.blocker_outcome = format!("failed: {error}");
    }
    notes.failed_by_sqlstate = recorder.failed_by_sqlstate().into_iter().collect();
    Ok((
        StrategyReport {
            strategy: strategy.name.clone(),
            seconds,
            attempts,
            blocker: blocker_window,
            latency: LatencyDistribution::from_histogram(latency_us),
            summary,
            locks: LockReport {
                per_second: observed.per_second,
                samples: observed.samples,
                worst: observed.worst,
                server_log: Vec::new(),
            },
            intervals,
        },
        notes,
    ))
}

/// Lets workers finish their last transaction, cancels those stuck in a lock
/// queue, and returns how many lost their connection during the run.
async fn finish_workers(
    tasks: Vec<(JoinHandle<load::WorkerOutcome>, WireCancel)>,
    notes: &mut RunNotes,
) -> u32 {
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (task, cancel) in &tasks {
        if !task.is_finished() {
            let _ = cancel.cancel_query().await;
        }
    }
    let mut lost = 0;
    for (mut task, _) in tasks {
        let outcome = match tokio::time::timeout(Duration::from_secs(3), &mut task).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(err)) => load::WorkerOutcome {
                lost_connection: Some(format!("worker task failed: {err}")),
            },
            Err(_) => {
                task.abort();
                load::WorkerOutcome::default()
            }
        };
        if let Some(message) = outcome.lost_connection {
            lost += 1;
            notes
                .warnings
                .push(format!("a worker lost its connection: {message}"));
        }
    }
    lost
}
