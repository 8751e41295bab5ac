//! The facts that have no field of their own in the structured log: the lock
//! mode, object and wait inside a lock report's message, and the pids inside a
//! lock wait's or a deadlock's detail. These are English texts (the throwaway
//! server runs with `lc_messages` C); anything not shaped as expected gives
//! `None` or is left out.

use super::{DeadlockEdge, DeadlockStatement};

/// The parts of `process PID <verb>MODE on OBJECT after MS ms`.
pub(super) struct LockWaitMessage<'a> {
    pub mode: &'a str,
    pub object: &'a str,
    pub waited_ms: f64,
}

/// Parses a lock report message; `verb` is `"still waiting for "` or `"acquired "`.
pub(super) fn parse_lock_report<'a>(message: &'a str, verb: &str) -> Option<LockWaitMessage<'a>> {
    let rest = message.strip_prefix("process ")?;
    let (pid_text, rest) = rest.split_once(' ')?;
    parse_pid(pid_text)?;
    let rest = rest.strip_prefix(verb)?;
    let (mode, rest) = rest.split_once(" on ")?;
    if mode.is_empty() || mode.contains(' ') {
        return None;
    }
    let (object, rest) = rest.rsplit_once(" after ")?;
    if object.is_empty() {
        return None;
    }
    let waited_ms = parse_milliseconds(rest.strip_suffix(" ms")?)?;
    Some(LockWaitMessage {
        mode,
        object,
        waited_ms,
    })
}

/// Parses `Process holding the lock: 100. Wait queue: 108, 90.` (or
/// `Processes holding the lock: 100, 101. ...`) into (holders, queue).
pub(super) fn parse_holders_and_queue(detail: &str) -> Option<(Vec<u32>, Vec<u32>)> {
    let rest = detail
        .strip_prefix("Process holding the lock: ")
        .or_else(|| detail.strip_prefix("Processes holding the lock: "))?;
    let (holders_text, queue_text) = rest.split_once(". Wait queue: ")?;
    let queue_text = queue_text.trim_end();
    let queue_text = queue_text.strip_suffix('.').unwrap_or(queue_text);
    let holders = parse_pid_list(holders_text)?;
    let queue = parse_pid_list(queue_text)?;
    Some((holders, queue))
}

/// Parses `recovery <state> after MS ms: CONFLICT` (the standby's
/// recovery-conflict wait); `state` is `"still waiting"` or `"finished waiting"`.
pub(super) fn parse_recovery_wait<'a>(message: &'a str, state: &str) -> Option<(f64, &'a str)> {
    let rest = message.strip_prefix("recovery ")?.strip_prefix(state)?;
    let (waited, conflict) = rest.strip_prefix(" after ")?.split_once(" ms: ")?;
    if conflict.is_empty() {
        return None;
    }
    Some((parse_milliseconds(waited)?, conflict))
}

/// Parses `Conflicting process: 16590.` (or `Conflicting processes: 16601, 16602.`).
pub(super) fn parse_conflicting(detail: &str) -> Option<Vec<u32>> {
    let rest = detail
        .strip_prefix("Conflicting process: ")
        .or_else(|| detail.strip_prefix("Conflicting processes: "))?;
    let rest = rest.trim_end();
    parse_pid_list(rest.strip_suffix('.').unwrap_or(rest))
}

/// The wait-for edges and statements of a deadlock's detail, one per line:
/// `Process 174 waits for MODE on OBJECT; blocked by process 173.` and
/// `Process 174: STATEMENT`; other lines continue the statement before them.
pub(super) fn parse_deadlock_detail(detail: &str) -> (Vec<DeadlockEdge>, Vec<DeadlockStatement>) {
    let mut edges = Vec::new();
    let mut statements: Vec<DeadlockStatement> = Vec::new();
    for line in detail.lines() {
        if let Some(edge) = parse_deadlock_edge(line) {
            edges.push(edge);
        } else if let Some(statement) = parse_deadlock_statement(line) {
            statements.push(statement);
        } else if let Some(last) = statements.last_mut() {
            // A line of a multi-line statement.
            last.statement.push('\n');
            last.statement.push_str(line);
        }
    }
    (edges, statements)
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
