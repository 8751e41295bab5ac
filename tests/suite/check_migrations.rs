//! `stallbench check --git-base REF` in a real git repository the test
//! builds in a temp folder: the migrations added or changed since the merge
//! base of REF and HEAD are the new ones, uncommitted and untracked files
//! included; a ref the repository lacks, and a changed migration that is not
//! last, are bad input.

use std::path::Path;
use std::process::Command;

use stallbench::Error;
use stallbench::check::migrations::{Layout, Selection, TransactionMode, read_folder, split_new};

fn git(repo: &Path, args: &[&str]) {
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
    let (earlier, new) = split_new(folder, &Selection::GitBase(reference.to_string()))?;
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
fn an_unknown_ref_and_a_changed_old_migration_are_bad_input() {
    let repo = repository();
    let root = repo.path();
    let dir = root.join("db/migrations");

    let err = new_names(&dir, "no-such-branch").unwrap_err();
    assert!(matches!(err, Error::BadInput(_)), "{err}");
    assert!(
        err.to_string()
            .starts_with("--git-base no-such-branch: no such commit in the repository of"),
        "{err}"
    );

    write(
        &dir,
        "0001_init.sql",
        "CREATE TABLE users (id bigint PRIMARY KEY);\n",
    );
    let err = new_names(&dir, "main").unwrap_err();
    assert!(matches!(err, Error::BadInput(_)), "{err}");
    assert!(
        err.to_string()
            .contains("0001_init.sql changed since main but 0002_orders.sql after it did not"),
        "{err}"
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
