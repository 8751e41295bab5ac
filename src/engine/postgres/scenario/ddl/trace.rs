//! The lock trace: a migration's statements run one at a time on a quiet
//! server, and after each one the trace asks what it did. It reads three
//! things the server keeps per session, before and after each statement:
//!
//! - the session's granted relation locks (`pg_locks` where `pid` is its
//!   own): a lock there after the statement and not before is one the
//!   statement took, and it stays held until the transaction ends;
//! - `pg_class.relfilenode` of every relation: a relation whose file changed
//!   was rewritten (a volatile default, a type change, `VACUUM FULL`);
//! - `seq_scan` of `pg_stat_xact_user_tables`, the session's own counts in
//!   its open transaction: a table whose count went up was read whole (a
//!   validation, `SET NOT NULL` without a proving constraint, an index build,
//!   a rewrite).
//!
//! A statement PostgreSQL refuses in a transaction block (`CREATE INDEX
//! CONCURRENTLY`) takes its locks only while it runs and commits on its own:
//! a second session (the watcher) polls `pg_locks` for the trace session's
//! pid every [`WATCH_EVERY`] while it runs, and keeps every lock it saw. Its
//! scans cannot be read (they are not in the session's open transaction), so
//! they are left unknown.
//!
//! Around each statement the session reads the server's WAL position
//! ([`super::wal`]): on the quiet server of the trace, the WAL between the
//! two reads is the statement's own (a rewrite writes the whole table).
//!
//! The caller chooses how the trace ends ([`TraceEnd`]): rolled back, every
//! step in one transaction (possible when every statement may run in a
//! transaction block, see [`rolls_back`]), so the schema is as before; or as
//! deployed, each step committing on its own, which the caller undoes
//! ([`Traced::created_indexes`] names what the trace built). In one
//! transaction a later step's lock of a mode an earlier step already holds on
//! the same relation is not seen again (the session asks for it, but holds
//! it already), so a migration of several steps is traced as deployed where
//! the caller can undo it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use tokio_postgres::Client;

use super::wal::{wal_position, wal_since};
use crate::engine::postgres::database::error_text;
use crate::error::Error;
use crate::metrics::lock_trace::{LockMode, RelationKind, TracedLock, TracedStatement, holds_ms};
use crate::sql_split::split_statements;
use crate::strategy::statements::{Unrollable, first_unrollable, must_run_outside_transaction};

/// How often the watcher looks at the locks of a statement outside a transaction.
const WATCH_EVERY: Duration = Duration::from_millis(2);

/// Relations the trace reports: not the catalogs', not TOAST's.
const USER_RELATIONS: &str = "n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'";

/// One DDL step to trace: statements that run in one transaction, or one
/// statement on its own (`in_transaction` false).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStep {
    pub statements: Vec<String>,
    pub in_transaction: bool,
}

impl TraceStep {
    /// A DDL step of a workload or a strategy: its statements (split on `;`)
    /// in one transaction, unless one of them must run outside one.
    pub fn of_ddl_step(step: &str) -> TraceStep {
        TraceStep {
            statements: split_statements(step),
            in_transaction: !must_run_outside_transaction(step),
        }
    }
}

/// How a trace ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceEnd {
    /// Every step in one transaction, rolled back at the end.
    RolledBack,
    /// Each step as deployed: a transaction that commits, or a statement outside one.
    Committed,
}

/// A finished trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Traced {
    /// Every statement traced, in order.
    pub statements: Vec<TracedStatement>,
    /// Indexes the committed steps created, schema-qualified and quoted (what undoing the trace drops).
    pub created_indexes: Vec<String>,
}

/// Why a trace stopped.
#[derive(Debug)]
pub enum TraceError {
    /// A statement of the migration failed; everything before it was undone
    /// when the trace runs in one transaction.
    Statement {
        step: u32,
        statement: u32,
        sql: String,
        /// The server's message and SQLSTATE.
        message: String,
    },
    /// The trace's own sessions failed (a lost connection, a catalog query).
    Session(Error),
}

