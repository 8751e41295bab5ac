//! The reset is checked, not trusted: a workload without a reset, or with one
//! that leaves the first strategy's column behind, stops `compare` with exit 2
//! naming it. And the end of the run drops nothing: a transaction still
//! stalled when the load ends is reported as unfinished, its age in the
//! latency, and counted in no second.

use crate::common::workload::ddl;
use crate::common::*;
use stallbench::config::Mode;

#[test]
fn a_workload_without_reset_stops_after_the_first_strategy_naming_the_leftover_column() {
    let _cpus = cpus_shared();
    let mut workload = without_blocker(2, 1);
    workload.reset = String::new();
    let run = ShortRun::on_shared_server(&workload);
    run.command("compare")
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "the workload has no reset and needs one: after naive, orders has a column \
             the first strategy did not see: note text; add it to reset \
             (ALTER TABLE orders DROP COLUMN IF EXISTS note)",
        ));
    let timeline = std::fs::read_to_string(run.out.join("timeline.csv")).unwrap();
    assert!(timeline.lines().any(|line| line.starts_with("naive,")));
    assert!(
        !timeline.lines().any(|line| line.starts_with("retry,")),
        "retry must not run on naive's leftovers"
    );
}

#[test]
fn a_wrong_reset_stops_after_the_first_strategy_naming_what_it_left_behind() {
    let _cpus = cpus_shared();
    let mut workload = without_blocker(2, 1);
    workload.reset = "ALTER TABLE orders DROP COLUMN IF EXISTS notes;".into();
    let run = ShortRun::on_shared_server(&workload);
    run.command("compare")
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "after naive and its reset, orders has a column the first strategy did not see: \
             note text; add it to reset (ALTER TABLE orders DROP COLUMN IF EXISTS note)",
        ));
}

#[test]
fn a_transaction_stalled_at_the_end_is_unfinished_with_its_age() {
    let _cpus = cpus_shared();
    // The DDL holds ACCESS EXCLUSIVE from 2 s to about 6 s (the CHECK sleeps
    // 4 s on the row with id 1); the load ends at 4 s with every reader queued.
    let mut workload = without_blocker(4, 2);
    workload.ddl = Some(ddl(
        "2s",
        "ALTER TABLE orders ADD CONSTRAINT slow CHECK (id <> 1 OR pg_sleep(4)::text = '')",
    ));
    let run = ShortRun::on_shared_server(&workload);
    let report = run.execute(Mode::Run {
        strategy: "naive".to_string(),
    });
    let summary = &report.strategies[0].summary;
    assert_eq!(
        summary.unfinished, 4,
        "every reader was queued behind the DDL at the end: {summary:?}"
    );
    assert!(
        summary.lat_max_ms >= 1_500.0,
        "the readers' age at the end (about 2.2 s) is a lower bound of their latency: {summary:?}"
    );
    assert!(
        (1_500.0..3_500.0).contains(&summary.unfinished_oldest_ms),
        "the oldest reader queued from about 2 s to the end (4.2 s): {summary:?}"
    );
    let last = report.strategies[0].seconds.last().unwrap();
    assert_eq!(
        (last.second, last.tps),
        (3, 0),
        "an unfinished transaction completed in no second, so the last second (all of it \
         behind the DDL) has no tps: {last:?}"
    );
    let losses = stallbench::export::sentences::losses(&report.strategies[0]).join("; ");
    assert!(
        losses.contains("4 transactions unfinished at the end, the oldest "),
        "{losses}"
    );
    assert_eq!(summary.ddl_outcome, "ok", "{summary:?}");
}
