//! The layouts of the migration tools: which entries of a folder each takes
//! as a migration (a file, or a folder for Prisma and diesel), which it
//! ignores (`.down.sql`, Flyway's undo files), and
//! the order it applies them in. Detection asks every layout about every
//! entry; a folder is one layout's, or it is refused.

use std::cmp::Ordering;
use std::path::PathBuf;

pub use crate::choices::Layout;

/// One entry of a migrations folder: a file, or a folder (Prisma's, diesel's).
#[derive(Debug, Clone)]
pub(super) struct FolderEntry {
    pub name: String,
    pub path: PathBuf,
    pub is_dir: bool,
    /// A `.sql` file's text (empty for anything else).
    pub text: String,
}

/// What a layout makes of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Fit {
    /// One of its migrations.
    Migration(Naming),
    /// A file of this tool that it does not apply (a `.down.sql`, a Flyway undo file).
    Companion,
    /// Nothing a migration tool reads (a README, a hidden file, another folder).
    Ignored,
    /// A `.sql` file (or Prisma folder) this layout has no place for.
    No,
}

/// A migration's place: the file to read, its version, and its order key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Naming {
    /// The SQL file (for Prisma, the folder's `migration.sql`).
    pub file: PathBuf,
    pub version: String,
    pub order: OrderKey,
}

/// The order a tool applies its migrations in: versions compared number by
/// number (so `V1.10` comes after `V1.9`, and `0010` after `9`), then
/// Flyway's repeatable migrations by description, or plain names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum OrderKey {
    Version(Vec<Number>),
    Repeatable(String),
    Name(String),
    /// `--order number`: the number a name starts with, then the name (so
    /// two files with one number keep an order, as some migrators accept).
    NumberThenName(Number, String),
}

/// A run of decimal digits compared by value, however long: leading zeros
/// dropped, then shorter is smaller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Number(String);

impl Number {
    pub(super) fn new(digits: &str) -> Number {
        let trimmed = digits.trim_start_matches('0');
        Number(trimmed.to_string())
    }
}

impl Ord for Number {
    fn cmp(&self, other: &Number) -> Ordering {
        (self.0.len(), &self.0).cmp(&(other.0.len(), &other.0))
    }
}

impl PartialOrd for Number {
    fn partial_cmp(&self, other: &Number) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// What `layout` makes of `entry`.
pub(super) fn fit(layout: Layout, entry: &FolderEntry) -> Fit {
    if entry.name.starts_with('.') {
        return Fit::Ignored;
    }
    if entry.is_dir {
        return match layout {
            Layout::Prisma => prisma(entry),
            Layout::Diesel => diesel(entry),
            // Other tools do not look into sub-folders.
            _ => Fit::Ignored,
        };
    }
    if !entry.name.ends_with(".sql") {
        // README.md, Prisma's migration_lock.toml, Flyway's V1__x.sql.conf.
        return Fit::Ignored;
    }
    match layout {
        Layout::Numbered => numbered(entry),
        Layout::UpDown => up_down(entry),
        Layout::Dbmate => sectioned(entry, is_dbmate_up),
        Layout::Goose => sectioned(entry, is_goose_up),
        Layout::Flyway => flyway(entry),
        // Sqitch's order is its plan's: `super::sqitch` reads it, not the entries.
        Layout::Prisma | Layout::Diesel | Layout::Sqitch => Fit::No,
        Layout::PlainSql => Fit::Migration(Naming {
            file: entry.path.clone(),
            version: entry.name.trim_end_matches(".sql").to_string(),
            order: OrderKey::Name(entry.name.clone()),
        }),
    }
}

/// `0001_init.sql`, `0001-init.sql`, `0001.sql`: digits, then `_`, `-` or `.`;
/// not an up/down pair, and without another tool's section markers.
fn numbered(entry: &FolderEntry) -> Fit {
    let name = &entry.name;
    if name.ends_with(".up.sql") || name.ends_with(".down.sql") {
        return Fit::No;
    }
    let Some((digits, rest)) = leading_digits(name) else {
        return Fit::No;
    };
    if !rest.starts_with(['_', '-', '.']) {
        return Fit::No;
    }
    if entry
        .text
        .lines()
        .any(|line| is_dbmate_up(line) || is_goose_up(line))
    {
        return Fit::No;
    }
    version_fit(entry, digits)
}

/// `0001_init.up.sql` (a migration) and `0001_init.down.sql` (ignored).
fn up_down(entry: &FolderEntry) -> Fit {
    let Some((digits, rest)) = leading_digits(&entry.name) else {
        return Fit::No;
    };
    if !rest.starts_with('_') {
        return Fit::No;
    }
    if rest.ends_with(".down.sql") {
        Fit::Companion
    } else if rest.ends_with(".up.sql") {
        version_fit(entry, digits)
    } else {
        Fit::No
    }
}

/// A numbered file whose lines include the tool's up marker (dbmate, goose).
fn sectioned(entry: &FolderEntry, is_up: fn(&str) -> bool) -> Fit {
    let Some((digits, _)) = leading_digits(&entry.name) else {
        return Fit::No;
    };
    if !entry.text.lines().any(is_up) {
        return Fit::No;
    }
    version_fit(entry, digits)
}

/// dbmate's `-- migrate:up` line (options may follow: `transaction:false`).
fn is_dbmate_up(line: &str) -> bool {
    dbmate_marker(line, "migrate:up").is_some()
}

/// The options after dbmate's `marker` (`migrate:up`, `migrate:down`) when
/// `line` is that marker: `--`, blanks, the marker, then blanks or the end.
pub(super) fn dbmate_marker<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let rest = line.strip_prefix("--")?.trim_start().strip_prefix(marker)?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
}

