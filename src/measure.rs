//! One strategy measured on a prepared target: the part `compare` and
//! `check` share (one engine, two front doors). Before the run, the lock
//! trace of the strategy's migration ([`trace_before_run`]); then the run on
//! one clock, what the server says after it, and the strategy's report
//! ([`measure_strategy`]).
//!
//! How the trace stays out of what is measured: it runs on the quiet server
//! before the run's sessions open, after the reset, and strategies with the
//! same steps and settings share one ([`trace_key`]).
//!
//! - One step that may run in a transaction block: traced in a transaction
//!   that is rolled back.
//! - Several steps (each commits before the next) with a reset SQL, or a step
//!   that must run outside a transaction (`CREATE INDEX CONCURRENTLY`): traced
//!   as it runs, then undone by dropping the indexes it built and by the
//!   reset. Several steps without a reset are traced in one transaction
//!   rolled back, where a later step's lock that an earlier one holds is not
//!   seen again.
//! - On your own objects (`--in-place`) the trace only ever runs rolled back.
//!
//! In stallbench's schema the tables are fingerprinted before and after, and
//! a trace that left anything behind stops the run (exit 2). What it cannot
//! undo is the cache it warmed, and its time: it runs the migration once
//! more, which for an index build on a large table is seconds.

use crate::config::Config;
use crate::engine::postgres::database::{self, Database};
use crate::engine::postgres::scenario::ddl::trace::{
    TraceEnd, TraceError, TraceStep, rolls_back, trace_steps,
};
use crate::engine::postgres::serverlog;
use crate::error::Error;
use crate::fingerprint::{self, Fingerprint};
use crate::metrics::interruption::{AppliedStep, PartialStrategy};
use crate::metrics::lock_trace::TracedStatement;
use crate::metrics::replica::{LoggedReplayWait, name_replay_blockers};
use crate::metrics::{self, StrategyReport};
use crate::role::Role;
use crate::scenario::{self, Interrupt};
use crate::stop;
use crate::strategy::NamedStrategy;

/// What a lock trace depends on: the steps `strategy` runs and its session
/// settings. Two strategies with the same key have the same trace.
pub type TraceKey = (Vec<String>, Vec<(String, String)>);

/// The [`TraceKey`] of `strategy` in `config`.
pub fn trace_key(config: &Config, strategy: &NamedStrategy) -> TraceKey {
    let steps = match (&strategy.ddl_steps, &config.ddl) {
        (Some(steps), _) => steps.clone(),
        (None, Some(ddl)) => ddl.steps.clone(),
        (None, None) => Vec::new(),
    };
    (steps, strategy.settings.clone())
}

