//! `stallbench check --git-base REF` in a real git repository the test
//! builds in a temp folder: the migrations added since the merge
//! base of REF and HEAD are the new ones, uncommitted and untracked files
//! included; an old migration changed since is an earlier one; a new one
//! numbered before main's newest follows the tool's rule; a ref the
//! repository lacks is bad input.

use std::path::Path;
use std::process::Command;

use stallbench::Error;
use stallbench::engine::postgres::check::migrations::{
    Layout, Selection, Split, TransactionMode, read_folder, split_new,
};

pub(crate) fn git(repo: &Path, args: &[&str]) {
    let output = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn write(dir: &Path, name: &str, sql: &str) {
    std::fs::write(dir.join(name), sql).unwrap();
}

/// A repository whose `main` holds two migrations under `db/migrations`,
/// and a branch `feature` checked out on top of it.
fn repository() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    git(root, &["init", "--quiet", "--initial-branch=main"]);
    let dir = root.join("db/migrations");
    std::fs::create_dir_all(&dir).unwrap();
    write(
        &dir,
        "0001_init.sql",
        "CREATE TABLE users (id int PRIMARY KEY);\n",
    );
    write(
        &dir,
        "0002_orders.sql",
        "CREATE TABLE orders (id int PRIMARY KEY);\n",
    );
    write(root, "README.md", "app\n");
    git(root, &["add", "."]);
    git(root, &["commit", "--quiet", "-m", "first migrations"]);
    git(root, &["checkout", "--quiet", "-b", "feature"]);
    repo
}

fn new_names(dir: &Path, reference: &str) -> Result<(usize, Vec<String>), Error> {
    let folder = read_folder(dir, None, TransactionMode::PerFile)?;
    assert_eq!(folder.layout, Layout::Numbered);
    let split = split_new(folder, &Selection::GitBase(reference.to_string()))?;
    let (earlier, new) = (split.earlier, split.new);
    Ok((earlier.len(), new.into_iter().map(|m| m.name).collect()))
}

#[test]
fn git_base_picks_the_migrations_added_since_the_merge_base() {
    let repo = repository();
    let root = repo.path();
    let dir = root.join("db/migrations");
    assert_eq!(new_names(&dir, "main").unwrap(), (2, vec![]));

    // A committed migration, a changed file outside the folder, and on main a
    // later commit the branch does not have: only the branch's own changes count.
    write(
        &dir,
        "0003_index.sql",
        "CREATE INDEX orders_id ON orders (id);\n",
    );
    write(root, "README.md", "app, changed\n");
    git(root, &["add", "."]);
    git(root, &["commit", "--quiet", "-m", "index"]);
    git(root, &["checkout", "--quiet", "main"]);
    write(
        &dir,
        "0002_orders.sql",
        "CREATE TABLE orders (id bigint PRIMARY KEY);\n",
    );
    git(root, &["commit", "--quiet", "-am", "main moves on"]);
    git(root, &["checkout", "--quiet", "feature"]);
    assert_eq!(
        new_names(&dir, "main").unwrap(),
        (2, vec!["0003_index.sql".to_string()])
    );

    // Untracked, not yet added: new as well.
    write(
        &dir,
        "0004_column.sql",
        "ALTER TABLE users ADD COLUMN note text;\n",
    );
    assert_eq!(
        new_names(&dir, "main").unwrap(),
        (
            2,
            vec!["0003_index.sql".to_string(), "0004_column.sql".to_string()]
        )
    );
    // A commit as the base.
    let (earlier, new) = new_names(&dir, "HEAD").unwrap();
    assert_eq!((earlier, new), (3, vec!["0004_column.sql".to_string()]));
}

#[test]
fn an_unknown_ref_is_bad_input() {
    let repo = repository();
    let dir = repo.path().join("db/migrations");
    let err = new_names(&dir, "no-such-branch").unwrap_err();
    assert!(matches!(err, Error::BadInput(_)), "{err}");
    assert!(
        err.to_string()
            .starts_with("--git-base no-such-branch: no such commit in the repository of"),
        "{err}"
    );
}

