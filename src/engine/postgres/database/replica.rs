//! The throwaway server's hot standby, as the run reaches it: started with
//! the server when the run has a replica, a connector for a party placed on
//! it, and the wait until it has replayed what the primary wrote (after a
//! strategy's reset, before its clock starts).

use std::time::Duration;

use anyhow::Context;

use super::connector::describe_url;
use super::{Connector, Database, error_text, redact_url};
use crate::choices::Side;
use crate::config::{ConnectionNeeds, ReplicaConfig};
use crate::engine::postgres::conninfo::{ConnSettings, Tls};
use crate::engine::postgres::server::{Server, ServerBinaries};
use crate::error::Error;
use crate::role::Role;

/// How long the standby may take to replay what the primary wrote before a run.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(30);

/// Starts the throwaway server sized for `needs`, with a hot standby when the
/// run has a `replica`.
pub(super) async fn start_server(
    binaries: &ServerBinaries,
    needs: &ConnectionNeeds,
    replica: Option<&ReplicaConfig>,
) -> Result<Server, Error> {
    let max_connections = needs.throwaway_max_connections();
    let started = match replica {
        None => Server::start(binaries, max_connections).await,
        Some(replica) => {
            Server::start_with_standby(binaries, max_connections, &replica.standby_settings).await
        }
    };
    Ok(started.context("starting the throwaway PostgreSQL server")?)
}

/// `throwaway server (BIN)`, and its standby: `with a hot standby (pg_basebackup)`.
pub(super) fn describe(server: &Server) -> String {
    let bin = server.bin_dir().display();
    match server.standby_method() {
        None => format!("throwaway server ({bin})"),
        Some(method) => format!(
            "throwaway server ({bin}) with a hot standby ({})",
            method.name()
        ),
    }
}

/// Where the run's hot standby is reached: its connection settings, TLS
/// and how output names it.
#[derive(Clone)]
pub(super) struct StandbyEndpoint {
    config: tokio_postgres::Config,
    tls: Tls,
    hosts: String,
    /// The throwaway's `hot standby`, or `--replica-url` without its password.
    description: String,
}

/// The throwaway server's standby, as the primary's settings are resolved
/// (no PG* variable, no TLS: the pair is ours alone); `None` without one.
pub(super) fn throwaway_standby(server: &Server) -> Result<Option<StandbyEndpoint>, Error> {
    let Some(connection) = server.standby_connection_string() else {
        return Ok(None);
    };
    let resolved = ConnSettings::resolve(&format!("{connection} sslmode=disable"), &|_| None)
        .map_err(Error::runtime)?;
    let tls = Tls::new(&resolved.settings.ssl).map_err(Error::runtime)?;
    Ok(Some(StandbyEndpoint {
        config: resolved.settings.tokio_config(),
        tls,
        hosts: resolved.settings.host_list(),
        description: "hot standby".to_string(),
    }))
}

/// The user's standby of `--replica-url`, resolved as `--db-url` is (libpq's
/// rules, PG* variables, the password file, TLS).
pub(super) fn users_standby(url: &str) -> Result<StandbyEndpoint, Error> {
    let shown = redact_url(url);
    let resolved = ConnSettings::resolve(url, &|name| std::env::var(name).ok())
        .map_err(|err| Error::bad_input(format!("--replica-url {shown}: {err}")))?;
    for warning in &resolved.warnings {
        stderrln!("warning: --replica-url: {warning}");
    }
    let tls = Tls::new(&resolved.settings.ssl)
        .map_err(|err| Error::bad_input(format!("--replica-url {shown}: {err}")))?;
    Ok(StandbyEndpoint {
        config: resolved.settings.tokio_config(),
        tls,
        hosts: resolved.settings.host_list(),
        description: describe_url(url, &resolved.settings),
    })
}

impl Database {
    /// [`Database::connector`] on `side`: the standby's for the replica
    /// (the same database, `search_path` and settings), else the primary's.
    pub fn connector_on(&self, side: Side, role: Role, settings: &[(String, String)]) -> Connector {
        match (side, &self.replica) {
            (Side::Replica, Some(standby)) => {
                let mut config = standby.config.clone();
                if let Some(dbname) = self.base.get_dbname() {
                    config.dbname(dbname);
                }
                let mut connector = self.connector_with(config, role, settings);
                connector.tls = standby.tls.clone();
                connector.hosts = standby.hosts.clone();
                connector.description = standby.description.clone();
                connector
            }
            _ => self.connector(role, settings),
        }
    }

    /// `--replica-url` as output names it (no password); `None` for the
    /// throwaway's standby or none.
    pub fn users_standby(&self) -> Option<&str> {
        self.replica
            .as_ref()
            .filter(|_| self.server.is_none())
            .map(|standby| standby.description.as_str())
    }

