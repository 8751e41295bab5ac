//! One run of one strategy on PostgreSQL, on one clock: load workers
//! ([`load`]) or the application pool ([`pool`]), blocker ([`blocker`]), DDL
//! injector ([`ddl`]) and lock observers ([`observer`], [`replica_observer`]),
//! started together.
//!
//! A run goes through named phases so each can be read on its own: connecting
//! every session before the clock starts (`connect`), running the tasks on one
//! clock and winding them down (`tasks`, each task's end in `finish`); what
//! they return is assembled into the report by the engine-neutral
//! `crate::scenario::assemble_report`.
//! Sessions the server ends during a run are opened again ([`reopen`]).

mod connect;
mod finish;
mod tasks;

pub mod blocker;
pub mod ddl;
pub mod load;
pub mod observer;
pub mod pool;
pub mod reopen;
pub mod replica_observer;

use crate::config::Config;
use crate::engine::postgres::database::Database;
use crate::error::Error;
use crate::metrics::writes::rows_written;
use crate::scenario::runtime::LoadRuntime;
use crate::scenario::{Interrupt, Measured, RunNotes};
use crate::strategy::NamedStrategy;

/// Runs one strategy: connects every session, starts the clock, runs the load
/// for its duration with the blocker and the DDL on the same clock, and winds
/// everything down. When `interrupt` fires the load ends early and the
/// measurements stop at the last whole second (`Measured::interrupted` says why).
/// What it returns becomes a report with `crate::scenario::assemble_report`.
pub async fn run_strategy(
    target: &Database,
    config: &Config,
    strategy: &NamedStrategy,
    seed: u64,
    interrupt: &Interrupt,
) -> Result<(Measured, RunNotes), Error> {
    let counters_before = match config.objects.counts_writes() {
        true => Some(target.row_counters().await?),
        false => None,
    };
    // The load workers run on a thread of their own until this is dropped, below.
    let load_runtime = LoadRuntime::start()?;
    let sessions = connect::connect_sessions(target, config, strategy, seed, &load_runtime).await?;
    let running = tasks::start(
        sessions,
        target,
        config,
        strategy,
        seed,
        &load_runtime,
        interrupt,
    );
    let (mut measured, notes) = tasks::wind_down(running, &strategy.name, interrupt).await?;
    drop(load_runtime);
    // Counted once every session of the run is gone (a stopped run does not wait for it).
    if let Some(before) = counters_before
        && interrupt.reason().is_none()
    {
        target.clear_sessions().await?;
        let after = target.row_counters().await?;
        measured.rows_written = Some(rows_written(&before, &after));
    }
    Ok((measured, notes))
}
