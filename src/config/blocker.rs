//! The `[blocker]` section: the session that holds a lock while the migration
//! runs, the cause of the lock queue the harness reproduces.

use std::time::Duration;

use crate::error::Error;
use crate::workload::BlockerFile;

use super::duration::{check_within_run, parse_duration};

/// The session that holds a lock (a long report, a writer, a forgotten transaction).
#[derive(Debug, Clone)]
pub struct BlockerConfig {
    pub kind: BlockerKind,
    pub at: Duration,
    pub hold: Duration,
    pub sql: String,
}

/// How the blocker holds its transaction open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockerKind {
    /// `BEGIN; <sql>; SELECT pg_sleep(hold); COMMIT`: active the whole time.
    Report,
    /// The same, with a write (it holds row locks).
    Writer,
    /// `BEGIN; <sql>`, then idle in transaction for `hold`, then `COMMIT`.
    Idle,
}

/// The `[blocker]` section of the workload; `duration` is the run's, which `at` must precede
/// (its end is checked apart, by [`check_blocker_ends`]).
pub(super) fn parse_blocker(
    source: &str,
    file: &BlockerFile,
    duration: Duration,
) -> Result<BlockerConfig, Error> {
    let at = parse_duration(&format!("{source}: [blocker] at"), &file.at)?;
    let hold = parse_duration(&format!("{source}: [blocker] hold"), &file.hold)?;
    check_within_run(source, "[blocker] at", at, duration)?;
    let kind = match file.kind.as_deref().unwrap_or("report") {
        "report" => BlockerKind::Report,
        "writer" => BlockerKind::Writer,
        "idle" => BlockerKind::Idle,
        other => {
            return Err(Error::bad_input(format!(
                "{source}: [blocker] kind = \"{other}\"; use \"report\", \"writer\" or \"idle\""
            )));
        }
    };
    Ok(BlockerConfig {
        kind,
        at,
        hold,
        sql: file.sql.clone(),
    })
}

/// Refuses a blocker that is still holding its lock when the run ends: its
/// end (start plus hold) must come before the end of the run, or the run would
/// stop in the middle of the outage it exists to measure.
pub(super) fn check_blocker_ends(
    source: &str,
    blocker: &BlockerConfig,
    duration: Duration,
) -> Result<(), Error> {
    let end = blocker.at + blocker.hold;
    if end < duration {
        return Ok(());
    }
    Err(Error::bad_input(format!(
        "{source}: [blocker] starts at {} s and holds {} s, so it ends at {} s, \
         after the run's {} s; use --duration {}s or more, or shorten [blocker] hold",
        blocker.at.as_secs_f64(),
        blocker.hold.as_secs_f64(),
        end.as_secs_f64(),
        duration.as_secs_f64(),
        end.as_secs() + 1
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocker(at_ms: u64, hold_ms: u64) -> BlockerConfig {
        BlockerConfig {
            kind: BlockerKind::Report,
            at: Duration::from_millis(at_ms),
            hold: Duration::from_millis(hold_ms),
            sql: String::new(),
        }
    }

    #[test]
    fn a_blocker_must_end_before_the_run() {
        let message = check_blocker_ends("w", &blocker(4000, 12_000), Duration::from_secs(10))
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            "w: [blocker] starts at 4 s and holds 12 s, so it ends at 16 s, after the run's 10 s; \
             use --duration 17s or more, or shorten [blocker] hold"
        );
        assert!(check_blocker_ends("w", &blocker(4000, 12_000), Duration::from_secs(16)).is_err());
        assert!(check_blocker_ends("w", &blocker(4000, 12_000), Duration::from_secs(17)).is_ok());
        let message = check_blocker_ends("w", &blocker(1500, 5000), Duration::from_secs(4))
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("starts at 1.5 s and holds 5 s, so it ends at 6.5 s, after the run's 4 s; use --duration 7s"),
            "{message}"
        );
        assert!(check_blocker_ends("w", &blocker(1500, 5000), Duration::from_secs(7)).is_ok());
    }
}
