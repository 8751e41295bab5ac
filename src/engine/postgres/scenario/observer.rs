//! The lock observer: on its own connection, samples `pg_stat_activity`
//! 5 times a second, with `pg_locks` and `pg_blocking_pids` when a session
//! waits for a lock, and keeps who waited for whom. Needs no superuser: roles
//! come from `application_name`, lock modes and blockers from `pg_locks` and
//! `pg_blocking_pids`, which every user may read; only another user's state
//! and wait event stay hidden.
//!
//! Between samples, while a DDL try runs, it polls the DDL session alone,
//! every 20 ms, from `pg_stat_activity` (which takes no lock-manager lock):
//! whether it waits for a lock or runs. The DDL injector follows that live
//! for the progress line, and the run's report places each attempt's lock
//! grant from it.
//!
//! A lost session (a restart, a terminated backend) is opened again and the
//! sampling goes on; the time without one is kept as a gap the report names.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::{Client, Row, Statement};

use super::reopen::{HeldSession, is_connection_lost};
use crate::choices::Side;
use crate::engine::postgres::database::error_text;
use crate::metrics::grant::GRANT_POLL_EVERY_MS;
use crate::metrics::locks::{
    LockSample, ObserverGap, SecondLocks, WaitKey, WaitSightings, is_worse_moment,
};
use crate::metrics::{DdlActivity, DdlPoll, LiveCounters};
use crate::role::{Role, is_client_role};
use crate::scenario::RunClock;

/// How often the observer samples: 5 times a second.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// What the DDL session (by its `application_name`, `$1`) is doing. Its
/// parallel workers (an index rebuild's) share the name: the backend type tells.
const DDL_POLL_SQL: &str = "\
SELECT coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, '')
FROM pg_stat_activity
WHERE application_name = $1 AND datname = current_database()
  AND backend_type = 'client backend'";

/// The rows of a lock sample's `locks` CTE after its own columns: the
/// locked object's name, whether it is a workload table (a table on the
/// search path), from `pg_locks` of live sessions. Shared with the replica
/// observer's look.
macro_rules! lock_rows {
    () => {
        "
           coalesce(c.relname::text, l.locktype) AS object,
           (c.relkind IN ('r', 'p') AND n.nspname = ANY (current_schemas(false))) AS on_workload_table
    FROM pg_locks l
    LEFT JOIN pg_class c ON c.oid = l.relation
    LEFT JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE l.pid IS NOT NULL
"
    };
}
pub(super) use lock_rows;

/// The joins of a lock sample, shared with the replica observer's look: a
/// session's lock wait (`w`, from the `locks` CTE) and the strongest lock it
/// holds on a workload table (`h`), for each session `a`.
macro_rules! lock_sample_joins {
    () => {
        "
LEFT JOIN LATERAL (
    SELECT * FROM locks WHERE locks.pid = a.pid AND NOT locks.granted LIMIT 1
) w ON true
LEFT JOIN LATERAL (
    SELECT * FROM locks
    WHERE locks.pid = a.pid AND locks.granted AND locks.on_workload_table
    ORDER BY array_position(ARRAY['AccessShareLock', 'RowShareLock', 'RowExclusiveLock',
        'ShareUpdateExclusiveLock', 'ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock',
        'AccessExclusiveLock'], locks.mode) DESC
    LIMIT 1
) h ON true"
    };
}
pub(super) use lock_sample_joins;

