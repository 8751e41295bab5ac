//! `--git-base REF`: the migrations whose files were added or changed since
//! the merge base of REF and HEAD (`git merge-base`, then `git diff
//! --name-only` against the working tree, so uncommitted changes count),
//! plus untracked files (`git ls-files --others --exclude-standard`). Git
//! runs in the migrations folder, so the folder's own repository answers.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::MigrationFolder;
use crate::error::Error;

/// The index of the first new migration of `folder` by `--git-base
/// reference` (the count when none changed); the new ones must be last.
pub(super) fn first_changed(folder: &MigrationFolder, reference: &str) -> Result<usize, Error> {
    let changed = changed_files(&folder.dir, reference)?;
    let is_new = |index: usize| {
        let path = &folder.migrations[index].path;
        path.strip_prefix(&folder.dir)
            .is_ok_and(|relative| changed.contains(relative))
    };
    let count = folder.migrations.len();
    let first = (0..count).find(|&index| is_new(index)).unwrap_or(count);
    if let Some(kept) = (first..count).find(|&index| !is_new(index)) {
        let migrations = &folder.migrations;
        return Err(Error::bad_input(format!(
            "--git-base {reference}: {} changed since {reference} but {} after it did not; \
             the gate applies the new migrations after all the others, so they must come \
             last: give the changed one a later version, or choose the new ones with \
             --new N or --since FILE",
            migrations[first].name, migrations[kept].name
        )));
    }
    Ok(first)
}

/// The files under `dir` (relative to it) added or changed since the merge
/// base of `reference` and HEAD, and the untracked ones.
fn changed_files(dir: &Path, reference: &str) -> Result<HashSet<PathBuf>, Error> {
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
    let diff = git(
        dir,
        &[
            "diff",
            "--name-only",
            "-z",
            "--relative",
            base.trim(),
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
    Ok(diff
        .split('\0')
        .chain(untracked.split('\0'))
        .filter(|path| !path.is_empty())
        .map(PathBuf::from)
        .collect())
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
