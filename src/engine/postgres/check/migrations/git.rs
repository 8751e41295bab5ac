//! `--git-base REF`: the migrations whose files were added since the merge
//! base of REF and HEAD (`git merge-base`, then `git diff --name-status`
//! against the working tree, so uncommitted changes count), plus untracked
//! files (`git ls-files --others --exclude-standard`). A migration that was
//! there at the merge base is an earlier one even when its file changed
//! since: the tool applied it where the base is deployed and does not apply
//! it again. A change beyond its comments is noted. Git runs in the
//! migrations folder, so the folder's own repository answers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Layout, MigrationFolder};
use crate::error::Error;
use crate::sql_split::split_located;

/// What `--git-base` found in a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GitChanges {
    /// Per migration of the folder, in its order: added since the merge base.
    pub added: Vec<bool>,
    /// Earlier migrations whose statements changed since, one sentence each.
    pub notes: Vec<String>,
}

/// How a file differs from the merge base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Added,
    Modified,
}

/// The migrations of `folder` added since the merge base of `reference`
/// and HEAD, and notes on the earlier ones changed since.
pub(super) fn changes(folder: &MigrationFolder, reference: &str) -> Result<GitChanges, Error> {
    let (base, changed) = changed_files(&folder.dir, reference)?;
    if folder.layout == Layout::Sqitch {
        return Ok(GitChanges {
            added: plan_added(folder, &base),
            notes: Vec::new(),
        });
    }
    let mut added = Vec::new();
    let mut notes = Vec::new();
    for migration in &folder.migrations {
        let relative = migration.path.strip_prefix(&folder.dir).ok();
        let change = relative.and_then(|relative| changed.get(relative));
        // Flyway applies a repeatable migration again whenever it changes.
        let repeatable = folder.layout == Layout::Flyway && migration.version == "R";
        added.push(change == Some(&Change::Added) || (repeatable && change.is_some()));
        if change != Some(&Change::Modified) || repeatable {
            continue;
        }
        let Some(relative) = relative else { continue };
        let before = git(
            &folder.dir,
            &["show", &format!("{base}:./{}", relative.display())],
        )
        .unwrap_or_default();
        let now = std::fs::read_to_string(&migration.path).unwrap_or_default();
        if statements(&before) != statements(&now) {
            notes.push(format!(
                "{} changed since {reference} beyond its comments, but it was there before: \
                 the tool applied it where {reference} is deployed and does not apply it again \
                 (Prisma, Flyway and sqlx refuse a changed one), so the check applies it as it \
                 is now, among the earlier migrations; put the change in a new migration",
                migration.name
            ));
        }
    }
    Ok(GitChanges { added, notes })
}

/// Sqitch's new changes: the plan's lines added since `base` (a change
/// reworked since is new in its new line; its earlier script, renamed
/// `name@tag.sql`, is not).
fn plan_added(folder: &MigrationFolder, base: &str) -> Vec<bool> {
    let before = git(
        &folder.dir,
        &["show", &format!("{base}:./{}", super::sqitch::PLAN)],
    )
    .unwrap_or_default();
    let before = super::sqitch::plan_change_names(&before);
    let mut seen: HashMap<&str, usize> = HashMap::new();
    (folder.migrations.iter())
        .map(|migration| {
            let count = seen.entry(migration.name.as_str()).or_default();
            *count += 1;
            let in_base = before
                .iter()
                .filter(|name| **name == migration.name)
                .count();
            *count > in_base
        })
        .collect()
}

/// The statements of a migration's text without comments before each and
/// with its blanks collapsed: what a change of comments leaves as it was.
fn statements(text: &str) -> Vec<String> {
    split_located(text)
        .into_iter()
        .map(|statement| {
            statement
                .sql
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// The merge base of `reference` and HEAD, and the files under `dir`
/// (relative to it) added or modified since it, untracked ones as added.
fn changed_files(dir: &Path, reference: &str) -> Result<(String, HashMap<PathBuf, Change>), Error> {
    git(dir, &["rev-parse", "--show-toplevel"]).map_err(|stderr| {
        Error::bad_input(format!(
            "{}: --git-base needs the folder in a git repository, and git says: {stderr}; \
             choose the new migrations with --new N or --since FILE instead",
            dir.display()
        ))
    })?;
    let commit = format!("{reference}^{{commit}}");
    let resolved = git(
        dir,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &commit,
        ],
    )
    .map_err(|_| {
        Error::bad_input(format!(
            "--git-base {reference}: no such commit in the repository of {}; name a branch, \
             tag or commit it has (in CI, fetch it first: git fetch origin main, or \
             actions/checkout with fetch-depth: 0)",
            dir.display()
        ))
    })?;
    let base = git(dir, &["merge-base", resolved.trim(), "HEAD"]).map_err(|_| {
        Error::bad_input(format!(
            "--git-base {reference}: it shares no history with HEAD here (a shallow \
             clone?); fetch the history (actions/checkout with fetch-depth: 0)"
        ))
    })?;
    let base = base.trim().to_string();
    let diff = git(
        dir,
        &[
            "diff",
            "--name-status",
            "--no-renames",
            "-z",
            "--relative",
            &base,
            "--",
            ".",
        ],
    )
    .map_err(|stderr| Error::runtime(format!("git diff in {}: {stderr}", dir.display())))?;
    let untracked = git(
        dir,
        &[
            "ls-files",
            "--others",
            "--exclude-standard",
            "-z",
            "--",
            ".",
        ],
    )
    .map_err(|stderr| Error::runtime(format!("git ls-files in {}: {stderr}", dir.display())))?;
    let mut changed = HashMap::new();
    let mut fields = diff.split('\0');
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        let change = match status {
            "A" => Change::Added,
            "M" | "T" => Change::Modified,
            _ => continue,
        };
        changed.insert(PathBuf::from(path), change);
    }
    for path in untracked.split('\0').filter(|path| !path.is_empty()) {
        changed.insert(PathBuf::from(path), Change::Added);
    }
    Ok((base, changed))
}

/// Runs `git -C dir args`: its stdout, or its stderr when it fails. A git
/// that cannot start at all is a runtime error, reported here.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|err| {
            format!(
                "cannot run git ({err}); install git, or choose the new migrations with --new N"
            )
        })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_string())
    }
}
