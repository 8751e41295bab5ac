//! Recovery-conflict waits read from the hot standby's structured log.
//!
//! With `log_recovery_conflict_waits = on` (PostgreSQL 14 and later; the
//! throwaway standby sets it) the startup process logs
//! `recovery still waiting after 1000.170 ms: recovery conflict on lock`
//! once a conflict has held up replay for `deadlock_timeout`, with the
//! sessions it waits for in the detail (`Conflicting process: 16590.`), and
//! `recovery finished waiting after 10095.807 ms: recovery conflict on lock`
//! when replay goes on. `pg_blocking_pids` of the startup process is empty:
//! this detail is the server's own word on who held up replay.

use super::records::{self, LogFormat, LogSeverity};
use super::{message, role_list};

/// One wait of the standby's startup process on a recovery conflict.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecoveryWait {
    /// When `recovery still waiting` was logged, as the server wrote it.
    pub logged_at: String,
    /// The startup process's pid.
    pub pid: u32,
    /// The conflict as logged, e.g. `recovery conflict on lock`.
    pub conflict: String,
    /// How long replay had waited when `still waiting` was logged, in ms.
    pub still_waiting_ms: f64,
    /// The sessions replay waited for (the detail's `Conflicting process`).
    pub conflicting: Vec<u32>,
    /// When `recovery finished waiting` was logged, and how long replay
    /// waited in all, in ms; `None` when the log part ends first.
    pub finished: Option<(String, f64)>,
}

/// The recovery-conflict waits of a standby's structured log, in log order:
/// a `still waiting` message opens one, the next `finished waiting` of the
/// same process and conflict ends it.
pub fn parse_recovery_waits(format: LogFormat, text: &str) -> Vec<RecoveryWait> {
    let mut waits: Vec<RecoveryWait> = Vec::new();
    for record in records::read_records(format, text) {
        if record.severity != LogSeverity::Log {
            continue;
        }
        if let Some((waited_ms, conflict)) =
            message::parse_recovery_wait(&record.message, "still waiting")
        {
            waits.push(RecoveryWait {
                logged_at: record.logged_at,
                pid: record.pid,
                conflict: conflict.to_string(),
                still_waiting_ms: waited_ms,
                conflicting: message::parse_conflicting(&record.detail).unwrap_or_default(),
                finished: None,
            });
        } else if let Some((waited_ms, conflict)) =
            message::parse_recovery_wait(&record.message, "finished waiting")
        {
            let open = waits.iter_mut().rev().find(|wait| {
                wait.pid == record.pid && wait.conflict == conflict && wait.finished.is_none()
            });
            if let Some(wait) = open {
                wait.finished = Some((record.logged_at, waited_ms));
            }
        }
    }
    waits
}

/// One sentence per standby log part, then one per wait, naming sessions
/// through `role_of(pid)` and times through `time_of(logged_at)`:
/// - "replica server logged 1 recovery conflict wait longer than deadlock_timeout";
/// - "replica: recovery conflict on lock (7.0 s): startup still waiting after
///   1000.2 ms for report; finished waiting after 10095.8 ms (16.1 s)".
pub fn recovery_sentences(
    waits: &[RecoveryWait],
    role_of: &dyn Fn(u32) -> String,
    time_of: &dyn Fn(&str) -> String,
) -> Vec<String> {
    let count = match waits.len() {
        0 => "no recovery conflict waits".to_string(),
        1 => "1 recovery conflict wait".to_string(),
        count => format!("{count} recovery conflict waits"),
    };
    let mut sentences = vec![format!(
        "replica server logged {count} longer than deadlock_timeout"
    )];
    for wait in waits {
        let waited_for = match wait.conflicting.is_empty() {
            true => String::new(),
            false => format!(" for {}", role_list(&wait.conflicting, role_of)),
        };
        let finished = match &wait.finished {
            Some((logged_at, waited_ms)) => format!(
                "; finished waiting after {waited_ms:.1} ms ({})",
                time_of(logged_at)
            ),
            None => String::new(),
        };
        // Only the startup process (replay) logs these waits.
        sentences.push(format!(
            "replica: {} ({}): startup still waiting after {:.1} ms{waited_for}{finished}",
            wait.conflict,
            time_of(&wait.logged_at),
            wait.still_waiting_ms
        ));
    }
    sentences
}

