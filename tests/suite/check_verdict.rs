//! `check`'s verdict is one a pipeline can gate on: a migration that did
//! not apply as deployed fails; a strategy is called a fix only when the
//! load ran long enough after its migration committed (its run lengthened
//! when it did not); a check that measured nothing never says "within
//! budget".

use crate::check::{check_json, migration, migrations_folder};
use crate::common::*;

const INIT: (&str, &str) = (
    "0001_init.sql",
    "CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL);\n",
);

/// A migration with its own `SET lock_timeout` gives up behind the report
/// as deployed (naive): it never applied, so the deploy failed, whatever the
/// stall (its wait of 1 s is within the budget). retry applies it once the
/// report ends, at about 5.5 s of a 5 s run: too short to show what
/// follows, so its run is lengthened (from the start), and said.
#[test]
fn a_migration_that_gives_up_as_deployed_fails_and_a_fix_needs_traffic_after_it() {
    require_postgres();
    // Beside other tests: the give-up is the lock's, 1 s against a 3 s report.
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[
            INIT,
            (
                "0002_note.sql",
                "SET lock_timeout = '1s';\nALTER TABLE items ADD COLUMN note text;\n",
            ),
        ],
    );
    let out = dir.path().join("out");
    let assert = stallbench_command()
        .arg("check")
        .arg(&migrations)
        .args(["--rows", "1000", "--hold", "3s", "--duration", "5s"])
        .args(["--quiet", "--out"])
        .arg(&out)
        .assert();
    let stdout = stdout_of(&assert);
    assert_eq!(assert.get_output().status.code(), Some(3), "{stdout}");
    assert!(
        stdout.starts_with("FAIL: 1 of 1 new migration breaks the budget as deployed")
            && stdout.contains("(0002_note.sql did not apply as deployed: a failed deploy)"),
        "{stdout}"
    );
    let check = check_json(&out);
    let note = migration(&check, "0002_note.sql");
    assert_eq!(note["verdict"], "fail", "{note}");
    let broken = note["broken"][0].as_str().unwrap();
    assert!(
        broken.starts_with("the migration did not apply: it gave up waiting for its lock (55P03 "),
        "{broken}"
    );
    let fix = note["fixes"][0].as_str().unwrap();
    assert!(
        fix.starts_with("it gave up waiting for its lock (55P03 ")
            && fix.contains(", so it never applied: what would apply it: "),
        "{fix}"
    );
    // retry applied it; its run was lengthened until 3 s of traffic followed.
    let recommended = note["recommended"].as_str().unwrap();
    assert!(
        recommended.starts_with("fixed by retry: longest stall ")
            && recommended.contains("(its run lengthened from 5 s to "),
        "{recommended}"
    );
    assert_eq!(note["fixed_by_recommended"], true, "{note}");
    // Its commit, at its first try after the report, was known before it
    // ran: one run of retry, that long from the start.
    let runs = &check["phases"]["migrations"][0]["runs"];
    let strategies: Vec<&str> = (runs.as_array().unwrap().iter())
        .map(|run| run["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(strategies, ["naive", "retry"], "{runs}");
    let retry = (note["strategies"].as_array().unwrap().iter())
        .find(|row| row["strategy"] == "retry")
        .unwrap();
    assert_eq!(retry["ddl_outcome"], "ok", "{retry}");
    // Every format says the same.
    assert!(
        stdout.contains(&format!("FAIL  0002_note.sql: {fix}")) && stdout.contains(recommended),
        "{stdout}"
    );
    let check_md = std::fs::read_to_string(out.join("check.md")).unwrap();
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    for text in [&check_md, &page] {
        assert!(
            text.contains("the migration did not apply: it gave up waiting for its lock"),
            "{text}"
        );
        assert!(text.contains("(its run lengthened from 5 s to "), "{text}");
    }
}

/// `--trace-only` measures nothing: a passing verdict says what the trace
/// found and that no stall was measured, never "within budget".
#[test]
fn a_check_that_only_traced_never_says_within_budget() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[
            INIT,
            (
                "0002_name_index.sql",
                "-- no-transaction\nCREATE INDEX CONCURRENTLY items_name ON items (name);\n",
            ),
            (
                "0003_tags.sql",
                "CREATE TABLE tags (id bigint PRIMARY KEY, item_id bigint);\n",
            ),
        ],
    );
    let out = dir.path().join("out");
    let assert = stallbench_command()
        .arg("check")
        .arg(&migrations)
        .args(["--new", "2", "--rows", "1000", "--trace-only", "--quiet"])
        .arg("--out")
        .arg(&out)
        .assert();
    let stdout = stdout_of(&assert);
    assert_eq!(assert.get_output().status.code(), Some(0), "{stdout}");
    let verdict = stdout.lines().next().unwrap();
    assert!(
        verdict.starts_with("pass: 2 new migrations traced, none over a budget by the trace.")
            && verdict.contains("no stall was measured")
            && verdict.contains("is SHARE UPDATE EXCLUSIVE (blocks nothing)"),
        "{verdict}"
    );
    assert!(
        !verdict.contains("within budget") && !verdict.contains("longest stall <="),
        "{verdict}"
    );
    let check = check_json(&out);
    assert_eq!(check["measured"], 0, "{check}");
    let check_md = std::fs::read_to_string(out.join("check.md")).unwrap();
    assert!(
        check_md.starts_with(&format!("**pass**: {}", &verdict[6..])),
        "{check_md}"
    );
}

