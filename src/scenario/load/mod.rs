//! The load workers: pgbench-style clients, each owning its connection
//! ([`crate::pgwire`]) for the whole run, with prepared statements; closed
//! loop, or open loop on a shared arrival schedule (`--rate`), with an
//! optional request timeout.
//!
//! The hot path takes no shared lock and waits on nobody: latency goes into
//! the worker's own histogram of the current second, handed to the recorder
//! once a second; the progress counters are relaxed atomics.
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
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::RunClock;
use super::arrivals::Arrivals;
use super::precise_timer::PreciseTimer;
use super::reopen::ENDS_SESSION;
use crate::config::{Protocol, WeightedScript};
use crate::error::Error;
use crate::metrics::recorder::{CONNECTION_LOST_SQLSTATE, WorkerPart};
use crate::metrics::{LiveCounters, WorkerSecond};
use crate::pgwire::{WireCancel, WireConnection, WireError, WireStatement};
use crate::script::{self, Script};
use crate::target::Connector;

mod session;
mod transaction;
use session::{Lost, Session};

/// A single-threaded runtime on its own OS thread for the load workers, as
/// pgbench runs its clients on one thread: a query's round trip (worker,
/// socket, worker) then never wakes another thread. The observer, the blocker
/// and the DDL stay on the main runtime. The thread ends when this is dropped.
pub struct LoadRuntime {
    handle: tokio::runtime::Handle,
    /// Dropped with the `LoadRuntime`: the thread's `block_on` returns.
    _stop: oneshot::Sender<()>,
}

impl LoadRuntime {
    /// Starts the runtime's thread.
    pub fn start() -> Result<LoadRuntime, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| Error::runtime(format!("starting the load runtime: {err}")))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("stallbench-load".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(|err| Error::runtime(format!("starting the load thread: {err}")))?;
        Ok(LoadRuntime {
            handle,
            _stop: stop,
        })
    }

    /// Runs `future` on the load thread.
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future)
    }
}

/// A script's SQL commands prepared on one connection, in script order
/// (`None`: not prepared, for `--protocol simple`/`extended` and `\;` compounds).
pub struct PreparedScript {
    statements: Vec<Option<WireStatement>>,
    /// The script opens its own transaction (BEGIN): roll back after an error.
    opens_transaction: bool,
}

