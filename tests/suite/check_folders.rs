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

/// The earlier migrations share one session, each starting as a new one
/// would: a `SET search_path`, a temporary table or a role set by one does
/// not reach the next.
#[test]
fn an_earlier_migrations_session_state_does_not_reach_the_next() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let first = "CREATE SCHEMA side;\nSET search_path = side;\nCREATE TEMP TABLE scratch (id int);\n\
                 CREATE ROLE stallbench_reader_0001 NOLOGIN;\nSET ROLE stallbench_reader_0001;\n";
    let migrations = migrations_folder(
        dir.path(),
        &[
            ("0001_init.sql", first),
            (
                "0002_items.sql",
                "CREATE TABLE items (id bigint PRIMARY KEY);\nCREATE TABLE scratch (id int);\n",
            ),
            ("0003_note.sql", "ALTER TABLE items ADD COLUMN note text;\n"),
        ],
    );
    let out = dir.path().join("out");
    let assert = traced(&migrations, &out, &[]);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    // As a session of its own, 0002 makes its tables in public as the
    // server's owner: side.items would leave 0003's `items` unknown, the
    // role without CREATE would be refused, and the temporary scratch
    // would be the one created.
    assert_eq!(assert.get_output().status.code(), Some(0), "{stderr}");
    let check = check_json(&out);
    let new = migration(&check, "0003_note.sql");
    assert_eq!(new["verdict"], "flagged", "{new:#}\n{stderr}");
}

/// A pull request's migration numbered before main's newest, in a folder
/// of golang-migrate's shape: golang-migrate would never apply it, so the
/// check fails (exit 3) without starting a server, and still writes
/// check.md, check.json, junit.xml and pr-comment.md saying why.
#[test]
fn a_migration_the_tool_would_not_apply_fails_with_its_files_written() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir(&root).unwrap();
    crate::check_migrations::git(&root, &["init", "--quiet", "--initial-branch=main"]);
    for (name, sql) in [
        ("0001_init.up.sql", "CREATE TABLE users (id int);\n"),
        ("0001_init.down.sql", "DROP TABLE users;\n"),
        ("0003_audit.up.sql", "CREATE TABLE audit (id int);\n"),
    ] {
        std::fs::write(root.join(name), sql).unwrap();
    }
    crate::check_migrations::git(&root, &["add", "."]);
    crate::check_migrations::git(&root, &["commit", "--quiet", "-m", "main"]);
    std::fs::write(
        root.join("0002_note.up.sql"),
        "ALTER TABLE users ADD COLUMN note text;\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let assert = stallbench_command()
        .arg("check")
        .arg(&root)
        .args(["--git-base", "main", "--quiet", "--out"])
        .arg(&out)
        .assert();
    let stdout = stdout_of(&assert);
    assert_eq!(assert.get_output().status.code(), Some(3), "{stdout}");
    assert!(
        stdout.starts_with(
            "FAIL: the migration tool would not apply 0002_note.up.sql where the check puts \
             new migrations, so nothing was run: 0002_note.up.sql sorts before \
             0003_audit.up.sql, which is applied where the base is deployed, and golang-migrate \
             records only the newest version applied"
        ),
        "{stdout}"
    );
    let json = check_json(&out);
    assert_eq!(json["verdict"], "fail", "{json}");
    assert_eq!(json["unordered"]["migrations"][0], "0002_note.up.sql");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains("name=\"0002_note.up.sql\"")
            && junit.contains("the migration tool would not apply it here"),
        "{junit}"
    );
    let comment = std::fs::read_to_string(out.join("pr-comment.md")).unwrap();
    assert!(
        comment
            .contains("## 0002_note.up.sql: **FAIL**\n\nNot applied as the tool would deploy it"),
        "{comment}"
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        page.contains("Not applied as the tool would deploy it"),
        "report.html"
    );
    // Told that the tool applies it (sqlx), the check goes on to measure it.
    let folder = stallbench::engine::postgres::check::migrations::read_folder_with(
        &root,
        &stallbench::engine::postgres::check::migrations::FolderRules {
            out_of_order: Some(stallbench::choices::OutOfOrder::Apply),
            ..Default::default()
        },
    )
    .unwrap();
    let selection = stallbench::config::Selection::GitBase("main".to_string());
    let split =
        stallbench::engine::postgres::check::migrations::split_new(folder, &selection).unwrap();
    assert!(split.unordered.is_none() && split.new.len() == 1);
}

