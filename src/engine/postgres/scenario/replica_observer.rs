//! The replica observer: on a run with a hot standby, every 200 ms one look
//! at the standby from a session of its own, on the run's clock. It reads
//! how far replay is behind what the standby received (turned into an age
//! by `metrics::replica::LagClock`), the standby's recovery-conflict
//! cancellations, and, when a session there waits for a lock, the lock
//! queue as the lock observer reads the primary's: who waits, who holds,
//! who blocks whom, with the startup process (replay) as `startup`. The
//! lock observer looks at the primary; this looks only at the standby, and
//! writes nothing anywhere.
//!
//! `pg_blocking_pids` of the startup process is empty: the sessions that
//! hold up replay are not in its lock's wait queue, replay cancels or waits
//! for them by its own rules. Its blockers are the sessions holding a
//! granted lock on the relation it waits for (replay waits only for
//! AccessExclusiveLock, which conflicts with every lock); the standby's
//! log names the same session (`Conflicting process: <pid>`).

use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::{Client, Row};

use super::observer::{
    SampledSession, lock_moment, lock_rows, lock_sample_joins, session_of, time_untimed_waits,
};
use crate::choices::Side;
use crate::metrics::locks::WaitSightings;
use crate::metrics::replica::{LagClock, ReplicaSample};
use crate::role::Role;
use crate::scenario::RunClock;

/// How often the standby is looked at.
const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// One look, in one statement: a row of positions (bytes from 0/0) and
/// recovery-conflict cancellations so far, joined to one row per session of
/// this database (and the startup process) that waits for a lock or holds
/// one on a workload table, in the columns of the lock observer's sample
/// (`observer::session_of`), then whether it is the startup process.
///
/// `pg_locks` is read only when a session waits for a heavyweight lock (the
/// one-time filter skips the `locks` scan otherwise, as the lock observer's
/// does): reading it takes every lock-manager partition's lock.
const LOOK_SQL: &str = concat!(
    "\
WITH look AS MATERIALIZED (
    SELECT (pg_last_wal_receive_lsn() - '0/0'::pg_lsn)::int8 AS received,
           (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::int8 AS replayed,
           coalesce((SELECT confl_tablespace + confl_lock + confl_snapshot + confl_bufferpin
                            + confl_deadlock
                     FROM pg_stat_database_conflicts WHERE datname = current_database()),
                    0)::int8 AS conflicts
),
activity AS MATERIALIZED (
    SELECT a.pid, a.application_name, a.state, a.wait_event_type, a.wait_event,
           a.backend_type = 'startup' AS is_startup
    FROM pg_stat_activity a
    WHERE a.pid <> pg_backend_pid()
      AND (a.backend_type = 'startup'
           OR (a.backend_type = 'client backend' AND a.datname = current_database()))
),
locks AS MATERIALIZED (
    SELECT l.pid, l.mode, l.granted, l.locktype, l.database, l.relation, l.waitstart,",
    lock_rows!(),
    "\
      AND EXISTS (SELECT FROM activity
                  WHERE wait_event_type = 'Lock' OR (state IS NULL AND NOT is_startup))
),
sessions AS (
    SELECT a.pid,
           coalesce(a.application_name, '') AS application_name,
           coalesce(a.state, '') AS state,
           coalesce(a.wait_event_type, '') AS wait_event_type,
           coalesce(a.wait_event, '') AS wait_event,
           w.mode AS waiting_mode, w.object AS waiting_object,
           (extract(epoch FROM clock_timestamp() - w.waitstart) * 1000)::float8 AS waited_ms,
           h.mode AS holding_mode, h.object AS holding_object,
           CASE WHEN w.pid IS NULL THEN '{}'::int4[]
                WHEN a.is_startup THEN coalesce(
                    (SELECT array_agg(DISTINCT o.pid) FROM locks o
                     WHERE o.granted AND o.pid <> a.pid AND o.locktype = w.locktype
                       AND o.database IS NOT DISTINCT FROM w.database
                       AND o.relation IS NOT DISTINCT FROM w.relation),
                    '{}'::int4[])
                ELSE pg_blocking_pids(a.pid) END AS blocked_by,
           a.is_startup
    FROM activity a
",
    lock_sample_joins!(),
    "
    WHERE w.pid IS NOT NULL OR h.pid IS NOT NULL
)
SELECT s.pid, s.application_name, s.state, s.wait_event_type, s.wait_event,
       s.waiting_mode, s.waiting_object, s.waited_ms, s.holding_mode, s.holding_object,
       s.blocked_by, s.is_startup,
       look.received, look.replayed, look.conflicts
