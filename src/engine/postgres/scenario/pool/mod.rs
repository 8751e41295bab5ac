//! The application model (`--rate` with `--pool-size`): the arrivals are
//! requests to a service that holds a real deadpool-postgres pool of N
//! connections, as a Rust service would. Each request checks a connection
//! out (waiting at most `--pool-timeout`), runs one transaction of a script
//! and hands the connection back; a broken connection leaves the pool and
//! the pool opens a new one when it is next needed.
//!
//! This is what a stall looks like to the application: every connection
//! gets stuck behind the ALTER, new requests wait for a connection and give
//! up at the pool's timeout long before the database reports any error. So
//! the wait for a connection and the database time are recorded apart, as
//! well as end to end (from the scheduled arrival).
//!
//! One dispatcher takes the arrivals on schedule and spawns a task per
//! request (a service's handler); each request is one [`Txn`], tried and
//! counted as a lean worker's, into the application's one [`Recording`]
//! (the requests share it behind a lock, taken only to count an end; they
//! all run on the load thread, so it is never contended), which hands the
//! histograms of each second to the recorder as a lean worker does. A
//! sampler keeps the pool's gauges at the end of each second. The closed loop and `--rate` without
//! `--pool-size` never enter this module.

mod request;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use deadpool_postgres::{Object, Pool, RecyclingMethod, Runtime};
use rand::{RngExt, SeedableRng};
use tokio::sync::mpsc::UnboundedSender;
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::load::{pick_script, wait_for_arrival};
use crate::config::{LoadConfig, PoolConfig, Protocol, Recycling, WeightedScript};
use crate::engine::postgres::database::{Connector, error_text};
use crate::error::Error;
use crate::metrics::LiveCounters;
use crate::metrics::failures::{Failure, FailureKind};
use crate::metrics::recorder::WorkerPart;
use crate::scenario::RunClock;
use crate::scenario::arrivals::Arrivals;
use crate::scenario::txn::{Ended, Recording, RetryRule, Rewind, TryWindow, Txn, TxnOutcome};

/// How often a request given up mid-transaction repeats its cancel request
/// while its query goes on: a cancel that reaches the server before the query
/// does nothing. Its connection never serves another request, so a late
/// cancel cannot hit one, and the repeats can come quickly.
const CANCEL_REPEAT: Duration = Duration::from_millis(100);
/// How long a request given up mid-transaction waits for its query to end
/// before its connection is dropped anyway.
const CANCEL_WAIT: Duration = Duration::from_secs(3);

/// The application: its pool, open before the clock starts, and what each request runs.
pub struct PoolApp {
    pool: Pool,
    /// How a cancel request reaches the server (TLS as the connections).
    cancel_tls: MakeRustlsConnect,
    settings: PoolConfig,
    scripts: Arc<Vec<WeightedScript>>,
    variables: Arc<Vec<(String, String)>>,
    seed: u64,
    /// How statements are sent (`--protocol`).
    protocol: Protocol,
    /// `:default_seed` and `:random_seed`, as for the lean connections.
    seeds: crate::script::RandomSeeds,
    /// `--client-timeout` and `--latency-limit`, as for the lean connections.
    client_timeout: Option<Duration>,
    latency_limit: Option<Duration>,
    /// Which failed tries are tried again (`--max-tries`), as for the lean connections.
    retry: RetryRule,
}

impl PoolApp {
    /// Builds the pool and opens its connections, each with every script
    /// prepared (a statement the server rejects is a bad script: exit 2).
    /// Runs on the load runtime, where the connections' tasks then live.
    pub async fn open(
        connector: Connector,
        settings: PoolConfig,
        load: LoadConfig,
        seed: u64,
    ) -> Result<PoolApp, Error> {
        let retry = super::connect::retry_rule(&load);
        let scripts = Arc::new(load.scripts);
        let describe = connector.describe();
        let connector_words = connector.clone();
        let cancel_tls = connector.cancel_tls();
        let recycling = match settings.recycling {
            Recycling::Fast => RecyclingMethod::Fast,
            Recycling::Verified => RecyclingMethod::Verified,
        };
        let pool = Pool::builder(connector.pool_manager(recycling))
            .max_size(settings.size as usize)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(settings.wait_timeout))
            .create_timeout(Some(settings.connect_timeout))
            .recycle_timeout(Some(settings.connect_timeout))
            .build()
            .map_err(|err| Error::runtime(format!("building the connection pool: {err}")))?;
        let mut opened = Vec::with_capacity(settings.size as usize);
        for _ in 0..settings.size {
            let client = pool.get().await.map_err(|err| {
                Error::runtime(format!(
                    "the pool cannot connect to {describe}: {}",
                    pool_error_text(&err)
                ))
            })?;
            prepare_scripts(&client, &connector_words, &scripts, load.protocol).await?;
            opened.push(client);
        }
        drop(opened);
        let seeds = crate::script::RandomSeeds::new(seed, settings.size);
        Ok(PoolApp {
            pool,
            cancel_tls,
            settings,
            scripts,
            variables: Arc::new(load.variables),
            seed,
            protocol: load.protocol,
            seeds,
            client_timeout: load.client_timeout,
            latency_limit: load.latency_limit,
            retry,
        })
    }
}

