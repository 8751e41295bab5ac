//! The cache of downloaded server binaries: one folder per package version,
//! `$XDG_CACHE_HOME/stallbench/pg/<version>`, else `~/.cache/stallbench/pg/<version>`,
//! holding `bin/`, `lib/` and `share/`.
//!
//! As root, the server runs as the `postgres` user, which must read the
//! binaries and enter every folder on the way to them. Root's home (`/root`,
//! mode 0700) lets no one in, so when that user cannot enter the cache's
//! parent folders the cache is [`SYSTEM_CACHE`] instead, root's own and
//! readable by all, as a system package's files are. The folders stallbench
//! makes are mode 0755, the files 0644 or 0755, whatever the umask.
//!
//! A version's folder appears whole or not at all: it is unpacked into a
//! `.partial-*` folder beside it and renamed into place. Runs that download at
//! the same time take turns on a lock file (`.lock`): the second finds the
//! folder the first put in place. A `.partial-*` entry found while holding the
//! lock was left by a run that died, and is removed.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::package::release_of;
use super::user::ServerUser;

/// The cache used as root when the server user cannot reach the user's cache.
pub const SYSTEM_CACHE: &str = "/var/cache/stallbench/pg";
/// The cache's folder under `$XDG_CACHE_HOME` (or `~/.cache`).
const CACHE_SUBFOLDER: &str = "stallbench/pg";
/// The lock file downloads take turns on.
const LOCK_FILE: &str = ".lock";
/// Names of the folders and files a download fills before they are complete.
pub const PARTIAL_PREFIX: &str = ".partial-";

/// The folder holding one subfolder per downloaded package version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    pub root: PathBuf,
}

/// A package version found in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedVersion {
    /// The package version, e.g. `18.4.0-beta.17`.
    pub version: String,
    /// Its `bin` folder.
    pub bin_dir: PathBuf,
}

/// Held while a download fills the cache; dropping it lets the next run in.
#[derive(Debug)]
pub struct CacheLock {
    _file: File,
}

impl Cache {
    /// The cache under `cache_home` (`$XDG_CACHE_HOME`, else `~/.cache`);
    /// [`SYSTEM_CACHE`] when `server_user` (the user the server runs as, when
    /// not us) cannot enter `cache_home`, or when there is no home at all.
    pub fn locate(cache_home: Option<&Path>, server_user: Option<ServerUser>) -> Cache {
        let reachable = |home: &Path| match server_user {
            None => true,
            Some(user) => can_enter_all(home, user),
        };
        let root = match cache_home {
            Some(home) if reachable(home) => home.join(CACHE_SUBFOLDER),
            _ => PathBuf::from(SYSTEM_CACHE),
        };
        Cache { root }
    }

    /// The highest cached version of `major` (any supported major when
    /// `None`) whose folder holds `initdb` and `postgres`.
    pub fn newest(&self, major: Option<u32>) -> Option<CachedVersion> {
        let entries = std::fs::read_dir(&self.root).ok()?;
        entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter_map(|name| {
                let (found_major, _) = release_of(&name)?;
                let wanted = match major {
                    Some(major) => found_major == major,
                    None => super::package::SUPPORTED_MAJORS.contains(&found_major),
                };
                let version = semver::Version::parse(&name).ok()?;
                (wanted && super::binaries::holds_server(&self.root.join(&name).join("bin")))
                    .then_some((version, name))
            })
            .max()
            .map(|(_, name)| CachedVersion {
                bin_dir: self.root.join(&name).join("bin"),
                version: name,
            })
    }

    /// Makes the cache folder (mode 0755) and takes its lock, waiting for
    /// another run's download first (saying so when it has to wait); then
    /// removes what a run that died left half done.
    pub fn lock(&self) -> anyhow::Result<CacheLock> {
        make_readable_dirs(&self.root)?;
        let path = self.root.join(LOCK_FILE);
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening the cache's lock file {}", path.display()))?;
        if let Err(std::fs::TryLockError::WouldBlock) = file.try_lock() {
            stderrln!(
                "waiting for another stallbench run downloading into {}",
                self.root.display()
            );
            file.lock()
                .with_context(|| format!("locking {}", path.display()))?;
        }
        self.remove_partials();
        Ok(CacheLock { _file: file })
    }

    /// Removes the `.partial-*` entries; only called with the lock held.
    fn remove_partials(&self) {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return;
        };
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(PARTIAL_PREFIX)
            {
                let path = entry.path();
                let _ = match path.is_dir() {
                    true => std::fs::remove_dir_all(&path),
                    false => std::fs::remove_file(&path),
                };
            }
        }
    }

    /// A new folder to unpack into, removed on drop unless installed.
    pub fn partial_folder(&self, _lock: &CacheLock) -> anyhow::Result<tempfile::TempDir> {
        tempfile::Builder::new()
            .prefix(PARTIAL_PREFIX)
            .tempdir_in(&self.root)
            .with_context(|| format!("creating a folder in {}", self.root.display()))
    }

    /// A new file to download into, removed on drop.
    pub fn partial_file(&self, _lock: &CacheLock) -> anyhow::Result<tempfile::NamedTempFile> {
        tempfile::Builder::new()
            .prefix(PARTIAL_PREFIX)
            .suffix(".tgz")
            .tempfile_in(&self.root)
            .with_context(|| format!("creating a file in {}", self.root.display()))
    }

    /// Renames a complete `folder` into place as `version` (readable by all).
    pub fn install(
        &self,
        folder: tempfile::TempDir,
        version: &str,
        _lock: &CacheLock,
    ) -> anyhow::Result<PathBuf> {
        let destination = self.root.join(version);
        set_mode(folder.path(), 0o755)?;
        std::fs::rename(folder.path(), &destination).with_context(|| {
            format!(
                "moving {} to {}",
                folder.path().display(),
                destination.display()
            )
        })?;
        // Renamed: nothing is left for the TempDir to remove.
        let _ = folder.keep();
        Ok(destination)
    }
}

