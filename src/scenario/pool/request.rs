//! One request of the application model: check a connection out of the pool,
//! run one transaction of a script on it with tokio-postgres, hand it back.
//! Parameters go as text, with types the server infers, as the lean
//! connections send them; statements are prepared once per connection
//! (deadpool-postgres' statement cache).

use std::time::Instant;

use bytes::BytesMut;
use deadpool_postgres::{Object, PoolError};
use tokio_postgres::types::{Format, IsNull, ToSql, Type, to_sql_checked};

use crate::metrics::failures::{Failure, FailureKind};
use crate::scenario::commands::{run_on_client, write_params};
use crate::scenario::txn::{TxnOutcome, ends_session, statements_are_stale};
use crate::script::{self, Command, Script};
use crate::target::error_text;

/// What one request measured.
#[derive(Debug)]
pub(super) struct Finished {
    pub scheduled: Instant,
    /// When it asked the pool for a connection.
    pub asked: Instant,
    /// When it got one (`None`: it never did).
    pub checked_out: Option<Instant>,
    pub ended: Instant,
    /// How it ended: no connection within `--pool-timeout` and a rejection for
    /// `--max-in-flight` are failures of their own kinds; a connection that
    /// broke (or that the pool could not open) is lost and leaves the pool.
    pub outcome: TxnOutcome,
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
pub(super) fn checkout_failed(err: PoolError) -> TxnOutcome {
    match err {
        PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
            TxnOutcome::Failed(Failure::pool_timeout())
        }
        PoolError::Backend(err) => classify(&err),
        other => TxnOutcome::Lost(Failure::new(
            FailureKind::ConnectionLost,
            format!("the pool could not open a connection: {other}"),
        )),
    }
}

/// One execution of `script` on `client`: one transaction in pgbench's sense.
pub(super) async fn run_script(
    client: &Object,
    script: &Script,
    vars: &mut script::Vars,
    rng: &mut rand::rngs::SmallRng,
) -> Result<(), TxnOutcome> {
    let mut params: Vec<String> = Vec::new();
    for command in &script.commands {
        match command {
            Command::Sql {
                sql, params: slots, ..
            } => {
                write_params(&mut params, slots, vars);
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
            _ => {
                if let Some(pause) = run_on_client(script, command, vars, rng)? {
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }
    Ok(())
}

/// After a failed transaction of `script`: rolls back what the script left
/// open, and forgets prepared statements the server no longer accepts. False
/// if the connection cannot be used again (the caller takes it out of the pool).
pub(super) async fn clean_up(client: &Object, failure: &Failure, script: &Script) -> bool {
    if statements_are_stale(&failure.kind) {
        client.statement_cache.clear();
    }
    !script.opens_transaction() || client.batch_execute("ROLLBACK").await.is_ok()
}

/// A tokio-postgres error as a request outcome: the server's error (one that
/// ends the session counts as lost), or a connection that broke.
fn classify(err: &tokio_postgres::Error) -> TxnOutcome {
    match err.as_db_error() {
        Some(db) if !ends_session(db.code()) => TxnOutcome::Failed(Failure::new(
            FailureKind::Server(db.code().clone()),
            db.message(),
        )),
        Some(db) => TxnOutcome::Lost(Failure::new(
            FailureKind::Server(db.code().clone()),
            error_text(err),
        )),
        None => TxnOutcome::Lost(Failure::new(FailureKind::ConnectionLost, error_text(err))),
    }
}