/// Prepares every SQL command of every script on `client` (into its
/// statement cache), which also has the server check them; not for
/// `--protocol simple`, whose variables are text in the statement.
async fn prepare_scripts(
    client: &Object,
    connector: &Connector,
    scripts: &[WeightedScript],
    protocol: Protocol,
) -> Result<(), Error> {
    if protocol == Protocol::Simple {
        return Ok(());
    }
    for weighted in scripts {
        for sql in weighted.script.sql_commands().filter(|sql| !sql.compound) {
            client.prepare_cached(&sql.sql).await.map_err(|err| {
                Error::bad_input(format!(
                    "script {} line {}: the server rejects this statement: {}",
                    weighted.script.name,
                    sql.line,
                    connector.rejection(error_text(&err), err.code())
                ))
            })?;
        }
    }
    Ok(())
}

/// The text of a pool error, with the server's message when there is one.
fn pool_error_text(err: &deadpool_postgres::PoolError) -> String {
    match err {
        deadpool_postgres::PoolError::Backend(err) => error_text(err),
        other => other.to_string(),
    }
}

/// How the application ended: what the wind-down reports and the summary keeps.
#[derive(Debug, Clone, Default)]
pub struct PoolOutcome {
    /// The age of each request waiting or running at the end of the load,
    /// cancelled, in microseconds: a lower bound of its latency, in no second.
    pub unfinished_ages_us: Vec<u64>,
    /// When the first request that timed out waiting for a connection began to wait, on the run clock.
    pub dry_at_s: Option<f64>,
    /// Connections that broke during the run, and the last one's message.
    pub lost: u64,
    pub last_loss: Option<String>,
}

/// What every request task shares.
struct Shared {
    pool: Pool,
    cancel_tls: MakeRustlsConnect,
    /// A request not done this long after its scheduled start gives up (`--client-timeout`).
    client_timeout: Option<Duration>,
    /// A request checked out this late behind its schedule is skipped (`--latency-limit`).
    latency_limit: Option<Duration>,
    retry: RetryRule,
    /// When the load ends: no retry starts after it.
    end: Instant,
    scripts: Arc<Vec<WeightedScript>>,
    protocol: Protocol,
    /// Fired by the wind-down: requests still waiting or running give up.
    abandon: CancellationToken,
    /// Requests waiting for a connection or running.
    in_flight: AtomicU64,
    /// Where every request's end is counted; `None` once the application has stopped.
    ends: Mutex<Option<Ends>>,
}

/// The application's recording, and what the ends say about its pool.
struct Ends {
    recording: Recording,
    outcome: PoolOutcome,
    clock: RunClock,
}

impl Shared {
    /// Counts the end of a request (`txn`, with `outcome`, at `ended`) and
    /// notes what it says about the pool.
    fn end(&self, txn: Txn, outcome: &TxnOutcome, ended: Instant, asked: Instant) {
        let mut ends = self.ends.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(Ends {
            recording,
            outcome: pool,
            clock,
        }) = ends.as_mut()
        else {
            return;
        };
        if txn.end(outcome, ended, recording) == Ended::InTheLoad {
            pool.note(outcome, txn.got_no_connection(), asked, *clock);
        }
    }
}

/// Serves the arrivals until the end of the load (or `interrupt`), then,
/// once `abandon` fires (the wind-down's grace for the last requests), cancels
/// what is still in flight; records into `parts` as worker 0 and into `live`.
pub async fn run_pool_app(
    app: PoolApp,
    clock: RunClock,
    arrivals: Arc<Arrivals>,
    live: Arc<LiveCounters>,
    parts: UnboundedSender<WorkerPart>,
    interrupt: CancellationToken,
    abandon: CancellationToken,
) -> PoolOutcome {
    let recording = Recording::new(0, parts, clock, live.clone(), interrupt.clone());
    let ends = Ends {
        recording,
        outcome: PoolOutcome::default(),
        clock,
    };
    let shared = Arc::new(Shared {
        pool: app.pool.clone(),
        cancel_tls: app.cancel_tls.clone(),
        scripts: app.scripts.clone(),
        protocol: app.protocol,
        client_timeout: app.client_timeout,
        latency_limit: app.latency_limit,
        retry: app.retry,
        end: clock.end(),
        abandon,
        in_flight: AtomicU64::new(0),
        ends: Mutex::new(Some(ends)),
    });
    let sampler = tokio::spawn(sample_gauges(
        clock,
        shared.clone(),
        app.settings.size,
        live.clone(),
    ));
    let tracker = TaskTracker::new();
    dispatch(&app, &shared, clock, &arrivals, &live, &interrupt, &tracker).await;
    tracker.close();
    tracker.wait().await;
    sampler.abort();
    app.pool.close();
    let ends = shared
        .ends
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let Some(Ends {
        recording,
        mut outcome,
        ..
    }) = ends
    else {
        return PoolOutcome::default();
    };
    outcome.unfinished_ages_us = recording.finish();
    outcome
}

