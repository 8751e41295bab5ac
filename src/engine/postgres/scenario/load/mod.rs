//! The load workers: pgbench-style clients, each owning its connection
//! ([`crate::engine::postgres::pgwire`]) for the whole run, with prepared statements; closed
//! loop, or open loop on a shared arrival schedule (`--rate`), with an
//! optional request timeout.
//!
//! The hot path takes no shared lock and waits on nobody: latency goes into
//! the worker's own figures of the current second, handed to the recorder
//! once a second; the progress counters are relaxed atomics. What a
//! transaction's end counts as is [`crate::scenario::txn`]'s, shared with the
//! application pool.
//!
//! A lost connection (a terminated session, a server restart or failover, a
//! reset) ends neither the worker nor the run: as an application does, the
//! worker counts the transaction in flight as failed, reconnects with a short
//! capped backoff and goes on, so an outage shows as a dip and a recovery.
//! That logic lives in the error branch ([`Session::reopen`]); a healthy
//! connection's transaction does no extra work for it.
//!
//! Likewise, as pgjdbc, pgx and npgsql do, a worker whose prepared statements
//! the server no longer accepts (`0A000` cached plan must not change result
//! type, after an `ALTER COLUMN ... TYPE`; `26000` invalid statement name)
//! counts the failure and prepares its statements again before the next
//! transaction ([`Session::prepare_again`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::config::{Protocol, WeightedScript};
use crate::engine::postgres::database::Connector;
use crate::engine::postgres::errors;
use crate::engine::postgres::pgwire::{WireCancel, WireConnection, WireError, WireStatement};
use crate::error::Error;
use crate::metrics::LiveCounters;
use crate::metrics::failures::Failure;
use crate::metrics::recorder::WorkerPart;
use crate::scenario::RunClock;
use crate::scenario::arrivals::Arrivals;
use crate::scenario::precise_timer::PreciseTimer;
use crate::scenario::txn::{Ended, Recording, RetryRule, Rewind, TryWindow, Txn, TxnOutcome};
use crate::script;

mod session;
mod transaction;
use session::{Lost, Session};

/// A script's SQL commands prepared on one connection, by
/// [`script::SqlCommand::number`] (`None`: not prepared, for `--protocol
/// simple`/`extended` and `\;` compounds).
pub struct PreparedScript {
    statements: Vec<Option<WireStatement>>,
}

/// Prepares every SQL command of every script on `connection` (opened by
/// `connector`, which words a rejection), as `protocol` wants: all of them
/// for `prepared`; none for `simple` (its variables are text in the
/// statement) and `extended` (which the server checks here all the same, by
/// preparing them once).
pub async fn prepare(
    connection: &mut WireConnection,
    connector: &Connector,
    scripts: &[WeightedScript],
    protocol: Protocol,
) -> Result<Vec<PreparedScript>, Error> {
    let mut prepared = Vec::with_capacity(scripts.len());
    for weighted in scripts {
        let script = &weighted.script;
        let mut statements = Vec::new();
        for sql in script.sql_commands() {
            if protocol == Protocol::Simple || sql.compound {
                statements.push(None);
                continue;
            }
            let statement = connection.prepare(&sql.sql).await.map_err(|err| {
                let code = match &err {
                    WireError::Server(server) => Some(&server.code),
                    WireError::Lost { .. } => None,
                };
                Error::bad_input(format!(
                    "script {} line {}: the server rejects this statement: {}",
                    script.name,
                    sql.line,
                    connector.rejection(&err, code)
                ))
            })?;
            statements.push((protocol == Protocol::Prepared).then_some(statement));
        }
        prepared.push(PreparedScript { statements });
    }
    Ok(prepared)
}

/// Everything one worker needs; it owns its connection.
pub struct Worker {
    pub connection: WireConnection,
    /// Opens the connection again when it is lost.
    pub connector: Connector,
    /// Cancels the running query of whichever connection the worker has (end of the run).
    pub cancel: WorkerCancel,
    pub client_id: u32,
    pub scripts: Arc<Vec<WeightedScript>>,
    pub prepared: Vec<PreparedScript>,
    pub variables: Arc<Vec<(String, String)>>,
    pub seed: u64,
    /// The generator of the scripts' random functions, and the automatic variables.
    pub random: (script::Prng, script::Automatic),
    /// How statements are sent.
    pub protocol: Protocol,
    /// Fail and cancel a transaction not finished this long after its (scheduled) start.
    pub client_timeout: Option<Duration>,
    /// Open loop: skip a transaction this late behind its schedule.
    pub latency_limit: Option<Duration>,
    /// Which failed tries are tried again (`--max-tries`).
    pub retry: RetryRule,
}

