//! `check` at production sizes, timed: an estimate does not depend on
//! `--rows` (see `check_sizes` for the rest).

use serde_json::Value;

use crate::check::{check_json, migration};
use crate::common::*;

/// The same `CREATE INDEX` estimated at 20,000,000 rows from 1,000
/// generated rows and from the default 100,000: scaled whole, the first was
/// eight times the second (166.78 s against 21.02 s), mostly the statement's
/// fixed cost multiplied. With the fixed part taken out, and the cost per
/// row of the table of 1,000 rows timed again at 100,000 (20,000 times
/// 1,000 rows is too far to scale), the two agree within a factor of two.
/// `--trace-only`: no run under traffic. Alone: a ratio of two timings
/// taken apart moves with whatever else the CPUs do in between.
#[test]
fn an_index_estimate_at_production_size_hardly_depends_on_rows() {
    require_postgres();
    let _cpus = cpus_alone();
    let dir = tempfile::tempdir().unwrap();
    let migrations = crate::check::migrations_folder(
        dir.path(),
        &[
            (
                "0001_envelope.sql",
                "CREATE TABLE envelope (id bigint PRIMARY KEY, sender text NOT NULL, \
                 subject text NOT NULL, sent_at timestamptz NOT NULL DEFAULT now());\n",
            ),
            (
                "0002_envelope_sender.sql",
                "CREATE INDEX envelope_sender ON envelope (sender);\n",
            ),
        ],
    );
    let estimate_with = |rows: &[&str]| -> Value {
        let out = dir.path().join(format!("out{}", rows.len()));
        let output = stallbench_command()
            .arg("check")
            .arg(&migrations)
            .args(["--new", "1", "--trace-only"])
            .args(["--table-rows", "envelope=20000000", "--quiet", "--out"])
            .arg(&out)
            .args(rows)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(3), "{output:?}");
        let check = check_json(&out);
        migration(&check, "0002_envelope_sender.sql")["estimates"][0].clone()
    };
    let few = estimate_with(&["--rows", "1000"]);
    let default = estimate_with(&[]);
    let hold_ms = |estimate: &Value| estimate["estimated_hold_ms"].as_f64().unwrap();
    let ratio = hold_ms(&few) / hold_ms(&default);
    assert!(
        (0.5..=2.0).contains(&ratio),
        "{ratio}: {few:#}\n{default:#}"
    );
    assert_eq!(
        (&few["measured_rows"], &default["measured_rows"]),
        (&Value::from(1000), &Value::from(100_000))
    );
    // From 1,000 rows, 20,000 times: the cost per row is timed again at
    // 100,000 rows, so the figure is not a lower-confidence one.
    assert_eq!(
        (&few["fit_rows"], &default["fit_rows"]),
        (&Value::from(100_000), &Value::from(100_000))
    );
    for estimate in [&few, &default] {
        assert_eq!(
            estimate["low_confidence"],
            Value::from(false),
            "{estimate:#}"
        );
        assert!(estimate["fixed_ms"].as_f64().is_some(), "{estimate:#}");
    }
}
