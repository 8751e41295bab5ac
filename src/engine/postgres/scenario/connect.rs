//! The first phase of a run: every session is open, and every load statement
//! prepared, before the clock starts, so that connecting never shows in the
//! timeline as a slow first second. The sessions held for the whole run keep
//! what it takes to open them again ([`HeldSession`]).

use std::sync::Arc;

use tokio_postgres::Client;

use super::load;
use super::pool::PoolApp;
use super::reopen::HeldSession;
use crate::choices::{LoadOn, Side};
use crate::config::{Config, ReplicaConfig};
use crate::engine::postgres::database::Database;
use crate::error::Error;
use crate::role::{ClientKind, Role};
use crate::scenario::runtime::LoadRuntime;
use crate::strategy::NamedStrategy;

/// The open sessions of one run, each for the task that will own it.
pub struct Sessions {
    /// One per client, connected and prepared on the load runtime; none with the application pool.
    pub workers: Vec<load::Worker>,
    /// The replica's clients when the load runs on both servers (`workers`
    /// are then the primary's); empty otherwise.
    pub replica_workers: Vec<load::Worker>,
    /// The application pool (`--rate` with `--pool-size`), its connections open, on the load runtime.
    pub pool: Option<PoolApp>,
    /// The lock observer's session, when locks are observed.
    pub observer: Option<HeldSession>,
    /// The blocker's session (the report), when the workload has a blocker.
    pub blocker: Option<Client>,
    /// The DDL injector's session, when the workload has a migration.
    pub ddl: Option<HeldSession>,
    /// The second session `kill-blockers` terminates blockers from.
    pub killer: Option<HeldSession>,
    /// The session on the replica `replica-aware` looks at before each try.
    pub replica_watch: Option<HeldSession>,
    /// The replica observer's session on the standby, when locks are observed
    /// and the run has a standby.
    pub replica_observer: Option<Client>,
}

/// Opens every session the run needs, load workers first.
pub async fn connect_sessions(
    target: &Database,
    config: &Config,
    strategy: &NamedStrategy,
    seed: u64,
    load_runtime: &LoadRuntime,
) -> Result<Sessions, Error> {
    let load_on = ReplicaConfig::load_on(config.replica.as_ref());
    let (workers, pool) = match &config.load.pool {
        None => (
            connect_workers(
                target,
                load_on.main_side(),
                config,
                strategy,
                seed,
                load_runtime,
            )
            .await?,
            None,
        ),
        Some(settings) => {
            let role = Role::Pool(client_kind(config));
            let connector = target.connector_on(load_on.main_side(), role, &strategy.settings);
            let opening = PoolApp::open(connector, settings.clone(), config.load.clone(), seed);
            let pool = load_runtime
                .spawn(opening)
                .await
                .map_err(|err| Error::runtime(format!("opening the connection pool: {err}")))??;
            (Vec::new(), Some(pool))
        }
    };
    let replica_workers = match load_on {
        LoadOn::Both => {
            connect_workers(target, Side::Replica, config, strategy, seed, load_runtime).await?
        }
        LoadOn::Primary | LoadOn::Replica => Vec::new(),
    };
    let observer = match config.observe_locks {
        true => Some(HeldSession::open(target.connector(Role::Observer, &[])).await?),
        false => None,
    };
    let blocker = match &config.blocker {
        Some(blocker) => {
            let side = ReplicaConfig::blocker_on(config.replica.as_ref());
            let connector =
                target.connector_on(side, Role::Blocker(blocker.kind), &strategy.settings);
            Some(connector.connect().await?)
        }
        None => None,
    };
    let ddl = match &config.ddl {
        Some(_) => {
            let settings = ddl_settings(target.server_version_num, &strategy.settings);
            Some(HeldSession::open(target.connector(Role::Ddl, &settings)).await?)
        }
        None => None,
    };
    let killer = match &config.ddl {
        Some(_) if strategy.strategy.needs_killer() => {
            Some(HeldSession::open(target.connector(Role::Killer, &[])).await?)
        }
        _ => None,
    };
    let replica_watch = match &config.ddl {
        Some(_) if strategy.strategy.watches_replica() && target.has_replica() => {
            let connector = target.connector_on(Side::Replica, Role::ReplicaWatch, &[]);
            Some(HeldSession::open(connector).await?)
        }
        _ => None,
    };
    let replica_observer = match config.observe_locks && target.has_replica() {
        true => {
            let connector = target.connector_on(Side::Replica, Role::ReplicaObserver, &[]);
            Some(connector.connect().await?)
        }
        false => None,
    };
    Ok(Sessions {
        workers,
        replica_workers,
        pool,
        observer,
        blocker,
        ddl,
        killer,
        replica_watch,
        replica_observer,
    })
}

