//! The lock trace of a migration, as plain data: for each statement, the
//! locks it took (mode, relation, kind), whether it rewrote or scanned a
//! table, how long it ran and how long its locks stay held; and what each lock
//! blocks for the application.
//!
//! What a lock blocks is PostgreSQL's table of conflicting lock modes
//! ("Explicit Locking", table 13.2 of the documentation; the seed articles in
//! /work/shared/seeds quote it): the application's reads take ACCESS SHARE,
//! its writes (INSERT, UPDATE, DELETE, MERGE) take ROW EXCLUSIVE, so a lock
//! blocks reads when it conflicts with ACCESS SHARE and writes when it
//! conflicts with ROW EXCLUSIVE. A lock that waits in the queue blocks the same
//! sessions as one that is held: they queue behind it.
//!
//! `scenario::ddl::trace` runs the trace; `export::csv::lock_trace` writes it
//! as `ddl_locks.csv` and reads it back.

use serde::{Deserialize, Serialize};

/// A table-level lock mode, as PostgreSQL's lock view names it (`AccessExclusiveLock`).
/// Ordered from the weakest to the strongest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum LockMode {
    #[serde(rename = "AccessShareLock")]
    AccessShare,
    #[serde(rename = "RowShareLock")]
    RowShare,
    #[serde(rename = "RowExclusiveLock")]
    RowExclusive,
    #[serde(rename = "ShareUpdateExclusiveLock")]
    ShareUpdateExclusive,
    #[serde(rename = "ShareLock")]
    Share,
    #[serde(rename = "ShareRowExclusiveLock")]
    ShareRowExclusive,
    #[serde(rename = "ExclusiveLock")]
    Exclusive,
    #[serde(rename = "AccessExclusiveLock")]
    AccessExclusive,
}

/// Every mode, weakest first: the order of [`CONFLICTS`]' rows and columns.
const MODES: [LockMode; 8] = [
    LockMode::AccessShare,
    LockMode::RowShare,
    LockMode::RowExclusive,
    LockMode::ShareUpdateExclusive,
    LockMode::Share,
    LockMode::ShareRowExclusive,
    LockMode::Exclusive,
    LockMode::AccessExclusive,
];

/// PostgreSQL's conflict table (documentation, "Explicit Locking", table
/// 13.2): `CONFLICTS[a][b]` is true when mode `a` conflicts with mode `b`, in
/// the order of [`MODES`]. The table is symmetric.
const CONFLICTS: [[bool; 8]; 8] = {
    const X: bool = true;
    const O: bool = false;
    [
        // AS RS RX SUX S SRX X AX
        [O, O, O, O, O, O, O, X], // ACCESS SHARE
        [O, O, O, O, O, O, X, X], // ROW SHARE
        [O, O, O, O, X, X, X, X], // ROW EXCLUSIVE
        [O, O, O, X, X, X, X, X], // SHARE UPDATE EXCLUSIVE
        [O, O, X, X, O, X, X, X], // SHARE
        [O, O, X, X, X, X, X, X], // SHARE ROW EXCLUSIVE
        [O, X, X, X, X, X, X, X], // EXCLUSIVE
        [X, X, X, X, X, X, X, X], // ACCESS EXCLUSIVE
    ]
};

impl LockMode {
    /// The mode PostgreSQL's lock view names `name`, e.g. `ShareLock`; `None` for a
    /// mode that is not a table lock's (an advisory or a transaction lock's).
    pub fn from_pg_name(name: &str) -> Option<LockMode> {
        MODES.into_iter().find(|mode| mode.pg_name() == name)
    }