/// Takes each arrival on schedule and spawns its request, or rejects it at
/// once when `--max-in-flight` requests are already waiting or running.
async fn dispatch(
    app: &PoolApp,
    shared: &Arc<Shared>,
    clock: RunClock,
    arrivals: &Arrivals,
    live: &LiveCounters,
    interrupt: &CancellationToken,
    tracker: &TaskTracker,
) {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(app.seed);
    let total_weight: u32 = app.scripts.iter().map(|weighted| weighted.weight).sum();
    let mut timer = None;
    let mut number: u64 = 0;
    while let Some(scheduled) = arrivals.claim(&mut rng, live) {
        wait_for_arrival(&mut timer, scheduled).await;
        let started = Instant::now();
        if started >= clock.end() || interrupt.is_cancelled() {
            // Claimed but never started: the arrival leaves the queue with the run.
            live.record_dequeue(clock.second_of(scheduled));
            break;
        }
        live.record_dequeue(clock.second_of(started));
        number += 1;
        let in_flight = shared.in_flight.load(Ordering::Relaxed);
        if app
            .settings
            .max_in_flight
            .is_some_and(|limit| in_flight >= u64::from(limit))
        {
            let rejected = TxnOutcome::Failed(Failure::rejected());
            let txn = Txn::due(scheduled).asking_the_pool(started);
            shared.end(txn, &rejected, started, started);
            tokio::task::yield_now().await;
            continue;
        }
        let index = match app.scripts.len() {
            1 => 0,
            _ => pick_script(&app.scripts, rng.random_range(0..total_weight)),
        };
        // Each request its own variables and random stream, as a handler would have.
        let client_id = (number % u64::from(app.settings.size)) as u32;
        let (_, automatic) = app.seeds.client(client_id);
        let vars = app.scripts[index]
            .script
            .new_vars(automatic, &app.variables);
        let request_rng = crate::script::Prng::new(app.seed ^ number);
        shared.in_flight.fetch_add(1, Ordering::Relaxed);
        tracker.spawn(serve(shared.clone(), index, scheduled, vars, request_rng));
        // Behind schedule every arrival is already due: let the requests run
        // between two, as a service's accept loop does not starve its handlers.
        tokio::task::yield_now().await;
    }
}

/// One request: checkout, transaction, hand-back; its end is counted as it ends.
async fn serve(
    shared: Arc<Shared>,
    index: usize,
    scheduled: Instant,
    mut vars: crate::script::Vars,
    mut rng: crate::script::Prng,
) {
    let asked = Instant::now();
    let mut txn = Txn::due(scheduled).asking_the_pool(asked);
    let deadline = shared.client_timeout.map(|timeout| scheduled + timeout);
    let checkout = tokio::select! {
        checkout = shared.pool.get() => Ok(checkout),
        _ = shared.abandon.cancelled() => Err(TxnOutcome::Unfinished),
        _ = sleep_until_deadline(deadline) => Err(TxnOutcome::Failed(Failure::client_timeout())),
    };
    let outcome = match checkout {
        Err(outcome) => outcome,
        Ok(Err(err)) => request::checkout_failed(err),
        Ok(Ok(client)) => {
            let checked_out = Instant::now();
            txn.checked_out(checked_out);
            let late = checked_out.saturating_duration_since(scheduled);
            match shared.latency_limit {
                Some(limit) if late > limit => TxnOutcome::Skipped,
                _ => {
                    let state = Rewind {
                        vars: &mut vars,
                        saved: None,
                        prng: &mut rng,
                    };
                    let request = Request {
                        index,
                        scheduled,
                        deadline,
                    };
                    transact(&shared, client, request, state, &mut txn).await
                }
            }
        }
    };
    shared.end(txn, &outcome, Instant::now(), asked);
    shared.in_flight.fetch_sub(1, Ordering::Relaxed);
}

