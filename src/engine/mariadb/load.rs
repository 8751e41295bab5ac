//! The MariaDB load: closed-loop clients, each on its own connection for the
//! whole run, each running transactions of the workload's scripts
//! (pgbench's language, [`super::script`]), one drawn by weight for each
//! transaction, as fast as the server answers. A script's statements with
//! variables are prepared once per connection and executed with their
//! values in the binary protocol (one round trip each); those without run
//! as plain queries.
//!
//! Each client is an OS thread of its own with its own connection of the
//! load's lean client ([`super::wire`]), as sysbench runs its clients: it
//! sends, then waits for the answer in `poll` for input only, so it sleeps
//! once per transaction. The two earlier designs lost to sysbench by about
//! a fifth on a quiet machine (docs/benchmark.md, "Why the clients wait"):
//! every client on one tokio thread (as pgbench runs them) let the server
//! thread that a send wakes preempt the thread serving all clients, and a
//! thread per client on tokio or a blocking `recv` woke twice per
//! transaction (the `EPOLLOUT` of a freed send buffer).
//!
//! Each client counts its transactions in the second they complete on the
//! run clock and hands each second over to the same recorder the PostgreSQL
//! load feeds (`metrics::recorder`), so the timeline, summary and histograms
//! are made the same way. A failed transaction counts in its second with its
//! time, under its MariaDB error number ([`super::errors`]); a transaction
//! the script opened is rolled back; a lost connection is counted and
//! opened again, its statements prepared again. A client waiting on the
//! server gives up at the run's end (the transaction unfinished, in no
//! second) or when the load is dropped (a stopped run, Ctrl-C).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::errors::{failure_kind, wire_error};
use super::script::{LoadScript, pick};
use super::session::SessionRoles;
use super::wire::{
    self, ConnectOptions, Deadline, MariaConnection, MariaStatement, MariaWireError,
};
use crate::engine::ErrorClass;
use crate::metrics::Recorder;
use crate::metrics::failures::{Failure, FailureKind};
use crate::metrics::recorder::{WorkerPart, WorkerSecond};
use crate::role::{ClientKind, Role};
use crate::scenario::RunClock;
use crate::script::{Cursor, Prng, RandomSeeds, Step, Vars};

/// How long a client waits before opening a lost connection again.
const REOPEN_EVERY: Duration = Duration::from_millis(200);

/// The load's clients, connected and prepared, each waiting on its thread
/// for the run's clock.
pub struct Load {
    /// Each client's start: the clock it runs on.
    starts: Vec<std::sync::mpsc::Sender<RunClock>>,
    /// Each client's end: how often it lost its connection.
    ends: Vec<oneshot::Receiver<u32>>,
    parts: mpsc::UnboundedReceiver<WorkerPart>,
    /// Stops the clients' threads when the load is dropped.
    stop: StopOnDrop,
}

/// Sets the clients' stop flag when dropped: a load dropped before its
/// end (a stopped run) ends its threads within `wire`'s stop check.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
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
    let mut options = ConnectOptions::from_opts(opts)?;
    options
        .resolve()
        .await
        .map_err(|err| anyhow::anyhow!("the MariaDB load: {err}"))?;
    let stop = StopOnDrop(Arc::new(AtomicBool::new(false)));
    let (mut starts, mut ends, mut ready) = (Vec::new(), Vec::new(), Vec::new());
    for worker in 0..clients {
        let (prng, automatic) = seeds.client(worker as u32);
        let client = Client {
            worker,
            role: Role::Client(kind, worker as u32 + 1),
            options: options.clone(),
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
            stop: stop.0.clone(),
        };
        let (ready_tx, ready_rx) = oneshot::channel();
        let (start_tx, start_rx) = std::sync::mpsc::channel();
        let (end_tx, end_rx) = oneshot::channel();
        std::thread::Builder::new()
            .name(format!("stallbench-client-{}", worker + 1))
            .spawn(move || client.live(ready_tx, start_rx, end_tx))
            .map_err(|err| anyhow::anyhow!("starting the load's client thread: {err}"))?;
        ready.push(ready_rx);
        starts.push(start_tx);
        ends.push(end_rx);
    }
    for ready in ready {
        ready.await.unwrap_or(Ok(()))?;
    }
    Ok(Load {
        starts,
        ends,
        parts,
        stop,
    })
}

