//! The closed sets an option takes, below both the command line and the
//! config: the command line parses them, the config keeps them and the
//! stages read them. clap's `ValueEnum` reads a flag's word, [`from_word`]
//! a workload file's, so both take the same words.

use std::fmt;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// A workload file's word for a closed set (`[blocker] kind = "idle"`), read
/// as the flag of the same set reads it; the error names the key, the word
/// and the words it takes. `key` is the file and key, as messages name it.
pub fn from_word<T: ValueEnum>(key: &str, word: &str) -> Result<T, Error> {
    T::from_str(word, false).map_err(|_| {
        let words: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|value| Some(value.to_possible_value()?.get_name().to_string()))
            .collect();
        Error::bad_input(format!(
            "{key} = \"{word}\"; use one of {}",
            words.join(", ")
        ))
    })
}

/// Which server a party of the run talks to (`[load] on`, `[blocker] on`,
/// `--load-on`, `--blocker-on`); the DDL always runs on the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// The server the migration runs on.
    #[default]
    Primary,
    /// The hot standby beside it (`--replica`, `[replica]`), read-only.
    Replica,
}

impl Side {
    /// `primary` or `replica`, as the files and flags write it.
    pub fn name(self) -> &'static str {
        match self {
            Side::Primary => "primary",
            Side::Replica => "replica",
        }
    }
}

/// Which servers the load's clients run on (`[load] on`, `--load-on`).
/// With `both`, each server gets `clients` clients of the same scripts: the
/// timeline's load columns are the primary's, its `replica_tps` columns the
/// replica's.
/// How the load's clients pace their transactions, which decides what its
/// latency percentiles can show of a stall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadLoop {
    /// Each client sends its next transaction when the last one ended (no
    /// `--rate`): a stalled client sends nothing while it waits, so a stall
    /// adds one slow transaction per client to the percentiles, not the many
    /// the clients would have sent; the percentiles understate it.
    #[default]
    Closed,
    /// Transactions start on a schedule (`--rate`) and their latency counts
    /// from the scheduled start: every request that queued behind a stall counts.
    Open,
}

impl LoadLoop {
    /// The loop of a load with this `--rate` (none: closed).
    pub fn of_rate(rate_tps: Option<f64>) -> LoadLoop {
        match rate_tps {
            Some(_) => LoadLoop::Open,
            None => LoadLoop::Closed,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LoadOn {
    /// The server the migration runs on.
    #[default]
    Primary,
    /// The hot standby only: the load's figures are the replica's.
    Replica,
    /// Both servers at once, `clients` clients on each.
    Both,
}

impl LoadOn {
    /// `primary`, `replica` or `both`, as the files and flags write it.
    pub fn name(self) -> &'static str {
        match self {
            LoadOn::Primary => "primary",
            LoadOn::Replica => "replica",
            LoadOn::Both => "both",
        }
    }

    /// The server whose clients the timeline's load columns (`tps`,
    /// `lat_*`, `failed`) count: the primary, unless the load runs on the
    /// replica only.
    pub fn main_side(self) -> Side {
        match self {
            LoadOn::Replica => Side::Replica,
            LoadOn::Primary | LoadOn::Both => Side::Primary,
        }
    }

    /// Whether clients run on the replica (alone or beside the primary's).
    pub fn on_replica(self) -> bool {
        self != LoadOn::Primary
    }
}

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
    /// diesel: `<version>_name/up.sql` folders (the version digits and
    /// dashes, `2024-01-01-120000`), each beside its `down.sql`, in one
    /// transaction unless its `metadata.toml` says `run_in_transaction = false`.
    Diesel,
    /// Sqitch: `sqitch.plan` lists the changes in deploy order, each one's
    /// script `deploy/<change>.sql`, run as psql runs it (its own `BEGIN` ...
    /// `COMMIT` is its transaction).
    Sqitch,
    /// Any `.sql` files, applied in the byte order of their names (only
    /// when chosen with `--layout`: the order is the names' alone).
    PlainSql,
}

impl Layout {
    /// The name `--layout` takes.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Numbered => "numbered",
            Layout::UpDown => "up-down",
            Layout::Dbmate => "dbmate",
            Layout::Goose => "goose",
            Layout::Flyway => "flyway",
            Layout::Prisma => "prisma",
            Layout::Diesel => "diesel",
            Layout::Sqitch => "sqitch",
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
            Layout::Diesel => "2024-01-01-120000_init/up.sql",
            Layout::Sqitch => "sqitch.plan with deploy/init.sql",
            Layout::PlainSql => "init.sql",
        }
    }

    /// How a migration of this layout runs outside a transaction, as its tool
    /// marks it (what `CREATE INDEX CONCURRENTLY` needs): the end of a fix.
    pub fn outside_a_transaction(self) -> &'static str {
        match self {
            Layout::Numbered | Layout::PlainSql => {
                "that your tool runs outside one (sqlx: `-- no-transaction` as its first line; \
                 Django: `atomic = False`; Rails: `disable_ddl_transaction!`; \
                 Knex: `exports.config = { transaction: false }`; Alembic: an `autocommit_block()`)"
            }
            Layout::UpDown => {
                "holding that statement alone (golang-migrate then runs it outside one; sqlx \
                 needs `-- no-transaction` as its first line)"
            }
            Layout::Dbmate => "marked `-- migrate:up transaction:false`",
            Layout::Goose => "marked `-- +goose NO TRANSACTION`",
            Layout::Flyway => "with `executeInTransaction=false` in its `.sql.conf`",
            Layout::Prisma => "holding that statement alone",
            Layout::Diesel => "with `run_in_transaction = false` in its `metadata.toml`",
            Layout::Sqitch => "whose deploy script has no BEGIN and COMMIT around it",
        }
    }

    /// `numbered|up-down|...`, for messages.
    pub fn choices() -> String {
        let names: Vec<&str> = (Layout::value_variants().iter())
            .map(|layout| layout.name())
            .collect();
        names.join("|")
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the migration tool does with a migration not yet applied whose
/// version sorts before one already applied (`--out-of-order`): a pull
/// request's migration written before the base branch's newest one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum OutOfOrder {
    /// Applies it after the applied ones (Prisma, sqlx, diesel, dbmate,
    /// Sqitch; Flyway with `outOfOrder=true`, goose with `-allow-missing`).
    Apply,
    /// Refuses to migrate (Flyway, goose).
    Refuse,
    /// Never applies it: it records only the newest version applied (golang-migrate).
    Skip,
}

