//! The workloads the tests run, built as values of the harness's own file
//! model ([`WorkloadFile`]) and written as TOML, instead of TOML texts pasted
//! into each test file: a test states the reference and what it changes
//! (`workload.load.duration = "4s".into()`), and a new key of the file model
//! is one edit here.
//!
//! [`reference`] is the reference experiment's outage on a 6 s clock; the reference experiment's own 24 s run
//! is the bundled `add-column`, which `tests/suite/bundled.rs` runs.

use std::path::{Path, PathBuf};

use stallbench::workload::{
    BackoffFile, BlockerFile, DdlFile, LoadFile, ScriptFile, StrategyFile, WorkloadFile,
};

/// The reference experiment's tables: 1,000 customers and 200,000 orders with an index on `customer_id`.
pub const REFERENCE_TABLES: &str = "\
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
";

/// The reference experiment's read: the orders of a random customer.
pub const READ_ORDER: &str = "\
\\set c random(1, 1000)
SELECT count(*), sum(total) FROM orders WHERE customer_id = :c;
";

/// The read of [`qty_orders`]'s table: the quantities of a random customer.
pub const READ_QTY: &str = "\
\\set c random(1, 1000)
SELECT sum(qty) FROM orders WHERE customer_id = :c;
";

/// Undoes the reference migration.
pub const DROP_NOTE: &str = "ALTER TABLE orders DROP COLUMN IF EXISTS note;";

/// The reference migration.
pub const ADD_NOTE: &str = "ALTER TABLE orders ADD COLUMN note text";

/// `orders (id, customer_id, qty)` with `rows` rows over 1,000 customers and
/// an index on `customer_id`: the table of the column-type and rename tests.
pub fn qty_orders(rows: u32) -> String {
    format!(
        "CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id int NOT NULL, qty int NOT NULL);
INSERT INTO orders (customer_id, qty) SELECT 1 + g % 1000, 1 + g % 7 FROM generate_series(1, {rows}) g;
CREATE INDEX ON orders (customer_id);
ANALYZE orders;
"
    )
}

/// `orders (id, customer_id, total)` with `rows` rows over 1,000 customers,
/// no customers table: a small table for runs on a server the test restarts.
pub fn small_orders(rows: u32) -> String {
    format!(
        "CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id int NOT NULL, total numeric(10,2) NOT NULL);
INSERT INTO orders (customer_id, total) SELECT 1 + g % 1000, (g % 500) + 0.99 FROM generate_series(1, {rows}) g;
CREATE INDEX ON orders (customer_id);
ANALYZE orders;
"
    )
}

/// The reference experiment's outage on a 6 s clock: 4 clients read orders; a report holds the
/// table from 1 s to 5 s; the ALTER starts at 1.5 s. naive waits about 3.5 s,
/// and its readers with it (seconds 2, 3 and 4 have no transaction); retry
/// (500 ms tries, 1 s then 2 s apart) times out at 2 s and 3.5 s and gets the
/// table at 5.5 s.
pub fn reference() -> WorkloadFile {
    WorkloadFile {
        name: "short-add-column".into(),
        description: "the reference outage on a 6 s clock".into(),
        setup: REFERENCE_TABLES.into(),
        reset: DROP_NOTE.into(),
        load: load(4, "6s", vec![script("read-order", READ_ORDER)]),
        blocker: Some(report("1s", "4s")),
        ddl: Some(ddl("1.5s", ADD_NOTE)),
        strategies: vec![plain("naive"), retry("retry", "500ms", "1s", "5s")],
        expect: Default::default(),
        sweep: None,
        replica: None,
        variants: Vec::new(),
        invariants: Vec::new(),
    }
}

/// [`reference`] on a table of 20,000 orders, for a test whose subject is not
/// the data (a server's start and stop, signals, output): loading the reference experiment's
/// 200,000 rows into a server of the harness's own would only cost time.
pub fn small_reference() -> WorkloadFile {
    let mut workload = reference();
    workload.setup = small_orders(20_000);
    workload
}

/// [`reference`] without a blocker, on a `duration_s` clock with the DDL at `ddl_at_s`.
pub fn without_blocker(duration_s: u32, ddl_at_s: u32) -> WorkloadFile {
    let mut workload = reference();
    workload.blocker = None;
    workload.load.duration = format!("{duration_s}s");
    workload.ddl = Some(ddl(&format!("{ddl_at_s}s"), ADD_NOTE));
    workload
}

/// Writes `text` as `name` into `dir` and returns its path (a workload or a
/// script written by hand, as a user would).
pub fn write_text(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `[load]` of `clients` closed-loop clients for `duration`.
pub fn load(clients: u32, duration: &str, scripts: Vec<ScriptFile>) -> LoadFile {
    LoadFile {
        clients,
        duration: duration.into(),
        scripts,
        rate: None,
        client_timeout: None,
        latency_limit: None,
        max_tries: None,
        retry_lock_timeouts: None,
        variables: Default::default(),
        pool: None,
        protocol: None,
        repeat: None,
        on: None,
    }
}

/// An inline script.
pub fn script(name: &str, sql: &str) -> ScriptFile {
    ScriptFile {
        name: Some(name.into()),
        sql: Some(sql.into()),
        file: None,
        builtin: None,
        weight: 1,
    }
}

/// A report that reads every order in a transaction held from `at` for `hold`.
pub fn report(at: &str, hold: &str) -> BlockerFile {
    BlockerFile {
        kind: None,
        at: at.into(),
        hold: hold.into(),
        sql: "SELECT count(*) FROM orders".into(),
        on: None,
    }
}

/// A one-statement migration starting at `at`.
pub fn ddl(at: &str, sql: &str) -> DdlFile {
    DdlFile {
        at: at.into(),
        sql: Some(sql.into()),
        steps: None,
    }
}

/// The statement alone, no timeouts.
pub fn plain(name: &str) -> StrategyFile {
    StrategyFile {
        name: name.into(),
        kind: Some("plain".into()),
        ..StrategyFile::default()
    }
}

/// `lock_timeout` and up to 10 tries, sleeping `step`, 2 `step`, ... (at most `cap`) between them.
pub fn retry(name: &str, lock_timeout: &str, step: &str, cap: &str) -> StrategyFile {
    StrategyFile {
        name: name.into(),
        kind: Some("lock-timeout-retry".into()),
        lock_timeout: Some(lock_timeout.into()),
        max_tries: Some(10),
        backoff: Some(BackoffFile {
            kind: "linear".into(),
            step: Some(step.into()),
            base: None,
            cap: Some(cap.into()),
            jitter: None,
        }),
        ..StrategyFile::default()
    }
}

/// The workload as a TOML file's text.
pub fn to_toml(workload: &WorkloadFile) -> String {
    toml::to_string(workload).expect("a workload file model serializes")
}

/// Writes `workload` as `name` into `dir` and returns its path.
pub fn write_workload(dir: &Path, name: &str, workload: &WorkloadFile) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, to_toml(workload)).unwrap();
    path
}