/// Connects the load workers on `side` one after another and prepares their
/// statements, on the load runtime so that their sockets belong to its I/O
/// driver. The replica's clients run the load's scripts that only read (all
/// of them when the whole load is on the replica, as the config checked).
async fn connect_workers(
    target: &Database,
    side: Side,
    config: &Config,
    strategy: &NamedStrategy,
    seed: u64,
    load_runtime: &LoadRuntime,
) -> Result<Vec<load::Worker>, Error> {
    let (scripts, kind) = match side {
        Side::Primary => (config.load.scripts.clone(), client_kind(config)),
        Side::Replica => (
            (config.load.scripts.iter())
                .filter(|weighted| ClientKind::of_scripts([&weighted.script]) == ClientKind::Reader)
                .cloned()
                .collect(),
            ClientKind::Reader,
        ),
    };
    let scripts = Arc::new(scripts);
    let variables = Arc::new(config.load.variables.clone());
    let mut workers = Vec::with_capacity(config.load.clients as usize);
    let protocol = config.load.protocol;
    // The replica's clients beside the primary's draw their own numbers.
    let seed = match side {
        Side::Primary => seed,
        Side::Replica => seed ^ REPLICA_CLIENTS_SEED,
    };
    let seeds = crate::script::RandomSeeds::new(seed, config.load.clients);
    for client_id in 0..config.load.clients {
        let role = Role::Client(kind, client_id + 1);
        let connector = target.connector_on(side, role, &strategy.settings);
        let first = connector.clone();
        let to_prepare = scripts.clone();
        let connected = load_runtime.spawn(async move {
            let mut connection = first.clone().connect_wire().await?;
            let prepared = load::prepare(&mut connection, &first, &to_prepare, protocol).await?;
            Ok::<_, Error>((connection, prepared))
        });
        let (connection, prepared) = connected
            .await
            .map_err(|err| Error::runtime(format!("connecting a load worker: {err}")))??;
        workers.push(load::Worker {
            cancel: load::WorkerCancel::new(connection.cancel_handle()),
            connection,
            connector,
            client_id,
            scripts: scripts.clone(),
            prepared,
            variables: variables.clone(),
            seed,
            random: seeds.client(client_id),
            protocol,
            client_timeout: config.load.client_timeout,
            latency_limit: config.load.latency_limit,
            retry: retry_rule(&config.load),
        });
    }
    Ok(workers)
}

/// pgbench's retry rule as the load's settings give it.
pub(super) fn retry_rule(load: &crate::config::LoadConfig) -> crate::scenario::txn::RetryRule {
    crate::scenario::txn::RetryRule {
        max_tries: load.max_tries,
        latency_limit: load.latency_limit,
        lock_timeouts: load.retry_lock_timeouts,
    }
}

/// Mixed into the run's seed for the replica's clients (a load on both servers).
const REPLICA_CLIENTS_SEED: u64 = 0x5eed_7e91_1ca0;

/// How often the DDL's backend checks that the harness is still there while
/// it runs or waits for a lock (`client_connection_check_interval`, 14+).
const DDL_CONNECTION_CHECK_MS: u32 = 1000;

/// The DDL session's settings: the strategy's, and on PostgreSQL 14+ a check
/// of the client's connection, so that a DDL queued behind the report of a
/// harness that died without a word (`kill -9`) ends within a second instead
/// of getting its lock once the report ends, and committing.
fn ddl_settings(
    server_version_num: u32,
    strategy_settings: &[(String, String)],
) -> Vec<(String, String)> {
    let mut settings = strategy_settings.to_vec();
    if server_version_num >= 140000 {
        settings.push((
            "client_connection_check_interval".to_string(),
            DDL_CONNECTION_CHECK_MS.to_string(),
        ));
    }
    settings
}

/// What the load's clients are called: `reader` when every script only reads.
fn client_kind(config: &Config) -> ClientKind {
    ClientKind::of_scripts(config.load.scripts.iter().map(|weighted| &weighted.script))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ddl_session_checks_its_client_from_postgresql_14() {
        let strategy = [("lock_timeout".to_string(), "1s".to_string())];
        assert_eq!(ddl_settings(130_018, &strategy), strategy);
        assert_eq!(
            ddl_settings(140_011, &strategy),
            [
                strategy[0].clone(),
                (
                    "client_connection_check_interval".to_string(),
                    "1000".to_string()
                )
            ]
        );
    }
}