/// The cancel handle of a worker's current connection, shared with the end of
/// the run, which cancels a query still stuck in a lock queue. A reconnect
/// replaces it; the lock is taken only then and when cancelling.
#[derive(Debug, Clone)]
pub struct WorkerCancel(Arc<Mutex<WireCancel>>);

impl WorkerCancel {
    /// The handle of the worker's first connection.
    pub fn new(cancel: WireCancel) -> WorkerCancel {
        WorkerCancel(Arc::new(Mutex::new(cancel)))
    }

    /// Asks the server to cancel what the worker's current connection runs.
    pub async fn cancel_query(&self) -> std::io::Result<()> {
        let current = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        current.cancel_query().await
    }

    fn replace(&self, cancel: WireCancel) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = cancel;
    }
}

/// How a worker ended.
#[derive(Debug, Clone, Default)]
pub struct WorkerOutcome {
    /// Set when the connection was lost at least once: the last loss, and
    /// whether the worker had a connection again at the end.
    pub lost_connection: Option<String>,
    /// The age of the transaction in flight at the end of the load, if it did
    /// not complete (cancelled after the last-transaction wait), in
    /// microseconds: a lower bound of its latency. It is in no second's figures.
    pub unfinished_ages_us: Vec<u64>,
}

/// Runs transactions until the end of the load or `interrupt`; records into `live` and `parts`.
/// Closed loop without `arrivals` (the next transaction starts when the last
/// ends); open loop with them (each transaction starts at a scheduled time,
/// and its latency counts from then).
pub async fn run_worker(
    worker: Worker,
    clock: RunClock,
    arrivals: Option<Arc<Arrivals>>,
    live: Arc<LiveCounters>,
    parts: UnboundedSender<WorkerPart>,
    interrupt: CancellationToken,
) -> WorkerOutcome {
    let recording = Recording::new(
        worker.client_id as usize,
        parts,
        clock,
        live,
        interrupt.clone(),
    );
    let mut client = Client::new(worker, clock, arrivals, recording, interrupt);
    loop {
        let start = match client.arrivals.is_some() {
            false => Start::now(),
            true => match client.next_arrival().await {
                Some(start) => start,
                None => break,
            },
        };
        let mut txn = Txn::due(start.scheduled);
        let (sent, outcome, ended) = match client.admit(start) {
            Admit::Send => {
                if client.arrivals.is_some() {
                    txn = txn.sent_late(start.lag());
                }
                // The transaction is made where it is awaited, here rather than in a
                // method of its own, so that its future is not copied per transaction.
                let index = client.pick_script();
                let mut attempt = transaction::Run {
                    connection: &mut client.session.connection,
                    script: &client.scripts[index].script,
                    prepared: &client.session.prepared[index],
                    protocol: client.protocol,
                    buffers: &mut client.buffers,
                };
                let window = TryWindow::new(start.scheduled, client.end, client.client_timeout);
                let rewind = Rewind {
                    vars: &mut client.vars[index],
                    saved: client.saved_vars.get_mut(index),
                    prng: &mut client.prng,
                };
                let tried = txn.run(&mut attempt, client.retry, window, rewind);
                let result = match client.client_timeout {
                    None => tried.await,
                    Some(timeout) => {
                        let (deadline, cancel) =
                            (start.scheduled + timeout, &client.session.cancel);
                        transaction::run_until(tried, deadline, cancel).await
                    }
                };
                let outcome = result.err().unwrap_or(TxnOutcome::Done);
                (true, outcome, Instant::now())
            }
            Admit::NotSent(outcome) => (false, outcome, start.started),
            Admit::LoadOver => break,
        };
        if txn.end(&outcome, ended, &mut client.recording) == Ended::AfterTheLoad {
            break;
        }
        // Only a failure leaves something to repair: the healthy path never enters `recover`.
        if sent && !matches!(outcome, TxnOutcome::Done) && !client.recover(outcome, ended).await {
            break;
        }
    }
    let unfinished_ages_us = client.recording.finish();
    WorkerOutcome {
        unfinished_ages_us,
        ..client.session.close().await
    }
}

