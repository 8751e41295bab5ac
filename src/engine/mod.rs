//! The database engines a run can talk to, and what a run needs of each.
//!
//! PostgreSQL, the engine of every command, lives in [`postgres`]; MariaDB in
//! [`mariadb`]. Nothing outside `engine/postgres/` names tokio-postgres,
//! deadpool-postgres, tokio-postgres's SQLSTATE type or PostgreSQL's lock and
//! session views and functions (a test below holds that line). Both are
//! written against the neutral types of this module:
//!
//! - [`Engine`]: which engine a run uses (`--engine`);
//! - [`ErrorCode`], [`ServerError`] and [`ErrorClass`]: a server's error as a
//!   neutral code and class, so that "was this a lock timeout" is asked in one
//!   way everywhere;
//! - [`DdlDialect`]: the statements a DDL strategy needs of an engine (a try
//!   bounded by a lock timeout, ending a session).
//!
//! What each engine records is neutral data: per-second figures
//! (`metrics::recorder`), failures by kind (`metrics::failures`, holding an
//! [`ErrorCode`]), DDL attempts (`metrics::DdlAttempt`) and lock samples
//! (`metrics::locks::LockSample`); each engine's run returns a
//! `scenario::Measured` on a `scenario::RunClock`, and
//! `scenario::assemble_report` makes the report of either.

pub mod mariadb;
pub mod postgres;

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
    /// The statement was cancelled: by another session or a statement
    /// timeout (PostgreSQL 57014; MariaDB 1317, 1969).
    Cancelled,
    /// The session was ended by someone else (PostgreSQL's class 57 but
    /// 57014: a shutdown, a terminated backend, a dropped database, an idle
    /// session's timeout; 25P03 and 25P04, a transaction's timeouts), or
    /// the connection broke (class 08).
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
            ErrorClass::Cancelled => "cancelled",
            ErrorClass::ConnectionLost => "connection_lost",
            ErrorClass::Other => "other",
        }
    }

    /// The class of an engine's own error code as a `sqlstate` cell of the
    /// results holds it: a PostgreSQL SQLSTATE (five characters) or a
    /// MariaDB error number (four digits, see [`mariadb::errors`]). The
    /// per-second counts (`failed_serialization`, `failed_deadlock`,
    /// `failed_lock_timeout`) are made from this, for both engines.
    pub fn of_code(code: &str) -> ErrorClass {
        if let Some(class) = mariadb::errors::class_of_cell(code) {
            return class;
        }
        match code {
            "40001" => ErrorClass::Serialization,
            "40P01" => ErrorClass::Deadlock,
            "55P03" => ErrorClass::LockTimeout,
            "57014" => ErrorClass::Cancelled,
            code if code.starts_with("57") => ErrorClass::ConnectionLost,
            // idle_in_transaction_session_timeout, transaction_timeout: FATAL.
            "25P03" | "25P04" => ErrorClass::ConnectionLost,
            code if code.starts_with("08") => ErrorClass::ConnectionLost,
            _ => ErrorClass::Other,
        }
    }
}

/// An engine's own error code as neutral data: a PostgreSQL SQLSTATE
/// (`55P03`) or a MariaDB error number (`1205`), as the `sqlstate` column
/// of the results holds it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(String);

impl ErrorCode {
    /// The code `code` names, as the server sent it.
    pub fn new(code: impl Into<String>) -> ErrorCode {
        ErrorCode(code.into())
    }

    /// The code as the server sent it: `40P01`, `1213`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// What kind of failure the code is, whichever engine sent it.
    pub fn class(&self) -> ErrorClass {
        ErrorClass::of_code(&self.0)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `.rs` file under `dir`, recursively.
    fn rust_files(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                rust_files(&path, files);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }

    #[test]
    fn only_engine_postgres_speaks_postgresql() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let postgres = src.join("engine").join("postgres");
        // Spelt in two halves, so that this file does not name them itself.
        let words = [
            concat!("tokio", "_postgres"),
            concat!("deadpool", "_postgres"),
            concat!("Sql", "State"),
            concat!("pg", "_locks"),
            concat!("pg", "_stat_activity"),
            concat!("pg", "_sleep"),
            concat!("pg", "_terminate_backend"),
            concat!("pg", "_blocking_pids"),
        ];
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut crossings = Vec::new();
        for file in files.iter().filter(|file| !file.starts_with(&postgres)) {
            let text = std::fs::read_to_string(file).expect("a source file");
            for word in words.iter().filter(|word| text.contains(*word)) {
                crossings.push(format!("{}: {word}", file.display()));
            }
        }
        assert!(
            crossings.is_empty(),
            "PostgreSQL's names outside src/engine/postgres/ (move the code there, or \
             say it in the engine's neutral terms):\n{}",
            crossings.join("\n")
        );
    }

    #[test]
    fn both_engines_codes_fall_into_the_same_classes() {
        let cases = [
            ("40001", ErrorClass::Serialization),
            ("1020", ErrorClass::Serialization),
            ("40P01", ErrorClass::Deadlock),
            ("1213", ErrorClass::Deadlock),
            ("55P03", ErrorClass::LockTimeout),
            ("1205", ErrorClass::LockTimeout),
            ("57014", ErrorClass::Cancelled),
            ("1317", ErrorClass::Cancelled),
            ("57P01", ErrorClass::ConnectionLost),
            ("57P05", ErrorClass::ConnectionLost),
            ("25P03", ErrorClass::ConnectionLost),
            ("08006", ErrorClass::ConnectionLost),
            ("1927", ErrorClass::ConnectionLost),
            ("42703", ErrorClass::Other),
            ("1054", ErrorClass::Other),
            ("timeout", ErrorClass::Other),
        ];
        for (code, class) in cases {
            assert_eq!(ErrorClass::of_code(code), class, "{code}");
        }
    }
}
