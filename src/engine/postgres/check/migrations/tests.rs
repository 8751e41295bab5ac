//! The fixture folders of `tests/fixtures/migrations/`, one per layout (two
//! migrations each), read as the gate reads them.

use super::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/migrations")
        .join(name)
}

fn read(name: &str) -> MigrationFolder {
    read_folder(&fixture(name), None, TransactionMode::PerFile)
        .unwrap_or_else(|err| panic!("{name}: {err}"))
}

fn refused(name: &str, layout: Option<Layout>) -> String {
    match read_folder(&fixture(name), layout, TransactionMode::PerFile) {
        Ok(folder) => panic!("{name}: read as {folder:?}"),
        Err(err @ Error::BadInput(_)) => err.to_string(),
        Err(err) => panic!("{name}: not bad input: {err}"),
    }
}

fn names(folder: &MigrationFolder) -> Vec<&str> {
    folder.migrations.iter().map(|m| m.name.as_str()).collect()
}

/// Each step of a migration as (in a transaction, its statements' first words).
fn shape(migration: &Migration) -> Vec<(bool, Vec<String>)> {
    migration
        .steps
        .iter()
        .map(|step| {
            let words = step
                .statements
                .iter()
                .map(|statement| {
                    statement
                        .sql
                        .split_whitespace()
                        .take(3)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            (step.in_transaction, words)
        })
        .collect()
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|text| text.to_string()).collect()
}

#[test]
fn numbered_files_are_detected_and_a_concurrent_index_leaves_the_transaction() {
    let folder = read("numbered");
    assert_eq!(folder.layout, Layout::Numbered);
    assert_eq!(names(&folder), ["0001_init.sql", "0002_add_email.sql"]);
    assert_eq!(folder.migrations[1].version, "0002");
    assert_eq!(
        shape(&folder.migrations[1]),
        [
            (true, words(&["ALTER TABLE users"])),
            (false, words(&["CREATE INDEX CONCURRENTLY"])),
        ]
    );
    let index = &folder.migrations[1].steps[1].statements[0];
    assert_eq!(index.line, 2);
    assert!(
        folder.migrations[1]
            .path
            .ends_with("numbered/0002_add_email.sql")
    );
}

#[test]
fn up_files_are_read_down_files_ignored_and_sqlx_no_transaction_honoured() {
    let folder = read("up-down");
    assert_eq!(folder.layout, Layout::UpDown);
    assert_eq!(
        names(&folder),
        ["0001_init.up.sql", "0002_add_email.up.sql"]
    );
    assert_eq!(
        shape(&folder.migrations[1]),
        [
            (false, words(&["ALTER TABLE users"])),
            (false, words(&["CREATE INDEX CONCURRENTLY"])),
        ]
    );
}

#[test]
fn dbmate_files_apply_their_up_section_and_transaction_false() {
    let folder = read("dbmate");
    assert_eq!(folder.layout, Layout::Dbmate);
    assert_eq!(
        names(&folder),
        ["20240101120000_init.sql", "20240102090000_add_email.sql"]
    );
    assert_eq!(
        shape(&folder.migrations[0]),
        [(true, words(&["CREATE TABLE users"]))]
    );
    assert_eq!(
        shape(&folder.migrations[1]),
        [
            (false, words(&["ALTER TABLE users"])),
            (false, words(&["CREATE INDEX CONCURRENTLY"])),
        ]
    );
    assert_eq!(folder.migrations[1].steps[1].statements[0].line, 3);
}

#[test]
fn goose_files_apply_their_up_section_with_statement_blocks() {
    let folder = read("goose");
    assert_eq!(folder.layout, Layout::Goose);
    assert_eq!(names(&folder), ["00001_init.sql", "00002_add_email.sql"]);
    assert_eq!(
        shape(&folder.migrations[0]),
        [(
            true,
            words(&["CREATE TABLE users", "CREATE FUNCTION users_count()"])
        )]
    );
    assert!(
        shape(&folder.migrations[1])
            .iter()
            .all(|(in_transaction, _)| !in_transaction)
    );
}

#[test]
fn flyway_orders_versions_numerically_then_repeatables_and_ignores_undo() {
    let folder = read("flyway");
    assert_eq!(folder.layout, Layout::Flyway);
    assert_eq!(
        names(&folder),
        [
            "V1__init.sql",
            "V1.9__add_email.sql",
            "V1.10__index_email.sql",
            "R__users_view.sql"
        ]
    );
    let versions: Vec<&str> = folder
        .migrations
        .iter()
        .map(|m| m.version.as_str())
        .collect();
    assert_eq!(versions, ["1", "1.9", "1.10", "R"]);
    // V1.10__index_email.sql.conf: executeInTransaction=false.
    assert_eq!(
        shape(&folder.migrations[2]),
        [(false, words(&["CREATE INDEX CONCURRENTLY"]))]
    );
    assert_eq!(
        shape(&folder.migrations[1]),
        [(true, words(&["ALTER TABLE users"]))]
    );
}

#[test]
fn diesel_folders_are_migrations_in_version_order_and_metadata_says_no_transaction() {
    let folder = read("diesel");
    assert_eq!(folder.layout, Layout::Diesel);
    assert_eq!(
        names(&folder),
        [
            "00000000000000_diesel_initial_setup",
            "2019-02-26-002946_create_user",
            "2026-06-03-220228-0000_index_email"
        ]
    );
    assert!(
        folder.migrations[1]
            .path
            .ends_with("2019-02-26-002946_create_user/up.sql")
    );
    assert_eq!(folder.migrations[2].version, "2026-06-03-220228-0000");
    assert_eq!(
        shape(&folder.migrations[1]),
        [(
            true,
            words(&["CREATE TABLE public.person", "ALTER TABLE public.person"])
        )]
    );
    // metadata.toml: run_in_transaction = false.
    assert_eq!(
        shape(&folder.migrations[2]),
        [(false, words(&["CREATE INDEX CONCURRENTLY"]))]
    );
    // A migration is named by its folder, its file, or its version.
    let since = |given: &str| {
        let Split { earlier, new, .. } =
            split_new(folder.clone(), &Selection::Since(given.into())).unwrap();
        (earlier.len(), new.len())
    };
    assert_eq!(since("2026-06-03-220228-0000_index_email"), (2, 1));
    assert_eq!(since("2019-02-26-002946"), (1, 2));
    // --layout diesel refuses a loose .sql file beside the folders.
    let err = refused("numbered", Some(Layout::Diesel));
    assert!(
        err.contains("--layout diesel: ") && err.contains("2024-01-01-120000_init/up.sql"),
        "{err}"
    );
}

#[test]
fn a_sqitch_project_is_read_in_plan_order_each_script_as_psql_runs_it() {
    let folder = read("sqitch");
    assert_eq!(folder.layout, Layout::Sqitch);
    assert_eq!(names(&folder), ["users", "users_email_idx"]);
    assert!(
        folder.migrations[1]
            .path
            .ends_with("deploy/users_email_idx.sql")
    );
    // The script's own BEGIN ... COMMIT is one transaction; CONCURRENTLY alone.
    assert_eq!(
        shape(&folder.migrations[0]),
        [(true, words(&["CREATE TABLE users", "ALTER TABLE users"]))]
    );
    assert_eq!(
        shape(&folder.migrations[1]),
        [(false, words(&["CREATE INDEX CONCURRENTLY"]))]
    );
    let err = refused("numbered", Some(Layout::Sqitch));
    assert!(
        err.contains("--layout sqitch: no sqitch.plan in the folder"),
        "{err}"
    );
}

#[test]
fn prisma_folders_are_migrations_in_name_order() {
    let folder = read("prisma");
    assert_eq!(folder.layout, Layout::Prisma);
    assert_eq!(
        names(&folder),
        ["20240101120000_init", "20240102120000_add_email"]
    );
    assert!(
        folder.migrations[1]
            .path
            .ends_with("20240102120000_add_email/migration.sql")
    );
    assert_eq!(folder.migrations[1].version, "20240102120000");
    assert_eq!(
        shape(&folder.migrations[1]),
        [(
            true,
            words(&["ALTER TABLE \"User\"", "CREATE UNIQUE INDEX"])
        )]
    );
    assert_eq!(folder.migrations[1].steps[0].statements[1].line, 5);
}

#[test]
fn django_sqlmigrate_output_keeps_its_own_transaction_without_nesting() {
    let folder = read("django");
    assert_eq!(folder.layout, Layout::Numbered);
    assert_eq!(
        names(&folder),
        ["0001_initial.sql", "0002_author_email.sql"]
    );
    for mode in [TransactionMode::PerFile, TransactionMode::None] {
        let folder = read_folder(&fixture("django"), None, mode).unwrap();
        assert_eq!(
            shape(&folder.migrations[1]),
            [(
                true,
                words(&[
                    "ALTER TABLE \"library_author\"",
                    "ALTER TABLE \"library_author\""
                ])
            )],
            "{mode}"
        );
    }
    let first = &folder.migrations[0].steps[0].statements[0];
    assert_eq!(
        (first.line, first.sql.starts_with("CREATE TABLE")),
        (5, true)
    );
}

#[test]
fn plain_sql_files_need_the_layout_and_then_apply_in_name_order() {
    let err = refused("plain-sql", None);
    assert!(
        err.contains("a_users.sql, b_email.sql match no migration tool's names"),
        "{err}"
    );
    assert!(err.contains("--layout plain-sql"), "{err}");
    let folder = read_folder(
        &fixture("plain-sql"),
        Some(Layout::PlainSql),
        TransactionMode::PerFile,
    )
    .unwrap();
    assert_eq!(folder.layout, Layout::PlainSql);
    assert_eq!(names(&folder), ["a_users.sql", "b_email.sql"]);
}

#[test]
fn a_folder_of_mixed_layouts_is_refused_naming_the_files() {
    let err = refused("mixed", None);
    assert!(
        err.contains(
            "the files mix layouts: 0001_init.sql (numbered), 0002_add_email.up.sql (up-down)"
        ),
        "{err}"
    );
    assert!(err.contains("--layout numbered|up-down|"), "{err}");
    let err = refused("unmatched", None);
    assert!(
        err.contains("seed.sql is not named as the numbered migrations beside it are"),
        "{err}"
    );
    let err = refused("numbered", Some(Layout::Flyway));
    assert!(
        err.contains("--layout flyway: 0001_init.sql, 0002_add_email.sql are not named as flyway"),
        "{err}"
    );
    let empty = tempfile::tempdir().unwrap();
    let err = read_folder(empty.path(), None, TransactionMode::PerFile)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no migrations in it"), "{err}");
    let err = read_folder(&fixture("absent"), None, TransactionMode::PerFile)
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot read the migrations folder"), "{err}");
}

/// Two migrations of one version: the tool refuses the folder. Both
/// earlier: bad input naming `--files`, the way to read a folder whose
/// migrator accepts them; one new: the check's failure, naming the new one.
#[test]
fn two_migrations_of_one_version_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("0001_a.sql"), "SELECT 1;").unwrap();
    std::fs::write(dir.path().join("1_b.sql"), "SELECT 2;").unwrap();
    std::fs::write(dir.path().join("0002_c.sql"), "SELECT 3;").unwrap();
    let folder = read_folder(dir.path(), None, TransactionMode::PerFile).unwrap();
    let err = split_new(folder.clone(), &Selection::LastN(1))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("0001_a.sql and 1_b.sql have the same version 1")
            && err.contains("--files GLOB"),
        "{err}"
    );
    let split = split_new(folder, &Selection::LastN(2)).unwrap();
    assert_eq!(
        split.unordered,
        Some(Unordered {
            migrations: vec!["0001_a.sql".to_string(), "1_b.sql".to_string()],
            reason: "0001_a.sql and 1_b.sql have the same version 1, which the numbered tool \
                     refuses; renumber 1_b.sql"
                .to_string()
        })
    );
    // Read by --files in number order, both are migrations, in name order.
    let rules = FolderRules {
        files: vec!["*.sql".to_string()],
        ..FolderRules::default()
    };
    let folder = read_folder_with(dir.path(), &rules).unwrap();
    assert_eq!(names(&folder), ["0001_a.sql", "1_b.sql", "0002_c.sql"]);
    assert!(
        split_new(folder, &Selection::LastN(2))
            .unwrap()
            .unordered
            .is_none()
    );
}

