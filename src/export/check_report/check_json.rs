//! `check.json`: the check's verdict and settings, and each migration with
//! its judgement, its trace nested by statement (what `ddl_locks.csv`
//! holds) and its measured rows (those of `check.csv`).

use serde::Serialize;

use super::CheckRecord;
use crate::engine::postgres::check_verdict::checked::{CheckedMigration, Outcome, Unordered};
use crate::engine::postgres::check_verdict::holds::{TransactionHold, transaction_holds};
use crate::engine::postgres::check_verdict::phases::CheckPhases;
use crate::engine::postgres::check_verdict::sizes::SizeEstimate;
use crate::engine::postgres::check_verdict::verdict::{Judged, MigrationVerdict};
use crate::metrics::lock_trace::{Blocks, LockMode, RelationKind, TracedStatement};

/// `check.json`.
#[derive(Serialize)]
pub(super) struct CheckJson<'a> {
    /// `pass`, `flagged` (exit 0: a migration judged from its trace alone
    /// needs a measured run), `fail` (exit 3) or `invalid` (exit 4).
    pub(super) verdict: &'a str,
    pub(super) deploy: &'a str,
    pub(super) recommend: &'a str,
    pub(super) max_stall_s: u32,
    pub(super) max_p99_ms: Option<f64>,
    pub(super) max_failed: Option<u64>,
    /// New migrations the tool would not apply after the others (verdict
    /// `fail`, nothing run); absent when every one could be ordered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) unordered: Option<&'a Unordered>,
    /// What the reader should know about the folder: files no rule read,
    /// earlier migrations changed since `--git-base`.
    pub(super) notes: &'a [String],
    /// How many migrations ran under traffic; the others were only traced,
    /// and no stall of theirs was measured (0 with `--trace-only`).
    pub(super) measured: usize,
    pub(super) migrations: Vec<MigrationJson>,
    /// Where the check's time went, phase by phase.
    pub(super) phases: &'a CheckPhases,
}

/// One migration in `check.json`: its judgement, its trace (what
/// `ddl_locks.csv` holds, nested by statement) and its measured rows (those of `check.csv`).
#[derive(Serialize)]
pub(super) struct MigrationJson {
    name: String,
    path: String,
    verdict: MigrationVerdict,
    broken: Vec<String>,
    fixes: Vec<String>,
    recommended: Option<String>,
    fixed_by_recommended: Option<bool>,
    not_measured: Option<String>,
    /// What its trace flags for a measured run (verdict `flagged`).
    flags: Vec<String>,
    /// Why the deployed run is no result (verdict `invalid`).
    invalid: Option<String>,
    load: Option<String>,
    blocker: Option<String>,
    results: Option<String>,
    /// `--replica`: the blocker of the runs with the report on the standby.
    #[serde(skip_serializing_if = "Option::is_none")]
    replica_blocker: Option<String>,
    /// `--replica`: their results folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    replica_results: Option<String>,
    trace_ms: f64,
    statements: Vec<StatementJson>,
    /// The statements that read or rewrite a whole table under a lock that
    /// blocks traffic, with their holds at the production sizes given.
    estimates: Vec<SizeEstimate>,
    /// A transaction's hold of its strongest lock at the production size,
    /// where more than one statement's estimate makes it up.
    transaction_holds: Vec<TransactionHold>,
    strategies: Vec<CheckRecord>,
}

/// One traced statement in `check.json` (the facts of `ddl_locks.csv`, nested).
#[derive(Serialize)]
struct StatementJson {
    step: u32,
    statement: u32,
    sql: String,
    duration_ms: f64,
    held_ms: f64,
    /// The WAL the server wrote while the statement ran; `null` when unknown.
    wal_bytes: Option<u64>,
    locks: Vec<LockJson>,
}

/// One lock of a traced statement in `check.json`.
#[derive(Serialize)]
struct LockJson {
    relation: String,
    kind: RelationKind,
    mode: LockMode,
    blocks: Blocks,
    taken: bool,
    rewritten: bool,
    /// `null` where the trace cannot tell.
    scanned: Option<bool>,
}

impl StatementJson {
    fn new(statement: &TracedStatement) -> StatementJson {
        let round = crate::export::format::round3;
        StatementJson {
            step: statement.step,
            statement: statement.statement,
            sql: statement.sql.clone(),
            duration_ms: round(statement.duration_ms),
            held_ms: round(statement.held_ms),
            wal_bytes: statement.wal_bytes,
            locks: statement
                .locks
                .iter()
                .map(|lock| LockJson {
                    relation: lock.relation.clone(),
                    kind: lock.kind,
                    mode: lock.mode,
                    blocks: lock.blocks(),
                    taken: lock.taken,
                    rewritten: lock.rewritten,
                    scanned: lock.scanned,
                })
                .collect(),
        }
    }
}

impl MigrationJson {
    pub(super) fn new(
        checked: &CheckedMigration,
        judged: &Judged,
        records: &[CheckRecord],
    ) -> MigrationJson {
        let name = &checked.migration.name;
        let run = match &checked.outcome {
            Outcome::Measured(run) => Some(run),
            Outcome::NotMeasured | Outcome::NoResult(_) | Outcome::Traced(_) => None,
        };
        let replica = run.and_then(|run| run.replica.as_ref());
        MigrationJson {
            name: name.clone(),
            path: checked.migration.path.display().to_string(),
            verdict: judged.verdict,
            broken: judged.broken.clone(),
            fixes: judged.fixes.clone(),
            recommended: judged.recommended.clone(),
            fixed_by_recommended: judged.fixed_by_recommended,
            not_measured: judged.not_measured.clone(),
            flags: judged.flags.clone(),
            invalid: judged.invalid.clone(),
            load: run.map(|run| run.load.clone()),
            blocker: run.map(|run| run.blocker.clone()),
            results: run.map(|run| run.folder.display().to_string()),
            replica_blocker: replica.map(|replica| replica.blocker.clone()),
            replica_results: replica.map(|replica| replica.folder.display().to_string()),
            trace_ms: crate::export::format::round3(checked.trace_ms),
            statements: checked.statements.iter().map(StatementJson::new).collect(),
            estimates: checked.estimates.clone(),
            transaction_holds: transaction_holds(&checked.statements, &checked.estimates),
            strategies: records
                .iter()
                .filter(|record| record.migration == *name && !record.strategy.is_empty())
                .cloned()
                .collect(),
        }
    }
}
