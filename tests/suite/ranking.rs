//! A migration that makes every later transaction fail never stalls, yet it
//! cannot rank first: the headline says what happened. (The ranking of a
//! stall against a stall is `tests/outage.rs`'s.)

use crate::common::workload::{READ_QTY, ddl, load, plain, qty_orders, report, retry, script};
use crate::common::*;
use stallbench::metrics::Summary;
use stallbench::workload::WorkloadFile;

/// A 6 s run: the report holds the table from 1 s to 5 s. `naive` adds a
/// column at 1.5 s and stalls the readers behind the report for 3.5 s (3
/// whole seconds at zero). `rename` tries renaming the column the load reads
/// every 0.5 s with a 100 ms lock_timeout until the report ends: each try
/// holds the readers up for 100 ms of its 500 ms, so no second before the
/// rename falls below a tenth of the baseline however the CPUs are shared
/// (with a 500 ms timeout every 750 ms, three tests at a time merged the
/// dips into a 3 s stall once). Every read after the rename fails (42703
/// column "qty" does not exist), so its stall is at most the second or so
/// left after it: 1 s at most against naive's 3.
fn rename_column() -> WorkloadFile {
    let mut rename = retry("rename", "100ms", "400ms", "400ms");
    rename.ddl = Some(vec![
        "ALTER TABLE orders RENAME COLUMN qty TO quantity".into(),
    ]);
    WorkloadFile {
        name: "rename-column".into(),
        description: "a stall against a migration that breaks every later read".into(),
        setup: qty_orders(100_000),
        reset: "ALTER TABLE orders DROP COLUMN IF EXISTS note;
DO $$ BEGIN
  IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'orders'::regclass AND attname = 'quantity') THEN
    ALTER TABLE orders RENAME COLUMN quantity TO qty;
  END IF;
END $$;
"
        .into(),
        load: load(
            4,
            "6s",
            vec![script("read-qty", READ_QTY)],
        ),
        blocker: Some(report("1s", "4s")),
        ddl: Some(ddl("1.5s", "ALTER TABLE orders ADD COLUMN note text")),
        strategies: vec![plain("naive"), rename],
        expect: Default::default(),
        sweep: None,
        replica: None,
        variants: Vec::new(),
        invariants: Vec::new(),
    }
}

#[test]
fn a_migration_that_breaks_every_later_read_ranks_after_a_stall_and_the_headline_says_why() {
    let _cpus = cpus_shared();
    let run = ShortRun::on_shared_server(&rename_column());
    let assert = run.command("compare").assert().success();
    let stdout = stdout_of(&assert);
    let summary_md = std::fs::read_to_string(run.out.join("summary.md")).unwrap();
    let summaries: Vec<Summary> = read_records(&run.out.join("summary.csv"));
    let (naive, rename) = (&summaries[0], &summaries[1]);
    assert_eq!(
        (naive.strategy.as_str(), rename.strategy.as_str()),
        ("naive", "rename")
    );

    // naive stalled behind the report and lost nothing; rename never stalled,
    // completed, and every read after it failed.
    assert_eq!(naive.failed, 0, "{naive:?}");
    assert_eq!(rename.ddl_outcome, "ok", "{rename:?}");
    assert!(naive.longest_stall_s >= 3, "{naive:?}");
    assert!(rename.longest_stall_s <= 1, "{rename:?}");
    let share_percent = rename.failed as f64 * 100.0 / (rename.failed + rename.transactions) as f64;
    assert!(share_percent >= 5.0, "{rename:?}");

    // Without the failure share rename would rank first on the stall.
    let headline = format!(
        " rename failed {share_percent:.0}% of its transactions \
         (42703 column \"qty\" does not exist)."
    );
    for (name, text) in [("stdout", &stdout), ("summary.md", &summary_md)] {
        assert!(text.contains(&headline), "{name}: {headline}\n{text}");
        assert!(
            text.contains(&format!("failed {share_percent:.0}% of transactions vs 0%")),
            "{name}\n{text}"
        );
    }
    assert!(
        summary_md.contains("| 1 | naive | failed 0% of transactions vs "),
        "{summary_md}"
    );
    assert!(
        stdout.contains("naive ranked first: it kept 0% of its baseline in its worst second"),
        "{stdout}"
    );
}
