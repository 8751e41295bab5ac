//! The WAL a migration writes, per try (`ddl_attempts.csv`, `summary.csv`)
//! and per statement of the lock trace (`ddl_locks.csv`): adding a column
//! writes a few hundred bytes of catalog changes, a type change that
//! rewrites the table writes the table and its indexes again.
//!
//! Alone: the WAL position is the server's, so another test's writes (a
//! database copied from a template, a writing load) on the shared server
//! during a try would count as the try's. The load here writes nothing
//! (`SELECT 1`), so each try's WAL is its own.

use crate::common::workload::{ADD_NOTE, ddl, load, plain, script, small_orders};
use crate::common::*;
use stallbench::export::csv::{AttemptRecord, LockTraceRecord};
use stallbench::metrics::{AttemptOutcome, Summary};
use stallbench::workload::{StrategyFile, WorkloadFile};

/// A type change of `orders.total` that rewrites the table (the scale changes).
const RETYPE: &str = "ALTER TABLE orders ALTER COLUMN total TYPE numeric(12,3)";

/// Under this, a migration wrote catalog changes only (ADD COLUMN: about
/// 640 bytes; the full-page images of the few catalog pages it changes,
/// should a checkpoint fall between the trace and the try, stay below it).
const CATALOG_ONLY_BYTES: u64 = 64 * 1024;

/// Over this, a migration rewrote `orders` (50,000 rows: a few MB with its
/// two indexes).
const REWRITE_BYTES: u64 = 1024 * 1024;

/// 50,000 orders, no blocker, a load that writes nothing; `add` adds a
/// column and `retype` rewrites the table, each at 0.5 s of a 2 s run.
/// `orders` has a text column already, so it has its TOAST table: the added
/// text column does not create one (a table and an index, some 6-20 kB more).
fn two_migrations() -> WorkloadFile {
    let with_ddl = |name: &str, sql: &str| StrategyFile {
        ddl: Some(vec![sql.to_string()]),
        ..plain(name)
    };
    WorkloadFile {
        name: "wal".into(),
        description: "the WAL of an added column and of a rewrite".into(),
        setup: format!(
            "{}ALTER TABLE orders ADD COLUMN memo text;\n",
            small_orders(50_000)
        ),
        reset: "ALTER TABLE orders DROP COLUMN IF EXISTS note; \
                ALTER TABLE orders ALTER COLUMN total TYPE numeric(10,2);"
            .into(),
        load: load(1, "2s", vec![script("nothing", "SELECT 1;\n")]),
        blocker: None,
        ddl: Some(ddl("0.5s", ADD_NOTE)),
        strategies: vec![with_ddl("add", ADD_NOTE), with_ddl("retype", RETYPE)],
        expect: Default::default(),
        sweep: None,
        replica: None,
        variants: Vec::new(),
        invariants: Vec::new(),
    }
}

#[test]
fn a_rewrite_writes_megabytes_of_wal_where_an_added_column_writes_bytes() {
    let _cpus = cpus_alone();
    let run = ShortRun::on_shared_server(&two_migrations());
    run.command("compare").assert().success();

    let attempts: Vec<AttemptRecord> = read_records(&run.out.join("ddl_attempts.csv"));
    let trace: Vec<LockTraceRecord> = read_records(&run.out.join("ddl_locks.csv"));
    let summaries: Vec<Summary> = read_records(&run.out.join("summary.csv"));
    let wal_of = |strategy: &str| {
        let tries: Vec<&AttemptRecord> = (attempts.iter())
            .filter(|attempt| attempt.strategy == strategy)
            .collect();
        assert_eq!(tries.len(), 1, "{tries:?}");
        assert_eq!(tries[0].outcome, AttemptOutcome::Ok, "{tries:?}");
        let tried = tries[0].wal_bytes.expect("the try's WAL is known");
        let traced = (trace.iter())
            .find(|row| row.strategy == strategy && row.sql.starts_with("ALTER TABLE"))
            .unwrap_or_else(|| panic!("{strategy} traced: {trace:?}"))
            .wal_bytes
            .expect("the traced statement's WAL is known");
        let summary = summaries.iter().find(|s| s.strategy == strategy).unwrap();
        assert_eq!(summary.wal_bytes, Some(tried), "{summary:?}");
        (tried, traced)
    };

    let (add_tried, add_traced) = wal_of("add");
    assert!(
        (1..CATALOG_ONLY_BYTES).contains(&add_tried),
        "ADD COLUMN's try wrote {add_tried} bytes"
    );
    assert!(
        (1..CATALOG_ONLY_BYTES).contains(&add_traced),
        "ADD COLUMN in the trace wrote {add_traced} bytes"
    );
    let (retype_tried, retype_traced) = wal_of("retype");
    assert!(
        retype_tried > REWRITE_BYTES,
        "the rewrite's try wrote {retype_tried} bytes"
    );
    assert!(
        retype_traced > REWRITE_BYTES,
        "the rewrite in the trace wrote {retype_traced} bytes"
    );
    eprintln!(
        "WAL: add {add_tried} bytes (trace {add_traced}), retype {retype_tried} bytes \
         (trace {retype_traced})"
    );
}
