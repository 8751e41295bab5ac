//! The load workers: pgbench-style clients, each owning its connection
//! ([`crate::pgwire`]) for the whole run, with prepared statements; closed
//! loop, or open loop on a shared arrival schedule (`--rate`), with an
//! optional request timeout.
//!
//! The hot path takes no shared lock and waits on nobody: latency goes into
//! the worker's own histogram of the current second, handed to the recorder
//! once a second; the progress counters are relaxed atomics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::RunClock;
use super::arrivals::Arrivals;
use crate::config::WeightedScript;
use crate::error::Error;
use crate::metrics::recorder::WorkerPart;
use crate::metrics::{LiveCounters, WorkerSecond};
use crate::pgwire::{WireCancel, WireConnection, WireError, WireStatement};
use crate::script::{self, Command, Script};

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

/// A script's SQL commands prepared on one connection, in script order.
pub struct PreparedScript {
    statements: Vec<WireStatement>,
    /// The script opens its own transaction (BEGIN): roll back after an error.
    opens_transaction: bool,
}

/// Prepares every SQL command of every script on `connection`.
pub async fn prepare(
    connection: &mut WireConnection,
    scripts: &[WeightedScript],
) -> Result<Vec<PreparedScript>, Error> {
    let mut prepared = Vec::with_capacity(scripts.len());
    for weighted in scripts {
        let script = &weighted.script;
        let mut statements = Vec::new();
        let mut opens_transaction = false;
        for command in &script.commands {
            if let Command::Sql { sql, line, .. } = command {
                let first_word = sql
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_ascii_uppercase();
                opens_transaction |= first_word == "BEGIN" || first_word == "START";
                let statement = connection.prepare(sql).await.map_err(|err| {
                    Error::bad_input(format!(
                        "script {} line {line}: the server rejects this statement: {}",
                        script.name, err
                    ))
                })?;
                statements.push(statement);
            }
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
    pub client_id: u32,
    pub scripts: Arc<Vec<WeightedScript>>,
    pub prepared: Vec<PreparedScript>,
    pub variables: Arc<Vec<(String, String)>>,
    pub seed: u64,
    /// Fail and cancel a transaction not finished this long after its (scheduled) start.
    pub client_timeout: Option<Duration>,
    /// Open loop: skip a transaction this late behind its schedule.
    pub latency_limit: Option<Duration>,
}

/// How a worker ended.
#[derive(Debug, Clone, Default)]
pub struct WorkerOutcome {
    /// Set when the connection was lost: the worker stopped early.
    pub lost_connection: Option<String>,
}

/// Why a transaction did not complete.
enum TxnError {
    /// The server answered with an error, or the script failed (division by
    /// zero in \set, SQLSTATE reported as `script`): counted as failed, the worker goes on.
    Failed { sqlstate: String },
    /// `--client-timeout` passed: cancelled on the server, counted as failed.
    TimedOut,
    /// The connection is gone: the worker stops.
    Lost(String),
}

impl TxnError {
    fn script(_err: script::EvalError) -> TxnError {
        TxnError::Failed {
            sqlstate: "script".to_string(),
        }
    }
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
        mut connection,
        client_id,
        scripts,
        prepared,
        variables,
        seed,
        client_timeout,
        latency_limit,
    } = worker;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed.wrapping_add(u64::from(client_id)));
    let scale = variables
        .iter()
        .find(|(name, _)| name == "scale")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(1);
    let mut vars: Vec<script::Vars> = scripts
        .iter()
        .map(|weighted| weighted.script.new_vars(client_id, scale, &variables))
        .collect();
    let total_weight: u32 = scripts.iter().map(|weighted| weighted.weight).sum();
    let duration_s = clock.duration_s();
    let end = clock.end();
    let cancel = connection.cancel_handle();
    let mut params: Vec<String> = Vec::new();
    let mut recording = Recording::new(client_id as usize, parts);
    let mut outcome = WorkerOutcome::default();

    loop {
        let (scheduled, started) = match &arrivals {
            None => {
                let now = Instant::now();
                (now, now)
            }
            Some(arrivals) => match arrivals.claim(&mut rng, &live) {
                None => break,
                Some(at) => {
                    if at > Instant::now() {
                        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
                    }
                    (at, Instant::now())
                }
            },
        };
        if started >= end || interrupt.is_cancelled() {
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
        let transaction = run_script(
            &mut connection,
            &scripts[index].script,
            &prepared[index],
            &mut vars[index],
            &mut rng,
            &mut params,
        );
        let result = match deadline {
            None => transaction.await,
            Some(deadline) => run_until(transaction, deadline, &cancel).await,
        };
        let ended = Instant::now();
        let second = clock.second_of(ended);
        if second >= duration_s {
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
            Err(TxnError::Failed { sqlstate }) => {
                current.add_failure(&sqlstate);
                live.record_failure(second);
                true
            }
            Err(TxnError::TimedOut) => {
                current.add_timeout();
                live.record_failure(second);
                true
            }
            Err(TxnError::Lost(message)) => {
                outcome.lost_connection = Some(message);
                break;
            }
        };
        if failed
            && prepared[index].opens_transaction
            && connection.simple_query("ROLLBACK").await.is_err()
        {
            outcome.lost_connection = Some("ROLLBACK after a failed transaction failed".into());
            break;
        }
    }
    recording.finish();
    if outcome.lost_connection.is_none() {
        connection.terminate().await;
    }
    outcome
}

/// A worker's own figures of its current second, handed to the recorder when
/// it records something in a later second.
struct Recording {
    worker: usize,
    current: WorkerSecond,
    parts: UnboundedSender<WorkerPart>,
}

impl Recording {
    fn new(worker: usize, parts: UnboundedSender<WorkerPart>) -> Recording {
        Recording {
            worker,
            current: WorkerSecond::new(0),
            parts,
        }
    }

    /// The figures of `second` (never earlier than the last one asked for).
    fn at(&mut self, second: u32) -> &mut WorkerSecond {
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
    fn finish(self) {
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
            Ok(Err(TxnError::Lost(message))) => return Err(TxnError::Lost(message)),
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
fn pick_script(scripts: &[WeightedScript], mut draw: u32) -> usize {
    for (index, weighted) in scripts.iter().enumerate() {
        if draw < weighted.weight {
            return index;
        }
        draw -= weighted.weight;
    }
    scripts.len() - 1
}

/// One execution of a script: one transaction in pgbench's sense.
async fn run_script(
    connection: &mut WireConnection,
    script: &Script,
    prepared: &PreparedScript,
    vars: &mut script::Vars,
    rng: &mut rand::rngs::SmallRng,
    params: &mut Vec<String>,
) -> Result<(), TxnError> {
    let mut statement_index = 0;
    for command in &script.commands {
        match command {
            Command::Set { slot, expr, .. } => {
                let value = script::eval(expr, vars, rng).map_err(TxnError::script)?;
                vars.set(*slot, value);
            }
            Command::Sleep { .. } => {
                let sleep_us = script.sleep_us(command, vars).map_err(TxnError::script)?;
                tokio::time::sleep(std::time::Duration::from_micros(sleep_us)).await;
            }
            Command::Sql { params: slots, .. } => {
                params.resize_with(slots.len(), String::new);
                for (param, slot) in params.iter_mut().zip(slots) {
                    param.clear();
                    vars.get(*slot).write_param(param);
                }
                let statement = &prepared.statements[statement_index];
                statement_index += 1;
                if let Err(err) = connection.execute(statement, params).await {
                    return Err(match err {
                        WireError::Server { sqlstate, .. } => TxnError::Failed { sqlstate },
                        WireError::Lost(message) => TxnError::Lost(message),
                    });
                }
            }
        }
    }
    Ok(())
}
