//! Which migrations of a folder are new (`--new N`, `--since FILE`,
//! `--git-base REF`), and whether the tool would apply them after the
//! others, as the check does. A new migration written before the base's
//! newest one (a pull request opened before another merged) is applied by
//! Prisma, sqlx, diesel, dbmate and Sqitch (each applies what is not yet
//! applied), refused by Flyway and goose (unless told otherwise), and never
//! applied by golang-migrate (it records only the newest version):
//! `--out-of-order` says which, else the layout's tool decides. What the
//! tool would not apply is the check's failure ([`Split::unordered`]), with
//! its files written; a new migration with an earlier one's version too.

use std::path::Path;

use super::{Layout, Migration, MigrationFolder, OutOfOrder, Selection, Unordered, git};
use crate::error::Error;

/// A folder's migrations split into the earlier ones (the schema the new
/// ones meet) and the new ones, both in the order the check applies them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub earlier: Vec<Migration>,
    pub new: Vec<Migration>,
    /// What the reader should know, one sentence each: files left unread, a
    /// new migration applied after a later-numbered earlier one, an earlier
    /// migration changed since `--git-base`.
    pub notes: Vec<String>,
    /// New migrations the tool would not apply after the others.
    pub unordered: Option<Unordered>,
}

/// Splits `folder` into its earlier and new migrations by `selection`.
pub fn split_new(folder: MigrationFolder, selection: &Selection) -> Result<Split, Error> {
    let count = folder.migrations.len();
    let mut notes = Vec::new();
    if !folder.unread.is_empty() {
        notes.push(format!(
            "not read: {} (matched by neither --files nor --down-files)",
            folder.unread.join(", ")
        ));
    }
    let is_new: Vec<bool> = match selection {
        Selection::LastN(0) => {
            return Err(Error::bad_input(
                "--new 0: that checks no migration; give the number of new migrations, \
                 e.g. --new 1",
            ));
        }
        Selection::LastN(n) if *n > count => {
            return Err(Error::bad_input(format!(
                "--new {n}: {} holds {count} migration{}; give at most {count}",
                folder.dir.display(),
                if count == 1 { "" } else { "s" }
            )));
        }
        Selection::LastN(n) => (0..count).map(|index| index >= count - n).collect(),
        Selection::Since(file) => {
            let first = since_position(&folder, file)?;
            (0..count).map(|index| index >= first).collect()
        }
        Selection::GitBase(reference) => {
            let changes = git::changes(&folder, reference)?;
            notes.extend(changes.notes);
            changes.added
        }
    };
    let unordered = match same_version(&folder, &is_new)? {
        Some(unordered) => Some(unordered),
        None => out_of_order(&folder, &is_new, &mut notes),
    };
    let (mut earlier, mut new) = (Vec::new(), Vec::new());
    for (migration, is_new) in folder.migrations.into_iter().zip(is_new) {
        match is_new {
            true => new.push(migration),
            false => earlier.push(migration),
        }
    }
    Ok(Split {
        earlier,
        new,
        notes,
        unordered,
    })
}

/// Two migrations with one version: the check's failure when one of them
/// is new (the tool refuses the folder once it is merged), bad input when
/// both are earlier (the folder was never the tool's as read).
fn same_version(folder: &MigrationFolder, is_new: &[bool]) -> Result<Option<Unordered>, Error> {
    let Some(&(first, second)) = folder.same_version.first() else {
        return Ok(None);
    };
    let migrations = &folder.migrations;
    let (a, b) = (&migrations[first], &migrations[second]);
    if !(is_new[first] || is_new[second]) {
        return Err(Error::bad_input(format!(
            "{}: {} and {} have the same version {}; the {} tool would refuse them; if the \
             project's migrator accepts them, read the folder without a layout's names: \
             --files GLOB (e.g. --files '*.sql') and --order number or name",
            folder.dir.display(),
            a.name,
            b.name,
            b.version,
            folder.layout
        )));
    }
    let renumber = if is_new[second] { &b.name } else { &a.name };
    Ok(Some(Unordered {
        migrations: vec![a.name.clone(), b.name.clone()],
        reason: format!(
            "{} and {} have the same version {}, which the {} tool refuses; renumber {renumber}",
            a.name, b.name, b.version, folder.layout
        ),
    }))
}

