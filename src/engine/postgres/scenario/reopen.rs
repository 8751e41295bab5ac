//! Sessions held for the whole run besides the load workers' (the lock
//! observer's, the DDL injector's, its killer's) are opened again when the
//! server ends them: a restart, a failover, someone's `pg_terminate_backend`.
//! A deploy script would run its migration tool anew, and an operator's
//! monitoring would reconnect; so the run goes on measuring instead of losing
//! everything after the first loss.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::error::Severity;
use tokio_postgres::{CancelToken, Client, NoTls};

use crate::engine::postgres::database::Connector;
use crate::engine::postgres::errors;

/// How long to wait between two attempts to open a lost session again.
pub const REOPEN_EVERY: Duration = Duration::from_millis(250);

/// A session held for the whole run, with what it takes to open it again.
pub struct HeldSession {
    pub client: Client,
    /// The same settings, TLS and `application_name` the session was opened with.
    pub connector: Connector,
}

impl HeldSession {
    /// Opens the session `connector` describes.
    pub async fn open(connector: Connector) -> Result<HeldSession, crate::error::Error> {
        let client = connector.clone().connect().await?;
        Ok(HeldSession { client, connector })
    }

    /// Opens the session again after a loss, every [`REOPEN_EVERY`] until that
    /// works; false (the old client kept) if `stop` turned true first.
    pub async fn reopen(&mut self, stop: &mut watch::Receiver<bool>) -> bool {
        loop {
            if *stop.borrow() {
                return false;
            }
            let opened = tokio::select! {
                opened = self.connector.clone().connect() => opened,
                _ = stop.wait_for(|stopped| *stopped) => return false,
            };
            if let Ok(client) = opened {
                self.client = client;
                return true;
            }
            tokio::select! {
                _ = tokio::time::sleep(REOPEN_EVERY) => {}
                _ = stop.wait_for(|stopped| *stopped) => return false,
            }
        }
    }
}

/// Whether `err` means the session is gone (the server ended it, or the
/// connection closed or broke), not that a statement failed on a live session.
/// The server says so with a FATAL error (a timeout such as
/// `idle_session_timeout` too) or one of [`errors::ENDS_SESSION`].
pub fn is_connection_lost(err: &tokio_postgres::Error) -> bool {
    if let Some(db) = err.as_db_error() {
        return matches!(
            db.parsed_severity(),
            Some(Severity::Fatal | Severity::Panic)
        ) || errors::ends_session(db.code());
    }
    err.is_closed()
        || std::error::Error::source(err).is_some_and(|source| source.is::<std::io::Error>())
}

/// The cancel handle of a session that may be opened again: a cancel reaches
/// whichever session is current.
#[derive(Clone)]
pub struct SharedCancel(Arc<Mutex<CancelToken>>);

impl SharedCancel {
    pub fn new(client: &Client) -> SharedCancel {
        SharedCancel(Arc::new(Mutex::new(client.cancel_token())))
    }

    /// Points the handle at `client`, the session opened again.
    pub fn replace(&self, client: &Client) {
        *self.0.lock().expect("no cancel panics holding it") = client.cancel_token();
    }

    /// Cancels the current session's running statement.
    pub async fn cancel_query(&self) -> Result<(), tokio_postgres::Error> {
        let token = self.0.lock().expect("no cancel panics holding it").clone();
        token.cancel_query(NoTls).await
    }
}