impl From<tokio_postgres::Error> for TraceError {
    fn from(err: tokio_postgres::Error) -> TraceError {
        TraceError::Session(Error::runtime(format!("lock trace: {}", error_text(&err))))
    }
}

/// Whether every statement of `steps` may run in a transaction block on a
/// server of `server_version_num`, so that the trace can be rolled back.
pub fn rolls_back(steps: &[TraceStep], server_version_num: u32) -> bool {
    steps.iter().flat_map(|step| &step.statements).all(|sql| {
        !matches!(
            first_unrollable(sql, server_version_num),
            Some(Unrollable::OutsideTransaction(_))
        )
    })
}

/// Traces `steps` on `session`, with `watcher` (another session of the same
/// database) for statements outside a transaction, ending as `end` says
/// (`RolledBack` only where [`rolls_back`] allows it). A statement that
/// begins or ends a transaction itself (`BEGIN`, `COMMIT`) is not traced:
/// the trace keeps the transactions.
pub async fn trace_steps(
    session: &Client,
    watcher: &Client,
    steps: &[TraceStep],
    server_version_num: u32,
    end: TraceEnd,
) -> Result<Traced, TraceError> {
    if end == TraceEnd::RolledBack && !rolls_back(steps, server_version_num) {
        return Err(TraceError::Session(Error::runtime(
            "lock trace: a statement must run outside a transaction, so the trace cannot be \
             rolled back",
        )));
    }
    let pid: i32 = session
        .query_one("SELECT pg_backend_pid()", &[])
        .await?
        .get(0);
    // Asked once outside a transaction: a failed read inside the trace's
    // transaction would abort it.
    let wal_readable = wal_position(session).await.is_some();
    let mut tracer = Tracer {
        session,
        watcher,
        pid,
        wal_readable,
        server_version_num,
        statements: Vec::new(),
        created_indexes: Vec::new(),
    };
    let result = match end {
        TraceEnd::RolledBack => tracer.in_one_transaction(steps).await,
        TraceEnd::Committed => tracer.as_deployed(steps).await,
    };
    if result.is_err() {
        // Leave the session usable; a failed transaction is rolled back here.
        let _ = session.batch_execute("ROLLBACK").await;
    }
    result?;
    Ok(Traced {
        statements: tracer.statements,
        created_indexes: tracer.created_indexes,
    })
}

/// What the session holds and what the relations look like at one moment.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    /// Granted locks by (relation oid, mode).
    locks: BTreeSet<(i64, LockMode)>,
    /// Every user relation by oid.
    relations: BTreeMap<i64, Relation>,
    /// `seq_scan` of the transaction's own statistics, by table oid.
    scans: BTreeMap<i64, i64>,
}

#[derive(Debug, Clone, PartialEq)]
struct Relation {
    name: String,
    /// `schema.name`, each quoted as SQL needs it.
    qualified: String,
    kind: RelationKind,
    filenode: i64,
}

struct Tracer<'a> {
    session: &'a Client,
    watcher: &'a Client,
    pid: i32,
    /// The server tells its WAL position (read before the trace): the
    /// statements' WAL is measured.
    wal_readable: bool,
    server_version_num: u32,
    statements: Vec<TracedStatement>,
    created_indexes: Vec<String>,
}