impl Load {
    /// Runs the clients until `clock` ends; returns the recorder with every
    /// second settled and the number of connections lost on the way.
    pub async fn run(self, clock: RunClock) -> anyhow::Result<(Recorder, u32)> {
        let Load {
            starts,
            ends,
            parts,
            stop,
        } = self;
        let recorder = spawn_recorder(clock, ends.len(), parts);
        for start in starts {
            let _ = start.send(clock);
        }
        let mut lost = 0;
        for end in ends {
            lost += end.await.unwrap_or(0);
        }
        let recorder = recorder.await?;
        drop(stop);
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
    Server(MariaWireError),
    /// The script itself failed (e.g. a division by zero in `\set`).
    Script(String),
    /// The run ended (or was stopped) while the transaction waited: it is
    /// unfinished, in no second.
    Ended,
}

impl From<MariaWireError> for TxnError {
    fn from(error: MariaWireError) -> TxnError {
        match error {
            MariaWireError::Ended => TxnError::Ended,
            other => TxnError::Server(other),
        }
    }
}

/// One closed-loop client, on a thread of its own.
struct Client {
    worker: usize,
    role: Role,
    options: ConnectOptions,
    roles: SessionRoles,
    scripts: Arc<Vec<LoadScript>>,
    total_weight: u32,
    /// Each script's variables.
    vars: Vec<Vars>,
    /// Each script's prepared statements on the current connection, by the
    /// SQL command's number (`None`: a plain query).
    prepared: Vec<Vec<Option<MariaStatement>>>,
    /// The scripts' random functions (pgbench's generator).
    prng: Prng,
    /// Draws the script of each transaction.
    rng: rand::rngs::SmallRng,
    parts: mpsc::UnboundedSender<WorkerPart>,
    /// Set when the load is dropped: the thread ends.
    stop: Arc<AtomicBool>,
}

impl Client {
    /// The client's thread: connects and prepares (saying so on `ready`),
    /// waits for the clock on `start`, runs, and says on `end` how often its
    /// connection was lost. A start dropped unsent ends it (no run).
    fn live(
        mut self,
        ready: oneshot::Sender<anyhow::Result<()>>,
        start: std::sync::mpsc::Receiver<RunClock>,
        end: oneshot::Sender<u32>,
    ) {
        let conn = match self.open() {
            Ok(conn) => conn,
            Err(err) => {
                let _ = ready.send(Err(err));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        let lost = match start.recv() {
            Ok(clock) => self.run(conn, clock),
            Err(_) => {
                conn.close(&self.deadline(None));
                0
            }
        };
        let _ = end.send(lost);
    }

    /// When a wait of this client gives up: at `end`, or at the load's stop.
    fn deadline(&self, end: Option<Instant>) -> Deadline {
        Deadline {
            end,
            stop: self.stop.clone(),
        }
    }

    /// Opens the client's connection and prepares its statements.
    fn open(&mut self) -> anyhow::Result<MariaConnection> {
        let role = self.role;
        let deadline = self.deadline(None);
        let conn = self.connect(&deadline).map_err(|err| match err {
            MariaWireError::Refused { .. } => {
                anyhow::anyhow!("{role}: connecting to MariaDB: {err}")
            }
            _ => anyhow::anyhow!("{role}: connecting to MariaDB: {err}; is the server up?"),
        })?;
        let mut conn = conn;
        self.prepare(&mut conn, &deadline)
            .map_err(|err| anyhow::anyhow!("{role}: preparing the load's statements: {err}"))?;
        Ok(conn)
    }

    /// A new connection, remembered under the client's role.
    fn connect(&self, deadline: &Deadline) -> Result<MariaConnection, MariaWireError> {
        let conn = wire::connect(&self.options, deadline)?;
        self.roles.insert(u64::from(conn.id()), self.role);
        Ok(conn)
    }

    /// Prepares every statement with parameters of every script on `conn`.
    fn prepare(
        &mut self,
        conn: &mut MariaConnection,
        deadline: &Deadline,
    ) -> Result<(), MariaWireError> {
        let mut prepared = Vec::with_capacity(self.scripts.len());
        for script in self.scripts.iter() {
            let mut statements = Vec::with_capacity(script.statements.len());
            for statement in &script.statements {
                statements.push(match statement.is_prepared() {
                    true => Some(conn.prepare(&statement.sql, deadline)?),
                    false => None,
                });
            }
            prepared.push(statements);
        }
        self.prepared = prepared;
        Ok(())
    }

    /// Runs transactions until the clock ends; returns how often its connection was lost.
    fn run(mut self, conn: MariaConnection, clock: RunClock) -> u32 {
        let end = clock.end();
        let deadline = self.deadline(Some(end));
        let mut conn = Some(conn);
        let mut current = WorkerSecond::new(0);
        let mut lost = 0;
        while let Some(open) = conn.as_mut()
            && Instant::now() < end
        {
            let index = match self.scripts.len() {
                1 => 0,
                _ => pick(&self.scripts, self.rng.random_range(0..self.total_weight)),
            };
            let started = Instant::now();
            let result = self.transaction(open, index, &deadline);
            let latency_us = started.elapsed().as_micros() as u64;
            let error = match result {
                Ok(()) => {
                    current = self.hand_over(current, clock.second_now());
                    current.latency_us.record(latency_us);
                    continue;
                }
                Err(TxnError::Ended) => break,
                Err(error) => error,
            };
            current = self.hand_over(current, clock.second_now());
            let (failure, connection_lost) = failure_of(&error);
            current.record_failure(&failure, latency_us);
            if !connection_lost {
                match self.roll_back(open, index, &deadline) {
                    // The connection is out of step; the run is over anyway.
                    Err(MariaWireError::Ended) => break,
                    // A lost connection fails the next transaction.
                    _ => continue,
                }
            }
            current.conn_lost += 1;
            lost += 1;
            // The lost connection's socket is closed before a new one opens.
            drop(conn.take());
            conn = self.reopen(clock, &mut current);
        }
        let _ = self.parts.send(WorkerPart {
            worker: self.worker,
            finished: (!current.is_empty()).then_some(current),
            now_in: u32::MAX,
        });
        if let Some(conn) = conn {
            conn.close(&self.deadline(Some(Instant::now() + REOPEN_EVERY)));
        }
        lost
    }

    /// One transaction of script `index`: its steps until it is done.
    fn transaction(
        &mut self,
        conn: &mut MariaConnection,
        index: usize,
        deadline: &Deadline,
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
                    match &mut self.prepared[index][sql.number] {
                        Some(prepared) => {
                            conn.execute(prepared, &statement.bind(vars), deadline)?
                        }
                        None => conn.query(&statement.sql, deadline)?,
                    };
                }
                Step::Sleep { duration_us } => {
                    sleep_within(Duration::from_micros(duration_us), deadline)?;
                }
                Step::Done => return Ok(()),
                // Refused when the workload was read (script::compile).
                _ => return Err(TxnError::Script("a command MariaDB cannot run".to_string())),
            }
        }
    }