/// When a transaction is due and when it starts.
#[derive(Debug, Clone, Copy)]
struct Start {
    /// Its scheduled arrival (open loop), else its start.
    scheduled: Instant,
    started: Instant,
}

impl Start {
    /// A closed loop's transaction: due now, started now.
    fn now() -> Start {
        let now = Instant::now();
        Start {
            scheduled: now,
            started: now,
        }
    }

    /// How late it starts behind its schedule.
    fn lag(&self) -> Duration {
        self.started.saturating_duration_since(self.scheduled)
    }
}

/// What [`Client::admit`] decides about a transaction due to start.
enum Admit {
    Send,
    /// Skipped or timed out before it was sent (it ends when it was due to start).
    NotSent(TxnOutcome),
    /// The load is over or interrupted: the worker stops.
    LoadOver,
}

/// One pgbench client while it runs: its session, its scripts' variables,
/// its random stream, its schedule and its recording. The phases of a
/// transaction: when it starts (now, or [`Client::next_arrival`]), whether it
/// is sent ([`Client::admit`]), running it ([`Txn::run`] of a
/// [`transaction::Run`], in [`run_worker`]), counting how it ended
/// ([`Txn::end`]) and what a failure leaves to repair ([`Client::recover`]).
struct Client {
    session: Session,
    scripts: Arc<Vec<WeightedScript>>,
    total_weight: u32,
    vars: Vec<script::Vars>,
    /// A copy of each script's variables at the start of the transaction, for
    /// a retry's rewind; empty when failed tries are never retried.
    saved_vars: Vec<script::Vars>,
    /// Which failed tries are tried again.
    retry: RetryRule,
    /// What a transaction reuses from the last one (parameters, rows).
    buffers: transaction::Buffers,
    /// Draws the script and the open loop's arrivals.
    rng: rand::rngs::SmallRng,
    /// The scripts' random functions (PostgreSQL's generator, as pgbench's).
    prng: script::Prng,
    protocol: Protocol,
    recording: Recording,
    clock: RunClock,
    /// When the load ends.
    end: Instant,
    /// Open loop: the shared schedule, and this worker's timer for it.
    arrivals: Option<Arc<Arrivals>>,
    timer: Option<PreciseTimer>,
    client_timeout: Option<Duration>,
    latency_limit: Option<Duration>,
    interrupt: CancellationToken,
}

impl Client {
    fn new(
        worker: Worker,
        clock: RunClock,
        arrivals: Option<Arc<Arrivals>>,
        recording: Recording,
        interrupt: CancellationToken,
    ) -> Client {
        let Worker {
            connection,
            connector,
            cancel,
            client_id,
            scripts,
            prepared,
            variables,
            seed,
            random: (prng, automatic),
            protocol,
            client_timeout,
            latency_limit,
            retry,
        } = worker;
        let session = Session::new(
            connection,
            prepared,
            protocol,
            connector,
            cancel,
            interrupt.clone(),
        );
        let vars: Vec<script::Vars> = scripts
            .iter()
            .map(|weighted| weighted.script.new_vars(automatic, &variables))
            .collect();
        Client {
            session,
            total_weight: scripts.iter().map(|weighted| weighted.weight).sum(),
            saved_vars: match retry.retries() {
                true => vars.clone(),
                false => Vec::new(),
            },
            vars,
            retry,
            scripts,
            buffers: transaction::Buffers::default(),
            rng: rand::rngs::SmallRng::seed_from_u64(seed.wrapping_add(u64::from(client_id))),
            prng,
            protocol,
            recording,
            clock,
            end: clock.end(),
            arrivals,
            timer: None,
            client_timeout,
            latency_limit,
            interrupt,
        }
    }

    /// Open loop: claims the next arrival of the schedule and waits for
    /// it; `None` once the schedule is used up.
    async fn next_arrival(&mut self) -> Option<Start> {
        let arrivals = self.arrivals.as_ref()?;
        let at = arrivals.claim(&mut self.rng, self.recording.live())?;
        wait_for_arrival(&mut self.timer, at).await;
        Some(Start {
            scheduled: at,
            started: Instant::now(),
        })
    }

