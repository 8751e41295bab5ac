//! Starting and stopping one postmaster, the primary's or the standby's: the
//! command line the harness always gives it, and the stop that every exit
//! path runs: an immediate shutdown (SIGQUIT), since the folder is removed
//! right after and a fast shutdown's checkpoint would only write, for
//! seconds after a big fill, what is then deleted; SIGKILL after 10 s.

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::user::{ServerUser, as_user};
use super::{PORT, STARTUP_LOG, TEXT_LOG, log_collector_settings, read_tail};
use crate::engine::postgres::serverlog::LogFormat;

/// How long a shutdown may take before the postmaster is killed.
const STOP_LIMIT: Duration = Duration::from_secs(10);

/// Spawns `postgres` of `bin_dir` on `data_dir`, its socket, logs and
/// `startup.log` in `folder` (port [`PORT`], no TCP listener), with the
/// harness's settings and then `settings` (`name=value`, a later one wins);
/// as the server user, in its own process group (a terminal's Ctrl-C
/// reaches the harness, which stops it in order), and dying with the harness.
pub(super) fn spawn(
    bin_dir: &Path,
    data_dir: &Path,
    folder: &Path,
    owner: Option<&ServerUser>,
    log_format: LogFormat,
    settings: &[String],
) -> anyhow::Result<Child> {
    let startup_log_path = folder.join(STARTUP_LOG);
    let startup_log = File::create(&startup_log_path)
        .with_context(|| format!("creating {}", startup_log_path.display()))?;
    let mut postgres = Command::new(bin_dir.join("postgres"));
    postgres
        .arg("-D")
        .arg(data_dir)
        .arg("-k")
        .arg(folder)
        .arg("-p")
        .arg(PORT.to_string())
        .args([
            "-c",
            "listen_addresses=",
            "-c",
            "log_lock_waits=on",
            "-c",
            "deadlock_timeout=1s",
            "-c",
            "log_line_prefix=%m [%p] ",
            // Log times in UTC, which stallbench converts to the run clock.
            "-c",
            "log_timezone=UTC",
        ])
        .args(log_collector_settings(folder, log_format))
        .args(
            settings
                .iter()
                .flat_map(|setting| [OsString::from("-c"), OsString::from(setting)]),
        )
        .current_dir(folder)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(
            startup_log
                .try_clone()
                .context("duplicating the startup log handle")?,
        )
        .stderr(startup_log);
    as_user(&mut postgres, owner);
    // SAFETY: prctl is async-signal-safe; it only sets a flag of the child process.
    unsafe {
        postgres.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    postgres
        .spawn()
        .with_context(|| format!("starting {}", bin_dir.join("postgres").display()))
}

/// Stops `child` if it still runs: SIGQUIT (immediate shutdown: its
/// backends end at once, no checkpoint), then SIGKILL after [`STOP_LIMIT`];
/// reaps it either way.
pub(super) fn stop(child: &mut Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    // SAFETY: plain kill(2) on our own child's pid, not yet reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGQUIT);
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

/// Why a postmaster never accepted a connection.
pub(super) enum NotReady {
    /// It exited first, with this status.
    Exited(ExitStatus),
    /// It was still refusing when the time was up, with this last error.
    TimedOut(tokio_postgres::Error),
}

/// Waits until the postmaster `config` reaches accepts a connection,
/// trying every 25 ms for up to `limit`; `exit_status` says whether it has
/// exited meanwhile.
pub(super) async fn wait_accepting(
    config: &tokio_postgres::Config,
    limit: Duration,
    exit_status: impl Fn() -> Option<ExitStatus>,
) -> Result<(), NotReady> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = exit_status() {
            return Err(NotReady::Exited(status));
        }
        match config.connect(tokio_postgres::NoTls).await {
            Ok((client, connection)) => {
                drop(client);
                let _ = connection.await;
                return Ok(());
            }
            Err(err) if Instant::now() > deadline => return Err(NotReady::TimedOut(err)),
            Err(_) => tokio::time::sleep(Duration::from_millis(25)).await,
        }
    }
}

/// The last lines of the startup log and of the readable log in `folder`,
/// for error messages.
pub(super) fn log_tail(folder: &Path) -> String {
    let parts = [
        read_tail(&folder.join(STARTUP_LOG), 20),
        read_tail(&folder.join(TEXT_LOG), 20),
    ];
    let written: Vec<String> = parts.into_iter().filter(|part| !part.is_empty()).collect();
    written.join("\n")
}
