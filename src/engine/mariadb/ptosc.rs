//! pt-online-schema-change (Percona Toolkit) as a DDL strategy: the tool
//! runs the migration its own way, under the same load and the same report,
//! and its run is timed on the run clock as one DDL attempt.
//!
//! What the tool does (its documentation, `pod2text $(which
//! pt-online-schema-change)`, version 3.2.1 in Debian 12): it creates an
//! empty copy of the table (`_orders_new`), alters the copy, creates three
//! triggers on the table so that changes during the copy reach the copy,
//! copies the rows in chunks, and swaps the two tables with one atomic
//! `RENAME TABLE`; then it drops the old table and the triggers. Creating
//! the triggers and the `RENAME TABLE` each need the table's exclusive
//! metadata lock, so each queues behind a long transaction as a plain
//! ALTER does. The tool bounds those waits itself: "The tool sets
//! innodb_lock_wait_timeout=1 and (for MySQL 5.5 and newer)
//! lock_wait_timeout=60" (`--set-vars`), and it retries "critical
//! operations" after a lock wait timeout, a deadlock or a killed query or
//! connection (`--tries`; `create_triggers`, `drop_triggers` and
//! `swap_tables` default to 10 tries 1 s apart, each `CREATE TRIGGER`
//! counting its own tries).
//!
//! The presets: `pt-osc` runs the tool with its own defaults (each wait up
//! to 60 s: behind a 12 s report, the readers queue as they do behind a
//! naive ALTER); `pt-osc-1s` adds `--set-vars lock_wait_timeout=1`, the
//! tool's own retries then stepping around the report as `retry` does.
//!
//! The tool's progress lines are read as they come (it flushes each): the
//! start and end of each phase on the run clock go into the attempt's
//! message, and its `--statistics` counts (lock wait timeouts, retries).
//! Its sessions are named `ddl` for the lock observer: the harness finds
//! them by the client's process id in
//! `performance_schema.session_connect_attrs` (`_pid`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::session::SessionRoles;
use crate::error::Error;
use crate::metrics::{AttemptOutcome, DdlAttempt};
use crate::role::Role;
use crate::scenario::RunClock;

/// The tool's command.
pub const PROGRAM: &str = "pt-online-schema-change";
/// The command that installs it on Debian and Ubuntu.
pub const INSTALL_HINT: &str = "apt-get install percona-toolkit";
/// How long the tool may go on after the load ended before it is stopped.
const GRACE: Duration = Duration::from_secs(5);
/// How often the tool's sessions are looked for while it runs.
const NAME_SESSIONS_EVERY: Duration = Duration::from_millis(100);

/// How a preset runs the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// `--set-vars lock_wait_timeout=N`; `None`: the tool's 60 s.
    pub lock_wait_timeout_s: Option<u32>,
}

/// The tool on PATH, or a runtime error with the command that installs it.
pub fn find_program(strategy: &str) -> Result<PathBuf, Error> {
    find_in(&std::env::var_os("PATH").unwrap_or_default(), strategy)
}

/// The tool in one of the folders of `path` (a PATH value).
fn find_in(path: &std::ffi::OsStr, strategy: &str) -> Result<PathBuf, Error> {
    std::env::split_paths(path)
        .map(|dir| dir.join(PROGRAM))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            Error::runtime(format!(
                "--strategies {strategy}: {PROGRAM} not found on PATH; install it with \
                 {INSTALL_HINT}"
            ))
        })
}

/// The tool's arguments for `ddl` (`ALTER TABLE t ...`) on database
/// `database` of the server at `opts` (its socket, else its host and port,
/// and its user); `None` for a statement that is not an `ALTER TABLE` of one
/// table.
pub fn arguments(
    ddl: &str,
    opts: &mysql_async::Opts,
    database: &str,
    settings: Settings,
) -> Option<Vec<String>> {
    let (table, alter) = split_alter(ddl)?;
    let mut args: Vec<String> = [
        "--execute",
        "--no-version-check",
        "--recursion-method",
        "none",
        "--statistics",
        "--alter",
    ]
    .map(String::from)
    .to_vec();
    args.push(alter.to_string());
    if let Some(seconds) = settings.lock_wait_timeout_s {
        args.push("--set-vars".to_string());
        args.push(format!("lock_wait_timeout={seconds}"));
    }
    let server = match opts.socket() {
        Some(socket) => format!("S={socket}"),
        None => format!("h={},P={}", opts.ip_or_hostname(), opts.tcp_port()),
    };
    let user = opts.user().unwrap_or("root");
    args.push(format!("{server},u={user},D={database},t={table}"));
    Some(args)
}

