//! pgbench scripts run unchanged on a real server: every meta-command in
//! every query mode with zero failed transactions (each check in the script
//! fails its transaction if a value is wrong), a division by zero that fails
//! exactly its transactions while the run goes on, pgbench's tables built at
//! a scale, scripts refused before the run where they cannot work, and the
//! same statements reaching the server as from pgbench itself
//! (pg_stat_statements call counts).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;

/// Tables the feature script reads and writes.
const SETUP: &str = "
CREATE TABLE kv (k int PRIMARY KEY, v int NOT NULL);
INSERT INTO kv SELECT g, g * 10 FROM generate_series(1, 1000) g;
CREATE TABLE counter (id int PRIMARY KEY, i bigint NOT NULL);
INSERT INTO counter VALUES (1, 0);
";

/// One transaction using the whole language; any wrong value divides by zero.
const FEATURES: &str = r"-- skewed keys, scattered: every value must be a key of kv
\set k random_zipfian(1, 1000, 1.07)
\set p 1 + permute(:k - 1, 1000)
\set h abs(hash(:p)) % 3
\set nap random(0, 1)
\sleep :nap ms
SELECT v AS value, k FROM kv
  WHERE k = :p \gset
\if :value <> :p * 10
  \set fail 1 / 0
\endif
\if :h = 0
  \if :k > 500
    SELECT 'high' AS band \gset
  \elif :k > 10
    SELECT 'middle' AS band \gset
  \else
    SELECT 'low' AS band \gset
  \endif
\elif :h = 1
  SELECT 'one' AS band \gset
\else
  SELECT 'two' AS band \gset
\endif
\; SELECT 6 AS six \; SELECT 7 AS seven \; \aset
\set check CASE WHEN :six + :seven = 13 AND :{?band} THEN 1 ELSE 1 / 0 END
\setshell five echo 5
\if :five <> 5 OR :client_id IS NULL
  \set fail 1 / 0
\endif
";

/// The pipeline part, for the modes of the extended protocol.
const PIPELINE: &str = r"\startpipeline
SELECT :p::int;
\syncpipeline
UPDATE kv SET v = v WHERE k = :p;
\endpipeline
";

fn workload(dir: &Path, script: &str) -> PathBuf {
    std::fs::write(dir.join("features.sql"), script).unwrap();
    let text = format!(
        "name = \"features\"\nsetup = \"\"\"{SETUP}\"\"\"\n[load]\nclients = 2\nduration = \"3s\"\n\
         [[load.scripts]]\nname = \"features\"\nfile = \"features.sql\"\n"
    );
    write_text(dir, "features.toml", &text)
}

/// `transactions` and `failed` of the run's one strategy, from summary.csv.
fn transactions_and_failed(out: &Path) -> (u64, u64) {
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(summary.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let row = reader.records().next().unwrap().unwrap();
    let column = |name: &str| -> u64 {
        let index = headers.iter().position(|header| header == name).unwrap();
        row[index].parse().unwrap()
    };
    (column("transactions"), column("failed"))
}

/// `run WORKLOAD --load-only` with `flags`; returns the results folder after exit 0.
fn run_load(dir: &Path, workload: &str, name: &str, flags: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let assert = stallbench_quiet("run", workload, &out)
        .arg("--load-only")
        .args(flags)
        .timeout(std::time::Duration::from_secs(120))
        .assert();
    let output = assert.get_output();
    let failures = std::fs::read_to_string(out.join("failures.csv")).unwrap_or_default();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{name}: {}\n{failures}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

#[test]
fn every_meta_command_runs_without_a_failure_in_every_query_mode() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let with_pipeline = workload(dir.path(), &format!("{FEATURES}{PIPELINE}"));
    let with_pipeline = with_pipeline.to_str().unwrap();
    let runs: [(&str, &[&str]); 2] = [
        ("prepared", &["--allow-shell"]),
        ("extended", &["--allow-shell", "--protocol", "extended"]),
    ];
    // Each run on a new database of the shared server: the subject is the
    // script language, not the server's start, and four throwaway servers'
    // starts were most of this test's time.
    let on_shared_server = |flags: &[&str]| -> (TestDatabase, Vec<String>) {
        let database = shared_server().empty_database();
        let mut flags: Vec<String> = flags.iter().map(|flag| flag.to_string()).collect();
        flags.extend(["--db-url".to_string(), database.url.clone()]);
        (database, flags)
    };
    for (name, flags) in runs {
        let (_database, flags) = on_shared_server(flags);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let out = run_load(dir.path(), with_pipeline, name, &flags);
        let (transactions, failed) = transactions_and_failed(&out);
        assert!(transactions > 20, "{name}: {transactions} transactions");
        assert_eq!(failed, 0, "{name}");
    }
    // The simple protocol and the application pool have no pipelines.
    let plain = workload(dir.path(), FEATURES);
    let plain = plain.to_str().unwrap();
    let runs: [(&str, &[&str]); 2] = [
        ("simple", &["--allow-shell", "-M", "simple"]),
        (
            "pool",
            &["--allow-shell", "--rate", "100", "--pool-size", "2"],
        ),
    ];
    for (name, flags) in runs {
        let (_database, flags) = on_shared_server(flags);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let out = run_load(dir.path(), plain, name, &flags);
        let (transactions, failed) = transactions_and_failed(&out);
        assert!(transactions > 20, "{name}: {transactions} transactions");
        assert_eq!(failed, 0, "{name}");
    }
}

#[test]
fn a_division_by_zero_fails_exactly_its_transactions_and_the_run_goes_on() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    // Every transaction takes the next counter value; every fifth divides by zero.
    let script = "UPDATE counter SET i = i + 1 WHERE id = 1 RETURNING i \\gset\n\\if :i % 5 = 0\n\\set y 1 / 0\n\\endif\n";
    let workload = workload(dir.path(), script);
    let out = run_load(dir.path(), workload.to_str().unwrap(), "division", &[]);
    let (transactions, failed) = transactions_and_failed(&out);
    let taken = transactions + failed;
    assert!(taken > 100, "{taken} transactions");
    // Counter values 1..=taken, one per transaction (give or take the two in flight at the end).
    let expected = taken as f64 / 5.0;
    assert!(
        (failed as f64 - expected).abs() <= 2.0,
        "failed {failed}, expected {expected} of {taken}"
    );
    let failures = std::fs::read_to_string(out.join("failures.csv")).unwrap();
    assert!(
        failures.contains("script,\"\"\"features:3\"\" \\set y N / N: division by zero\""),
        "{failures}"
    );
}

