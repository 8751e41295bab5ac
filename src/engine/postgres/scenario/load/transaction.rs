//! One transaction on a worker's own connection: the script's steps
//! ([`crate::script::Script::step`], through [`commands`]) carried out on the
//! lean client in the run's query mode, and how an error ends it; with
//! `--client-timeout`, a cancel request once it runs past its deadline.
//!
//! The hot path: a statement without `\gset`, outside a pipeline, with every
//! variable defined, under `--protocol prepared`, goes through
//! [`WireConnection::execute`] with the parameters' texts, and nothing else.

use std::time::{Duration, Instant};

use super::PreparedScript;
use crate::config::Protocol;
use crate::engine::postgres::errors;
use crate::engine::postgres::pgwire::{Statement, WireCancel, WireConnection, WireError};
use crate::metrics::failures::{Failure, FailureKind};
use crate::scenario::commands::{self, Params};
use crate::scenario::txn::{Attempt, TxnOutcome};
use crate::script::{Cursor, Prng, ResultSet, Script, SqlCommand, Step, Vars};

/// How long a timed-out transaction has to end after a cancel request before
/// the request is repeated. Long, because a repeat that crosses the first
/// cancel's error on the wire would cancel the connection's next transaction.
const CANCEL_REPEAT: Duration = Duration::from_secs(1);

/// What a client reuses from one transaction to the next.
#[derive(Debug, Default)]
pub(super) struct Buffers {
    params: Params,
    /// The text of a simple query.
    text: String,
    /// The rows a `\gset`/`\aset` stores.
    results: Vec<ResultSet>,
}

/// One transaction of `script` on a worker's connection, tried as
/// [`crate::scenario::txn::transaction`] says.
pub(super) struct Run<'a> {
    pub connection: &'a mut WireConnection,
    pub script: &'a Script,
    pub prepared: &'a PreparedScript,
    pub protocol: Protocol,
    pub buffers: &'a mut Buffers,
}

impl Attempt for Run<'_> {
    async fn try_once(&mut self, vars: &mut Vars, prng: &mut Prng) -> Result<(), TxnOutcome> {
        self.script(vars, prng).await
    }

    /// As pgbench does after an error (its pipeline's answers already read
    /// up to the last sync): a ROLLBACK only when the server said a
    /// transaction block is open, whatever the script's text.
    async fn roll_back(&mut self, _failure: &Failure) -> bool {
        !self.connection.in_transaction_block()
            || self.connection.simple_query("ROLLBACK").await.is_ok()
    }
}

impl Run<'_> {
    /// One execution of the script: one transaction in pgbench's sense. The
    /// error is how it ended when it did not complete.
    async fn script(&mut self, vars: &mut Vars, prng: &mut Prng) -> Result<(), TxnOutcome> {
        let mut cursor = Cursor::default();
        // Syncs queued in the open pipeline, if one is open.
        let mut pipeline: Option<usize> = None;
        let result = loop {
            let step = match commands::next_step(self.script, &mut cursor, vars, prng) {
                Ok(step) => step,
                Err(failure) => break Err(failure),
            };
            let done = match step {
                Step::Done => break Ok(()),
                Step::Sql(sql) => self.sql(sql, pipeline.is_some(), vars).await,
                Step::Sleep { duration_us } => {
                    tokio::time::sleep(Duration::from_micros(duration_us)).await;
                    Ok(())
                }
                Step::Shell {
                    command,
                    assign,
                    line,
                } => commands::run_shell(self.script, &command, assign, line, vars).await,
                Step::StartPipeline => {
                    pipeline = Some(0);
                    Ok(())
                }
                Step::SyncPipeline => {
                    self.connection.queue_sync();
                    pipeline = pipeline.map(|syncs| syncs + 1);
                    Ok(())
                }
                Step::EndPipeline => {
                    let syncs = pipeline.take().unwrap_or(0) + 1;
                    self.connection
                        .finish_pipeline(syncs)
                        .await
                        .map_err(wire_outcome)
                }
            };
            if let Err(err) = done {
                break Err(err);
            }
        };
        if let (Err(_), Some(syncs)) = (&result, pipeline) {
            // A failure inside a pipeline: send and read what was queued, so the
            // connection is in step with the server again (pgbench's discardUntilSync).
            if let Err(lost @ WireError::Lost { .. }) =
                self.connection.finish_pipeline(syncs + 1).await
            {
                return Err(wire_outcome(lost));
            }
        }
        result
    }

    /// One SQL command, as the query mode sends it.
    async fn sql(
        &mut self,
        sql: &SqlCommand,
        in_pipeline: bool,
        vars: &mut Vars,
    ) -> Result<(), TxnOutcome> {
        if self.protocol == Protocol::Simple || sql.compound {
            return self.simple(sql, vars).await;
        }
        let buffers = &mut *self.buffers;
        let no_null = buffers.params.write(sql, vars);
        let statement = match &self.prepared.statements[sql.number] {
            Some(prepared) if self.protocol == Protocol::Prepared => {
                if no_null && !in_pipeline && sql.results.is_none() {
                    return self
                        .connection
                        .execute(prepared, buffers.params.texts())
                        .await
                        .map_err(wire_outcome);
                }
                Statement::Prepared(prepared)
            }
            _ => Statement::Unnamed(&sql.sql),
        };
        let params = buffers.params.values();
        if in_pipeline {
            return self
                .connection
                .queue_in_pipeline(statement, params)
                .map_err(wire_outcome);
        }
        if sql.results.is_none() {
            return self
                .connection
                .run_statement(statement, params)
                .await
                .map_err(wire_outcome);
        }
        self.connection
            .run_statement_for_rows(statement, params, &mut buffers.results)
            .await
            .map_err(wire_outcome)?;
        commands::store_results(self.script, sql, &buffers.results, vars)
    }

    /// The simple query protocol: the text with variables substituted.
    async fn simple(&mut self, sql: &SqlCommand, vars: &mut Vars) -> Result<(), TxnOutcome> {
        let buffers = &mut *self.buffers;
        sql.render_simple(vars, &mut buffers.text);
        if sql.results.is_none() {
            return self
                .connection
                .simple_query(&buffers.text)
                .await
                .map_err(wire_outcome);
        }
        self.connection
            .simple_query_for_rows(&buffers.text, &mut buffers.results)
            .await
            .map_err(wire_outcome)?;
        commands::store_results(self.script, sql, &buffers.results, vars)
    }
}