/// The rule of each layout's tool for a new migration that sorts before an
/// applied one, as `--git-base` meets it (here by hand: the new ones are
/// marked, as git would).
#[test]
fn a_migration_before_the_newest_applied_one_follows_the_tools_rule() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["0001_a.up.sql", "0003_c.up.sql"] {
        std::fs::write(dir.path().join(name), "SELECT 1;").unwrap();
    }
    std::fs::write(dir.path().join("0002_b.up.sql"), "SELECT 2;").unwrap();
    let folder = read_folder(dir.path(), None, TransactionMode::PerFile).unwrap();
    assert_eq!(folder.out_of_order, OutOfOrder::Skip);
    let is_new = [false, true, false];
    let mut notes = Vec::new();
    let skipped = ordering::out_of_order(&folder, &is_new, &mut notes).unwrap();
    assert_eq!(skipped.migrations, ["0002_b.up.sql"]);
    assert!(
        skipped.reason.starts_with(
            "0002_b.up.sql sorts before 0003_c.up.sql, which is applied where the base is \
             deployed, and golang-migrate records only the newest version applied, so it never \
             applies it; give it a version after 0003 (sqlx applies them: give --out-of-order \
             apply)"
        ),
        "{}",
        skipped.reason
    );
    let applied = MigrationFolder {
        out_of_order: OutOfOrder::Apply,
        ..folder.clone()
    };
    assert_eq!(ordering::out_of_order(&applied, &is_new, &mut notes), None);
    assert_eq!(
        notes,
        [
            "0002_b.up.sql sorts before 0003_c.up.sql, which is applied where the base is \
          deployed; the tool (--out-of-order apply) applies what is not yet applied, so the \
          check applies it after it"
        ]
    );
    let flyway = MigrationFolder {
        layout: Layout::Flyway,
        out_of_order: OutOfOrder::Refuse,
        ..folder
    };
    let refused = ordering::out_of_order(&flyway, &is_new, &mut notes).unwrap();
    assert!(
        refused.reason.contains(
            "and Flyway refuses to migrate then; give it a version after \
             0003, or let the tool apply it (outOfOrder=true) and give --out-of-order apply"
        ),
        "{}",
        refused.reason
    );
}

