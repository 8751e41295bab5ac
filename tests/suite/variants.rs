//! Variants of the load compared in one run, and the invariants that count
//! what each lost: a read-then-write at READ COMMITTED with a sleep between
//! the read and the write loses updates for certain; the same with FOR
//! UPDATE loses none, and the ranking puts the one that lost data last
//! whatever its throughput.

use crate::common::*;
use stallbench::config::Mode;
use stallbench::metrics::ranking::rank_strategies;

/// The counter workload: three clients read the counter, sleep 50 ms and
/// write what they read plus one, for 3 s; `variants` and `invariants` are
/// appended as written.
fn counter_workload(variants_and_invariants: &str) -> String {
    format!(
        r#"
name = "counter"
setup = "CREATE TABLE counter (id int PRIMARY KEY, n bigint NOT NULL); INSERT INTO counter VALUES (1, 0);"
reset = "UPDATE counter SET n = 0 WHERE id = 1;"

[load]
clients = 3
duration = "3s"

[[load.scripts]]
name = "read-then-write"
sql = """
BEGIN;
SELECT n FROM counter WHERE id = 1 \\gset
SELECT pg_sleep(0.05);
UPDATE counter SET n = :n + 1 WHERE id = 1;
COMMIT;
"""
{variants_and_invariants}
"#
    )
}

const VARIANTS: &str = r#"
[[variants]]
name = "read-committed"
isolation = "read-committed"

[[variants]]
name = "for-update"
isolation = "read-committed"

[[variants.scripts]]
sql = """
BEGIN;
SELECT n FROM counter WHERE id = 1 FOR UPDATE \\gset
SELECT pg_sleep(0.05);
UPDATE counter SET n = :n + 1 WHERE id = 1;
COMMIT;
"""
"#;

const COUNTER_INVARIANT: &str = r#"
[[invariants]]
name = "counter equals committed increments"
sql = "SELECT n FROM counter WHERE id = 1"
expect = ":transactions"
counts = "lost updates"
"#;

#[test]
fn read_committed_loses_updates_for_update_does_not_and_ranks_last() {
    let _cpus = cpus_shared();
    let text = counter_workload(&format!("{VARIANTS}{COUNTER_INVARIANT}"));
    let run = ShortRun::of_text("counter.toml", &text);
    let report = run.execute(Mode::Compare {
        strategies: Vec::new(),
    });
    let (lossy, locked) = (&report.strategies[0], &report.strategies[1]);
    assert_eq!(lossy.strategy, "read-committed");
    assert_eq!(locked.strategy, "for-update");

    // Three clients each read, sleep 50 ms and write: most writes overwrite another's.
    let lost = &lossy.invariants[0];
    assert!(lost.anomalies > 0, "{lost:?}");
    assert_eq!(lost.expected, lossy.summary.transactions.to_string());
    let held = &locked.invariants[0];
    assert_eq!(held.anomalies, 0, "{held:?}");
    assert!(locked.summary.transactions > 0, "{:?}", locked.summary);
    // The FOR UPDATE variant serializes on the row: less throughput, yet it ranks first.
    assert!(lossy.summary.transactions > locked.summary.transactions);
    let ranked = rank_strategies(&report);
    let names: Vec<&str> = ranked.iter().map(|p| p.row.strategy.as_str()).collect();
    assert_eq!(names, ["for-update", "read-committed"]);

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.out.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["strategies"][0]["anomalies"], lost.anomalies);
    assert_eq!(summary["strategies"][1]["anomalies"], 0);
    let summary_md = std::fs::read_to_string(run.out.join("summary.md")).unwrap();
    assert!(
        summary_md.contains(&format!(
            "read-committed lost data: {} lost updates (counter equals committed increments",
            thousands(lost.anomalies)
        )),
        "{summary_md}"
    );
}

#[test]
fn an_invariant_that_errors_or_returns_two_rows_is_exit_2_before_the_load() {
    let text = counter_workload(&format!(
        "{VARIANTS}\n[[invariants]]\nname = \"rows\"\nsql = \"SELECT n FROM countr\"\nexpect = \"1\"\n"
    ));
    let run = ShortRun::of_text("counter.toml", &text);
    let assert = run.command("compare").assert().code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains(
            "counter.toml: [[invariants]] rows: sql failed: relation \"countr\" does not exist"
        ),
        "{stderr}"
    );
    let error_lines: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("error: "))
        .collect();
    assert_eq!(error_lines.len(), 1, "{stderr}");
    assert!(
        error_lines[0].ends_with("; fix sql = \"...\" so that it returns one value"),
        "{stderr}"
    );
    // Found before any load ran.
    assert!(!run.out.join("summary.csv").exists());

    let two_rows = counter_workload(&format!(
        "{VARIANTS}\n[[invariants]]\nname = \"two\"\nsql = \"SELECT 1 UNION ALL SELECT 2\"\nexpect = \"1\"\n"
    ));
    let run = ShortRun::of_text("counter.toml", &two_rows);
    let assert = run.command("compare").assert().code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains(
            "[[invariants]] two: sql must return one row with one value and it returned 2 rows"
        ),
        "{stderr}"
    );
}

/// `1234` as the sentences write it: `1,234`.
fn thousands(count: u64) -> String {
    stallbench::export::format::format_thousands(count)
}

/// The rest of the hostile input: an invariant that returns no row, and a
/// variant with an isolation level PostgreSQL has not: one error line naming
/// the file and the key, exit 2, before any load.
#[test]
fn an_invariant_with_no_row_or_an_unknown_isolation_is_exit_2_naming_the_key() {
    let no_row = counter_workload(&format!(
        "{VARIANTS}\n[[invariants]]\nname = \"none\"\nsql = \"SELECT n FROM counter WHERE id = 2\"\nexpect = \"1\"\n"
    ));
    let snapshot = counter_workload("[[variants]]\nname = \"snap\"\nisolation = \"snapshot\"\n");
    for (text, problem) in [
        (
            no_row,
            "counter.toml: [[invariants]] none: sql must return one row with one value and it returned no row; fix sql",
        ),
        (
            snapshot,
            "counter.toml: [[variants]] snap: isolation = \"snapshot\"; use \"read-committed\", \"repeatable-read\" or \"serializable\"",
        ),
    ] {
        let run = ShortRun::of_text("counter.toml", &text);
        let assert = run.command("compare").assert().code(2);
        let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
        let error_lines: Vec<&str> = stderr
            .lines()
            .filter(|line| line.starts_with("error: "))
            .collect();
        assert_eq!(error_lines.len(), 1, "{stderr}");
        assert!(error_lines[0].contains(problem), "{stderr}");
        assert!(!run.out.join("summary.csv").exists());
    }
}
