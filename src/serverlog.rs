//! Lock-wait facts read from a PostgreSQL server log.
//!
//! The log is expected to be written with `log_line_prefix='%m [%p] '`,
//! `log_lock_waits=on` and English messages (`lc_messages` C or en), so a
//! line looks like
//! `2026-10-11 05:20:41.755 UTC [108] LOG:  process 108 still waiting for ...`.
//! A message that spans several lines continues on lines that start with a TAB.
//!
//! [`parse_server_log`] extracts:
//! - every `process N still waiting for MODE on OBJECT after MS ms` line, with
//!   the holders and wait queue of the `DETAIL` line that follows it;
//! - every `process N acquired MODE on OBJECT after MS ms` line;
//! - every `ERROR:  deadlock detected`, with the wait-for edges and statements
//!   of its `DETAIL`.
//!
//! Lines it does not recognise are ignored, and no input makes it panic.

use std::collections::HashMap;

/// Everything about lock waits that the server log says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerLogFacts {
    /// Number of "still waiting for" lines: lock waits longer than deadlock_timeout.
    pub lock_waits: u32,
    /// Each "still waiting for" line, in log order.
    pub waits: Vec<LockWait>,
    /// Each "acquired" line (a wait that had been logged as still waiting ended), in log order.
    pub acquired: Vec<LockAcquired>,
    /// The wait whose queue was longest (first such if tied): the worst moment.
    /// `None` when no wait had a queue logged.
    pub worst_queue: Option<LockWait>,
    /// Each "deadlock detected" error, in log order.
    pub deadlocks: Vec<Deadlock>,
}

/// One `process N still waiting for MODE on OBJECT after MS ms` line and its DETAIL.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LockWait {
    /// Timestamp text of the line as logged, e.g. `2026-10-11 05:20:41.755 UTC`.
    pub logged_at: String,
    /// Backend pid of the waiting session.
    pub pid: u32,
    /// Lock mode waited for, e.g. `AccessExclusiveLock`.
    pub mode: String,
    /// Locked object as logged, e.g. `relation 16398 of database 16384`.
    pub object: String,
    /// How long the session had waited when the line was written, in milliseconds.
    pub waited_ms: f64,
    /// Pids holding the lock, from the DETAIL line (empty if no DETAIL was logged).
    pub holders: Vec<u32>,
    /// Pids in the wait queue, in queue order, from the DETAIL line (empty if no DETAIL was logged).
    pub queue: Vec<u32>,
}

/// One `process N acquired MODE on OBJECT after MS ms` line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LockAcquired {
    /// Timestamp text of the line as logged, e.g. `2026-10-11 05:22:09.882 UTC`.
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

/// One `ERROR:  deadlock detected` and its DETAIL.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Deadlock {
    /// Timestamp text of the ERROR line as logged.
    pub logged_at: String,
    /// Pid of the session whose transaction was aborted (the pid of the ERROR line).
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

/// `Process PID: STATEMENT` from a deadlock DETAIL.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeadlockStatement {
    /// Pid of the process.
    pub pid: u32,
    /// Its statement text; lines of a multi-line statement are joined with `\n`.
    pub statement: String,
}