#[test]
fn the_pgbench_workload_builds_pgbench_s_tables_at_the_scale() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    // Checks the tables as `pgbench -i -s 2` leaves them, next to select-only.
    let check = dir.path().join("check.sql");
    std::fs::write(
        &check,
        "SELECT count(*) AS accounts, max(aid) AS top, max(bid) AS branches FROM pgbench_accounts \\gset\n\
         SELECT count(*) AS tellers FROM pgbench_tellers \\gset\n\
         \\if :accounts <> 200000 OR :top <> 200000 OR :branches <> 2 OR :tellers <> 20\n\
         \\set fail 1 / 0\n\\endif\n",
    )
    .unwrap();
    let check = format!("{}@1", check.display());
    let out = run_load(
        dir.path(),
        "pgbench",
        "scale",
        &[
            "-b",
            "select-only@10",
            "--set",
            "scale=2",
            "-f",
            &check,
            "--duration",
            "2s",
        ],
    );
    let (transactions, failed) = transactions_and_failed(&out);
    assert!(transactions > 100, "{transactions} transactions");
    assert_eq!(failed, 0);
}

#[test]
fn scripts_that_cannot_run_are_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let shell = dir.path().join("shell.sql");
    std::fs::write(&shell, "SELECT 1;\n\\shell echo hello\n").unwrap();
    let pipeline = dir.path().join("pipeline.sql");
    std::fs::write(&pipeline, "\\startpipeline\nSELECT 1;\n\\endpipeline\n").unwrap();
    let cases: [(&Path, &[&str], &str); 3] = [
        (&shell, &[], "script "),
        (
            &pipeline,
            &["--protocol", "simple"],
            "needs the extended query protocol",
        ),
        (
            &pipeline,
            &["--rate", "10", "--pool-size", "2"],
            "cannot run in the application pool",
        ),
    ];
    for (script, flags, expected) in cases {
        let assert = stallbench_command()
            .args(["run", "--load-only", "--quiet", "-f"])
            .arg(script)
            .args(flags)
            .assert()
            .code(2);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
    }
    let assert = stallbench_command()
        .args(["run", "--load-only", "-f"])
        .arg(&shell)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        stderr.contains("line 2") && stderr.contains("--allow-shell"),
        "{stderr}"
    );
    let assert = stallbench_command()
        .args(["run", "--load-only", "-f"])
        .arg(dir.path().join("missing.sql"))
        .args(["-b", "nope"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stderr.contains("missing.sql"), "{stderr}");
    let bad = dir.path().join("bad.sql");
    std::fs::write(&bad, "SELECT 1;\n\\set x (1 + \n").unwrap();
    let assert = stallbench_command()
        .args(["run", "--load-only", "-f"])
        .arg(&bad)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stderr.contains("bad.sql line 2 column"), "{stderr}");
}

/// A script pgbench 15 (the server's) and stallbench both run.
const PARITY: &str = r"\set aid random(1, 100000 * :scale)
\set r random_zipfian(1, 1000, 1.07)
\set k 1 + permute(:r, 1000)
\set h abs(hash(:aid)) % 10
SELECT abalance FROM pgbench_accounts WHERE aid = :aid \gset
\if :h < 5
  UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
\else
  SELECT count(*) FROM pgbench_branches WHERE bid = 1 AND :abalance::int > -1000000;
\endif
\startpipeline
SELECT :k::int + 1;
SELECT :h::int * 2, :h::int;
\endpipeline
";

