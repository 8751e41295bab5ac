//! The database a run talks to: a throwaway server or `--db-url`, and the
//! connections of a run (each tagged with its role in `application_name`,
//! each secured as the settings' sslmode says). `--db-url` is resolved by
//! `conninfo` with the process environment; the throwaway server is reached
//! without it.
//!
//! By default every connection has `search_path` set to the harness's own
//! schema, made here and dropped at the end. With `--in-place` the run uses
//! the user's objects instead: no schema, no setup, the connection's own
//! `search_path`, no reset unless `--apply` commits the DDL. Either way the
//! run's tables are those of `current_schemas(false)` on its connections.

use std::path::Path;

use anyhow::Context;
use tokio_postgres::Client;

use crate::config::{self, Config, ConnLimit, ConnectionNeeds, FreeSlots, Objects};
use crate::engine::postgres::conninfo::{ConnSettings, Tls};
use crate::engine::postgres::server::{Server, find_binaries};
use crate::engine::postgres::serverlog::StructuredLog;
use crate::error::Error;
use crate::fingerprint::{self, Fingerprint, ObjectKind};
use crate::results::{REPLICA_SERVER_LOG, SERVER_LOG};
use crate::role::Role;
use crate::strategy::statements::check_rollback;

mod connector;
mod replica;
mod sessions;

use connector::describe_url;
pub use connector::{Connector, UNDEFINED_TABLE_HINT};

/// The harness's own schema; every workload object lives in it unless `--in-place`.
pub const SCHEMA: &str = "stallbench";
/// The comment that marks the schema as the harness's own.
const SCHEMA_MARK: &str = "stallbench: created by stallbench, dropped at the end of its run";

/// An open target: where to connect, and the throwaway server if we started one.
pub struct Database {
    base: tokio_postgres::Config,
    tls: Tls,
    /// The hosts, as a certificate error names them.
    hosts: String,
    /// `application_name` prefix unique to this run: `stallbench-<id>`, after `PGAPPNAME` if set.
    pub session_prefix: String,
    /// How to name the target in output: the URL without password, or "throwaway server".
    pub description: String,
    /// `host:port` (each host with its port) as the run connects to it.
    address: String,
    pub server_version: String,
    /// `server_version_num`, e.g. 150018.
    pub server_version_num: u32,
    /// How long the throwaway server took to start (initdb until it accepted
    /// connections), in seconds; `None` on `--db-url`.
    pub server_start_s: Option<f64>,
    server: Option<Server>,
    /// Where the run's hot standby is reached, if it has one: the throwaway
    /// server's, or the user's (`--replica-url`); the database name is
    /// `base`'s, see [`Database::connector_on`].
    replica: Option<replica::StandbyEndpoint>,
    /// The harness's own schema, or the user's objects (`--in-place`).
    objects: Objects,
    /// `--in-place`: the INVALID indexes there before the run, which are not the run's doing.
    invalid_before: Vec<String>,
    /// The session holding the run's lock on the schema (see [`Database::lock_schema`]), and its pid.
    schema_lock: Option<(Client, i32)>,
    /// The database the target was opened on, where [`Database::use_database`] cannot lead away
    /// the sessions that create and drop databases.
    home_database: String,
}

impl Database {
    /// Starts the throwaway server or checks that `--db-url` answers; with
    /// `--in-place` (and no `--apply`), also that the migration can be rolled
    /// back on this server, before anything runs.
    pub async fn open(config: &Config) -> Result<Database, Error> {
        let needs = config.connection_needs();
        let mut target = Database::connect_first(config, &needs).await?;
        if config.objects.own_schema() {
            target.lock_schema().await?;
        }
        if config.objects.rolls_back_ddl()
            && let Some(ddl) = &config.ddl
        {
            check_rollback(&ddl.steps, &config.strategies, target.server_version_num)?;
        }
        if config.objects.in_place() {
            target.invalid_before = target.invalid_indexes().await?;
            if !config.quiet {
                let ddl = if config.objects.rolls_back_ddl() {
                    "each DDL step is rolled back once it finished (--apply commits)"
                } else {
                    "--apply: each DDL step commits"
                };
                let setup = if config.setup_sql.trim().is_empty() {
                    ""
                } else {
                    " (the workload's setup SQL is not run)"
                };
                let writes = match config.objects.counts_writes() {
                    true => "; --allow-writes: the rows the load writes stay, and are counted",
                    false => "",
                };
                stderrln!(
                    "in place: the run uses the tables on {}: no setup{setup}, no schema of its own; {ddl}{writes}",
                    target.description
                );
            }
        }
        Ok(target)
    }

