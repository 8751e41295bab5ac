//! `stallbench capture`: a server of the test's own with pg_stat_statements
//! runs three statements at known frequencies (50%, 33%, 17% of the calls);
//! the written workload has each of them with its share as weight, `\set`
//! ranges from the column's statistics (a skewed column Zipfian), loads as
//! `run` and `compare` read it, and runs. With `--window` the calls over the
//! window give the rate, and replayed for 3 s on a copy of the database it
//! keeps each statement's share of the calls (within 10 points). A database
//! without the extension is refused with the fix.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use stallbench::cli::CommonArgs;
use stallbench::config::{Config, Mode};
use stallbench::workload::WorkloadFile;

use crate::common::*;

/// 5,000 items; `owner` is skewed (owner 1 holds a third of the rows), `id` is unique.
const SETUP: &str = "
CREATE EXTENSION pg_stat_statements;
CREATE TABLE items (id int PRIMARY KEY, owner int NOT NULL, price numeric(10,2) NOT NULL, note text);
INSERT INTO items SELECT g, CASE WHEN g % 3 = 0 THEN 1 ELSE 1 + g % 200 END, g % 100, 'note ' || g
FROM generate_series(1, 5000) g;
ANALYZE items;
SELECT pg_stat_statements_reset();
";

/// The traffic: 300 reads by id, 200 counts by owner, 100 updates, interleaved.
fn traffic() -> String {
    let mut sql = String::new();
    let mut key: u64 = 7;
    for round in 0..100 {
        for _ in 0..3 {
            key = (key * 1_103_515_245 + 12_345) % 5_000;
            sql.push_str(&format!("SELECT note FROM items WHERE id = {};\n", key + 1));
        }
        for _ in 0..2 {
            sql.push_str(&format!(
                "SELECT count(*) FROM items WHERE owner = {};\n",
                1 + (key + round) % 200
            ));
        }
        sql.push_str(&format!(
            "UPDATE items SET price = price + 1 WHERE id = {};\n",
            1 + (key * 7) % 5_000
        ));
    }
    sql
}

fn psql(server: &OperatorServer, url: &str, args: &[&str]) {
    let mut all = vec!["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url];
    all.extend(args);
    server.run("psql", &all);
}

/// The script of the entry whose SQL contains `needle`, and its weight.
fn script_with<'a>(file: &'a WorkloadFile, needle: &str) -> (&'a str, u32) {
    let script = file
        .load
        .scripts
        .iter()
        .find(|s| s.sql.as_deref().unwrap_or_default().contains(needle))
        .unwrap_or_else(|| panic!("no script with {needle:?}"));
    (script.sql.as_deref().unwrap(), script.weight)
}

fn assert_weight_near(weight: u32, per_mille: u32, what: &str) {
    assert!(
        weight.abs_diff(per_mille) <= 30,
        "{what}: weight {weight}, share {per_mille} per mille"
    );
}

/// The written file as `run --load-only --in-place --allow-writes` and
/// `compare --in-place --ddl ...` read it: every script parses.
fn assert_loads(path: &Path, url: &str, scripts: usize) {
    let out = tempfile::tempdir().unwrap();
    let mut args = CommonArgs {
        db_url: Some(url.to_string()),
        in_place: true,
        allow_writes: true,
        out: Some(out.path().join("run")),
        ..CommonArgs::default()
    };
    let run = Config::new(Some(path.to_str().unwrap()), Mode::LoadOnly, &args).unwrap();
    assert_eq!(run.load.scripts.len(), scripts);
    args.workload.ddl = vec!["ALTER TABLE items ADD COLUMN x int".into()];
    let compare = Config::new(
        Some(path.to_str().unwrap()),
        Mode::Compare {
            strategies: Vec::new(),
        },
        &args,
    )
    .unwrap();
    assert_eq!(compare.strategies.len(), 2);
}