impl Tracer<'_> {
    /// Every step in one transaction, rolled back at the end.
    async fn in_one_transaction(&mut self, steps: &[TraceStep]) -> Result<(), TraceError> {
        self.session.batch_execute("BEGIN").await?;
        let mut before = self.snapshot(true).await?;
        for (index, step) in steps.iter().enumerate() {
            before = self
                .transaction_step(index as u32 + 1, step, before)
                .await?;
        }
        self.session.batch_execute("ROLLBACK").await?;
        Ok(())
    }

    /// Each step as deployed: a transaction that commits, or a statement
    /// outside one watched from the other session.
    async fn as_deployed(&mut self, steps: &[TraceStep]) -> Result<(), TraceError> {
        for (index, step) in steps.iter().enumerate() {
            let number = index as u32 + 1;
            let outside = step.statements.iter().any(|sql| {
                matches!(
                    first_unrollable(sql, self.server_version_num),
                    Some(Unrollable::OutsideTransaction(_))
                )
            });
            let before_step = self.snapshot(false).await?;
            if outside {
                for sql in &step.statements {
                    self.watched_statement(number, sql).await?;
                }
            } else {
                self.session.batch_execute("BEGIN").await?;
                let before = self.snapshot(true).await?;
                self.transaction_step(number, step, before).await?;
                self.session.batch_execute("COMMIT").await?;
            }
            let after_step = self.snapshot(false).await?;
            for (oid, relation) in &after_step.relations {
                if relation.kind == RelationKind::Index && !before_step.relations.contains_key(oid)
                {
                    self.created_indexes.push(relation.qualified.clone());
                }
            }
        }
        Ok(())
    }

    /// The statements of one step inside the open transaction, each timed and
    /// compared with the moment before it; returns the moment after the last.
    async fn transaction_step(
        &mut self,
        step: u32,
        trace_step: &TraceStep,
        mut before: Snapshot,
    ) -> Result<Snapshot, TraceError> {
        let first = self.statements.len();
        for sql in &trace_step.statements {
            if let Some(Unrollable::OwnTransaction(_)) =
                first_unrollable(sql, self.server_version_num)
            {
                continue;
            }
            let number = self.statements.len() as u32 + 1;
            let wal_before = self.wal_position().await;
            let started = Instant::now();
            self.run(step, number, sql).await?;
            let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
            let wal_bytes = wal_since(self.session, wal_before).await;
            let after = self.snapshot(true).await?;
            let locks = changes(&before, &after, true);
            self.statements.push(TracedStatement {
                step,
                statement: number,
                sql: sql.clone(),
                duration_ms,
                held_ms: duration_ms,
                locks,
                wal_bytes,
            });
            before = after;
        }
        // Statements of a step outside a transaction each commit on their own.
        if trace_step.in_transaction {
            let step_statements = &mut self.statements[first..];
            let durations: Vec<f64> = step_statements.iter().map(|s| s.duration_ms).collect();
            for (statement, held_ms) in step_statements.iter_mut().zip(holds_ms(&durations)) {
                statement.held_ms = held_ms;
            }
        }
        Ok(before)
    }

    /// One statement outside a transaction, its locks seen by the watcher
    /// while it runs. The watcher first holds a snapshot and ACCESS SHARE on
    /// every table, so a statement that waits for older transactions (`CREATE
    /// INDEX CONCURRENTLY`) or for a lock (`DROP INDEX CONCURRENTLY`) waits on
    /// it where the watcher can look; once it has looked at the waiting
    /// statement it lets it go. The time the statement waited on the watcher
    /// is not in its duration.
    async fn watched_statement(&mut self, step: u32, sql: &str) -> Result<(), TraceError> {
        let number = self.statements.len() as u32 + 1;
        let before = self.snapshot(false).await?;
        self.hold_every_table(&before).await?;
        let mut watch = Watch::default();
        let wal_before = self.wal_position().await;
        let started = Instant::now();
        let result = {
            let statement = self.run(step, number, sql);
            tokio::pin!(statement);
            loop {
                tokio::select! {
                    result = &mut statement => break result,
                    _ = tokio::time::sleep(WATCH_EVERY) => {
                        let seen = self.watched_locks().await?;
                        if watch.saw(seen) {
                            self.watcher.batch_execute("COMMIT").await?;
                        }
                    }
                }
            }
        };
        if watch.holding() {
            self.watcher.batch_execute("COMMIT").await?;
        }
        result?;
        let duration_ms = started
            .elapsed()
            .saturating_sub(watch.held_up())
            .as_secs_f64()
            * 1000.0;
        let wal_bytes = wal_since(self.session, wal_before).await;
        let after = self.snapshot(false).await?;
        let mut locks: Vec<TracedLock> = watch
            .seen
            .into_iter()
            .map(|((oid, mode), (relation, kind))| TracedLock {
                relation,
                kind,
                mode,
                taken: true,
                rewritten: rewritten(&before, &after, oid),
                scanned: None,
            })
            .collect();
        sort_locks(&mut locks);
        self.statements.push(TracedStatement {
            step,
            statement: number,
            sql: sql.to_string(),
            duration_ms,
            held_ms: duration_ms,
            locks,
            wal_bytes,
        });
        Ok(())
    }

    /// The watcher opens a transaction with a snapshot and ACCESS SHARE on
    /// every table of `now` (what a long report holds).
    async fn hold_every_table(&self, now: &Snapshot) -> Result<(), TraceError> {
        let mut sql = String::from("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1");
        for relation in now.relations.values() {
            if relation.kind == RelationKind::Table {
                sql.push_str(&format!("; SELECT FROM {} LIMIT 0", relation.qualified));
            }
        }
        Ok(self.watcher.batch_execute(&sql).await?)
    }

    /// The server's WAL position, where the trace measures WAL; else `None`.
    async fn wal_position(&self) -> Option<u64> {
        match self.wal_readable {
            true => wal_position(self.session).await,
            false => None,
        }
    }

    /// Runs one statement of the migration; its failure names it.
    async fn run(&self, step: u32, statement: u32, sql: &str) -> Result<(), TraceError> {
        self.session
            .batch_execute(sql)
            .await
            .map_err(|err| match err.as_db_error() {
                Some(_) => TraceError::Statement {
                    step,
                    statement,
                    sql: sql.to_string(),
                    message: error_text(&err),
                },
                None => TraceError::from(err),
            })
    }

    /// The session's locks and the relations now, read by the session itself
    /// (so it sees its own uncommitted catalog rows); with `in_transaction`,
    /// also its transaction's scan counts.
    async fn snapshot(&self, in_transaction: bool) -> Result<Snapshot, TraceError> {
        let mut snapshot = Snapshot::default();
        let relations = self
            .session
            .query(
                &format!(
                    "SELECT c.oid::int8, {NAME}, c.relkind::text, c.relfilenode::int8, \
                     format('%I.%I', n.nspname, c.relname) \
                     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE {USER_RELATIONS} AND c.relkind IN ('r', 'p', 'i', 'I', 'S', 'm', 'v', 'f')"
                ),
                &[],
            )
            .await?;
        for row in relations {
            snapshot.relations.insert(
                row.get(0),
                Relation {
                    name: row.get(1),
                    kind: RelationKind::from_relkind(row.get(2)),
                    filenode: row.get(3),
                    qualified: row.get(4),
                },
            );
        }
        for ((oid, mode), _, _) in self.locks_of(self.session).await? {
            snapshot.locks.insert((oid, mode));
        }
        if in_transaction {
            let scans = self
                .session
                .query(
                    "SELECT relid::int8, coalesce(seq_scan, 0)::int8 FROM pg_stat_xact_user_tables",
                    &[],
                )
                .await?;
            snapshot.scans = scans.iter().map(|row| (row.get(0), row.get(1))).collect();
        }
        Ok(snapshot)
    }

    /// The trace session's relation locks, granted or awaited, as the watcher
    /// sees them, and whether it waits for any lock (a relation's, a transaction's).
    async fn watched_locks(&self) -> Result<(Vec<LockRow>, bool), TraceError> {
        let rows = self
            .watcher
            .query(
                &format!(
                    "SELECT l.relation::int8, {NAME}, c.relkind::text, l.mode, l.granted \
                     FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation \
                     LEFT JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE l.pid = $1 AND (NOT l.granted OR (l.locktype = 'relation' AND {USER_RELATIONS}))"
                ),
                &[&self.pid],
            )
            .await?;
        let waiting = rows.iter().any(|row| !row.get::<_, bool>(4));
        let locks = rows
            .iter()
            .filter_map(|row| {
                let oid: Option<i64> = row.get(0);
                let name: Option<String> = row.get(1);
                let mode = LockMode::from_pg_name(row.get(3))?;
                Some((
                    (oid?, mode),
                    name?,
                    RelationKind::from_relkind(row.get::<_, Option<&str>>(2)?),
                ))
            })
            .collect();
        Ok((locks, waiting))
    }

    /// The trace session's granted locks on user relations, asked on `client`.
    async fn locks_of(&self, client: &Client) -> Result<Vec<LockRow>, TraceError> {
        let rows = client
            .query(
                &format!(
                    "SELECT l.relation::int8, {NAME}, c.relkind::text, l.mode \
                     FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
                     JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE l.pid = $1 AND l.locktype = 'relation' AND l.granted AND {USER_RELATIONS}"
                ),
                &[&self.pid],
            )
            .await?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let mode = LockMode::from_pg_name(row.get(3))?;
                Some((
                    (row.get(0), mode),
                    row.get(1),
                    RelationKind::from_relkind(row.get(2)),
                ))
            })
            .collect())
    }
}

