//! Where a check's time went: the server's start, the earlier migrations,
//! the rows, and for each new migration its trace, each measured run and its
//! application; then the report. Written to check.json (`phases`) and as the
//! console's last lines, so a slow gate says which phase to look at.

use serde::Serialize;

/// A whole check's phases, in seconds of wall time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CheckPhases {
    /// Starting the throwaway server (or connecting).
    pub server_start_s: f64,
    /// Applying the migrations before the new ones.
    pub earlier_migrations_s: f64,
    /// Filling the tables (`--rows`) or running `--seed`, and the VACUUM ANALYZE after.
    pub fill_s: f64,
    /// The rows the generator wrote (0 with `--seed`).
    pub fill_rows: u64,
    /// `fill_rows / fill_s`; `null` when no row was generated.
    pub fill_rows_per_s: Option<f64>,
    /// The tables the fill filled (`--fill`), those it left empty outside
    /// its scope (0 with `--fill all` or `--seed`).
    pub fill_tables: usize,
    pub tables_left_empty: usize,
    /// Of `fill_tables`, those filled only for their children's foreign
    /// keys, with fewer rows than asked.
    pub fill_key_tables: usize,
    /// Each new migration's phases, in order.
    pub migrations: Vec<MigrationPhases>,
    /// Judging and rendering the report's files.
    pub report_s: f64,
    /// From reading the folder to the report's files.
    pub total_s: f64,
}

/// One new migration's phases.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MigrationPhases {
    pub name: String,
    pub trace_s: f64,
    /// Each measured run, in the order run.
    pub runs: Vec<RunPhase>,
    /// Applying it for real, for the next migrations.
    pub apply_s: f64,
}

/// One measured run: a strategy on its own copy of the database.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunPhase {
    pub strategy: String,
    /// The run with the report on the hot standby (`--replica`).
    pub replica: bool,
    /// Making the run's copy of the database (`CREATE DATABASE ... TEMPLATE`).
    pub copy_s: f64,
    /// The whole run: the copy, the load, the files written after it.
    pub run_s: f64,
}

/// Rounds a duration to milliseconds, as check.json gives seconds.
pub fn seconds(duration: std::time::Duration) -> f64 {
    (duration.as_secs_f64() * 1000.0).round() / 1000.0
}