/// Fidelity: the captured `file` replayed for 3 s (`run --load-only
/// --in-place --allow-writes`) on a copy of the database makes each
/// statement's share of the calls in the copy's pg_stat_statements within
/// 10 points of its captured share (its weight, per mille).
fn assert_replay_keeps_the_shares(
    server: &OperatorServer,
    url: &str,
    (workload, file): (&Path, &WorkloadFile),
    dir: &Path,
) {
    psql(
        server,
        url,
        &["-c", "CREATE DATABASE replay TEMPLATE postgres"],
    );
    psql(server, url, &["-c", "SELECT pg_stat_statements_reset()"]);
    let copy = url.replace("dbname=postgres", "dbname=replay");
    stallbench_quiet("run", workload, &dir.join("replay"))
        .args([
            "--load-only",
            "--db-url",
            &copy,
            "--in-place",
            "--allow-writes",
        ])
        .args(["--duration", "3s"])
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(0);
    let counts = psql_output(
        server,
        url,
        "SELECT query || E'\\t' || sum(calls) FROM pg_stat_statements \
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'replay') GROUP BY query",
    );
    // Each script's statement as the server normalised it: `:pN` is `$N`.
    let statements: Vec<(String, u32)> = file
        .load
        .scripts
        .iter()
        .map(|script| {
            let sql = script.sql.as_deref().unwrap();
            let statement = sql.lines().last().unwrap().trim_end_matches(';');
            (statement.replace(":p", "$"), script.weight)
        })
        .collect();
    let calls: Vec<u64> = statements
        .iter()
        .map(|(statement, _)| {
            counts
                .lines()
                .filter_map(|line| line.split_once('\t'))
                .filter(|(query, _)| query == statement)
                .map(|(_, calls)| calls.parse::<u64>().unwrap())
                .sum()
        })
        .collect();
    let total: u64 = calls.iter().sum();
    assert!(total > 100, "replayed calls: {calls:?}\n{counts}");
    for ((statement, weight), calls) in statements.iter().zip(&calls) {
        let replayed = *calls as f64 / total as f64;
        let captured = f64::from(*weight) / 1000.0;
        eprintln!(
            "replay: {statement}: {calls} calls, {replayed:.3} of them; captured {captured:.3}"
        );
        assert!(
            (replayed - captured).abs() <= 0.10,
            "{statement}: {:.1}% of the replay's calls, {:.1}% captured\n{counts}",
            replayed * 100.0,
            captured * 100.0
        );
    }
}

