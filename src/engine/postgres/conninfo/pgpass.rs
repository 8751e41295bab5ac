//! The password file (`~/.pgpass` or `PGPASSFILE`), read as libpq reads it:
//! `host:port:database:user:password` lines, the first match wins, `*`
//! matches anything, `\:` and `\\` stand for `:` and `\`. A file that group
//! or others can read is ignored with a warning, as libpq does, so a password
//! left readable by mistake is never used.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{ConnSettings, DEFAULT_SOCKET_DIR};

/// What the password file says for a connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Found(String),
    /// No file, or no line for this connection.
    NotFound,
    /// The file was not read; the warning says why and how to fix it.
    Ignored(String),
}

/// Looks up the password for the first host of `settings` in the file at `path`.
pub fn lookup(path: &Path, settings: &ConnSettings) -> Lookup {
    let Ok(metadata) = std::fs::metadata(path) else {
        return Lookup::NotFound;
    };
    if !metadata.is_file() {
        return Lookup::Ignored(format!(
            "password file {} is not a plain file; it is ignored",
            path.display()
        ));
    }
    if metadata.permissions().mode() & 0o077 != 0 {
        return Lookup::Ignored(format!(
            "password file {} has group or world access; it is ignored. \
             Permissions should be u=rw (0600) or less: chmod 0600 {}",
            path.display(),
            path.display()
        ));
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return Lookup::Ignored(format!(
            "password file {} cannot be read; it is ignored",
            path.display()
        ));
    };
    let host = match (settings.hosts.first(), settings.hostaddrs.first()) {
        (Some(host), _) if host == DEFAULT_SOCKET_DIR => "localhost".to_string(),
        (Some(host), _) if !host.is_empty() => host.clone(),
        (_, Some(addr)) => addr.to_string(),
        _ => "localhost".to_string(),
    };
    let port = settings
        .ports
        .first()
        .copied()
        .unwrap_or(super::DEFAULT_PORT);
    let wanted = [
        host.as_str(),
        &port.to_string(),
        &settings.dbname,
        &settings.user,
    ];
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let fields = split_fields(line);
        if fields.len() < 5 {
            continue;
        }
        let matches = fields[..4]
            .iter()
            .zip(wanted)
            .all(|(field, value)| field == "*" || field == value);
        if matches {
            return Lookup::Found(fields[4..].join(":"));
        }
    }
    Lookup::NotFound
}

/// Splits a line on unescaped colons, taking `\x` as `x`.
fn split_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().unwrap().extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use std::fs::Permissions;

    use super::*;

    fn settings(host: &str, port: u16, dbname: &str, user: &str) -> ConnSettings {
        let text = format!("host={host} port={port} dbname={dbname} user={user} password=x");
        ConnSettings::resolve(&text, &|_| None).unwrap().settings
    }

    fn file(text: &str, mode: u32) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        std::fs::set_permissions(file.path(), Permissions::from_mode(mode)).unwrap();
        file
    }

    #[test]
    fn the_first_matching_line_wins_with_wildcards_and_escapes() {
        let pgpass = file(
            "# comment\n\
             db.example:5432:other:app:wrong\n\
             db\\:weird:5432:*:app:colon\\:host\n\
             *:5432:shop:app:s3cret:with:colons\n\
             *:*:*:*:fallback\n",
            0o600,
        );
        let find = |host, port, db, user| lookup(pgpass.path(), &settings(host, port, db, user));
        assert_eq!(
            find("db.example", 5432, "shop", "app"),
            Lookup::Found("s3cret:with:colons".into())
        );
        assert_eq!(
            find("db:weird", 5432, "any", "app"),
            Lookup::Found("colon:host".into())
        );
        assert_eq!(
            find("db.example", 6000, "shop", "app"),
            Lookup::Found("fallback".into())
        );
    }

    #[test]
    fn localhost_matches_the_default_socket() {
        let pgpass = file("localhost:5432:shop:app:local\n", 0o600);
        let found = lookup(
            pgpass.path(),
            &settings(DEFAULT_SOCKET_DIR, 5432, "shop", "app"),
        );
        assert_eq!(found, Lookup::Found("local".into()));
        let found = lookup(pgpass.path(), &settings("/tmp", 5432, "shop", "app"));
        assert_eq!(found, Lookup::NotFound);
    }

    #[test]
    fn a_file_others_can_read_is_ignored_with_a_warning() {
        let pgpass = file("*:*:*:*:s3cret\n", 0o640);
        match lookup(pgpass.path(), &settings("h", 5432, "db", "u")) {
            Lookup::Ignored(warning) => {
                assert!(warning.contains("group or world access"), "{warning}");
                assert!(warning.contains("chmod 0600"), "{warning}");
                assert!(!warning.contains("s3cret"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            lookup(
                Path::new("/nonexistent/.pgpass"),
                &settings("h", 1, "d", "u")
            ),
            Lookup::NotFound
        );
    }
}
