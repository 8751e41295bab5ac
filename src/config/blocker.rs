//! The `[blocker]` section: the session that holds a lock while the migration
//! runs, the cause of the lock queue the harness reproduces. The `--blocker*`
//! flags override it key by key; `--blocker SQL` alone makes one where the
//! workload has none, with the reference experiment's timing.

use std::time::Duration;

use crate::cli::WorkloadArgs;
use crate::error::Error;
use crate::workload::BlockerFile;

use super::duration::{check_within_run, parse_duration};

/// `at` of a blocker made from flags: the reference experiment's 4 s.
const DEFAULT_AT: &str = "4s";
/// `hold` of a blocker made from flags: the reference experiment's 12 s.
const DEFAULT_HOLD: &str = "12s";

/// The session that holds a lock (a long report, a writer, a forgotten transaction).
#[derive(Debug, Clone, PartialEq)]
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

impl BlockerKind {
    /// The name in a workload file and in `--blocker-kind`: `report`, `writer`, `idle`.
    pub fn name(self) -> &'static str {
        match self {
            BlockerKind::Report => "report",
            BlockerKind::Writer => "writer",
            BlockerKind::Idle => "idle",
        }
    }
}

/// The `[blocker]` section of the workload (`file`) with the flags over it;
/// `None` without either, or with `--no-blocker`. `duration` is the run's,
/// which `at` must precede.
pub(super) fn parse_blocker(
    source: &str,
    file: Option<&BlockerFile>,
    flags: &WorkloadArgs,
    duration: Duration,
) -> Result<Option<BlockerConfig>, Error> {
    if flags.no_blocker {
        return Ok(None);
    }
    let sql = match (&flags.blocker, file) {
        (Some(sql), _) => sql.clone(),
        (None, Some(file)) => file.sql.clone(),
        (None, None) => return no_blocker_to_change(source, flags),
    };
    let at_from_file = file.map(|file| &file.at);
    let (at, at_key) = flag_or_file(source, &flags.blocker_at, "at", at_from_file, DEFAULT_AT)?;
    let hold_from_file = file.map(|file| &file.hold);
    let (hold, _) = flag_or_file(
        source,
        &flags.blocker_hold,
        "hold",
        hold_from_file,
        DEFAULT_HOLD,
    )?;
    check_within_run(source, &at_key, at, duration)?;
    let kind_text = flags
        .blocker_kind
        .as_deref()
        .or(file.and_then(|file| file.kind.as_deref()))
        .unwrap_or("report");
    let kind = match kind_text {
        "report" => BlockerKind::Report,
        "writer" => BlockerKind::Writer,
        "idle" => BlockerKind::Idle,
        other => {
            return Err(Error::bad_input(format!(
                "{source}: [blocker] kind = \"{other}\"; use \"report\", \"writer\" or \"idle\""
            )));
        }
    };
    Ok(Some(BlockerConfig {
        kind,
        at,
        hold,
        sql,
    }))
}

/// The duration `--blocker-<name>` gives, else `[blocker] <name>`, else `default`,
/// with the flag or key it came from (for messages).
fn flag_or_file(
    source: &str,
    flag: &Option<String>,
    name: &str,
    from_file: Option<&String>,
    default: &str,
) -> Result<(Duration, String), Error> {
    let flag_name = format!("--blocker-{name}");
    match (flag, from_file) {
        (Some(text), _) => Ok((parse_duration(&flag_name, text)?, flag_name)),
        (None, Some(text)) => {
            let key = format!("[blocker] {name}");
            let duration = parse_duration(&format!("{source}: {key}"), text)?;
            Ok((duration, key))
        }
        (None, None) => Ok((parse_duration(&flag_name, default)?, flag_name)),
    }
}

/// No blocker anywhere: fine, unless a flag asks to change one.
fn no_blocker_to_change(
    source: &str,
    flags: &WorkloadArgs,
) -> Result<Option<BlockerConfig>, Error> {
    let given = [
        ("--blocker-at", flags.blocker_at.is_some()),
        ("--blocker-hold", flags.blocker_hold.is_some()),
        ("--blocker-kind", flags.blocker_kind.is_some()),
    ];
    match given.iter().find(|(_, present)| *present) {
        Some((flag, _)) => Err(Error::bad_input(format!(
            "{flag}: {source} has no [blocker] to change; add --blocker SQL, \
             e.g. --blocker \"SELECT count(*) FROM orders\""
        ))),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> BlockerFile {
        BlockerFile {
            kind: None,
            at: "2s".into(),
            hold: "5s".into(),
            sql: "SELECT count(*) FROM orders".into(),
        }
    }

    const RUN: Duration = Duration::from_secs(24);

    #[test]
    fn flags_override_the_file_key_by_key() {
        let flags = WorkloadArgs {
            blocker_hold: Some("8s".into()),
            blocker_kind: Some("idle".into()),
            ..WorkloadArgs::default()
        };
        let blocker = parse_blocker("w", Some(&file()), &flags, RUN)
            .unwrap()
            .unwrap();
        assert_eq!(blocker.at, Duration::from_secs(2));
        assert_eq!(blocker.hold, Duration::from_secs(8));
        assert_eq!(blocker.kind, BlockerKind::Idle);
        assert_eq!(blocker.sql, "SELECT count(*) FROM orders");
        let off = WorkloadArgs {
            no_blocker: true,
            ..WorkloadArgs::default()
        };
        assert!(
            parse_blocker("w", Some(&file()), &off, RUN)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn blocker_sql_alone_makes_the_reference_blocker() {
        let flags = WorkloadArgs {
            blocker: Some("SELECT 1".into()),
            ..WorkloadArgs::default()
        };
        let blocker = parse_blocker("w", None, &flags, RUN).unwrap().unwrap();
        assert_eq!(blocker.at, Duration::from_secs(4));
        assert_eq!(blocker.hold, Duration::from_secs(12));
        assert_eq!(blocker.kind, BlockerKind::Report);
        assert!(
            parse_blocker("w", None, &WorkloadArgs::default(), RUN)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_timing_flag_without_a_blocker_says_to_add_one() {
        let flags = WorkloadArgs {
            blocker_at: Some("3s".into()),
            ..WorkloadArgs::default()
        };
        let message = parse_blocker("workload from flags", None, &flags, RUN)
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("--blocker-at: workload from flags has no [blocker]"),
            "{message}"
        );
        assert!(message.contains("add --blocker SQL"), "{message}");
        let flags = WorkloadArgs {
            blocker: Some("SELECT 1".into()),
            blocker_at: Some("30s".into()),
            ..WorkloadArgs::default()
        };
        let message = parse_blocker("w", None, &flags, RUN)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("--blocker-at = \"30s\" is not before"),
            "{message}"
        );
    }
}