/// Whether `user` can enter `folder` and every folder above it, going by
/// their owners and modes (the search bit: owner, group, or others).
fn can_enter_all(folder: &Path, user: ServerUser) -> bool {
    folder.ancestors().all(|dir| match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            let mode = meta.mode();
            if meta.uid() == user.uid {
                mode & 0o100 != 0
            } else if meta.gid() == user.gid {
                mode & 0o010 != 0
            } else {
                mode & 0o001 != 0
            }
        }
        _ => false,
    })
}

/// Creates `root` and its missing parents, then makes `root` and its parent
/// (`stallbench/pg`, ours) mode 0755, whatever the umask.
fn make_readable_dirs(root: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(root).with_context(|| {
        format!(
            "creating the download cache {}; set XDG_CACHE_HOME to a folder you can write",
            root.display()
        )
    })?;
    set_mode(root, 0o755)?;
    if let Some(parent) = root
        .parent()
        .filter(|parent| parent.ends_with("stallbench"))
    {
        set_mode(parent, 0o755)?;
    }
    Ok(())
}

/// Sets the permission bits of `path`.
pub fn set_mode(path: &Path, mode: u32) -> anyhow::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nobody() -> ServerUser {
        ServerUser {
            uid: 65534,
            gid: 65534,
        }
    }

    #[test]
    fn the_cache_is_the_users_unless_the_server_user_cannot_enter_it() {
        let home = tempfile::tempdir().unwrap();
        let open = home.path().join("open");
        std::fs::create_dir(&open).unwrap();
        set_mode(home.path(), 0o755).unwrap();
        set_mode(&open, 0o755).unwrap();
        // We run the server ourselves: our own cache, whatever its mode.
        let private = home.path().join("private");
        std::fs::create_dir(&private).unwrap();
        set_mode(&private, 0o700).unwrap();
        assert_eq!(
            Cache::locate(Some(&private), None).root,
            private.join("stallbench/pg")
        );
        // Another user runs it: it must enter every folder on the way.
        assert_eq!(
            Cache::locate(Some(&open), Some(nobody())).root,
            open.join("stallbench/pg")
        );
        assert_eq!(
            Cache::locate(Some(&private), Some(nobody())).root,
            PathBuf::from(SYSTEM_CACHE)
        );
        let inside = private.join("deeper");
        std::fs::create_dir(&inside).unwrap();
        set_mode(&inside, 0o755).unwrap();
        assert_eq!(
            Cache::locate(Some(&inside), Some(nobody())).root,
            PathBuf::from(SYSTEM_CACHE)
        );
        // No such folder, or no home at all.
        assert_eq!(
            Cache::locate(Some(&open.join("missing")), Some(nobody())).root,
            PathBuf::from(SYSTEM_CACHE)
        );
        assert_eq!(Cache::locate(None, None).root, PathBuf::from(SYSTEM_CACHE));
    }

    fn fake_server(root: &Path, version: &str) {
        let bin = root.join(version).join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for name in ["initdb", "postgres"] {
            std::fs::write(bin.join(name), "").unwrap();
        }
    }

    #[test]
    fn the_newest_complete_version_of_a_major_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache {
            root: dir.path().to_path_buf(),
        };
        assert_eq!(cache.newest(Some(16)), None);
        fake_server(dir.path(), "16.9.0-beta.15");
        fake_server(dir.path(), "16.13.0-beta.16");
        fake_server(dir.path(), "17.6.0-beta.15");
        fake_server(dir.path(), "12.20.0-beta.1");
        // Incomplete: no postgres.
        std::fs::create_dir_all(dir.path().join("16.14.0-beta.17/bin")).unwrap();
        std::fs::create_dir_all(dir.path().join(".partial-16.20.0-beta.1/bin")).unwrap();
        let found = cache.newest(Some(16)).unwrap();
        assert_eq!(found.version, "16.13.0-beta.16");
        assert_eq!(found.bin_dir, dir.path().join("16.13.0-beta.16/bin"));
        // Any supported major: the highest; 12 is not supported.
        assert_eq!(cache.newest(None).unwrap().version, "17.6.0-beta.15");
        assert_eq!(cache.newest(Some(12)).unwrap().version, "12.20.0-beta.1");
    }

    #[test]
    fn the_lock_removes_what_a_dead_run_left_and_install_renames_into_place() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache {
            root: dir.path().join("stallbench/pg"),
        };
        std::fs::create_dir_all(cache.root.join(".partial-abc/bin")).unwrap();
        std::fs::write(cache.root.join(".partial-x.tgz"), "half").unwrap();
        let lock = cache.lock().unwrap();
        let names: Vec<String> = std::fs::read_dir(&cache.root)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [".lock"]);
        let mode = |path: &Path| std::fs::metadata(path).unwrap().mode() & 0o777;
        assert_eq!(mode(&cache.root), 0o755);
        assert_eq!(mode(cache.root.parent().unwrap()), 0o755);
        let folder = cache.partial_folder(&lock).unwrap();
        std::fs::write(folder.path().join("file"), "x").unwrap();
        let installed = cache.install(folder, "18.4.0-beta.17", &lock).unwrap();
        assert_eq!(installed, cache.root.join("18.4.0-beta.17"));
        assert!(installed.join("file").is_file());
        assert_eq!(mode(&installed), 0o755);
    }
}