/// Reads the text of a server log and returns the lock-wait facts in it.
pub fn parse_server_log(text: &str) -> ServerLogFacts {
    let mut facts = ServerLogFacts::default();
    // The message that the next DETAIL line of a pid belongs to. PostgreSQL
    // writes a message's DETAIL right after its main line, so any message of
    // that pid ends the wait for a DETAIL.
    let mut awaiting_detail: HashMap<u32, AwaitingDetail> = HashMap::new();

    for message in group_messages(text) {
        let awaiting = awaiting_detail.remove(&message.pid);
        let first_line = message.lines[0];
        match message.severity {
            "DETAIL" => match awaiting {
                Some(AwaitingDetail::LockWait(index)) => {
                    if let Some((holders, queue)) = parse_holders_and_queue(first_line) {
                        facts.waits[index].holders = holders;
                        facts.waits[index].queue = queue;
                    }
                }
                Some(AwaitingDetail::Deadlock(index)) => {
                    fill_deadlock_detail(&mut facts.deadlocks[index], &message.lines);
                }
                None => {}
            },
            "LOG" => {
                if let Some(report) = parse_lock_report(first_line, "still waiting for ") {
                    facts.waits.push(LockWait {
                        logged_at: message.logged_at.to_string(),
                        pid: report.pid,
                        mode: report.mode.to_string(),
                        object: report.object.to_string(),
                        waited_ms: report.waited_ms,
                        holders: Vec::new(),
                        queue: Vec::new(),
                    });
                    awaiting_detail
                        .insert(message.pid, AwaitingDetail::LockWait(facts.waits.len() - 1));
                } else if let Some(report) = parse_lock_report(first_line, "acquired ") {
                    facts.acquired.push(LockAcquired {
                        logged_at: message.logged_at.to_string(),
                        pid: report.pid,
                        mode: report.mode.to_string(),
                        object: report.object.to_string(),
                        waited_ms: report.waited_ms,
                    });
                }
            }
            "ERROR" if first_line.trim_end() == "deadlock detected" => {
                facts.deadlocks.push(Deadlock {
                    logged_at: message.logged_at.to_string(),
                    victim_pid: message.pid,
                    edges: Vec::new(),
                    statements: Vec::new(),
                });
                awaiting_detail.insert(
                    message.pid,
                    AwaitingDetail::Deadlock(facts.deadlocks.len() - 1),
                );
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
    /// (which returns e.g. "ddl", "report", "reader-3", or "external:1234"):
    /// - "server logged 5 lock waits longer than deadlock_timeout" (always present);
    /// - "worst queue (05:20:41.755): report holds the lock; queue ddl, reader-1, ..."
    ///   (when a wait queue was logged);
    /// - "slowest lock acquisition (05:22:09.882): ddl-a acquired AccessExclusiveLock
    ///   after 2006.4 ms" (when an "acquired" line was logged);
    /// - "deadlock detected (05:22:09.881): ddl-b waits for AccessExclusiveLock,
    ///   blocked by ddl-a; ...; victim ddl-b" (one per deadlock).
    pub fn sentences(&self, role_of: &dyn Fn(u32) -> String) -> Vec<String> {
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
                clock_time(&worst.logged_at),
                role_list(&worst.queue, role_of)
            ));
        }

        if let Some(slowest) = slowest_acquisition(&self.acquired) {
            sentences.push(format!(
                "slowest lock acquisition ({}): {} acquired {} after {:.1} ms",
                clock_time(&slowest.logged_at),
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
                clock_time(&deadlock.logged_at),
                parts.join("; ")
            ));
        }

        sentences
    }
}

/// Which parsed fact the next DETAIL message of a pid belongs to.
enum AwaitingDetail {
    /// Index into `ServerLogFacts::waits`.
    LockWait(usize),
    /// Index into `ServerLogFacts::deadlocks`.
    Deadlock(usize),
}

/// One log message: a prefixed line plus its TAB-continued lines.
struct LogMessage<'a> {
    logged_at: &'a str,
    pid: u32,
    /// `LOG`, `DETAIL`, `ERROR`, `STATEMENT`, ...
    severity: &'a str,
    /// The message text of the first line, then each continuation line without its TAB.
    /// Never empty.
    lines: Vec<&'a str>,
}

/// Splits the log into messages. Lines that are neither prefixed nor a
/// continuation of a prefixed line are dropped.
fn group_messages(text: &str) -> Vec<LogMessage<'_>> {
    let mut messages: Vec<LogMessage<'_>> = Vec::new();
    // Whether the last line seen belonged to the last message in `messages`.
    let mut in_message = false;
    for line in text.lines() {
        if let Some(continued) = line.strip_prefix('\t') {
            if in_message && let Some(message) = messages.last_mut() {
                message.lines.push(continued);
            }
            continue;
        }
        match parse_prefixed_line(line) {
            Some(message) => {
                messages.push(message);
                in_message = true;
            }
            None => in_message = false,
        }
    }
    messages
}