    /// Starts the throwaway server sized for `needs`, or resolves `--db-url` and
    /// checks that it has `needs` free connection slots; asks the server its version.
    /// Finding the server binaries may download them, with progress unless `quiet`.
    async fn connect_first(config: &Config, needs: &ConnectionNeeds) -> Result<Database, Error> {
        let objects = config.objects;
        needs.ensure_open_files().map_err(Error::runtime)?;
        let (settings, server, description) = match &config.database {
            config::DatabaseSpec::Throwaway { server } => {
                let request = server.clone();
                let quiet = config.quiet;
                let binaries = tokio::task::spawn_blocking(move || find_binaries(&request, quiet))
                    .await
                    .context("finding the server binaries")??;
                let server =
                    replica::start_server(&binaries, needs, config.replica.as_ref()).await?;
                let description = replica::describe(&server);
                // No PG* variable and no password file: the throwaway server is ours alone.
                let resolved = ConnSettings::resolve(
                    &format!("{} sslmode=disable", server.connection_string()),
                    &|_| None,
                )
                .map_err(Error::runtime)?;
                (resolved.settings, Some(server), description)
            }
            config::DatabaseSpec::Url(url) => {
                let resolved = ConnSettings::resolve(url, &|name| std::env::var(name).ok())
                    .map_err(|err| {
                        Error::bad_input(format!("--db-url {}: {err}", redact_url(url)))
                    })?;
                for warning in &resolved.warnings {
                    stderrln!("warning: {warning}");
                }
                let description = describe_url(url, &resolved.settings);
                (resolved.settings, None, description)
            }
        };
        let tls = Tls::new(&settings.ssl)
            .map_err(|err| Error::runtime(format!("{description}: {err}")))?;
        let id = rand::random::<u32>() & 0xff_ffff;
        let session_prefix = match &settings.application_name {
            Some(name) => format!("{name}-stallbench-{id:06x}"),
            None => format!("stallbench-{id:06x}"),
        };
        let mut target = Database {
            base: settings.tokio_config(),
            tls,
            hosts: settings.host_list(),
            address: settings
                .hosts
                .iter()
                .zip(&settings.ports)
                .map(|(host, port)| format!("{host}:{port}"))
                .collect::<Vec<_>>()
                .join(","),
            session_prefix,
            description,
            server_version: String::new(),
            server_version_num: 0,
            server_start_s: server
                .as_ref()
                .map(|server| server.start_duration().as_secs_f64()),
            replica: match (
                &server,
                config.replica.as_ref().and_then(|r| r.url.as_ref()),
            ) {
                (Some(server), _) => replica::throwaway_standby(server)?,
                (None, Some(url)) => Some(replica::users_standby(url)?),
                (None, None) => None,
            },
            server,
            objects,
            invalid_before: Vec::new(),
            schema_lock: None,
            home_database: settings.dbname.clone(),
        };
        let client = target.connect_without_schema(Role::Admin).await?;
        let row = client
            .query_one("SHOW server_version", &[])
            .await
            .context("asking the server for its version")?;
        target.server_version = row.get(0);
        let row = client
            .query_one("SELECT current_setting('server_version_num')::int4", &[])
            .await
            .context("asking the server for its version number")?;
        target.server_version_num = row.get::<_, i32>(0) as u32;
        if target.server.is_none() {
            target.check_free_slots(&client, needs).await?;
            target.check_users_standby().await?;
        }
        Ok(target)
    }

    /// Whether the target is the throwaway server (else `--db-url`).
    pub fn is_throwaway(&self) -> bool {
        self.server.is_some()
    }