/// `ALTER TABLE <table> <rest>` as (table, rest).
fn split_alter(ddl: &str) -> Option<(&str, &str)> {
    let mut rest = ddl.trim().trim_end_matches(';');
    for keyword in ["ALTER", "TABLE"] {
        let (word, after) = rest.split_once(char::is_whitespace)?;
        if !word.eq_ignore_ascii_case(keyword) {
            return None;
        }
        rest = after.trim_start();
    }
    let (table, alter) = rest.split_once(char::is_whitespace)?;
    let table = table.trim_matches('`');
    (!table.is_empty() && !table.contains('.')).then_some((table, alter.trim()))
}

/// A phase of the tool's run, as its progress lines name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Triggers,
    Copy,
    Swap,
    DropTriggers,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Triggers => "created triggers",
            Phase::Copy => "copied rows",
            Phase::Swap => "swapped tables (RENAME TABLE)",
            Phase::DropTriggers => "dropped triggers",
        }
    }
}

/// The phase a progress line starts (`true`) or ends (`false`). The lines
/// are the tool's own words (3.x), after its timestamp.
fn phase_of(line: &str) -> Option<(Phase, bool)> {
    const MARKS: [(&str, Phase, bool); 8] = [
        ("Creating triggers...", Phase::Triggers, true),
        ("Created triggers OK.", Phase::Triggers, false),
        ("Copying approximately", Phase::Copy, true),
        ("Copied rows OK.", Phase::Copy, false),
        ("Swapping tables...", Phase::Swap, true),
        ("Swapped original and new tables OK.", Phase::Swap, false),
        ("Dropping triggers...", Phase::DropTriggers, true),
        ("Dropped triggers OK.", Phase::DropTriggers, false),
    ];
    MARKS
        .iter()
        .find(|(mark, _, _)| line.contains(mark))
        .map(|(_, phase, starts)| (*phase, *starts))
}

/// What the tool printed, with the run-clock time of each phase.
#[derive(Debug, Default)]
struct Progress {
    /// (phase, started_s, ended_s) in the order they started.
    phases: Vec<(Phase, f64, Option<f64>)>,
    /// `--statistics` rows other than INSERT: `lock_wait_timeout 3`.
    statistics: Vec<String>,
    /// The last lines that are neither, for an error's message.
    last_lines: Vec<String>,
}

impl Progress {
    fn read(&mut self, line: &str, now_s: f64) {
        if let Some((phase, starts)) = phase_of(line) {
            match starts {
                true => self.phases.push((phase, now_s, None)),
                false => {
                    if let Some(entry) = self.phases.iter_mut().rev().find(|(p, ..)| *p == phase) {
                        entry.2 = Some(now_s);
                    }
                }
            }
            return;
        }
        if let Some(row) = line.strip_prefix("# ") {
            let words: Vec<&str> = row.split_whitespace().collect();
            if let [event, count] = words.as_slice()
                && count.parse::<u64>().is_ok()
                && *event != "INSERT"
                && *event != "Event"
            {
                self.statistics.push(format!("{event} {count}"));
            }
            return;
        }
        if !line.trim().is_empty() {
            self.last_lines.push(line.trim().to_string());
            if self.last_lines.len() > 3 {
                self.last_lines.remove(0);
            }
        }
    }

    /// The attempt's message: each phase on the run clock, then the counts.
    fn message(&self) -> String {
        let phases: Vec<String> = self
            .phases
            .iter()
            .map(|(phase, started, ended)| match ended {
                Some(ended) => format!("{} {started:.1}-{ended:.1} s", phase.name()),
                None => format!("{} from {started:.1} s, unfinished", phase.name()),
            })
            .collect();
        let mut message = format!("{PROGRAM}: {}", phases.join(", "));
        if !self.statistics.is_empty() {
            message.push_str(&format!("; --statistics: {}", self.statistics.join(", ")));
        }
        message
    }
}

