//! The bundled `create-index` workload, whose index builds on 500,000 rows
//! must end before its run does (the others: `crate::bundled`).

use crate::bundled::{passes_its_expectations_now, summary_of};
use crate::common::*;
use stallbench::metrics::DdlOutcome;

/// Alone: run beside other tests on a 20 s clock it left the suite's wall
/// as it was (495 s, against 494.5 s), and a neighbour's bound on the open
/// loop's lag failed in that run. The bounds this test relies on are pinned
/// here, not only in the workload's TOML:
/// the plain build stops the writers for at least a whole second,
/// CONCURRENTLY never, and both apply.
#[test]
fn create_index() {
    let _cpus = cpus_alone();
    let dir = passes_its_expectations_now("create-index");
    let plain = summary_of(dir.path(), "create-index");
    let concurrently = summary_of(dir.path(), "concurrently");
    assert!(plain.zero_tps_seconds >= 1, "create-index: {plain:?}");
    assert_eq!(plain.ddl_outcome, DdlOutcome::Ok, "{plain:?}");
    assert_eq!(
        concurrently.zero_tps_seconds, 0,
        "concurrently: {concurrently:?}"
    );
    assert_eq!(concurrently.ddl_outcome, DdlOutcome::Ok, "{concurrently:?}");
}
