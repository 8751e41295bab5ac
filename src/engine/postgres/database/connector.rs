//! One connection of a run, before it is opened: its settings, its role, and
//! how an error names it (the target, the user, the session); the lean load
//! connection and the application pool open it the same way.

use std::fmt;

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::engine::postgres::conninfo::{ConnSettings, SslMode, Tls, certificate_failure};
use crate::engine::postgres::pgwire::WireConnection;
use crate::error::Error;
use crate::role::Role;

use super::{error_text, redact_url};

/// Said after an undefined table's error on `--db-url` without `--in-place`.
pub const UNDEFINED_TABLE_HINT: &str = "on --db-url the run's tables live in schema stallbench \
     (its search_path), made by the workload's setup; to run against your own tables, add --in-place";

/// One connection to open: its settings, its role and how to name the target in an error.
#[derive(Clone)]
pub struct Connector {
    pub(super) config: tokio_postgres::Config,
    pub(super) tls: Tls,
    pub(super) hosts: String,
    pub(super) role: Role,
    pub(super) description: String,
    /// See [`Database::undefined_table_hint`].
    pub(super) undefined_table_hint: Option<&'static str>,
}

impl Connector {
    /// Connects and spawns the connection task on the current runtime.
    pub async fn connect(self) -> Result<Client, Error> {
        self.tls.connect(&self.config).await.map_err(|err| {
            if let Some(message) = certificate_failure(&self.hosts, &err) {
                return Error::runtime(message);
            }
            let mut text = error_text(&err);
            // 28000: no pg_hba.conf line lets this connection in.
            if self.tls.mode() == SslMode::Disable
                && err
                    .as_db_error()
                    .is_some_and(|db| *db.code() == SqlState::INVALID_AUTHORIZATION_SPECIFICATION)
            {
                text.push_str(
                    "; the server may accept only TLS connections: drop sslmode=disable \
                     (prefer is the default) or use sslmode=require",
                );
            }
            Error::runtime(format!("cannot connect to {}: {text}", self.describe()))
        })
    }

    /// Connects a load worker's lean connection (see [`WireConnection`]).
    pub async fn connect_wire(self) -> Result<WireConnection, Error> {
        WireConnection::connect(&self.config, &self.tls)
            .await
            .map_err(|err| Error::runtime(format!("cannot connect to {}: {err}", self.describe())))
    }
}

impl Connector {
    /// A deadpool-postgres manager that opens this connection, with the same
    /// TLS and settings, for the application pool; `recycling` checks a
    /// returned connection before its next use.
    pub fn pool_manager(
        self,
        recycling: deadpool_postgres::RecyclingMethod,
    ) -> deadpool_postgres::Manager {
        let manager_config = deadpool_postgres::ManagerConfig {
            recycling_method: recycling,
        };
        deadpool_postgres::Manager::from_connect(
            self.config,
            PoolConnect { tls: self.tls },
            manager_config,
        )
    }

    /// The TLS connector of this connection, for a cancel request sent as the
    /// connection was opened (with TLS when it is).
    pub fn cancel_tls(&self) -> tokio_postgres_rustls::MakeRustlsConnect {
        tokio_postgres_rustls::MakeRustlsConnect::new((*self.tls.client_config()).clone())
    }

    /// The server's message `text` (of SQLSTATE `code`) for a statement it
    /// rejected on this connection, with [`UNDEFINED_TABLE_HINT`] after an
    /// undefined table where the hint applies.
    pub fn rejection(&self, text: impl fmt::Display, code: Option<&SqlState>) -> String {
        match (self.undefined_table_hint, code) {
            (Some(hint), Some(code)) if *code == SqlState::UNDEFINED_TABLE => {
                format!("{text}; {hint}")
            }
            _ => text.to_string(),
        }
    }

    /// Who the connection is for and where it goes, for an error message:
    /// the target, the database user it logs in as, and which of the run's
    /// sessions it is (`admin` is a session of stallbench, not a role).
    pub fn describe(&self) -> String {
        describe_connection(&self.description, self.config.get_user(), self.role)
    }
}

/// How the application pool opens a connection: as [`Connector::connect`] does.
struct PoolConnect {
    tls: Tls,
}

impl deadpool_postgres::Connect for PoolConnect {
    fn connect(
        &self,
        pg_config: &tokio_postgres::Config,
    ) -> futures_util::future::BoxFuture<
        '_,
        Result<(Client, tokio::task::JoinHandle<()>), tokio_postgres::Error>,
    > {
        let config = pg_config.clone();
        Box::pin(async move { self.tls.connect_task(&config).await })
    }
}

/// How to name a `--db-url` target in output: the string without its
/// password, or, when the environment gave everything, what it resolved to.
pub(super) fn describe_url(url: &str, settings: &ConnSettings) -> String {
    let bare = url.trim().trim_end_matches('/');
    if !bare.is_empty() && bare != "postgres:" && bare != "postgresql:" {
        return redact_url(url);
    }
    let ports: Vec<String> = settings.ports.iter().map(u16::to_string).collect();
    format!(
        "postgres://{}@{}:{}/{} (from the environment)",
        settings.user,
        settings.host_list(),
        ports.join(","),
        settings.dbname
    )
}

/// `<target> as user <user> (stallbench's <role> session)`; without a user
/// (the driver's default), only the session.
fn describe_connection(description: &str, user: Option<&str>, role: Role) -> String {
    match user {
        Some(user) => format!("{description} as user {user} (stallbench's {role} session)"),
        None => format!("{description} (stallbench's {role} session)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_connection_names_the_user_and_the_session_apart() {
        let text = describe_connection("postgres://app@db/shop", Some("app"), Role::Admin);
        assert_eq!(
            text,
            "postgres://app@db/shop as user app (stallbench's admin session)"
        );
        assert!(!text.contains("as admin"), "{text}");
    }

    #[test]
    fn a_url_from_the_environment_is_named_by_what_it_resolved_to() {
        let env = |name: &str| match name {
            "PGHOST" => Some("db.example".to_string()),
            "PGUSER" => Some("app".to_string()),
            "PGPASSWORD" => Some("s3cret".to_string()),
            _ => None,
        };
        let settings = ConnSettings::resolve("postgres://", &env).unwrap().settings;
        let description = describe_url("postgres://", &settings);
        assert_eq!(
            description,
            "postgres://app@db.example:5432/app (from the environment)"
        );
        let settings = ConnSettings::resolve("postgres://app:s3cret@h/db", &env)
            .unwrap()
            .settings;
        assert_eq!(
            describe_url("postgres://app:s3cret@h/db", &settings),
            "postgres://app:***@h/db"
        );
    }
}