/// A lock as a catalog query returns it: (relation oid, mode), name, kind.
type LockRow = ((i64, LockMode), String, RelationKind);

/// What the watcher saw of a statement outside a transaction, and whether it
/// still holds the statement up.
#[derive(Default)]
struct Watch {
    seen: BTreeMap<(i64, LockMode), (String, RelationKind)>,
    /// When the statement was first seen waiting.
    waiting_since: Option<Instant>,
    /// How long it waited on the watcher, once the watcher let it go.
    released_after: Option<Duration>,
}

impl Watch {
    /// Adds one look; true when the watcher should now let the statement go
    /// (it was seen waiting at two looks in a row, so its locks so far are seen).
    fn saw(&mut self, (locks, waiting): (Vec<LockRow>, bool)) -> bool {
        for (key, name, kind) in locks {
            self.seen.insert(key, (name, kind));
        }
        if !self.holding() || !waiting {
            return false;
        }
        match self.waiting_since {
            None => {
                self.waiting_since = Some(Instant::now());
                false
            }
            Some(since) => {
                self.released_after = Some(since.elapsed());
                true
            }
        }
    }

    /// Whether the watcher still holds its transaction open.
    fn holding(&self) -> bool {
        self.released_after.is_none()
    }

    /// How long the statement waited on the watcher.
    fn held_up(&self) -> Duration {
        self.released_after.unwrap_or_default()
    }
}

