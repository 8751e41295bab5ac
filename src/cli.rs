//! Command-line arguments (clap derive). Turned into a `Config` by `config/`.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, ColorChoice, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::choices::{
    BlockerChoice, BlockerKind, FileOrder, Fill, Layout, LoadOn, Measure, OutOfOrder, Protocol,
    Recycling, Side, TransactionMode,
};
use crate::duration::DurationParser;
use crate::strategy::{NamedStrategy, PRESET_NAMES, preset};

/// stallbench: reproduce the lock-queue outage and measure what each migration strategy does to live traffic.
#[derive(Debug, Parser)]
#[command(name = "stallbench", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The command line of this process, as `Cli::parse` reads it, except that
/// in CI (see [`in_ci`]) clap writes its help and errors without colour.
pub fn parse() -> Cli {
    let mut command = Cli::command();
    if in_ci() {
        command = command.color(ColorChoice::Never);
    }
    let matches = command.get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
}

/// The subcommands.
// Parsed once per process: the size of its largest variant (`check`'s flags) costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every strategy of a workload in turn on one target and compare them (the main job).
    Compare {
        /// Bundled workload name or path to a .toml file [default: add-column].
        workload: Option<String>,
        /// Strategies to run, comma separated [default: those the workload lists].
        #[arg(long, value_delimiter = ',')]
        strategies: Vec<String>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Run one strategy, or the load alone with --load-only.
    Run {
        /// Bundled workload name or path to a .toml file [default: add-column].
        workload: Option<String>,
        /// The strategy to run.
        #[arg(
            long,
            required_unless_present = "load_only",
            conflicts_with = "load_only"
        )]
        strategy: Option<String>,
        /// Run the load alone: no blocker, no DDL (a pgbench replacement with histograms).
        #[arg(long)]
        load_only: bool,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Re-draw timeline.png, latency.png and latency-timeline.png from a results folder's CSV and .hgrm files.
    Plot {
        /// A results folder written by compare or run.
        dir: PathBuf,
    },
    /// List the bundled workloads.
    Workloads,
    /// Gate a project's migrations: trace the locks of each new migration and measure the
    /// stall it causes under traffic, as deployed and the recommended way; exit 3 over budget.
    Check {
        /// The project's migrations folder.
        dir: PathBuf,
        #[command(flatten)]
        args: CheckArgs,
    },
    /// Write the traffic a server sees (pg_stat_statements) as a workload file that `run`
    /// and `compare` take: one script per statement, weighted by its share of the calls.
    Capture {
        #[command(flatten)]
        args: CaptureArgs,
    },
}

/// The flags of `capture`; `capture::CaptureOptions::new` reads them, once.
#[derive(Debug, Clone, Args)]
pub struct CaptureArgs {
    /// PostgreSQL connection URL of the server whose traffic to capture (read-only; the
    /// database needs the extension pg_stat_statements).
    #[arg(long)]
    pub db_url: String,
    /// The workload file to write, e.g. workload.toml.
    #[arg(long)]
    pub out: PathBuf,
    /// Keep the N most called statements [default: as many as cover 95% of the calls].
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Keep only the statements that touch these tables, comma separated (orders,app.items).
    #[arg(long, value_delimiter = ',', value_name = "TABLES")]
    pub tables: Vec<String>,
    /// Measure the rate: count the calls over this window (e.g. 60s) instead of using the
    /// cumulative counts, which give the mix but not the rate.
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub window: Option<Duration>,
}

