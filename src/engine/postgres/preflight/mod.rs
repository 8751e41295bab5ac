//! The check before the load: a scenario whose statements cannot run on this
//! schema is found before anything is measured, not after a run decided on
//! noise. After the schema is prepared and before the first strategy's run:
//!
//! - each SQL statement of the blocker, and of the load scripts under
//!   `--protocol simple`, is described (prepared on a session, never run):
//!   the server parses and analyses it, so an undefined table or column, a
//!   syntax error, a type mismatch or a missing permission comes back as its
//!   error. (Under the other protocols the load's workers prepare every
//!   script statement as they connect, before the load starts, and refuse
//!   the same way: `scenario::load::prepare`.) pgbench variables are the `$n`
//!   parameters of the parsed script. A script or the blocker is described up
//!   to its first statement that is not a query (`CREATE TEMP TABLE`, `SET
//!   search_path`, ...): what follows may name what that statement makes.
//! - each migration is dry-run by its lock trace ([`measure::trace_before_run`],
//!   for every strategy of the plan, before the first run): in a transaction
//!   rolled back where its statements allow it, else in stallbench's own
//!   schema as deployed and undone; on your own objects (`--in-place`) only
//!   rolled back, so the check commits nothing to your tables. A step that
//!   must run outside a transaction (`CREATE INDEX CONCURRENTLY`) on your
//!   own objects is not dry-run.
//!
//! Every session of the check waits at most [`LOCK_TIMEOUT`] for a lock, so
//! it never queues behind a user's traffic. An error that does not depend on
//! timing ([`is_static_error`]) is exit 2 naming the statement, where it came
//! from and the server's message; a lock timeout or any other error is left
//! to the run, which reports it.

use tokio_postgres::Client;

use crate::config::{Config, Protocol};
use crate::engine::postgres::database::{self, Database, error_text};
use crate::error::Error;
use crate::measure::{self, TraceKey};
use crate::metrics::lock_trace::TracedStatement;
use crate::plan::Plan;
use crate::role::Role;
use crate::scenario::validity::sqlstate_of;
use crate::script::ScriptCommand;
use crate::sql_split::split_statements;

pub mod rejection;

use rejection::{LOCK_TIMEOUT, is_static_error, statement_error};

/// The lock traces the check took, by what they depend on: the run reuses them.
pub type Traces = Vec<(TraceKey, Vec<TracedStatement>)>;

/// Describes the load scripts and the blocker of every point of `plan`, then
/// resets the tables and dry-runs every strategy's migration (its lock
/// trace); the traces, for the runs. Exit 2 at the first statement that
/// cannot run on this schema.
pub async fn check_before_load(
    plan: &Plan,
    target: &Database,
    workload_source: &str,
) -> Result<Traces, Error> {
    let session = target
        .connect_with_settings(
            Role::Check,
            &[("lock_timeout".to_string(), LOCK_TIMEOUT.to_string())],
        )
        .await?;
    for point in &plan.points {
        describe_scripts(&session, target, &point.config).await?;
        describe_blocker(&session, target, &point.config).await?;
    }
    drop(session);
    let mut traces: Traces = Vec::new();
    if plan.base.ddl.is_none() {
        return Ok(traces);
    }
    target.clear_sessions().await?;
    target.reset(workload_source, &plan.base.reset_sql).await?;
    let before = target.fingerprint(database::SCHEMA, &[]).await?;
    for planned in &plan.runs {
        let config = plan.config_of(planned);
        let strategy = plan.strategy_of(planned);
        let key = measure::trace_key(config, strategy);
        if traces.iter().any(|(traced, _)| *traced == key) {
            continue;
        }
        let trace =
            measure::trace_before_run(config, target, strategy, workload_source, &before).await?;
        traces.push((key, trace));
    }
    Ok(traces)
}

/// Describes each query of each load script (see the module comment).
async fn describe_scripts(
    session: &Client,
    target: &Database,
    config: &Config,
) -> Result<(), Error> {
    // The workers prepare every statement of the other protocols themselves.
    if config.load.protocol != Protocol::Simple {
        return Ok(());
    }
    for weighted in &config.load.scripts {
        for command in &weighted.script.commands {
            let ScriptCommand::Sql(sql) = command else {
                continue;
            };
            if sql.compound || is_transaction_control(&sql.sql) {
                continue;
            }
            if !is_query(&sql.sql) {
                break;
            }
            let Err(err) = session.prepare(&sql.sql).await else {
                continue;
            };
            let message = error_text(&err);
            // Under the simple protocol a variable is text put into the
            // statement, where a parameter's type is not known: only an
            // undefined table or column is sure.
            let sure =
                sql.params.is_empty() || matches!(sqlstate_of(&message), Some("42P01" | "42703"));
            if is_static_error(&message) && sure {
                // The statement as written (its first line), with its `:variables`.
                return Err(statement_error(
                    target,
                    &weighted.source,
                    &format!("line {}", sql.line),
                    weighted.script.line_text(sql.line),
                    &message,
                ));
            }
        }
    }
    Ok(())
}

/// Describes each query of the blocker's SQL (see the module comment).
async fn describe_blocker(
    session: &Client,
    target: &Database,
    config: &Config,
) -> Result<(), Error> {
    let Some(blocker) = &config.blocker else {
        return Ok(());
    };
    for (index, statement) in split_statements(&blocker.sql).iter().enumerate() {
        if is_transaction_control(statement) {
            continue;
        }
        if !is_query(statement) {
            break;
        }
        if let Err(err) = session.prepare(statement).await {
            let message = error_text(&err);
            if is_static_error(&message) {
                return Err(statement_error(
                    target,
                    &blocker.source,
                    &format!("statement {}", index + 1),
                    statement,
                    &message,
                ));
            }
        }
    }
    Ok(())
}

/// The statement's first word, upper case.
fn first_word(sql: &str) -> String {
    sql.trim_start_matches(|c: char| c.is_whitespace() || c == '(')
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase()
}

/// A statement the server analyses when it is prepared (and that names no new object).
fn is_query(sql: &str) -> bool {
    matches!(
        first_word(sql).as_str(),
        "SELECT" | "INSERT" | "UPDATE" | "DELETE" | "WITH" | "VALUES" | "TABLE" | "MERGE"
    )
}

/// `BEGIN`, `COMMIT` and their kin: nothing to describe, nothing that changes names.
fn is_transaction_control(sql: &str) -> bool {
    matches!(
        first_word(sql).as_str(),
        "BEGIN" | "START" | "COMMIT" | "END" | "ROLLBACK" | "ABORT" | "SAVEPOINT" | "RELEASE"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_described_and_other_statements_end_the_script() {
        assert!(is_query("  select 1"));
        assert!(is_query("WITH x AS (SELECT 1) SELECT * FROM x"));
        assert!(is_query("(SELECT 1)"));
        assert!(!is_query("CREATE TEMP TABLE t (a int)"));
        assert!(!is_query("SET search_path = x"));
        assert!(is_transaction_control("begin"));
        assert!(is_transaction_control("END"));
        assert!(!is_transaction_control("SELECT 1"));
    }
}