FROM look LEFT JOIN sessions s ON true"
);

/// The column of [`LOOK_SQL`] after the session's: whether it is the startup process.
const IS_STARTUP: usize = 11;
/// The columns of [`LOOK_SQL`]'s positions and cancellations.
const RECEIVED: usize = 12;
const REPLAYED: usize = 13;
const CONFLICTS: usize = 14;

/// What the replica observer saw: its samples in time order, and why it
/// stopped early, if it did.
#[derive(Debug, Default)]
pub struct ReplicaObserved {
    /// Each look at the standby, with its lock queue.
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
    let (session_prefix, look) = match prepare(&client).await {
        Ok(prepared) => prepared,
        Err(err) => {
            observed.error = Some(format!(
                "replica observer: no look at the standby ({err}); the replica_* columns are empty"
            ));
            return observed;
        }
    };
    let mut lag_clock = LagClock::default();
    let mut sightings = WaitSightings::default();
    let mut ticker = tokio::time::interval(SAMPLE_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.wait_for(|over| *over) => return observed,
        }
        let at_s = clock.now_s();
        let rows = match client.query(&look, &[]).await {
            Ok(rows) => rows,
            Err(err) => {
                observed.error = Some(format!(
                    "replica observer: no look at the standby from {at_s:.1} s on ({err}); \
                     the replica_* columns after it keep the last lag seen"
                ));
                return observed;
            }
        };
        let sample = sample_of(&rows, at_s, &session_prefix, &mut lag_clock, &mut sightings);
        observed.samples.push(sample);
    }
}

/// The run's session prefix (the observer's own `application_name` less its
/// role) and [`LOOK_SQL`] prepared for the standby's version.
async fn prepare(
    client: &Client,
) -> Result<(String, tokio_postgres::Statement), tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT current_setting('application_name'),
                    current_setting('server_version_num')::int4",
            &[],
        )
        .await?;
    let own_name: String = row.get(0);
    let suffix = format!("-{}", Role::ReplicaObserver);
    let session_prefix = own_name.strip_suffix(&suffix).unwrap_or("").to_string();
    let server_version_num = row.get::<_, i32>(1) as u32;
    // pg_locks.waitstart exists from PostgreSQL 14 on.
    let sql = if server_version_num >= 140000 {
        LOOK_SQL.to_string()
    } else {
        LOOK_SQL.replace("l.waitstart", "NULL::timestamptz AS waitstart")
    };
    Ok((session_prefix, client.prepare(&sql).await?))
}

/// One look from the rows of [`LOOK_SQL`] taken at `at_s`.
fn sample_of(
    rows: &[Row],
    at_s: f64,
    session_prefix: &str,
    lag_clock: &mut LagClock,
    sightings: &mut WaitSightings,
) -> ReplicaSample {
    let Some(first) = rows.first() else {
        return ReplicaSample {
            at_s,
            ..ReplicaSample::default()
        };
    };
    let received = first.get::<_, Option<i64>>(RECEIVED).unwrap_or(0).max(0) as u64;
    let replayed = first.get::<_, Option<i64>>(REPLAYED).unwrap_or(0).max(0) as u64;
    let (lag_s, lag_bytes) = lag_clock.lag(at_s, received.max(replayed), replayed);
    let mut sessions: Vec<SampledSession> = rows
        .iter()
        .filter(|row| row.get::<_, Option<i32>>(0).is_some())
        .map(|row| {
            let mut session = session_of(row, session_prefix);
            if row.get::<_, bool>(IS_STARTUP) {
                session.role = Role::Startup;
            }
            session
        })
        .collect();
    time_untimed_waits(sightings, at_s, &mut sessions);
    let waiting = |startup: bool| {
        sessions
            .iter()
            .filter(move |s| s.waiting.is_some() && (s.role == Role::Startup) == startup)
    };
    ReplicaSample {
        at_s,
        lag_s,
        lag_bytes,
        replay_waiting: waiting(true).next().is_some(),
        lock_waiters: waiting(false).count() as u32,
        conflicts_total: first.get::<_, i64>(CONFLICTS).max(0) as u64,
        locks: lock_moment(at_s, &sessions, Side::Replica),
    }
}
