//! The throwaway MariaDB server: find `mariadbd`, `mariadb-install-db` into a
//! temp folder, start it on a unix socket only, stop and remove it on drop.
//!
//! As the throwaway PostgreSQL server does (`server/`): the server is our
//! direct child, in its own process group, with `PR_SET_PDEATHSIG` so that a
//! harness killed with SIGKILL takes it down; every other exit path (success,
//! error, Ctrl-C, panic) runs `Drop`, which stops it and removes the folder.
//! As root it runs as the `mysql` system user (the package creates it).
//!
//! performance_schema is on, with the metadata-lock instrument enabled: the
//! lock observer reads `performance_schema.metadata_locks`, which stays empty
//! without it.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The command that installs the server's binaries on Debian and Ubuntu.
pub const INSTALL_HINT: &str = "apt-get install mariadb-server";
/// The folder of the binaries, when they are not where Debian puts them.
pub const BIN_ENV: &str = "STALLBENCH_MARIADB_BIN";
/// The server's log, in its folder (copied to the results folder as `server.log`).
pub const LOG_FILE: &str = "server.log";
/// The socket's file name in the server's folder.
const SOCKET_FILE: &str = "mariadb.sock";
/// How long the server may take to accept connections.
const START_LIMIT: Duration = Duration::from_secs(60);
/// How long a shutdown may take before the server is killed.
const STOP_LIMIT: Duration = Duration::from_secs(10);
/// What the throwaway folders' names start with.
const FOLDER_PREFIX: &str = "stallbench-mariadb-";

/// The two programs a throwaway server needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MariadbBinaries {
    /// The server, `mariadbd`.
    pub mariadbd: PathBuf,
    /// The script that creates a data folder, `mariadb-install-db`.
    pub install_db: PathBuf,
}