/// Runs the tool with `args` from now until it exits or the run's end and
/// [`GRACE`] pass (it is then stopped); names its sessions `ddl` (found with
/// `conn`) and returns its run as one attempt. Leftovers of a run that did
/// not succeed (its triggers and `_<table>_new`) are dropped with `conn`.
pub async fn run(
    program: &Path,
    args: &[String],
    table: &str,
    conn: &mut mysql_async::Conn,
    roles: &SessionRoles,
    clock: RunClock,
) -> DdlAttempt {
    let started_s = clock.now_s();
    let started = Instant::now();
    let mut progress = Progress::default();
    let outcome = match spawn(program, args) {
        Err(err) => {
            progress
                .last_lines
                .push(format!("starting {PROGRAM}: {err}"));
            AttemptOutcome::Error
        }
        Ok(child) => watch(child, conn, roles, clock, &mut progress).await,
    };
    let ended_s = clock.now_s();
    if outcome != AttemptOutcome::Ok {
        clean_up(conn, table).await;
    }
    let mut message = progress.message();
    if outcome != AttemptOutcome::Ok {
        message.push_str(&format!("; {}", progress.last_lines.join(" ")));
    }
    DdlAttempt {
        attempt: 1,
        started_s,
        ended_s,
        waited_ms: started.elapsed().as_secs_f64() * 1000.0,
        outcome,
        sqlstate: None,
        message,
        lock: None,
        idle_wait_ms: 0.0,
        terminated: Vec::new(),
        wal_bytes: None,
    }
}

/// Starts the tool with its output piped, killed if the harness drops it
/// and when the harness dies.
fn spawn(program: &Path, args: &[String]) -> std::io::Result<tokio::process::Child> {
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // SAFETY: prctl is async-signal-safe; it only sets a flag of the child process.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Reads the tool's output and names its sessions until it exits or the
/// run's end and [`GRACE`] pass; its outcome.
async fn watch(
    mut child: tokio::process::Child,
    conn: &mut mysql_async::Conn,
    roles: &SessionRoles,
    clock: RunClock,
    progress: &mut Progress,
) -> AttemptOutcome {
    let pid = child.id().unwrap_or(0);
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return AttemptOutcome::Error;
    };
    let mut stdout = BufReader::new(stdout).lines();
    let mut stderr = BufReader::new(stderr).lines();
    let (mut stdout_open, mut stderr_open) = (true, true);
    let deadline = tokio::time::Instant::from_std(clock.end() + GRACE);
    let mut name_sessions = tokio::time::interval(NAME_SESSIONS_EVERY);
    while stdout_open || stderr_open {
        tokio::select! {
            line = stdout.next_line(), if stdout_open => match line {
                Ok(Some(line)) => progress.read(&line, clock.now_s()),
                _ => stdout_open = false,
            },
            line = stderr.next_line(), if stderr_open => match line {
                Ok(Some(line)) => progress.read(&line, clock.now_s()),
                _ => stderr_open = false,
            },
            _ = name_sessions.tick() => name_sessions_of(conn, pid, roles).await,
            _ = tokio::time::sleep_until(deadline) => {
                let _ = child.kill().await;
                progress.last_lines.push("still running when the run ended".to_string());
                return AttemptOutcome::CutOff;
            }
        }
    }
    match child.wait().await {
        Ok(status) if status.success() => AttemptOutcome::Ok,
        _ if progress
            .last_lines
            .iter()
            .any(|line| line.contains("Lock wait timeout exceeded")) =>
        {
            AttemptOutcome::GaveUp
        }
        _ => AttemptOutcome::Error,
    }
}

/// Remembers the sessions the tool (process `pid`) opened as `ddl`.
async fn name_sessions_of(conn: &mut mysql_async::Conn, pid: u32, roles: &SessionRoles) {
    let ids: Vec<u64> = conn
        .exec(
            "SELECT PROCESSLIST_ID FROM performance_schema.session_connect_attrs \
             WHERE ATTR_NAME = '_pid' AND ATTR_VALUE = ?",
            (pid.to_string(),),
        )
        .await
        .unwrap_or_default();
    for id in ids {
        roles.insert(id, Role::Ddl);
    }
}

