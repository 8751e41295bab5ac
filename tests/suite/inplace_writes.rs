//! `--in-place` never writes to the user's tables unasked: a load script that
//! writes is refused before anything runs (exit 2, naming the script and the
//! line); with `--allow-writes` it runs, and stdout, `summary.csv` and
//! `summary.json` say how many rows it inserted, updated and deleted per
//! table, which the test checks against the tables themselves. A rolled-back
//! type change of a column the load reads is named on stdout: only a
//! committed one makes its prepared statements fail.

use crate::common::*;

/// The user's tables, in the test's own database.
const TABLES: &str = "\
    CREATE TABLE events (id bigserial PRIMARY KEY, kind int NOT NULL);
    CREATE TABLE counters (id int PRIMARY KEY, n bigint NOT NULL);
    INSERT INTO counters VALUES (1, 0);";

/// One script that reads, one that inserts an event and counts it.
const WRITES: &str = r#"
name = "writes"
description = "a load that writes to the user's tables"
setup = ""

[load]
clients = 2
duration = "2s"

[[load.scripts]]
name = "read-counter"
sql = "SELECT n FROM counters WHERE id = 1 FOR UPDATE;"

[[load.scripts]]
name = "record-event"
sql = """
\\set k random(1, 3)
BEGIN;
INSERT INTO events (kind) VALUES (:k);
UPDATE counters SET n = n + 1 WHERE id = 1;
COMMIT;
"""
"#;

#[test]
fn a_writing_load_is_refused_in_place_and_runs_with_allow_writes_counting_its_rows() {
    require_postgres();
    let _cpus = cpus_shared();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_throwaway_server(&runtime);
    let admin_url = server.connection_string();
    let url = admin_url.replace("dbname=postgres", "dbname=shop");
    runtime.block_on(async {
        let admin = connect(&admin_url).await;
        admin.batch_execute("CREATE DATABASE shop").await.unwrap();
        connect(&url).await.batch_execute(TABLES).await.unwrap();
    });
    let run = ShortRun::of_text("writes.toml", WRITES);
    // The migration changes the type of a column the load reads.
    let in_place = |out: &str| {
        let mut command = stallbench_quiet("run", &run.workload, &run.dir.path().join(out));
        command.args(["--strategy", "naive", "--in-place", "--db-url", &url]);
        command.args(["--ddl", "ALTER TABLE counters ALTER COLUMN n TYPE numeric"]);
        command.args(["--ddl-at", "1s"]);
        command
    };

    let refused = in_place("refused").assert().code(2);
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).to_string();
    assert_eq!(
        stderr,
        format!(
            "error: workload {}: [[load.scripts]] record-event line 3: \"INSERT INTO events (kind) \
             VALUES ($1)\" writes rows, and --in-place runs the load on your tables; add \
             --allow-writes to let it (the rows it writes stay, and are counted per table), or \
             make it read only\n",
            run.workload.display()
        )
    );
    assert!(!run.dir.path().join("refused").exists(), "nothing ran");
    assert_eq!(query_int(&runtime, &url, "SELECT count(*) FROM events"), 0);

    let out = run.dir.path().join("allowed");
    let allowed = in_place("allowed").arg("--allow-writes").assert().success();
    let events = query_int(&runtime, &url, "SELECT count(*) FROM events");
    let updates = query_int(&runtime, &url, "SELECT n FROM counters WHERE id = 1");
    assert!(events > 0, "the load wrote rows");
    assert_eq!(events, updates, "one update per event");
    let written = format!(
        "public.counters 0 inserted, {updates} updated, 0 deleted; \
         public.events {events} inserted, 0 updated, 0 deleted"
    );
    let stdout = stdout_of(&allowed);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[..2],
        [
            format!(
                "note: --in-place rolls each DDL step back, so it cannot show what only a \
                 committed change causes: \"ALTER TABLE counters ALTER COLUMN n TYPE numeric\" \
                 changes the type of counters.n, which workload {}: [[load.scripts]] \
                 read-counter line 1 reads with a prepared statement; if that changes the \
                 statement's result type, it fails with 0A000 cached plan must not change result \
                 type once the change commits (--apply shows it)",
                run.workload.display()
            ),
            format!("naive: the load wrote to your tables: {written}"),
        ],
        "{stdout}"
    );
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(summary.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let column = headers.iter().position(|h| h == "rows_written").unwrap();
    let row = reader.records().next().unwrap().unwrap();
    assert_eq!(&row[column], written, "{summary}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["strategies"][0]["rows_written"], written.as_str());
    let markdown = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        markdown.starts_with(&format!(
            "# writes\n\nnaive: the load wrote to your tables: {written}\n\n"
        )),
        "{markdown}"
    );
}
