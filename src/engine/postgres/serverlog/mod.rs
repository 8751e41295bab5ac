//! Lock-wait facts read from the throwaway server's structured log (and,
//! in `recovery`, the recovery-conflict waits of its hot standby's).
//!
//! The server writes each message twice (see `server.rs`): as readable text,
//! `server.log`, kept in the results folder for people, and as data, jsonlog
//! on PostgreSQL 15 and later and csvlog before. This module reads the data:
//! pid, severity, SQLSTATE, message and detail are fields of one record, so
//! nothing depends on a line prefix or continuation lines, and a deadlock is
//! known by its SQLSTATE (40P01), not by its English message.
//!
//! [`parse_server_log`] extracts:
//! - every `process N still waiting for MODE on OBJECT after MS ms` record,
//!   with the holders and wait queue of its detail;
//! - every `process N acquired MODE on OBJECT after MS ms` record;
//! - every deadlock (an ERROR with SQLSTATE 40P01), with the wait-for edges
//!   and statements of its detail.
//!
//! Records it does not recognise are ignored, and no input makes it panic.

mod message;
mod records;
mod recovery;
#[cfg(test)]
mod samples;

pub use records::{LogFormat, StructuredLog};
pub use recovery::{RecoveryWait, parse_recovery_waits, recovery_sentences, recovery_wait_span};

use crate::metrics::locks::group_repeated;
use records::LogSeverity;
use tokio_postgres::error::SqlState;

/// Everything about lock waits that the server log says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerLogFacts {
    /// Lock waits longer than deadlock_timeout: the waits "still waiting for"
    /// messages report, a wait logged again before its lock counted once.
    pub lock_waits: u32,
    /// Each "still waiting for" message, in log order.
    pub waits: Vec<LockWait>,
    /// Each "acquired" message (a wait that had been logged as still waiting ended), in log order.
    pub acquired: Vec<LockAcquired>,
    /// The wait whose queue was longest (first such if tied): the worst moment.
    /// `None` when no wait had a queue logged.
    pub worst_queue: Option<LockWait>,
    /// Each deadlock (SQLSTATE 40P01), in log order.
    pub deadlocks: Vec<Deadlock>,
}

/// One `process N still waiting for MODE on OBJECT after MS ms` message and its detail.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LockWait {
    /// Timestamp text of the message as logged, e.g. `2026-10-11 05:20:41.755 UTC`.
    pub logged_at: String,
    /// Backend pid of the waiting session.
    pub pid: u32,
    /// Lock mode waited for, e.g. `AccessExclusiveLock`.
    pub mode: String,
    /// Locked object as logged, e.g. `relation 16398 of database 16384`.
    pub object: String,
    /// How long the session had waited when the message was written, in milliseconds.
    pub waited_ms: f64,
    /// Pids holding the lock, from the detail (empty if no detail was logged).
    pub holders: Vec<u32>,
    /// Pids in the wait queue, in queue order, from the detail (empty if no detail was logged).
    pub queue: Vec<u32>,
}

/// One `process N acquired MODE on OBJECT after MS ms` message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LockAcquired {
    /// Timestamp text of the message as logged, e.g. `2026-10-11 05:22:09.882 UTC`.
    pub logged_at: String,
    /// Backend pid of the session that got the lock.
    pub pid: u32,
    /// Lock mode acquired, e.g. `AccessExclusiveLock`.
    pub mode: String,
    /// Locked object as logged, e.g. `relation 16387 of database 16384`.
    pub object: String,
    /// How long the session waited before it got the lock, in milliseconds.
    pub waited_ms: f64,
}

/// One deadlock: the error (SQLSTATE 40P01) its victim got, and its detail.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Deadlock {
    /// Timestamp text of the error as logged.
    pub logged_at: String,
    /// Pid of the session whose transaction was aborted (the pid of the error).
    pub victim_pid: u32,
    /// The wait-for cycle, one edge per `Process A waits for ...; blocked by process B.` line.
    pub edges: Vec<DeadlockEdge>,
    /// The statement each process in the cycle was running, one per `Process A: SQL` line.
    pub statements: Vec<DeadlockStatement>,
}

