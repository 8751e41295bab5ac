//! stallbench: a load-and-stall benchmark harness for PostgreSQL.
//!
//! The pipeline (see docs/architecture.md): workload + flags -> [`config::Config`]
//! -> [`plan::Plan`] -> [`engine::postgres::database::Database`] (throwaway server or `--db-url`)
//! -> setup SQL -> for each run: reset -> [`scenario::run_strategy`] ->
//! [`scenario::assemble_report`] -> [`metrics::RunReport`] -> [`export`] and
//! [`plot`] (the results folder, written again after each run) -> [`export::console`]
//! (the tables on stdout) -> [`expect`] (the verdicts, their files, exit code 3).
//!
//! Five front doors call those stages: [`compare`] (`compare` and `run`),
//! [`engine::postgres::check`] (the migration gate),
//! [`engine::postgres::capture`] (`capture`), [`plot::folder`] (`plot DIR`)
//! and [`workload::listing`] (`workloads`). Everything that speaks to a
//! server lives under [`engine`]: PostgreSQL's in `engine/postgres/`,
//! MariaDB's in `engine/mariadb/`. A stopped run (Ctrl-C, SIGTERM, the
//! throwaway server's death) is wound down and written as far as it got,
//! the same way for `compare` and `check` ([`stop`]).
//!
//! [`run`] is the whole program, callable in-process from tests.

// stdout and stderr, first: its macros serve every module below.
#[macro_use]
pub mod output;

// Front doors: one module per command (check and capture are PostgreSQL's,
// under engine/postgres/).
pub mod compare;

// The command line and the settings it becomes.
pub mod choices;
pub mod cli;
pub mod config;
pub mod duration;
pub mod plan;
pub mod workload;

// The engines (a server, its sessions, its SQL) and one run on one.
pub mod engine;
pub mod fingerprint;
mod measure;
pub mod role;
pub mod scenario;
pub mod script;
pub mod sql_split;
pub mod stop;
pub mod strategy;

// What was measured, and what is made of it (export also holds the console tables).
pub mod expect;
pub mod export;
pub mod metrics;
pub mod plot;
pub mod results;

// The program's edges: errors and exit codes, the page's name and its opener.
pub mod error;
pub mod opener;

#[cfg(test)]
pub(crate) mod testing;

use crate::cli::{Cli, Command};
pub use crate::compare::{execute, execute_plan};
use crate::config::Mode;
pub use crate::error::Error;

/// Runs one command line; returns the process exit code for a finished run
/// (0, or 3 when an expectation failed) and an `Error` (exit 1, 2 or 141) otherwise.
pub fn run(cli: Cli) -> Result<i32, Error> {
    match cli.command {
        Command::Workloads => {
            output::write_stdout(&workload::listing()?)?;
            Ok(error::exit_code::SUCCESS)
        }
        Command::Plot { dir } => {
            plot::folder::redraw_charts(&dir)?;
            Ok(error::exit_code::SUCCESS)
        }
        Command::Capture { args } => engine::postgres::capture::capture(&args),
        Command::Check { dir, args } => {
            engine::postgres::check::check(&config::CheckConfig::new(&dir, &args)?, args.open)
        }
        Command::Compare {
            workload,
            strategies,
            common,
        } => match engine::mariadb::compare::workload_for(workload.as_deref(), &common)? {
            Some(mariadb) => engine::mariadb::compare::compare(mariadb, &strategies, &common),
            None => compare::compare(workload.as_deref(), Mode::Compare { strategies }, &common),
        },
        Command::Run {
            workload,
            strategy,
            load_only,
            common,
        } => match engine::mariadb::compare::workload_for(workload.as_deref(), &common)? {
            Some(mariadb) => {
                engine::mariadb::compare::run(mariadb, strategy.as_deref(), load_only, &common)
            }
            None => compare::compare(
                workload.as_deref(),
                Mode::of_run(load_only, strategy)?,
                &common,
            ),
        },
    }
}