/// Finds `mariadbd` and `mariadb-install-db`: in `$STALLBENCH_MARIADB_BIN`,
/// else where Debian's `mariadb-server` puts them (`/usr/sbin`, `/usr/bin`),
/// else on PATH.
pub fn find_binaries() -> anyhow::Result<MariadbBinaries> {
    let mut folders: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os(BIN_ENV) {
        folders.push(PathBuf::from(dir));
    }
    folders.extend([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")]);
    if let Some(path) = std::env::var_os("PATH") {
        folders.extend(std::env::split_paths(&path));
    }
    find_in(&folders)
}

/// Finds both programs in the first of `folders` that has each; the error
/// names the missing one and the command that installs it.
fn find_in(folders: &[PathBuf]) -> anyhow::Result<MariadbBinaries> {
    let find = |name: &str| {
        folders
            .iter()
            .map(|folder| folder.join(name))
            .find(|candidate| candidate.is_file())
    };
    match (find("mariadbd"), find("mariadb-install-db")) {
        (Some(mariadbd), Some(install_db)) => Ok(MariadbBinaries {
            mariadbd,
            install_db,
        }),
        (mariadbd, _) => bail!(
            "--engine mariadb: {} not found (looked in ${BIN_ENV}, /usr/sbin, /usr/bin and PATH); \
             install it with `{INSTALL_HINT}`, or name its folder in {BIN_ENV}",
            if mariadbd.is_none() {
                "mariadbd"
            } else {
                "mariadb-install-db"
            }
        ),
    }
}

/// A running throwaway MariaDB server. Dropping it stops the server and removes its folder.
#[derive(Debug)]
pub struct MariadbServer {
    /// The server process; shared between [`MariadbServer::exit_status`] and [`MariadbServer::stop`].
    child: Mutex<Option<Child>>,
    /// Holds the data folder, the socket and the log; removed on stop.
    folder: Option<tempfile::TempDir>,
    /// How long creating the data folder and the start took.
    start_duration: Duration,
}

impl MariadbServer {
    /// Creates a data folder with `mariadb-install-db` and starts `mariadbd`
    /// on it with room for `max_connections` sessions; returns once it accepts connections.
    pub async fn start(
        binaries: &MariadbBinaries,
        max_connections: u32,
    ) -> anyhow::Result<MariadbServer> {
        let begun = Instant::now();
        let folder = tempfile::Builder::new()
            .prefix(FOLDER_PREFIX)
            .tempdir_in("/tmp")
            .context("creating a temp folder in /tmp for the throwaway MariaDB server")?;
        let owner = server_user()?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(folder.path(), Some(uid), Some(gid))
                .with_context(|| format!("giving {} to the mysql user", folder.path().display()))?;
        }
        // Its own temp folder: concurrent bootstraps sharing /tmp lost their temp tables.
        let tmp = folder.path().join("tmp");
        std::fs::create_dir(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&tmp, Some(uid), Some(gid))
                .with_context(|| format!("giving {} to the mysql user", tmp.display()))?;
        }
        install_db(binaries, folder.path(), owner)?;
        let child = spawn(binaries, folder.path(), owner, max_connections)?;
        let mut server = MariadbServer {
            child: Mutex::new(Some(child)),
            folder: Some(folder),
            start_duration: Duration::ZERO,
        };
        server.wait_ready().await?;
        server.start_duration = begun.elapsed();
        Ok(server)
    }

    /// The folder of the data, the socket and the log.
    pub fn folder(&self) -> &Path {
        self.folder
            .as_ref()
            .expect("the folder lives as long as the server")
            .path()
    }

    /// The unix socket the server listens on (it opens no TCP port).
    pub fn socket_path(&self) -> PathBuf {
        self.folder().join(SOCKET_FILE)
    }

    /// The server's error log (inside the temp folder; copy it before drop).
    pub fn log_path(&self) -> PathBuf {
        self.folder().join(LOG_FILE)
    }

    /// How long creating the data folder and the start took.
    pub fn start_duration(&self) -> Duration {
        self.start_duration
    }

    /// Connection options for this server: its socket, user root, database `db`.
    pub fn opts(&self, db: Option<&str>) -> mysql_async::Opts {
        mysql_async::OptsBuilder::default()
            .socket(Some(self.socket_path().to_string_lossy().into_owned()))
            .user(Some("root"))
            .db_name(db)
            .into()
    }

    /// The server's exit status, once it has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        child.as_mut()?.try_wait().ok().flatten()
    }

    /// The process id of the server, while it runs.
    pub fn pid(&self) -> Option<u32> {
        let child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        child.as_ref().map(Child::id)
    }

    async fn wait_ready(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + START_LIMIT;
        let opts = self.opts(None);
        loop {
            if let Some(status) = self.exit_status() {
                bail!(
                    "the throwaway MariaDB server exited during startup ({status}); its log:\n{}",
                    read_tail(&self.log_path(), 20)
                );
            }
            match mysql_async::Conn::new(opts.clone()).await {
                Ok(conn) => {
                    let _ = conn.disconnect().await;
                    return Ok(());
                }
                Err(err) if Instant::now() > deadline => bail!(
                    "the throwaway MariaDB server did not accept connections within {} s ({err}); \
                     its log:\n{}",
                    START_LIMIT.as_secs(),
                    read_tail(&self.log_path(), 20)
                ),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s) and removes its folder.
    pub fn stop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(mut child) = child.take() {
            stop_child(&mut child);
        }
        if let Some(folder) = self.folder.take() {
            let _ = folder.close();
        }
    }
}

impl Drop for MariadbServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The `mysql` system user's uid and gid when we are root (the server then
/// runs as it, as Debian's service does); `None` when it runs as ourselves.
fn server_user() -> anyhow::Result<Option<(u32, u32)>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = std::ffi::CString::new("mysql").expect("no NUL in a literal");
    // SAFETY: getpwnam returns a pointer to static storage or null; we copy out at once.
    let entry = unsafe { libc::getpwnam(name.as_ptr()) };
    if entry.is_null() {
        bail!(
            "running as root, and there is no `mysql` system user to run the throwaway MariaDB \
             server; install the server with `{INSTALL_HINT}` (it creates the user), or run \
             stallbench as another user"
        );
    }
    // SAFETY: checked non-null above.
    Ok(Some(unsafe { ((*entry).pw_uid, (*entry).pw_gid) }))
}

/// Makes `command` run as `owner`, if there is one.
fn as_owner(command: &mut Command, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid).env("HOME", "/tmp");
    }
}