/// `Process PID waits for MODE on OBJECT; blocked by process BLOCKED_BY.`
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeadlockEdge {
    /// Pid of the waiting process.
    pub pid: u32,
    /// Lock mode it waits for, e.g. `AccessExclusiveLock`.
    pub mode: String,
    /// Locked object as logged, e.g. `relation 16387 of database 16384`.
    pub object: String,
    /// Pid of the process it waits for.
    pub blocked_by: u32,
}

/// `Process PID: STATEMENT` from a deadlock detail.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeadlockStatement {
    /// Pid of the process.
    pub pid: u32,
    /// Its statement text; lines of a multi-line statement are joined with `\n`.
    pub statement: String,
}

/// Reads the text of a structured server log and returns the lock-wait facts in it.
pub fn parse_server_log(format: LogFormat, text: &str) -> ServerLogFacts {
    let mut facts = ServerLogFacts::default();
    // The wait each process has logged and not yet acquired, by its index in
    // `facts.waits`: a process woken while still blocked (a latch set by a
    // timeout such as client_connection_check_interval, or the holder's end
    // with another waiter ahead) logs "still waiting" again for the same wait.
    let mut open_waits: Vec<(u32, usize)> = Vec::new();
    for record in records::read_records(format, text) {
        // An error ends the statement that waited (a lock timeout, a cancel):
        // a later "still waiting" of the process is a new wait.
        if !matches!(record.severity, LogSeverity::Log) {
            open_waits.retain(|(pid, _)| *pid != record.pid);
        }
        match record.severity {
            LogSeverity::Log => {
                if let Some(report) =
                    message::parse_lock_report(&record.message, "still waiting for ")
                {
                    let (holders, queue) =
                        message::parse_holders_and_queue(&record.detail).unwrap_or_default();
                    let wait = LockWait {
                        logged_at: record.logged_at,
                        pid: record.pid,
                        mode: report.mode.to_string(),
                        object: report.object.to_string(),
                        waited_ms: report.waited_ms,
                        holders,
                        queue,
                    };
                    let open = open_waits.iter().find(|(pid, index)| {
                        let logged = &facts.waits[*index];
                        *pid == wait.pid && logged.mode == wait.mode && logged.object == wait.object
                    });
                    match open {
                        // The same wait logged again: its longest queue is what it saw.
                        Some((_, index)) => {
                            let logged = &mut facts.waits[*index];
                            logged.waited_ms = wait.waited_ms;
                            if wait.queue.len() > logged.queue.len() {
                                *logged = wait;
                            }
                        }
                        None => {
                            open_waits.push((wait.pid, facts.waits.len()));
                            facts.waits.push(wait);
                        }
                    }
                } else if let Some(report) =
                    message::parse_lock_report(&record.message, "acquired ")
                {
                    open_waits.retain(|(pid, _)| *pid != record.pid);
                    facts.acquired.push(LockAcquired {
                        logged_at: record.logged_at,
                        pid: record.pid,
                        mode: report.mode.to_string(),
                        object: report.object.to_string(),
                        waited_ms: report.waited_ms,
                    });
                }
            }
            LogSeverity::Error if record.sql_state == SqlState::T_R_DEADLOCK_DETECTED.code() => {
                let (edges, statements) = message::parse_deadlock_detail(&record.detail);
                facts.deadlocks.push(Deadlock {
                    logged_at: record.logged_at,
                    victim_pid: record.pid,
                    edges,
                    statements,
                });
            }
            _ => {}
        }
    }

    facts.lock_waits = u32::try_from(facts.waits.len()).unwrap_or(u32::MAX);
    facts.worst_queue = longest_queue(&facts.waits).cloned();
    facts
}

