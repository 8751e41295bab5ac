//! One request of the application model: check a connection out of the pool,
//! run one transaction of a script on it with tokio-postgres, hand it back.
//! Parameters go as text, with types the server infers, as the lean
//! connections send them; statements are prepared once per connection
//! (deadpool-postgres' statement cache).

use bytes::BytesMut;
use deadpool_postgres::{Object, PoolError};
use tokio_postgres::SimpleQueryMessage;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{Format, IsNull, ToSql, Type, to_sql_checked};

use crate::config::Protocol;
use crate::engine::postgres::database::error_text;
use crate::engine::postgres::errors;
use crate::metrics::failures::{Failure, FailureKind};
use crate::scenario::commands::{self, Params};
use crate::scenario::txn::TxnOutcome;
use crate::script::{self, ResultSet, Script, SqlCommand, Step};

/// One request's transaction on its checked-out connection, tried as
/// [`crate::scenario::txn::Txn::run`] says.
pub(super) struct Attempt<'a> {
    pub client: &'a Object,
    pub script: &'a Script,
    pub protocol: Protocol,
    /// A rollback failed: the connection must not serve another request.
    pub unusable: bool,
}

impl crate::scenario::txn::Attempt for Attempt<'_> {
    async fn try_once(
        &mut self,
        vars: &mut script::Vars,
        prng: &mut script::Prng,
    ) -> Result<(), TxnOutcome> {
        run_script(self.client, self.script, self.protocol, vars, prng).await
    }

    /// tokio-postgres keeps no ReadyForQuery status, so the script's text
    /// says whether a block may be open (it opens one), as an application
    /// knows it called BEGIN; a failure that says the block is open and
    /// failed (25P02) rolls back whatever the text.
    async fn roll_back(&mut self, failure: &Failure) -> bool {
        let in_failed_block = errors::is_state(&failure.kind, &SqlState::IN_FAILED_SQL_TRANSACTION);
        let rolled_back = !(self.script.opens_transaction() || in_failed_block)
            || self.client.batch_execute("ROLLBACK").await.is_ok();
        self.unusable |= !rolled_back;
        rolled_back
    }
}

/// A script parameter sent as text (`None`: SQL NULL, an undefined
/// variable): the server parses it as whatever type it inferred for the
/// placeholder, as for the lean connections.
#[derive(Debug)]
struct TextParam<'a>(Option<&'a str>);

impl ToSql for TextParam<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            Some(text) => {
                out.extend_from_slice(text.as_bytes());
                Ok(IsNull::No)
            }
            None => Ok(IsNull::Yes),
        }
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

/// One execution of `script` on `client`: one transaction in pgbench's
/// sense. Pipelines never come here (refused with the pool); a statement
/// with `\gset`/`\aset` goes as a simple query, whose rows tokio-postgres
/// returns as text, and so does any statement under `--protocol simple`.
async fn run_script(
    client: &Object,
    script: &Script,
    protocol: Protocol,
    vars: &mut script::Vars,
    prng: &mut script::Prng,
) -> Result<(), TxnOutcome> {
    let mut cursor = script::Cursor::default();
    let mut params = Params::default();
    loop {
        match commands::next_step(script, &mut cursor, vars, prng)? {
            Step::Done => return Ok(()),
            Step::Sql(sql) => run_sql(client, script, sql, protocol, vars, &mut params).await?,
            Step::Sleep { duration_us } => {
                tokio::time::sleep(std::time::Duration::from_micros(duration_us)).await;
            }
            Step::Shell {
                command,
                assign,
                line,
            } => commands::run_shell(script, &command, assign, line, vars).await?,
            Step::StartPipeline | Step::SyncPipeline | Step::EndPipeline => {
                unreachable!("config refuses pipelines with the application pool")
            }
        }
    }
}

/// One SQL command, as `protocol` sends it.
async fn run_sql(
    client: &Object,
    script: &Script,
    sql: &SqlCommand,
    protocol: Protocol,
    vars: &mut script::Vars,
    params: &mut Params,
) -> Result<(), TxnOutcome> {
    if protocol == Protocol::Simple || sql.compound || sql.results.is_some() {
        let mut text = String::new();
        sql.render_simple(vars, &mut text);
        let messages = client
            .simple_query(&text)
            .await
            .map_err(|err| classify(&err))?;
        return commands::store_results(script, sql, &result_sets(&messages), vars);
    }
    params.write(sql, vars);
    let text: Vec<TextParam<'_>> = params.values().map(TextParam).collect();
    let values = text.iter().map(|param| param as &dyn ToSql);
    let executed = match protocol {
        Protocol::Prepared => {
            let statement = client
                .prepare_cached(&sql.sql)
                .await
                .map_err(|err| classify(&err))?;
            client.execute_raw(&statement, values).await
        }
        _ => client.execute_raw(sql.sql.as_str(), values).await,
    };
    executed.map(|_| ()).map_err(|err| classify(&err))
}

/// The simple query's answer as one [`ResultSet`] per statement.
fn result_sets(messages: &[SimpleQueryMessage]) -> Vec<ResultSet> {
    let mut results = Vec::new();
    let mut current = ResultSet::default();
    for message in messages {
        match message {
            SimpleQueryMessage::RowDescription(columns) => {
                current.columns = Some(
                    columns
                        .iter()
                        .map(|column| column.name().to_string())
                        .collect(),
                );
            }
            SimpleQueryMessage::Row(row) => {
                current.rows += 1;
                current.last_row = (0..row.len())
                    .map(|index| row.get(index).map(str::to_string))
                    .collect();
                if current.columns.is_none() {
                    current.columns = Some(
                        row.columns()
                            .iter()
                            .map(|column| column.name().to_string())
                            .collect(),
                    );
                }
            }
            SimpleQueryMessage::CommandComplete(_) => results.push(std::mem::take(&mut current)),
            _ => {}
        }
    }
    results
}

/// After a failed transaction (rolled back by its [`Attempt`]): forgets
/// prepared statements the server no longer accepts.
pub(super) fn clean_up(client: &Object, failure: &Failure) {
    if errors::statements_are_stale(&failure.kind) {
        client.statement_cache.clear();
    }
}

/// A tokio-postgres error as a request outcome: the server's error (one that
/// ends the session counts as lost), or a connection that broke.
fn classify(err: &tokio_postgres::Error) -> TxnOutcome {
    match err.as_db_error() {
        Some(db) if !errors::ends_session(db.code()) => {
            TxnOutcome::Failed(Failure::new(errors::failure_kind(db.code()), db.message()))
        }
        Some(db) => TxnOutcome::Lost(Failure::new(
            errors::failure_kind(db.code()),
            error_text(err),
        )),
        None => TxnOutcome::Lost(Failure::new(FailureKind::ConnectionLost, error_text(err))),
    }
}
