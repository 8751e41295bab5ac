//! The MariaDB server a run talks to: a throwaway `mariadbd` (the default)
//! or an existing server named by `--db-url mysql://...` or `mariadb://...`
//! (a staging server).
//!
//! On an existing server the harness keeps to a database of its own,
//! `stallbench`, as it keeps to a schema of its own on PostgreSQL: it marks
//! the database it creates (its comment), refuses to start when a database
//! of that name exists without the mark, holds the named lock
//! `stallbench.run` (`GET_LOCK`) for the whole run so that two runs never
//! share it, and drops the database at the end. The password never leaves
//! the connection options: what the run shows of the URL has it replaced by
//! `***`.

use std::path::PathBuf;

use anyhow::Context;
use mysql_async::prelude::Queryable;

use super::scenario::{DATABASE, DATABASE_MARK, create_database};
use super::server::{MariadbServer, find_binaries};
use crate::error::Error;

/// The named lock a run holds on an existing server.
const RUN_LOCK: &str = "stallbench.run";

/// Where a MariaDB run talks to.
pub enum Target {
    /// A throwaway server the harness started.
    Throwaway(MariadbServer),
    /// An existing server: its options (no database), the URL as shown, and
    /// the session that holds the run's lock.
    Existing {
        opts: mysql_async::Opts,
        shown: String,
        lock: Option<mysql_async::Conn>,
    },
}

impl Target {
    /// Connects to `db_url`, else starts a throwaway server with room for
    /// `max_connections` sessions.
    pub async fn open(db_url: Option<&str>, max_connections: u32) -> Result<Target, Error> {
        match db_url {
            Some(url) => Ok(Target::Existing {
                opts: parse_url(url)?,
                shown: shown_url(url),
                lock: None,
            }),
            None => {
                let binaries = find_binaries()?;
                let server = MariadbServer::start(&binaries, max_connections).await?;
                Ok(Target::Throwaway(server))
            }
        }
    }

    /// Connection options for the server, in no database.
    pub fn opts(&self) -> mysql_async::Opts {
        match self {
            Target::Throwaway(server) => server.opts(None),
            Target::Existing { opts, .. } => opts.clone(),
        }
    }

    /// What the run says it talks to: the throwaway server's folder, or the
    /// URL without its password.
    pub fn describe(&self) -> String {
        match self {
            Target::Throwaway(server) => {
                format!("throwaway server in {}", server.folder().display())
            }
            Target::Existing { shown, .. } => shown.clone(),
        }
    }

    /// The throwaway server's error log; `None` for an existing server.
    pub fn log_path(&self) -> Option<PathBuf> {
        match self {
            Target::Throwaway(server) => Some(server.log_path()),
            Target::Existing { .. } => None,
        }
    }

    /// Creates the harness's database (again). On an existing server it
    /// first takes the run's lock and refuses a database of that name that
    /// the harness did not make.
    pub async fn create_database(&mut self) -> Result<(), Error> {
        let opts = self.opts();
        let shown = self.describe();
        let connect = || async {
            mysql_async::Conn::new(opts.clone())
                .await
                .map_err(|err| Error::runtime(format!("{shown}: connecting to MariaDB: {err}")))
        };
        if let Target::Existing { lock, .. } = self {
            let mut conn = connect().await?;
            take_run_lock(&mut conn, &shown).await?;
            refuse_foreign_database(&mut conn, &shown).await?;
            *lock = Some(conn);
        }
        create_database(&opts).await.map_err(|err| {
            Error::runtime(format!(
                "{shown}: creating the {DATABASE} database: {err:#}"
            ))
        })
    }

    /// Drops the harness's database from an existing server and lets its
    /// lock go (a throwaway server goes as a whole when it is dropped).
    pub async fn finish(&mut self) -> anyhow::Result<()> {
        if let Target::Existing { lock, shown, .. } = self
            && let Some(mut conn) = lock.take()
        {
            conn.query_drop(format!("DROP DATABASE IF EXISTS {DATABASE}"))
                .await
                .with_context(|| format!("{shown}: dropping the {DATABASE} database"))?;
            let _ = conn.disconnect().await;
        }
        Ok(())
    }
}

