//! The throwaway PostgreSQL server: find the binaries, initdb into a temp
//! folder, start `postgres` on a unix socket only, stop and remove it on drop.
//!
//! The server is our direct child (no `pg_ctl`, which detaches it). It gets
//! `PR_SET_PDEATHSIG`, so even a harness killed with SIGKILL takes it down;
//! every other exit path (success, error, Ctrl-C, panic) runs `Drop`. Being its
//! parent, we also see at once when it dies: [`Server::exited`] is there for a
//! run to select on. The folder a SIGKILL leaves behind is removed by the next
//! run ([`leftovers`]).
//!
//! Its logging collector writes every message twice into the server's folder:
//! as readable text (`server.log`, with the reference experiment's settings, copied to
//! the results folder for people) and as data for `serverlog` to read (jsonlog
//! where the server has it, PostgreSQL 15 and later, else csvlog). What the
//! postmaster says before the collector takes over, such as why it could not
//! start, goes to `startup.log`. The collector writes a moment after a backend
//! logs; a strategy's part is read once its run has wound down, well after its
//! lock messages.
//!
//! Which binaries it runs (installed, cached or downloaded) is `binaries`'
//! business; the options passed to initdb and postgres follow their major.

mod binaries;
mod cache;
mod download;
mod leftovers;
mod package;
mod postmaster;
mod standby;
mod user;

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};

use crate::engine::postgres::serverlog::{LogFormat, StructuredLog};
pub use binaries::{
    INSTALL_HINT, PgBin, ServerBinaries, ServerRequest, find_binaries, holds_server,
};
pub use cache::SYSTEM_CACHE;
pub use package::{DEFAULT_REGISTRY, NEWEST_MAJOR, SUPPORTED_MAJORS};
use postmaster::NotReady;
pub use standby::CloneMethod;
use standby::Standby;
use user::{as_user, chown, server_user};

/// The port number names the socket file (`.s.PGSQL.5432`); no TCP listener is opened.
const PORT: u16 = 5432;
/// Socket paths longer than this do not fit `sockaddr_un`.
const MAX_SOCKET_PATH: usize = 107;
/// The readable log, written by the logging collector into the server's folder
/// (and copied under the same name into the results folder).
const TEXT_LOG: &str = crate::results::SERVER_LOG;
/// The postmaster's own output, before the logging collector takes over.
const STARTUP_LOG: &str = "startup.log";
/// How often [`Server::exited`] checks whether the server still runs.
const EXIT_CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// PostgreSQL's own default `max_connections`; the throwaway server never has fewer.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 100;

/// A running throwaway server. Dropping it stops the server and removes its folder.
#[derive(Debug)]
pub struct Server {
    /// The postmaster; shared between [`Server::exited`] and [`Server::stop`].
    child: Mutex<Option<Child>>,
    /// When the postmaster was started.
    started: Instant,
    /// How long initdb and the start took until the server accepted connections.
    start_duration: Duration,
    /// Holds the data folder, the socket and the log; removed on drop.
    folder: Option<tempfile::TempDir>,
    binaries: ServerBinaries,
    /// The structured log this server's version writes.
    log_format: LogFormat,
    /// The hot standby of [`Server::start_with_standby`]; stopped first.
    standby: Option<Standby>,
}

impl Server {
    /// Runs initdb of `binaries` and starts the server with room for
    /// `max_connections` sessions; returns once it accepts connections.
    pub async fn start(binaries: &ServerBinaries, max_connections: u32) -> anyhow::Result<Server> {
        Server::launch(binaries, max_connections, None).await
    }

    /// [`Server::start`], and a streaming hot standby of it beside it
    /// ([`standby`]) with `standby_settings` (`name=value`) on its command
    /// line; returns once the standby has replayed the primary's WAL up to
    /// the moment it started.
    pub async fn start_with_standby(
        binaries: &ServerBinaries,
        max_connections: u32,
        standby_settings: &[String],
    ) -> anyhow::Result<Server> {
        Server::launch(binaries, max_connections, Some(standby_settings)).await
    }