/// The split of `dir` by `--git-base reference`.
fn split(dir: &Path, reference: &str) -> Split {
    let folder = read_folder(dir, None, TransactionMode::PerFile).unwrap();
    split_new(folder, &Selection::GitBase(reference.to_string())).unwrap()
}

/// An old migration whose comment changed is no new one, and says nothing;
/// one whose statements changed is no new one either (the tool applied it
/// where main is deployed and does not again), with a note.
#[test]
fn a_changed_old_migration_is_an_earlier_one() {
    let repo = repository();
    let dir = repo.path().join("db/migrations");
    write(
        &dir,
        "0001_init.sql",
        "-- The users, a comment edited later.\nCREATE TABLE users (id int PRIMARY KEY);\n",
    );
    let comment = split(&dir, "main");
    assert_eq!((comment.earlier.len(), comment.new.len()), (2, 0));
    assert!(comment.notes.is_empty(), "{:?}", comment.notes);
    assert!(comment.unordered.is_none());

    write(
        &dir,
        "0001_init.sql",
        "CREATE TABLE users (id bigint PRIMARY KEY);\n",
    );
    write(
        &dir,
        "0003_note.sql",
        "ALTER TABLE users ADD COLUMN note text;\n",
    );
    let changed = split(&dir, "main");
    let new: Vec<&str> = changed.new.iter().map(|m| m.name.as_str()).collect();
    assert_eq!((changed.earlier.len(), new), (2, vec!["0003_note.sql"]));
    assert_eq!(changed.notes.len(), 1, "{:?}", changed.notes);
    assert!(
        changed.notes[0].starts_with(
            "0001_init.sql changed since main beyond its comments, but it was there before"
        ),
        "{:?}",
        changed.notes
    );
}

/// A pull request's migration numbered before main's newest (main moved on
/// after the branch started): a numbered folder's tool applies it after the
/// others, as the check does; golang-migrate's never would, which is the
/// check's failure.
#[test]
fn a_new_migration_before_mains_newest_follows_the_tools_rule() {
    let repo = repository();
    let root = repo.path();
    let dir = root.join("db/migrations");
    write(&dir, "0003_index.sql", "CREATE INDEX ON users (id);\n");
    git(root, &["add", "."]);
    git(root, &["commit", "--quiet", "-m", "index"]);
    git(root, &["checkout", "--quiet", "main"]);
    write(&dir, "0004_audit.sql", "CREATE TABLE audit (id int);\n");
    git(root, &["add", "."]);
    git(root, &["commit", "--quiet", "-m", "audit"]);
    git(root, &["checkout", "--quiet", "feature"]);
    git(root, &["merge", "--quiet", "--no-edit", "main"]);
    let applied = split(&dir, "main");
    let names = |migrations: &[stallbench::engine::postgres::check::migrations::Migration]| {
        migrations
            .iter()
            .map(|m| m.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(&applied.earlier),
        ["0001_init.sql", "0002_orders.sql", "0004_audit.sql"]
    );
    assert_eq!(names(&applied.new), ["0003_index.sql"]);
    assert!(applied.unordered.is_none());
    assert_eq!(
        applied.notes,
        [
            "0003_index.sql sorts before 0004_audit.sql, which is applied where the base is \
          deployed; the tool (sqlx, for one) applies what is not yet applied, so the check \
          applies it after it"
        ]
    );

    // The same shape as golang-migrate's: up and down files.
    let up_down = tempfile::tempdir().unwrap();
    let root = up_down.path();
    git(root, &["init", "--quiet", "--initial-branch=main"]);
    write(root, "0001_init.up.sql", "CREATE TABLE users (id int);\n");
    write(root, "0001_init.down.sql", "DROP TABLE users;\n");
    write(root, "0003_audit.up.sql", "CREATE TABLE audit (id int);\n");
    git(root, &["add", "."]);
    git(root, &["commit", "--quiet", "-m", "main"]);
    write(
        root,
        "0002_note.up.sql",
        "ALTER TABLE users ADD COLUMN note text;\n",
    );
    let skipped = split(root, "main");
    let unordered = skipped.unordered.expect("golang-migrate never applies it");
    assert_eq!(unordered.migrations, ["0002_note.up.sql"]);
    assert!(
        unordered
            .reason
            .contains("golang-migrate records only the newest version applied"),
        "{}",
        unordered.reason
    );
}

#[test]
fn a_folder_outside_any_repository_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "0001_init.sql",
        "CREATE TABLE users (id int);\n",
    );
    let err = new_names(dir.path(), "main").unwrap_err();
    assert!(matches!(err, Error::BadInput(_)), "{err}");
    assert!(
        err.to_string()
            .contains("--git-base needs the folder in a git repository"),
        "{err}"
    );
}