/// New migrations that sort before the newest earlier one: applied after
/// it with a note when the tool does so, else the check's failure.
pub(super) fn out_of_order(
    folder: &MigrationFolder,
    is_new: &[bool],
    notes: &mut Vec<String>,
) -> Option<Unordered> {
    // Flyway's repeatable migrations run after the versioned ones whenever
    // they change: no version to be out of order with.
    let versioned = |index: usize| {
        !(folder.layout == Layout::Flyway && folder.migrations[index].version == "R")
    };
    let newest_earlier = (0..is_new.len())
        .rev()
        .find(|&index| !is_new[index] && versioned(index))?;
    let applied = &folder.migrations[newest_earlier];
    let early: Vec<&str> = (0..newest_earlier)
        .filter(|&index| is_new[index] && versioned(index))
        .map(|index| folder.migrations[index].name.as_str())
        .collect();
    if early.is_empty() {
        return None;
    }
    let names = early.join(", ");
    let (them, sort) = match early.len() {
        1 => ("it", "sorts"),
        _ => ("them", "sort"),
    };
    let tool = tool_name(folder.layout, folder.out_of_order);
    let reason = match folder.out_of_order {
        OutOfOrder::Apply => {
            notes.push(format!(
                "{names} {sort} before {}, which is applied where the base is deployed; {tool} \
                 applies what is not yet applied, so the check applies {them} after it",
                applied.name
            ));
            return None;
        }
        OutOfOrder::Refuse => format!(
            "{names} {sort} before {}, which is applied where the base is deployed, and {tool} \
             refuses to migrate then; give {them} a version after {}, or let the tool apply \
             {them} ({}) and give --out-of-order apply",
            applied.name,
            applied.version,
            match folder.layout {
                Layout::Flyway => "outOfOrder=true",
                Layout::Goose => "goose up -allow-missing",
                _ => "its option for that",
            }
        ),
        OutOfOrder::Skip => format!(
            "{names} {sort} before {}, which is applied where the base is deployed, and {tool} \
             records only the newest version applied, so it never applies {them}; give {them} \
             a version after {}{}",
            applied.name,
            applied.version,
            match folder.layout {
                Layout::UpDown => " (sqlx applies them: give --out-of-order apply)",
                _ => "",
            }
        ),
    };
    Some(Unordered {
        migrations: early.iter().map(|name| name.to_string()).collect(),
        reason,
    })
}

/// The tool that behaves as `rule` says in `layout`'s folders, for messages.
fn tool_name(layout: Layout, rule: OutOfOrder) -> String {
    let named = match (layout, rule) {
        (Layout::Prisma, OutOfOrder::Apply) => "Prisma",
        (Layout::Diesel, OutOfOrder::Apply) => "diesel",
        (Layout::Dbmate, OutOfOrder::Apply) => "dbmate",
        (Layout::Sqitch, OutOfOrder::Apply) => "Sqitch",
        (Layout::Numbered, OutOfOrder::Apply) => "the tool (sqlx, for one)",
        (Layout::Flyway, OutOfOrder::Refuse) => "Flyway",
        (Layout::Flyway, OutOfOrder::Apply) => "Flyway with outOfOrder=true",
        (Layout::Goose, OutOfOrder::Refuse) => "goose",
        (Layout::Goose, OutOfOrder::Apply) => "goose with -allow-missing",
        (Layout::UpDown, OutOfOrder::Skip) => "golang-migrate",
        _ => "",
    };
    match named {
        "" => {
            let rule = serde_json::to_value(rule)
                .ok()
                .and_then(|value| value.as_str().map(str::to_string))
                .unwrap_or_default();
            format!("the tool (--out-of-order {rule})")
        }
        named => named.to_string(),
    }
}

/// The index of the migration `--since FILE` names.
fn since_position(folder: &MigrationFolder, file: &Path) -> Result<usize, Error> {
    let given = file.to_string_lossy();
    let canonical = |path: &Path| path.canonicalize().ok();
    let wanted = canonical(file).or_else(|| canonical(&folder.dir.join(file)));
    let names_it = |migration: &Migration| {
        let own_folder = migration
            .path
            .parent()
            .filter(|_| matches!(folder.layout, Layout::Prisma | Layout::Diesel));
        migration.name == given
            || migration.version == given
            || (wanted.is_some()
                && [Some(migration.path.as_path()), own_folder]
                    .into_iter()
                    .flatten()
                    .any(|path| canonical(path) == wanted))
    };
    folder.migrations.iter().position(names_it).ok_or_else(|| {
        let last = folder.migrations.last().map_or(String::new(), |migration| {
            format!(", e.g. {}", migration.name)
        });
        Error::bad_input(format!(
            "--since {given}: no migration of {} has that name, path or version; \
                 give the first new one{last}",
            folder.dir.display()
        ))
    })
}