/// Prepares every SQL command of every script on `connection`, as
/// `protocol` wants: all of them for `prepared`; none for `simple` (its
/// variables are text in the statement) and `extended` (which the server
/// checks here all the same, by preparing them once).
pub async fn prepare(
    connection: &mut WireConnection,
    scripts: &[WeightedScript],
    protocol: Protocol,
) -> Result<Vec<PreparedScript>, Error> {
    let mut prepared = Vec::with_capacity(scripts.len());
    for weighted in scripts {
        let script = &weighted.script;
        let mut statements = Vec::new();
        let mut opens_transaction = false;
        for sql in script.sql_commands() {
            let first_word = sql
                .sql
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_uppercase();
            opens_transaction |= first_word == "BEGIN" || first_word == "START";
            if protocol == Protocol::Simple || sql.compound {
                statements.push(None);
                continue;
            }
            let statement = connection.prepare(&sql.sql).await.map_err(|err| {
                Error::bad_input(format!(
                    "script {} line {}: the server rejects this statement: {}",
                    script.name, sql.line, err
                ))
            })?;
            statements.push((protocol == Protocol::Prepared).then_some(statement));
        }
        prepared.push(PreparedScript {
            statements,
            opens_transaction,
        });
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
    /// Set when the transaction in flight at the end of the load did not
    /// complete (cancelled after the last-transaction wait): its age in
    /// microseconds, a lower bound of its latency. It is in no second's figures.
    pub unfinished_age_us: Option<u64>,
}

/// Why a transaction did not complete.
enum TxnError {
    /// The server answered with an error, or the script failed (division by
    /// zero in \set, SQLSTATE reported as `script`): counted as failed, the worker goes on.
    Failed { sqlstate: String, message: String },
    /// `--client-timeout` passed: cancelled on the server, counted as failed.
    TimedOut,
    /// The connection is gone: counted as failed under `sqlstate` (the
    /// server's, or `connection_lost`), then the worker reconnects.
    Lost { sqlstate: String, message: String },
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
    let Worker {
        connection,
        connector,
        cancel,
        client_id,
        scripts,
        prepared,
        variables,
        seed,
        random: (mut prng, automatic),
        protocol,
        client_timeout,
        latency_limit,
    } = worker;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed.wrapping_add(u64::from(client_id)));
    let mut vars: Vec<script::Vars> = scripts
        .iter()
        .map(|weighted| weighted.script.new_vars(automatic, &variables))
        .collect();
    let mut buffers = transaction::Buffers::default();
    let total_weight: u32 = scripts.iter().map(|weighted| weighted.weight).sum();
    let duration_s = clock.duration_s();
    let end = clock.end();
    let mut session = Session::new(
        connection,
        prepared,
        protocol,
        connector,
        cancel,
        interrupt.clone(),
    );
    let mut recording = Recording::new(client_id as usize, parts);
    let mut timer = None;
    let mut unfinished_age_us = None;

    loop {
        let (scheduled, started) = match &arrivals {
            None => {
                let now = Instant::now();
                (now, now)
            }
            Some(arrivals) => match arrivals.claim(&mut rng, &live) {
                None => break,
                Some(at) => {
                    wait_for_arrival(&mut timer, at).await;
                    (at, Instant::now())
                }
            },
        };
        if started >= end || interrupt.is_cancelled() {
            if arrivals.is_some() {
                // Claimed but never started: the run ended first, so the
                // arrival leaves the queue with it instead of counting as late.
                live.record_dequeue(clock.second_of(scheduled));
            }
            break;
        }
        let lag = started.saturating_duration_since(scheduled);
        if arrivals.is_some() {
            let second = clock.second_of(started);
            live.record_dequeue(second);
            if latency_limit.is_some_and(|limit| lag > limit) {
                recording.at(second).skipped += 1;
                continue;
            }
        }
        let deadline = client_timeout.map(|timeout| scheduled + timeout);
        if deadline.is_some_and(|deadline| started >= deadline) {
            // Timed out while waiting for a connection: never sent.
            let second = clock.second_of(started);
            recording.at(second).add_timeout();
            live.record_failure(second);
            continue;
        }
        let index = if scripts.len() == 1 {
            0
        } else {
            pick_script(&scripts, rng.random_range(0..total_weight))
        };
        let transaction = transaction::run_script(
            &mut session.connection,
            &scripts[index].script,
            &session.prepared[index],
            protocol,
            &mut vars[index],
            &mut prng,
            &mut buffers,
        );
        let result = match deadline {
            None => transaction.await,
            Some(deadline) => run_until(transaction, deadline, &session.cancel).await,
        };
        let ended = Instant::now();
        let second = clock.second_of(ended);
        if second >= duration_s {
            // In flight at the end: one that completed in the last-transaction
            // wait counts in the last second; one that did not is unfinished,
            // kept apart from every second (it completed in none).
            if !interrupt.is_cancelled() {
                let age_us = (ended - scheduled).as_micros().max(1) as u64;
                match result {
                    Ok(()) => recording
                        .at(duration_s - 1)
                        .latency_us
                        .saturating_record(age_us),
                    Err(_) => unfinished_age_us = Some(age_us),
                }
            }
            break;
        }
        let current = recording.at(second);
        if arrivals.is_some() {
            current.lag_sum_us += lag.as_micros() as u64;
            current.lag_count += 1;
        }
        let failed = match result {
            Ok(()) => {
                let latency_us = (ended - scheduled).as_micros().max(1) as u64;
                current.latency_us.saturating_record(latency_us);
                live.record_success(second, latency_us);
                false
            }
            Err(TxnError::Failed { sqlstate, message }) => {
                current.add_failure(&sqlstate, &message);
                live.record_failure(second);
                session.stale_statements |= statements_are_stale(&sqlstate);
                true
            }
            Err(TxnError::TimedOut) => {
                current.add_timeout();
                live.record_failure(second);
                true
            }
            Err(TxnError::Lost { sqlstate, message }) => {
                current.add_failure(&sqlstate, &message);
                live.record_failure(second);
                let lost = Lost { at: ended, message };
                match session
                    .reopen(lost, &scripts, clock, &mut rng, &mut recording)
                    .await
                {
                    true => continue,
                    false => break,
                }
            }
        };
        if failed
            && session.prepared[index].opens_transaction
            && !session
                .roll_back(&scripts, clock, &mut rng, &mut recording)
                .await
        {
            break;
        }
        if session.stale_statements
            && !session
                .prepare_again(&scripts, clock, &mut rng, &mut recording)
                .await
        {
            break;
        }
    }
    recording.finish();
    WorkerOutcome {
        unfinished_age_us,
        ..session.close().await
    }
}

/// Whether the server ends the session with this SQLSTATE (see [`ENDS_SESSION`]).
pub(super) fn ends_session(sqlstate: &str) -> bool {
    ENDS_SESSION.contains(&sqlstate)
}

/// SQLSTATEs after which a driver prepares its statements again:
/// feature_not_supported (0A000, "cached plan must not change result type"
/// once a column's type changed) and invalid_sql_statement_name (26000).
pub(super) fn statements_are_stale(sqlstate: &str) -> bool {
    matches!(sqlstate, "0A000" | "26000")
}