/// The flags of `check`; `config::CheckConfig::new` reads them, once.
#[derive(Debug, Clone, Default, Args)]
pub struct CheckArgs {
    /// The folder's layout [default: detected from the files].
    #[arg(long, value_name = "LAYOUT")]
    pub layout: Option<Layout>,
    /// The last N migrations are the new ones [default: 1, without --since or --git-base].
    #[arg(long = "new", value_name = "N", conflicts_with_all = ["since", "git_base"])]
    pub new: Option<usize>,
    /// This migration and every one after it are the new ones: its file or folder name
    /// (0005_index.sql), its path, or its version (5).
    #[arg(long, value_name = "FILE", conflicts_with = "git_base")]
    pub since: Option<PathBuf>,
    /// The migrations added since the merge base of this git revision and HEAD are the new ones
    /// (git diff, untracked files too); one changed since, but there before, is an earlier one.
    #[arg(long, value_name = "REF")]
    pub git_base: Option<String>,
    /// Which files of the folder are migrations, a glob of their names (`*` any characters,
    /// `?` one; repeatable), e.g. '*.up.sql': read the folder as it is, instead of a
    /// layout's names; every other file is listed as not read.
    #[arg(long, value_name = "GLOB")]
    pub files: Vec<String>,
    /// With --files: the down files beside the migrations, which the tool does not apply, a
    /// glob of their names (repeatable), e.g. '*.down.sql'.
    #[arg(long, value_name = "GLOB", requires = "files")]
    pub down_files: Vec<String>,
    /// With --files: `number` (the number a name starts with, as a number; names with the same
    /// number by name, as a migrator that accepts them does) or `name` (byte order)
    /// [default: number].
    #[arg(long, value_name = "ORDER", requires = "files")]
    pub order: Option<FileOrder>,
    /// What the tool does with a new migration (--git-base) whose version sorts before one
    /// already applied: `apply` it after them (Prisma, sqlx, diesel, dbmate, Sqitch), `refuse`
    /// to migrate (Flyway, goose) or `skip` it forever (golang-migrate) [default: the layout's
    /// tool's: refuse for flyway and goose, skip for up-down, apply for the others].
    #[arg(long, value_name = "RULE")]
    pub out_of_order: Option<OutOfOrder>,
    /// The migrator's own bookkeeping table (repeatable), which the check leaves alone: no
    /// generated rows, no traffic. Prisma's, diesel's, sqlx's, Flyway's and a few others' are
    /// known.
    #[arg(long, value_name = "TABLE")]
    pub tool_table: Vec<String>,
    /// How the migration tool runs a file: each in one transaction, each statement in its own, or none
    /// [default: per-file].
    #[arg(long, value_name = "MODE")]
    pub transaction: Option<TransactionMode>,
    /// The search_path the migrations and the traffic run with, as the project sets it (e.g.
    /// `app, public`) [default: the server's, "$user", public].
    #[arg(long, value_name = "SCHEMAS", value_parser = search_path_arg)]
    pub search_path: Option<String>,
    /// Your own SQL that fills the tables the earlier migrations made (instead of --rows).
    #[arg(long, value_name = "FILE", conflicts_with = "rows")]
    pub seed: Option<PathBuf>,
    /// Rows generated per table from the catalogs, N for every table or TABLE=N for one
    /// (repeatable) [default: 100000].
    #[arg(long, value_name = "N|TABLE=N", value_parser = rows_arg)]
    pub rows: Vec<RowsArg>,
    /// Which tables get generated rows: `locked` (those the new migrations lock or name, tried
    /// first on the empty tables, with the tables their foreign keys need) or `all`
    /// [default: locked; all with --load FILE].
    #[arg(long, value_name = "WHICH", conflicts_with = "seed")]
    pub fill: Option<Fill>,
    /// A table's rows in production, TABLE=N (repeatable): a statement that rewrites or scans it
    /// under a lock that blocks traffic gets its hold estimated at that size, against the budget.
    #[arg(long = "table-rows", value_name = "TABLE=N", value_parser = table_rows_arg)]
    pub table_rows: Vec<(String, u64)>,
    /// Read every table's rows from a production or staging server's statistics
    /// (pg_class.reltuples, read-only, no row read), as --table-rows for each.
    #[arg(long, value_name = "URL")]
    pub sizes_from: Option<String>,
    /// Which new migrations run under traffic: `all`, `flagged` (those whose trace shows a lock
    /// that blocks traffic, or a rename or drop) or `none`; the others are judged from their
    /// trace alone [default: all].
    #[arg(long, value_name = "WHICH")]
    pub measure: Option<Measure>,
    /// Judge every new migration from its trace alone, without the traffic runs (--measure
    /// none): seconds, for every pull request; a hold over the budget at --table-rows fails.
    #[arg(long, conflicts_with = "measure")]
    pub trace_only: bool,
    /// The traffic: `read` (primary-key reads), `read-write` (also single-row updates and
    /// inserts), a pgbench script FILE, or a workload FILE.toml (its weighted scripts, clients
    /// and rate, e.g. from `capture`) [default: reads, and writes where the migration blocks them].
    #[arg(long, value_name = "read|read-write|FILE", value_parser = load_arg)]
    pub load: Option<LoadArg>,
    /// Load clients, each on its own connection [default: 4].
    #[arg(long, value_name = "N")]
    pub clients: Option<u32>,
    /// The long transaction the migration meets: `auto` (a report for ACCESS EXCLUSIVE, a writer
    /// for SHARE and SHARE ROW EXCLUSIVE), `report`, `writer` or `none` [default: auto].
    #[arg(long, value_name = "KIND")]
    pub blocker: Option<BlockerChoice>,
    /// How long the blocker holds its transaction open [default: 4s].
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub hold: Option<Duration>,
    /// How the project deploys a migration: a strategy preset [default: naive, the file as written].
    #[arg(long, value_name = "STRATEGY", value_parser = preset_parser())]
    pub deploy: Option<NamedStrategy>,
    /// The strategy measured beside it [default: retry].
    #[arg(long, value_name = "STRATEGY", value_parser = preset_parser())]
    pub recommend: Option<NamedStrategy>,
    /// Budget: the longest stall the deployed migration may cause [default: 1s].
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub max_stall: Option<Duration>,
    /// Budget: the whole run's p99 latency under the deployed migration, e.g. 200ms.
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub max_p99: Option<Duration>,
    /// Budget: failed transactions under the deployed migration.
    #[arg(long, value_name = "N")]
    pub max_failed: Option<u64>,
    /// Each strategy's load duration [default: the blocker's hold plus 5 s].
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub duration: Option<Duration>,
    /// Start a hot standby beside the throwaway server and run each measured migration once
    /// more per strategy with the report on the standby and readers on both servers: the
    /// replica's stall counts against --max-stall.
    #[arg(long)]
    pub replica: bool,
    /// Results folder [default: results/check-<UTC timestamp>]; report.html, check.md,
    /// check.json, check.csv, junit.xml, pr-comment.md and a folder per measured migration.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the files of an earlier check in --out.
    #[arg(long)]
    pub force: bool,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Open report.html with the desktop's opener (xdg-open, open) when the check ends.
    #[arg(long)]
    pub open: bool,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// Which server binaries the throwaway server runs: flags shared by
/// `compare`, `run` and `check`, read by `config::server::parse_server`.
#[derive(Debug, Clone, Default, Args)]
pub struct ServerArgs {
    /// Folder with the PostgreSQL server binaries for the throwaway server [default: $STALLBENCH_PG_BIN, pg_config --bindir, /usr/lib/postgresql/*/bin, PATH, the download cache].
    #[arg(long)]
    pub pg_bin: Option<PathBuf>,
    /// The throwaway server's PostgreSQL major, 13 to 18: an installed one, else a cached
    /// download, else downloaded once [default: $STALLBENCH_PG_VERSION, else any installed server].
    #[arg(long, value_name = "MAJOR")]
    pub pg_version: Option<u32>,
    /// Never download server binaries (also STALLBENCH_OFFLINE=1).
    #[arg(long)]
    pub offline: bool,
}

/// Flags shared by `compare` and `run`; each overrides the workload file.
/// `Default` is no flag given.
#[derive(Debug, Clone, Default, Args)]
pub struct CommonArgs {
    /// PostgreSQL connection URL of a real server [default: $DATABASE_URL, else a throwaway server].
    #[arg(long)]
    pub db_url: Option<String>,
    /// Use the tables that exist on the --db-url server: no setup, no schema of stallbench's
    /// own, the connection's own search_path; each DDL step is rolled back unless --apply.
    #[arg(long)]
    pub in_place: bool,
    /// With --in-place: commit each DDL step instead of rolling it back (a compare of
    /// several strategies then needs the workload's reset SQL).
    #[arg(long)]
    pub apply: bool,
    /// With --in-place: let load scripts (and the blocker) that write run against your
    /// tables; the rows they insert, update and delete stay, and are counted per table.
    #[arg(long)]
    pub allow_writes: bool,
    /// Start a streaming hot standby beside the throwaway server (as [replica] does), for
    /// --load-on replica and --blocker-on replica.
    #[arg(long)]
    pub replica: bool,
    /// Your own hot standby of the --db-url server (read-only use), for --load-on replica,
    /// --blocker-on replica and replica-aware; it must be in recovery.
    #[arg(long, value_name = "URL")]
    pub replica_url: Option<String>,
    /// The servers the load's clients run on; both: --clients on each [default: [load] on,
    /// else primary].
    #[arg(long, value_name = "SERVER")]
    pub load_on: Option<LoadOn>,
    /// The server the blocker holds its transaction on [default: [blocker] on, else primary].
    #[arg(long, value_name = "SERVER")]
    pub blocker_on: Option<Side>,
    /// Number of client workers, each on its own connection (overrides [load] clients).
    #[arg(long)]
    pub clients: Option<u32>,
    /// Open loop: start transactions at this total rate per second, Poisson arrivals
    /// shared by the connections, like pgbench -R; latency counts from the scheduled start.
    #[arg(long, value_name = "TPS")]
    pub rate: Option<f64>,
    /// With --rate: the application's connection pool; requests wait for one of N connections
    /// [default: --clients].
    #[arg(long, value_name = "N", conflicts_with = "clients")]
    pub pool_size: Option<u32>,
    /// A transaction not finished this long after its (scheduled) start fails as `timeout`
    /// and is cancelled on the server, as an application's request timeout would, e.g. 1s.
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub client_timeout: Option<Duration>,
    /// With --rate: skip transactions already this late behind schedule, counted as
    /// `skipped` and never sent (pgbench -L), e.g. 500ms; no retry starts past it either.
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub latency_limit: Option<Duration>,
    /// Try a transaction that failed with a serialization failure (40001) or a
    /// deadlock (40P01) up to N times in all, as pgbench 15+ (0: until the load ends;
    /// default 1: never again; overrides [load] max_tries).
    #[arg(long, value_name = "N")]
    pub max_tries: Option<u32>,
    /// With --max-tries: retry lock timeouts (55P03) too, which pgbench does not.
    #[arg(long)]
    pub retry_lock_timeouts: bool,
    /// Load duration, e.g. 24s (overrides [load] duration).
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub duration: Option<Duration>,
    /// Results folder [default: results/<workload>-<UTC timestamp>]; a folder holding an
    /// earlier run's files is refused unless --force.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the files of an earlier run in --out (only stallbench's own files are removed).
    #[arg(long)]
    pub force: bool,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// The progress line every second on stderr even in CI (`CI` set in the
    /// environment turns it off).
    #[arg(long, conflicts_with = "quiet")]
    pub progress: bool,
    /// Open report.html with the desktop's opener (xdg-open, open) when the run ends.
    #[arg(long)]
    pub open: bool,
    /// Set a script variable, like pgbench -D (repeatable): --set scale=10.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub variables: Vec<String>,
    #[command(flatten)]
    pub server: ServerArgs,
    /// Add or override a CI bound (repeatable): --expect retry.max_p99_ms=600; a failed one exits 3.
    #[arg(long = "expect", value_name = "STRATEGY.KEY=VALUE")]
    pub expect: Vec<String>,
    /// Do not sample the lock queue (for measuring the observer's own cost).
    #[arg(long, hide = true)]
    pub no_observer: bool,
    /// Seed for random script values and backoff jitter, like pgbench --random-seed
    /// (`:random_seed` in scripts) [default: random, printed in run.json].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run each strategy N times on the same server and data, interleaved (naive, retry,
    /// naive, retry, ...); figures become medians with their range, from 5 with a 95%
    /// interval [default: [load] repeat, else 1].
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// The database engine: postgres, or mariadb (a throwaway mariadbd from Debian's
    /// mariadb-server, docs/mariadb.md) [default: the workload's engine, else postgres].
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<crate::engine::Engine>,
    /// Vary one setting across runs of the same compare: NAME=V1,V2,... with NAME a
    /// strategy's lock_timeout (retry.lock_timeout), blocker.hold, clients, rate or a --set
    /// variable; a results folder per value, and sweep.csv and sweep.png beside them.
    #[arg(long, value_name = "NAME=V1,V2,...", value_parser = SweepArg::parse)]
    pub sweep: Option<SweepArg>,
    /// How scripts send statements, as pgbench -M: `prepared` (each statement prepared
    /// once per connection), `extended` (parsed each time) or `simple` (variables
    /// substituted into the text) [default: prepared].
    #[arg(long, short = 'M', value_name = "MODE")]
    pub protocol: Option<Protocol>,
    /// Let scripts run programs with \shell and \setshell (refused without it: a
    /// workload file from elsewhere must not run programs unasked).
    #[arg(long)]
    pub allow_shell: bool,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub pool: PoolArgs,
}

/// The application pool's settings (`--rate` with `--pool-size`), as a Rust
/// service configures deadpool-postgres.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Application pool (--rate with --pool-size)")]
pub struct PoolArgs {
    /// How long a request waits for a free connection before it fails as
    /// `pool_timeout` (deadpool's timeouts.wait) [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub pool_timeout: Option<Duration>,
    /// How long the pool may take to open a new connection (deadpool's timeouts.create) [default: 5s].
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub pool_connect_timeout: Option<Duration>,
    /// How a returned connection is checked before its next use: `fast` (is it
    /// closed?) or `verified` (also a round trip) [default: fast].
    #[arg(long, value_name = "METHOD")]
    pub pool_recycling: Option<Recycling>,
    /// Requests waiting or running at once, beyond which a new one is rejected at
    /// once, counted as `rejected`, as a service's concurrency limit does [default: no limit].
    #[arg(long, value_name = "N")]
    pub max_in_flight: Option<u32>,
}

/// The workload from flags: load scripts, migration and blocker, each overriding
/// the workload file's. `-f` without a workload argument starts from an empty
/// workload (see `workload::from_flags`), so no TOML is needed.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Workload from flags")]
pub struct WorkloadArgs {
    /// A pgbench script file, as pgbench -f; repeatable: -f read.sql@9 -f write.sql@1
    /// (replaces [load] scripts; without a workload argument no TOML is needed).
    #[arg(short = 'f', long = "file", value_name = "FILE[@WEIGHT]")]
    pub files: Vec<String>,
    /// A built-in pgbench script, as pgbench -b: tpcb-like, simple-update or select-only
    /// (any unambiguous prefix); repeatable, with -f too: -b select-only@9 -b tpcb-like@1.
    #[arg(short = 'b', long = "builtin", value_name = "NAME[@WEIGHT]")]
    pub builtins: Vec<String>,
    /// One migration step (repeatable, run in order; replaces [ddl] sql/steps).
    #[arg(long = "ddl", value_name = "SQL", conflicts_with = "ddl_file")]
    pub ddl: Vec<String>,
    /// A migration file; each statement (split on `;` outside quotes and comments) is a step.
    #[arg(long, value_name = "FILE")]
    pub ddl_file: Option<PathBuf>,
    /// When the migration starts, e.g. 6s [default: [ddl] at, else 6s].
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub ddl_at: Option<Duration>,
    /// The blocker's SQL, run inside its long transaction (overrides [blocker] sql).
    #[arg(long, value_name = "SQL")]
    pub blocker: Option<String>,
    /// When the blocker starts, e.g. 4s [default: [blocker] at, else 4s].
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub blocker_at: Option<Duration>,
    /// How long the blocker holds its transaction open, e.g. 12s [default: [blocker] hold, else 12s].
    #[arg(long, value_name = "DURATION", value_parser = DurationParser)]
    pub blocker_hold: Option<Duration>,
    /// How the blocker holds it, `idle` meaning idle in transaction [default: [blocker] kind, else report].
    #[arg(long, value_name = "KIND")]
    pub blocker_kind: Option<BlockerKind>,
    /// No blocker, even if the workload has one (e.g. a real server with long transactions of its own).
    #[arg(long, conflicts_with_all = ["blocker", "blocker_at", "blocker_hold", "blocker_kind"])]
    pub no_blocker: bool,
}

/// `check --load`: a built-in traffic by its word, else a script file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadArg {
    /// `read`: primary-key reads.
    Read,
    /// `read-write`: also single-row updates and inserts.
    ReadWrite,
    /// A pgbench script file.
    Script(PathBuf),
}

