//! Lock-wait facts read from the throwaway server's structured log.
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
#[cfg(test)]
mod samples;

pub use records::{LogFormat, StructuredLog};

use crate::metrics::locks::group_repeated;
use records::Severity;
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
        if !matches!(record.severity, Severity::Log) {
            open_waits.retain(|(pid, _)| *pid != record.pid);
        }
        match record.severity {
            Severity::Log => {
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
            Severity::Error if record.sql_state == SqlState::T_R_DEADLOCK_DETECTED.code() => {
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
    let Some(utc) = logged_at.strip_suffix(" UTC") else {
        return logged_at.to_string();
    };
    match humantime::parse_rfc3339_weak(utc) {
        Ok(at) => {
            let unix_s = at
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |since| since.as_secs_f64());
            format!("{:.1} s", unix_s - started_unix_s)
        }
        Err(_) => logged_at.to_string(),
    }
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
mod tests {
    use proptest::prelude::*;
    use proptest::sample::{Index, select};

    use super::samples::*;
    use super::*;

    /// `2026-10-11 05:20:41.755 UTC` -> `05:20:41.755`: the samples' sentences on the wall clock.
    fn clock_time(logged_at: &str) -> String {
        logged_at.split(' ').nth(1).unwrap_or(logged_at).to_string()
    }

    #[test]
    fn log_times_convert_to_the_run_clock() {
        // 2026-10-11 05:20:32.455 UTC is 1_791_696_032.455 s after the epoch.
        let started_unix_s = 1_791_696_032.455;
        assert_eq!(
            run_clock_time("2026-10-11 05:20:41.755 UTC", started_unix_s),
            "9.3 s"
        );
        assert_eq!(
            run_clock_time("05:20:41.755", started_unix_s),
            "05:20:41.755"
        );
    }

    /// A sample in both structured formats, to run the same assertions on each.
    fn both_formats(jsonlog: &'static str, csvlog: &'static str) -> [(LogFormat, &'static str); 2] {
        [(LogFormat::JsonLog, jsonlog), (LogFormat::CsvLog, csvlog)]
    }

    fn article_role(pid: u32) -> String {
        match pid {
            100 => "report".to_string(),
            108 => "ddl".to_string(),
            90 => "reader-1".to_string(),
            91 => "reader-2".to_string(),
            92 => "reader-3".to_string(),
            93 => "reader-4".to_string(),
            173 => "ddl-a".to_string(),
            174 => "ddl-b".to_string(),
            other => format!("external:{other}"),
        }
    }

    fn pg15_role(pid: u32) -> String {
        match pid {
            28072 => "report".to_string(),
            28073 => "ddl".to_string(),
            28067 => "reader-1".to_string(),
            28068 => "reader-2".to_string(),
            28069 => "reader-3".to_string(),
            28070 => "reader-4".to_string(),
            other => format!("external:{other}"),
        }
    }

    #[test]
    fn a_wait_logged_again_before_its_lock_counts_once() {
        let line = |pid: u32, at: &str, what: &str, queue: &str| {
            format!(
                "{{\"timestamp\":\"2026-12-01 20:26:{at} UTC\",\"pid\":{pid},\"error_severity\":\"LOG\",\
                 \"message\":\"process {pid} {what} AccessExclusiveLock on relation 16393 of database 5 after 1000.2 ms\",\
                 \"detail\":\"Process holding the lock: 100. Wait queue: {queue}.\"}}\n"
            )
        };
        let timeout = "{\"timestamp\":\"2026-12-01 20:26:36.000 UTC\",\"pid\":108,\"error_severity\":\"ERROR\",\
             \"state_code\":\"55P03\",\"message\":\"canceling statement due to lock timeout\"}\n";
        // Logged again each second while blocked (client_connection_check_interval),
        // the queue longer the second time; then a lock timeout ends it, and the
        // next try's wait is a wait of its own, which the lock ends.
        let text = [
            line(108, "32.062", "still waiting for", "108"),
            line(108, "33.061", "still waiting for", "108, 90, 91"),
            line(108, "34.061", "still waiting for", "108, 90"),
            timeout.to_string(),
            line(108, "38.000", "still waiting for", "108"),
            line(108, "39.000", "acquired", "108"),
        ]
        .concat();
        let facts = parse_server_log(LogFormat::JsonLog, &text);
        assert_eq!(facts.lock_waits, 2, "{:?}", facts.waits);
        assert_eq!(facts.waits[0].queue, [108, 90, 91]);
        assert_eq!(facts.acquired.len(), 1);
    }

    #[test]
    fn queue_log_waits_holders_and_queue() {
        for (format, text) in both_formats(QUEUE_JSONLOG, QUEUE_CSVLOG) {
            let facts = parse_server_log(format, text);
            assert_eq!(facts.lock_waits, 2);
            assert_eq!(facts.waits.len(), 2);
            assert!(facts.acquired.is_empty());
            assert!(facts.deadlocks.is_empty());

            let ddl = &facts.waits[0];
            assert_eq!(ddl.logged_at, "2026-10-11 05:20:41.755 UTC");
            assert_eq!(ddl.pid, 108);
            assert_eq!(ddl.mode, "AccessExclusiveLock");
            assert_eq!(ddl.object, "relation 16398 of database 16384");
            assert_eq!(ddl.waited_ms, 1000.137);
            assert_eq!(ddl.holders, vec![100]);
            assert_eq!(ddl.queue, vec![108, 90, 92, 91, 93]);

            let reader = &facts.waits[1];
            assert_eq!(reader.pid, 90);
            assert_eq!(reader.mode, "AccessShareLock");
            assert_eq!(reader.object, "relation 16398 of database 16384");
            assert_eq!(reader.waited_ms, 1000.090);
            assert_eq!(reader.holders, vec![100]);
            assert_eq!(reader.queue, vec![108, 90, 92, 91, 93]);

            // Both queues have 5 entries: the first wait is the worst.
            assert_eq!(facts.worst_queue.as_ref(), Some(ddl));
        }
    }

    #[test]
    fn queue_log_sentences() {
        for (format, text) in both_formats(QUEUE_JSONLOG, QUEUE_CSVLOG) {
            let facts = parse_server_log(format, text);
            assert_eq!(
                facts.sentences(&article_role, &clock_time),
                vec![
                    "server logged 2 lock waits longer than deadlock_timeout".to_string(),
                    "worst queue (05:20:41.755): report holds the lock; \
                     queue ddl, reader-1, reader-3, reader-2, reader-4"
                        .to_string(),
                ]
            );
        }
    }

    #[test]
    fn deadlock_log_edges_victim_statements() {
        for (format, text) in both_formats(DEADLOCK_JSONLOG, DEADLOCK_CSVLOG) {
            let facts = parse_server_log(format, text);
            assert_eq!(facts.lock_waits, 1);
            let wait = &facts.waits[0];
            assert_eq!(wait.pid, 173);
            assert_eq!(wait.mode, "AccessExclusiveLock");
            assert_eq!(wait.object, "relation 16387 of database 16384");
            assert_eq!(wait.waited_ms, 1000.198);
            assert_eq!(wait.holders, vec![174]);
            assert_eq!(wait.queue, vec![173]);
            assert_eq!(facts.worst_queue.as_ref(), Some(wait));

            assert_eq!(
                facts.acquired,
                vec![LockAcquired {
                    logged_at: "2026-10-11 05:22:09.882 UTC".to_string(),
                    pid: 173,
                    mode: "AccessExclusiveLock".to_string(),
                    object: "relation 16387 of database 16384".to_string(),
                    waited_ms: 2006.371,
                }]
            );

            assert_eq!(facts.deadlocks.len(), 1);
            let deadlock = &facts.deadlocks[0];
            assert_eq!(deadlock.logged_at, "2026-10-11 05:22:09.881 UTC");
            assert_eq!(deadlock.victim_pid, 174);
            assert_eq!(
                deadlock.edges,
                vec![
                    DeadlockEdge {
                        pid: 174,
                        mode: "AccessExclusiveLock".to_string(),
                        object: "relation 16387 of database 16384".to_string(),
                        blocked_by: 173,
                    },
                    DeadlockEdge {
                        pid: 173,
                        mode: "AccessExclusiveLock".to_string(),
                        object: "relation 16387 of database 16384".to_string(),
                        blocked_by: 174,
                    },
                ]
            );
            assert_eq!(
                deadlock.statements,
                vec![
                    DeadlockStatement {
                        pid: 174,
                        statement: "ALTER TABLE customers ADD COLUMN email text;".to_string(),
                    },
                    DeadlockStatement {
                        pid: 173,
                        statement: "ALTER TABLE customers ADD COLUMN phone text;".to_string(),
                    },
                ]
            );
        }
    }

    #[test]
    fn deadlock_log_sentences() {
        for (format, text) in both_formats(DEADLOCK_JSONLOG, DEADLOCK_CSVLOG) {
            let facts = parse_server_log(format, text);
            assert_eq!(
                facts.sentences(&article_role, &clock_time),
                vec![
                    "server logged 1 lock wait longer than deadlock_timeout".to_string(),
                    "worst queue (05:22:08.876): ddl-b holds the lock; queue ddl-a".to_string(),
                    "slowest lock acquisition (05:22:09.882): ddl-a acquired \
                     AccessExclusiveLock after 2006.4 ms"
                        .to_string(),
                    "deadlock detected (05:22:09.881): ddl-b waits for AccessExclusiveLock, \
                     blocked by ddl-a; ddl-a waits for AccessExclusiveLock, blocked by ddl-b; \
                     victim ddl-b"
                        .to_string(),
                ]
            );
        }
    }

    #[test]
    fn both_article_logs_together() {
        for (format, text) in [
            (
                LogFormat::JsonLog,
                format!("{QUEUE_JSONLOG}{DEADLOCK_JSONLOG}"),
            ),
            (
                LogFormat::CsvLog,
                format!("{QUEUE_CSVLOG}{DEADLOCK_CSVLOG}"),
            ),
        ] {
            let facts = parse_server_log(format, &text);
            assert_eq!(facts.lock_waits, 3);
            assert_eq!(
                facts.waits.iter().map(|wait| wait.pid).collect::<Vec<_>>(),
                vec![108, 90, 173]
            );
            // The 5-long queue beats the later 1-long queue.
            assert_eq!(facts.worst_queue.as_ref().map(|wait| wait.pid), Some(108));
            assert_eq!(facts.deadlocks.len(), 1);
            assert_eq!(facts.acquired.len(), 1);
        }
    }

    #[test]
    fn postgres_15_log_from_a_real_run() {
        for (format, text) in both_formats(PG15_JSONLOG, PG15_CSVLOG) {
            let facts = parse_server_log(format, text);
            // reader-1 (28067) logged its one wait twice, at 1.0 s and at 9.98 s
            // when the report ended with the ALTER still ahead of it.
            assert_eq!(facts.lock_waits, 2);
            assert_eq!(
                facts
                    .waits
                    .iter()
                    .map(|wait| (wait.pid, wait.mode.as_str(), wait.waited_ms))
                    .collect::<Vec<_>>(),
                vec![
                    (28067, "AccessShareLock", 9980.039),
                    (28073, "AccessExclusiveLock", 1000.490),
                ]
            );
            for wait in &facts.waits {
                assert_eq!(wait.object, "relation 16393 of database 5");
                assert_eq!(wait.holders, vec![28072]);
                assert_eq!(wait.queue, vec![28073, 28067, 28070, 28069, 28068]);
            }
            assert_eq!(
                facts
                    .acquired
                    .iter()
                    .map(|lock| (lock.pid, lock.mode.as_str(), lock.waited_ms))
                    .collect::<Vec<_>>(),
                vec![
                    (28073, "AccessExclusiveLock", 10062.582),
                    (28067, "AccessShareLock", 10068.298),
                ]
            );
            // The lock-timeout ERROR (55P03) is not a deadlock.
            assert!(facts.deadlocks.is_empty());
            assert_eq!(
                facts
                    .worst_queue
                    .as_ref()
                    .map(|wait| wait.logged_at.as_str()),
                Some("2026-11-30 13:43:08.842 UTC")
            );
            assert_eq!(
                facts.sentences(&pg15_role, &clock_time),
                vec![
                    "server logged 2 lock waits longer than deadlock_timeout".to_string(),
                    "worst queue (13:43:08.842): report holds the lock; \
                     queue ddl, reader-1, reader-4, reader-3, reader-2"
                        .to_string(),
                    "slowest lock acquisition (13:43:17.910): reader-1 acquired \
                     AccessShareLock after 10068.3 ms"
                        .to_string(),
                ]
            );
        }
    }

    #[test]
    fn several_holders_and_unknown_pids() {
        let text = r#"{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":108,"error_severity":"LOG","message":"process 108 still waiting for ShareLock on transaction 7411 after 1001.500 ms","detail":"Processes holding the lock: 100, 4242. Wait queue: 108."}
"#;
        let facts = parse_server_log(LogFormat::JsonLog, text);
        assert_eq!(facts.waits[0].object, "transaction 7411");
        assert_eq!(facts.waits[0].holders, vec![100, 4242]);
        assert_eq!(facts.waits[0].queue, vec![108]);
        assert_eq!(
            facts.sentences(&article_role, &clock_time)[1],
            "worst queue (05:20:41.755): report, external:4242 hold the lock; queue ddl"
        );
    }

    #[test]
    fn detail_of_another_pid_or_message_is_not_taken() {
        // A detail belongs to its own record: neither 90's detail nor the
        // detail of 108's later error fills 108's wait, which had none.
        let text = r#"{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":108,"error_severity":"LOG","message":"process 108 still waiting for AccessExclusiveLock on relation 16398 of database 16384 after 1000.137 ms"}
{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":90,"error_severity":"LOG","message":"process 90 detected deadlock while waiting for AccessShareLock on relation 16398 of database 16384 after 1000.090 ms","detail":"Process holding the lock: 100. Wait queue: 108, 90."}
{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":108,"error_severity":"ERROR","state_code":"55P03","message":"canceling statement due to lock timeout","detail":"Process holding the lock: 100. Wait queue: 108, 90."}
"#;
        let facts = parse_server_log(LogFormat::JsonLog, text);
        assert_eq!(facts.lock_waits, 1);
        assert!(facts.waits[0].holders.is_empty());
        assert!(facts.waits[0].queue.is_empty());
        assert_eq!(facts.worst_queue, None);
        assert_eq!(
            facts.sentences(&article_role, &clock_time),
            vec!["server logged 1 lock wait longer than deadlock_timeout".to_string()]
        );
    }

    #[test]
    fn interleaved_messages_of_other_pids() {
        // Another backend's records between two waits do not matter.
        let text = r#"{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":108,"error_severity":"LOG","message":"process 108 still waiting for AccessExclusiveLock on relation 16398 of database 16384 after 1000.137 ms","detail":"Process holding the lock: 100. Wait queue: 108."}
{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":91,"error_severity":"ERROR","state_code":"57014","message":"canceling statement due to user request"}
{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":90,"error_severity":"LOG","message":"process 90 still waiting for AccessShareLock on relation 16398 of database 16384 after 1000.090 ms","detail":"Process holding the lock: 100. Wait queue: 108, 90.","cursor_position":34}
"#;
        let facts = parse_server_log(LogFormat::JsonLog, text);
        assert_eq!(facts.waits[0].queue, vec![108]);
        assert_eq!(facts.waits[1].queue, vec![108, 90]);
        assert_eq!(facts.worst_queue.as_ref().map(|wait| wait.pid), Some(90));
    }

    #[test]
    fn multi_line_statement_in_deadlock_detail() {
        let text = r#"{"timestamp":"2026-10-11 05:22:09.881 UTC","pid":174,"error_severity":"ERROR","state_code":"40P01","message":"deadlock detected","detail":"Process 174 waits for ShareLock on transaction 900; blocked by process 173.\nProcess 173 waits for ShareLock on transaction 901; blocked by process 174.\nProcess 174: UPDATE accounts\n   SET balance = 0\nProcess 173: UPDATE accounts SET balance = 1"}
"#;
        let facts = parse_server_log(LogFormat::JsonLog, text);
        let deadlock = &facts.deadlocks[0];
        assert_eq!(deadlock.edges.len(), 2);
        assert_eq!(deadlock.edges[1].object, "transaction 901");
        assert_eq!(
            deadlock.statements[0].statement,
            "UPDATE accounts\n   SET balance = 0"
        );
        assert_eq!(deadlock.statements[1].pid, 173);
    }

    #[test]
    fn deadlock_without_detail_still_counts() {
        let text = r#"{"timestamp":"2026-10-11 05:22:09.881 UTC","pid":174,"error_severity":"ERROR","state_code":"40P01","message":"deadlock detected"}
"#;
        let facts = parse_server_log(LogFormat::JsonLog, text);
        assert_eq!(facts.deadlocks.len(), 1);
        assert!(facts.deadlocks[0].edges.is_empty());
        assert_eq!(
            facts.sentences(&article_role, &clock_time)[1],
            "deadlock detected (05:22:09.881): victim ddl-b"
        );
    }

    #[test]
    fn a_deadlock_is_known_by_its_sqlstate_not_its_text() {
        // The same words with another SQLSTATE are no deadlock; 40P01 in
        // another language is one.
        let text = r#"{"timestamp":"2026-10-11 05:22:09.881 UTC","pid":173,"error_severity":"ERROR","state_code":"XX000","message":"deadlock detected"}
{"timestamp":"2026-10-11 05:22:09.881 UTC","pid":174,"error_severity":"ERROR","state_code":"40P01","message":"Verklemmung (Deadlock) entdeckt"}
"#;
        let facts = parse_server_log(LogFormat::JsonLog, text);
        assert_eq!(facts.deadlocks.len(), 1);
        assert_eq!(facts.deadlocks[0].victim_pid, 174);
    }

    #[test]
    fn empty_and_unrelated_text() {
        for format in [LogFormat::JsonLog, LogFormat::CsvLog] {
            for text in ["", "\n\n", "\tstray continuation\n", "hello world\n"] {
                let facts = parse_server_log(format, text);
                assert_eq!(facts, ServerLogFacts::default());
                assert_eq!(
                    facts.sentences(&article_role, &clock_time),
                    vec!["server logged no lock waits longer than deadlock_timeout".to_string()]
                );
            }
        }
    }

    #[test]
    fn crlf_line_endings() {
        for (format, text) in both_formats(QUEUE_JSONLOG, QUEUE_CSVLOG)
            .into_iter()
            .chain(both_formats(DEADLOCK_JSONLOG, DEADLOCK_CSVLOG))
        {
            let crlf = text.replace('\n', "\r\n");
            assert_eq!(
                parse_server_log(format, &crlf),
                parse_server_log(format, text)
            );
        }
    }

    #[test]
    fn garbled_lines_are_ignored() {
        let text = r#"{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":"abc","error_severity":"LOG","message":"process 108 still waiting for AccessExclusiveLock on relation 1 after 1000.137 ms"}
{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":108,"error_severity":"LOG","message":"process 108 still waiting for AccessExclusiveLock on relation 1 after NaN ms"}
{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":108,"error_severity":"LOG","message":"process 108 still waiting for AccessExclusiveLock on relation 1 after 1000.137 s"}
{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":108,"error_severity":"LOG","message":"process 99999999999 still waiting for AccessExclusiveLock on relation 1 after 1.0 ms"}
{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":108,"error_severity":"LOG","message":"process 108 still waiting for  on relation 1 after 1.0 ms"}
{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":108,"error_severity":"log","message":"process 108 still waiting for AccessExclusiveLock on relation 1 after 1.0 ms"}
{"timestamp":"2026-10-11 05:20:41.755 UTC","error_severity":"LOG","message":"process 108 still waiting for AccessExclusiveLock on relation 1 after 1.0 ms"}
{"timestamp":"2026-10-11 05:20:41.755 UTC","pid":108,"error_severity":"LOG","message":"process 108 still waiting for AccessExclusiveLock on relation 1 after 1.0 ms"
"#;
        assert_eq!(
            parse_server_log(LogFormat::JsonLog, text),
            ServerLogFacts::default()
        );
    }

    fn check_invariants(format: LogFormat, text: &str) {
        let facts = parse_server_log(format, text);
        assert_eq!(facts.lock_waits as usize, facts.waits.len());
        if let Some(worst) = &facts.worst_queue {
            assert!(facts.waits.contains(worst));
        }
        let _ = facts.sentences(&article_role, &clock_time);
    }

    /// The sample logs of both formats: lock queues, a deadlock, PostgreSQL 15's wording.
    fn sample_logs() -> [(LogFormat, String); 2] {
        [
            (
                LogFormat::JsonLog,
                format!("{QUEUE_JSONLOG}{DEADLOCK_JSONLOG}{PG15_JSONLOG}"),
            ),
            (
                LogFormat::CsvLog,
                format!("{QUEUE_CSVLOG}{DEADLOCK_CSVLOG}{PG15_CSVLOG}"),
            ),
        ]
    }

    #[test]
    fn every_truncated_log_and_line_parses_without_panic() {
        for (format, sample) in sample_logs() {
            // Every prefix of the whole log, and of each line.
            for (end, _) in sample.char_indices() {
                check_invariants(format, &sample[..end]);
            }
            for line in sample.lines() {
                for (end, _) in line.char_indices() {
                    check_invariants(format, &line[..end]);
                    check_invariants(format, &format!("{}\n{}", &line[..end], &line[end..]));
                }
            }
        }
    }

    /// Characters a garbled log line may gain: separators, quotes, digits, line ends.
    const TRICKY: [char; 18] = [
        '\t', ' ', '.', ',', ':', ';', '[', ']', '0', '9', '-', 'é', '\n', '\r', '"', '\\', '{',
        '}',
    ];

    /// One edit of a log: delete, duplicate or replace the character at a position.
    #[derive(Debug, Clone)]
    enum Edit {
        Delete(Index),
        Duplicate(Index),
        Replace(Index, char),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            any::<Index>().prop_map(Edit::Delete),
            any::<Index>().prop_map(Edit::Duplicate),
            (any::<Index>(), select(&TRICKY[..])).prop_map(|(at, c)| Edit::Replace(at, c)),
        ]
    }

    fn garbled(sample: &str, edits: &[Edit]) -> String {
        let mut chars: Vec<char> = sample.chars().collect();
        for edit in edits {
            match edit {
                Edit::Delete(at) => {
                    chars.remove(at.index(chars.len()));
                }
                Edit::Duplicate(at) => {
                    let at = at.index(chars.len());
                    chars.insert(at, chars[at]);
                }
                Edit::Replace(at, c) => {
                    let at = at.index(chars.len());
                    chars[at] = *c;
                }
            }
        }
        chars.into_iter().collect()
    }

    proptest! {
        #[test]
        fn garbled_logs_parse_without_panic(
            csv in any::<bool>(),
            edits in prop::collection::vec(edit(), 1..9),
        ) {
            let [json_log, csv_log] = sample_logs();
            let (format, sample) = if csv { csv_log } else { json_log };
            check_invariants(format, &garbled(&sample, &edits));
        }
    }
}
