//! `stallbench check --replica`: the throwaway server starts with a hot
//! standby, and each measured migration runs once more with the report on
//! the standby and readers on both servers. An ADD COLUMN deployed with
//! `retry` keeps the primary's readers within the budget (its lock_timeout
//! gives up behind the report there) and still stalls the replica's: the
//! standby replays its ACCESS EXCLUSIVE behind the report on the standby,
//! which no lock_timeout on the primary sees. One run on short clocks (the
//! report held 5 s, 8 s per run, one strategy: two runs). The load reads and
//! writes on the primary (ADD COLUMN blocks writes): the standby's
//! `hot_standby_feedback` keeps their pruning from stopping the replay
//! before the lock does.

use crate::check::{check_json, migrations_folder};
use crate::common::*;

#[test]
fn retry_keeps_the_primary_within_the_budget_and_fails_on_the_replica() {
    require_postgres();
    // Beside other tests: the replica's stall is about 3.5 s, far over 1 s.
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[
            (
                "0001_init.sql",
                "CREATE TABLE orders (id bigint PRIMARY KEY, total numeric NOT NULL);\n",
            ),
            (
                "0002_add_note.sql",
                "ALTER TABLE orders ADD COLUMN note text;\n",
            ),
        ],
    );
    let out = dir.path().join("out");
    let assert = stallbench_command()
        .arg("check")
        .arg(&migrations)
        .args([
            "--replica",
            "--deploy",
            "retry",
            "--recommend",
            "retry",
            "--rows",
            "1000",
            "--hold",
            "5s",
            "--duration",
            "8s",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .assert();
    let stdout = stdout_of(&assert);
    assert.code(3);

    let check = check_json(&out);
    let add = crate::check::migration(&check, "0002_add_note.sql");
    assert_eq!(add["verdict"], "fail", "{add}");
    // Failed on the replica alone: the primary's run is within the budget.
    let broken = add["broken"].as_array().unwrap();
    assert_eq!(broken.len(), 1, "{add}");
    let broken = broken[0].as_str().unwrap();
    assert!(
        broken.starts_with("stalls the replica's readers ")
            && broken.contains(" s (budget 1 s): the standby's replay of its lock waited ")
            && broken
                .ends_with("behind the report there, which lock_timeout on the primary cannot see"),
        "{broken}"
    );
    let rows = add["strategies"].as_array().unwrap();
    let row = |role: &str| {
        rows.iter()
            .find(|row| row["role"] == role)
            .unwrap_or_else(|| panic!("no {role} row: {add}"))
    };
    let primary = row("deployed");
    assert_eq!(primary["within_budget"], true, "{primary}");
    assert_eq!(primary["replica_zero_tps_seconds"], serde_json::Value::Null);
    let replica = row("deployed-replica");
    assert_eq!(replica["strategy"], "retry");
    assert_eq!(replica["within_budget"], false, "{replica}");
    assert_eq!(replica["ddl_outcome"], "ok", "{replica}");
    assert!(
        replica["replica_longest_stall_s"].as_u64() >= Some(2),
        "{replica}"
    );
    assert!(
        replica["replica_replay_waiting_s"].as_u64() >= Some(2),
        "{replica}"
    );
    assert!(
        replica["replica_max_lag_s"].as_f64() >= Some(1.5),
        "{replica}"
    );
    assert_eq!(replica["replica_cancelled"], 0, "{replica}");
    assert_eq!(
        add["replica_results"],
        out.join("0002_add_note/replica").display().to_string()
    );

    let csv = std::fs::read_to_string(out.join("check.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().ends_with(
            ",broken,fix,replica_zero_tps_seconds,replica_longest_stall_s,replica_failed,\
             replica_replay_waiting_s,replica_max_lag_s,replica_cancelled,wal_bytes"
        ),
        "{csv}"
    );
    let check_md = std::fs::read_to_string(out.join("check.md")).unwrap();
    assert!(
        check_md.contains(
            "On the replica, with a report holding ACCESS SHARE on orders for 5 s on the hot \
             standby and the readers on both servers:"
        ) && check_md.contains("| retry (deployed-replica) | **over** |"),
        "{check_md}"
    );
    assert!(
        stdout.starts_with(
            "FAIL: 1 of 1 new migration breaks the budget as deployed (retry; \
                            longest stall <= 1 s (the replica's readers too)): 0002_add_note.sql"
        ) && stdout.contains(
            "FAIL  0002_add_note.sql: ACCESS EXCLUSIVE on the standby: its replay waits \
             behind the standby's own long transactions"
        ) && stdout.contains("deploy with `replica-aware`"),
        "{stdout}"
    );
    // The replica's runs are a compare folder of their own: both servers loaded.
    let replica_folder = out.join("0002_add_note/replica");
    let run_json = std::fs::read_to_string(replica_folder.join("run.json")).unwrap();
    assert!(run_json.contains("\"load_on\": \"both\""), "{run_json}");
    assert!(
        run_json.contains("\"blocker_on\": \"replica\""),
        "{run_json}"
    );
    assert!(replica_folder.join("summary.csv").is_file());
    assert!(replica_folder.join("replica-server.log").is_file());
}