/// One row per client session of this database (but the observer): what it
/// waits for (if anything), the strongest lock it holds on a workload table,
/// and who blocks it.
///
/// `pg_locks` is read once per sample, and only when a session waits for a
/// heavyweight lock (or hides its state from this user): reading it takes
/// every lock-manager partition's lock, which the load's sessions need to
/// take their own locks, so a sample without a waiter reads
/// `pg_stat_activity` alone (the one-time filter skips the `locks` scan).
/// Nothing is lost: a sample keeps only waiters and their blockers.
const SAMPLE_SQL: &str = concat!(
    "\
WITH activity AS MATERIALIZED (
    SELECT a.pid, a.application_name, a.state, a.wait_event_type, a.wait_event
    FROM pg_stat_activity a
    WHERE a.datname = current_database()
      AND a.pid <> pg_backend_pid()
      AND a.backend_type = 'client backend'
),
locks AS MATERIALIZED (
    SELECT l.pid, l.mode, l.granted, l.locktype, l.waitstart,",
    lock_rows!(),
    "\
      AND EXISTS (SELECT FROM activity WHERE wait_event_type = 'Lock' OR state IS NULL)
)
SELECT a.pid,
       coalesce(a.application_name, ''),
       coalesce(a.state, ''),
       coalesce(a.wait_event_type, ''),
       coalesce(a.wait_event, ''),
       w.mode,
       -- A row wait on the holder's transaction id: the table of the tuple
       -- lock the waiter holds while it waits (the first waiter of a row
       -- takes it; the next ones wait for that tuple lock).
       CASE WHEN w.locktype = 'transactionid' THEN coalesce((
           SELECT t.object FROM locks t
           WHERE t.pid = a.pid AND t.granted AND t.locktype = 'tuple' LIMIT 1
       ), w.object) ELSE w.object END,
       (extract(epoch FROM clock_timestamp() - w.waitstart) * 1000)::float8,
       h.mode, h.object,
       CASE WHEN w.pid IS NULL THEN '{}'::int4[] ELSE pg_blocking_pids(a.pid) END
FROM activity a
",
    lock_sample_joins!()
);

/// What the observer saw during one strategy.
#[derive(Debug, Default)]
pub struct ObserverOutput {
    /// Per second of the run.
    pub per_second: Vec<SecondLocks>,
    /// Sessions that waited or blocked another, at every sample.
    pub samples: Vec<LockSample>,
    /// The sample moment with the most sessions waiting behind the DDL, ties
    /// broken by the longest wait.
    pub worst: Vec<LockSample>,
    /// The role of every session seen, by backend pid (for the server log).
    pub roles: BTreeMap<u32, Role>,
    /// The DDL session at every poll, in time order; empty when the run has no DDL.
    pub ddl_polls: Vec<DdlPoll>,
    /// Times without a connection, each ended by opening the session again.
    pub gaps: Vec<ObserverGap>,
    /// The error that stopped sampling early, if one did (not a lost connection).
    pub error: Option<String>,
}

/// What the observer tells others while it runs.
pub struct LiveReports {
    /// Lock waiters per second, for the progress line.
    pub live: Arc<LiveCounters>,
    /// A one-line head of the lock queue, for the progress line.
    pub queue_status: watch::Sender<String>,
    /// The DDL session to poll between samples; `None` when the run has no DDL.
    pub ddl: Option<DdlActivityWatch>,
}

/// Where the observer reports what the DDL session does, live.
pub struct DdlActivityWatch {
    /// The DDL session's `application_name`.
    pub application_name: String,
    /// The latest poll's answer, for the DDL injector's progress line.
    pub activity: watch::Sender<DdlActivity>,
    /// True while a DDL try runs: only then is the session polled (a poll
    /// outside a try places nothing).
    pub try_running: watch::Receiver<bool>,
}

/// A session as one sample sees it, before roles are resolved (the replica
/// observer samples the standby's sessions the same way).
pub(super) struct SampledSession {
    pub(super) pid: u32,
    pub(super) role: Role,
    state: String,
    wait_event_type: String,
    wait_event: String,
    /// The lock mode and object it waits for, and for how long in ms (`None`
    /// where the server does not say: see [`WaitSightings`]).
    pub(super) waiting: Option<(String, String, Option<f64>)>,
    holding: Option<(String, String)>,
    blocked_by: Vec<u32>,
}