/// A repository of its own at `root`, its files committed on `main`, then
/// a branch `feature` checked out.
fn committed(root: &Path, files: &[(&str, &str)]) {
    git(root, &["init", "--quiet", "--initial-branch=main"]);
    for (name, text) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    git(root, &["add", "."]);
    git(root, &["commit", "--quiet", "-m", "main"]);
    git(root, &["checkout", "--quiet", "-b", "feature"]);
}

/// Sqitch: the new changes are the plan's new lines. A change reworked on
/// the branch is new in its new line; its earlier script, now
/// `users@v1.0.sql` (added), is not.
#[test]
fn sqitch_changes_are_new_by_the_plans_new_lines() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    let line = |name: &str| format!("{name} 2024-01-01T00:00:00Z Ann <ann@example.com> # {name}\n");
    let plan = format!(
        "%syntax-version=1.0.0\n%project=app\n\n{}{}",
        line("users"),
        line("email")
    );
    committed(
        root,
        &[
            ("sqitch.plan", &plan),
            ("deploy/users.sql", "CREATE TABLE users (id int);\n"),
            (
                "deploy/email.sql",
                "ALTER TABLE users ADD COLUMN email text;\n",
            ),
        ],
    );
    let reworked = format!(
        "{plan}@v1.0 2024-01-02T00:00:00Z Ann <ann@example.com> # release\n{}{}",
        line("index"),
        line("users")
    );
    write(root, "sqitch.plan", &reworked);
    write(
        &root.join("deploy"),
        "users@v1.0.sql",
        "CREATE TABLE users (id int);\n",
    );
    write(
        &root.join("deploy"),
        "users.sql",
        "CREATE TABLE users (id bigint);\n",
    );
    write(
        &root.join("deploy"),
        "index.sql",
        "CREATE INDEX ON users (email);\n",
    );
    let split = split(root, "main");
    let names = |migrations: &[stallbench::engine::postgres::check::migrations::Migration]| {
        (migrations.iter())
            .map(|m| m.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&split.earlier), ["users@v1.0.sql", "email.sql"]);
    assert_eq!(names(&split.new), ["index.sql", "users.sql"]);
    assert!(split.unordered.is_none() && split.notes.is_empty());
}

/// Flyway applies a changed repeatable migration again, after the
/// versioned ones: it is new, and no version is out of order with it.
#[test]
fn a_changed_flyway_repeatable_migration_is_new() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    committed(
        root,
        &[
            ("V1__init.sql", "CREATE TABLE users (id int);\n"),
            ("R__a_views.sql", "CREATE OR REPLACE VIEW a AS SELECT 1;\n"),
            ("R__b_views.sql", "CREATE OR REPLACE VIEW b AS SELECT 1;\n"),
        ],
    );
    write(
        root,
        "R__a_views.sql",
        "CREATE OR REPLACE VIEW a AS SELECT 2;\n",
    );
    write(
        root,
        "V2__email.sql",
        "ALTER TABLE users ADD COLUMN email text;\n",
    );
    let folder = read_folder(root, None, TransactionMode::PerFile).unwrap();
    let split = split_new(folder, &Selection::GitBase("main".to_string())).unwrap();
    let new: Vec<&str> = split.new.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(new, ["V2__email.sql", "R__a_views.sql"]);
    assert!(split.unordered.is_none(), "{:?}", split.unordered);
    assert!(split.notes.is_empty(), "{:?}", split.notes);
}
