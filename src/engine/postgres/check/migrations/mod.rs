//! Reading a project's migrations folder: its layout (detected from the
//! files, or `--layout`), the order its tool applies them in, which of them
//! are new (`--new N`, `--since FILE`, `--git-base REF`), and each one's
//! statements with the transactions they run in (`--transaction`).
//!
//! - [`folder_layout`]: the tools' file names and orders;
//! - [`neutral`]: any folder read by `--files` and `--down-files` globs;
//! - [`steps`]: a file's statements and transactions;
//! - [`ordering`]: which migrations are new, and whether the tool would
//!   apply them after the others;
//! - [`git`]: the files added or changed since a git ref.
//!
//! Everything here is plain data or an [`Error`]: a folder that fits no
//! layout, or several, is bad input (exit 2) that names the files and
//! `--layout` (or `--files`). A new migration the tool would not apply after
//! the others is no error but the check's failure ([`Split::unordered`]).

mod folder_layout;
mod git;
mod neutral;
mod ordering;
mod sqitch;
mod steps;

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde::Serialize;

use crate::error::Error;
use folder_layout::{Fit, FolderEntry, Naming};

pub use crate::choices::{FileOrder, Layout, OutOfOrder, TransactionMode};
pub use crate::config::Selection;
pub use crate::engine::postgres::check_verdict::checked::{
    Migration, MigrationStatement, MigrationStep, Unordered,
};
pub use neutral::glob_match;
pub use ordering::{Split, split_new};

/// A migrations folder in apply order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MigrationFolder {
    /// The folder as given.
    pub dir: PathBuf,
    pub layout: Layout,
    pub migrations: Vec<Migration>,
    /// What the tool does with a new migration that sorts before an applied
    /// one (`--out-of-order`, else the layout's tool's way).
    pub out_of_order: OutOfOrder,
    /// Pairs of migrations (indexes, in order) with one version, which the
    /// tool refuses.
    pub same_version: Vec<(usize, usize)>,
    /// The files `--files` and `--down-files` left unread, by name.
    pub unread: Vec<String>,
}

/// How to read a migrations folder: `--layout` and `--transaction`, and the
/// layout-neutral rules that replace a layout's file names (`--files`,
/// `--down-files`, `--order`) and its tool's order rule (`--out-of-order`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FolderRules {
    pub layout: Option<Layout>,
    pub transaction: TransactionMode,
    /// Globs of the files that are migrations; none: the layout's names.
    pub files: Vec<String>,
    /// Globs of the down files beside them, which the tool does not apply.
    pub down_files: Vec<String>,
    pub order: FileOrder,
    pub out_of_order: Option<OutOfOrder>,
}

/// Reads the migrations folder `dir`: its layout (`layout`, else detected
/// from the files), its migrations in apply order, and each one's steps as
/// the tool runs them under `mode`.
pub fn read_folder(
    dir: &Path,
    layout: Option<Layout>,
    mode: TransactionMode,
) -> Result<MigrationFolder, Error> {
    let rules = FolderRules {
        layout,
        transaction: mode,
        ..FolderRules::default()
    };
    read_folder_with(dir, &rules)
}

/// Reads the migrations folder `dir` by `rules` (see [`read_folder`]):
/// with `--files`, the files the globs name, in `--order`, each read as
/// `--layout`'s files are (plain SQL without it).
pub fn read_folder_with(dir: &Path, rules: &FolderRules) -> Result<MigrationFolder, Error> {
    let layout = rules.layout;
    if !rules.files.is_empty() {
        return read_neutral(dir, rules);
    }
    let plan = dir.join(sqitch::PLAN);
    if !rules.down_files.is_empty() {
        return Err(Error::bad_input(format!(
            "--down-files {}: it says which files beside the migrations are down files, and \
             --files says which are migrations; give --files too (e.g. --files '*.up.sql')",
            rules.down_files.join(" ")
        )));
    }
    match (layout, plan.is_file()) {
        (None | Some(Layout::Sqitch), true) => return read_sqitch(dir, &plan),
        (Some(Layout::Sqitch), false) => {
            return Err(Error::bad_input(format!(
                "{}: --layout sqitch: no {} in the folder; give the project folder that \
                 holds it (and deploy/)",
                dir.display(),
                sqitch::PLAN
            )));
        }
        _ => {}
    }
    let entries = list_entries(dir)?;
    let (layout, found) = match layout {
        Some(layout) => (layout, forced_layout(dir, layout, &entries)?),
        None => detect_layout(dir, &entries)?,
    };
    folder_of(dir, layout, found, rules, Vec::new())
}