    async fn launch(
        binaries: &ServerBinaries,
        max_connections: u32,
        standby_settings: Option<&[String]>,
    ) -> anyhow::Result<Server> {
        let with_standby = standby_settings.is_some();
        let begun = Instant::now();
        let bin_dir = binaries.bin_dir.clone();
        let base = temp_base();
        if let Some(message) = leftovers::removed_message(&leftovers::remove_left_behind(&base)) {
            stderrln!("{message}");
        }
        let folder = make_folder(&base)?;
        leftovers::mark(folder.path())?;
        let owner = server_user()?;
        if let Some(user) = &owner {
            chown(folder.path(), user)?;
        }
        let data_dir = folder.path().join("data");
        initdb(binaries, folder.path(), &data_dir, owner.as_ref())?;
        let method = CloneMethod::for_bin_dir(&bin_dir);
        let standby_dirs = match with_standby {
            true => Some(standby::make_folder(folder.path(), owner.as_ref())?),
            false => None,
        };
        if let (Some((_, standby_data)), CloneMethod::ColdCopy) = (&standby_dirs, method) {
            standby::cold_copy(&data_dir, standby_data, owner.as_ref())?;
        }

        let log_format = structured_log_format(binaries.major);
        let mut settings = vec![format!("max_connections={max_connections}")];
        if with_standby {
            settings.extend(standby::primary_settings());
        }
        let child = postmaster::spawn(
            &bin_dir,
            &data_dir,
            folder.path(),
            owner.as_ref(),
            log_format,
            &settings,
        )?;
        let mut server = Server {
            child: Mutex::new(Some(child)),
            started: Instant::now(),
            start_duration: Duration::ZERO,
            folder: Some(folder),
            binaries: binaries.clone(),
            log_format,
            standby: None,
        };
        server.wait_ready(max_connections).await?;
        if let Some((standby_folder, standby_data)) = standby_dirs {
            if method == CloneMethod::BaseBackup {
                standby::base_backup(&bin_dir, server.socket_dir(), &standby_data, owner.as_ref())?;
            }
            let standby = Standby::spawn(
                binaries,
                (&standby_folder, &standby_data),
                server.socket_dir(),
                owner.as_ref(),
                (max_connections, standby_settings.unwrap_or_default()),
                method,
            )?;
            server.standby = Some(standby);
            server.wait_standby().await?;
        }
        server.start_duration = begun.elapsed();
        Ok(server)
    }

    /// Waits until the new standby accepts connections and has replayed
    /// what the primary wrote until now.
    async fn wait_standby(&self) -> anyhow::Result<()> {
        let standby = self.standby.as_ref().expect("called with a standby");
        standby.wait_ready().await?;
        self.standby_caught_up(Duration::from_secs(30))
            .await
            .map_err(|err| anyhow!("{err:#}; the standby's log:\n{}", standby.log_tail()))
    }

    /// Restarts the standby with `standby_settings` (`name=value`) unless it
    /// runs with them already; returns once it has caught up again.
    pub async fn use_standby_settings(&self, standby_settings: &[String]) -> anyhow::Result<()> {
        let Some(standby) = &self.standby else {
            bail!("this throwaway server has no standby");
        };
        if standby.runs_with(standby_settings) {
            return Ok(());
        }
        let owner = server_user()?;
        standby.restart(
            &self.binaries,
            self.socket_dir(),
            owner.as_ref(),
            standby_settings,
        )?;
        self.wait_standby().await
    }

    /// Waits until the standby has replayed everything the primary had
    /// written when asked, for up to `limit` (see [`standby::catch_up`]).
    pub async fn standby_caught_up(&self, limit: Duration) -> anyhow::Result<()> {
        let Some(standby_config) = self.standby_connection_config() else {
            bail!("this throwaway server has no standby");
        };
        let primary = connect(&self.connection_config()).await?;
        let standby = connect(&standby_config).await?;
        standby::catch_up(&primary, &standby, limit).await
    }

    /// Connection settings for the standby, if the server has one.
    pub fn standby_connection_config(&self) -> Option<tokio_postgres::Config> {
        Some(self.standby.as_ref()?.connection_config())
    }

    /// A libpq-style connection string for the standby, if the server has one.
    pub fn standby_connection_string(&self) -> Option<String> {
        let standby = self.standby.as_ref()?;
        Some(format!(
            "host={} port={PORT} user=postgres dbname=postgres",
            standby.folder().display()
        ))
    }

    /// How the standby was cloned, if the server has one.
    pub fn standby_method(&self) -> Option<CloneMethod> {
        Some(self.standby.as_ref()?.method)
    }

    /// The standby's readable log (inside the temp folder), if the server has one.
    pub fn standby_log_path(&self) -> Option<PathBuf> {
        Some(self.standby.as_ref()?.log_path())
    }

    /// The standby's structured log (the recovery-conflict waits are read
    /// from it), if the server has one.
    pub fn standby_structured_log(&self) -> Option<StructuredLog> {
        let (_, file_name) = structured_log_names(self.log_format);
        Some(StructuredLog {
            path: self.standby.as_ref()?.folder().join(file_name),
            format: self.log_format,
        })
    }

    /// The standby's exit status, once it has exited.
    pub fn standby_exit_status(&self) -> Option<ExitStatus> {
        self.standby.as_ref()?.exit_status()
    }

