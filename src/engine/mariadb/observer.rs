//! The MariaDB lock observer: on its own connection, 5 times a second, reads
//! the metadata locks of the run's tables from
//! `performance_schema.metadata_locks` (granted and pending, with the owner
//! thread) joined to the processlist, and keeps who waits for whom as the
//! engine-neutral [`LockSample`], so that the lock chain is told in the same
//! words as PostgreSQL's: `report holds SHARED_READ on orders <- ddl waits
//! for EXCLUSIVE, blocked by report <- reader-1..4 wait for SHARED_READ,
//! blocked by ddl`.
//!
//! MariaDB does not say who blocks a pending lock. The observer works it out
//! from the lock types as the server decides them (`MDL_lock`'s
//! compatibility matrices in `sql/mdl.cc`): a pending request is blocked by
//! every other session holding a granted lock it is incompatible with, and,
//! when there is none, by every other session whose own pending request
//! takes precedence over it (a pending EXCLUSIVE holds back new SHARED_READ
//! requests: the queue behind the ALTER).

use std::collections::BTreeMap;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use tokio::sync::watch;

use super::session::SessionRoles;
use crate::choices::Side;
use crate::metrics::locks::{LockSample, SecondLocks, is_worse_moment};
use crate::role::Role;
use crate::scenario::RunClock;

/// How often the observer samples: 5 times a second, as PostgreSQL's.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// Every metadata lock on a table of the run's database (`?`), granted or
/// pending, of every session but the observer's, with what the processlist
/// says of its session.
const SAMPLE_SQL: &str = "\
SELECT t.PROCESSLIST_ID, m.LOCK_TYPE, m.LOCK_STATUS, m.OBJECT_NAME,
       coalesce(p.COMMAND, ''), coalesce(p.STATE, ''), coalesce(p.TIME_MS, 0)
FROM performance_schema.metadata_locks m
JOIN performance_schema.threads t ON t.THREAD_ID = m.OWNER_THREAD_ID
LEFT JOIN information_schema.PROCESSLIST p ON p.ID = t.PROCESSLIST_ID
WHERE m.OBJECT_TYPE = 'TABLE' AND m.OBJECT_SCHEMA = ?
  AND t.PROCESSLIST_ID IS NOT NULL AND t.PROCESSLIST_ID <> CONNECTION_ID()";

/// A row of [`SAMPLE_SQL`] as the client reads it.
type SampleRow = (u64, String, String, String, String, String, f64);

/// One row of [`SAMPLE_SQL`]: one metadata lock of one session.
#[derive(Debug, Clone, PartialEq)]
pub struct MdlRow {
    /// The session's processlist id.
    pub session_id: u64,
    /// `SHARED_READ`, `EXCLUSIVE`, ...
    pub lock_type: String,
    /// True when `GRANTED`, false when `PENDING`.
    pub granted: bool,
    pub table: String,
    /// The processlist's `COMMAND` (`Query`, `Sleep`) and `STATE`
    /// (`Waiting for table metadata lock`).
    pub command: String,
    pub state: String,
    /// How long its current statement has run, in ms.
    pub time_ms: f64,
}

/// What the observer saw during one strategy.
#[derive(Debug, Default)]
pub struct ObserverOutput {
    /// Per second of the run.
    pub per_second: Vec<SecondLocks>,
    /// Most sessions seen waiting at once, per second.
    pub lock_waiters: Vec<u32>,
    /// Sessions that waited or blocked another, at every sample.
    pub samples: Vec<LockSample>,
    /// The worst sample moment (see `metrics::locks::is_worse_moment`).
    pub worst: Vec<LockSample>,
    /// The error that stopped sampling early, if one did.
    pub error: Option<String>,
}

/// Samples the locks of tables in `database` until `stop` turns true.
pub async fn observe(
    mut conn: mysql_async::Conn,
    database: String,
    roles: SessionRoles,
    clock: RunClock,
    mut stop: watch::Receiver<bool>,
) -> ObserverOutput {
    let seconds = clock.duration_s() as usize;
    let mut output = ObserverOutput {
        per_second: vec![SecondLocks::default(); seconds],
        lock_waiters: vec![0; seconds],
        ..ObserverOutput::default()
    };
    let statement = match conn.prep(SAMPLE_SQL).await {
        Ok(statement) => statement,
        Err(err) => {
            output.error = Some(format!("lock observer: {err}"));
            return output;
        }
    };
    let mut ticker = tokio::time::interval(SAMPLE_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.wait_for(|stopped| *stopped) => break,
        }
        let rows: Result<Vec<SampleRow>, _> = conn.exec(&statement, (database.as_str(),)).await;
        let rows = match rows {
            Ok(rows) => rows,
            Err(err) => {
                output.error = Some(format!("lock observer: {err}"));
                break;
            }
        };
        let rows: Vec<MdlRow> = rows
            .into_iter()
            .map(
                |(session_id, lock_type, status, table, command, state, time_ms)| MdlRow {
                    session_id,
                    lock_type,
                    granted: status == "GRANTED",
                    table,
                    command,
                    state,
                    time_ms,
                },
            )
            .collect();
        let moment = lock_moment(clock.now_s(), &rows, |id| roles.of(id));
        record(&mut output, moment, clock.second_now());
    }
    let _ = conn.disconnect().await;
    output
}