/// How a statement's error ends the transaction: the server's error (one
/// that ends the session counts as lost), or a lost connection, under the
/// SQLSTATE of the error the server sent before closing it, if it sent one.
/// The SQLSTATE has its own column, so it stays out of the message.
fn wire_outcome(err: WireError) -> TxnOutcome {
    match err {
        WireError::Server(server) => TxnOutcome::server_error(
            errors::error_code(&server.code),
            server.message,
            errors::ends_session(&server.code),
        ),
        WireError::Lost {
            server: Some(server),
            reason,
        } => TxnOutcome::Lost(Failure::new(
            errors::failure_kind(&server.code),
            format!("{reason}: {}", server.message),
        )),
        WireError::Lost {
            server: None,
            reason,
        } => TxnOutcome::Lost(Failure::new(FailureKind::ConnectionLost, reason)),
    }
}

/// Runs `transaction` until `deadline`; past it, cancels the running query on
/// the server (a cancel request, as an application with a request timeout
/// does) and waits for the script to give up, repeating the cancel while it
/// goes on (a cancel that arrives between two statements does nothing).
pub(super) async fn run_until(
    transaction: impl Future<Output = Result<(), TxnOutcome>>,
    deadline: Instant,
    cancel: &WireCancel,
) -> Result<(), TxnOutcome> {
    let mut transaction = std::pin::pin!(transaction);
    let deadline = tokio::time::Instant::from_std(deadline);
    if let Ok(result) = tokio::time::timeout_at(deadline, &mut transaction).await {
        return result;
    }
    loop {
        let _ = cancel.cancel_query().await;
        match tokio::time::timeout(CANCEL_REPEAT, &mut transaction).await {
            Ok(Err(lost @ TxnOutcome::Lost(_))) => return Err(lost),
            Ok(_) => return Err(TxnOutcome::Failed(Failure::client_timeout())),
            Err(_) => continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio_postgres::error::SqlState;

    use super::*;
    use crate::engine::postgres::pgwire::ServerError;

    fn failure(outcome: TxnOutcome) -> (bool, String, String) {
        match outcome {
            TxnOutcome::Failed(failure) => (false, failure.kind.to_string(), failure.message),
            TxnOutcome::Lost(failure) => (true, failure.kind.to_string(), failure.message),
            other => panic!("not a failure: {other:?}"),
        }
    }

    #[test]
    fn a_lost_connection_counts_under_the_servers_last_sqlstate() {
        // What the connection says when the server's FATAL came before the end of stream.
        let terminated = WireError::Lost {
            server: Some(ServerError {
                code: SqlState::ADMIN_SHUTDOWN,
                message: "terminating connection due to administrator command".into(),
            }),
            reason: "the server closed the connection".into(),
        };
        assert_eq!(
            failure(wire_outcome(terminated)),
            (
                true,
                "57P01".to_string(),
                "the server closed the connection: terminating connection due to \
                 administrator command"
                    .to_string()
            )
        );
        let closed = WireError::lost("the server closed the connection");
        assert_eq!(failure(wire_outcome(closed)).1, "connection_lost");
        let reset = WireError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        let (lost, kind, message) = failure(wire_outcome(reset));
        assert!(lost);
        assert_eq!(kind, "connection_lost");
        assert!(message.starts_with("connection lost: "), "{message}");
    }

    #[test]
    fn shutdown_sqlstates_end_the_session_other_errors_do_not() {
        let server = |code: &str| {
            wire_outcome(WireError::Server(ServerError {
                code: SqlState::from_code(code),
                message: "m".into(),
            }))
        };
        for code in ["57P01", "57P02", "57P03"] {
            assert!(failure(server(code)).0, "{code}");
        }
        for code in ["57014", "40P01", "55P03", "25P03"] {
            assert!(!failure(server(code)).0, "{code}");
        }
    }

    /// A ReadyForQuery with transaction status `status`.
    fn ready(status: u8) -> Vec<u8> {
        vec![b'Z', 0, 0, 0, 5, status]
    }

    /// An ErrorResponse with SQLSTATE `code`.
    fn error(code: &str) -> Vec<u8> {
        let mut fields = Vec::new();
        for (tag, text) in [(b'S', "ERROR"), (b'C', code), (b'M', "m")] {
            fields.push(tag);
            fields.extend_from_slice(text.as_bytes());
            fields.push(0);
        }
        fields.push(0);
        let mut message = vec![b'E'];
        message.extend_from_slice(&(4 + fields.len() as i32).to_be_bytes());
        message.extend_from_slice(&fields);
        message
    }

    /// What the test's server received since it last looked.
    fn received(server: &mut std::os::unix::net::UnixStream) -> String {
        use std::io::Read;
        server.set_nonblocking(true).unwrap();
        let mut bytes = vec![0u8; 64 * 1024];
        let read = match server.read(&mut bytes) {
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => 0,
            Err(err) => panic!("{err}"),
        };
        String::from_utf8_lossy(&bytes[..read]).into_owned()
    }

    /// Runs a pipeline whose first try fails with a serialization failure
    /// after which the server says `status`, and whose second try completes,
    /// on a server the test plays (every answer written before the client
    /// asks, so that nothing waits on the other); returns what the server
    /// received after the first try.
    async fn retried_pipeline(status: u8) -> String {
        use crate::scenario::txn::{RetryRule, Rewind, TryWindow, Txn};
        use std::io::Write;
        let text = "\\startpipeline\nBEGIN ISOLATION LEVEL SERIALIZABLE;\n\
                    UPDATE t SET n = n + 1;\nCOMMIT;\n\\endpipeline\n";
        let script = crate::script::parse("t", text).unwrap();
        let (mut connection, mut server) =
            crate::engine::postgres::pgwire::WireConnection::with_test_server();
        let prepared = PreparedScript {
            statements: script.sql_commands().map(|_| None).collect(),
        };
        // The first try's answer, a ROLLBACK's (read only if one is sent), the second try's.
        let mut answers = error("40001");
        answers.extend(ready(status));
        if status != b'I' {
            answers.extend(ready(b'I'));
        }
        answers.extend(ready(b'I'));
        server.write_all(&answers).unwrap();
        let mut buffers = Buffers::default();
        let mut run = Run {
            connection: &mut connection,
            script: &script,
            prepared: &prepared,
            protocol: Protocol::Extended,
            buffers: &mut buffers,
        };
        let rule = RetryRule {
            max_tries: 2,
            ..RetryRule::ONE_TRY
        };
        let now = Instant::now();
        let window = TryWindow::new(now, now + Duration::from_secs(60), None);
        let automatic = crate::script::RandomSeeds::new(1, 1).client(0).1;
        let mut vars = script.new_vars(automatic, &[]);
        let mut saved = vars.clone();
        let mut prng = Prng::new(1);
        let rewind = Rewind {
            vars: &mut vars,
            saved: Some(&mut saved),
            prng: &mut prng,
        };
        // A wrong rule reads an answer meant for another message and waits for good.
        let mut txn = Txn::due(now);
        let tried = txn.run(&mut run, rule, window, rewind);
        let result = tokio::time::timeout(Duration::from_secs(10), tried)
            .await
            .expect("the transaction waited for an answer the server never sent");
        assert!(result.is_ok(), "{result:?}");
        assert!(!connection.in_transaction_block());
        let sent = received(&mut server);
        assert_eq!(sent.matches("UPDATE t").count(), 2, "two tries: {sent:?}");
        sent
    }

    #[tokio::test]
    async fn a_failed_try_is_rolled_back_only_when_the_server_says_a_block_is_open() {
        // Failed inside its block: the server says the block failed (E).
        assert!(retried_pipeline(b'E').await.contains("ROLLBACK"));
        // Failed at its COMMIT, which ends the block: idle, nothing to roll
        // back, though the script's text opens a transaction.
        assert!(!retried_pipeline(b'I').await.contains("ROLLBACK"));
    }
}
