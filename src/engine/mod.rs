//! The database engines a run can talk to, and what a run needs of each.
//!
//! PostgreSQL is the engine every command runs on today; its code still lives
//! in `server/`, `database/`, `scenario/` and `pgwire/` (its move under
//! `engine/postgres/` is the next step, see docs/mariadb.md). MariaDB lives
//! in [`mariadb`], written against the neutral types of this module:
//!
//! - [`Engine`]: which engine a run uses (`--engine`);
//! - [`ServerError`] and [`ErrorClass`]: a server's error as a neutral code and
//!   class, so that "was this a lock timeout" is asked in one way everywhere;
//! - [`DdlDialect`]: the statements a DDL strategy needs of an engine (a try
//!   bounded by a lock timeout, ending a session).
//!
//! What each engine records is already neutral data: per-second figures
//! (`metrics::recorder`), DDL attempts (`metrics::DdlAttempt`) and lock
//! samples (`metrics::locks::LockSample`).

pub mod mariadb;

use std::fmt;
use std::time::Duration;

/// The database engine of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Engine {
    /// PostgreSQL: every command.
    #[default]
    Postgres,
    /// MariaDB (10.6 and later): `compare` of the bundled `mariadb-*` workloads.
    Mariadb,
}

impl Engine {
    /// The engine's name as `--engine` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Postgres => "postgres",
            Engine::Mariadb => "mariadb",
        }
    }

    /// The engine a workload file's `engine` key names.
    pub fn from_word(word: &str) -> Option<Engine> {
        match word {
            "postgres" | "postgresql" => Some(Engine::Postgres),
            "mariadb" | "mysql" => Some(Engine::Mariadb),
            _ => None,
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What kind of failure a server error is, whatever the engine calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorClass {
    /// The statement gave up waiting for a lock (PostgreSQL 55P03, MariaDB 1205).
    LockTimeout,
    /// The server broke a deadlock by failing this statement (40P01, 1213).
    Deadlock,
    /// A serialization failure (40001).
    Serialization,
    /// The session was ended by someone else, or the connection broke.
    ConnectionLost,
    /// Any other error.
    Other,
}

impl ErrorClass {
    /// The class's word in files and messages.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::LockTimeout => "lock_timeout",
            ErrorClass::Deadlock => "deadlock",
            ErrorClass::Serialization => "serialization",
            ErrorClass::ConnectionLost => "connection_lost",
            ErrorClass::Other => "other",
        }
    }
}

/// An error a server answered with, as neutral data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    /// The engine's own code: a SQLSTATE for PostgreSQL, the error number for MariaDB (`1205`).
    pub code: String,
    /// The SQLSTATE the server sent beside it (MariaDB sends one too, often `HY000`).
    pub sqlstate: String,
    /// The server's message.
    pub message: String,
    /// What kind of failure it is.
    pub class: ErrorClass,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// The statements a DDL strategy needs of an engine.
pub trait DdlDialect {
    /// The statements that run `ddl` once, giving up after waiting
    /// `lock_timeout` for its lock; `None` waits as long as the server's own default.
    fn bounded_try(&self, ddl: &str, lock_timeout: Option<Duration>) -> Vec<String>;
    /// The statement that ends session `session_id` (its transaction rolled back).
    fn end_session(&self, session_id: u64) -> String;
    /// Whether `error` is the lock wait running out (the try may be retried).
    fn is_lock_timeout(&self, error: &ServerError) -> bool {
        error.class == ErrorClass::LockTimeout
    }
}