    /// Runs the throwaway standby with `standby_settings` (a sweep over its
    /// settings restarts it); no-op when it runs with them, or on `--db-url`.
    pub async fn use_standby_settings(&self, standby_settings: &[String]) -> Result<(), Error> {
        match (&self.server, &self.replica) {
            (Some(server), Some(_)) => server
                .use_standby_settings(standby_settings)
                .await
                .map_err(Error::Runtime),
            _ => Ok(()),
        }
    }

    /// Why the run's standby is gone, if it is: the throwaway's exited (its
    /// status), or the user's no longer answers; `None` while it runs, or
    /// without one. Asked after each strategy's run: a standby lost mid-run
    /// makes the run no result (`scenario::validity`).
    pub async fn standby_gone(&self) -> Option<String> {
        let standby = self.replica.as_ref()?;
        match &self.server {
            Some(server) => server
                .standby_exit_status()
                .map(|status| format!("the hot standby exited during the run ({status})")),
            None => {
                let connector = self.connector_on(Side::Replica, Role::Admin, &[]);
                match connector.connect().await {
                    Ok(_) => None,
                    Err(err) => Some(format!(
                        "the standby {} stopped answering during the run ({err})",
                        standby.description
                    )),
                }
            }
        }
    }

    /// Whether the target has a hot standby.
    pub fn has_replica(&self) -> bool {
        self.replica.is_some()
    }

    /// Waits until the standby has replayed what the primary wrote so far (a
    /// reset's DDL, a trace's); no-op without one.
    pub async fn replica_caught_up(&self) -> Result<(), Error> {
        match (&self.server, &self.replica) {
            (Some(server), Some(_)) => match server.standby_exit_status() {
                Some(status) => Err(Error::runtime(format!(
                    "the throwaway hot standby exited ({status}); no strategy runs after it"
                ))),
                None => server
                    .standby_caught_up(CATCH_UP_LIMIT)
                    .await
                    .map_err(Error::Runtime),
            },
            (None, Some(standby)) => self.users_standby_caught_up(standby).await,
            (_, None) => Ok(()),
        }
    }

    /// `--replica-url`: checks that the user's standby answers and is in
    /// recovery (a primary named by mistake would take the readers' and the
    /// report's load as a second primary); no-op without one.
    pub(super) async fn check_users_standby(&self) -> Result<(), Error> {
        // A standby without a throwaway server is the user's (`--replica-url`).
        let Some(standby) = self.replica.as_ref().filter(|_| self.server.is_none()) else {
            return Ok(());
        };
        let shown = &standby.description;
        let client = self
            .connector_on(Side::Replica, Role::Admin, &[])
            .connect()
            .await
            .map_err(|err| Error::runtime(format!("--replica-url {shown}: {err}")))?;
        let row = client
            .query_one("SELECT pg_is_in_recovery()", &[])
            .await
            .map_err(|err| {
                Error::runtime(format!("--replica-url {shown}: {}", error_text(&err)))
            })?;
        if !row.get::<_, bool>(0) {
            return Err(Error::bad_input(format!(
                "--replica-url {shown}: that server is not a standby (pg_is_in_recovery() is \
                 false); name a hot standby of the --db-url server"
            )));
        }
        Ok(())
    }

    /// Waits until the user's standby has replayed the primary's WAL up to
    /// where it is now; an error naming `--replica-url` after [`CATCH_UP_LIMIT`].
    async fn users_standby_caught_up(&self, standby: &StandbyEndpoint) -> Result<(), Error> {
        let shown = &standby.description;
        let failed = |err: tokio_postgres::Error| {
            Error::runtime(format!("--replica-url {shown}: {}", error_text(&err)))
        };
        let primary = self.connect_without_schema(Role::Admin).await?;
        let position: String = primary
            .query_one("SELECT pg_current_wal_lsn()::text", &[])
            .await
            .map_err(|err| {
                Error::runtime(format!("the primary's WAL position: {}", error_text(&err)))
            })?
            .get(0);
        let replica = self
            .connector_on(Side::Replica, Role::Admin, &[])
            .connect()
            .await?;
        let deadline = tokio::time::Instant::now() + CATCH_UP_LIMIT;
        loop {
            let replayed: bool = replica
                .query_one(
                    "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::text::pg_lsn, false)",
                    &[&position],
                )
                .await
                .map_err(failed)?
                .get(0);
            if replayed {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::runtime(format!(
                    "--replica-url {shown}: the standby has not replayed the primary's WAL up \
                     to {position} within {} s; is it a streaming standby of the --db-url server?",
                    CATCH_UP_LIMIT.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