/// The relation's name as the trace shows it: bare when its schema is on
/// the search path, else schema-qualified.
pub(crate) const NAME: &str = "CASE WHEN n.nspname = ANY (current_schemas(false)) THEN c.relname::text \
                    ELSE n.nspname || '.' || c.relname END";

/// What one statement did, from the moments `before` and `after` it: the
/// locks it took, and the relations it rewrote or scanned (listed with the
/// lock already held on them when it took none). `scans_known` is false
/// outside a transaction.
fn changes(before: &Snapshot, after: &Snapshot, scans_known: bool) -> Vec<TracedLock> {
    let relation_of = |oid: i64| {
        after
            .relations
            .get(&oid)
            .or_else(|| before.relations.get(&oid))
    };
    let scanned = |oid: i64| {
        scans_known.then(|| {
            after.scans.get(&oid).copied().unwrap_or(0)
                > before.scans.get(&oid).copied().unwrap_or(0)
        })
    };
    let mut locks: Vec<TracedLock> = Vec::new();
    for &(oid, mode) in after.locks.difference(&before.locks) {
        let Some(relation) = relation_of(oid) else {
            continue;
        };
        locks.push(TracedLock {
            relation: relation.name.clone(),
            kind: relation.kind,
            mode,
            taken: true,
            rewritten: rewritten(before, after, oid),
            scanned: scanned(oid),
        });
    }
    // Rewritten or scanned under a lock an earlier statement took: listed with the strongest held.
    for (&oid, relation) in &after.relations {
        let did_something = rewritten(before, after, oid) || scanned(oid) == Some(true);
        let listed = locks.iter().any(|lock| lock.relation == relation.name);
        if !did_something || listed {
            continue;
        }
        let held = after
            .locks
            .iter()
            .filter(|(locked, _)| *locked == oid)
            .map(|(_, mode)| *mode)
            .max();
        if let Some(mode) = held {
            locks.push(TracedLock {
                relation: relation.name.clone(),
                kind: relation.kind,
                mode,
                taken: false,
                rewritten: rewritten(before, after, oid),
                scanned: scanned(oid),
            });
        }
    }
    sort_locks(&mut locks);
    locks
}