impl OutOfOrder {
    /// What the tool of `layout` does when not told otherwise: Flyway and
    /// goose refuse, golang-migrate (the `up-down` layout's tool, beside
    /// sqlx) skips, the others apply.
    pub fn of_layout(layout: Layout) -> OutOfOrder {
        match layout {
            Layout::Flyway | Layout::Goose => OutOfOrder::Refuse,
            Layout::UpDown => OutOfOrder::Skip,
            Layout::Numbered
            | Layout::Dbmate
            | Layout::Prisma
            | Layout::Diesel
            | Layout::Sqitch
            | Layout::PlainSql => OutOfOrder::Apply,
        }
    }
}

/// How the files `--files` picks are ordered (`--order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FileOrder {
    /// By the number the name starts with, compared as a number (`0010`
    /// after `9`); names with the same number (or none) by name.
    #[default]
    Number,
    /// By name, byte by byte.
    Name,
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

/// Which new migrations `check` runs under traffic (`--measure`); the others
/// are judged from their lock trace alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// Every migration that locks a table that existed before it.
    #[default]
    All,
    /// Only those its trace flags: a lock that blocks traffic on such a
    /// table, or a rename or drop the application may use.
    Flagged,
    /// None (`--trace-only`): seconds, for every pull request.
    None,
}

/// Which tables `check` fills with generated rows (`--fill`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Fill {
    /// The tables the new migrations lock or name when first tried on the
    /// empty tables, their foreign keys' parents, and, when a migration
    /// deletes rows, the tables whose foreign keys point at them.
    #[default]
    Locked,
    /// Every table.
    All,
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
    /// `BEGIN; <sql>;`, a sleep of `hold` on the server, `COMMIT`: active the whole time.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `name()` (what the files and messages write) is the word clap reads.
    fn names_are_the_flag_words<T: ValueEnum>(name: fn(&T) -> &'static str) {
        for value in T::value_variants() {
            let word = value.to_possible_value().unwrap();
            assert_eq!(name(value), word.get_name());
        }
    }

    #[test]
    fn every_name_is_the_word_the_flag_and_the_file_take() {
        names_are_the_flag_words::<Layout>(|value| value.name());
        names_are_the_flag_words::<TransactionMode>(|value| value.name());
        names_are_the_flag_words::<Protocol>(|value| value.name());
        names_are_the_flag_words::<Recycling>(|value| value.name());
        names_are_the_flag_words::<BlockerKind>(|value| value.name());
    }

    #[test]
    fn a_wrong_word_in_a_file_names_the_key_and_the_words() {
        let error = from_word::<BlockerKind>("w.toml: [blocker] kind", "nap").unwrap_err();
        assert_eq!(
            error.to_string(),
            "w.toml: [blocker] kind = \"nap\"; use one of report, writer, idle"
        );
        let kind: BlockerKind = from_word("[blocker] kind", "idle").unwrap();
        assert_eq!(kind, BlockerKind::Idle);
    }
}
