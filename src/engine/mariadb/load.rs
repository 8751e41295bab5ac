//! The MariaDB load: closed-loop clients, each on its own connection for the
//! whole run, each running transactions of the workload's scripts
//! (pgbench's language, [`super::script`]), one drawn by weight for each
//! transaction, as fast as the server answers. A script's statements with
//! variables are prepared once per connection and sent with their values
//! (one round trip each); those without run as plain queries. The clients
//! run, and connect, on one single-threaded runtime on an OS thread of its
//! own (the PostgreSQL load's `scenario::runtime::LoadRuntime`), as pgbench runs
//! its clients on one thread: a round trip never wakes another thread. A
//! thread per client, as sysbench runs them, cost 14-17 us of CPU per
//! transaction against one thread's 9 (docs/benchmark.md).
//!
//! Each client counts its transactions in the second they complete on the
//! run clock and hands each second over to the same recorder the PostgreSQL
//! load feeds (`metrics::recorder`), so the timeline, summary and histograms
//! are made the same way. A failed transaction counts in its second with its
//! time, under its MariaDB error number ([`super::errors`]); a transaction
//! the script opened is rolled back; a lost connection is counted and
//! opened again, its statements prepared again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use rand::{RngExt, SeedableRng};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::errors::{failure_kind, server_error};
use super::script::{LoadScript, pick};
use super::session::{SessionRoles, connect};
use crate::engine::ErrorClass;
use crate::metrics::Recorder;
use crate::metrics::failures::{Failure, FailureKind};
use crate::metrics::recorder::{WorkerPart, WorkerSecond};
use crate::role::{ClientKind, Role};
use crate::scenario::RunClock;
use crate::scenario::runtime::LoadRuntime;
use crate::script::{Cursor, Prng, RandomSeeds, Step, Vars};

/// How long a client waits before opening a lost connection again.
const REOPEN_EVERY: Duration = Duration::from_millis(200);

/// The load's clients, connected and prepared, each waiting on its thread
/// for the run's clock.
pub struct Load {
    /// Each client's start: the clock it runs on.
    starts: Vec<oneshot::Sender<RunClock>>,
    workers: Vec<JoinHandle<u32>>,
    parts: mpsc::UnboundedReceiver<WorkerPart>,
    /// The clients' thread, which ends when this is dropped.
    _runtime: LoadRuntime,
}

/// Opens `clients` clients of `scripts` on `opts`, each connected and its
/// statements prepared before the clock starts (so the run's first second
/// is not spent connecting); a client that cannot is an error.
pub async fn open_load(
    opts: &mysql_async::Opts,
    roles: &SessionRoles,
    clients: usize,
    scripts: &[LoadScript],
) -> anyhow::Result<Load> {
    let (parts_tx, parts) = mpsc::unbounded_channel();
    let scripts = Arc::new(scripts.to_vec());
    let kind = ClientKind::of_scripts(scripts.iter().map(|s| &s.weighted.script));
    let seeds = RandomSeeds::new(rand::random(), clients as u32);
    let runtime = LoadRuntime::start()?;
    let (mut workers, mut starts, mut ready) = (Vec::new(), Vec::new(), Vec::new());
    for worker in 0..clients {
        let (prng, automatic) = seeds.client(worker as u32);
        let mut client = Client {
            worker,
            role: Role::Client(kind, worker as u32 + 1),
            opts: opts.clone(),
            roles: roles.clone(),
            vars: scripts
                .iter()
                .map(|s| s.weighted.script.new_vars(automatic, &[]))
                .collect(),
            total_weight: scripts.iter().map(|s| s.weighted.weight).sum(),
            scripts: scripts.clone(),
            prepared: Vec::new(),
            prng,
            rng: rand::rngs::SmallRng::seed_from_u64(rand::random()),
            parts: parts_tx.clone(),
        };
        let (ready_tx, ready_rx) = oneshot::channel();
        let (start_tx, start_rx) = oneshot::channel::<RunClock>();
        workers.push(runtime.spawn(async move {
            let conn = match client.open().await {
                Ok(conn) => conn,
                Err(err) => {
                    let _ = ready_tx.send(Err(err));
                    return 0;
                }
            };
            let _ = ready_tx.send(Ok(()));
            match start_rx.await {
                Ok(clock) => client.run(conn, clock).await,
                Err(_) => 0, // The run did not start.
            }
        }));
        ready.push(ready_rx);
        starts.push(start_tx);
    }
    for ready in ready {
        ready.await.unwrap_or(Ok(()))?;
    }
    Ok(Load {
        starts,
        workers,
        parts,
        _runtime: runtime,
    })
}

