//! `scripts/flaky.sh` (docs/testing.md) is valid bash, and its table counts
//! each test's failures and slowest time from libtest's JSON reports. (A real
//! run clones and builds the crate and runs the suite N times: minutes per run.)

use std::path::Path;
use std::process::Command;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/flaky.sh")
}

#[test]
fn the_flaky_script_parses() {
    let output = Command::new("bash")
        .arg("-n")
        .arg(script())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_flaky_table_counts_failures_and_the_slowest_time_per_test() {
    let dir = tempfile::tempdir().unwrap();
    let event = |name: &str, outcome: &str, seconds: f64| {
        format!(
            r#"{{ "type": "test", "name": "{name}", "event": "{outcome}", "exec_time": {seconds} }}"#
        )
    };
    let started = r#"{ "type": "test", "event": "started", "name": "outage::a" }"#;
    let runs = [
        [
            started.to_string(),
            event("outage::a", "ok", 1.5),
            event("ranking::b", "failed", 7.25),
        ],
        [
            started.to_string(),
            event("outage::a", "ok", 2.5),
            event("ranking::b", "ok", 6.0),
        ],
    ];
    for (i, lines) in runs.iter().enumerate() {
        let text = format!("captured stdout that is not JSON\n{}\n", lines.join("\n"));
        std::fs::write(dir.path().join(format!("run-{}.json", i + 1)), text).unwrap();
    }

    let output = Command::new("bash")
        .arg(script())
        .arg("--report")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("2 tests, 2 runs; 1 failed at least once"),
        "{stdout}"
    );
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| test") && !l.starts_with("| ---"))
        .collect();
    assert_eq!(
        rows,
        [
            "| ranking::b | 1 of 2 | 7.2 |",
            "| outage::a | 0 of 2 | 2.5 |"
        ],
        "{stdout}"
    );
}