/// Samples until `stop` turns true, telling `reports` as it goes; with
/// `reports.ddl`, the DDL session is polled between samples. A lost session is
/// opened again (every [`super::reopen::REOPEN_EVERY`]) and the time without one kept as a
/// gap; any other error ends the sampling.
pub async fn observe(
    mut session: HeldSession,
    clock: RunClock,
    session_prefix: String,
    server_version_num: u32,
    reports: LiveReports,
    mut stop: watch::Receiver<bool>,
) -> ObserverOutput {
    let mut output = ObserverOutput {
        per_second: vec![SecondLocks::default(); clock.duration_s() as usize],
        ..ObserverOutput::default()
    };
    let mut sightings = WaitSightings::default();
    loop {
        let sampled = sample_until_stopped(
            &session.client,
            clock,
            &session_prefix,
            server_version_num,
            &reports,
            (&mut output, &mut sightings),
            &mut stop,
        )
        .await;
        let Err(err) = sampled else {
            return output;
        };
        if !is_connection_lost(&err) {
            output.error = Some(format!("lock observer: {}", error_text(&err)));
            return output;
        }
        let lost_s = clock.now_s();
        let back = session.reopen(&mut stop).await;
        output.gaps.push(ObserverGap {
            lost_s,
            back_s: back.then(|| clock.now_s()),
        });
        if !back {
            return output;
        }
    }
}