#[test]
fn selections_pick_the_last_migrations() {
    let folder = read("flyway");
    let Split { earlier, new, .. } = split_new(folder.clone(), &Selection::LastN(2)).unwrap();
    assert_eq!(earlier.len(), 2);
    assert_eq!(new[0].name, "V1.10__index_email.sql");
    let since = |given: &str| {
        let Split { new, .. } = split_new(folder.clone(), &Selection::Since(given.into())).unwrap();
        new.into_iter().map(|m| m.name).collect::<Vec<_>>()
    };
    assert_eq!(
        since("V1.9__add_email.sql"),
        [
            "V1.9__add_email.sql",
            "V1.10__index_email.sql",
            "R__users_view.sql"
        ]
    );
    assert_eq!(
        since("1.10"),
        ["V1.10__index_email.sql", "R__users_view.sql"]
    );
    let path = fixture("flyway").join("R__users_view.sql");
    assert_eq!(since(path.to_str().unwrap()), ["R__users_view.sql"]);
    let Split { earlier, new, .. } = split_new(folder.clone(), &Selection::LastN(4)).unwrap();
    assert_eq!((earlier.len(), new.len()), (0, 4));

    let prisma = read("prisma");
    let folder_path = fixture("prisma").join("20240102120000_add_email");
    let Split { new, .. } = split_new(prisma, &Selection::Since(folder_path)).unwrap();
    assert_eq!(new.len(), 1);
}

#[test]
fn impossible_selections_are_bad_input() {
    let folder = read("numbered");
    for (selection, expected) in [
        (Selection::LastN(0), "--new 0: that checks no migration"),
        (Selection::LastN(3), "holds 2 migrations; give at most 2"),
        (
            Selection::Since("0009_later.sql".into()),
            "--since 0009_later.sql: no migration of",
        ),
    ] {
        let err = split_new(folder.clone(), &selection).unwrap_err();
        assert!(matches!(err, Error::BadInput(_)), "{err}");
        assert!(err.to_string().contains(expected), "{err}");
    }
}

#[test]
fn modes_are_named_as_the_flag_takes_them() {
    for mode in TransactionMode::value_variants() {
        assert_eq!(
            TransactionMode::from_str(&mode.to_string(), false),
            Ok(*mode)
        );
    }
    let parsed = <crate::cli::Cli as clap::Parser>::try_parse_from([
        "stallbench",
        "check",
        ".",
        "--transaction",
        "each",
    ]);
    let err = parsed.unwrap_err().to_string();
    assert!(
        err.contains("invalid value 'each' for '--transaction <MODE>'")
            && err.contains("per-file, per-statement, none"),
        "{err}"
    );
}
