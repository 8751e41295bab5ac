//! Shared pieces of the integration tests. A new test that runs a scenario
//! usually needs four of them:
//!
//! 1. **A workload**, built from [`workload::reference`] (the reference experiment's outage on
//!    a 6 s clock) or the other builders in [`workload`], changed field by
//!    field. Keep clocks short: the stall's shape is time-scaled, and a few
//!    seconds show it; the reference experiment's 24 s run is `tests/suite/bundled.rs`'s alone.
//! 2. **Where it runs.** [`ShortRun::on_shared_server`] gives the run a
//!    database of its own on the test binary's one shared server
//!    ([`shared::shared_server`]), with the workload's tables copied from a
//!    template loaded once per binary: no initdb, no loading, and it may run
//!    beside the binary's other tests. It is a `--db-url` run: the harness
//!    works in its schema `stallbench`, keeps no `server.log` and reads no
//!    server log. [`ShortRun::throwaway`] lets the harness start its own
//!    throwaway server, for what only that path does (the server log, the
//!    server's start and stop, signals, leftovers). A test that stops,
//!    restarts or reconfigures a server starts its own
//!    ([`operator::OperatorServer`], [`managed::ManagedServer`],
//!    [`server::start_throwaway_server`]).
//! 3. **The CPUs.** Every test that runs a scenario takes [`cpus_shared`]
//!    (libtest runs four tests of this binary at once) or, when its timing
//!    bounds need the shared tests out of the way, [`cpus_quiet`] (beside
//!    other quiet tests) or [`cpus_alone`] (beside none); such a test goes
//!    in `alone/`, whose tests run first (`alone/mod.rs` says why).
//! 4. **What it leaves behind**, checked only among the processes and folders
//!    the test started ([`processes`]): [`assert_run_stopped_its_server`]
//!    after a throwaway run, [`assert_no_process_in`] for a server's folder.
//!
//! ```ignore
//! let _cpus = cpus_shared();
//! let mut workload = workload::reference();
//! workload.load.duration = "4s".into();
//! let run = ShortRun::on_shared_server(&workload);
//! let report = run.execute(compare_all());
//! ```
//!
//! Running stallbench and reading its results are in [`run`], the tests' own
//! database access in [`server`].

#![allow(dead_code)]

pub mod cpus;
pub mod managed;
pub mod operator;
pub mod processes;
pub mod run;
pub mod server;
pub mod shared;
pub mod workload;

// Each test file uses some of the helpers, as with dead_code above.
pub use cpus::{cpus_alone, cpus_quiet, cpus_shared};
#[allow(unused_imports)]
pub use operator::*;
#[allow(unused_imports)]
pub use processes::*;
#[allow(unused_imports)]
pub use run::*;
#[allow(unused_imports)]
pub use server::*;
#[allow(unused_imports)]
pub use shared::{TestDatabase, shared_server};
#[allow(unused_imports)]
pub use workload::{
    reference, small_reference, to_toml, without_blocker, write_text, write_workload,
};

use std::path::{Path, PathBuf};

use stallbench::cli::CommonArgs;
use stallbench::config::{Config, Mode};
use stallbench::metrics::RunReport;
use stallbench::workload::WorkloadFile;

/// Fails (never skips) when the PostgreSQL server binaries are missing.
pub fn require_postgres() {
    server_binaries();
}

/// A temp folder holding a workload file, quiet flags writing into its
/// `results`, and the database the run uses, if on the shared server.
pub struct ShortRun {
    pub dir: tempfile::TempDir,
    pub workload: PathBuf,
    pub out: PathBuf,
    /// `--out`, `--quiet`, `--seed 42`, and `--db-url` on the shared server.
    pub args: CommonArgs,
    /// The run's database on the shared server; `None` for a throwaway server.
    pub database: Option<TestDatabase>,
}

impl ShortRun {
    /// `workload`, run on a throwaway server the harness starts itself.
    pub fn throwaway(workload: &WorkloadFile) -> ShortRun {
        require_postgres();
        ShortRun::new(workload, None)
    }

    /// `workload`, run with `--db-url` on a database of its own on the shared
    /// server, holding copies of the tables the workload's setup makes (its
    /// setup is replaced by moving them into the run's schema).
    pub fn on_shared_server(workload: &WorkloadFile) -> ShortRun {
        let database = shared_server().database_with(&workload.setup);
        ShortRun::new(workload, Some(database))
    }

    /// `workload`, run with `--db-url` on a new empty database of the shared
    /// server, where the harness runs the workload's own setup (for a test
    /// whose runs set the database up more than once).
    pub fn on_empty_database(workload: &WorkloadFile) -> ShortRun {
        let database = shared_server().empty_database();
        ShortRun::new(workload, Some(database))
    }

    /// The workload `text` as written (not through the builder), as
    /// `file_name`, for a throwaway server or the test's own `--db-url`.
    pub fn of_text(file_name: &str, text: &str) -> ShortRun {
        require_postgres();
        let dir = tempfile::tempdir().unwrap();
        let workload = write_text(dir.path(), file_name, text);
        let out = dir.path().join("results");
        let args = quiet_args(&out);
        ShortRun {
            dir,
            workload,
            out,
            args,
            database: None,
        }
    }

    fn new(workload: &WorkloadFile, database: Option<TestDatabase>) -> ShortRun {
        let dir = tempfile::tempdir().unwrap();
        let mut workload = workload.clone();
        if let Some(database) = &database {
            workload.setup = database.setup(&workload.setup);
        }
        let path = write_workload(dir.path(), "workload.toml", &workload);
        let out = dir.path().join("results");
        let mut args = quiet_args(&out);
        args.db_url = database.as_ref().map(|database| database.url.clone());
        ShortRun {
            dir,
            workload: path,
            out,
            args,
            database,
        }
    }

    /// `--db-url` of the run, on the shared server.
    pub fn db_url(&self) -> Option<&str> {
        self.args.db_url.as_deref()
    }

    /// `stallbench SUBCOMMAND WORKLOAD --quiet --out OUT`, plus `--db-url` on
    /// the shared server (see [`stallbench_quiet`]); the caller adds flags.
    pub fn command(&self, subcommand: &str) -> assert_cmd::Command {
        let mut command = stallbench_quiet(subcommand, &self.workload, &self.out);
        if let Some(url) = self.db_url() {
            command.args(["--db-url", url]);
        }
        command
    }

    /// Runs `compare` (or `run`) in-process with [`ShortRun::args`].
    pub fn execute(&self, mode: Mode) -> RunReport {
        run_in_process(&self.workload, mode, &self.args)
    }
}

/// Flags for an in-process run writing into `out`.
pub fn quiet_args(out: &Path) -> CommonArgs {
    CommonArgs {
        out: Some(out.to_path_buf()),
        quiet: true,
        seed: Some(42),
        ..CommonArgs::default()
    }
}

/// Runs `compare` (or `run`) in-process.
pub fn run_in_process(workload: &Path, mode: Mode, args: &CommonArgs) -> RunReport {
    let config = Config::new(Some(workload.to_str().unwrap()), mode, args).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(stallbench::execute(&config)).unwrap()
}

/// No TLS, as the throwaway server's unix socket is used.
pub fn no_tls() -> stallbench::engine::postgres::conninfo::Tls {
    let plain = stallbench::engine::postgres::conninfo::SslSettings {
        mode: stallbench::engine::postgres::conninfo::SslMode::Disable,
        root_cert: None,
        client_cert: None,
    };
    stallbench::engine::postgres::conninfo::Tls::new(&plain).unwrap()
}