impl Load {
    /// Runs the clients until `clock` ends; returns the recorder with every
    /// second settled and the number of connections lost on the way.
    pub async fn run(self, clock: RunClock) -> anyhow::Result<(Recorder, u32)> {
        let Load {
            starts,
            workers,
            parts,
            _runtime,
        } = self;
        let recorder = spawn_recorder(clock, workers.len(), parts);
        for start in starts {
            let _ = start.send(clock);
        }
        let mut lost = 0;
        for worker in workers {
            lost += worker.await.unwrap_or(0);
        }
        let recorder = recorder.await?;
        Ok((recorder, lost))
    }
}

/// Runs `clients` clients of `scripts` on `opts` until `clock` ends (they
/// connect after it started): [`open_load`], then [`Load::run`].
pub async fn run_load(
    opts: &mysql_async::Opts,
    roles: &SessionRoles,
    clients: usize,
    scripts: &[LoadScript],
    clock: RunClock,
) -> anyhow::Result<(Recorder, u32)> {
    open_load(opts, roles, clients, scripts)
        .await?
        .run(clock)
        .await
}

/// Takes the clients' hand-overs and settles the seconds once a second;
/// returns the recorder once every client is done.
fn spawn_recorder(
    clock: RunClock,
    workers: usize,
    mut parts: mpsc::UnboundedReceiver<WorkerPart>,
) -> JoinHandle<Recorder> {
    tokio::spawn(async move {
        let mut recorder = Recorder::new(workers);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                part = parts.recv() => match part {
                    Some(part) => recorder.add(part, clock.second_now()),
                    None => break,
                },
                _ = tick.tick() => recorder.settle(clock.second_now()),
            }
        }
        recorder.finish();
        recorder
    })
}

/// How a transaction ended when it did not commit.
enum TxnError {
    /// The server (or the connection) failed a statement.
    Server(mysql_async::Error),
    /// The script itself failed (e.g. a division by zero in `\set`).
    Script(String),
}

/// One closed-loop client.
struct Client {
    worker: usize,
    role: Role,
    opts: mysql_async::Opts,
    roles: SessionRoles,
    scripts: Arc<Vec<LoadScript>>,
    total_weight: u32,
    /// Each script's variables.
    vars: Vec<Vars>,
    /// Each script's prepared statements on the current connection, by the
    /// SQL command's number (`None`: a plain query).
    prepared: Vec<Vec<Option<mysql_async::Statement>>>,
    /// The scripts' random functions (pgbench's generator).
    prng: Prng,
    /// Draws the script of each transaction.
    rng: rand::rngs::SmallRng,
    parts: mpsc::UnboundedSender<WorkerPart>,
}

impl Client {
    /// Opens the client's connection and prepares its statements.
    async fn open(&mut self) -> anyhow::Result<mysql_async::Conn> {
        let role = self.role;
        let mut conn = connect(&self.opts, role, &self.roles)
            .await
            .map_err(|err| {
                anyhow::anyhow!("{role}: connecting to MariaDB: {err}; is the server up?")
            })?;
        self.prepare(&mut conn)
            .await
            .map_err(|err| anyhow::anyhow!("{role}: preparing the load's statements: {err}"))?;
        Ok(conn)
    }

    /// Prepares every statement with parameters of every script on `conn`.
    async fn prepare(&mut self, conn: &mut mysql_async::Conn) -> Result<(), mysql_async::Error> {
        let mut prepared = Vec::with_capacity(self.scripts.len());
        for script in self.scripts.iter() {
            let mut statements = Vec::with_capacity(script.statements.len());
            for statement in &script.statements {
                statements.push(match statement.is_prepared() {
                    true => Some(conn.prep(&statement.sql).await?),
                    false => None,
                });
            }
            prepared.push(statements);
        }
        self.prepared = prepared;
        Ok(())
    }