/// A column added nullable, backfilled, made NOT NULL, then an index
/// dropped, in one transaction, on a table of 20 million rows in
/// production: the application's inserts (which do not write the column)
/// fail 23502, blamed on SET NOT NULL, not on the DROP INDEX nor on the
/// nullable ADD COLUMN; the transaction holds ACCESS EXCLUSIVE from
/// statement 1 to COMMIT, and that hold, which the backfill and the scan
/// make up, is judged; the backfill, which queues for nothing under the
/// ALTER's lock, gets batches outside that transaction, never lock_timeout.
#[test]
fn a_multi_statement_migration_is_blamed_and_held_per_transaction() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[
            (
                "0001_init.sql",
                "CREATE TABLE spaces (id bigint PRIMARY KEY, name text NOT NULL);\n\
                 CREATE INDEX spaces_name ON spaces (name);\n",
            ),
            (
                "0002_depth.sql",
                "ALTER TABLE spaces ADD COLUMN depth integer;\n\
                 UPDATE spaces SET depth = 0;\n\
                 ALTER TABLE spaces ALTER COLUMN depth SET NOT NULL;\n\
                 DROP INDEX spaces_name;\n",
            ),
        ],
    );
    let out = dir.path().join("out");
    let assert = stallbench_command()
        .arg("check")
        .arg(&migrations)
        .args(["--rows", "2000", "--table-rows", "spaces=20_000_000"])
        .args(["--hold", "2s", "--duration", "5s", "--quiet", "--out"])
        .arg(&out)
        .assert();
    let stdout = stdout_of(&assert);
    assert_eq!(assert.get_output().status.code(), Some(3), "{stdout}");
    let check = check_json(&out);
    let depth = migration(&check, "0002_depth.sql");
    let fixes: Vec<&str> = (depth["fixes"].as_array().unwrap().iter())
        .map(|fix| fix.as_str().unwrap())
        .collect();
    assert!(
        fixes.iter().any(|fix| fix.starts_with(
            "`ALTER TABLE spaces ALTER COLUMN depth SET NOT NULL` breaks the application's \
             statements (23502 "
        )),
        "{fixes:#?}"
    );
    assert!(
        !fixes
            .iter()
            .any(|fix| fix.contains("`DROP INDEX spaces_name` breaks")
                || fix.contains("`ALTER TABLE spaces ADD COLUMN depth integer` breaks")),
        "{fixes:#?}"
    );
    // The hold per transaction, from the ALTER to COMMIT, is what is judged.
    let hold = &depth["transaction_holds"][0];
    assert_eq!(hold["from_statement"], 1, "{depth}");
    assert_eq!(
        hold["statements"],
        serde_json::json!([1, 2, 3, 4]),
        "{hold}"
    );
    let broken = depth["broken"].to_string();
    assert!(
        broken.contains("its transaction holds ACCESS EXCLUSIVE on spaces for about ")
            && broken.contains("from statement 1 to COMMIT (statements 1-4; statement 2 about "),
        "{broken}"
    );
    // The backfill: batches outside the ALTER's transaction; no fix says
    // both that lock_timeout does not help and to set it.
    assert!(
        fixes
            .iter()
            .any(|fix| fix.starts_with("`UPDATE spaces SET depth = 0`")
                && fix.contains("run the backfill outside the transaction of statement 1")
                && fix.contains("in batches of a bounded number of rows")),
        "{fixes:#?}"
    );
    for fix in &fixes {
        assert!(
            !(fix.contains("do not shorten a hold") && fix.contains("set lock_timeout")),
            "{fix}"
        );
    }
    let check_md = std::fs::read_to_string(out.join("check.md")).unwrap();
    assert!(
        check_md.contains("- Step 1: its transaction holds ACCESS EXCLUSIVE on spaces"),
        "{check_md}"
    );
}

/// A break whose message names nothing the migration made (a trigger's own
/// error, P0001) is blamed by replaying the application's statements after
/// each prefix of the migration on the quiet server: the CREATE TRIGGER,
/// not the DROP INDEX after it (the first statement that drops something).
#[test]
fn a_break_the_message_does_not_name_is_blamed_by_replaying_prefixes() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[
            (
                "0001_init.sql",
                "CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL);\n\
                 CREATE INDEX items_name ON items (name);\n",
            ),
            (
                "0002_closed.sql",
                "ALTER TABLE items ADD COLUMN note text;\n\
                 CREATE FUNCTION closed() RETURNS trigger LANGUAGE plpgsql AS $$\n\
                 BEGIN RAISE EXCEPTION 'closed for the night'; END $$;\n\
                 CREATE TRIGGER closed BEFORE INSERT ON items FOR EACH ROW EXECUTE FUNCTION closed();\n\
                 DROP INDEX items_name;\n",
            ),
        ],
    );
    let out = dir.path().join("out");
    let assert = stallbench_command()
        .arg("check")
        .arg(&migrations)
        .args([
            "--rows",
            "1000",
            "--blocker",
            "none",
            "--load",
            "read-write",
        ])
        .args(["--hold", "1s", "--duration", "4s", "--quiet", "--out"])
        .arg(&out)
        .assert();
    let stdout = stdout_of(&assert);
    assert_eq!(assert.get_output().status.code(), Some(3), "{stdout}");
    let check = check_json(&out);
    let closed = migration(&check, "0002_closed.sql");
    let fix = closed["fixes"][0].as_str().unwrap();
    assert!(
        fix.starts_with("`CREATE TRIGGER closed BEFORE INSERT ON items")
            && fix.contains("(P0001 closed for the night)"),
        "{closed}"
    );
}
