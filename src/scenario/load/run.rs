//! One transaction on a worker's own connection: the script's commands in
//! order, its statements sent prepared, and how an error ends it; with
//! `--client-timeout`, a cancel request once it runs past its deadline.

use std::time::{Duration, Instant};

use super::PreparedScript;
use crate::metrics::failures::{Failure, FailureKind};
use crate::pgwire::{WireCancel, WireConnection, WireError};
use crate::scenario::commands::{run_on_client, write_params};
use crate::scenario::txn::TxnOutcome;
use crate::script::{self, Command, Script};

/// How long a timed-out transaction has to end after a cancel request before
/// the request is repeated. Long, because a repeat that crosses the first
/// cancel's error on the wire would cancel the connection's next transaction.
const CANCEL_REPEAT: Duration = Duration::from_secs(1);

/// One execution of a script: one transaction in pgbench's sense. The error
/// is how it ended when it did not complete.
pub(super) async fn run_script(
    connection: &mut WireConnection,
    script: &Script,
    prepared: &PreparedScript,
    vars: &mut script::Vars,
    rng: &mut rand::rngs::SmallRng,
    params: &mut Vec<String>,
) -> Result<(), TxnOutcome> {
    let mut statement_index = 0;
    for command in &script.commands {
        match command {
            Command::Sql { params: slots, .. } => {
                write_params(params, slots, vars);
                let statement = &prepared.statements[statement_index];
                statement_index += 1;
                connection
                    .execute(statement, params)
                    .await
                    .map_err(wire_outcome)?;
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

/// How a statement's error ends the transaction: the server's error (one
/// that ends the session counts as lost), or a lost connection, under the
/// SQLSTATE of the error the server sent before closing it, if it sent one.
/// The SQLSTATE has its own column, so it stays out of the message.
fn wire_outcome(err: WireError) -> TxnOutcome {
    match err {
        WireError::Server(server) => TxnOutcome::server_error(server.code, server.message),
        WireError::Lost {
            server: Some(server),
            reason,
        } => TxnOutcome::Lost(Failure::new(
            FailureKind::Server(server.code),
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
    use crate::pgwire::ServerError;

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
}