/// The SQLSTATE of a lost connection and its message without it: the
/// SQLSTATE of the server's last error, which the message ends with as
/// [`WireError::Server`] writes it (`... (SQLSTATE 57P01)`), else
/// [`CONNECTION_LOST_SQLSTATE`] and the message as it is. The SQLSTATE has its
/// own column, so it leaves the message (whose digits would be normalised).
fn lost_sqlstate(message: &str) -> (String, String) {
    let split = message
        .strip_suffix(')')
        .and_then(|rest| rest.rsplit_once(" (SQLSTATE "))
        .filter(|(_, code)| code.len() == 5 && code.bytes().all(|b| b.is_ascii_alphanumeric()));
    match split {
        Some((text, code)) => (code.to_string(), text.to_string()),
        None => (CONNECTION_LOST_SQLSTATE.to_string(), message.to_string()),
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

/// A worker's own figures of its current second, handed to the recorder when
/// it records something in a later second.
pub(super) struct Recording {
    worker: usize,
    current: WorkerSecond,
    parts: UnboundedSender<WorkerPart>,
}

impl Recording {
    pub(super) fn new(worker: usize, parts: UnboundedSender<WorkerPart>) -> Recording {
        Recording {
            worker,
            current: WorkerSecond::new(0),
            parts,
        }
    }

    /// The figures of `second` (never earlier than the last one asked for).
    pub(super) fn at(&mut self, second: u32) -> &mut WorkerSecond {
        if second != self.current.second {
            let finished = std::mem::replace(&mut self.current, WorkerSecond::new(second));
            let _ = self.parts.send(WorkerPart {
                worker: self.worker,
                finished: (!finished.is_empty()).then_some(finished),
                now_in: second,
            });
        }
        &mut self.current
    }

    /// Hands the last second over and says the worker has stopped.
    pub(super) fn finish(self) {
        let _ = self.parts.send(WorkerPart {
            worker: self.worker,
            finished: (!self.current.is_empty()).then_some(self.current),
            now_in: u32::MAX,
        });
    }
}

/// Runs `transaction` until `deadline`; past it, cancels the running query on
/// the server (a cancel request, as an application with a request timeout
/// does) and waits for the script to give up, repeating the cancel while it
/// goes on (a cancel that arrives between two statements does nothing).
async fn run_until(
    transaction: impl Future<Output = Result<(), TxnError>>,
    deadline: Instant,
    cancel: &WireCancel,
) -> Result<(), TxnError> {
    let mut transaction = std::pin::pin!(transaction);
    let deadline = tokio::time::Instant::from_std(deadline);
    if let Ok(result) = tokio::time::timeout_at(deadline, &mut transaction).await {
        return result;
    }
    loop {
        let _ = cancel.cancel_query().await;
        match tokio::time::timeout(CANCEL_REPEAT, &mut transaction).await {
            Ok(Err(lost @ TxnError::Lost { .. })) => return Err(lost),
            Ok(_) => return Err(TxnError::TimedOut),
            Err(_) => continue,
        }
    }
}

/// How long a timed-out transaction has to end after a cancel request before
/// the request is repeated. Long, because a repeat that crosses the first
/// cancel's error on the wire would cancel the connection's next transaction.
const CANCEL_REPEAT: Duration = Duration::from_secs(1);

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
    fn a_lost_connection_counts_under_the_servers_last_sqlstate() {
        // What the connection says when the server's FATAL came before the end of stream.
        let terminated = WireError::Server {
            sqlstate: "57P01".into(),
            message: "terminating connection due to administrator command".into(),
        };
        let message = format!("the server closed the connection: {terminated}");
        assert_eq!(
            lost_sqlstate(&message),
            (
                "57P01".to_string(),
                "the server closed the connection: terminating connection due to \
                 administrator command"
                    .to_string()
            )
        );
        let sqlstate = |message: &str| lost_sqlstate(message).0;
        assert_eq!(
            sqlstate("the server closed the connection"),
            CONNECTION_LOST_SQLSTATE
        );
        let reset = WireError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(sqlstate(&reset.to_string()), CONNECTION_LOST_SQLSTATE);
        assert_eq!(
            lost_sqlstate("odd (SQLSTATE 5)"),
            (
                CONNECTION_LOST_SQLSTATE.to_string(),
                "odd (SQLSTATE 5)".to_string()
            )
        );
    }

    #[test]
    fn shutdown_sqlstates_end_the_session_other_errors_do_not() {
        for sqlstate in ["57P01", "57P02", "57P03"] {
            assert!(ends_session(sqlstate), "{sqlstate}");
        }
        for sqlstate in ["57014", "40P01", "55P03", "25P03"] {
            assert!(!ends_session(sqlstate), "{sqlstate}");
        }
    }

    #[test]
    fn stale_statement_sqlstates_prepare_again_other_errors_do_not() {
        assert!(statements_are_stale("0A000"));
        assert!(statements_are_stale("26000"));
        for sqlstate in ["40P01", "55P03", "57014", "script"] {
            assert!(!statements_are_stale(sqlstate), "{sqlstate}");
        }
    }

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