/// `--search-path`: schema names separated by commas, each a plain name,
/// `"$user"`, or a double-quoted name, as `SET search_path` takes them.
fn search_path_arg(value: &str) -> Result<String, String> {
    let plain = |name: &str| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    let quoted = |name: &str| {
        name.len() > 2
            && name.starts_with('"')
            && name.ends_with('"')
            && !name[1..name.len() - 1].contains('"')
    };
    let names: Vec<&str> = value.split(',').map(str::trim).collect();
    // "$user" quoted is a quoted name; bare, it is accepted too.
    match names
        .iter()
        .find(|name| !(plain(name) || quoted(name) || **name == "$user"))
    {
        Some(bad) => Err(format!(
            "{bad:?} is not a schema name; give names separated by commas, e.g. \"app, public\""
        )),
        // A bare $user is not valid SQL: it is written quoted, as the server shows it.
        None => Ok(names
            .iter()
            .map(|name| match *name {
                "$user" => "\"$user\"",
                name => name,
            })
            .collect::<Vec<_>>()
            .join(", ")),
    }
}

/// `check --rows`: a count for every table, or `TABLE=N` for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowsArg {
    /// `N`: every table without a count of its own.
    Every(u64),
    /// `TABLE=N`: this table.
    Table(String, u64),
}

