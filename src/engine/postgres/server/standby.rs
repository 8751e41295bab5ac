//! A streaming hot standby of the throwaway server, where the long report of
//! a replica's outage runs. It lives in the primary's folder (`standby/`: its
//! data, socket and logs under the primary's file names) and is stopped
//! before the primary on every exit path.
//!
//! It is cloned with `pg_basebackup -R` where the binaries have it, else by
//! copying the primary's data folder before the primary's first start: the
//! downloaded builds ship only `initdb`, `pg_ctl` and `postgres`, and a cold
//! copy of a cluster that never ran is a valid base backup (PostgreSQL's own
//! tests clone with it too). Either way the standby streams from the
//! primary's socket without a replication slot (a slot would keep WAL
//! forever if the standby died; the primary keeps `wal_keep_size` instead).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::postmaster::{self, NotReady};
use super::user::{ServerUser, as_user, chown};
use super::{PORT, ServerBinaries, TEXT_LOG, structured_log_format};

/// The standby's folder inside the primary's.
pub(super) const FOLDER: &str = "standby";
/// How the standby names itself to the primary (`pg_stat_replication.application_name`).
const APPLICATION_NAME: &str = "stallbench-standby";
/// How long the standby may take to accept connections and catch up at start.
const START_LIMIT: Duration = Duration::from_secs(30);

/// How the standby's data folder was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloneMethod {
    /// `pg_basebackup -R` from the running primary.
    BaseBackup,
    /// A copy of the primary's data folder before its first start, for
    /// binaries without `pg_basebackup`.
    ColdCopy,
}

impl CloneMethod {
    /// `pg_basebackup` where `bin_dir` has it, else a cold copy.
    pub fn for_bin_dir(bin_dir: &Path) -> CloneMethod {
        match bin_dir.join("pg_basebackup").is_file() {
            true => CloneMethod::BaseBackup,
            false => CloneMethod::ColdCopy,
        }
    }

    /// `basebackup` or `cold-copy`, as run.json writes it.
    pub fn name(self) -> &'static str {
        match self {
            CloneMethod::BaseBackup => "basebackup",
            CloneMethod::ColdCopy => "cold-copy",
        }
    }
}

/// The settings the primary needs to feed a standby: WAL for replicas,
/// kept long enough for a standby whose replay is stuck behind a lock.
pub(super) fn primary_settings() -> Vec<String> {
    [
        "wal_level=replica",
        "max_wal_senders=10",
        "wal_keep_size=512MB",
    ]
    .map(String::from)
    .to_vec()
}

/// The standby's folder in the primary's `folder`, made and given to the
/// server user, with its (still empty) data folder path.
pub(super) fn make_folder(
    folder: &Path,
    owner: Option<&ServerUser>,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let standby_folder = folder.join(FOLDER);
    std::fs::create_dir(&standby_folder)
        .with_context(|| format!("creating {}", standby_folder.display()))?;
    if let Some(user) = owner {
        chown(&standby_folder, user)?;
    }
    let data_dir = standby_folder.join("data");
    Ok((standby_folder, data_dir))
}

/// Copies the primary's data folder, which has never run, to `data_dir`
/// and marks it a standby (`standby.signal`); as the server user, modes kept.
pub(super) fn cold_copy(
    primary_data: &Path,
    data_dir: &Path,
    owner: Option<&ServerUser>,
) -> anyhow::Result<()> {
    let mut copy = Command::new("cp");
    copy.arg("-a").arg(primary_data).arg(data_dir);
    run_as(
        &mut copy,
        owner,
        "copying the primary's data folder for the standby",
    )?;
    let signal = data_dir.join("standby.signal");
    std::fs::write(&signal, "").with_context(|| format!("writing {}", signal.display()))?;
    if let Some(user) = owner {
        chown(&signal, user)?;
    }
    Ok(())
}

/// `pg_basebackup -R` of the running primary (socket in `folder`) into
/// `data_dir`, with its WAL streamed alongside and a fast checkpoint.
pub(super) fn base_backup(
    bin_dir: &Path,
    folder: &Path,
    data_dir: &Path,
    owner: Option<&ServerUser>,
) -> anyhow::Result<()> {
    let mut backup = Command::new(bin_dir.join("pg_basebackup"));
    backup
        .arg("-D")
        .arg(data_dir)
        .arg("-h")
        .arg(folder)
        .args(["-p", &PORT.to_string(), "-U", "postgres"])
        .args(["-R", "-X", "stream", "-c", "fast", "-N"])
        .current_dir(folder);
    run_as(&mut backup, owner, "pg_basebackup of the throwaway server")
}

