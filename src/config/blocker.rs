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

/// The `[blocker]` section of the workload; `duration` is the run's, which `at` must precede.
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