/// The span of the run clock `wait` covers, from `run_clock_s`: from its
/// start (its `still waiting` time less the wait so far) to its end
/// (`f64::INFINITY` while not finished); `None` for a time not read.
pub fn recovery_wait_span(
    wait: &RecoveryWait,
    run_clock_s: &dyn Fn(&str) -> Option<f64>,
) -> Option<(f64, f64)> {
    let from_s = run_clock_s(&wait.logged_at)? - wait.still_waiting_ms / 1000.0;
    let to_s = match &wait.finished {
        Some((logged_at, _)) => run_clock_s(logged_at)?,
        None => f64::INFINITY,
    };
    Some((from_s, to_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The standby's log of a real run (`stallbench compare replica-report
    /// --strategies naive`, PostgreSQL 15), as jsonlog: the startup process
    /// 16278 waits for the report 16590.
    const STANDBY_JSONLOG: &str = r#"{"timestamp":"2026-12-04 14:44:25.813 UTC","pid":16278,"error_severity":"LOG","message":"consistent recovery state reached at 0/2000100","backend_type":"startup"}
{"timestamp":"2026-12-04 14:44:35.626 UTC","pid":16278,"error_severity":"LOG","message":"recovery still waiting after 1000.170 ms: recovery conflict on lock","detail":"Conflicting process: 16590.","context":"WAL redo at 0/30A6F48 for Standby/LOCK: xid 747 db 5 rel 16393 ","backend_type":"startup"}
{"timestamp":"2026-12-04 14:44:44.721 UTC","pid":16278,"error_severity":"LOG","message":"recovery finished waiting after 10095.807 ms: recovery conflict on lock","context":"WAL redo at 0/30A6F48 for Standby/LOCK: xid 747 db 5 rel 16393 ","backend_type":"startup"}
{"timestamp":"2026-12-04 14:44:50.100 UTC","pid":16278,"error_severity":"LOG","message":"recovery still waiting after 1000.010 ms: recovery conflict on lock","detail":"Conflicting processes: 16601, 16602.","backend_type":"startup"}
"#;

    /// [`STANDBY_JSONLOG`] as csvlog.
    const STANDBY_CSVLOG: &str = r#"2026-12-04 14:44:25.813 UTC,,,16278,,,,,,,0,LOG,00000,"consistent recovery state reached at 0/2000100",,,,,,,,,,"startup",,0
2026-12-04 14:44:35.626 UTC,,,16278,,,,,,,0,LOG,00000,"recovery still waiting after 1000.170 ms: recovery conflict on lock","Conflicting process: 16590.",,,,"WAL redo at 0/30A6F48 for Standby/LOCK: xid 747 db 5 rel 16393 ",,,,,"startup",,0
2026-12-04 14:44:44.721 UTC,,,16278,,,,,,,0,LOG,00000,"recovery finished waiting after 10095.807 ms: recovery conflict on lock",,,,,"WAL redo at 0/30A6F48 for Standby/LOCK: xid 747 db 5 rel 16393 ",,,,,"startup",,0
2026-12-04 14:44:50.100 UTC,,,16278,,,,,,,0,LOG,00000,"recovery still waiting after 1000.010 ms: recovery conflict on lock","Conflicting processes: 16601, 16602.",,,,,,,,,"startup",,0
"#;

    fn role(pid: u32) -> String {
        match pid {
            16590 => "report".to_string(),
            other => format!("external:{other}"),
        }
    }

    #[test]
    fn a_wait_is_opened_by_still_waiting_and_ended_by_finished_waiting() {
        for format in [LogFormat::JsonLog, LogFormat::CsvLog] {
            let text = match format {
                LogFormat::JsonLog => STANDBY_JSONLOG,
                LogFormat::CsvLog => STANDBY_CSVLOG,
            };
            let waits = parse_recovery_waits(format, text);
            assert_eq!(waits.len(), 2, "{format:?}");
            assert_eq!(
                waits[0],
                RecoveryWait {
                    logged_at: "2026-12-04 14:44:35.626 UTC".to_string(),
                    pid: 16278,
                    conflict: "recovery conflict on lock".to_string(),
                    still_waiting_ms: 1000.170,
                    conflicting: vec![16590],
                    finished: Some(("2026-12-04 14:44:44.721 UTC".to_string(), 10095.807)),
                }
            );
            assert_eq!(waits[1].conflicting, [16601, 16602]);
            assert_eq!(waits[1].finished, None);
        }
    }

    #[test]
    fn each_wait_is_one_sentence_naming_the_conflicting_session() {
        let waits = parse_recovery_waits(LogFormat::JsonLog, STANDBY_JSONLOG);
        let time_of = |logged_at: &str| super::super::run_clock_time(logged_at, 1_796_395_465.0);
        assert_eq!(
            recovery_sentences(&waits, &role, &time_of),
            [
                "replica server logged 2 recovery conflict waits longer than deadlock_timeout",
                "replica: recovery conflict on lock (10.6 s): startup still waiting after 1000.2 ms \
                 for report; finished waiting after 10095.8 ms (19.7 s)",
                "replica: recovery conflict on lock (25.1 s): startup still waiting after 1000.0 ms \
                 for external:16601, external:16602",
            ]
        );
        assert_eq!(
            recovery_sentences(&[], &role, &time_of),
            ["replica server logged no recovery conflict waits longer than deadlock_timeout"]
        );
    }

    #[test]
    fn a_wait_spans_from_its_start_to_its_end_on_the_run_clock() {
        let waits = parse_recovery_waits(LogFormat::JsonLog, STANDBY_JSONLOG);
        let clock = |logged_at: &str| super::super::run_clock_s(logged_at, 1_796_395_465.0);
        let (from_s, to_s) = recovery_wait_span(&waits[0], &clock).unwrap();
        assert!(
            (from_s - 9.626).abs() < 0.01 && (to_s - 19.721).abs() < 0.01,
            "{from_s} {to_s}"
        );
        assert_eq!(
            recovery_wait_span(&waits[1], &clock).unwrap().1,
            f64::INFINITY
        );
        assert_eq!(recovery_wait_span(&waits[0], &|_| None), None);
    }

    #[test]
    fn other_messages_and_details_are_not_taken() {
        let text = r#"{"timestamp":"t","pid":1,"error_severity":"LOG","message":"recovery still waiting after x ms: recovery conflict on lock"}
{"timestamp":"t","pid":1,"error_severity":"ERROR","message":"recovery still waiting after 1.0 ms: recovery conflict on lock"}
{"timestamp":"t","pid":1,"error_severity":"LOG","message":"recovery finished waiting after 5.0 ms: recovery conflict on lock"}
{"timestamp":"t","pid":1,"error_severity":"LOG","message":"recovery still waiting after 1.0 ms: recovery conflict on snapshot","detail":"Conflicting process: abc."}
"#;
        let waits = parse_recovery_waits(LogFormat::JsonLog, text);
        assert_eq!(waits.len(), 1);
        assert_eq!(waits[0].conflict, "recovery conflict on snapshot");
        assert!(waits[0].conflicting.is_empty());
        assert_eq!(waits[0].finished, None);
    }
}