/// The lock trace of `strategy`'s migration on `target`, taken before its run
/// (see the module comment); empty without a migration. The trace is also the
/// migration's dry run: a statement that fails in it for a reason that does
/// not depend on timing (see [`crate::engine::postgres::preflight::rejection::is_static_error`]) is exit 2
/// naming the statement and where it came from; any other failure is a
/// warning (the run meets it and reports it). The trace's session waits at
/// most [`crate::engine::postgres::preflight::rejection::LOCK_TIMEOUT`] for a lock, so it never queues
/// behind a user's traffic. `before` is the fingerprint of the tables the run must meet.
pub async fn trace_before_run(
    config: &Config,
    target: &Database,
    strategy: &NamedStrategy,
    workload_source: &str,
    before: &Fingerprint,
) -> Result<Vec<TracedStatement>, Error> {
    let Some(ddl) = &config.ddl else {
        return Ok(Vec::new());
    };
    let steps: Vec<TraceStep> = strategy
        .ddl_steps
        .as_ref()
        .unwrap_or(&ddl.steps)
        .iter()
        .map(|step| TraceStep::of_ddl_step(step))
        .collect();
    let version = target.server_version_num;
    let can_roll_back = rolls_back(&steps, version);
    // Only on stallbench's own objects does the trace run a migration for real.
    let own_schema = config.objects.owned();
    let can_undo = own_schema && !config.reset_sql.trim().is_empty();
    let end = match (can_roll_back, steps.len() > 1 && can_undo) {
        (true, false) => TraceEnd::RolledBack,
        (_, true) => TraceEnd::Committed,
        (false, false) if own_schema => TraceEnd::Committed,
        (false, false) => {
            if !config.quiet {
                stderrln!(
                    "note: {}: no lock trace: a step must run outside a transaction, and on \
                     your own objects the trace runs only in a transaction it rolls back",
                    strategy.name
                );
            }
            return Ok(Vec::new());
        }
    };
    let mut settings = strategy.settings.clone();
    settings.push((
        "lock_timeout".to_string(),
        crate::engine::postgres::preflight::rejection::LOCK_TIMEOUT.to_string(),
    ));
    let session = target.connect_with_settings(Role::Trace, &settings).await?;
    let watcher = target.connect(Role::TraceWatcher).await?;
    let started = std::time::Instant::now();
    let traced = trace_steps(&session, &watcher, &steps, version, end).await;
    if !config.quiet && traced.is_ok() {
        stderrln!(
            "{}: lock trace in {:.0} ms ({})",
            strategy.name,
            started.elapsed().as_secs_f64() * 1000.0,
            match end {
                TraceEnd::RolledBack => "rolled back",
                TraceEnd::Committed => "committed, then undone",
            }
        );
    }
    drop((session, watcher));
    let mut static_error = None;
    let (statements, created_indexes) = match traced {
        Ok(traced) => (traced.statements, traced.created_indexes),
        Err(TraceError::Session(error)) => return Err(error),
        Err(TraceError::Statement {
            step, sql, message, ..
        }) if crate::engine::postgres::preflight::rejection::is_static_error(&message) => {
            let source = match &strategy.ddl_steps {
                Some(_) => format!("{workload_source}: [[strategies]] {} ddl", strategy.name),
                None => ddl.source.clone(),
            };
            static_error = Some(
                crate::engine::postgres::preflight::rejection::statement_error(
                    target,
                    &source,
                    &format!("step {step}"),
                    &sql,
                    &message,
                ),
            );
            (Vec::new(), Vec::new())
        }
        Err(TraceError::Statement {
            statement,
            sql,
            message,
            ..
        }) => {
            stderrln!(
                "warning: {}: the lock trace stopped at statement {statement} \"{}\": {message}; \
                 ddl_locks.csv has no trace of this strategy",
                strategy.name,
                sql.trim()
            );
            (Vec::new(), Vec::new())
        }
    };
    if end == TraceEnd::Committed {
        undo_committed_trace(target, &created_indexes, workload_source, &config.reset_sql).await?;
    }
    if let Some(error) = static_error {
        return Err(error);
    }
    let after = target.fingerprint(database::SCHEMA, &[]).await?;
    let differences = fingerprint::diff(before, &after);
    if !differences.is_empty() {
        let described: Vec<String> = differences.iter().map(|d| d.describe()).collect();
        return Err(Error::bad_input(format!(
            "{workload_source}: the lock trace of {} ran its migration for real (a step must run \
             outside a transaction) and dropping what it built and the reset SQL did not undo it: \
             {}; add reset SQL that undoes the migration",
            strategy.name,
            described.join("; ")
        )));
    }
    Ok(statements)
}

/// Undoes a trace whose steps committed: drops the indexes it built, then runs the reset SQL.
async fn undo_committed_trace(
    target: &Database,
    created_indexes: &[String],
    workload_source: &str,
    reset_sql: &str,
) -> Result<(), Error> {
    if !created_indexes.is_empty() {
        let client = target.connect(Role::Reset).await?;
        for index in created_indexes {
            client
                .batch_execute(&format!("DROP INDEX IF EXISTS {index}"))
                .await
                .map_err(|err| {
                    Error::runtime(format!(
                        "dropping index {index}, which the lock trace built: {}",
                        database::error_text(&err)
                    ))
                })?;
        }
    }
    target.reset(workload_source, reset_sql).await
}

/// One strategy's measured run.
pub struct MeasuredStrategy {
    pub report: StrategyReport,
    /// Why the run was interrupted, if it was (the caller writes the files first, then stops).
    pub interrupted: Option<String>,
    /// Where the stop cut the run, and the DDL steps that committed before it.
    pub partial: Option<(PartialStrategy, Vec<AppliedStep>)>,
    /// The line naming a DDL try that failed with an error other than a lock
    /// timeout, for the caller to print (`compare` on stdout).
    pub ddl_error: Option<String>,
}

