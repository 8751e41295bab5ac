//! The replica observer: on a run with a hot standby, every 200 ms one look
//! at the standby from a session of its own, on the run's clock. It reads
//! how far replay is behind what the standby received (turned into an age
//! by `metrics::replica::LagClock`), whether the startup process waits for a
//! lock (replay stopped behind a query, the replica's outage), how many
//! sessions wait for a lock there, and the standby's recovery-conflict
//! cancellations. The lock observer looks at the primary; this looks only
//! at the standby, and writes nothing anywhere.

use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::Client;

use super::RunClock;
use crate::metrics::replica::{LagClock, ReplicaSample};

/// How often the standby is looked at.
const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// One look: received and replayed positions (bytes from 0/0), whether the
/// startup process waits for a lock, the other sessions that wait, and the
/// database's recovery-conflict cancellations so far.
const LOOK_SQL: &str = "\
    SELECT (pg_last_wal_receive_lsn() - '0/0'::pg_lsn)::int8,
           (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::int8,
           EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                   WHERE a.backend_type = 'startup' AND NOT l.granted),
           (SELECT count(DISTINCT l.pid) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE a.backend_type <> 'startup' AND NOT l.granted)::int4,
           coalesce((SELECT confl_tablespace + confl_lock + confl_snapshot + confl_bufferpin
                            + confl_deadlock
                     FROM pg_stat_database_conflicts WHERE datname = current_database()), 0)::int8";

/// What the replica observer saw: its samples in time order, and why it
/// stopped early, if it did.
#[derive(Debug, Default)]
pub struct ReplicaObserved {
    pub samples: Vec<ReplicaSample>,
    /// `replica observer: lost the standby at 6.2 s (...)`; `None` when it
    /// looked until the end.
    pub error: Option<String>,
}

/// Looks at the standby every [`SAMPLE_EVERY`] until `stop` turns true.
pub async fn observe_replica(
    client: Client,
    clock: RunClock,
    mut stop: watch::Receiver<bool>,
) -> ReplicaObserved {
    let mut observed = ReplicaObserved::default();
    let mut lag_clock = LagClock::default();
    let mut ticker = tokio::time::interval(SAMPLE_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.wait_for(|over| *over) => return observed,
        }
        let at_s = clock.now_s();
        let row = match client.query_one(LOOK_SQL, &[]).await {
            Ok(row) => row,
            Err(err) => {
                observed.error = Some(format!(
                    "replica observer: no look at the standby from {at_s:.1} s on ({err}); \
                     the replica_* columns after it keep the last lag seen"
                ));
                return observed;
            }
        };
        let received = row.get::<_, Option<i64>>(0).unwrap_or(0).max(0) as u64;
        let replayed = row.get::<_, Option<i64>>(1).unwrap_or(0).max(0) as u64;
        let (lag_s, lag_bytes) = lag_clock.lag(at_s, received.max(replayed), replayed);
        observed.samples.push(ReplicaSample {
            at_s,
            lag_s,
            lag_bytes,
            replay_waiting: row.get(2),
            lock_waiters: row.get::<_, i32>(3).max(0) as u32,
            conflicts_total: row.get::<_, i64>(4).max(0) as u64,
        });
    }
}