/// Runs `command` as the server user; an error names `what` and its output.
fn run_as(command: &mut Command, owner: Option<&ServerUser>, what: &str) -> anyhow::Result<()> {
    command.stdin(Stdio::null());
    as_user(command, owner);
    let output = command.output().with_context(|| what.to_string())?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    Ok(())
}

/// A running standby.
#[derive(Debug)]
pub(super) struct Standby {
    child: Mutex<Option<Child>>,
    /// `standby/` in the primary's folder: data, socket, logs.
    folder: PathBuf,
    data_dir: PathBuf,
    /// The primary's `max_connections`, which the standby must match.
    max_connections: u32,
    /// The settings it runs with beyond its own (`[replica]`'s).
    extra_settings: Mutex<Vec<String>>,
    pub(super) method: CloneMethod,
}

impl Standby {
    /// Starts the standby on `data_dir` (a base backup or a cold copy) in
    /// `folder`, streaming from the primary whose socket is in
    /// `primary_folder`, with the primary's `max_connections` (a hot standby
    /// refuses fewer) and its major's settings.
    pub(super) fn spawn(
        binaries: &ServerBinaries,
        (folder, data_dir): (&Path, &Path),
        primary_folder: &Path,
        owner: Option<&ServerUser>,
        (max_connections, extra_settings): (u32, &[String]),
        method: CloneMethod,
    ) -> anyhow::Result<Standby> {
        let standby = Standby {
            child: Mutex::new(None),
            folder: folder.to_path_buf(),
            data_dir: data_dir.to_path_buf(),
            max_connections,
            extra_settings: Mutex::new(Vec::new()),
            method,
        };
        standby.start(binaries, primary_folder, owner, extra_settings)?;
        Ok(standby)
    }

    /// Starts its postmaster with `extra_settings` beyond its own.
    fn start(
        &self,
        binaries: &ServerBinaries,
        primary_folder: &Path,
        owner: Option<&ServerUser>,
        extra_settings: &[String],
    ) -> anyhow::Result<()> {
        let mut settings = standby_settings(primary_folder, binaries.major, self.max_connections);
        settings.extend(extra_settings.iter().cloned());
        let child = postmaster::spawn(
            &binaries.bin_dir,
            &self.data_dir,
            &self.folder,
            owner,
            structured_log_format(binaries.major),
            &settings,
        )?;
        *self.child.lock().unwrap_or_else(PoisonError::into_inner) = Some(child);
        *self
            .extra_settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = extra_settings.to_vec();
        Ok(())
    }

    /// Whether it runs with `extra_settings` beyond its own.
    pub(super) fn runs_with(&self, extra_settings: &[String]) -> bool {
        *self
            .extra_settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            == extra_settings
    }

    /// Stops it and starts it again on its data with `extra_settings` (a
    /// sweep over its settings); the caller waits until it is ready.
    pub(super) fn restart(
        &self,
        binaries: &ServerBinaries,
        primary_folder: &Path,
        owner: Option<&ServerUser>,
        extra_settings: &[String],
    ) -> anyhow::Result<()> {
        let running = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut child) = running {
            postmaster::stop(&mut child);
        }
        self.start(binaries, primary_folder, owner, extra_settings)
    }

    /// Connection settings for the standby (its socket, user and database postgres).
    pub(super) fn connection_config(&self) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host_path(&self.folder)
            .port(PORT)
            .user("postgres")
            .dbname("postgres")
            .connect_timeout(Duration::from_secs(5));
        config
    }

    /// `standby/` in the primary's folder, holding its socket.
    pub(super) fn folder(&self) -> &Path {
        &self.folder
    }

    /// The standby's readable log.
    pub(super) fn log_path(&self) -> PathBuf {
        self.folder.join(TEXT_LOG)
    }

    /// Waits until the standby accepts connections (it refuses them while
    /// it starts and until its replay is consistent).
    pub(super) async fn wait_ready(&self) -> anyhow::Result<()> {
        let config = self.connection_config();
        match postmaster::wait_accepting(&config, START_LIMIT, || self.exit_status()).await {
            Ok(()) => Ok(()),
            Err(NotReady::Exited(status)) => bail!(
                "the standby exited during startup ({status}); its log:\n{}",
                self.log_tail()
            ),
            Err(NotReady::TimedOut(err)) => bail!(
                "the standby did not accept connections within {} s ({err}); its log:\n{}",
                START_LIMIT.as_secs(),
                self.log_tail()
            ),
        }
    }

    /// The standby's exit status, once it has exited.
    pub(super) fn exit_status(&self) -> Option<ExitStatus> {
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        child.as_mut()?.try_wait().ok().flatten()
    }

    /// The last lines of its startup log and readable log, for error messages.
    pub(super) fn log_tail(&self) -> String {
        postmaster::log_tail(&self.folder)
    }

    /// Stops the standby (before the primary, whose walsender then has no
    /// one to wait for).
    pub(super) fn stop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(mut child) = child.take() {
            postmaster::stop(&mut child);
        }
    }
}

