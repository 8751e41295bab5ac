//! The throwaway server's hot standby, as the run reaches it: started with
//! the server when the run has a replica, a connector for a party placed on
//! it, and the wait until it has replayed what the primary wrote (after a
//! strategy's reset, before its clock starts).

use std::time::Duration;

use anyhow::Context;

use super::{Connector, Database};
use crate::choices::Side;
use crate::config::{ConnectionNeeds, ReplicaConfig};
use crate::conninfo::ConnSettings;
use crate::error::Error;
use crate::role::Role;
use crate::server::{Server, ServerBinaries};

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

/// The standby's connection settings, as the primary's are resolved (no
/// PG* variable, no TLS: the pair is ours alone); `None` without a standby.
pub(super) fn standby_base(server: &Server) -> Result<Option<tokio_postgres::Config>, Error> {
    let Some(connection) = server.standby_connection_string() else {
        return Ok(None);
    };
    let resolved = ConnSettings::resolve(&format!("{connection} sslmode=disable"), &|_| None)
        .map_err(Error::runtime)?;
    Ok(Some(resolved.settings.tokio_config()))
}

impl Database {
    /// [`Database::connector`] on `side`: the standby's for the replica
    /// (the same database, `search_path` and settings), else the primary's.
    pub fn connector_on(&self, side: Side, role: Role, settings: &[(String, String)]) -> Connector {
        match (side, &self.replica) {
            (Side::Replica, Some(standby)) => {
                let mut config = standby.clone();
                if let Some(dbname) = self.base.get_dbname() {
                    config.dbname(dbname);
                }
                self.connector_with(config, role, settings)
            }
            _ => self.connector(role, settings),
        }
    }

    /// Whether the target has a hot standby.
    pub fn has_replica(&self) -> bool {
        self.replica.is_some()
    }

    /// Waits until the standby has replayed what the primary wrote so far (a
    /// reset's DDL, a trace's); no-op without one.
    pub async fn replica_caught_up(&self) -> Result<(), Error> {
        match &self.server {
            Some(server) if self.replica.is_some() => server
                .standby_caught_up(CATCH_UP_LIMIT)
                .await
                .map_err(Error::Runtime),
            _ => Ok(()),
        }
    }
}
