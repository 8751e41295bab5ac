//! One request of the application model: check a connection out of the pool,
//! run one transaction of a script on it with tokio-postgres, hand it back.
//! Parameters go as text, with types the server infers, as the lean
//! connections send them; statements are prepared once per connection
//! (deadpool-postgres' statement cache).

use std::time::Instant;

use bytes::BytesMut;
use deadpool_postgres::{Object, PoolError};
use tokio_postgres::SimpleQueryMessage;
use tokio_postgres::types::{Format, IsNull, ToSql, Type, to_sql_checked};

use super::super::load::{ends_session, statements_are_stale};
use crate::config::Protocol;
use crate::metrics::recorder::CONNECTION_LOST_SQLSTATE;
use crate::script::{self, Failure, ResultSet, Script, SqlCommand, Step};
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

/// One execution of `script` on `client`: one transaction in pgbench's
/// sense. Pipelines never come here (refused with the pool); a statement
/// with `\gset`/`\aset` goes as a simple query, whose rows tokio-postgres
/// returns as text, and so does any statement under `--protocol simple`.
pub(super) async fn run_script(
    client: &Object,
    script: &Script,
    protocol: Protocol,
    vars: &mut script::Vars,
    prng: &mut script::Prng,
) -> Result<(), Outcome> {
    let mut cursor = script::Cursor::default();
    loop {
        let step = script
            .step(&mut cursor, vars, prng)
            .map_err(|failure| script_failed(script, &failure))?;
        match step {
            Step::Done => return Ok(()),
            Step::Sql(sql) => run_sql(client, script, sql, protocol, vars).await?,
            Step::Sleep { duration_us } => {
                tokio::time::sleep(std::time::Duration::from_micros(duration_us)).await;
            }
            Step::Shell {
                command,
                assign,
                line,
            } => match script::shell::run(&command, assign.is_some()).await {
                Ok(value) => {
                    if let (Some(slot), Some(value)) = (assign, value) {
                        vars.set(slot, script::Value::int(value));
                    }
                }
                Err(error) => return Err(script_failed(script, &Failure { line, error })),
            },
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
) -> Result<(), Outcome> {
    if protocol == Protocol::Simple || sql.compound || sql.results.is_some() {
        let mut text = String::new();
        sql.render_simple(vars, &mut text);
        let messages = client
            .simple_query(&text)
            .await
            .map_err(|err| classify(&err))?;
        let Some(target) = &sql.results else {
            return Ok(());
        };
        let results = result_sets(&messages);
        return script
            .store_results(target, &results, vars)
            .map_err(|error| {
                script_failed(
                    script,
                    &Failure {
                        line: sql.line,
                        error,
                    },
                )
            });
    }
    let mut params: Vec<Option<String>> = Vec::with_capacity(sql.params.len());
    for index in 0..sql.params.len() {
        let mut text = String::new();
        let defined = sql.write_param(index, vars, &mut text);
        params.push(defined.then_some(text));
    }
    let text: Vec<TextParam<'_>> = params
        .iter()
        .map(|param| TextParam(param.as_deref()))
        .collect();
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
    script.sql_commands().any(|sql| {
        let first_word = sql.sql.split_whitespace().next().unwrap_or("");
        first_word.eq_ignore_ascii_case("BEGIN") || first_word.eq_ignore_ascii_case("START")
    })
}

/// A script failure at run time, counted under `script` with its place.
fn script_failed(script: &Script, failure: &Failure) -> Outcome {
    Outcome::Failed {
        sqlstate: "script".to_string(),
        message: script.failure_message(failure),
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
