//! Reading any folder as it is, without a layout's names: `--files GLOB`
//! says which files are migrations, `--down-files GLOB` which are down
//! files beside them (not applied), and `--order` how the migrations order
//! (the number a name starts with, then the name; or the name alone). Every
//! other file is listed as not read, never dropped in silence. A glob is a
//! file name with `*` (any characters) and `?` (one character).

use super::folder_layout::{FolderEntry, Naming, Number, OrderKey, leading_digits};
use crate::choices::FileOrder;

/// The migrations among `entries` by `files` and `down_files`, ordered by
/// `order`, and the names of the files matched by neither.
pub(super) fn neutral_entries(
    entries: &[FolderEntry],
    files: &[String],
    down_files: &[String],
    order: FileOrder,
) -> (Vec<(FolderEntry, Naming)>, Vec<String>) {
    let mut found = Vec::new();
    let mut unread = Vec::new();
    for entry in entries.iter().filter(|entry| !entry.name.starts_with('.')) {
        let matches = |globs: &[String]| globs.iter().any(|glob| glob_match(glob, &entry.name));
        if matches(down_files) {
            continue;
        }
        if entry.is_dir || !matches(files) {
            unread.push(entry.name.clone());
            continue;
        }
        found.push((entry.clone(), naming(entry, order)));
    }
    (found, unread)
}

/// A file's place by `order`; its version is the number its name starts
/// with (or its name without `.sql`, when it starts with none).
fn naming(entry: &FolderEntry, order: FileOrder) -> Naming {
    let digits = leading_digits(&entry.name).map(|(digits, _)| digits);
    let version = digits.map_or_else(
        || entry.name.trim_end_matches(".sql").to_string(),
        str::to_string,
    );
    let order = match order {
        FileOrder::Number => {
            OrderKey::NumberThenName(Number::new(digits.unwrap_or("")), entry.name.clone())
        }
        FileOrder::Name => OrderKey::Name(entry.name.clone()),
    };
    Naming {
        file: entry.path.clone(),
        version,
        order,
    }
}

/// Whether `name` matches `glob`: `*` is any run of characters, `?` one
/// character, anything else itself.
pub fn glob_match(glob: &str, name: &str) -> bool {
    let glob: Vec<char> = glob.chars().collect();
    let name: Vec<char> = name.chars().collect();
    // The classic two-pointer match, going back to the last `*` on a mismatch.
    let (mut g, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match glob.get(g) {
            Some('*') => {
                star = Some((g, n));
                g += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                g += 1;
                n += 1;
            }
            _ => match star {
                Some((star_g, star_n)) => {
                    g = star_g + 1;
                    n = star_n + 1;
                    star = Some((star_g, star_n + 1));
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn globs_match_whole_names() {
        assert!(glob_match("*.up.sql", "0001_init.up.sql"));
        assert!(glob_match("*.up.sql", "0180.up.sql"));
        assert!(!glob_match("*.up.sql", "0021_name_down.sql"));
        assert!(glob_match("*_down.sql", "0021_name_down.sql"));
        assert!(glob_match("V?__*.sql", "V1__init.sql"));
        assert!(!glob_match("V?__*.sql", "V10__init.sql"));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
        assert!(!glob_match("init.sql", "init.sql.bak"));
    }

    /// A Go project's folder as it is: `.up.sql` files, down files named two
    /// ways, files named by their number alone, two files with one number.
    #[test]
    fn a_folder_is_read_by_its_globs_and_the_rest_is_listed() {
        let names = [
            "0001_init.up.sql",
            "0001_init.down.sql",
            "0021_name_down.sql",
            "0021_name.up.sql",
            "0180.up.sql",
            "0180_fix.up.sql",
            "9_early.up.sql",
            "README.md",
            "notes.txt",
            ".hidden",
        ];
        let entries: Vec<FolderEntry> = names
            .iter()
            .map(|name| FolderEntry {
                name: name.to_string(),
                path: PathBuf::from(name),
                is_dir: false,
                text: String::new(),
            })
            .collect();
        let files = ["*.up.sql".to_string()];
        let downs = ["*.down.sql".to_string(), "*_down.sql".to_string()];
        let ordered = |order| {
            let (mut found, unread) = neutral_entries(&entries, &files, &downs, order);
            found.sort_by(|(_, a), (_, b)| a.order.cmp(&b.order));
            let found: Vec<String> = found.into_iter().map(|(entry, _)| entry.name).collect();
            (found, unread)
        };
        let (found, unread) = ordered(FileOrder::Number);
        assert_eq!(
            found,
            [
                "0001_init.up.sql",
                "9_early.up.sql",
                "0021_name.up.sql",
                "0180.up.sql",
                "0180_fix.up.sql"
            ]
        );
        assert_eq!(unread, ["README.md", "notes.txt"]);
        let (found, _) = ordered(FileOrder::Name);
        assert_eq!(found[1], "0021_name.up.sql");
        assert_eq!(found[4], "9_early.up.sql");
    }
}