/// `--rows`'s value: `N` or `TABLE=N`.
fn rows_arg(text: &str) -> Result<RowsArg, String> {
    match text.split_once('=') {
        None => text.trim().parse().map(RowsArg::Every).map_err(|_| {
            format!("{text:?} is not a row count; give N or TABLE=N, e.g. 100000 or orders=5000")
        }),
        Some(_) => table_rows_arg(text).map(|(table, rows)| RowsArg::Table(table, rows)),
    }
}

/// `TABLE=N`, as `--table-rows` and `--rows` take it: a table name
/// (`orders`, `app.orders`) and a whole number of rows (`50000000`, `50_000_000`).
fn table_rows_arg(text: &str) -> Result<(String, u64), String> {
    let fix = "give TABLE=N, e.g. orders=50000000 or app.orders=50_000_000";
    let Some((table, rows)) = text.split_once('=') else {
        return Err(format!("{text:?} has no '='; {fix}"));
    };
    let table = table.trim();
    if table.is_empty() {
        return Err(format!("{text:?} names no table; {fix}"));
    }
    let rows = rows
        .trim()
        .replace(['_', ','], "")
        .parse()
        .map_err(|_| format!("{text:?}: {rows:?} is not a row count; {fix}"))?;
    Ok((table.to_string(), rows))
}