    /// The name in PostgreSQL's lock view: `AccessExclusiveLock`.
    pub fn pg_name(self) -> &'static str {
        match self {
            LockMode::AccessShare => "AccessShareLock",
            LockMode::RowShare => "RowShareLock",
            LockMode::RowExclusive => "RowExclusiveLock",
            LockMode::ShareUpdateExclusive => "ShareUpdateExclusiveLock",
            LockMode::Share => "ShareLock",
            LockMode::ShareRowExclusive => "ShareRowExclusiveLock",
            LockMode::Exclusive => "ExclusiveLock",
            LockMode::AccessExclusive => "AccessExclusiveLock",
        }
    }

    /// The name in SQL and in the documentation: `ACCESS EXCLUSIVE`.
    pub fn sql_name(self) -> &'static str {
        match self {
            LockMode::AccessShare => "ACCESS SHARE",
            LockMode::RowShare => "ROW SHARE",
            LockMode::RowExclusive => "ROW EXCLUSIVE",
            LockMode::ShareUpdateExclusive => "SHARE UPDATE EXCLUSIVE",
            LockMode::Share => "SHARE",
            LockMode::ShareRowExclusive => "SHARE ROW EXCLUSIVE",
            LockMode::Exclusive => "EXCLUSIVE",
            LockMode::AccessExclusive => "ACCESS EXCLUSIVE",
        }
    }

    /// Whether a session holding (or queued for) `self` makes one asking for `other` wait.
    pub fn conflicts_with(self, other: LockMode) -> bool {
        CONFLICTS[self as usize][other as usize]
    }

    /// Whether a transaction that holds `held` takes this mode on the same
    /// relation without waiting, whatever other sessions hold: every mode
    /// this one conflicts with, `held` conflicts with too, so no other
    /// session holds one. (ShareLock does not cover SHARE UPDATE EXCLUSIVE.)
    pub fn covered_by(self, held: LockMode) -> bool {
        MODES
            .iter()
            .all(|&other| !self.conflicts_with(other) || held.conflicts_with(other))
    }

    /// What this lock stops the application doing: its reads take ACCESS
    /// SHARE, its writes ROW EXCLUSIVE.
    pub fn blocks(self) -> Blocks {
        match (
            self.conflicts_with(LockMode::AccessShare),
            self.conflicts_with(LockMode::RowExclusive),
        ) {
            (true, _) => Blocks::ReadsAndWrites,
            (false, true) => Blocks::Writes,
            (false, false) => Blocks::Nothing,
        }
    }
}

/// What a lock stops the application doing while it is held or queued for.
/// In `ddl_locks.csv` as `nothing`, `writes` or `reads_and_writes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blocks {
    /// Neither `SELECT` nor `INSERT/UPDATE/DELETE` waits for it.
    Nothing,
    /// `INSERT/UPDATE/DELETE` (and `SELECT ... FOR UPDATE`) wait; `SELECT` goes on.
    Writes,
    /// Every statement on the relation waits, `SELECT` included.
    ReadsAndWrites,
}

impl Blocks {
    /// For sentences: `nothing`, `writes`, `reads and writes`.
    pub fn words(self) -> &'static str {
        match self {
            Blocks::Nothing => "nothing",
            Blocks::Writes => "writes",
            Blocks::ReadsAndWrites => "reads and writes",
        }
    }
}

/// What kind of relation a lock is on, from `pg_class.relkind`.
/// In `ddl_locks.csv` as its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationKind {
    /// `r` (a table) or `p` (a partitioned table).
    Table,
    /// `i` or `I` (a partitioned index).
    Index,
    /// `S`.
    Sequence,
    /// `v`.
    View,
    /// `m`.
    MaterializedView,
    /// Anything else (a foreign table, a composite type's relation, ...).
    Other,
}

impl RelationKind {
    /// The kind of a `pg_class.relkind` letter.
    pub fn from_relkind(relkind: &str) -> RelationKind {
        match relkind {
            "r" | "p" => RelationKind::Table,
            "i" | "I" => RelationKind::Index,
            "S" => RelationKind::Sequence,
            "v" => RelationKind::View,
            "m" => RelationKind::MaterializedView,
            _ => RelationKind::Other,
        }
    }
}

/// One statement of a migration as the trace ran it, with what it did to the relations.
#[derive(Debug, Clone, PartialEq)]
pub struct TracedStatement {
    /// The 1-based DDL step (one transaction, or one statement outside a transaction).
    pub step: u32,
    /// The 1-based statement, counted across the whole migration.
    pub statement: u32,
    /// The statement's text.
    pub sql: String,
    /// How long it ran in the trace (no traffic, no lock queue), in ms.
    pub duration_ms: f64,
    /// How long its locks stay held: from its start until its transaction ends
    /// (the step's commit), in ms; its own duration outside a transaction.
    pub held_ms: f64,
    /// The relations it locked or changed; empty for a statement that touches none (`SET ...`).
    pub locks: Vec<TracedLock>,
    /// The WAL the server wrote while it ran, in bytes (on the quiet server
    /// of the trace, its own; a rewrite writes the whole table and its
    /// indexes); `None` when it could not be read.
    pub wal_bytes: Option<u64>,
}