/// Prepares the statements on `client`, then samples (and polls the DDL
/// session) until `stop` turns true, into `output` and the waits' first
/// sightings; the first error ends it.
async fn sample_until_stopped(
    client: &Client,
    clock: RunClock,
    session_prefix: &str,
    server_version_num: u32,
    reports: &LiveReports,
    (output, sightings): (&mut ObserverOutput, &mut WaitSightings),
    stop: &mut watch::Receiver<bool>,
) -> Result<(), tokio_postgres::Error> {
    let ddl = &reports.ddl;
    let statement = prepare_sample(client, server_version_num).await?;
    let ddl_poll = match ddl {
        Some(_) => Some(client.prepare(DDL_POLL_SQL).await?),
        None => None,
    };
    let mut ticker = tokio::time::interval(SAMPLE_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut poll_ticker = tokio::time::interval(Duration::from_millis(GRANT_POLL_EVERY_MS));
    poll_ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut try_running = ddl.as_ref().map(|ddl| ddl.try_running.clone());
    loop {
        let polling = try_running
            .as_ref()
            .is_some_and(|running| *running.borrow());
        let sample_now = tokio::select! {
            _ = ticker.tick() => true,
            _ = poll_ticker.tick(), if polling => false,
            // Poll at once, then on the ticker's own grid: not reset to the
            // try's start, or the poll deadlock_timeout (1 s) after the
            // start would land in the instant the waiting session wakes to
            // check for a deadlock, outside its lock wait, and read as a grant.
            () = try_started_or_ended(&mut try_running) => false,
            _ = stop.wait_for(|stopped| *stopped) => return Ok(()),
        };
        if let (false, Some(ddl), Some(statement)) = (sample_now, ddl, &ddl_poll) {
            let poll = poll_ddl(client, statement, ddl, clock).await?;
            output.ddl_polls.push(poll);
            continue;
        }
        let rows = client.query(&statement, &[]).await?;
        let t_s = clock.now_s();
        let second = clock.second_now();
        let mut sessions: Vec<SampledSession> = rows
            .iter()
            .map(|row| session_of(row, session_prefix))
            .collect();
        time_untimed_waits(sightings, t_s, &mut sessions);
        record_sample(
            output,
            &sessions,
            t_s,
            second,
            &reports.live,
            &reports.queue_status,
        );
    }
}

/// Resolves when a DDL try starts or ends; never without a DDL session to
/// poll, nor once the injector is done (`try_running` is then `None`).
async fn try_started_or_ended(try_running: &mut Option<watch::Receiver<bool>>) {
    if let Some(running) = try_running
        && running.changed().await.is_ok()
    {
        return;
    }
    *try_running = None;
    std::future::pending().await
}

/// Polls what the DDL session is doing and tells `ddl.activity` at once.
async fn poll_ddl(
    client: &Client,
    statement: &Statement,
    ddl: &DdlActivityWatch,
    clock: RunClock,
) -> Result<DdlPoll, tokio_postgres::Error> {
    let row = client
        .query_opt(statement, &[&ddl.application_name])
        .await?;
    let t_s = clock.now_s();
    let activity = match row {
        Some(row) => activity_of(row.get(0), row.get(1), row.get(2)),
        None => DdlActivity::Idle,
    };
    ddl.activity.send_if_modified(|latest| {
        let changed = *latest != activity;
        *latest = activity;
        changed
    });
    Ok(DdlPoll { t_s, activity })
}

/// A session's activity from its `pg_stat_activity` `state`, `wait_event_type`
/// and `wait_event`. Waiting for the lock manager's own locks counts as waiting
/// for a lock: a session in a lock wait wakes after `deadlock_timeout` to check
/// for a deadlock, which takes every lock-manager lock, and a poll in that
/// instant must not read the wait as over.
fn activity_of(state: &str, wait_event_type: &str, wait_event: &str) -> DdlActivity {
    match (state, wait_event_type, wait_event) {
        ("active", "Lock", _) | ("active", "LWLock", "LockManager") => DdlActivity::WaitingForLock,
        ("active", _, _) => DdlActivity::Running,
        _ => DdlActivity::Idle,
    }
}

/// Gives each wait the server did not time its time since the observer first
/// saw it (see [`WaitSightings`]).
pub(super) fn time_untimed_waits(
    sightings: &mut WaitSightings,
    t_s: f64,
    sessions: &mut [SampledSession],
) {
    let waits: Vec<WaitKey> = sessions
        .iter()
        .filter_map(|session| {
            let (mode, object, _) = session.waiting.as_ref()?;
            Some((session.pid, mode.clone(), object.clone()))
        })
        .collect();
    let seen_ms = sightings.sighted(t_s, &waits);
    let waiting = sessions
        .iter_mut()
        .filter_map(|session| session.waiting.as_mut());
    for ((_, _, wait_ms), seen_ms) in waiting.zip(seen_ms) {
        wait_ms.get_or_insert(seen_ms);
    }
}

/// [`SAMPLE_SQL`] for a server of `server_version_num`: `pg_locks.waitstart`
/// exists from PostgreSQL 14 on; before, every wait is timed from its first sighting.
pub fn sample_sql(server_version_num: u32) -> String {
    if server_version_num >= 140000 {
        SAMPLE_SQL.to_string()
    } else {
        SAMPLE_SQL.replace("l.waitstart", "NULL::timestamptz AS waitstart")
    }
}

/// Prepares [`sample_sql`] for the server's version.
async fn prepare_sample(
    client: &Client,
    server_version_num: u32,
) -> Result<Statement, tokio_postgres::Error> {
    client.prepare(&sample_sql(server_version_num)).await
}

/// One row of [`SAMPLE_SQL`] as a session, its role resolved from `session_prefix`.
pub(super) fn session_of(row: &Row, session_prefix: &str) -> SampledSession {
    let pid = row.get::<_, i32>(0) as u32;
    let application_name: String = row.get(1);
    let waiting_mode: Option<String> = row.get(5);
    let holding_mode: Option<String> = row.get(8);
    SampledSession {
        pid,
        role: Role::of_session(session_prefix, &application_name, pid),
        state: row.get(2),
        wait_event_type: row.get(3),
        wait_event: row.get(4),
        waiting: waiting_mode.map(|mode| {
            (
                mode,
                row.get::<_, Option<String>>(6).unwrap_or_default(),
                row.get(7),
            )
        }),
        holding: holding_mode
            .map(|mode| (mode, row.get::<_, Option<String>>(9).unwrap_or_default())),
        blocked_by: {
            // pg_blocking_pids lists a pid once per conflicting lock: once is enough.
            let mut pids: Vec<u32> = row
                .get::<_, Vec<i32>>(10)
                .into_iter()
                .map(|pid| pid as u32)
                .collect();
            pids.sort_unstable();
            pids.dedup();
            pids
        },
    }
}

/// Adds one sample taken at `t_s` (in `second`) to `output`: the roles seen,
/// the second's lock figures, the worst moment so far; and reports the
/// waiters to `live` and the head of the queue to `queue_status`.
fn record_sample(
    output: &mut ObserverOutput,
    sessions: &[SampledSession],
    t_s: f64,
    second: u32,
    live: &LiveCounters,
    queue_status: &watch::Sender<String>,
) {
    for session in sessions {
        output.roles.entry(session.pid).or_insert(session.role);
    }
    let moment = lock_moment(t_s, sessions, Side::Primary);
    let waiting: Vec<&LockSample> = moment.iter().filter(|s| !s.granted).collect();
    live.record_lock_waiters(second, waiting.len() as u32);
    queue_status.send_replace(head_of_queue(&moment));
    if let Some(slot) = output.per_second.get_mut(second as usize) {
        let behind_ddl = waiting
            .iter()
            .filter(|s| {
                s.blocked_by
                    .iter()
                    .any(|b| Role::parse(b) == Some(Role::Ddl))
            })
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

/// The sessions of one sample taken on `server` that wait for a lock or
/// block a waiting session.
pub(super) fn lock_moment(t_s: f64, sessions: &[SampledSession], server: Side) -> Vec<LockSample> {
    let role = |pid: u32| {
        sessions
            .iter()
            .find(|s| s.pid == pid)
            .map_or(Role::External(pid), |s| s.role)
            .to_string()
    };
    let blocking: Vec<u32> = sessions
        .iter()
        .filter(|s| s.waiting.is_some())
        .flat_map(|s| s.blocked_by.iter().copied())
        .collect();
    sessions
        .iter()
        .filter(|s| s.waiting.is_some() || blocking.contains(&s.pid))
        .map(|s| {
            let (lock_mode, relation, granted, wait_ms) = match (&s.waiting, &s.holding) {
                (Some((mode, object, wait_ms)), _) => {
                    (mode.clone(), object.clone(), false, wait_ms.unwrap_or(0.0))
                }
                (None, Some((mode, object))) => (mode.clone(), object.clone(), true, 0.0),
                (None, None) => (String::new(), String::new(), true, 0.0),
            };
            LockSample {
                t_s,
                pid: s.pid,
                role: s.role.to_string(),
                state: s.state.clone(),
                wait_event_type: s.wait_event_type.clone(),
                wait_event: s.wait_event.clone(),
                lock_mode,
                relation,
                granted,
                blocked_by: s.blocked_by.iter().map(|&pid| role(pid)).collect(),
                wait_ms,
                server,
            }
        })
        .collect()
}

/// `ddl waits on report (8.2 s); 4 readers behind ddl`, or empty when no one waits.
pub fn head_of_queue(moment: &[LockSample]) -> String {
    let waiting: Vec<&LockSample> = moment.iter().filter(|s| !s.granted).collect();
    // The head: a waiter blocked only by sessions that do not wait themselves.
    let Some(head) = waiting.iter().find(|s| {
        s.blocked_by
            .iter()
            .all(|blocker| !waiting.iter().any(|w| &w.role == blocker))
    }) else {
        return if waiting.is_empty() {
            String::new()
        } else {
            format!("{} sessions wait in a cycle", waiting.len())
        };
    };
    let mut text = if head.blocked_by.is_empty() {
        // Blocked by no one: the lock is being handed over at this instant.
        format!(
            "{} is being granted its lock ({:.1} s)",
            head.role,
            head.wait_ms / 1000.0
        )
    } else {
        format!(
            "{} waits on {} ({:.1} s)",
            head.role,
            head.blocked_by.join(", "),
            head.wait_ms / 1000.0
        )
    };
    let behind: Vec<&&LockSample> = waiting
        .iter()
        .filter(|s| s.blocked_by.contains(&head.role))
        .collect();
    if !behind.is_empty() {
        let clients = behind.iter().filter(|s| is_client_role(&s.role)).count();
        // `reader` or `client`, as the load's clients are named.
        let kind = match Role::parse(&behind[0].role) {
            Some(Role::Client(kind, _) | Role::Pool(kind)) => kind.to_string(),
            _ => String::new(),
        };
        let what = match (clients == behind.len(), behind.len()) {
            (true, 1) => kind.to_string(),
            (true, _) => format!("{kind}s"),
            (false, 1) => "session".to_string(),
            (false, _) => "sessions".to_string(),
        };
        text.push_str(&format!("; {} {what} behind {}", behind.len(), head.role));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ddl_session_waits_only_for_a_lock() {
        use DdlActivity::{Idle, Running, WaitingForLock};
        let cases = [
            (("active", "Lock", "relation"), WaitingForLock),
            (("active", "LWLock", "LockManager"), WaitingForLock),
            (("active", "LWLock", "WALWrite"), Running),
            (("active", "IO", "DataFileRead"), Running),
            (("active", "", ""), Running),
            (("idle", "Client", "ClientRead"), Idle),
            (("idle in transaction", "", ""), Idle),
        ];
        for ((state, event_type, event), seen) in cases {
            assert_eq!(
                activity_of(state, event_type, event),
                seen,
                "{state} {event_type} {event}"
            );
        }
    }

    fn session(pid: u32, role: &str, waiting: Option<&str>, blocked_by: &[u32]) -> SampledSession {
        SampledSession {
            pid,
            role: Role::parse(role).unwrap(),
            state: "active".into(),
            wait_event_type: String::new(),
            wait_event: String::new(),
            waiting: waiting.map(|mode| (mode.to_string(), "orders".to_string(), Some(8200.0))),
            holding: Some(("AccessShareLock".into(), "orders".into())),
            blocked_by: blocked_by.to_vec(),
        }
    }

    #[test]
    fn waits_the_server_did_not_time_are_timed_from_their_first_sighting() {
        let mut sightings = WaitSightings::default();
        let mut untimed = |t_s: f64| {
            let mut sessions = vec![
                session(100, "report", None, &[]),
                session(108, "ddl", Some("AccessExclusiveLock"), &[100]),
                session(90, "reader-1", Some("AccessShareLock"), &[108]),
            ];
            // PostgreSQL 13 says nothing of the ddl's wait; 14 timed the reader's.
            sessions[1].waiting.as_mut().unwrap().2 = None;
            time_untimed_waits(&mut sightings, t_s, &mut sessions);
            lock_moment(t_s, &sessions, Side::Primary)
        };
        assert_eq!(untimed(6.0)[1].wait_ms, 0.0);
        let moment = untimed(8.5);
        assert!((moment[1].wait_ms - 2500.0).abs() < 1e-6, "{moment:?}");
        assert_eq!(moment[2].wait_ms, 8200.0);
        assert_eq!(moment[0].wait_ms, 0.0);
    }

    #[test]
    fn a_moment_keeps_waiters_and_blockers_with_roles() {
        let sessions = vec![
            session(100, "report", None, &[]),
            session(108, "ddl", Some("AccessExclusiveLock"), &[100]),
            session(90, "reader-1", Some("AccessShareLock"), &[108]),
            session(91, "reader-2", Some("AccessShareLock"), &[108]),
            session(95, "reader-3", None, &[]),
        ];
        let moment = lock_moment(8.0, &sessions, Side::Primary);
        let roles: Vec<&str> = moment.iter().map(|s| s.role.as_str()).collect();
        assert_eq!(roles, ["report", "ddl", "reader-1", "reader-2"]);
        assert!(moment[0].granted);
        assert_eq!(moment[0].lock_mode, "AccessShareLock");
        assert_eq!(moment[1].blocked_by, ["report"]);
        assert_eq!(moment[2].blocked_by, ["ddl"]);
        assert_eq!(
            head_of_queue(&moment),
            "ddl waits on report (8.2 s); 2 readers behind ddl"
        );
        assert_eq!(head_of_queue(&moment[..1]), "");
    }

    #[test]
    fn a_head_blocked_by_no_one_is_being_granted_its_lock() {
        // The report has just committed: the ddl still waits, blocked by no one.
        let sessions = vec![
            session(108, "ddl", Some("AccessExclusiveLock"), &[]),
            session(90, "reader-1", Some("AccessShareLock"), &[108]),
        ];
        assert_eq!(
            head_of_queue(&lock_moment(8.0, &sessions, Side::Primary)),
            "ddl is being granted its lock (8.2 s); 1 reader behind ddl"
        );
    }
}