/// goose's `-- +goose Up` line.
fn is_goose_up(line: &str) -> bool {
    goose_annotation(line).is_some_and(|word| word.eq_ignore_ascii_case("up"))
}

/// The annotation of a goose line (`Up`, `Down`, `StatementBegin`,
/// `NO TRANSACTION`, ...) when `line` is one: `-- +goose ` then the words.
pub(super) fn goose_annotation(line: &str) -> Option<&str> {
    let rest = line.trim_end().strip_prefix("--")?.trim_start();
    Some(rest.strip_prefix("+goose")?.trim())
}

/// Flyway: `V<version>__<description>.sql` (version parts split by `.` or
/// `_`), `R__<description>.sql` (repeatable: applied after every versioned
/// one, by description), `U<version>__...` (undo, ignored).
fn flyway(entry: &FolderEntry) -> Fit {
    let name = &entry.name;
    let stem = name.trim_end_matches(".sql");
    if let Some(description) = stem.strip_prefix("R__") {
        return Fit::Migration(Naming {
            file: entry.path.clone(),
            version: "R".to_string(),
            order: OrderKey::Repeatable(description.to_string()),
        });
    }
    let (undo, rest) = match stem.split_at_checked(1) {
        Some(("V", rest)) => (false, rest),
        Some(("U", rest)) => (true, rest),
        _ => return Fit::No,
    };
    let Some((version, _description)) = rest.split_once("__") else {
        return Fit::No;
    };
    let parts: Vec<&str> = version.split(['.', '_']).collect();
    if parts
        .iter()
        .any(|part| part.is_empty() || !part.bytes().all(|byte| byte.is_ascii_digit()))
    {
        return Fit::No;
    }
    if undo {
        return Fit::Companion;
    }
    let mut numbers: Vec<Number> = parts.into_iter().map(Number::new).collect();
    // Flyway reads 1.0 as 1: trailing zero parts do not count.
    while numbers.last().is_some_and(|number| number.0.is_empty()) {
        numbers.pop();
    }
    Fit::Migration(Naming {
        file: entry.path.clone(),
        version: version.replace('_', "."),
        order: OrderKey::Version(numbers),
    })
}

/// Prisma: a folder `<digits>_<name>` holding `migration.sql`, in name order.
fn prisma(entry: &FolderEntry) -> Fit {
    let file = entry.path.join("migration.sql");
    let Some((digits, rest)) = leading_digits(&entry.name) else {
        return Fit::Ignored;
    };
    if !rest.starts_with('_') || !file.is_file() {
        return Fit::Ignored;
    }
    Fit::Migration(Naming {
        file,
        version: digits.to_string(),
        order: OrderKey::Name(entry.name.clone()),
    })
}

/// diesel: a folder `<version>_<name>` holding `up.sql`, the version digits
/// and dashes (`2019-02-26-002946`, `00000000000000`). diesel orders its
/// migrations by the version without its dashes, compared as text.
fn diesel(entry: &FolderEntry) -> Fit {
    let file = entry.path.join("up.sql");
    let Some((version, _name)) = entry.name.split_once('_') else {
        return Fit::Ignored;
    };
    let digits_and_dashes = version.bytes().all(|b| b.is_ascii_digit() || b == b'-');
    if version.is_empty() || !digits_and_dashes || !file.is_file() {
        return Fit::Ignored;
    }
    Fit::Migration(Naming {
        file,
        version: version.to_string(),
        order: OrderKey::Name(version.replace('-', "")),
    })
}

fn version_fit(entry: &FolderEntry, digits: &str) -> Fit {
    Fit::Migration(Naming {
        file: entry.path.clone(),
        version: digits.to_string(),
        order: OrderKey::Version(vec![Number::new(digits)]),
    })
}