    /// Rolls back what a failed transaction of script `index` left open.
    fn roll_back(
        &self,
        conn: &mut MariaConnection,
        index: usize,
        deadline: &Deadline,
    ) -> Result<(), MariaWireError> {
        if self.scripts[index].weighted.script.opens_transaction() {
            conn.query("ROLLBACK", deadline)?;
        }
        Ok(())
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
    /// [`REOPEN_EVERY`], until the clock ends; counts the reconnect in
    /// `current`, and a failed attempt unless the run's end or stop cut it
    /// short.
    fn reopen(&mut self, clock: RunClock, current: &mut WorkerSecond) -> Option<MariaConnection> {
        let deadline = self.deadline(Some(clock.end()));
        while Instant::now() < clock.end() {
            let opened = self.connect(&deadline).and_then(|mut conn| {
                self.prepare(&mut conn, &deadline)?;
                Ok(conn)
            });
            match opened {
                Ok(conn) => {
                    current.reconnects += 1;
                    return Some(conn);
                }
                Err(MariaWireError::Ended) => return None,
                Err(_) => {}
            }
            current.reconnect_failures += 1;
            sleep_within(REOPEN_EVERY, &deadline).ok()?;
        }
        None
    }
}

/// Sleeps `duration`, or until `deadline` gives up ([`TxnError::Ended`]).
fn sleep_within(duration: Duration, deadline: &Deadline) -> Result<(), TxnError> {
    let wake = Instant::now() + duration;
    loop {
        if deadline.stop.load(Ordering::Relaxed) {
            return Err(TxnError::Ended);
        }
        let now = Instant::now();
        if deadline.end.is_some_and(|end| now >= end) {
            return Err(TxnError::Ended);
        }
        if now >= wake {
            return Ok(());
        }
        let until = deadline.end.map_or(wake, |end| end.min(wake));
        std::thread::sleep((until - now).min(wire::STOP_CHECK_EVERY));
    }
}

/// The failure `error` is recorded as, and whether the connection is lost.
fn failure_of(error: &TxnError) -> (Failure, bool) {
    match error {
        TxnError::Script(message) => (Failure::new(FailureKind::Script, message), false),
        TxnError::Server(err) => {
            let error = wire_error(err);
            let lost = error.class == ErrorClass::ConnectionLost;
            (Failure::new(failure_kind(&error), error.to_string()), lost)
        }
        // Not recorded: the run loop ends first.
        TxnError::Ended => (
            Failure::new(FailureKind::ConnectionLost, "the run ended"),
            false,
        ),
    }
}