/// Runs `strategy` on `target` with the run's `(seed, repeat)` and builds
/// its report, with `lock_trace` taken before; says on stderr what the run noted.
pub async fn measure_strategy(
    config: &Config,
    target: &Database,
    strategy: &NamedStrategy,
    (seed, repeat): (u64, u32),
    interrupt: &Interrupt,
    lock_trace: Vec<TracedStatement>,
) -> Result<MeasuredStrategy, Error> {
    // The reset and the trace took their locks on the primary; the standby
    // replays them, and the clock starts once it has.
    target.replica_caught_up().await?;
    let log_start = server_log_len(target);
    let replica_log_start = log_len(target.replica_structured_log());
    let (mut measured, notes) =
        crate::engine::postgres::scenario::run_strategy(target, config, strategy, seed, interrupt)
            .await?;
    print_notes(
        config,
        &strategy.name,
        &notes,
        measured.interrupted.is_some(),
    );
    // An interrupted strategy's DDL error is the interrupt's doing: the stop line says what became of it.
    let ddl_error = match measured.interrupted {
        Some(_) => None,
        None => ddl_error_line(&strategy.name, &measured.attempts),
    };
    // A stopped run asks the server nothing more; a failure here interrupts it.
    let invalid_indexes = match measured.interrupted {
        Some(_) => Vec::new(),
        None => target.invalid_indexes().await.unwrap_or_else(|error| {
            measured.interrupted = Some(error.to_string());
            Vec::new()
        }),
    };
    if !invalid_indexes.is_empty() {
        stderrln!(
            "warning: {}: the run left INVALID indexes behind: {} (a failed CREATE INDEX \
             CONCURRENTLY); drop them before trying again",
            strategy.name,
            invalid_indexes.join(", ")
        );
    }
    let mut server_log = server_log_sentences(
        target,
        log_start,
        &notes.roles,
        measured.started_unix_s,
        !measured.lock_worst.is_empty(),
    );
    server_log.extend(replica_log_sentences(
        target,
        replica_log_start,
        &mut measured,
    ));
    let server_notes = scenario::ServerNotes {
        lock_trace,
        server_log,
        invalid_indexes,
    };
    let interrupted = measured.interrupted.clone();
    // A standby lost mid-run: the replica's figures after it are not the scenario's.
    let standby_gone = match measured.interrupted {
        Some(_) => None,
        None => target.standby_gone().await,
    };
    let invalid =
        standby_gone.or_else(|| scenario::validity::invalid_reason(config, strategy, &measured));
    if let Some(reason) = &invalid {
        stderrln!("{}: invalid: {reason}", strategy.name);
    }
    // Built before the report drops the tries of the second it was cut in: one may have committed.
    let partial = interrupted
        .as_ref()
        .map(|_| stop::partial(config, &strategy.name, &measured));
    let mut report = scenario::assemble_report(&strategy.name, repeat, measured, server_notes);
    report.summary.invalid = invalid.unwrap_or_default();
    Ok(MeasuredStrategy {
        report,
        interrupted,
        partial,
        ddl_error,
    })
}

/// The stdout line naming a DDL attempt that failed with an error other than
/// a lock timeout (its SQLSTATE and message), if the strategy had one.
fn ddl_error_line(strategy: &str, attempts: &[metrics::DdlAttempt]) -> Option<String> {
    let failed = attempts
        .iter()
        .find(|attempt| attempt.outcome == metrics::AttemptOutcome::Error)?;
    let sqlstate = match &failed.sqlstate {
        Some(kind) => kind.cell(),
        None => "no SQLSTATE",
    };
    Some(format!(
        "{strategy}: DDL try {} failed: {sqlstate} {}\n",
        failed.attempt, failed.message
    ))
}

/// Tells the user what the strategy's run noted: warnings (left out for an
/// interrupted run: lost connections and a cancelled DDL follow from the
/// interruption, which the error line names) and failures by SQLSTATE.
fn print_notes(config: &Config, strategy: &str, notes: &scenario::RunNotes, interrupted: bool) {
    if !interrupted {
        for warning in &notes.warnings {
            stderrln!("warning: {warning}");
        }
    }
    if !notes.failed_by_kind.is_empty() && !config.quiet {
        let counts: Vec<String> = notes
            .failed_by_kind
            .iter()
            .map(|(kind, count)| format!("{count} x {kind}"))
            .collect();
        stderrln!("{strategy}: failed transactions: {}", counts.join(", "));
    }
}

/// The current size of the throwaway server's structured log, where a strategy's part begins.
fn server_log_len(target: &Database) -> u64 {
    log_len(target.structured_log())
}

/// The current size of `log`, where a strategy's part begins; 0 without one.
fn log_len(log: Option<serverlog::StructuredLog>) -> u64 {
    log.and_then(|log| std::fs::metadata(log.path).ok())
        .map_or(0, |meta| meta.len())
}