/// Drops what a stopped or failed run of the tool left on `table`: its
/// three triggers and its new table.
async fn clean_up(conn: &mut mysql_async::Conn, table: &str) {
    let database: Option<String> = conn.query_first("SELECT DATABASE()").await.ok().flatten();
    let database = database.unwrap_or_default();
    for suffix in ["ins", "upd", "del"] {
        let trigger = format!("pt_osc_{database}_{table}_{suffix}");
        let _ = conn
            .query_drop(format!("DROP TRIGGER IF EXISTS `{trigger}`"))
            .await;
    }
    let _ = conn
        .query_drop(format!("DROP TABLE IF EXISTS `_{table}_new`"))
        .await;
}

/// The table of `ddl` the tool alters, for [`run`] (empty when it is none).
pub fn table_of(ddl: &str) -> &str {
    split_alter(ddl).map_or("", |(table, _)| table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alter_becomes_the_tools_alter_and_dsn() {
        let socket: mysql_async::Opts = mysql_async::OptsBuilder::default()
            .socket(Some("/tmp/s/mysqld.sock"))
            .user(Some("root"))
            .into();
        let args = arguments(
            "ALTER TABLE orders ADD COLUMN note text",
            &socket,
            "stallbench",
            Settings {
                lock_wait_timeout_s: Some(1),
            },
        )
        .unwrap();
        assert_eq!(
            args,
            [
                "--execute",
                "--no-version-check",
                "--recursion-method",
                "none",
                "--statistics",
                "--alter",
                "ADD COLUMN note text",
                "--set-vars",
                "lock_wait_timeout=1",
                "S=/tmp/s/mysqld.sock,u=root,D=stallbench,t=orders",
            ]
        );
        let tcp = mysql_async::Opts::from_url("mysql://app@db.staging:3307/").unwrap();
        let defaults = arguments(
            "alter table `orders` add index (total);",
            &tcp,
            "d",
            Settings {
                lock_wait_timeout_s: None,
            },
        )
        .unwrap();
        assert!(!defaults.contains(&"--set-vars".to_string()));
        assert!(defaults.contains(&"add index (total)".to_string()));
        assert_eq!(
            defaults.last().unwrap(),
            "h=db.staging,P=3307,u=app,D=d,t=orders"
        );
        let none = Settings {
            lock_wait_timeout_s: None,
        };
        assert!(arguments("CREATE INDEX i ON orders (total)", &tcp, "d", none).is_none());
        assert_eq!(table_of("ALTER TABLE other.orders ADD c int"), "");
    }

    #[test]
    fn progress_lines_place_each_phase_and_keep_the_statistics() {
        let lines = [
            (6.0, "Altering `stallbench`.`orders`..."),
            (6.1, "2026-12-05T16:45:49 Creating triggers..."),
            (16.2, "2026-12-05T16:45:55 Created triggers OK."),
            (
                16.2,
                "2026-12-05T16:45:55 Copying approximately 199876 rows...",
            ),
            (16.9, "2026-12-05T16:45:56 Copied rows OK."),
            (17.0, "2026-12-05T16:45:56 Swapping tables..."),
            (
                17.0,
                "2026-12-05T16:45:56 Swapped original and new tables OK.",
            ),
            (17.1, "# Event             Count"),
            (17.1, "# ================= ====="),
            (17.1, "# INSERT                3"),
            (17.1, "# lock_wait_timeout     5"),
            (17.1, "Successfully altered `stallbench`.`orders`."),
        ];
        let mut progress = Progress::default();
        for (at, line) in lines {
            progress.read(line, at);
        }
        assert_eq!(
            progress.message(),
            "pt-online-schema-change: created triggers 6.1-16.2 s, copied rows 16.2-16.9 s, \
             swapped tables (RENAME TABLE) 17.0-17.0 s; --statistics: lock_wait_timeout 5"
        );
        assert_eq!(
            progress.last_lines.last().unwrap(),
            "Successfully altered `stallbench`.`orders`."
        );
    }

    #[test]
    fn a_missing_tool_names_the_install_command() {
        let err = find_in(std::ffi::OsStr::new("/nonexistent:/also-not"), "pt-osc").unwrap_err();
        assert_eq!(err.exit_code(), crate::error::exit_code::RUNTIME);
        assert_eq!(
            err.to_string(),
            "--strategies pt-osc: pt-online-schema-change not found on PATH; install it with \
             apt-get install percona-toolkit"
        );
    }
}