    /// Connection settings for this server (socket, user postgres, database postgres).
    pub fn connection_config(&self) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host_path(self.socket_dir())
            .port(PORT)
            .user("postgres")
            .dbname("postgres")
            .connect_timeout(Duration::from_secs(5));
        config
    }

    /// A libpq-style connection string for this server, for `--db-url` or psql.
    pub fn connection_string(&self) -> String {
        format!(
            "host={} port={PORT} user=postgres dbname=postgres",
            self.socket_dir().display()
        )
    }

    /// The server's readable log file (inside the temp folder; copy it before drop).
    pub fn log_path(&self) -> PathBuf {
        self.socket_dir().join(TEXT_LOG)
    }

    /// The server's structured log, the same messages as data (inside the temp folder).
    pub fn structured_log(&self) -> StructuredLog {
        let (_, file_name) = structured_log_names(self.log_format);
        StructuredLog {
            path: self.socket_dir().join(file_name),
            format: self.log_format,
        }
    }

    /// The folder holding the server binaries in use.
    pub fn bin_dir(&self) -> &Path {
        &self.binaries.bin_dir
    }

    /// The server binaries in use, with their release.
    pub fn binaries(&self) -> &ServerBinaries {
        &self.binaries
    }

    /// How long initdb and the start took, until the server accepted connections.
    pub fn start_duration(&self) -> Duration {
        self.start_duration
    }

    fn socket_dir(&self) -> &Path {
        self.folder
            .as_ref()
            .expect("the folder lives as long as the server")
            .path()
    }

    async fn wait_ready(&mut self, max_connections: u32) -> anyhow::Result<()> {
        let config = self.connection_config();
        let ready =
            postmaster::wait_accepting(&config, Duration::from_secs(30), || self.exit_status());
        match ready.await {
            Ok(()) => Ok(()),
            Err(NotReady::Exited(status)) => {
                // Shared memory and semaphores grow with max_connections: the usual cause of a big run's failure.
                let sizing = match max_connections > DEFAULT_MAX_CONNECTIONS {
                    true => format!(
                        "; it was started with max_connections={max_connections} for this run's \
                         connections: if its log names shared memory or semaphores, lower --clients \
                         or raise the kernel's limits"
                    ),
                    false => String::new(),
                };
                bail!(
                    "the throwaway server exited during startup ({status}){sizing}; its log:\n{}",
                    self.log_tail()
                )
            }
            Err(NotReady::TimedOut(err)) => bail!(
                "the throwaway server did not accept connections within 30 s ({err}); its log:\n{}",
                self.log_tail()
            ),
        }
    }

    /// Resolves once the server has exited, with an error naming its exit status
    /// and the last lines of its log; for a run to select on next to its work.
    pub async fn exited(&self) -> anyhow::Error {
        let mut check = tokio::time::interval(EXIT_CHECK_INTERVAL);
        loop {
            check.tick().await;
            if let Some(status) = self.exit_status() {
                // One line: the log's last lines joined.
                let last_lines = read_tail(&self.log_path(), 3).replace('\n', " | ");
                return anyhow!(
                    "the throwaway server died ({}) {:.1} s after it started; \
                     last lines of its log: {}",
                    describe_exit(status),
                    self.started.elapsed().as_secs_f64(),
                    last_lines
                );
            }
        }
    }

    /// The server's exit status, once it has exited.
    fn exit_status(&self) -> Option<ExitStatus> {
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        child.as_mut()?.try_wait().ok().flatten()
    }

    /// The last lines of the startup log and of the readable log, for error messages.
    fn log_tail(&self) -> String {
        postmaster::log_tail(self.socket_dir())
    }

    /// Stops the server (immediate shutdown, then kill after 10 s), its standby first, and removes its folder.
    pub fn stop(&mut self) {
        if let Some(standby) = &mut self.standby {
            standby.stop();
        }
        let child = self.child.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(mut child) = child.take() {
            postmaster::stop(&mut child);
        }
        if let Some(folder) = self.folder.take() {
            let _ = folder.close();
        }
    }
}

