//! The gate's plain data: the migrations a check reads (files, steps,
//! statements) and what it found for each (its trace, its size estimates,
//! its measured runs or why there are none), read by the judging in
//! [`super::verdict`] and by the renderers in `export::check_report`.

use std::path::PathBuf;

use serde::Serialize;

use super::sizes::SizeEstimate;
use crate::choices::Layout;
use crate::expect::ExpectationResult;
use crate::metrics::RunReport;
use crate::metrics::lock_trace::{Blocks, TracedStatement};

/// One migration: a file (for Prisma, a folder's `migration.sql`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Migration {
    /// The file's name (`0002_add_index.sql`), or the Prisma folder's.
    pub name: String,
    /// The SQL file, under the folder as given.
    pub path: PathBuf,
    /// Its version as its name writes it (`0002`, `1.2`; `R` for Flyway's
    /// repeatable migrations; the name without `.sql` for plain SQL).
    pub version: String,
    /// The transactions (and statements outside any) in the order they run.
    pub steps: Vec<MigrationStep>,
}

/// Statements run together: in one transaction, or, outside any, one
/// statement that commits on its own (such a step holds exactly one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MigrationStep {
    pub statements: Vec<MigrationStatement>,
    pub in_transaction: bool,
}

/// One SQL statement of a migration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MigrationStatement {
    /// From its first token (comments before it left out), without its `;`.
    pub sql: String,
    /// The file's line (from 1) its first token is on.
    pub line: usize,
}

/// One new migration as the check found it.
#[derive(Debug, Clone)]
pub struct CheckedMigration {
    pub migration: Migration,
    /// Its lock trace, statement by statement.
    pub statements: Vec<TracedStatement>,
    /// How long the trace took, in ms (the statements and the trace's own queries).
    pub trace_ms: f64,
    /// The tables it locked that existed before it, as the trace names them
    /// (a table it creates blocks no one).
    pub existing_tables: Vec<String>,
    /// Its statements that rewrite or scan one of those tables under a lock
    /// that blocks traffic, with their holds at the production sizes given.
    pub estimates: Vec<SizeEstimate>,
    pub outcome: Outcome,
}

/// Whether a migration was measured under traffic.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// It locks no table that existed before it: nothing for traffic to wait on.
    NotMeasured,
    /// Boxed: a run report is large beside the empty variant.
    Measured(Box<MeasuredRun>),
    /// Judged from its trace alone (`--measure flagged` or `none`): what the
    /// trace flags for a measured run, one line per statement (none: nothing
    /// in it blocks traffic).
    Traced(Vec<String>),
    /// No result, and why: it could not run (a statement the server
    /// refused on the schema and rows the earlier migrations leave: the
    /// error, with its file, line and fix; then `statements` is empty and
    /// it is not applied), it could not be measured (no run fits its
    /// tables), or a table it locks holds no rows, so its stall would be
    /// measured on nothing. The other migrations are checked all the same.
    NoResult(String),
}

/// A migration's measured runs: one per strategy, deploy first.
#[derive(Debug, Clone)]
pub struct MeasuredRun {
    /// The load in words.
    pub load: String,
    /// The blocker in words.
    pub blocker: String,
    /// What the strongest lock on a table the load touches blocks.
    pub blocks: Blocks,
    pub report: RunReport,
    /// Every budget checked on every strategy.
    pub results: Vec<ExpectationResult>,
    /// The migration's results folder.
    pub folder: std::path::PathBuf,
    /// `--replica`: the same strategies run again with the report on the
    /// hot standby and readers on both servers; `None` without `--replica`.
    pub replica: Option<ReplicaRuns>,
    /// The strategies whose run was made longer than `--duration` so that
    /// the load ran long enough after their migration committed.
    pub extended: Vec<ExtendedRun>,
    /// The statement (its number in the trace) after which the
    /// application's failing statement first failed when the check replayed
    /// it after each prefix of the migration on the quiet server: found only
    /// when the failure's message names nothing a statement made.
    pub blamed_by_replay: Option<u32>,
}

/// A strategy's run made longer than `--duration`: its migration committed
/// too close to the end to show what it does to the traffic after it, so
/// the strategy ran again for longer (within a bound).
#[derive(Debug, Clone, PartialEq)]
pub struct ExtendedRun {
    pub strategy: String,
    /// The run's planned length (`--duration`), in seconds.
    pub planned_s: f64,
    /// The length it ran again with, in seconds.
    pub run_s: f64,
}

/// A migration's runs with the report on the hot standby (`check --replica`):
/// one per strategy, deploy first, the load on both servers
/// (`Summary::replica_*` are the standby's clients and replay).
#[derive(Debug, Clone)]
pub struct ReplicaRuns {
    /// The blocker in words: `a report holding ACCESS SHARE on orders for 10 s on the hot standby`.
    pub blocker: String,
    pub report: RunReport,
    /// Their results folder (`replica` in the migration's).
    pub folder: PathBuf,
}

/// What a whole check found, migration by migration, with its timings.
#[derive(Debug, Clone)]
pub struct CheckRun {
    /// The folder's layout, detected or given.
    pub layout: Layout,
    pub migrations: Vec<CheckedMigration>,
    /// How many migrations came before the new ones.
    pub earlier: usize,
    /// The throwaway server's start, in seconds.
    pub server_start_s: Option<f64>,
    pub server_version: String,
    /// Tables the generator could not fill, with the reason.
    pub unfilled: Vec<String>,
    /// Tables the fill's scope left empty (`--fill locked`), by name.
    pub left_empty: Vec<String>,
    /// Tables filled only for their children's foreign keys, with fewer
    /// rows than asked: `customers (1,000 rows)`.
    pub key_tables: Vec<String>,
    /// Tables that got fewer rows than asked, each with its count and why:
    /// `statuses: 2 rows, those the earlier migrations inserted (kept as they are)`.
    pub fewer_rows: Vec<String>,
    /// What the reader should know about the folder and the rows, one
    /// sentence each: files no rule read, an earlier migration changed since
    /// `--git-base`.
    pub notes: Vec<String>,
    /// New migrations the migration tool would not apply after the others
    /// (or a folder it cannot order): the check's failure, with nothing run.
    pub unordered: Option<Unordered>,
    /// Where the check's time went.
    pub phases: super::phases::CheckPhases,
}

/// Migrations the tool would refuse to order, or skip: a new one whose
/// version sorts before a migration already applied where the tool does not
/// apply such a one (golang-migrate, goose, Flyway without `outOfOrder`), or
/// two with one version. The check writes its files with this as the failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unordered {
    /// The migrations it concerns, by name.
    pub migrations: Vec<String>,
    /// Why, and the fix.
    pub reason: String,
}