/// What psql prints for `sql` (unaligned, tuples only).
fn psql_output(server: &OperatorServer, url: &str, sql: &str) -> String {
    let output = server.run("psql", &["-X", "-At", "-d", url, "-c", sql]);
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn capture_writes_each_statement_with_its_share_and_ranges() {
    require_postgres();
    let _cpus = cpus_shared();
    let server = OperatorServer::start_with("-c shared_preload_libraries=pg_stat_statements");
    let url = server.connection_string();
    psql(&server, &url, &["-c", SETUP]);
    let folder = server.data_dir().parent().unwrap().to_path_buf();
    std::fs::write(folder.join("traffic.sql"), traffic()).unwrap();
    let traffic_file = folder.join("traffic.sql");
    psql(&server, &url, &["-f", traffic_file.to_str().unwrap()]);

    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("w.toml");
    let assert = stallbench_command()
        .args(["capture", "--db-url", &url, "--out"])
        .arg(&written)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(0);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    let text = std::fs::read_to_string(&written).unwrap();
    eprintln!("{text}");
    assert!(stderr.contains("capture: 3 statements"), "{stderr}");
    assert!(stderr.contains("unresolved parameters: 1;"), "{stderr}");
    assert!(text.contains("Rate: unknown"), "{text}");
    assert!(text.contains("--window 60s"), "{text}");
    assert!(text.contains("--allow-writes"), "{text}");

    let file = stallbench::workload::load(written.to_str().unwrap())
        .unwrap()
        .file;
    assert_eq!(file.load.scripts.len(), 3, "{text}");
    assert_eq!(file.load.rate, None);
    let (by_id, weight) = script_with(&file, "SELECT note FROM items WHERE id = :p1;");
    assert_weight_near(weight, 500, "by id");
    assert!(by_id.contains("\\set p1 random(1, 5000)\n"), "{by_id}");
    let (by_owner, weight) = script_with(&file, "WHERE owner = :p1;");
    assert_weight_near(weight, 333, "by owner");
    assert!(
        by_owner.contains("\\set p1 random_zipfian(1, 200, 1.1)\n"),
        "{by_owner}"
    );
    let (update, weight) = script_with(&file, "SET price = price + :p1 WHERE id = :p2;");
    assert_weight_near(weight, 167, "update");
    assert!(update.contains("-- FIXME: queryid "), "{update}");
    assert!(update.contains("\\set p2 random(1, 5000)\n"), "{update}");
    assert!(
        text.contains("16.7% of calls, 1.0 rows per call -- write"),
        "{text}"
    );
    // No value of the table but the ranges' ends: no note, no price.
    assert!(!text.contains("note 1"), "{text}");
    assert_loads(&written, &url, 3);

    // --top 1 keeps the most called statement; --tables keeps those touching a table.
    let top = dir.path().join("top.toml");
    stallbench_command()
        .args([
            "capture", "--db-url", &url, "--top", "1", "--tables", "items",
        ])
        .arg("--out")
        .arg(&top)
        .assert()
        .code(0);
    let file = stallbench::workload::load(top.to_str().unwrap())
        .unwrap()
        .file;
    assert_eq!(file.load.scripts.len(), 1);
    assert_eq!(script_with(&file, "WHERE id = :p1;").1, 1000);
    stallbench_command()
        .args(["capture", "--db-url", &url, "--tables", "orders", "--out"])
        .arg(dir.path().join("none.toml"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "check the names in --tables orders",
        ));

    // The file runs on the server as captured.
    let out = dir.path().join("run");
    stallbench_quiet("run", &written, &out)
        .args([
            "--load-only",
            "--db-url",
            &url,
            "--in-place",
            "--allow-writes",
        ])
        .args(["--duration", "2s", "--clients", "2"])
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(0);

    // --window: the calls over 2 s while the traffic runs, and their rate.
    let windowed = dir.path().join("window.toml");
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                psql(&server, &url, &["-f", traffic_file.to_str().unwrap()]);
            }
        });
        let result = stallbench_command()
            .args(["capture", "--db-url", &url, "--window", "2s", "--out"])
            .arg(&windowed)
            .timeout(std::time::Duration::from_secs(60))
            .assert();
        stop.store(true, Ordering::Relaxed);
        result.code(0);
    });
    let text = std::fs::read_to_string(&windowed).unwrap();
    assert!(text.contains("Rate: measured over a 2 s window"), "{text}");
    let file = stallbench::workload::load(windowed.to_str().unwrap())
        .unwrap()
        .file;
    assert!(file.load.rate.is_some_and(|rate| rate > 10.0), "{text}");
    assert_weight_near(script_with(&file, "WHERE id = :p1;").1, 500, "by id");
    assert_weight_near(script_with(&file, "WHERE owner = :p1;").1, 333, "by owner");
    assert!(text.contains("calls/s -- write"), "{text}");
    assert_replay_keeps_the_shares(&server, &url, (&windowed, &file), dir.path());

    // A database of the same server without the extension.
    psql(&server, &url, &["-c", "CREATE DATABASE bare"]);
    let bare = url.replace("dbname=postgres", "dbname=bare");
    stallbench_command()
        .args(["capture", "--db-url", &bare, "--out"])
        .arg(dir.path().join("bare.toml"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "database bare has no extension pg_stat_statements; run CREATE EXTENSION pg_stat_statements",
        ));
}

#[test]
fn a_server_without_pg_stat_statements_is_refused_with_the_fix() {
    require_postgres();
    let database = shared_server().empty_database();
    let dir = tempfile::tempdir().unwrap();
    let assert = stallbench_command()
        .args(["capture", "--db-url", &database.url, "--out"])
        .arg(dir.path().join("w.toml"))
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        stderr.contains("shared_preload_libraries = 'pg_stat_statements'")
            && stderr.contains("CREATE EXTENSION pg_stat_statements"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!dir.path().join("w.toml").exists());
}