/// One lock a traced statement holds on one relation, with what the statement did to it.
#[derive(Debug, Clone, PartialEq)]
pub struct TracedLock {
    /// The relation, schema-qualified unless its schema is on the search path.
    pub relation: String,
    pub kind: RelationKind,
    pub mode: LockMode,
    /// Taken by this statement; false for a lock an earlier statement of the
    /// same transaction took, listed because this statement rewrote or scanned the relation.
    pub taken: bool,
    /// The statement gave the relation a new file (`pg_class.relfilenode` changed): a rewrite.
    pub rewritten: bool,
    /// The statement read the whole table (its `seq_scan` count in
    /// `pg_stat_xact_user_tables` went up: a validation, `SET NOT NULL`, an
    /// index build, a rewrite); `None` where the trace cannot tell (a statement
    /// outside a transaction, whose counts are not the session's to read).
    pub scanned: Option<bool>,
}

impl TracedLock {
    /// What the lock stops the application doing.
    pub fn blocks(&self) -> Blocks {
        self.mode.blocks()
    }
}

/// How long each statement's locks stay held, from the statements of one
/// transaction (`durations_ms`, in order): the time from each statement's
/// start until the last one ends.
pub fn holds_ms(durations_ms: &[f64]) -> Vec<f64> {
    let mut holds = vec![0.0; durations_ms.len()];
    let mut remaining = 0.0;
    for (index, duration) in durations_ms.iter().enumerate().rev() {
        remaining += duration;
        holds[index] = remaining;
    }
    holds
}

/// The strongest lock an earlier statement (in `earlier`) of `statement`'s
/// transaction took on `relation`, with that statement's number (the first
/// among equals): the lock `statement` works under although the trace sees
/// it take none (the session holds it already).
pub fn held_before(
    earlier: &[TracedStatement],
    statement: &TracedStatement,
    relation: &str,
) -> Option<(LockMode, u32)> {
    earlier
        .iter()
        .filter(|before| before.step == statement.step)
        .flat_map(|before| before.locks.iter().map(move |lock| (before, lock)))
        .filter(|(_, lock)| lock.taken && lock.relation == relation)
        .max_by_key(|(before, lock)| (lock.mode, std::cmp::Reverse(before.statement)))
        .map(|(before, lock)| (lock.mode, before.statement))
}