/// The folder of the migrations `found` (each with its place), sorted.
fn folder_of(
    dir: &Path,
    layout: Layout,
    mut found: Vec<(FolderEntry, Naming)>,
    rules: &FolderRules,
    unread: Vec<String>,
) -> Result<MigrationFolder, Error> {
    found.sort_by(|(_, a), (_, b)| a.order.cmp(&b.order));
    let same_version = (1..found.len())
        .filter(|&index| found[index - 1].1.order == found[index].1.order)
        .map(|index| (index - 1, index))
        .collect();
    let migrations = found
        .into_iter()
        .map(|(entry, naming)| read_migration(layout, entry, naming, rules.transaction))
        .collect::<Result<_, _>>()?;
    Ok(MigrationFolder {
        dir: dir.to_path_buf(),
        layout,
        migrations,
        out_of_order: (rules.out_of_order).unwrap_or(OutOfOrder::of_layout(layout)),
        same_version,
        unread,
    })
}

/// The folder read by `--files` and `--down-files` (see [`neutral`]).
fn read_neutral(dir: &Path, rules: &FolderRules) -> Result<MigrationFolder, Error> {
    let layout = rules.layout.unwrap_or(Layout::PlainSql);
    if matches!(layout, Layout::Prisma | Layout::Diesel | Layout::Sqitch) {
        return Err(Error::bad_input(format!(
            "--files with --layout {layout}: --files picks the files at the folder's top, and \
             {layout} keeps its migrations elsewhere; drop --files, or give a layout whose \
             migrations are files (e.g. --layout plain-sql)"
        )));
    }
    let entries = list_entries(dir)?;
    let (found, unread) =
        neutral::neutral_entries(&entries, &rules.files, &rules.down_files, rules.order);
    if found.is_empty() {
        return Err(Error::bad_input(format!(
            "{}: --files {}: no file of the folder matches; give globs of the migrations' \
             names, e.g. --files '*.up.sql'",
            dir.display(),
            rules.files.join(" ")
        )));
    }
    folder_of(dir, layout, found, rules, unread)
}

/// A Sqitch project: its plan's changes in order, each script run as psql
/// runs it (statements outside the script's own transaction commit alone).
fn read_sqitch(dir: &Path, plan: &Path) -> Result<MigrationFolder, Error> {
    let changes = sqitch::plan_changes(dir, plan, &read_text(plan)?)?;
    if changes.is_empty() {
        return Err(Error::bad_input(format!(
            "{}: the plan lists no change; give the project whose plan lists its changes",
            plan.display()
        )));
    }
    let migrations = changes
        .into_iter()
        .map(|change| {
            let text = read_text(&change.script)?;
            let display = change.script.display().to_string();
            let steps =
                steps::file_steps(&display, Layout::Sqitch, &text, None, TransactionMode::None)?;
            Ok(Migration {
                version: change.name.clone(),
                name: change.name,
                path: change.script,
                steps,
            })
        })
        .collect::<Result<_, Error>>()?;
    Ok(MigrationFolder {
        dir: dir.to_path_buf(),
        layout: Layout::Sqitch,
        migrations,
        out_of_order: OutOfOrder::Apply,
        same_version: Vec::new(),
        unread: Vec::new(),
    })
}