/// The standby's `-c` settings: the primary's `max_connections`, streaming
/// from the primary's socket, replies every second (so the primary's view of
/// it stays fresh), and from PostgreSQL 14 a log line for each recovery
/// conflict wait (13 does not know the setting and would not start).
fn standby_settings(primary_folder: &Path, major: u32, max_connections: u32) -> Vec<String> {
    let mut settings = vec![
        format!("max_connections={max_connections}"),
        "hot_standby=on".to_string(),
        format!(
            "primary_conninfo=host={} port={PORT} user=postgres application_name={APPLICATION_NAME}",
            primary_folder.display()
        ),
        "wal_receiver_status_interval=1s".to_string(),
    ];
    if major >= 14 {
        settings.push("log_recovery_conflict_waits=on".to_string());
    }
    settings
}

/// Waits until `standby` has replayed everything `primary` had written when
/// asked, polling every 20 ms for up to `limit`; the error says how far
/// behind it stayed.
pub async fn catch_up(
    primary: &tokio_postgres::Client,
    standby: &tokio_postgres::Client,
    limit: Duration,
) -> anyhow::Result<()> {
    let target: String = primary
        .query_one("SELECT pg_current_wal_lsn()::text", &[])
        .await
        .context("reading the primary's WAL position")?
        .get(0);
    let deadline = Instant::now() + limit;
    loop {
        let row = standby
            .query_one(
                "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::text::pg_lsn, false), \
                 coalesce(pg_last_wal_replay_lsn()::text, 'nothing'), \
                 coalesce(pg_wal_lsn_diff($1::text::pg_lsn, pg_last_wal_replay_lsn()), 0)::float8",
                &[&target],
            )
            .await
            .context("reading the standby's replay position")?;
        if row.get::<_, bool>(0) {
            return Ok(());
        }
        if Instant::now() > deadline {
            let behind_mb = row.get::<_, f64>(2) / 1_000_000.0;
            bail!(
                "the standby did not catch up within {} s (replayed {}, primary at {target}: \
                 {behind_mb:.1} MB behind)",
                limit.as_secs_f64(),
                row.get::<_, String>(1),
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standby_streams_from_the_primary_socket_and_logs_conflicts_from_14() {
        let settings = standby_settings(Path::new("/tmp/stallbench-x"), 15, 120);
        assert!(settings.contains(&"max_connections=120".to_string()));
        assert!(
            settings.contains(
                &"primary_conninfo=host=/tmp/stallbench-x port=5432 user=postgres \
              application_name=stallbench-standby"
                    .to_string()
            )
        );
        assert!(settings.contains(&"log_recovery_conflict_waits=on".to_string()));
        let thirteen = standby_settings(Path::new("/tmp/stallbench-x"), 13, 100);
        assert!(
            !thirteen
                .iter()
                .any(|s| s.starts_with("log_recovery_conflict_waits"))
        );
    }

    #[test]
    fn binaries_without_pg_basebackup_clone_by_a_cold_copy() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(CloneMethod::for_bin_dir(dir.path()), CloneMethod::ColdCopy);
        std::fs::write(dir.path().join("pg_basebackup"), "").unwrap();
        assert_eq!(
            CloneMethod::for_bin_dir(dir.path()),
            CloneMethod::BaseBackup
        );
        assert_eq!(CloneMethod::ColdCopy.name(), "cold-copy");
    }
}
