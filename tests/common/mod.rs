//! Shared pieces of the integration tests: a shortened reference workload,
//! a lock so runs against throwaway servers do not share the 2 CPUs, and
//! checks for leftover servers.

#![allow(dead_code)]

pub mod managed;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use stallbench::cli::CommonArgs;
use stallbench::config::{Config, Mode};
use stallbench::metrics::RunReport;

static DATABASE_RUNS: Mutex<()> = Mutex::new(());

/// Serializes the tests that run a throwaway server (timing assertions need the CPUs).
pub fn one_database_run_at_a_time() -> MutexGuard<'static, ()> {
    DATABASE_RUNS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Fails (never skips) when the PostgreSQL server binaries are missing.
pub fn require_postgres() {
    if let Err(err) = stallbench::server::find_bin_dir(None) {
        panic!(
            "these tests run a real PostgreSQL and none was found: {err:#}\n\
             On Debian/Ubuntu: apt-get install -y postgresql"
        );
    }
}

/// The reference experiment on a short clock: 12 s, report at 2 s held 5 s, ALTER at 3 s.
pub const SHORT_ADD_COLUMN: &str = r#"
name = "short-add-column"
description = "the reference outage on a 12 s clock"
setup = """
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE orders (
    id bigserial PRIMARY KEY,
    customer_id int NOT NULL REFERENCES customers (id),
    total numeric(10,2) NOT NULL
);
INSERT INTO customers SELECT g, 'customer ' || g FROM generate_series(1, 1000) g;
INSERT INTO orders (customer_id, total) SELECT 1 + g % 1000, (g % 500) + 0.99 FROM generate_series(1, 200000) g;
CREATE INDEX ON orders (customer_id);
ANALYZE customers;
ANALYZE orders;
"""
reset = "ALTER TABLE orders DROP COLUMN IF EXISTS note;"

[load]
clients = 4
duration = "12s"

[[load.scripts]]
name = "read-order"
sql = """
\\set c random(1, 1000)
SELECT count(*), sum(total) FROM orders WHERE customer_id = :c;
"""

[blocker]
at = "2s"
hold = "5s"
sql = "SELECT count(*) FROM orders"

[ddl]
at = "3s"
sql = "ALTER TABLE orders ADD COLUMN note text"

[[strategies]]
name = "naive"
kind = "plain"

[[strategies]]
name = "retry"
kind = "lock-timeout-retry"
lock_timeout = "500ms"
max_tries = 10
backoff = { kind = "linear", step = "1s", cap = "5s" }
"#;

/// A temp folder holding [`SHORT_ADD_COLUMN`], and quiet flags writing into its `results`.
pub struct ShortRun {
    pub dir: tempfile::TempDir,
    pub workload: PathBuf,
    pub out: PathBuf,
    pub args: CommonArgs,
}

/// Prepares a [`ShortRun`].
pub fn short_add_column() -> ShortRun {
    let dir = tempfile::tempdir().unwrap();
    let workload = write_workload(dir.path(), "short.toml", SHORT_ADD_COLUMN);
    let out = dir.path().join("results");
    let args = quiet_args(&out);
    ShortRun {
        dir,
        workload,
        out,
        args,
    }
}

/// Writes `text` as `name` into `dir` and returns its path.
pub fn write_workload(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Flags for an in-process run writing into `out`.
pub fn quiet_args(out: &Path) -> CommonArgs {
    CommonArgs {
        db_url: None,
        in_place: false,
        apply: false,
        clients: None,
        rate: None,
        pool_size: None,
        client_timeout: None,
        latency_limit: None,
        duration: None,
        out: Some(out.to_path_buf()),
        force: false,
        quiet: true,
        variables: Vec::new(),
        pg_bin: None,
        no_observer: false,
        expect: Vec::new(),
        seed: Some(42),
        workload: stallbench::cli::WorkloadArgs::default(),
        pool: stallbench::cli::PoolArgs::default(),
    }
}

/// Runs `compare` (or `run`) in-process on a throwaway server.
pub fn run_in_process(workload: &Path, mode: Mode, args: &CommonArgs) -> RunReport {
    let config = Config::new(Some(workload.to_str().unwrap()), mode, args).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(stallbench::execute(&config)).unwrap()
}

/// Command lines of running postgres processes started by the harness (data dir under a `stallbench-` temp folder).
pub fn harness_postgres_processes() -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("postgres") && cmdline.contains("/stallbench-") {
            found.push(cmdline);
        }
    }
    found
}

/// Asserts no server of the harness is left, allowing a moment for the last one to exit.
pub fn assert_no_leftover_server() {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let left = harness_postgres_processes();
        if left.is_empty() {
            return;
        }
        if std::time::Instant::now() > deadline {
            panic!("postgres processes of the harness are still running: {left:#?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// No TLS, as the throwaway server's unix socket is used.
pub fn no_tls() -> stallbench::conninfo::Tls {
    let plain = stallbench::conninfo::SslSettings {
        mode: stallbench::conninfo::SslMode::Disable,
        root_cert: None,
        client_cert: None,
    };
    stallbench::conninfo::Tls::new(&plain).unwrap()
}