/// Whether relation `oid` existed before and after and got a new file.
fn rewritten(before: &Snapshot, after: &Snapshot, oid: i64) -> bool {
    match (before.relations.get(&oid), after.relations.get(&oid)) {
        (Some(old), Some(new)) => old.filenode != 0 && old.filenode != new.filenode,
        _ => false,
    }
}

/// Tables first, then by relation name, the strongest mode first.
fn sort_locks(locks: &mut [TracedLock]) {
    locks.sort_by(|a, b| {
        (a.kind != RelationKind::Table)
            .cmp(&(b.kind != RelationKind::Table))
            .then_with(|| a.relation.cmp(&b.relation))
            .then_with(|| b.mode.cmp(&a.mode))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relation(name: &str, kind: RelationKind, filenode: i64) -> Relation {
        Relation {
            name: name.into(),
            qualified: format!("stallbench.{name}"),
            kind,
            filenode,
        }
    }

    #[test]
    fn new_locks_rewrites_and_scans_come_from_two_moments() {
        let mut before = Snapshot::default();
        before
            .relations
            .insert(1, relation("orders", RelationKind::Table, 100));
        before
            .relations
            .insert(2, relation("customers", RelationKind::Table, 200));
        before.locks.insert((2, LockMode::AccessExclusive));
        before.scans.insert(1, 3);
        let mut after = before.clone();
        // orders: locked and rewritten; customers: rewritten under the lock held before.
        after.locks.insert((1, LockMode::AccessExclusive));
        after.relations.get_mut(&1).unwrap().filenode = 101;
        after.relations.get_mut(&2).unwrap().filenode = 201;
        after.scans.insert(1, 4);
        // A new index: a new lock, no rewrite (it had no file before).
        after
            .relations
            .insert(3, relation("orders_note_idx", RelationKind::Index, 300));
        after.locks.insert((3, LockMode::AccessExclusive));

        let locks = changes(&before, &after, true);
        let summary: Vec<(&str, LockMode, bool, bool, Option<bool>)> = locks
            .iter()
            .map(|l| (l.relation.as_str(), l.mode, l.taken, l.rewritten, l.scanned))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "customers",
                    LockMode::AccessExclusive,
                    false,
                    true,
                    Some(false)
                ),
                ("orders", LockMode::AccessExclusive, true, true, Some(true)),
                (
                    "orders_note_idx",
                    LockMode::AccessExclusive,
                    true,
                    false,
                    Some(false)
                ),
            ]
        );
        let unknown = changes(&before, &after, false);
        assert!(unknown.iter().all(|lock| lock.scanned.is_none()));
    }

    #[test]
    fn a_trace_rolls_back_unless_a_statement_must_run_outside_a_transaction() {
        let step = |sql: &str, in_transaction| TraceStep {
            statements: vec![sql.to_string()],
            in_transaction,
        };
        let alter = step("ALTER TABLE orders ADD COLUMN note text", true);
        let concurrently = step("CREATE INDEX CONCURRENTLY i ON orders (note)", false);
        assert!(rolls_back(std::slice::from_ref(&alter), 150000));
        assert!(!rolls_back(&[alter.clone(), concurrently], 150000));
        // BEGIN and COMMIT of the migration's own are left out, not a reason to commit.
        assert!(rolls_back(&[step("BEGIN", true), alter], 150000));
    }
}