/// Takes the run's named lock on `conn`, or refuses: another run holds it.
async fn take_run_lock(conn: &mut mysql_async::Conn, shown: &str) -> Result<(), Error> {
    let got: Option<Option<i64>> = conn
        .exec_first("SELECT GET_LOCK(?, 0)", (RUN_LOCK,))
        .await
        .map_err(|err| Error::runtime(format!("{shown}: GET_LOCK: {err}")))?;
    match got.flatten() {
        Some(1) => Ok(()),
        _ => Err(Error::runtime(format!(
            "{shown}: another stallbench run holds the lock {RUN_LOCK} on this server; wait for \
             it to end, or point --db-url at another server"
        ))),
    }
}

/// Refuses a `stallbench` database that does not carry the harness's mark;
/// one that does was left by a run that did not finish.
async fn refuse_foreign_database(conn: &mut mysql_async::Conn, shown: &str) -> Result<(), Error> {
    let comment: Option<String> = conn
        .exec_first(
            "SELECT SCHEMA_COMMENT FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
            (DATABASE,),
        )
        .await
        .map_err(|err| {
            Error::runtime(format!("{shown}: looking for a {DATABASE} database: {err}"))
        })?;
    match comment {
        None => Ok(()),
        Some(comment) if comment == DATABASE_MARK => {
            stderrln!("dropped database {DATABASE} left by an earlier run that did not finish");
            Ok(())
        }
        Some(_) => Err(Error::runtime(format!(
            "{shown}: a database named {DATABASE} exists and was not made by stallbench; \
             stallbench works only in its own database and will not touch it. Drop or rename \
             it, or point --db-url at another server"
        ))),
    }
}

/// Whether `url` names a MariaDB or MySQL server (`mysql://`, `mariadb://`).
pub fn is_mariadb_url(url: &str) -> bool {
    url.starts_with("mysql://") || url.starts_with("mariadb://")
}

/// The connection options of `url`; `mariadb://` is read as `mysql://`
/// (mysql_async's URL: `?socket=/path` for a unix socket). The error names
/// the flag and never the password.
pub fn parse_url(url: &str) -> Result<mysql_async::Opts, Error> {
    let as_mysql = match url.strip_prefix("mariadb://") {
        Some(rest) => format!("mysql://{rest}"),
        None => url.to_string(),
    };
    mysql_async::Opts::from_url(&as_mysql).map_err(|err| {
        Error::bad_input(format!(
            "--db-url {}: {err}; write mysql://user:password@host:port/ or \
             mysql://user@localhost/?socket=/path/to/socket",
            shown_url(url)
        ))
    })
}

/// `url` with its password replaced by `***`.
pub fn shown_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    let Some((credentials, host)) = authority.rsplit_once('@') else {
        return url.to_string();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}{path}"),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            shown_url("mysql://app:s3cr:et@db.staging:3306/shop?socket=/x"),
            "mysql://app:***@db.staging:3306/shop?socket=/x"
        );
        assert_eq!(
            shown_url("mariadb://root@localhost/"),
            "mariadb://root@localhost/"
        );
        assert_eq!(shown_url("mysql://db"), "mysql://db");
    }

    #[test]
    fn both_schemes_parse_and_a_bad_url_names_the_flag_without_its_password() {
        let opts = parse_url("mariadb://app:pw@db.staging:3307/").unwrap();
        assert_eq!(opts.ip_or_hostname(), "db.staging");
        assert_eq!(opts.tcp_port(), 3307);
        assert_eq!(opts.user(), Some("app"));
        let socket = parse_url("mysql://root@localhost/?socket=%2Ftmp%2Fm.sock").unwrap();
        assert_eq!(socket.socket(), Some("/tmp/m.sock"));
        assert!(is_mariadb_url("mysql://x") && is_mariadb_url("mariadb://x"));
        assert!(!is_mariadb_url("postgres://x"));
        let err = parse_url("mysql://app:pw@db:notaport/").unwrap_err();
        assert_eq!(err.exit_code(), crate::error::exit_code::BAD_INPUT);
        let text = err.to_string();
        assert!(
            text.starts_with("--db-url mysql://app:***@db:notaport/: "),
            "{text}"
        );
        assert!(!text.contains("pw"), "{text}");
    }
}