/// The leading ASCII digits of `name` (at least one) and the rest.
pub(super) fn leading_digits(name: &str) -> Option<(&str, &str)> {
    let end = name
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(name.len());
    (end > 0).then(|| name.split_at(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit_of(layout: Layout, name: &str, text: &str) -> Fit {
        let entry = FolderEntry {
            name: name.to_string(),
            path: PathBuf::from(name),
            is_dir: false,
            text: text.to_string(),
        };
        fit(layout, &entry)
    }

    fn order_of(layout: Layout, name: &str) -> OrderKey {
        match fit_of(layout, name, "") {
            Fit::Migration(naming) => naming.order,
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn a_wrong_layout_lists_the_choices() {
        let parsed = <crate::cli::Cli as clap::Parser>::try_parse_from([
            "stallbench",
            "check",
            ".",
            "--layout",
            "rails",
        ]);
        let err = parsed.unwrap_err().to_string();
        assert!(
            err.contains("invalid value 'rails' for '--layout <LAYOUT>'")
                && err.contains(
                    "numbered, up-down, dbmate, goose, flyway, prisma, diesel, sqitch, plain-sql"
                ),
            "{err}"
        );
    }

    #[test]
    fn flyway_versions_compare_part_by_part_as_numbers() {
        let v = |name| order_of(Layout::Flyway, name);
        assert!(v("V1.9__a.sql") < v("V1.10__b.sql"));
        assert!(v("V1__a.sql") < v("V1.1__b.sql"));
        assert!(v("V1_2__a.sql") == v("V1.2__b.sql"));
        assert!(v("V1.0__a.sql") == v("V1__b.sql"));
        assert!(v("V2__a.sql") < v("V10__b.sql"));
        assert!(v("V999__a.sql") < v("R__views.sql"));
        assert!(v("R__a_views.sql") < v("R__b_grants.sql"));
        assert_eq!(fit_of(Layout::Flyway, "U2__undo.sql", ""), Fit::Companion);
        assert_eq!(fit_of(Layout::Flyway, "V1.x__bad.sql", ""), Fit::No);
        assert_eq!(fit_of(Layout::Flyway, "V1_init.sql", ""), Fit::No);
        assert_eq!(fit_of(Layout::Flyway, "0001_init.sql", ""), Fit::No);
    }

    #[test]
    fn numbered_versions_compare_as_numbers_whatever_their_width() {
        let v = |name| order_of(Layout::Numbered, name);
        assert!(v("9_a.sql") < v("0010_b.sql"));
        assert!(v("0001_a.sql") == v("1_b.sql"));
        assert!(v("20240101120000_a.sql") < v("20240101120001_b.sql"));
        assert!(matches!(
            fit_of(Layout::Numbered, "0001.sql", ""),
            Fit::Migration(_)
        ));
        assert!(matches!(
            fit_of(Layout::Numbered, "0001-init.sql", ""),
            Fit::Migration(_)
        ));
        assert_eq!(fit_of(Layout::Numbered, "0001init.sql", ""), Fit::No);
        assert_eq!(fit_of(Layout::Numbered, "init.sql", ""), Fit::No);
        assert_eq!(fit_of(Layout::Numbered, "0001_a.up.sql", ""), Fit::No);
        assert_eq!(
            fit_of(Layout::Numbered, "0001_a.sql", "-- migrate:up\n"),
            Fit::No
        );
        assert_eq!(
            fit_of(Layout::Numbered, "0001_a.sql", "-- +goose Up\n"),
            Fit::No
        );
        assert_eq!(fit_of(Layout::Numbered, "README.md", ""), Fit::Ignored);
        assert_eq!(fit_of(Layout::Numbered, ".0001_a.sql", ""), Fit::Ignored);
    }

    #[test]
    fn up_files_are_migrations_and_down_files_are_ignored() {
        assert!(matches!(
            fit_of(Layout::UpDown, "0001_a.up.sql", ""),
            Fit::Migration(_)
        ));
        assert_eq!(
            fit_of(Layout::UpDown, "0001_a.down.sql", ""),
            Fit::Companion
        );
        assert_eq!(fit_of(Layout::UpDown, "0001_a.sql", ""), Fit::No);
    }

    #[test]
    fn section_markers_are_read_as_the_tools_read_them() {
        assert!(is_dbmate_up("-- migrate:up"));
        assert!(is_dbmate_up("--migrate:up transaction:false"));
        assert!(!is_dbmate_up("-- migrate:upgrade"));
        assert!(!is_dbmate_up("  -- migrate:up"));
        assert_eq!(
            dbmate_marker("-- migrate:up transaction:false", "migrate:up"),
            Some("transaction:false")
        );
        assert!(is_goose_up("-- +goose Up"));
        assert!(is_goose_up("-- +goose up  "));
        assert!(!is_goose_up("-- +goose Down"));
        assert_eq!(
            goose_annotation("-- +goose NO TRANSACTION"),
            Some("NO TRANSACTION")
        );
    }
}