/// What the throwaway standby's log says about the run since `from`: its
/// recovery-conflict waits, as sentences naming sessions by the roles the
/// replica observer saw (the startup process's pid included); and, where a
/// look of the observer saw replay wait blocked by no one it could name,
/// the log's conflicting session named as its blocker in `measured`. Empty
/// without a throwaway standby, and before PostgreSQL 14, whose standby
/// does not log these waits (no `log_recovery_conflict_waits`).
fn replica_log_sentences(
    target: &Database,
    from: u64,
    measured: &mut scenario::Measured,
) -> Vec<String> {
    let (Some(log), Some(looks)) = (
        target.replica_structured_log(),
        measured.replica_samples.as_mut(),
    ) else {
        return Vec::new();
    };
    if target.server_version_num < 140000 {
        return Vec::new();
    }
    let Ok(bytes) = std::fs::read(&log.path) else {
        return Vec::new();
    };
    let part = bytes.get(from as usize..).unwrap_or_default();
    let waits = serverlog::parse_recovery_waits(log.format, &String::from_utf8_lossy(part));
    let roles: std::collections::BTreeMap<u32, String> = (looks.iter())
        .flat_map(|look| &look.locks)
        .map(|sample| (sample.pid, sample.role.clone()))
        .collect();
    let role_of = |pid: u32| {
        roles
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| Role::External(pid).to_string())
    };
    let started_unix_s = measured.started_unix_s;
    let clock_s = |logged_at: &str| serverlog::run_clock_s(logged_at, started_unix_s);
    let logged: Vec<LoggedReplayWait> = (waits.iter())
        .filter_map(|wait| {
            let (from_s, to_s) = serverlog::recovery_wait_span(wait, &clock_s)?;
            let conflicting = (wait.conflicting.iter())
                .map(|&pid| (pid, role_of(pid)))
                .collect();
            Some(LoggedReplayWait {
                from_s,
                to_s,
                conflicting,
            })
        })
        .collect();
    name_replay_blockers(looks, &logged);
    let time_of = |logged_at: &str| serverlog::run_clock_time(logged_at, started_unix_s);
    serverlog::recovery_sentences(&waits, &role_of, &time_of)
}

/// What the server log says about lock waits since `from` (one strategy's part),
/// naming sessions by their roles and times on the run clock that started at
/// `started_unix_s`; empty on `--db-url`. Without the logged queue when the
/// lock observer saw one (`observed_queue`): the run names one worst queue,
/// the observer's, sampled through the whole wait rather than logged once
/// at deadlock_timeout.
fn server_log_sentences(
    target: &Database,
    from: u64,
    roles: &std::collections::BTreeMap<u32, Role>,
    started_unix_s: f64,
    observed_queue: bool,
) -> Vec<String> {
    let Some(log) = target.structured_log() else {
        return Vec::new();
    };
    let Ok(bytes) = std::fs::read(&log.path) else {
        return Vec::new();
    };
    let part = bytes.get(from as usize..).unwrap_or_default();
    let mut facts = serverlog::parse_server_log(log.format, &String::from_utf8_lossy(part));
    if observed_queue {
        facts.worst_queue = None;
    }
    let role_of = |pid: u32| {
        roles
            .get(&pid)
            .map_or(Role::External(pid), |role| *role)
            .to_string()
    };
    let time_of = |logged_at: &str| serverlog::run_clock_time(logged_at, started_unix_s);
    facts.sentences(&role_of, &time_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::failures::FailureKind;
    use crate::metrics::{AttemptOutcome, test_attempt};

    #[test]
    fn a_ddl_error_other_than_a_lock_timeout_is_named_once() {
        let mut attempts = vec![
            test_attempt(1, 1.0, 1.5, AttemptOutcome::LockTimeout),
            test_attempt(2, 2.5, 2.6, AttemptOutcome::Error),
        ];
        assert_eq!(ddl_error_line("retry", &attempts[..1]), None);
        attempts[1].sqlstate = Some(FailureKind::from_cell("42701"));
        attempts[1].message = "column \"note\" of relation \"orders\" already exists".to_string();
        assert_eq!(
            ddl_error_line("retry", &attempts).as_deref(),
            Some(
                "retry: DDL try 2 failed: 42701 column \"note\" of relation \"orders\" already exists\n"
            )
        );
    }
}
