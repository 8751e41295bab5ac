//! The bundled `create-index` workload, whose index builds on 500,000 rows
//! must end before its run does (the others: `crate::bundled`).

use crate::bundled::passes_its_expectations_now;
use crate::common::*;

#[test]
fn create_index() {
    let _cpus = cpus_alone();
    let dir = passes_its_expectations_now("create-index");
    let summary = std::fs::read_to_string(dir.path().join("out/summary.csv")).unwrap();
    assert!(summary.starts_with("strategy,"), "{summary}");
}