/// Runs initdb of `binaries` into `data_dir`, in `folder`, as `owner`.
fn initdb(
    binaries: &ServerBinaries,
    folder: &Path,
    data_dir: &Path,
    owner: Option<&user::ServerUser>,
) -> anyhow::Result<()> {
    let initdb = binaries.bin_dir.join("initdb");
    let mut command = Command::new(&initdb);
    command
        .arg("-D")
        .arg(data_dir)
        .args(initdb_options(binaries.major))
        .current_dir(folder)
        .stdin(Stdio::null());
    as_user(&mut command, owner);
    let output = command
        .output()
        .with_context(|| format!("running {}", initdb.display()))?;
    if !output.status.success() {
        bail!(
            "initdb failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// A session on a throwaway server, for the harness's own questions.
async fn connect(config: &tokio_postgres::Config) -> anyhow::Result<tokio_postgres::Client> {
    let (client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .context("connecting to the throwaway server")?;
    tokio::spawn(connection);
    Ok(client)
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The options of initdb: trust, no fsync, UTF-8 in the C locale;
/// `--no-instructions` (PostgreSQL 14 on) where the major knows it.
fn initdb_options(major: u32) -> Vec<&'static str> {
    let mut options = vec![
        "-U",
        "postgres",
        "--auth=trust",
        "--no-sync",
        "-E",
        "UTF8",
        "--locale=C",
    ];
    if major >= 14 {
        options.push("--no-instructions");
    }
    options
}

/// jsonlog from PostgreSQL 15 on, csvlog before.
fn structured_log_format(major_version: u32) -> LogFormat {
    if major_version >= 15 {
        LogFormat::JsonLog
    } else {
        LogFormat::CsvLog
    }
}

/// The `log_destination` entry of a format, and the file the logging collector
/// writes it to: `log_filename` with `.log` replaced by the format's suffix.
fn structured_log_names(format: LogFormat) -> (&'static str, &'static str) {
    match format {
        LogFormat::JsonLog => ("jsonlog", "server.json"),
        LogFormat::CsvLog => ("csvlog", "server.csv"),
    }
}

/// The `-c` settings that make the logging collector write the readable log
/// and the structured log into `folder` under fixed names, never rotated.
fn log_collector_settings(folder: &Path, format: LogFormat) -> Vec<OsString> {
    let (destination, _) = structured_log_names(format);
    let mut log_directory = OsString::from("log_directory=");
    log_directory.push(folder);
    let settings = [
        OsString::from("logging_collector=on"),
        OsString::from(format!("log_destination=stderr,{destination}")),
        log_directory,
        OsString::from(format!("log_filename={TEXT_LOG}")),
        // fs::copy keeps the mode: 0644 keeps the results folder's copy readable, as before.
        OsString::from("log_file_mode=0644"),
        OsString::from("log_rotation_age=0"),
        OsString::from("log_rotation_size=0"),
    ];
    settings
        .into_iter()
        .flat_map(|setting| [OsString::from("-c"), setting])
        .collect()
}

/// Where server folders go, so that the socket path fits `sockaddr_un`:
/// `$TMPDIR` if short enough, else `/tmp`.
fn temp_base() -> PathBuf {
    // The folder's random name, the standby's folder, the socket's name.
    let socket_name_len =
        20 + format!("/{}", standby::FOLDER).len() + format!("/.s.PGSQL.{PORT}").len();
    let base = std::env::temp_dir();
    if base.as_os_str().len() + socket_name_len < MAX_SOCKET_PATH {
        base
    } else {
        PathBuf::from("/tmp")
    }
}

/// A fresh server folder in `base`.
fn make_folder(base: &Path) -> anyhow::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(leftovers::FOLDER_PREFIX)
        .tempdir_in(base)
        .with_context(|| format!("creating a temp folder in {}", base.display()))
}

/// The last `count` lines of a log file, for error messages.
fn read_tail(path: &Path, count: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

/// `exit status 1` or `killed by signal 9`.
fn describe_exit(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_structured_log_and_initdb_options_follow_the_major_version() {
        assert!(!initdb_options(13).contains(&"--no-instructions"));
        assert!(initdb_options(14).contains(&"--no-instructions"));
        assert_eq!(structured_log_format(15), LogFormat::JsonLog);
        assert_eq!(structured_log_format(18), LogFormat::JsonLog);
        assert_eq!(structured_log_format(14), LogFormat::CsvLog);
        assert_eq!(structured_log_format(9), LogFormat::CsvLog);
    }

    #[test]
    fn log_collector_settings_name_both_files() {
        let settings = log_collector_settings(Path::new("/tmp/stallbench-x"), LogFormat::CsvLog);
        let settings: Vec<&str> = settings.iter().map(|s| s.to_str().unwrap()).collect();
        assert_eq!(
            settings,
            [
                "-c",
                "logging_collector=on",
                "-c",
                "log_destination=stderr,csvlog",
                "-c",
                "log_directory=/tmp/stallbench-x",
                "-c",
                "log_filename=server.log",
                "-c",
                "log_file_mode=0644",
                "-c",
                "log_rotation_age=0",
                "-c",
                "log_rotation_size=0",
            ]
        );
    }

    #[test]
    fn an_exit_is_described_by_its_code_or_signal() {
        assert_eq!(describe_exit(ExitStatus::from_raw(1 << 8)), "exit status 1");
        assert_eq!(describe_exit(ExitStatus::from_raw(9)), "killed by signal 9");
    }
}