/// Adds one sample's moment, taken in `second`, to `output`.
fn record(output: &mut ObserverOutput, moment: Vec<LockSample>, second: u32) {
    let waiting: Vec<&LockSample> = moment.iter().filter(|s| !s.granted).collect();
    if let Some(slot) = output.lock_waiters.get_mut(second as usize) {
        *slot = (*slot).max(waiting.len() as u32);
    }
    if let Some(slot) = output.per_second.get_mut(second as usize) {
        let behind_ddl = waiting
            .iter()
            .filter(|s| s.blocked_by.iter().any(|b| b == "ddl"))
            .count() as u32;
        slot.waiting_behind_ddl = slot.waiting_behind_ddl.max(behind_ddl);
        let oldest = waiting.iter().map(|s| s.wait_ms).fold(0.0, f64::max);
        slot.oldest_wait_ms = slot.oldest_wait_ms.max(oldest);
    }
    if is_worse_moment(&moment, &output.worst) {
        output.worst = moment.clone();
    }
    output.samples.extend(moment);
}

/// The sessions of one sample taken at `t_s` that wait for a metadata lock
/// or block a waiting one, in session order: a waiter with its pending lock
/// and its blockers, a blocker with the strongest lock it holds.
pub fn lock_moment(t_s: f64, rows: &[MdlRow], role_of: impl Fn(u64) -> Role) -> Vec<LockSample> {
    let mut sessions: BTreeMap<u64, Vec<&MdlRow>> = BTreeMap::new();
    for row in rows {
        sessions.entry(row.session_id).or_default().push(row);
    }
    let mut waits: BTreeMap<u64, (&MdlRow, Vec<u64>)> = BTreeMap::new();
    for row in rows.iter().filter(|row| !row.granted) {
        waits.insert(row.session_id, (row, blockers_of(row, rows)));
    }
    let blocking: Vec<u64> = waits
        .values()
        .flat_map(|(_, blockers)| blockers.iter().copied())
        .collect();
    let name = |id: u64| role_of(id).to_string();
    sessions
        .iter()
        .filter(|(id, _)| waits.contains_key(id) || blocking.contains(id))
        .map(|(&id, locks)| {
            let first = locks[0];
            let (row, blocked_by, granted, wait_ms) = match waits.get(&id) {
                Some((row, blockers)) => (*row, blockers.clone(), false, row.time_ms),
                None => {
                    let strongest = locks
                        .iter()
                        .filter(|row| row.granted)
                        .max_by_key(|row| strength(&row.lock_type))
                        .copied()
                        .unwrap_or(first);
                    (strongest, Vec::new(), true, 0.0)
                }
            };
            LockSample {
                t_s,
                pid: id as u32,
                role: name(id),
                state: first.command.to_lowercase(),
                wait_event_type: if granted {
                    String::new()
                } else {
                    "MDL".to_string()
                },
                wait_event: first.state.clone(),
                lock_mode: row.lock_type.clone(),
                relation: row.table.clone(),
                granted,
                blocked_by: blocked_by.into_iter().map(name).collect(),
                wait_ms,
                server: Side::Primary,
            }
        })
        .collect()
}

/// The sessions that hold back `pending`: those holding a granted lock on
/// its table that it cannot be granted beside, else those whose own pending
/// request on it goes first.
fn blockers_of(pending: &MdlRow, rows: &[MdlRow]) -> Vec<u64> {
    let others = || {
        rows.iter()
            .filter(|row| row.session_id != pending.session_id && row.table == pending.table)
    };
    let mut granted: Vec<u64> = others()
        .filter(|row| row.granted && !compatible_with_granted(&pending.lock_type, &row.lock_type))
        .map(|row| row.session_id)
        .collect();
    if granted.is_empty() {
        granted = others()
            .filter(|row| {
                !row.granted && !compatible_with_pending(&pending.lock_type, &row.lock_type)
            })
            .map(|row| row.session_id)
            .collect();
    }
    granted.sort_unstable();
    granted.dedup();
    granted
}

