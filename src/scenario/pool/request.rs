//! One request of the application model: check a connection out of the pool,
//! run one transaction of a script on it with tokio-postgres, hand it back.
//! Parameters go as text, with types the server infers, as the lean
//! connections send them; statements are prepared once per connection
//! (deadpool-postgres' statement cache).

use std::time::Instant;

use bytes::BytesMut;
use deadpool_postgres::{Object, PoolError};
use tokio_postgres::types::{Format, IsNull, ToSql, Type, to_sql_checked};

use super::super::load::{ends_session, statements_are_stale};
use crate::metrics::recorder::CONNECTION_LOST_SQLSTATE;
use crate::script::{self, Command, Script};
use crate::target::error_text;

/// How one request ended.
#[derive(Debug)]
pub(super) enum Outcome {
    /// The transaction completed.
    Done,
    /// No connection came within `--pool-timeout`.
    PoolTimeout,
    /// Rejected at once: `--max-in-flight` requests were waiting or running.
    Rejected,
    /// `--client-timeout` passed: given up (and cancelled on the server if sent).
    TimedOut,
    /// Checked out too late for `--latency-limit`: never sent.
    Skipped,
    /// The server answered with an error, or the script failed (`script`).
    Failed { sqlstate: String, message: String },
    /// The connection broke during the request (or the pool could not open
    /// one); a broken connection leaves the pool.
    Lost { sqlstate: String, message: String },
    /// Still waiting or running at the end of the load: cancelled.
    Unfinished,
}

/// What one request measured.
#[derive(Debug)]
pub(super) struct Finished {
    pub scheduled: Instant,
    /// When it asked the pool for a connection.
    pub asked: Instant,
    /// When it got one (`None`: it never did).
    pub checked_out: Option<Instant>,
    pub ended: Instant,
    pub outcome: Outcome,
}

/// A script parameter sent as text: the server parses it as whatever type
/// it inferred for the placeholder, as for the lean connections.
#[derive(Debug)]
struct TextParam<'a>(&'a str);

impl ToSql for TextParam<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        Format::Text
    }

    to_sql_checked!();
}

/// The outcome of a checkout that failed.
pub(super) fn checkout_failed(err: PoolError) -> Outcome {
    match err {
        PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => Outcome::PoolTimeout,
        PoolError::Backend(err) => classify(&err),
        other => Outcome::Lost {
            sqlstate: CONNECTION_LOST_SQLSTATE.to_string(),
            message: format!("the pool could not open a connection: {other}"),
        },
    }
}

/// One execution of `script` on `client`: one transaction in pgbench's sense.
pub(super) async fn run_script(
    client: &Object,
    script: &Script,
    vars: &mut script::Vars,
    rng: &mut rand::rngs::SmallRng,
) -> Result<(), Outcome> {
    let mut params: Vec<String> = Vec::new();
    for command in &script.commands {
        match command {
            Command::Set { slot, expr, .. } => {
                let value = script::eval(expr, vars, rng).map_err(script_failed)?;
                vars.set(*slot, value);
            }
            Command::Sleep { .. } => {
                let sleep_us = script.sleep_us(command, vars).map_err(script_failed)?;
                tokio::time::sleep(std::time::Duration::from_micros(sleep_us)).await;
            }
            Command::Sql {
                sql, params: slots, ..
            } => {
                params.resize_with(slots.len(), String::new);
                for (param, slot) in params.iter_mut().zip(slots) {
                    param.clear();
                    vars.get(*slot).write_param(param);
                }
                let statement = client
                    .prepare_cached(sql)
                    .await
                    .map_err(|err| classify(&err))?;
                let text: Vec<TextParam<'_>> = params.iter().map(|p| TextParam(p)).collect();
                let values = text.iter().map(|param| param as &dyn ToSql);
                client
                    .execute_raw(&statement, values)
                    .await
                    .map_err(|err| classify(&err))?;
            }
        }
    }
    Ok(())
}

/// After a failed transaction: rolls back what the script left open, and
/// forgets prepared statements the server no longer accepts. False if the
/// connection cannot be used again (the caller takes it out of the pool).
pub(super) async fn clean_up(client: &Object, sqlstate: &str, opens_transaction: bool) -> bool {
    if statements_are_stale(sqlstate) {
        client.statement_cache.clear();
    }
    !opens_transaction || client.batch_execute("ROLLBACK").await.is_ok()
}

/// Whether the script opens its own transaction (BEGIN or START), so a failure leaves one to roll back.
pub(super) fn opens_transaction(script: &Script) -> bool {
    script.commands.iter().any(|command| match command {
        Command::Sql { sql, .. } => {
            let first_word = sql.split_whitespace().next().unwrap_or("");
            first_word.eq_ignore_ascii_case("BEGIN") || first_word.eq_ignore_ascii_case("START")
        }
        _ => false,
    })
}

fn script_failed(err: script::EvalError) -> Outcome {
    Outcome::Failed {
        sqlstate: "script".to_string(),
        message: err.to_string(),
    }
}

/// A tokio-postgres error as a request outcome: the server's error (one that
/// ends the session counts as lost), or a connection that broke.
fn classify(err: &tokio_postgres::Error) -> Outcome {
    let message = error_text(err);
    match err.as_db_error() {
        Some(db) if !ends_session(db.code().code()) => Outcome::Failed {
            sqlstate: db.code().code().to_string(),
            message: db.message().to_string(),
        },
        Some(db) => Outcome::Lost {
            sqlstate: db.code().code().to_string(),
            message,
        },
        None => Outcome::Lost {
            sqlstate: CONNECTION_LOST_SQLSTATE.to_string(),
            message,
        },
    }
}
