//! One transaction of a script on a load worker's connection: the script's
//! steps ([`Script::step`]) carried out on the lean client, in the run's query
//! mode. A statement without a `\gset`, outside a pipeline, with defined
//! variables, in the prepared mode, goes through [`WireConnection::execute`]
//! as before: the hot path gets no new work per transaction.

use super::*;
use crate::config::Protocol;
use crate::pgwire::Statement;
use crate::script::{Cursor, Failure, Prng, ResultSet, SqlCommand, Step, Value, Vars};

/// What a client reuses from one transaction to the next.
#[derive(Debug, Default)]
pub(super) struct Buffers {
    params: Vec<String>,
    /// Which parameters are SQL NULL (undefined variables).
    nulls: Vec<bool>,
    /// The text of a simple query.
    text: String,
    results: Vec<ResultSet>,
}

/// A script failure at run time, counted under `script` with its place.
fn script_failed(script: &Script, failure: &Failure) -> TxnError {
    TxnError::Failed {
        sqlstate: "script".to_string(),
        message: script.failure_message(failure),
    }
}

/// A wire error as a transaction error.
fn wire_failed(err: WireError) -> TxnError {
    match err {
        WireError::Server { sqlstate, message } if ends_session(&sqlstate) => {
            TxnError::Lost { sqlstate, message }
        }
        WireError::Server { sqlstate, message } => TxnError::Failed { sqlstate, message },
        WireError::Lost(message) => {
            let (sqlstate, message) = lost_sqlstate(&message);
            TxnError::Lost { sqlstate, message }
        }
    }
}

/// One execution of a script: one transaction in pgbench's sense.
pub(super) async fn run_script(
    connection: &mut WireConnection,
    script: &Script,
    prepared: &PreparedScript,
    protocol: Protocol,
    vars: &mut Vars,
    prng: &mut Prng,
    buffers: &mut Buffers,
) -> Result<(), TxnError> {
    let mut cursor = Cursor::default();
    // Syncs queued in the open pipeline, if one is open.
    let mut pipeline: Option<usize> = None;
    let result = loop {
        let step = match script.step(&mut cursor, vars, prng) {
            Ok(step) => step,
            Err(failure) => break Err(script_failed(script, &failure)),
        };
        let done = match step {
            Step::Done => break Ok(()),
            Step::Sql(sql) => {
                let run = Run {
                    connection: &mut *connection,
                    script,
                    prepared,
                    protocol,
                    in_pipeline: pipeline.is_some(),
                };
                run.sql(sql, vars, buffers).await
            }
            Step::Sleep { duration_us } => {
                tokio::time::sleep(Duration::from_micros(duration_us)).await;
                Ok(())
            }
            Step::Shell {
                command,
                assign,
                line,
            } => match script::shell::run(&command, assign.is_some()).await {
                Ok(value) => {
                    if let (Some(slot), Some(value)) = (assign, value) {
                        vars.set(slot, Value::int(value));
                    }
                    Ok(())
                }
                Err(error) => Err(script_failed(script, &Failure { line, error })),
            },
            Step::StartPipeline => {
                pipeline = Some(0);
                Ok(())
            }
            Step::SyncPipeline => {
                connection.queue_sync();
                pipeline = pipeline.map(|syncs| syncs + 1);
                Ok(())
            }
            Step::EndPipeline => {
                let syncs = pipeline.take().unwrap_or(0) + 1;
                connection.finish_pipeline(syncs).await.map_err(wire_failed)
            }
        };
        if let Err(err) = done {
            break Err(err);
        }
    };
    if let (Err(_), Some(syncs)) = (&result, pipeline) {
        // A failure inside a pipeline: send and read what was queued, so the
        // connection is in step with the server again (pgbench's discardUntilSync).
        if let Err(lost @ WireError::Lost(_)) = connection.finish_pipeline(syncs + 1).await {
            return Err(wire_failed(lost));
        }
    }
    result
}

/// What running one SQL command needs.
struct Run<'a> {
    connection: &'a mut WireConnection,
    script: &'a Script,
    prepared: &'a PreparedScript,
    protocol: Protocol,
    in_pipeline: bool,
}

impl Run<'_> {
    async fn sql(
        self,
        sql: &SqlCommand,
        vars: &mut Vars,
        buffers: &mut Buffers,
    ) -> Result<(), TxnError> {
        if self.protocol == Protocol::Simple || sql.compound {
            return self.simple(sql, vars, buffers).await;
        }
        let count = sql.params.len();
        buffers.params.resize_with(count, String::new);
        buffers.nulls.resize(count, false);
        let mut any_null = false;
        for index in 0..count {
            let null = !sql.write_param(index, vars, &mut buffers.params[index]);
            buffers.nulls[index] = null;
            any_null |= null;
        }
        let statement = match &self.prepared.statements[sql.number] {
            Some(prepared) if self.protocol == Protocol::Prepared => {
                if !any_null && !self.in_pipeline && sql.results.is_none() {
                    return self
                        .connection
                        .execute(prepared, &buffers.params)
                        .await
                        .map_err(wire_failed);
                }
                Statement::Prepared(prepared)
            }
            _ => Statement::Unnamed(&sql.sql),
        };
        let params: Vec<Option<&str>> = buffers
            .params
            .iter()
            .zip(&buffers.nulls)
            .map(|(text, null)| (!null).then_some(text.as_str()))
            .collect();
        if self.in_pipeline {
            return self
                .connection
                .queue_in_pipeline(statement, &params)
                .map_err(wire_failed);
        }
        let Some(target) = &sql.results else {
            return self
                .connection
                .run_statement(statement, &params)
                .await
                .map_err(wire_failed);
        };
        self.connection
            .run_statement_for_rows(statement, &params, &mut buffers.results)
            .await
            .map_err(wire_failed)?;
        self.store(sql, target, vars, &buffers.results)
    }

    /// The simple query protocol: the text with variables substituted.
    async fn simple(
        self,
        sql: &SqlCommand,
        vars: &mut Vars,
        buffers: &mut Buffers,
    ) -> Result<(), TxnError> {
        sql.render_simple(vars, &mut buffers.text);
        let Some(target) = &sql.results else {
            return self
                .connection
                .simple_query(&buffers.text)
                .await
                .map_err(wire_failed);
        };
        self.connection
            .simple_query_for_rows(&buffers.text, &mut buffers.results)
            .await
            .map_err(wire_failed)?;
        self.store(sql, target, vars, &buffers.results)
    }

    fn store(
        &self,
        sql: &SqlCommand,
        target: &script::ResultTarget,
        vars: &mut Vars,
        results: &[ResultSet],
    ) -> Result<(), TxnError> {
        self.script
            .store_results(target, results, vars)
            .map_err(|error| {
                script_failed(
                    self.script,
                    &Failure {
                        line: sql.line,
                        error,
                    },
                )
            })
    }
}