    /// The throwaway server's readable log, if we run one.
    pub fn server_log(&self) -> Option<std::path::PathBuf> {
        self.server.as_ref().map(Server::log_path)
    }

    /// The throwaway server's structured log (the lock facts are read from it), if we run one.
    pub fn structured_log(&self) -> Option<StructuredLog> {
        self.server.as_ref().map(Server::structured_log)
    }

    /// The throwaway standby's structured log, if we run one.
    pub fn replica_structured_log(&self) -> Option<StructuredLog> {
        self.server.as_ref()?.standby_structured_log()
    }

    /// A new connection for `role`, with `search_path` set to the harness's schema (unless `--in-place`).
    pub async fn connect(&self, role: Role) -> Result<Client, Error> {
        self.connect_with_settings(role, &[]).await
    }

    /// A new connection for `role` with `search_path` (unless `--in-place`) and
    /// the given `name = value` settings (a strategy's `settings`), sent as startup options.
    pub async fn connect_with_settings(
        &self,
        role: Role,
        settings: &[(String, String)],
    ) -> Result<Client, Error> {
        self.connector(role, settings).connect().await
    }

    /// What [`Database::connect_with_settings`] needs, owned: the load workers
    /// connect on their own runtime, so the connection task runs there too.
    pub fn connector(&self, role: Role, settings: &[(String, String)]) -> Connector {
        self.connector_with(self.base.clone(), role, settings)
    }

    /// [`Database::connector`] of `config` (the primary's or the standby's).
    fn connector_with(
        &self,
        mut config: tokio_postgres::Config,
        role: Role,
        settings: &[(String, String)],
    ) -> Connector {
        let mut options = config.get_options().unwrap_or_default().to_string();
        if self.objects.own_schema() {
            options.push_str(&format!(" -c search_path={SCHEMA}"));
        }
        for (name, value) in settings {
            // Spaces and backslashes in a value are escaped with a backslash (libpq's rule for options).
            let value = value.replace('\\', "\\\\").replace(' ', "\\ ");
            options.push_str(&format!(" -c {name}={value}"));
        }
        if !options.is_empty() {
            config.options(options.trim_start());
        }
        self.connector_from(config, role)
    }

    async fn connect_without_schema(&self, role: Role) -> Result<Client, Error> {
        self.connector_from(self.base.clone(), role).connect().await
    }

    /// The `application_name` of this run's session of `role`: `<session_prefix>-<role>`.
    pub fn application_name(&self, role: Role) -> String {
        format!("{}-{role}", self.session_prefix)
    }

    fn connector_from(&self, mut config: tokio_postgres::Config, role: Role) -> Connector {
        config.application_name(self.application_name(role));
        Connector {
            config,
            tls: self.tls.clone(),
            hosts: self.hosts.clone(),
            role,
            description: self.description.clone(),
            undefined_table_hint: self.undefined_table_hint(),
        }
    }

