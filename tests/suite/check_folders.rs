//! `stallbench check` on folders that go wrong the way real projects' do,
//! on real throwaway servers: a new migration that cannot run makes the
//! later ones that need what it would have made name it; a psql
//! meta-command in a new migration is named as one; a table the earlier
//! migrations filled keeps its rows and the report says so; an earlier
//! migration that fails leaves no empty results folder behind.

use crate::check::{check_json, migration, migrations_folder};
use crate::common::*;

/// `check` of `migrations` with `flags`, judged from the traces alone, into `out`.
fn traced(
    migrations: &std::path::Path,
    out: &std::path::Path,
    flags: &[&str],
) -> assert_cmd::assert::Assert {
    stallbench_command()
        .arg("check")
        .arg(migrations)
        .args(["--trace-only", "--rows", "10", "--quiet", "--out"])
        .arg(out)
        .args(flags)
        .assert()
}

#[test]
fn a_migration_after_one_that_could_not_run_names_it() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[
            (
                "0001_init.sql",
                "CREATE TABLE items (id bigint PRIMARY KEY, name text);\n\
                 CREATE TABLE statuses (id int PRIMARY KEY, name text);\n\
                 INSERT INTO statuses VALUES (1, 'open'), (2, 'closed');\n",
            ),
            (
                "0002_backfill.sql",
                "CREATE TABLE notes (id bigint PRIMARY KEY, item_id bigint);\n\
                 INSERT INTO notes SELECT id, id FROM item_archive;\n",
            ),
            (
                "0003_notes_body.sql",
                "ALTER TABLE notes ADD COLUMN body text;\n",
            ),
            (
                "0004_meta.sql",
                "\\set ON_ERROR_STOP on\nALTER TABLE items ADD COLUMN note text;\n",
            ),
        ],
    );
    let out = dir.path().join("out");
    let assert = traced(&migrations, &out, &["--new", "3"]);
    let stdout = stdout_of(&assert);
    assert_eq!(assert.get_output().status.code(), Some(2), "{stdout}");
    let json = check_json(&out);
    let reason = |name: &str| {
        migration(&json, name)["invalid"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {json}"))
            .to_string()
    };
    let backfill = reason("0002_backfill.sql");
    assert!(
        backfill.contains("relation \"item_archive\" does not exist")
            && !backfill.contains("after"),
        "{backfill}"
    );
    let body = reason("0003_notes_body.sql");
    assert!(
        body.contains("relation \"notes\" does not exist (SQLSTATE 42P01)")
            && body.ends_with(
                " (after 0002_backfill.sql, which could not run either and was not applied: \
                 what it makes is missing, so fix 0002_backfill.sql first)"
            ),
        "{body}"
    );
    let meta = reason("0004_meta.sql");
    assert!(
        meta.contains(&format!(
            "{} line 1: `\\set ON_ERROR_STOP on` is a psql meta-command",
            migrations.join("0004_meta.sql").display()
        )),
        "{meta}"
    );
    // The two rows of statuses are the earlier migration's, kept as they are.
    let check_md = std::fs::read_to_string(out.join("check.md")).unwrap();
    assert!(
        check_md.contains("10 generated rows per table (fewer in 1 table, listed below)")
            && check_md.contains(
                "- fewer rows: statuses: 2 rows, not 10, those the earlier migrations inserted \
                 (a table that holds rows is kept as it is, not filled)"
            ),
        "{check_md}"
    );
}

#[test]
fn an_earlier_migration_that_fails_leaves_no_results_folder() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[
            (
                "0001_init.sql",
                "CREATE TABLE items (id bigint PRIMARY KEY;\n",
            ),
            ("0002_note.sql", "ALTER TABLE items ADD COLUMN note text;\n"),
        ],
    );
    let out = dir.path().join("out");
    let assert = traced(&migrations, &out, &[]);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert_eq!(assert.get_output().status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("0001_init.sql: applying it failed"),
        "{stderr}"
    );
    assert!(!out.exists(), "an empty results folder was left: {stderr}");
}