/// Parses `TIMESTAMP [PID] SEVERITY:  TEXT`; `None` if the line is not shaped so.
fn parse_prefixed_line(line: &str) -> Option<LogMessage<'_>> {
    let (logged_at, rest) = line.split_once(" [")?;
    if !logged_at.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let (pid_text, rest) = rest.split_once("] ")?;
    let pid = parse_pid(pid_text)?;
    let (severity, text) = rest.split_once(':')?;
    let severity_is_word = !severity.is_empty()
        && severity
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if !severity_is_word {
        return None;
    }
    Some(LogMessage {
        logged_at,
        pid,
        severity,
        lines: vec![text.trim_start_matches(' ')],
    })
}

/// The parts of `process PID <verb>MODE on OBJECT after MS ms[ at character N]`.
struct LockReport<'a> {
    pid: u32,
    mode: &'a str,
    object: &'a str,
    waited_ms: f64,
}

/// Parses a lock report line; `verb` is `"still waiting for "` or `"acquired "`.
fn parse_lock_report<'a>(text: &'a str, verb: &str) -> Option<LockReport<'a>> {
    let rest = text.strip_prefix("process ")?;
    let (pid_text, rest) = rest.split_once(' ')?;
    let pid = parse_pid(pid_text)?;
    let rest = rest.strip_prefix(verb)?;
    let (mode, rest) = rest.split_once(" on ")?;
    if mode.is_empty() || mode.contains(' ') {
        return None;
    }
    let (object, rest) = rest.rsplit_once(" after ")?;
    if object.is_empty() {
        return None;
    }
    // "1000.137 ms" or "1000.090 ms at character 34".
    let (ms_text, unit_text) = rest.split_once(' ')?;
    if unit_text != "ms" && !unit_text.starts_with("ms ") {
        return None;
    }
    let waited_ms = parse_milliseconds(ms_text)?;
    Some(LockReport {
        pid,
        mode,
        object,
        waited_ms,
    })
}

/// Parses `Process holding the lock: 100. Wait queue: 108, 90.` (or
/// `Processes holding the lock: 100, 101. ...`) into (holders, queue).
fn parse_holders_and_queue(text: &str) -> Option<(Vec<u32>, Vec<u32>)> {
    let rest = text
        .strip_prefix("Process holding the lock: ")
        .or_else(|| text.strip_prefix("Processes holding the lock: "))?;
    let (holders_text, queue_text) = rest.split_once(". Wait queue: ")?;
    let queue_text = queue_text.trim_end();
    let queue_text = queue_text.strip_suffix('.').unwrap_or(queue_text);
    let holders = parse_pid_list(holders_text)?;
    let queue = parse_pid_list(queue_text)?;
    Some((holders, queue))
}

/// Fills edges and statements from the lines of a deadlock DETAIL message.
fn fill_deadlock_detail(deadlock: &mut Deadlock, lines: &[&str]) {
    for line in lines {
        if let Some(edge) = parse_deadlock_edge(line) {
            deadlock.edges.push(edge);
        } else if let Some(statement) = parse_deadlock_statement(line) {
            deadlock.statements.push(statement);
        } else if let Some(last) = deadlock.statements.last_mut() {
            // A line of a multi-line statement.
            last.statement.push('\n');
            last.statement.push_str(line);
        }
    }
}

/// Parses `Process 174 waits for MODE on OBJECT; blocked by process 173.`
fn parse_deadlock_edge(line: &str) -> Option<DeadlockEdge> {
    let rest = line.strip_prefix("Process ")?;
    let (pid_text, rest) = rest.split_once(" waits for ")?;
    let pid = parse_pid(pid_text)?;
    let (mode_and_object, blocker_text) = rest.rsplit_once("; blocked by process ")?;
    let (mode, object) = mode_and_object.split_once(" on ")?;
    if mode.is_empty() || mode.contains(' ') || object.is_empty() {
        return None;
    }
    let blocker_text = blocker_text.trim_end();
    let blocker_text = blocker_text.strip_suffix('.').unwrap_or(blocker_text);
    let blocked_by = parse_pid(blocker_text)?;
    Some(DeadlockEdge {
        pid,
        mode: mode.to_string(),
        object: object.to_string(),
        blocked_by,
    })
}

/// Parses `Process 174: ALTER TABLE ...`.
fn parse_deadlock_statement(line: &str) -> Option<DeadlockStatement> {
    let rest = line.strip_prefix("Process ")?;
    let (pid_text, statement) = rest.split_once(": ")?;
    let pid = parse_pid(pid_text)?;
    Some(DeadlockStatement {
        pid,
        statement: statement.to_string(),
    })
}