/// Sleeps until `deadline`, forever without one.
async fn sleep_until_deadline(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)).await,
        None => std::future::pending().await,
    }
}

/// Which script a request runs, when it was due and when it gives up.
struct Request {
    index: usize,
    scheduled: Instant,
    /// `--client-timeout` after it was due.
    deadline: Option<Instant>,
}

/// Runs the request's script on `client` (tried as [`Txn::run`] says) and
/// hands the connection back, or takes
/// it out of the pool when it broke, could not be cleaned up, or was given
/// up mid-transaction (`--client-timeout`, or the end of the load): a cancel
/// request stops its query, and a connection a late cancel could still hit
/// never serves another request.
async fn transact(
    shared: &Shared,
    client: Object,
    request: Request,
    state: Rewind<'_>,
    txn: &mut Txn,
) -> TxnOutcome {
    let Request {
        index,
        scheduled,
        deadline,
    } = request;
    let script = &shared.scripts[index].script;
    // Each request has its own variables: their copy for a rewind is made only when retrying.
    let mut saved = shared.retry.retries().then(|| state.vars.clone());
    let state = Rewind {
        saved: saved.as_mut(),
        ..state
    };
    let window = TryWindow::new(scheduled, shared.end, shared.client_timeout);
    let mut attempt = request::Attempt {
        client: &client,
        script,
        protocol: shared.protocol,
        unusable: false,
    };
    let finished = {
        let mut transaction = std::pin::pin!(txn.run(&mut attempt, shared.retry, window, state));
        let given_up = tokio::select! {
            result = &mut transaction => Ok(result),
            _ = shared.abandon.cancelled() => Err(TxnOutcome::Unfinished),
            _ = sleep_until_deadline(deadline) => Err(TxnOutcome::Failed(Failure::client_timeout())),
        };
        if given_up.is_err() {
            let cancel = client.cancel_token();
            let until = tokio::time::Instant::now() + CANCEL_WAIT;
            while tokio::time::Instant::now() < until {
                let _ = cancel.cancel_query(shared.cancel_tls.clone()).await;
                if tokio::time::timeout(CANCEL_REPEAT, &mut transaction)
                    .await
                    .is_ok()
                {
                    break;
                }
            }
        }
        given_up
    };
    let result = match finished {
        Ok(result) => result,
        Err(given_up) => {
            drop(Object::take(client));
            return given_up;
        }
    };
    let unusable = attempt.unusable;
    match result {
        Ok(()) => TxnOutcome::Done,
        Err(TxnOutcome::Failed(failure)) => {
            request::clean_up(&client, &failure);
            if unusable {
                drop(Object::take(client));
            }
            TxnOutcome::Failed(failure)
        }
        Err(other) => {
            // Lost: the connection leaves the pool, which opens a new one when needed.
            drop(Object::take(client));
            other
        }
    }
}

/// Keeps, at the end of each second, how many requests were in flight and
/// how many of the pool's connections were checked out.
async fn sample_gauges(clock: RunClock, shared: Arc<Shared>, size: u32, live: Arc<LiveCounters>) {
    for second in 0..clock.duration_s() {
        let end_of_second = clock.started_at() + Duration::from_secs(u64::from(second) + 1);
        tokio::time::sleep_until(tokio::time::Instant::from_std(end_of_second)).await;
        let status = shared.pool.status();
        let in_use = status
            .size
            .saturating_sub(status.available)
            .min(size as usize);
        live.record_pool_gauges(
            second,
            shared.in_flight.load(Ordering::Relaxed),
            in_use as u64,
        );
    }
}

/// The earlier of `known` and `at` (on the run clock, in seconds).
fn earliest(known: Option<f64>, clock: RunClock, at: Instant) -> f64 {
    let at_s = at
        .saturating_duration_since(clock.started_at())
        .as_secs_f64();
    known.map_or(at_s, |known| known.min(at_s))
}

impl PoolOutcome {
    /// Notes what a request that ended during the load (as `outcome`;
    /// `no_connection`: it never got one; it asked for one at `asked`) says
    /// about the pool: it ran dry (a request gave up waiting for a
    /// connection), or it lost a connection.
    fn note(&mut self, outcome: &TxnOutcome, no_connection: bool, asked: Instant, clock: RunClock) {
        match outcome {
            TxnOutcome::Failed(failure)
                if failure.kind == FailureKind::PoolTimeout
                    || (failure.kind == FailureKind::ClientTimeout && no_connection) =>
            {
                self.dry_at_s = Some(earliest(self.dry_at_s, clock, asked));
            }
            TxnOutcome::Lost(failure) => {
                self.lost += 1;
                self.last_loss = Some(failure.message.clone());
            }
            _ => {}
        }
    }
}