/// Creates the data folder `folder/data` with `mariadb-install-db`: root
/// without a password on the socket, no test database.
fn install_db(
    binaries: &MariadbBinaries,
    folder: &Path,
    owner: Option<(u32, u32)>,
) -> anyhow::Result<()> {
    let mut command = Command::new(&binaries.install_db);
    command
        .arg("--no-defaults")
        .arg(format!("--datadir={}", folder.join("data").display()))
        .arg(format!("--tmpdir={}", folder.join("tmp").display()))
        .args([
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
        ])
        .current_dir(folder)
        .stdin(Stdio::null());
    as_owner(&mut command, owner);
    let output = command
        .output()
        .with_context(|| format!("running {}", binaries.install_db.display()))?;
    if !output.status.success() {
        bail!(
            "{} failed ({}):\n{}{}",
            binaries.install_db.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// The server's options besides its folders: no TCP port, performance_schema
/// with the metadata-lock instrument, no binary log, a small buffer pool.
fn server_options(max_connections: u32) -> Vec<String> {
    [
        "--skip-networking",
        "--performance-schema=ON",
        "--performance-schema-instrument=wait/lock/metadata/sql/mdl=ON",
        "--skip-log-bin",
        "--innodb-buffer-pool-size=128M",
        "--character-set-server=utf8mb4",
        "--collation-server=utf8mb4_general_ci",
    ]
    .into_iter()
    .map(String::from)
    .chain([format!("--max-connections={max_connections}")])
    .collect()
}

/// Spawns `mariadbd` on `folder/data`, its socket and log in `folder`, as
/// `owner`, in its own process group (a terminal's Ctrl-C reaches the
/// harness, which stops it in order), dying with the harness.
fn spawn(
    binaries: &MariadbBinaries,
    folder: &Path,
    owner: Option<(u32, u32)>,
    max_connections: u32,
) -> anyhow::Result<Child> {
    let startup_log = std::fs::File::create(folder.join("startup.log"))
        .context("creating the MariaDB server's startup.log")?;
    let mut command = Command::new(&binaries.mariadbd);
    command
        .arg("--no-defaults")
        .arg(format!("--datadir={}", folder.join("data").display()))
        .arg(format!("--socket={}", folder.join(SOCKET_FILE).display()))
        .arg(format!("--tmpdir={}", folder.join("tmp").display()))
        .arg(format!(
            "--pid-file={}",
            folder.join("mariadbd.pid").display()
        ))
        .arg(format!("--log-error={}", folder.join(LOG_FILE).display()))
        .args(server_options(max_connections))
        .current_dir(folder)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(
            startup_log
                .try_clone()
                .context("duplicating a file handle")?,
        )
        .stderr(startup_log);
    as_owner(&mut command, owner);
    // SAFETY: prctl is async-signal-safe; it only sets a flag of the child process.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
        .spawn()
        .with_context(|| format!("starting {}", binaries.mariadbd.display()))
}

/// Stops `child` if it still runs: SIGTERM (a normal shutdown), then
/// SIGKILL after [`STOP_LIMIT`]; reaps it either way.
fn stop_child(child: &mut Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    // SAFETY: plain kill(2) on our own child's pid, not yet reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let deadline = Instant::now() + STOP_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return;
            }
        }
    }
}

/// The last `count` lines of a log file, for error messages.
fn read_tail(path: &Path, count: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_binaries_are_an_error_with_the_install_command() {
        let empty = tempfile::tempdir().unwrap();
        let err = find_in(&[empty.path().to_path_buf()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("mariadbd not found"), "{err}");
        assert!(err.contains("apt-get install mariadb-server"), "{err}");
    }

    #[test]
    fn the_server_enables_the_metadata_lock_instrument_and_opens_no_port() {
        let options = server_options(40);
        assert!(options.contains(&"--skip-networking".to_string()));
        assert!(options.contains(&"--performance-schema=ON".to_string()));
        assert!(options.contains(
            &"--performance-schema-instrument=wait/lock/metadata/sql/mdl=ON".to_string()
        ));
        assert!(options.contains(&"--max-connections=40".to_string()));
    }
}