/// `--sweep NAME=V1,V2,...`: the setting's name and its values, each
/// trimmed, in order. Which names a sweep takes is checked by `config`
/// (`parse_sweep`); each value by the flag or key it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepArg {
    /// The setting: `retry.lock_timeout`, `blocker.hold`, `clients`, `rate` or a `--set` variable.
    pub name: String,
    /// Its values, in the order they run.
    pub values: Vec<String>,
    /// The flag's value as written, for messages (`--sweep retry.max_tries=1,2: ...`).
    pub written: String,
}

impl SweepArg {
    /// `--sweep`'s value parser: `NAME=V1,V2,...` with at least one value,
    /// none empty, none twice. The error says what is wrong and the fix;
    /// clap names the flag and the value.
    pub fn parse(text: &str) -> Result<SweepArg, String> {
        let Some((name, values)) = text.split_once('=') else {
            return Err(
                "expected NAME=V1,V2,..., e.g. --sweep retry.lock_timeout=100ms,500ms,2s".into(),
            );
        };
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        check_sweep_values(&values)?;
        Ok(SweepArg {
            name: name.trim().to_string(),
            values,
            written: text.to_string(),
        })
    }
}

/// A sweep's values, `--sweep`'s or a `[sweep]` table's (trimmed): at least
/// one, none empty, none twice. The error is the problem and its fix, without
/// where it was written (the caller, or clap, says that).
pub fn check_sweep_values(values: &[String]) -> Result<(), String> {
    if values.iter().all(String::is_empty) {
        return Err("no values; list them, e.g. 100ms,500ms,2s".into());
    }
    if values.iter().any(String::is_empty) {
        return Err("an empty value; separate the values by single commas".into());
    }
    for (index, value) in values.iter().enumerate() {
        if values[..index].contains(value) {
            return Err(format!("{value} is listed twice; list each value once"));
        }
    }
    Ok(())
}

