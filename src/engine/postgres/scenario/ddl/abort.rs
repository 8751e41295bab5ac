//! On a stop (Ctrl-C, SIGTERM, the server's death, a failed task) the DDL goes
//! first: its statement is cancelled and its transaction rolled back before
//! anything else of the run is released. A DDL queued behind the report would
//! otherwise get its lock the moment the report is cancelled, and commit: the
//! interrupt would apply the migration.
//!
//! The cancel is confirmed from a session of its own. The injector must have
//! ended within [`CANCEL_WAIT`] and its backend be gone or idle outside a
//! transaction; otherwise the backend is terminated (`pg_terminate_backend`)
//! and the stop waits until it has ended. An injector still running after the
//! cancel could send its next statement at any moment, so it is terminated
//! even when its backend looks idle.

use std::time::Duration;

use tokio::task::{JoinError, JoinHandle};
use tokio_postgres::Client;

use crate::engine::postgres::database::Connector;
use crate::engine::postgres::scenario::reopen::SharedCancel;
use crate::metrics::DdlAttempt;

/// How long the injector gets to end after its statement was cancelled.
pub const CANCEL_WAIT: Duration = Duration::from_secs(1);

/// How long a terminated DDL backend gets to end.
const END_WAIT: Duration = Duration::from_secs(5);

/// How often the DDL's backend is looked at while waiting for it to end.
const POLL_EVERY: Duration = Duration::from_millis(20);

/// What it takes to check on the DDL's session from outside: a session of the
/// run's own and the DDL's `application_name`.
#[derive(Clone)]
pub struct DdlWatch {
    /// Opens the session that looks at (and if need be terminates) the DDL's backend.
    pub admin: Connector,
    /// The DDL session's `application_name`, which every reopened session keeps.
    pub application_name: String,
    /// The target is the throwaway server: when it cannot be reached, it is
    /// gone, and nothing of the DDL's can commit any more.
    pub throwaway: bool,
}

/// How the DDL was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DdlStopped {
    /// The cancel ended the statement; the backend is gone or idle outside a transaction.
    RolledBack,
    /// The backend did not end its transaction after the cancel: it was terminated, and it has ended.
    Terminated,
    /// The throwaway server is gone (it died): nothing of the DDL's can commit.
    ServerGone,
    /// Neither could be confirmed (the server did not answer): why.
    Unconfirmed(String),
}

/// Cancels the DDL's statement, confirms that its transaction was rolled
/// back (terminating its backend when it cannot be), and returns the
/// injector's attempts with how it was stopped.
pub async fn stop_ddl(
    mut task: JoinHandle<Vec<DdlAttempt>>,
    cancel: &SharedCancel,
    watch: &DdlWatch,
) -> (Result<Vec<DdlAttempt>, JoinError>, DdlStopped) {
    let mut joined = None;
    if !task.is_finished() {
        let _ = cancel.cancel_query().await;
    }
    if let Ok(result) = tokio::time::timeout(CANCEL_WAIT, &mut task).await {
        joined = Some(result);
    }
    let stopped = match watch.admin.clone().connect().await {
        Ok(admin) => confirm(&admin, &watch.application_name, joined.is_some()).await,
        Err(_) if watch.throwaway => DdlStopped::ServerGone,
        Err(error) => DdlStopped::Unconfirmed(error.to_string()),
    };
    let result = match joined {
        Some(result) => result,
        None => match tokio::time::timeout(END_WAIT, &mut task).await {
            Ok(result) => result,
            Err(_) => {
                task.abort();
                (&mut task).await
            }
        },
    };
    (result, stopped)
}

/// Confirms that the DDL's backend is gone or idle outside a transaction,
/// else terminates it and waits until it has ended. `injector_ended`: the
/// injector has returned, so it sends nothing more.
async fn confirm(admin: &Client, application_name: &str, injector_ended: bool) -> DdlStopped {
    const BACKENDS_SQL: &str = "\
        SELECT pid, coalesce(state, '') = 'idle' AND xact_start IS NULL
        FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()";
    let rows = match admin.query(BACKENDS_SQL, &[&application_name]).await {
        Ok(rows) => rows,
        Err(error) => {
            return DdlStopped::Unconfirmed(crate::engine::postgres::database::error_text(&error));
        }
    };
    let idle = rows.iter().all(|row| row.get::<_, bool>(1));
    // No backend at all: nothing of the DDL's can commit any more.
    if rows.is_empty() || (injector_ended && idle) {
        return DdlStopped::RolledBack;
    }
    let pids: Vec<i32> = rows.iter().map(|row| row.get(0)).collect();
    if let Err(error) = admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM unnest($1::int4[]) pid",
            &[&pids],
        )
        .await
    {
        return DdlStopped::Unconfirmed(crate::engine::postgres::database::error_text(&error));
    }
    let deadline = tokio::time::Instant::now() + END_WAIT;
    loop {
        let left = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY ($1)",
                &[&pids],
            )
            .await;
        match left {
            Ok(row) if row.get::<_, i64>(0) == 0 => return DdlStopped::Terminated,
            Ok(_) if tokio::time::Instant::now() < deadline => {}
            Ok(_) => {
                return DdlStopped::Unconfirmed(format!(
                    "its backend (pid {pids:?}) was terminated and is still there after {} s",
                    END_WAIT.as_secs()
                ));
            }
            Err(error) => {
                return DdlStopped::Unconfirmed(crate::engine::postgres::database::error_text(
                    &error,
                ));
            }
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}