/// The table-lock types in the order of `MDL_lock`'s matrices, weakest first.
const TYPES: [&str; 10] = [
    "SHARED",
    "SHARED_HIGH_PRIO",
    "SHARED_READ",
    "SHARED_WRITE",
    "SHARED_WRITE_LOW_PRIO",
    "SHARED_UPGRADABLE",
    "SHARED_READ_ONLY",
    "SHARED_NO_WRITE",
    "SHARED_NO_READ_WRITE",
    "EXCLUSIVE",
];

/// Whether a request of type `request` can be granted beside a granted lock
/// of type `granted` (`MDL_object_lock`'s granted matrix): one row per
/// request type, one column per granted type, in [`TYPES`] order.
const GRANTED_MATRIX: [&str; 10] = [
    "+++++++++-", // S
    "+++++++++-", // SH
    "++++++++--", // SR
    "++++++----", // SW
    "++++++----", // SWLP
    "+++++-+---", // SU
    "+++--++---", // SRO
    "+++---+---", // SNW
    "++--------", // SNRW
    "----------", // X
];

/// Whether a request of type `request` may pass a pending request of type
/// `pending` (`MDL_object_lock`'s waiting matrix), in [`TYPES`] order.
const PENDING_MATRIX: [&str; 10] = [
    "+++++++++-", // S
    "++++++++++", // SH
    "++++++++--", // SR
    "+++++++---", // SW
    "++++++----", // SWLP
    "+++++++++-", // SU
    "+++-++++--", // SRO
    "+++++++++-", // SNW
    "+++++++++-", // SNRW
    "++++++++++", // X
];

fn index_of(lock_type: &str) -> Option<usize> {
    TYPES.iter().position(|name| *name == lock_type)
}

/// How strong a lock type is, for naming the lock a blocker holds.
fn strength(lock_type: &str) -> usize {
    index_of(lock_type).unwrap_or(0)
}

fn matrix_allows(matrix: &[&str; 10], request: &str, other: &str) -> bool {
    match (index_of(request), index_of(other)) {
        (Some(row), Some(column)) => matrix[row].as_bytes()[column] == b'+',
        // A type this table does not know: assume it conflicts, so the wait has a blocker.
        _ => false,
    }
}

fn compatible_with_granted(request: &str, granted: &str) -> bool {
    matrix_allows(&GRANTED_MATRIX, request, granted)
}

fn compatible_with_pending(request: &str, pending: &str) -> bool {
    matrix_allows(&PENDING_MATRIX, request, pending)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::sentences::describe_chain;
    use crate::metrics::locks::chain;

    fn row(id: u64, lock_type: &str, granted: bool) -> MdlRow {
        MdlRow {
            session_id: id,
            lock_type: lock_type.into(),
            granted,
            table: "orders".into(),
            command: "Query".into(),
            state: if granted {
                "User sleep"
            } else {
                "Waiting for table metadata lock"
            }
            .into(),
            time_ms: 2500.0,
        }
    }

    fn role_of(id: u64) -> Role {
        match id {
            10 => Role::Blocker(crate::choices::BlockerKind::Report),
            11 => Role::Ddl,
            n => Role::Client(crate::role::ClientKind::Reader, (n - 19) as u32),
        }
    }

    #[test]
    fn the_queue_behind_a_pending_exclusive_lock_is_named_as_postgresql_names_it() {
        let rows = vec![
            row(10, "SHARED_READ", true),
            row(11, "SHARED_UPGRADABLE", true),
            row(11, "EXCLUSIVE", false),
            row(20, "SHARED_READ", false),
            row(21, "SHARED_READ", false),
            row(22, "SHARED_READ", false),
            row(23, "SHARED_READ", false),
        ];
        let moment = lock_moment(8.0, &rows, role_of);
        assert_eq!(
            describe_chain(&chain(&moment)),
            "report (pid 10) holds SHARED_READ on orders \
             <- ddl (pid 11) waits for EXCLUSIVE on orders, blocked by report \
             <- reader-1..4 wait for SHARED_READ on orders, blocked by ddl"
        );
        assert_eq!(moment[1].wait_ms, 2500.0);
    }

    #[test]
    fn compatible_locks_block_no_one() {
        // Readers beside a report: SHARED_READ next to SHARED_READ, no one waits.
        let rows = vec![row(10, "SHARED_READ", true), row(20, "SHARED_READ", true)];
        assert!(lock_moment(1.0, &rows, role_of).is_empty());
        assert!(compatible_with_granted("SHARED_UPGRADABLE", "SHARED_READ"));
        assert!(!compatible_with_granted("EXCLUSIVE", "SHARED_READ"));
        assert!(!compatible_with_pending("SHARED_READ", "EXCLUSIVE"));
        assert!(compatible_with_pending("SHARED_HIGH_PRIO", "EXCLUSIVE"));
    }
}