/// Calls per statement of the script in pg_stat_statements, by text with the parameter numbers dropped.
fn statement_calls(server: &OperatorServer) -> BTreeMap<String, i64> {
    let output = server.run(
        "psql",
        &[
            "-X",
            "-A",
            "-t",
            "-F",
            "|",
            "-d",
            &server.connection_string(),
            "-c",
            "SELECT regexp_replace(query, '\\$[0-9]+', '$', 'g'), calls FROM pg_stat_statements \
             WHERE query ~ '^(SELECT abalance FROM|UPDATE pgbench_accounts SET abalance = abalance \\+|\
             SELECT count\\(\\*\\) FROM pgbench_branches|SELECT \\$)'",
        ],
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.rsplit_once('|'))
        .map(|(query, calls)| (query.to_string(), calls.trim().parse::<i64>().unwrap()))
        .fold(BTreeMap::new(), |mut calls, (query, count)| {
            *calls.entry(query).or_insert(0) += count;
            calls
        })
}

fn reset_statements(server: &OperatorServer) {
    let url = server.connection_string();
    server.run(
        "psql",
        &[
            "-X",
            "-q",
            "-d",
            &url,
            "-c",
            "SELECT pg_stat_statements_reset()",
        ],
    );
}

#[test]
fn pgbench_and_stallbench_send_the_same_statements() {
    require_postgres();
    let _cpus = cpus_shared();
    let server = OperatorServer::start_with("-c shared_preload_libraries=pg_stat_statements");
    let url = server.connection_string();
    server.run(
        "psql",
        &[
            "-X",
            "-q",
            "-d",
            &url,
            "-c",
            "CREATE EXTENSION pg_stat_statements",
        ],
    );
    server.run("pgbench", &["-i", "-q", "-s", "1", &url]);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("parity.sql");
    std::fs::write(&script, PARITY).unwrap();
    // The script must be readable by pgbench, which runs as the server's user.
    let pgbench_script = server.data_dir().parent().unwrap().join("parity.sql");
    std::fs::write(&pgbench_script, PARITY).unwrap();

    reset_statements(&server);
    let out = dir.path().join("stallbench");
    stallbench_quiet("run", "--load-only", &out)
        .args(["--db-url", &url, "--in-place", "--allow-writes", "-f"])
        .arg(&script)
        // 5 s: at least 500 transactions to split even at a load of 15
        // (3 s gave 424 there, in a five-at-a-time run beside two builds).
        .args(["--clients", "2", "--duration", "5s"])
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(0);
    let (transactions, failed) = transactions_and_failed(&out);
    assert_eq!(failed, 0);
    let ours = statement_calls(&server);

    reset_statements(&server);
    let per_client = (transactions / 2).to_string();
    let script_arg = pgbench_script.to_str().unwrap();
    server.run(
        "pgbench",
        &[
            "-n",
            "-M",
            "prepared",
            "-c",
            "2",
            "-t",
            &per_client,
            "-f",
            script_arg,
            &url,
        ],
    );
    let theirs = statement_calls(&server);

    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "stallbench {ours:?}\npgbench {theirs:?}"
    );
    assert_eq!(ours.len(), 5, "{ours:?}");
    // The statements every transaction sends: as many calls on both sides
    // (pgbench ran stallbench's transaction count).
    let branch = |query: &String| query.starts_with("UPDATE") || query.contains("pgbench_branches");
    for (query, ours_calls) in ours.iter().filter(|(query, _)| !branch(query)) {
        let theirs_calls = theirs[query];
        let ratio = *ours_calls as f64 / theirs_calls as f64;
        assert!(
            (0.95..=1.05).contains(&ratio),
            "{query}: stallbench {ours_calls}, pgbench {theirs_calls} calls"
        );
    }
    // The `\if` branches: one per transaction, taken at random with even
    // odds on each side (`hash(:aid) % 10 < 5`), so each side splits its
    // transactions about half and half. The split is a coin toss, not a
    // property of the client: over 1,000 transactions one side's share has a
    // standard deviation of 1.6 points, and two sides' calls differed by 6%
    // once (1,285 against 1,368), so the split is held to 40-60% per side.
    let branches = |calls: &BTreeMap<String, i64>| -> Vec<i64> {
        calls
            .iter()
            .filter(|(query, _)| branch(query))
            .map(|(_, calls)| *calls)
            .collect()
    };
    let (ours_branches, theirs_branches) = (branches(&ours), branches(&theirs));
    assert!(
        transactions >= 500,
        "too few transactions to split: {transactions}"
    );
    for (side, calls) in [
        ("stallbench", &ours_branches),
        ("pgbench", &theirs_branches),
    ] {
        let total: i64 = calls.iter().sum();
        assert_eq!(calls.len(), 2, "{side}: {calls:?}");
        let ratio = total as f64 / transactions as f64;
        assert!(
            (0.95..=1.05).contains(&ratio),
            "{side}: {calls:?} for {transactions} transactions"
        );
        for &taken in calls {
            let share = taken as f64 / total as f64;
            assert!((0.4..=0.6).contains(&share), "{side}: {calls:?}");
        }
    }
}
