//! Command-line arguments (clap derive). Turned into a `Config` by `config/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// stallbench: reproduce the lock-queue outage and measure what each migration strategy does to live traffic.
#[derive(Debug, Parser)]
#[command(name = "stallbench", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
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
}

/// Flags shared by `compare` and `run`; each overrides the workload file.
#[derive(Debug, Clone, Args)]
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
    #[arg(long, value_name = "DURATION")]
    pub client_timeout: Option<String>,
    /// With --rate: skip transactions already this late behind schedule, counted as
    /// `skipped` and never sent (pgbench -L), e.g. 500ms.
    #[arg(long, value_name = "DURATION")]
    pub latency_limit: Option<String>,
    /// Load duration, e.g. 24s (overrides [load] duration).
    #[arg(long)]
    pub duration: Option<String>,
    /// Results folder [default: results/<workload>-<UTC timestamp>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Set a script variable, like pgbench -D (repeatable): --set scale=10.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub variables: Vec<String>,
    /// Folder with the PostgreSQL server binaries for the throwaway server [default: $STALLBENCH_PG_BIN, pg_config --bindir, /usr/lib/postgresql/*/bin, PATH].
    #[arg(long)]
    pub pg_bin: Option<PathBuf>,
    /// Add or override a CI bound (repeatable): --expect retry.max_p99_ms=600; a failed one exits 3.
    #[arg(long = "expect", value_name = "STRATEGY.KEY=VALUE")]
    pub expect: Vec<String>,
    /// Do not sample the lock queue (for measuring the observer's own cost).
    #[arg(long, hide = true)]
    pub no_observer: bool,
    /// Seed for random script values and backoff jitter [default: random, printed in run.json].
    #[arg(long)]
    pub seed: Option<u64>,
}
