//! The closed sets an option takes, below both the command line and the
//! config: the command line parses them, the config keeps them and the
//! stages read them.

use std::fmt;
use std::str::FromStr;

use clap::ValueEnum;
use serde::Serialize;

/// A migration tool's folder layout (`--layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// Numbered plain SQL files (`0001_init.sql`), also sqlx's simple
    /// migrations and files exported by a framework (Django's `sqlmigrate`).
    Numbered,
    /// `NNN_name.up.sql` beside `NNN_name.down.sql` (golang-migrate, sqlx
    /// reversible migrations); the `.down.sql` files are ignored.
    UpDown,
    /// dbmate: `-- migrate:up` and `-- migrate:down` sections in one file.
    Dbmate,
    /// goose SQL migrations: `-- +goose Up` and `-- +goose Down` sections.
    Goose,
    /// Flyway: `V1__init.sql`, `V1.2__x.sql` in version order, then the
    /// repeatable `R__name.sql` by name; undo files `U1__x.sql` are ignored.
    Flyway,
    /// Prisma: `<timestamp>_name/migration.sql` folders.
    Prisma,
    /// Any `.sql` files, applied in the byte order of their names (only
    /// when chosen with `--layout`: the order is the names' alone).
    PlainSql,
}

impl Layout {
    /// Every layout. (Their names never overlap: a numbered file is not an
    /// up/down file, nor one with dbmate's or goose's section markers.)
    pub const ALL: [Layout; 7] = [
        Layout::Numbered,
        Layout::UpDown,
        Layout::Dbmate,
        Layout::Goose,
        Layout::Flyway,
        Layout::Prisma,
        Layout::PlainSql,
    ];

    /// The name `--layout` takes.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Numbered => "numbered",
            Layout::UpDown => "up-down",
            Layout::Dbmate => "dbmate",
            Layout::Goose => "goose",
            Layout::Flyway => "flyway",
            Layout::Prisma => "prisma",
            Layout::PlainSql => "plain-sql",
        }
    }

    /// A migration's name in this layout, for messages.
    pub fn example(self) -> &'static str {
        match self {
            Layout::Numbered => "0001_init.sql",
            Layout::UpDown => "0001_init.up.sql",
            Layout::Dbmate => "20240101120000_init.sql with -- migrate:up",
            Layout::Goose => "00001_init.sql with -- +goose Up",
            Layout::Flyway => "V1__init.sql",
            Layout::Prisma => "20240101120000_init/migration.sql",
            Layout::PlainSql => "init.sql",
        }
    }

    /// `numbered|up-down|...`, for messages.
    pub fn choices() -> String {
        Layout::ALL.map(Layout::name).join("|")
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Layout {
    type Err = String;

    fn from_str(text: &str) -> Result<Layout, String> {
        Layout::ALL
            .into_iter()
            .find(|layout| layout.name() == text)
            .ok_or_else(|| {
                format!(
                    "--layout {text}: no such layout; give one of {}",
                    Layout::choices()
                )
            })
    }
}

/// How the tool wraps the statements of a file in transactions (`--transaction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum TransactionMode {
    /// Each file in one transaction (what sqlx, dbmate, goose, Flyway and
    /// golang-migrate do).
    #[default]
    PerFile,
    /// Each statement in its own transaction.
    PerStatement,
    /// No transaction: each statement commits on its own (psql -f).
    None,
}

impl TransactionMode {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [TransactionMode; 3] = [
        TransactionMode::PerFile,
        TransactionMode::PerStatement,
        TransactionMode::None,
    ];

    /// The name `--transaction` takes.
    pub fn name(self) -> &'static str {
        match self {
            TransactionMode::PerFile => "per-file",
            TransactionMode::PerStatement => "per-statement",
            TransactionMode::None => "none",
        }
    }
}

impl fmt::Display for TransactionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TransactionMode {
    type Err = String;

    fn from_str(text: &str) -> Result<TransactionMode, String> {
        TransactionMode::ALL
            .into_iter()
            .find(|mode| mode.name() == text)
            .ok_or_else(|| {
                format!("--transaction {text}: no such mode; give per-file, per-statement or none")
            })
    }
}

/// How statements are sent, as pgbench's `-M`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Protocol {
    /// Variables substituted into the text, one Query message.
    Simple,
    /// Parse, Bind, Execute of the unnamed statement each time.
    Extended,
    /// Each statement prepared once per connection, then Bind and Execute.
    #[default]
    Prepared,
}

impl Protocol {
    /// The name `--protocol` takes.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
            Protocol::Prepared => "prepared",
        }
    }

    /// The protocol a workload file names, if any.
    pub fn from_name(name: &str) -> Option<Protocol> {
        Protocol::from_str(name, false).ok()
    }
}

/// How a connection handed back to the pool is checked before its next use
/// (deadpool-postgres' `RecyclingMethod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Recycling {
    /// Only asks whether the connection is closed.
    Fast,
    /// Also runs an empty query on it (a round trip per checkout).
    Verified,
}

impl Recycling {
    /// The flag's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Recycling::Fast => "fast",
            Recycling::Verified => "verified",
        }
    }
}

/// How the blocker holds its transaction open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BlockerKind {
    /// `BEGIN; <sql>; SELECT pg_sleep(hold); COMMIT`: active the whole time.
    Report,
    /// The same, with a write (it holds row locks).
    Writer,
    /// `BEGIN; <sql>`, then idle in transaction for `hold`, then `COMMIT`.
    Idle,
}

impl BlockerKind {
    /// The name in a workload file and in `--blocker-kind`: `report`, `writer`, `idle`.
    pub fn name(self) -> &'static str {
        match self {
            BlockerKind::Report => "report",
            BlockerKind::Writer => "writer",
            BlockerKind::Idle => "idle",
        }
    }
}

/// The long transaction each run puts in the migration's way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BlockerChoice {
    /// A report for a lock that blocks reads, a writer for one that blocks writes.
    Auto,
    Report,
    Writer,
    None,
}