impl ServerLogFacts {
    /// One sentence per fact for a summary, naming sessions through `role_of(pid)`
    /// (which returns e.g. "ddl", "report", "reader-3", or "external:1234") and
    /// times through `time_of(logged_at)` (e.g. [`run_clock_time`]; the examples
    /// show the wall clock):
    /// - "server logged 5 lock waits longer than deadlock_timeout" (always present);
    /// - "worst queue (05:20:41.755): report holds the lock; queue ddl, reader-1, ..."
    ///   (when a wait queue was logged);
    /// - "slowest lock acquisition (05:22:09.882): ddl-a acquired AccessExclusiveLock
    ///   after 2006.4 ms" (when an "acquired" message was logged);
    /// - "deadlock detected (05:22:09.881): ddl-b waits for AccessExclusiveLock,
    ///   blocked by ddl-a; ...; victim ddl-b" (one per deadlock).
    pub fn sentences(
        &self,
        role_of: &dyn Fn(u32) -> String,
        time_of: &dyn Fn(&str) -> String,
    ) -> Vec<String> {
        let mut sentences = Vec::new();

        let count_text = match self.lock_waits {
            0 => "no lock waits".to_string(),
            1 => "1 lock wait".to_string(),
            count => format!("{count} lock waits"),
        };
        sentences.push(format!(
            "server logged {count_text} longer than deadlock_timeout"
        ));

        if let Some(worst) = &self.worst_queue {
            let holders_text = match worst.holders.len() {
                0 => "no lock holder was logged".to_string(),
                1 => format!("{} holds the lock", role_of(worst.holders[0])),
                _ => format!("{} hold the lock", role_list(&worst.holders, role_of)),
            };
            sentences.push(format!(
                "worst queue ({}): {holders_text}; queue {}",
                time_of(&worst.logged_at),
                role_list(&worst.queue, role_of)
            ));
        }

        if let Some(slowest) = slowest_acquisition(&self.acquired) {
            sentences.push(format!(
                "slowest lock acquisition ({}): {} acquired {} after {:.1} ms",
                time_of(&slowest.logged_at),
                role_of(slowest.pid),
                slowest.mode,
                slowest.waited_ms
            ));
        }

        for deadlock in &self.deadlocks {
            let mut parts: Vec<String> = deadlock
                .edges
                .iter()
                .map(|edge| {
                    format!(
                        "{} waits for {}, blocked by {}",
                        role_of(edge.pid),
                        edge.mode,
                        role_of(edge.blocked_by)
                    )
                })
                .collect();
            parts.push(format!("victim {}", role_of(deadlock.victim_pid)));
            sentences.push(format!(
                "deadlock detected ({}): {}",
                time_of(&deadlock.logged_at),
                parts.join("; ")
            ));
        }

        sentences
    }
}

/// The first wait with the longest non-empty queue.
fn longest_queue(waits: &[LockWait]) -> Option<&LockWait> {
    let mut worst: Option<&LockWait> = None;
    for wait in waits {
        let longer = match worst {
            None => !wait.queue.is_empty(),
            Some(current) => wait.queue.len() > current.queue.len(),
        };
        if longer {
            worst = Some(wait);
        }
    }
    worst
}

/// The first acquisition with the longest wait.
fn slowest_acquisition(acquired: &[LockAcquired]) -> Option<&LockAcquired> {
    let mut slowest: Option<&LockAcquired> = None;
    for lock in acquired {
        let slower = match slowest {
            None => true,
            Some(current) => lock.waited_ms > current.waited_ms,
        };
        if slower {
            slowest = Some(lock);
        }
    }
    slowest
}

/// A server log time (`2026-10-11 05:20:41.755 UTC`: the throwaway server logs in
/// UTC) on the run clock that started at `started_unix_s`: `9.3 s`, as stdout
/// and `summary.md` count time. Text that is not such a time is returned unchanged.
pub fn run_clock_time(logged_at: &str, started_unix_s: f64) -> String {
    match run_clock_s(logged_at, started_unix_s) {
        Some(at_s) => format!("{at_s:.1} s"),
        None => logged_at.to_string(),
    }
}

/// A server log time (`2026-10-11 05:20:41.755 UTC`) in seconds on the run
/// clock that started at `started_unix_s`; `None` for text that is not such a time.
pub fn run_clock_s(logged_at: &str, started_unix_s: f64) -> Option<f64> {
    let utc = logged_at.strip_suffix(" UTC")?;
    let at = humantime::parse_rfc3339_weak(utc).ok()?;
    let unix_s = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64());
    Some(unix_s - started_unix_s)
}

/// Roles of the pids joined with ", " (a repeated one once with its count);
/// `(empty)` for no pids.
fn role_list(pids: &[u32], role_of: &dyn Fn(u32) -> String) -> String {
    if pids.is_empty() {
        return "(empty)".to_string();
    }
    let roles: Vec<String> = pids.iter().map(|pid| role_of(*pid)).collect();
    group_repeated(&roles).join(", ")
}

#[cfg(test)]
mod tests;