    /// Runs transactions until the clock ends; returns how often its connection was lost.
    async fn run(mut self, mut conn: mysql_async::Conn, clock: RunClock) -> u32 {
        let end = clock.end();
        // One timer for the whole run, not one per transaction.
        let run_ends = tokio::time::sleep_until(end.into());
        tokio::pin!(run_ends);
        let mut current = WorkerSecond::new(0);
        let mut lost = 0;
        while Instant::now() < end {
            let index = match self.scripts.len() {
                1 => 0,
                _ => pick(&self.scripts, self.rng.random_range(0..self.total_weight)),
            };
            let started = Instant::now();
            let result = tokio::select! {
                biased;
                result = self.transaction(&mut conn, index) => result,
                // The run ended while the transaction waited: it is unfinished, in no second.
                () = &mut run_ends => break,
            };
            let latency_us = started.elapsed().as_micros() as u64;
            current = self.hand_over(current, clock.second_now());
            let error = match result {
                Ok(()) => {
                    current.latency_us.record(latency_us);
                    continue;
                }
                Err(error) => error,
            };
            let (failure, connection_lost) = failure_of(&error);
            current.record_failure(&failure, latency_us);
            if !connection_lost {
                self.roll_back(&mut conn, index).await;
                continue;
            }
            current.conn_lost += 1;
            lost += 1;
            let Some(reopened) = self.reopen(clock, &mut current).await else {
                break;
            };
            conn = reopened;
        }
        let _ = self.parts.send(WorkerPart {
            worker: self.worker,
            finished: (!current.is_empty()).then_some(current),
            now_in: u32::MAX,
        });
        let _ = conn.disconnect().await;
        lost
    }

    /// One transaction of script `index`: its steps until it is done.
    async fn transaction(
        &mut self,
        conn: &mut mysql_async::Conn,
        index: usize,
    ) -> Result<(), TxnError> {
        let script = &self.scripts[index];
        let vars = &mut self.vars[index];
        let mut cursor = Cursor::default();
        loop {
            let step = script
                .weighted
                .script
                .step(&mut cursor, vars, &mut self.prng)
                .map_err(|failure| {
                    TxnError::Script(script.weighted.script.failure_message(&failure))
                })?;
            match step {
                Step::Sql(sql) => {
                    let statement = &script.statements[sql.number];
                    let result = match &self.prepared[index][sql.number] {
                        Some(prepared) => conn.exec_drop(prepared, statement.bind(vars)).await,
                        None => conn.query_drop(&statement.sql).await,
                    };
                    result.map_err(TxnError::Server)?;
                }
                Step::Sleep { duration_us } => {
                    tokio::time::sleep(Duration::from_micros(duration_us)).await;
                }
                Step::Done => return Ok(()),
                // Refused when the workload was read (script::compile).
                _ => return Err(TxnError::Script("a command MariaDB cannot run".to_string())),
            }
        }
    }

    /// Rolls back what a failed transaction of script `index` left open.
    async fn roll_back(&self, conn: &mut mysql_async::Conn, index: usize) {
        if self.scripts[index].weighted.script.opens_transaction() {
            let _ = conn.query_drop("ROLLBACK").await;
        }
    }

    /// `current`, or a fresh second once the clock is in a later one (the
    /// finished one handed to the recorder).
    fn hand_over(&self, current: WorkerSecond, now_second: u32) -> WorkerSecond {
        if now_second <= current.second {
            return current;
        }
        let _ = self.parts.send(WorkerPart {
            worker: self.worker,
            finished: (!current.is_empty()).then_some(current),
            now_in: now_second,
        });
        WorkerSecond::new(now_second)
    }

    /// Opens the connection again and prepares its statements, every
    /// [`REOPEN_EVERY`], until the clock ends; counts the reconnect in `current`.
    async fn reopen(
        &mut self,
        clock: RunClock,
        current: &mut WorkerSecond,
    ) -> Option<mysql_async::Conn> {
        while Instant::now() < clock.end() {
            if let Ok(mut conn) = connect(&self.opts, self.role, &self.roles).await
                && self.prepare(&mut conn).await.is_ok()
            {
                current.reconnects += 1;
                return Some(conn);
            }
            current.reconnect_failures += 1;
            tokio::time::sleep(REOPEN_EVERY).await;
        }
        None
    }
}

/// The failure `error` is recorded as, and whether the connection is lost.
fn failure_of(error: &TxnError) -> (Failure, bool) {
    match error {
        TxnError::Script(message) => (Failure::new(FailureKind::Script, message), false),
        TxnError::Server(err) => {
            let error = server_error(err);
            let lost = error.class == ErrorClass::ConnectionLost;
            (Failure::new(failure_kind(&error), error.to_string()), lost)
        }
    }
}