/// The strongest lock the trace found on each table (by what it blocks, then
/// by mode), with the statement that took it: the tables in the order the
/// trace first locked them.
pub fn strongest_table_locks(
    statements: &[TracedStatement],
) -> Vec<(&TracedStatement, &TracedLock)> {
    let mut strongest: Vec<(&TracedStatement, &TracedLock)> = Vec::new();
    for statement in statements {
        for lock in &statement.locks {
            if lock.kind != RelationKind::Table {
                continue;
            }
            match strongest
                .iter_mut()
                .find(|(_, seen)| seen.relation == lock.relation)
            {
                Some(entry) if lock.mode > entry.1.mode => *entry = (statement, lock),
                Some(_) => {}
                None => strongest.push((statement, lock)),
            }
        }
    }
    strongest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_covers_the_modes_whose_conflicts_it_shares() {
        use LockMode::*;
        for mode in MODES {
            assert!(mode.covered_by(AccessExclusive), "{mode:?}");
            assert!(mode.covered_by(mode), "{mode:?}");
        }
        assert!(ShareRowExclusive.covered_by(Exclusive));
        assert!(RowExclusive.covered_by(ShareRowExclusive));
        assert!(AccessShare.covered_by(RowShare));
        // SHARE does not conflict with SHARE UPDATE EXCLUSIVE, which does with itself.
        assert!(!ShareUpdateExclusive.covered_by(Share));
        assert!(!AccessExclusive.covered_by(ShareRowExclusive));
    }

    #[test]
    fn the_conflict_table_is_symmetric_and_matches_the_documentation() {
        for a in MODES {
            for b in MODES {
                assert_eq!(a.conflicts_with(b), b.conflicts_with(a), "{a:?} {b:?}");
            }
        }
        // "Conflicting Lock Modes": the rows the seed articles quote.
        let conflicting = |mode: LockMode| -> Vec<LockMode> {
            MODES
                .into_iter()
                .filter(|other| mode.conflicts_with(*other))
                .collect()
        };
        use LockMode::*;
        assert_eq!(conflicting(AccessShare), [AccessExclusive]);
        assert_eq!(conflicting(RowShare), [Exclusive, AccessExclusive]);
        assert_eq!(
            conflicting(RowExclusive),
            [Share, ShareRowExclusive, Exclusive, AccessExclusive]
        );
        assert_eq!(
            conflicting(ShareUpdateExclusive),
            [
                ShareUpdateExclusive,
                Share,
                ShareRowExclusive,
                Exclusive,
                AccessExclusive
            ]
        );
        assert_eq!(
            conflicting(Share),
            [
                RowExclusive,
                ShareUpdateExclusive,
                ShareRowExclusive,
                Exclusive,
                AccessExclusive
            ]
        );
        assert_eq!(conflicting(AccessExclusive), MODES);
    }

    #[test]
    fn each_mode_blocks_what_the_application_would_wait_for() {
        use LockMode::*;
        let blocks: Vec<Blocks> = MODES.into_iter().map(LockMode::blocks).collect();
        assert_eq!(
            blocks,
            [
                Blocks::Nothing,        // ACCESS SHARE: SELECT
                Blocks::Nothing,        // ROW SHARE: SELECT FOR UPDATE
                Blocks::Nothing,        // ROW EXCLUSIVE: writes among themselves
                Blocks::Nothing,        // SHARE UPDATE EXCLUSIVE: CONCURRENTLY, VALIDATE
                Blocks::Writes,         // SHARE: CREATE INDEX
                Blocks::Writes,         // SHARE ROW EXCLUSIVE: ADD FOREIGN KEY
                Blocks::Writes,         // EXCLUSIVE: REFRESH ... CONCURRENTLY
                Blocks::ReadsAndWrites, // ACCESS EXCLUSIVE: most ALTER TABLE
            ]
        );
        assert_eq!(LockMode::from_pg_name("ShareLock"), Some(Share));
        assert_eq!(LockMode::from_pg_name("ExclusiveLock"), Some(Exclusive));
        assert_eq!(LockMode::from_pg_name("SIReadLock"), None);
        assert_eq!(AccessExclusive.sql_name(), "ACCESS EXCLUSIVE");
    }

    #[test]
    fn a_lock_is_held_from_its_statement_until_the_transaction_ends() {
        assert_eq!(holds_ms(&[1.0, 2.0, 4.0]), [7.0, 6.0, 4.0]);
        assert!(holds_ms(&[]).is_empty());
    }

    fn lock(relation: &str, kind: RelationKind, mode: LockMode) -> TracedLock {
        TracedLock {
            relation: relation.into(),
            kind,
            mode,
            taken: true,
            rewritten: false,
            scanned: Some(false),
        }
    }

    #[test]
    fn the_strongest_lock_per_table_keeps_its_statement() {
        let statement = |number: u32, locks: Vec<TracedLock>| TracedStatement {
            step: 1,
            statement: number,
            sql: format!("statement {number}"),
            duration_ms: 1.0,
            held_ms: 1.0,
            locks,
            wal_bytes: None,
        };
        let statements = [
            statement(
                1,
                vec![
                    lock(
                        "orders",
                        RelationKind::Table,
                        LockMode::ShareUpdateExclusive,
                    ),
                    lock(
                        "orders_pkey",
                        RelationKind::Index,
                        LockMode::AccessExclusive,
                    ),
                ],
            ),
            statement(
                2,
                vec![
                    lock("customers", RelationKind::Table, LockMode::RowShare),
                    lock("orders", RelationKind::Table, LockMode::Share),
                ],
            ),
        ];
        let strongest: Vec<(u32, &str, LockMode)> = strongest_table_locks(&statements)
            .into_iter()
            .map(|(statement, lock)| (statement.statement, lock.relation.as_str(), lock.mode))
            .collect();
        assert_eq!(
            strongest,
            [
                (2, "orders", LockMode::Share),
                (2, "customers", LockMode::RowShare)
            ]
        );
    }
}