/// Parses a pid: ASCII digits only, fitting in u32.
fn parse_pid(text: &str) -> Option<u32> {
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Parses `108, 90, 92`; an empty text is an empty list.
fn parse_pid_list(text: &str) -> Option<Vec<u32>> {
    let text = text.trim();
    if text.is_empty() {
        return Some(Vec::new());
    }
    text.split(',').map(|part| parse_pid(part.trim())).collect()
}

/// Parses `1000.137` (milliseconds); rejects negative and non-finite values.
fn parse_milliseconds(text: &str) -> Option<f64> {
    let looks_numeric = !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.');
    if !looks_numeric {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    if value.is_finite() { Some(value) } else { None }
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

/// `2026-10-11 05:20:41.755 UTC` -> `05:20:41.755`; other text is returned unchanged.
fn clock_time(logged_at: &str) -> &str {
    logged_at.split(' ').nth(1).unwrap_or(logged_at)
}

/// Roles of the pids joined with ", "; `(empty)` for no pids.
fn role_list(pids: &[u32], role_of: &dyn Fn(u32) -> String) -> String {
    if pids.is_empty() {
        return "(empty)".to_string();
    }
    let roles: Vec<String> = pids.iter().map(|pid| role_of(*pid)).collect();
    roles.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lock-queue outage quoted from a real server log (PostgreSQL, published article).
    const QUEUE_LOG: &str = "\
2026-10-11 05:20:41.755 UTC [108] LOG:  process 108 still waiting for AccessExclusiveLock on relation 16398 of database 16384 after 1000.137 ms
2026-10-11 05:20:41.755 UTC [108] DETAIL:  Process holding the lock: 100. Wait queue: 108, 90, 92, 91, 93.
2026-10-11 05:20:41.755 UTC [108] STATEMENT:  ALTER TABLE orders ADD COLUMN note text;
2026-10-11 05:20:41.755 UTC [90] LOG:  process 90 still waiting for AccessShareLock on relation 16398 of database 16384 after 1000.090 ms at character 34
2026-10-11 05:20:41.755 UTC [90] DETAIL:  Process holding the lock: 100. Wait queue: 108, 90, 92, 91, 93.
2026-10-11 05:20:41.755 UTC [90] STATEMENT:  SELECT count(*), sum(total) FROM orders WHERE customer_id = 471;
";

    /// Deadlock quoted from the same article; DETAIL continuation lines start with a TAB.
    const DEADLOCK_LOG: &str = "\
2026-10-11 05:22:08.876 UTC [173] LOG:  process 173 still waiting for AccessExclusiveLock on relation 16387 of database 16384 after 1000.198 ms
2026-10-11 05:22:08.876 UTC [173] DETAIL:  Process holding the lock: 174. Wait queue: 173.
2026-10-11 05:22:08.876 UTC [173] STATEMENT:  ALTER TABLE customers ADD COLUMN phone text;
2026-10-11 05:22:09.881 UTC [174] ERROR:  deadlock detected
2026-10-11 05:22:09.881 UTC [174] DETAIL:  Process 174 waits for AccessExclusiveLock on relation 16387 of database 16384; blocked by process 173.
\tProcess 173 waits for AccessExclusiveLock on relation 16387 of database 16384; blocked by process 174.
\tProcess 174: ALTER TABLE customers ADD COLUMN email text;
\tProcess 173: ALTER TABLE customers ADD COLUMN phone text;
2026-10-11 05:22:09.881 UTC [174] HINT:  See server log for query details.
2026-10-11 05:22:09.881 UTC [174] STATEMENT:  ALTER TABLE customers ADD COLUMN email text;
2026-10-11 05:22:09.882 UTC [173] LOG:  process 173 acquired AccessExclusiveLock on relation 16387 of database 16384 after 2006.371 ms
2026-10-11 05:22:09.882 UTC [173] STATEMENT:  ALTER TABLE customers ADD COLUMN phone text;
";

    /// Lines copied from results/example/server.log (PostgreSQL 15.18, a real stallbench run).
    const PG15_LOG: &str = "\
2026-11-30 13:42:59.067 UTC [28053] LOG:  starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit
2026-11-30 13:42:59.080 UTC [28053] LOG:  database system is ready to accept connections
2026-11-30 13:43:08.842 UTC [28067] LOG:  process 28067 still waiting for AccessShareLock on relation 16393 of database 5 after 1000.181 ms
2026-11-30 13:43:08.842 UTC [28067] DETAIL:  Process holding the lock: 28072. Wait queue: 28073, 28067, 28070, 28069, 28068.
2026-11-30 13:43:08.842 UTC [28067] STATEMENT:  SELECT count(*), sum(total) FROM orders WHERE customer_id = $1
2026-11-30 13:43:08.842 UTC [28073] LOG:  process 28073 still waiting for AccessExclusiveLock on relation 16393 of database 5 after 1000.490 ms
2026-11-30 13:43:08.842 UTC [28073] DETAIL:  Process holding the lock: 28072. Wait queue: 28073, 28067, 28070, 28069, 28068.
2026-11-30 13:43:08.842 UTC [28073] STATEMENT:  ALTER TABLE orders ADD COLUMN note text
2026-11-30 13:43:17.822 UTC [28067] LOG:  process 28067 still waiting for AccessShareLock on relation 16393 of database 5 after 9980.039 ms
2026-11-30 13:43:17.822 UTC [28067] DETAIL:  Process holding the lock: 28072. Wait queue: 28073, 28067, 28070, 28069, 28068.
2026-11-30 13:43:17.822 UTC [28067] STATEMENT:  SELECT count(*), sum(total) FROM orders WHERE customer_id = $1
2026-11-30 13:43:17.904 UTC [28073] LOG:  process 28073 acquired AccessExclusiveLock on relation 16393 of database 5 after 10062.582 ms
2026-11-30 13:43:17.904 UTC [28073] STATEMENT:  ALTER TABLE orders ADD COLUMN note text
2026-11-30 13:43:17.910 UTC [28067] LOG:  process 28067 acquired AccessShareLock on relation 16393 of database 5 after 10068.298 ms
2026-11-30 13:43:17.910 UTC [28067] STATEMENT:  SELECT count(*), sum(total) FROM orders WHERE customer_id = $1
2026-11-30 13:43:32.607 UTC [28082] ERROR:  canceling statement due to lock timeout
2026-11-30 13:43:32.607 UTC [28082] STATEMENT:  ALTER TABLE orders ADD COLUMN note text
";

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
    fn queue_log_waits_holders_and_queue() {
        let facts = parse_server_log(QUEUE_LOG);
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

    #[test]
    fn queue_log_sentences() {
        let facts = parse_server_log(QUEUE_LOG);
        assert_eq!(
            facts.sentences(&article_role),
            vec![
                "server logged 2 lock waits longer than deadlock_timeout".to_string(),
                "worst queue (05:20:41.755): report holds the lock; \
                 queue ddl, reader-1, reader-3, reader-2, reader-4"
                    .to_string(),
            ]
        );
    }

    #[test]
    fn deadlock_log_edges_victim_statements() {
        let facts = parse_server_log(DEADLOCK_LOG);
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

    #[test]
    fn deadlock_log_sentences() {
        let facts = parse_server_log(DEADLOCK_LOG);
        assert_eq!(
            facts.sentences(&article_role),
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

    #[test]
    fn both_article_logs_together() {
        let text = format!("{QUEUE_LOG}{DEADLOCK_LOG}");
        let facts = parse_server_log(&text);
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

    #[test]
    fn postgres_15_log_from_a_real_run() {
        let facts = parse_server_log(PG15_LOG);
        assert_eq!(facts.lock_waits, 3);
        assert_eq!(
            facts
                .waits
                .iter()
                .map(|wait| (wait.pid, wait.mode.as_str(), wait.waited_ms))
                .collect::<Vec<_>>(),
            vec![
                (28067, "AccessShareLock", 1000.181),
                (28073, "AccessExclusiveLock", 1000.490),
                (28067, "AccessShareLock", 9980.039),
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
        // The lock-timeout ERROR is not a deadlock.
        assert!(facts.deadlocks.is_empty());
        assert_eq!(
            facts
                .worst_queue
                .as_ref()
                .map(|wait| wait.logged_at.as_str()),
            Some("2026-11-30 13:43:08.842 UTC")
        );
        assert_eq!(
            facts.sentences(&pg15_role),
            vec![
                "server logged 3 lock waits longer than deadlock_timeout".to_string(),
                "worst queue (13:43:08.842): report holds the lock; \
                 queue ddl, reader-1, reader-4, reader-3, reader-2"
                    .to_string(),
                "slowest lock acquisition (13:43:17.910): reader-1 acquired \
                 AccessShareLock after 10068.3 ms"
                    .to_string(),
            ]
        );
    }

    #[test]
    fn several_holders_and_unknown_pids() {
        let text = "\
2026-10-11 05:20:41.755 UTC [108] LOG:  process 108 still waiting for ShareLock on transaction 7411 after 1001.500 ms
2026-10-11 05:20:41.755 UTC [108] DETAIL:  Processes holding the lock: 100, 4242. Wait queue: 108.
";
        let facts = parse_server_log(text);
        assert_eq!(facts.waits[0].object, "transaction 7411");
        assert_eq!(facts.waits[0].holders, vec![100, 4242]);
        assert_eq!(facts.waits[0].queue, vec![108]);
        assert_eq!(
            facts.sentences(&article_role)[1],
            "worst queue (05:20:41.755): report, external:4242 hold the lock; queue ddl"
        );
    }

    #[test]
    fn detail_of_another_pid_or_message_is_not_taken() {
        // 90's DETAIL does not belong to 108's wait; 108's DETAIL after its
        // STATEMENT belongs to nothing.
        let text = "\
2026-10-11 05:20:41.755 UTC [108] LOG:  process 108 still waiting for AccessExclusiveLock on relation 16398 of database 16384 after 1000.137 ms
2026-10-11 05:20:41.755 UTC [90] DETAIL:  Process holding the lock: 100. Wait queue: 108, 90.
2026-10-11 05:20:41.755 UTC [108] STATEMENT:  ALTER TABLE orders ADD COLUMN note text;
2026-10-11 05:20:41.755 UTC [108] DETAIL:  Process holding the lock: 100. Wait queue: 108, 90.
";
        let facts = parse_server_log(text);
        assert_eq!(facts.lock_waits, 1);
        assert!(facts.waits[0].holders.is_empty());
        assert!(facts.waits[0].queue.is_empty());
        assert_eq!(facts.worst_queue, None);
        assert_eq!(
            facts.sentences(&article_role),
            vec!["server logged 1 lock wait longer than deadlock_timeout".to_string()]
        );
    }

    #[test]
    fn interleaved_messages_of_other_pids() {
        // Another backend's lines between a wait and its DETAIL do not matter.
        let text = "\
2026-10-11 05:20:41.755 UTC [108] LOG:  process 108 still waiting for AccessExclusiveLock on relation 16398 of database 16384 after 1000.137 ms
2026-10-11 05:20:41.755 UTC [90] LOG:  process 90 still waiting for AccessShareLock on relation 16398 of database 16384 after 1000.090 ms at character 34
2026-10-11 05:20:41.755 UTC [108] DETAIL:  Process holding the lock: 100. Wait queue: 108.
2026-10-11 05:20:41.755 UTC [90] DETAIL:  Process holding the lock: 100. Wait queue: 108, 90.
";
        let facts = parse_server_log(text);
        assert_eq!(facts.waits[0].queue, vec![108]);
        assert_eq!(facts.waits[1].queue, vec![108, 90]);
        assert_eq!(facts.worst_queue.as_ref().map(|wait| wait.pid), Some(90));
    }

    #[test]
    fn multi_line_statement_in_deadlock_detail() {
        let text = "\
2026-10-11 05:22:09.881 UTC [174] ERROR:  deadlock detected
2026-10-11 05:22:09.881 UTC [174] DETAIL:  Process 174 waits for ShareLock on transaction 900; blocked by process 173.
\tProcess 173 waits for ShareLock on transaction 901; blocked by process 174.
\tProcess 174: UPDATE accounts
\t   SET balance = 0
\tProcess 173: UPDATE accounts SET balance = 1
";
        let facts = parse_server_log(text);
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
        let text = "2026-10-11 05:22:09.881 UTC [174] ERROR:  deadlock detected\n";
        let facts = parse_server_log(text);
        assert_eq!(facts.deadlocks.len(), 1);
        assert!(facts.deadlocks[0].edges.is_empty());
        assert_eq!(
            facts.sentences(&article_role)[1],
            "deadlock detected (05:22:09.881): victim ddl-b"
        );
    }

    #[test]
    fn empty_and_unrelated_text() {
        for text in ["", "\n\n", "\tstray continuation\n", "hello world\n"] {
            let facts = parse_server_log(text);
            assert_eq!(facts, ServerLogFacts::default());
            assert_eq!(
                facts.sentences(&article_role),
                vec!["server logged no lock waits longer than deadlock_timeout".to_string()]
            );
        }
    }

    #[test]
    fn crlf_line_endings() {
        let text = QUEUE_LOG.replace('\n', "\r\n");
        assert_eq!(parse_server_log(&text), parse_server_log(QUEUE_LOG));
    }

    #[test]
    fn garbled_lines_are_ignored() {
        let text = "\
2026-10-11 05:20:41.755 UTC [abc] LOG:  process 108 still waiting for AccessExclusiveLock on relation 1 after 1000.137 ms
2026-10-11 05:20:41.755 UTC [108] LOG:  process 108 still waiting for AccessExclusiveLock on relation 1 after NaN ms
2026-10-11 05:20:41.755 UTC [108] LOG:  process 108 still waiting for AccessExclusiveLock on relation 1 after 1000.137 s
2026-10-11 05:20:41.755 UTC [108] LOG:  process 99999999999 still waiting for AccessExclusiveLock on relation 1 after 1.0 ms
2026-10-11 05:20:41.755 UTC [108] LOG:  process 108 still waiting for  on relation 1 after 1.0 ms
2026-10-11 05:20:41.755 UTC [108] log:  process 108 still waiting for AccessExclusiveLock on relation 1 after 1.0 ms
[108] LOG:  process 108 still waiting for AccessExclusiveLock on relation 1 after 1.0 ms
";
        assert_eq!(parse_server_log(text), ServerLogFacts::default());
    }

    /// Tiny deterministic generator for the fuzz test (no rand dependency).
    struct Lcg(u64);

    impl Lcg {
        fn next_below(&mut self, bound: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % bound.max(1)
        }
    }

    fn check_invariants(text: &str) {
        let facts = parse_server_log(text);
        assert_eq!(facts.lock_waits as usize, facts.waits.len());
        if let Some(worst) = &facts.worst_queue {
            assert!(facts.waits.contains(worst));
        }
        let _ = facts.sentences(&article_role);
    }

    #[test]
    fn fuzz_truncated_and_garbled_lines_never_panic() {
        let sample = format!("{QUEUE_LOG}{DEADLOCK_LOG}{PG15_LOG}");

        // Every prefix of the whole log, and of each line.
        for (end, _) in sample.char_indices() {
            check_invariants(&sample[..end]);
        }
        for line in sample.lines() {
            for (end, _) in line.char_indices() {
                check_invariants(&line[..end]);
                check_invariants(&format!("{}\n{}", &line[..end], &line[end..]));
            }
        }

        // Random edits: delete, duplicate, replace with a tricky character.
        let tricky = [
            '\t', ' ', '.', ',', ':', ';', '[', ']', '0', '9', '-', 'é', '\n', '\r',
        ];
        let mut random = Lcg(0x5eed);
        let original: Vec<char> = sample.chars().collect();
        for _ in 0..2000 {
            let mut chars = original.clone();
            for _ in 0..1 + random.next_below(8) {
                let at = random.next_below(chars.len());
                match random.next_below(3) {
                    0 => {
                        chars.remove(at);
                    }
                    1 => {
                        let copy = chars[at];
                        chars.insert(at, copy);
                    }
                    _ => chars[at] = tricky[random.next_below(tricky.len())],
                }
            }
            let garbled: String = chars.into_iter().collect();
            check_invariants(&garbled);
        }
    }
}