    /// What an undefined table (42P01) in the workload's SQL needs said on
    /// `--db-url` without `--in-place`: the run's search_path is its own schema,
    /// not the user's; `None` elsewhere.
    pub fn undefined_table_hint(&self) -> Option<&'static str> {
        (self.server.is_none() && self.objects.own_schema()).then_some(UNDEFINED_TABLE_HINT)
    }

    /// Creates the harness's schema, refusing one that is not ours, then runs
    /// the setup SQL, on a session with each load variable as the setting
    /// `stallbench.<name>` (`current_setting('stallbench.scale')`); with
    /// `--in-place` (the objects exist) or on `check`'s database, does nothing.
    pub async fn prepare_schema(
        &self,
        workload_source: &str,
        setup_sql: &str,
        variables: &[(String, String)],
    ) -> Result<(), Error> {
        if !self.objects.own_schema() {
            return Ok(());
        }
        let admin = self.connect_without_schema(Role::Setup).await?;
        let existing = admin
            .query_opt(
                "SELECT coalesce(obj_description(oid, 'pg_namespace'), '') FROM pg_namespace WHERE nspname = $1",
                &[&SCHEMA],
            )
            .await
            .context("looking for an existing stallbench schema")?;
        if let Some(row) = existing {
            let comment: String = row.get(0);
            if comment != SCHEMA_MARK {
                return Err(Error::runtime(format!(
                    "{}: a schema named {SCHEMA} exists and was not made by stallbench; \
                     stallbench works only in its own schema and will not touch it. \
                     Drop or rename it, or point --db-url at another database",
                    self.description
                )));
            }
            // This run holds the schema's lock, so no other run uses it: an earlier one did not finish.
            stderrln!("dropped schema {SCHEMA} left by an earlier run that did not finish");
        }
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; CREATE SCHEMA {SCHEMA}; \
                 COMMENT ON SCHEMA {SCHEMA} IS '{SCHEMA_MARK}'"
            ))
            .await
            .context("creating the stallbench schema")?;
        let setup = self.connect(Role::Setup).await?;
        for (name, value) in variables {
            let setting = format!("stallbench.{name}");
            setup
                .execute("SELECT set_config($1, $2, false)", &[&setting, value])
                .await
                .map_err(|err| {
                    Error::bad_input(format!(
                        "{workload_source}: variable {name} cannot be the setting {setting} \
                         for the setup: {}; name variables with letters, digits and underscores",
                        error_text(&err)
                    ))
                })?;
        }
        setup.batch_execute(setup_sql).await.map_err(|err| {
            Error::bad_input(format!(
                "{workload_source}: setup SQL failed: {}; fix the setup = \"\"\"...\"\"\" statements",
                error_text(&err)
            ))
        })?;
        // As `pgbench -i` does after loading: vacuum and analyze the new
        // tables, so the load reads settled pages (hint bits set, visibility
        // map built) and autovacuum does not wake to do it mid-measurement.
        let tables: Vec<String> = setup
            .query(
                "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relkind IN ('r', 'm') ORDER BY 1",
                &[&SCHEMA],
            )
            .await
            .context("listing the tables the setup made")?
            .iter()
            .map(|row| row.get(0))
            .collect();
        if !tables.is_empty() {
            setup
                .batch_execute(&format!("VACUUM (ANALYZE) {}", tables.join(", ")))
                .await
                .context("vacuuming the tables the setup made")?;
        }
        Ok(())
    }

    /// Runs the workload's reset SQL (undoes the DDL between strategies); not
    /// when the DDL is rolled back, since then the user's objects never changed.
    pub async fn reset(&self, workload_source: &str, reset_sql: &str) -> Result<(), Error> {
        if reset_sql.trim().is_empty() || self.objects.rolls_back_ddl() {
            return Ok(());
        }
        let client = self.connect(Role::Reset).await?;
        client.batch_execute(reset_sql).await.map_err(|err| {
            Error::bad_input(format!(
                "{workload_source}: reset SQL failed: {}; fix reset = \"...\"",
                error_text(&err)
            ))
        })
    }

    /// Indexes of the run's schemas marked INVALID (left by a failed `CREATE
    /// INDEX CONCURRENTLY`); with `--in-place`, those that were not there before.
    pub async fn invalid_indexes(&self) -> Result<Vec<String>, Error> {
        let client = self.connect(Role::Check).await?;
        let rows = client
            .query(
                "SELECT c.relname::text FROM pg_index i \
                 JOIN pg_class c ON c.oid = i.indexrelid \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = ANY (current_schemas(false)) AND NOT i.indisvalid ORDER BY 1",
                &[],
            )
            .await
            .context("looking for invalid indexes")?;
        Ok(rows
            .iter()
            .map(|row| row.get(0))
            .filter(|index| !self.invalid_before.contains(index))
            .collect())
    }

    /// Drops the harness's schema (on a real server, leaves nothing behind);
    /// with `--in-place` or on `check`'s database there is none, and nothing is dropped.
    pub async fn drop_schema(&self) -> Result<(), Error> {
        if !self.objects.own_schema() {
            return Ok(());
        }
        let admin = self.connect_without_schema(Role::Cleanup).await?;
        admin
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
            .await
            .context("dropping the stallbench schema")?;
        Ok(())
    }

    /// Takes the run's lock on its schema, so that two runs against one
    /// database never use the schema at once: a session-level advisory lock
    /// on a connection held until the target is dropped. A run killed with
    /// `kill -9` loses its session, hence its lock. Not granted: another run
    /// holds it, which the error names (exit 1).
    async fn lock_schema(&mut self) -> Result<(), Error> {
        let client = self.connect_without_schema(Role::SchemaLock).await?;
        let key = format!("stallbench schema {SCHEMA}");
        let row = client
            .query_one(
                "SELECT pg_try_advisory_lock(hashtextextended($1, 0)), pg_backend_pid()",
                &[&key],
            )
            .await
            .context("taking the lock on the stallbench schema")?;
        if row.get::<_, bool>(0) {
            self.schema_lock = Some((client, row.get(1)));
            return Ok(());
        }
        // The holder, as far as this role may see it (pg_read_all_stats shows other roles' start).
        let holder = client
            .query_opt(
                "SELECT coalesce(a.application_name, ''), l.pid, \
                 coalesce(to_char(a.backend_start, 'YYYY-MM-DD HH24:MI:SS TZ'), 'an unknown time') \
                 FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
                 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
                 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                 AND (l.classid::int8 << 32 | l.objid::int8) = hashtextextended($1, 0) LIMIT 1",
                &[&key],
            )
            .await
            .context("looking for the run that holds the stallbench schema")?;
        let holder = match holder {
            Some(row) => format!(
                " (application_name {}, pid {}, started at {})",
                row.get::<_, String>(0),
                row.get::<_, i32>(1),
                row.get::<_, String>(2)
            ),
            None => String::new(),
        };
        let name = match self.server {
            Some(_) => self.description.clone(),
            None => format!("--db-url {}", self.description),
        };
        Err(Error::runtime(format!(
            "{name}: another stallbench run is using schema {SCHEMA} on this server{holder}; \
             wait for it to end, or run against another database"
        )))
    }

    /// Points every later connection at `database` on the same server (the
    /// copies `check` measures each strategy on); the schema lock stays where it was taken.
    pub fn use_database(&mut self, database: &str) {
        self.base.dbname(database);
    }

    /// Runs `sql` (`CREATE DATABASE`, `DROP DATABASE`) from a session of the
    /// database the target was opened on, which no copy is made from.
    pub async fn run_on_home_database(&self, sql: &str) -> Result<(), Error> {
        let mut config = self.base.clone();
        config.dbname(&self.home_database);
        let admin = self.connector_from(config, Role::Admin).connect().await?;
        admin
            .batch_execute(sql)
            .await
            .map_err(|err| Error::runtime(format!("{sql}: {}", error_text(&err))))
    }

    /// Copies the throwaway server's log to `dir/server.log`, and its
    /// standby's to `dir/replica-server.log`; no-op on `--db-url`.
    pub fn copy_server_log(&self, dir: &Path) -> Result<(), Error> {
        let standby_log = self.server.as_ref().and_then(Server::standby_log_path);
        let logs = [
            (self.server_log(), SERVER_LOG),
            (standby_log, REPLICA_SERVER_LOG),
        ];
        for (log, name) in logs {
            if let Some(log) = log {
                let to = dir.join(name);
                std::fs::copy(&log, &to)
                    .with_context(|| format!("copying the server log to {}", to.display()))?;
            }
        }
        Ok(())
    }

    /// Resolves once the throwaway server has died, with the error to end the run; never on `--db-url`.
    pub async fn server_died(&self) -> Error {
        match &self.server {
            Some(server) => Error::Runtime(server.exited().await),
            None => std::future::pending().await,
        }
    }

    /// Refuses a run that needs more connections than the real server has
    /// free, before any is opened; `client` is the run's admin session.
    async fn check_free_slots(
        &self,
        client: &Client,
        needs: &ConnectionNeeds,
    ) -> Result<(), Error> {
        // Without pg_read_all_stats another role's sessions show no backend_type:
        // a session with a database and a user is taken for a client.
        let row = client
            .query_one(
                "SELECT current_setting('max_connections')::int8, \
                   current_setting('superuser_reserved_connections')::int8 \
                     + coalesce(current_setting('reserved_connections', true)::int8, 0), \
                   (SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() \
                     AND (backend_type = 'client backend' OR (backend_type IS NULL \
                       AND datid IS NOT NULL AND usesysid IS NOT NULL))), \
                   r.rolname::text, CASE WHEN r.rolsuper THEN -1 ELSE r.rolconnlimit END::int8, \
                   (SELECT count(*) FROM pg_stat_activity \
                     WHERE usesysid = r.oid AND pid <> pg_backend_pid()), \
                   d.datname::text, CASE WHEN r.rolsuper THEN -1 ELSE d.datconnlimit END::int8, \
                   (SELECT count(*) FROM pg_stat_activity \
                     WHERE datid = d.oid AND pid <> pg_backend_pid()) \
                 FROM pg_roles r, pg_database d \
                 WHERE r.rolname = current_user AND d.datname = current_database()",
                &[],
            )
            .await
            .context("counting the server's free connection slots")?;
        // A limit of -1 is none (and superusers are exempt from both).
        let limit = |name: usize, limit: usize, in_use: usize| {
            Some(ConnLimit {
                name: row.get(name),
                limit: row.get(limit),
                in_use: row.get(in_use),
            })
            .filter(|limit| limit.limit >= 0)
        };
        let slots = FreeSlots {
            max_connections: row.get(0),
            reserved: row.get(1),
            in_use: row.get(2),
            role: limit(3, 4, 5),
            database: limit(6, 7, 8),
        };
        match slots.shortage(needs) {
            Some(shortage) => Err(Error::runtime(format!(
                "--db-url {}: {shortage}",
                self.description
            ))),
            None => Ok(()),
        }
    }

    /// The columns, constraints and indexes of the tables in `schema` and of
    /// those named in `tables`, from the catalogs.
    pub async fn fingerprint(&self, schema: &str, tables: &[String]) -> Result<Fingerprint, Error> {
        let client = self.connect(Role::Check).await?;
        let rows = client
            .query(fingerprint::FINGERPRINT_SQL, &[&schema, &tables])
            .await
            .context("reading the workload's tables from the catalogs")?;
        let mut found = Fingerprint::default();
        for row in rows {
            let kind: String = row.get(1);
            let kind = ObjectKind::from_name(&kind)
                .with_context(|| format!("the catalog query named an unknown kind {kind}"))?;
            found
                .objects
                .insert((row.get(0), kind, row.get(2)), row.get(3));
        }
        Ok(found)
    }
}