/// A Go project's folder as it is: `.up.sql` files beside down files named
/// two ways, a file named by its number alone, two files of one number, a
/// README, and the migrator's own table `migrations`, which refuses writes.
/// Read with --files, --down-files and --tool-table: no renaming, the
/// README listed as not read, the bookkeeping table left alone.
#[test]
fn a_folder_is_read_as_it_is_by_globs() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[
            (
                "0001_init.up.sql",
                "CREATE TABLE items (id bigint PRIMARY KEY, name text);\n\
                 CREATE TABLE migrations (version int PRIMARY KEY, dirty boolean NOT NULL);\n\
                 CREATE FUNCTION no_writes() RETURNS trigger LANGUAGE plpgsql AS \
                 $$ BEGIN RAISE EXCEPTION 'the migrator writes here'; END $$;\n\
                 CREATE TRIGGER no_writes BEFORE INSERT ON migrations \
                 FOR EACH ROW EXECUTE FUNCTION no_writes();\n",
            ),
            ("0001_init.down.sql", "DROP TABLE items;\n"),
            (
                "0021_name.up.sql",
                "ALTER TABLE items ADD COLUMN note text;\n",
            ),
            (
                "0021_name_down.sql",
                "ALTER TABLE items DROP COLUMN note;\n",
            ),
            ("0180.up.sql", "ALTER TABLE items ADD COLUMN size int;\n"),
            (
                "0180_kind.up.sql",
                "ALTER TABLE items ADD COLUMN kind text;\n",
            ),
            ("README.md", "How to migrate.\n"),
        ],
    );
    let check = |out: &str, extra: &[&str]| {
        let out = dir.path().join(out);
        let assert = traced(&migrations, &out, &[&["--new", "2"][..], extra].concat());
        let stdout = stdout_of(&assert);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        let code = assert.get_output().status.code();
        (code, stdout + &stderr, out)
    };
    // Without the globs: refused, naming the files no layout reads.
    let (code, stdout, _) = check("refused", &[]);
    assert_eq!(code, Some(2), "{stdout}");

    let globs = [
        "--files",
        "*.up.sql",
        "--down-files",
        "*.down.sql",
        "--down-files",
        "*_down.sql",
    ];
    // A second tool table the migrator makes itself: no warning that it is missing.
    let tool_tables = [
        "--tool-table",
        "migrations",
        "--tool-table",
        "schema_versions",
    ];
    let (code, stdout, out) = check("globs", &[&globs[..], &tool_tables].concat());
    assert_eq!(code, Some(0), "{stdout}");
    assert!(!stdout.contains("warning"), "{stdout}");
    let json = check_json(&out);
    let names: Vec<&str> = (json["migrations"].as_array().unwrap().iter())
        .map(|migration| migration["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["0180.up.sql", "0180_kind.up.sql"]);
    let check_md = std::fs::read_to_string(out.join("check.md")).unwrap();
    assert!(
        check_md.contains("- not read: README.md (matched by neither --files nor --down-files)"),
        "{check_md}"
    );
    assert!(!check_md.contains("not filled: migrations"), "{check_md}");

    // Without --tool-table the generator writes to it, and its trigger
    // refuses (with --fill all: no new migration locks it, so the default
    // fill would leave it empty and never try).
    let (_, _, out) = check("filled", &[&globs[..], &["--fill", "all"]].concat());
    let check_md = std::fs::read_to_string(out.join("check.md")).unwrap();
    assert!(check_md.contains("not filled: migrations"), "{check_md}");
}