/// `--load`'s value: any word but `read` and `read-write` is a file's path.
fn load_arg(text: &str) -> Result<LoadArg, std::convert::Infallible> {
    Ok(match text {
        "read" => LoadArg::Read,
        "read-write" => LoadArg::ReadWrite,
        path => LoadArg::Script(PathBuf::from(path)),
    })
}

/// A strategy preset by name (`--deploy`, `--recommend`): `--help` lists the
/// presets and clap refuses any other name.
fn preset_parser() -> impl TypedValueParser<Value = NamedStrategy> {
    PossibleValuesParser::new(PRESET_NAMES)
        .map(|name| preset(&name).expect("PRESET_NAMES names only presets"))
}

/// Whether the process runs in CI: `CI` is set in the environment, as GitHub
/// Actions, GitLab CI and most others set it (`CI=true`), to anything but
/// empty, `0` or `false`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !matches!(value.trim(), "" | "0" | "false"))
}

/// The config of a `compare` command line, as `run` builds it (for tests).
#[cfg(test)]
pub(crate) fn compare_config(args: &[&str]) -> crate::config::Config {
    try_compare_config(args).unwrap()
}

/// [`compare_config`], or the error `Config::new` gives (for tests).
#[cfg(test)]
pub(crate) fn try_compare_config(
    args: &[&str],
) -> Result<crate::config::Config, crate::error::Error> {
    let cli = Cli::try_parse_from(args).unwrap();
    let Command::Compare {
        workload,
        strategies,
        common,
    } = cli.command
    else {
        panic!("not a compare command: {args:?}");
    };
    let mode = crate::config::Mode::Compare { strategies };
    crate::config::Config::new(workload.as_deref(), mode, &common)
}