    /// Whether a transaction is sent. Not once the load is over (or
    /// interrupted); in an open loop, not when it is too late for
    /// `--latency-limit` (skipped) or past its `--client-timeout` already
    /// (behind its schedule). A closed loop's
    /// transaction starts when it is due, so only the end stops it.
    fn admit(&mut self, start: Start) -> Admit {
        let open_loop = self.arrivals.is_some();
        if start.started >= self.end || self.interrupt.is_cancelled() {
            if open_loop {
                // Claimed but never started: the run ended first, so the
                // arrival leaves the queue with it instead of counting as late.
                let second = self.clock.second_of(start.scheduled);
                self.recording.live().record_dequeue(second);
            }
            return Admit::LoadOver;
        }
        if !open_loop {
            return Admit::Send;
        }
        let second = self.clock.second_of(start.started);
        self.recording.live().record_dequeue(second);
        let lag = start.lag();
        let outcome = if self.latency_limit.is_some_and(|limit| lag > limit) {
            TxnOutcome::Skipped
        } else if self.client_timeout.is_some_and(|timeout| lag >= timeout) {
            TxnOutcome::Failed(Failure::client_timeout())
        } else {
            return Admit::Send;
        };
        Admit::NotSent(outcome)
    }

    /// The script of the next transaction, drawn by weight.
    #[inline]
    fn pick_script(&mut self) -> usize {
        match self.scripts.len() {
            1 => 0,
            _ => pick_script(&self.scripts, self.rng.random_range(0..self.total_weight)),
        }
    }

    /// Repairs what a failed transaction left: a lost
    /// connection is opened again, a transaction block the server says is
    /// open is rolled back, statements the server no longer accepts are
    /// prepared again.
    /// False if the load ended first.
    async fn recover(&mut self, outcome: TxnOutcome, ended: Instant) -> bool {
        let scripts = &self.scripts;
        let (clock, rng, recording) = (self.clock, &mut self.rng, &mut self.recording);
        match outcome {
            TxnOutcome::Done | TxnOutcome::Skipped | TxnOutcome::Unfinished => true,
            TxnOutcome::Lost(failure) => {
                let lost = Lost {
                    at: ended,
                    message: failure.message,
                };
                self.session
                    .reopen(lost, scripts, clock, rng, recording)
                    .await
            }
            TxnOutcome::Failed(failure) => {
                if self.session.connection.in_transaction_block()
                    && !self.session.roll_back(scripts, clock, rng, recording).await
                {
                    return false;
                }
                !errors::statements_are_stale(&failure.kind)
                    || self
                        .session
                        .prepare_again(scripts, clock, rng, recording)
                        .await
            }
        }
    }
}

/// Waits for an arrival on the worker's precise timer, made at its first
/// arrival. Should the kernel refuse a timerfd, the worker falls back to
/// tokio's millisecond timer (late by about 1 ms, but never stopped).
pub(super) async fn wait_for_arrival(timer: &mut Option<PreciseTimer>, at: Instant) {
    if timer.is_none() {
        *timer = PreciseTimer::new().ok();
    }
    let precise = match timer {
        Some(precise) => precise.wait_until(at).await,
        None => Err(std::io::Error::other("no timerfd")),
    };
    if precise.is_err() {
        *timer = None;
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
    }
}

/// The script whose cumulative weight range holds `draw` (0..total weight).
pub(super) fn pick_script(scripts: &[WeightedScript], mut draw: u32) -> usize {
    for (index, weighted) in scripts.iter().enumerate() {
        if draw < weighted.weight {
            return index;
        }
        draw -= weighted.weight;
    }
    scripts.len() - 1
}

#[cfg(test)]
mod tests {
    use super::session::second_in_load;
    use super::*;

    #[test]
    fn a_moment_past_the_end_counts_in_the_last_second() {
        let clock = RunClock::start(Duration::from_millis(2_500));
        let start = clock.started_at();
        assert_eq!(second_in_load(clock, start), 0);
        assert_eq!(
            second_in_load(clock, start + Duration::from_millis(1_200)),
            1
        );
        assert_eq!(second_in_load(clock, clock.end()), 2);
        assert_eq!(second_in_load(clock, start + Duration::from_secs(9)), 2);
    }
}