/// The entries of `dir` by name, each `.sql` file with its text.
fn list_entries(dir: &Path) -> Result<Vec<FolderEntry>, Error> {
    let unreadable = |err: std::io::Error| {
        Error::bad_input(format!(
            "{}: cannot read the migrations folder: {err}; give the folder that holds \
             the migration files",
            dir.display()
        ))
    };
    let mut entries = Vec::new();
    for item in std::fs::read_dir(dir).map_err(unreadable)? {
        let item = item.map_err(unreadable)?;
        let name = item.file_name().to_string_lossy().into_owned();
        let path = item.path();
        // Follows symbolic links, as the tools do.
        let is_dir = path.is_dir();
        let text = if !is_dir && name.ends_with(".sql") && !name.starts_with('.') {
            read_text(&path)?
        } else {
            String::new()
        };
        entries.push(FolderEntry {
            name,
            path,
            is_dir,
            text,
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

fn read_text(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|err| {
        Error::bad_input(format!(
            "{}: cannot read it: {err}; a migration must be a readable UTF-8 text file",
            path.display()
        ))
    })
}

/// The migrations of `entries` under the layout `--layout` chose.
fn forced_layout(
    dir: &Path,
    layout: Layout,
    entries: &[FolderEntry],
) -> Result<Vec<(FolderEntry, Naming)>, Error> {
    let mut found = Vec::new();
    let mut misfits = Vec::new();
    for entry in entries {
        match folder_layout::fit(layout, entry) {
            Fit::Migration(naming) => found.push((entry.clone(), naming)),
            Fit::Companion | Fit::Ignored => {}
            Fit::No => misfits.push(entry.name.as_str()),
        }
    }
    if !misfits.is_empty() {
        return Err(Error::bad_input(format!(
            "{}: --layout {layout}: {} not named as {layout} migrations are (like {}); \
             rename or move {}, or leave --layout out to detect the folder's layout",
            dir.display(),
            is_are(&misfits),
            layout.example(),
            if misfits.len() == 1 { "it" } else { "them" },
        )));
    }
    if found.is_empty() {
        return Err(Error::bad_input(format!(
            "{}: --layout {layout}: no migration in the folder (like {}); give the \
             folder that holds them",
            dir.display(),
            layout.example()
        )));
    }
    Ok(found)
}

/// The one layout the migrations of `entries` share, and those migrations.
fn detect_layout(
    dir: &Path,
    entries: &[FolderEntry],
) -> Result<(Layout, Vec<(FolderEntry, Naming)>), Error> {
    let mut claims: Vec<(Layout, &FolderEntry, Option<Naming>)> = Vec::new();
    let mut unmatched = Vec::new();
    for entry in entries {
        let claim = (Layout::value_variants().iter().copied())
            .filter(|layout| !matches!(layout, Layout::PlainSql | Layout::Sqitch))
            .find_map(|layout| match folder_layout::fit(layout, entry) {
                Fit::Migration(naming) => Some((layout, Some(naming))),
                Fit::Companion => Some((layout, None)),
                Fit::Ignored | Fit::No => None,
            });
        match claim {
            Some((layout, naming)) => claims.push((layout, entry, naming)),
            None if is_candidate(entry) => unmatched.push(entry.name.as_str()),
            None => {}
        }
    }
    let mut layouts: Vec<Layout> = Vec::new();
    for (layout, _, _) in &claims {
        if !layouts.contains(layout) {
            layouts.push(*layout);
        }
    }
    let dir_name = dir.display();
    let choices = Layout::choices();
    match layouts.as_slice() {
        [] if unmatched.is_empty() => Err(Error::bad_input(format!(
            "{dir_name}: no migrations in it (no .sql file, no Prisma or diesel migration \
             folder); give the folder that holds them"
        ))),
        [] => Err(Error::bad_input(format!(
            "{dir_name}: {} match{} no migration tool's names (0001_init.sql, \
             0001_init.up.sql, V1__init.sql, ...); say which files are migrations with \
             --files GLOB (e.g. --files '*.sql'), or give --layout plain-sql to apply the \
             .sql files in name order",
            name_list(&unmatched),
            if unmatched.len() == 1 { "es" } else { "" }
        ))),
        [layout] if !unmatched.is_empty() => Err(Error::bad_input(format!(
            "{dir_name}: {} not named as the {layout} migrations beside {} are (like {}); \
             name {} as one, move {} out of the folder, or read the folder as it is with \
             --files GLOB and --down-files GLOB",
            is_are(&unmatched),
            if unmatched.len() == 1 { "it" } else { "them" },
            layout.example(),
            if unmatched.len() == 1 { "it" } else { "them" },
            if unmatched.len() == 1 { "it" } else { "them" },
        ))),
        [layout] => {
            let found = claims
                .into_iter()
                .filter_map(|(_, entry, naming)| Some((entry.clone(), naming?)))
                .collect::<Vec<_>>();
            if found.is_empty() {
                return Err(Error::bad_input(format!(
                    "{dir_name}: only files {layout} does not apply (like down or undo \
                     files); give the folder that holds the migrations"
                )));
            }
            Ok((*layout, found))
        }
        several => {
            let examples = several
                .iter()
                .map(|layout| {
                    let names: Vec<&str> = claims
                        .iter()
                        .filter(|(claimed, _, _)| claimed == layout)
                        .map(|(_, entry, _)| entry.name.as_str())
                        .collect();
                    format!("{} ({layout})", name_list(&names))
                })
                .collect::<Vec<_>>();
            Err(Error::bad_input(format!(
                "{dir_name}: the files mix layouts: {}; keep one tool's migrations in the \
                 folder, choose the layout with --layout {choices}, or read the folder as it \
                 is with --files GLOB and --down-files GLOB (e.g. --files '*.up.sql' \
                 --down-files '*.down.sql')",
                examples.join(", ")
            )))
        }
    }
}

/// Whether an entry no layout claims is one the user may have meant as a
/// migration (a `.sql` file), rather than something beside them.
fn is_candidate(entry: &FolderEntry) -> bool {
    !entry.is_dir && !entry.name.starts_with('.') && entry.name.ends_with(".sql")
}

fn read_migration(
    layout: Layout,
    entry: FolderEntry,
    naming: Naming,
    mode: TransactionMode,
) -> Result<Migration, Error> {
    let text = if naming.file == entry.path {
        entry.text
    } else {
        read_text(&naming.file)?
    };
    // The file that says how the tool runs the migration: Flyway's
    // `<file>.conf`, diesel's `metadata.toml` beside `up.sql`.
    let conf_path = match layout {
        Layout::Flyway => Some(PathBuf::from(format!("{}.conf", naming.file.display()))),
        Layout::Diesel => Some(naming.file.with_file_name("metadata.toml")),
        _ => None,
    };
    let conf = match conf_path {
        Some(path) if path.is_file() => Some(read_text(&path)?),
        _ => None,
    };
    let display = naming.file.display().to_string();
    let steps = steps::file_steps(&display, layout, &text, conf.as_deref(), mode)?;
    Ok(Migration {
        name: entry.name,
        path: naming.file,
        version: naming.version,
        steps,
    })
}

/// `a.sql is` or `a.sql, b.sql are`.
fn is_are(names: &[&str]) -> String {
    let verb = if names.len() == 1 { "is" } else { "are" };
    format!("{} {verb}", name_list(names))
}

/// `a, b, c and 2 more`: at most four names.
fn name_list(names: &[&str]) -> String {
    const SHOWN: usize = 4;
    let shown = names[..names.len().min(SHOWN)].join(", ");
    match names.len().saturating_sub(SHOWN) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

#[cfg(test)]
mod tests;
