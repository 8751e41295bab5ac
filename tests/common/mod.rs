//! Shared pieces of the integration tests: a shortened reference workload
//! and its variants, a lock so runs against throwaway servers do not share
//! the 2 CPUs, and checks for leftover servers. Running stallbench and reading
//! its results are in `run`, the tests' own database access in `server`.

#![allow(dead_code)]

pub mod managed;
pub mod operator;
pub mod run;
pub mod server;

// Each test file uses some of the helpers, as with dead_code above.
#[allow(unused_imports)]
pub use operator::*;
#[allow(unused_imports)]
pub use run::*;
#[allow(unused_imports)]
pub use server::*;

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
    server_binaries();
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

/// `text` with every `from` replaced by `to`, for a variant of a workload;
/// panics when `text` has no `from` (the variant would be the original).
pub fn replaced(text: &str, from: &str, to: &str) -> String {
    assert!(
        text.contains(from),
        "the workload has no {from:?} to replace with {to:?}:\n{text}"
    );
    text.replace(from, to)
}

/// [`SHORT_ADD_COLUMN`] without a blocker, on a `duration_s` clock with the DDL at `ddl_at_s`.
pub fn without_blocker(duration_s: u32, ddl_at_s: u32) -> String {
    let blocker = "[blocker]\nat = \"2s\"\nhold = \"5s\"\nsql = \"SELECT count(*) FROM orders\"\n";
    let text = replaced(SHORT_ADD_COLUMN, blocker, "");
    let duration = format!("duration = \"{duration_s}s\"");
    let text = replaced(&text, "duration = \"12s\"", &duration);
    let ddl_at = format!("[ddl]\nat = \"{ddl_at_s}s\"");
    replaced(&text, "[ddl]\nat = \"3s\"", &ddl_at)
}

/// A temp folder holding a workload file, and quiet flags writing into its `results`.
pub struct ShortRun {
    pub dir: tempfile::TempDir,
    pub workload: PathBuf,
    pub out: PathBuf,
    pub args: CommonArgs,
}

/// Prepares a [`ShortRun`] of [`SHORT_ADD_COLUMN`].
pub fn short_add_column() -> ShortRun {
    short_run("short.toml", SHORT_ADD_COLUMN)
}

/// Prepares a [`ShortRun`] of the workload `text`, written as `file_name`.
pub fn short_run(file_name: &str, text: &str) -> ShortRun {
    let dir = tempfile::tempdir().unwrap();
    let workload = write_workload(dir.path(), file_name, text);
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
        out: Some(out.to_path_buf()),
        quiet: true,
        seed: Some(42),
        ..CommonArgs::default()
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