/// The server's message (and SQLSTATE) of a database error, else the error itself.
pub fn error_text(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => match std::error::Error::source(err) {
            Some(source) => format!("{err}: {source}"),
            None => err.to_string(),
        },
    }
}

/// The connection string with its password replaced by `***`
/// (URL form `postgres://user:secret@host` and key-value form `password=secret`).
pub fn redact_url(url: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        if let Some(at) = rest[..authority_end].rfind('@')
            && let Some(colon) = rest[..at].find(':')
        {
            return format!(
                "{}{}:***{}",
                &url[..scheme_end + 3],
                &rest[..colon],
                &rest[at..]
            );
        }
        return redact_password_param(url);
    }
    redact_password_param(url)
}

/// Replaces the value of `password=...` (query parameter or key-value pair).
fn redact_password_param(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(index) = rest.find("password=") {
        let value_start = index + "password=".len();
        out.push_str(&rest[..value_start]);
        out.push_str("***");
        let after = &rest[value_start..];
        let value_end = after.find([' ', '&']).unwrap_or(after.len());
        rest = &after[value_end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_in_every_form() {
        assert_eq!(
            redact_url("postgres://app:s3cret@db.example:5432/shop"),
            "postgres://app:***@db.example:5432/shop"
        );
        assert_eq!(
            redact_url("postgresql://app@db/shop?password=s3cret&sslmode=disable"),
            "postgresql://app@db/shop?password=***&sslmode=disable"
        );
        assert_eq!(
            redact_url("host=db user=app password=s3cret dbname=shop"),
            "host=db user=app password=*** dbname=shop"
        );
        assert_eq!(
            redact_url("postgres://app@db/shop"),
            "postgres://app@db/shop"
        );
    }
}
