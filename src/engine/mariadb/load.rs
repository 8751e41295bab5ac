//! The MariaDB load: closed-loop clients, each on its own connection for the
//! whole run, running one prepared statement with a random integer
//! parameter (a point select) as fast as it answers.
//!
//! Each client counts its statements in the second they complete on the run
//! clock and hands each second over to the same recorder the PostgreSQL load
//! feeds (`metrics::recorder`), so the timeline, summary and histograms are
//! made the same way. A failed statement counts in its second with its time
//! (its kind from the SQLSTATE the server sent); a lost connection is
//! counted and opened again.

use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use rand::RngExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::errors::{failure_kind, server_error};
use super::session::{SessionRoles, connect};
use crate::engine::ErrorClass;
use crate::metrics::Recorder;
use crate::metrics::failures::Failure;
use crate::metrics::recorder::{WorkerPart, WorkerSecond};
use crate::role::{ClientKind, Role};
use crate::scenario::RunClock;

/// How long a client waits before opening a lost connection again.
const REOPEN_EVERY: Duration = Duration::from_millis(200);

/// What each client runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointSelect {
    /// The statement, with one `?` for the parameter.
    pub sql: String,
    /// The parameter is drawn uniformly from `low..=high`.
    pub low: i64,
    pub high: i64,
}

/// Runs `clients` clients of `statement` on `opts` until `clock` ends;
/// returns the recorder with every second settled and the number of
/// connections lost on the way. A client that cannot connect at the start
/// is an error.
pub async fn run_load(
    opts: &mysql_async::Opts,
    roles: &SessionRoles,
    clients: usize,
    statement: &PointSelect,
    clock: RunClock,
) -> anyhow::Result<(Recorder, u32)> {
    let (parts_tx, parts_rx) = mpsc::unbounded_channel();
    let recorder = spawn_recorder(clock, clients, parts_rx);
    let mut workers: Vec<JoinHandle<u32>> = Vec::with_capacity(clients);
    for worker in 0..clients {
        let role = Role::Client(ClientKind::Reader, worker as u32 + 1);
        let conn = connect(opts, role, roles).await.map_err(|err| {
            anyhow::anyhow!("{role}: connecting to MariaDB: {err}; is the server up?")
        })?;
        let client = Client {
            worker,
            role,
            opts: opts.clone(),
            roles: roles.clone(),
            statement: statement.clone(),
            parts: parts_tx.clone(),
        };
        workers.push(tokio::spawn(client.run(conn, clock)));
    }
    drop(parts_tx);
    let mut lost = 0;
    for worker in workers {
        lost += worker.await.unwrap_or(0);
    }
    let recorder = recorder.await?;
    Ok((recorder, lost))
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

/// One closed-loop client.
struct Client {
    worker: usize,
    role: Role,
    opts: mysql_async::Opts,
    roles: SessionRoles,
    statement: PointSelect,
    parts: mpsc::UnboundedSender<WorkerPart>,
}

impl Client {
    /// Runs statements until the clock ends; returns how often its connection was lost.
    async fn run(self, mut conn: mysql_async::Conn, clock: RunClock) -> u32 {
        let end = clock.end();
        let mut current = WorkerSecond::new(0);
        let mut lost = 0;
        let mut prepared = conn.prep(&self.statement.sql).await.ok();
        while Instant::now() < end {
            let Some(statement) = &prepared else {
                lost += 1;
                current = self.hand_over(current, clock.second_now());
                let Some(reopened) = self.reopen(clock, &mut current).await else {
                    break;
                };
                conn = reopened;
                prepared = conn.prep(&self.statement.sql).await.ok();
                continue;
            };
            let parameter = rand::rng().random_range(self.statement.low..=self.statement.high);
            let started = Instant::now();
            let result =
                tokio::time::timeout_at(end.into(), conn.exec_drop(statement, (parameter,))).await;
            let Ok(result) = result else {
                break; // The run ended while the statement waited: it is unfinished, in no second.
            };
            let latency_us = started.elapsed().as_micros() as u64;
            current = self.hand_over(current, clock.second_now());
            match result {
                Ok(()) => current.latency_us.record(latency_us),
                Err(err) => {
                    let error = server_error(&err);
                    let failure = Failure::new(failure_kind(&error), error.to_string());
                    current.record_failure(&failure, latency_us);
                    if error.class == ErrorClass::ConnectionLost {
                        current.conn_lost += 1;
                        prepared = None;
                    }
                }
            }
        }
        let _ = self.parts.send(WorkerPart {
            worker: self.worker,
            finished: (!current.is_empty()).then_some(current),
            now_in: u32::MAX,
        });
        let _ = conn.disconnect().await;
        lost
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

    /// Opens the connection again, every [`REOPEN_EVERY`], until the clock
    /// ends; counts the reconnect in `current`.
    async fn reopen(
        &self,
        clock: RunClock,
        current: &mut WorkerSecond,
    ) -> Option<mysql_async::Conn> {
        while Instant::now() < clock.end() {
            if let Ok(conn) = connect(&self.opts, self.role, &self.roles).await {
                current.reconnects += 1;
                return Some(conn);
            }
            current.reconnect_failures += 1;
            tokio::time::sleep(REOPEN_EVERY).await;
        }
        None
    }
}
