//! The `[blocker]` section: the session that holds a lock while the migration
//! runs, the cause of the lock queue the harness reproduces. The `--blocker*`
//! flags override it key by key; `--blocker SQL` alone makes one where the
//! workload has none, with the reference experiment's timing.

use std::time::Duration;

pub use crate::role::BlockerKind;

use crate::choices::from_word;
use crate::cli::WorkloadArgs;
use crate::error::Error;
use crate::workload::BlockerFile;

use crate::duration::parse_duration;

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
    /// Where `sql` came from, for messages: `--blocker` or `workload w: [blocker] sql`.
    pub source: String,
}

/// The `[blocker]` section of the workload (`file`) with the flags over it;
/// `None` without either, or with `--no-blocker`. `duration` is the run's,
/// which `at` must precede (its end is checked apart, by [`check_blocker_ends`]).
pub(super) fn parse_blocker(
    source: &str,
    file: Option<&BlockerFile>,
    flags: &WorkloadArgs,
    duration: Duration,
) -> Result<Option<BlockerConfig>, Error> {
    if flags.no_blocker {
        return Ok(None);
    }
    let (sql, sql_source) = match (&flags.blocker, file) {
        (Some(sql), _) => (sql.clone(), "--blocker".to_string()),
        (None, Some(file)) => (file.sql.clone(), format!("{source}: [blocker] sql")),
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
    let kind = match (
        flags.blocker_kind,
        file.and_then(|file| file.kind.as_deref()),
    ) {
        (Some(kind), _) => kind,
        (None, None) => BlockerKind::Report,
        (None, Some(name)) => from_word(&format!("{source}: [blocker] kind"), name)?,
    };
    Ok(Some(BlockerConfig {
        kind,
        at,
        hold,
        sql,
        source: sql_source,
    }))
}

/// The duration `--blocker-<name>` gives, else `[blocker] <name>`, else `default`,
/// with the flag or key it came from (for messages).
fn flag_or_file(
    source: &str,
    flag: &Option<Duration>,
    name: &str,
    from_file: Option<&String>,
    default: &str,
) -> Result<(Duration, String), Error> {
    let flag_name = format!("--blocker-{name}");
    match (flag, from_file) {
        (Some(duration), _) => Ok((*duration, flag_name)),
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

/// Refuses a start time (`[blocker] at`, `[ddl] at`) at or after the end of the run.
pub(super) fn check_within_run(
    source: &str,
    key: &str,
    at: Duration,
    duration: Duration,
) -> Result<(), Error> {
    if at >= duration {
        return Err(Error::bad_input(format!(
            "{source}: {key} = \"{}\" is not before the end of the run ({}); \
             move it earlier or lengthen the run with --duration",
            humantime::format_duration(at),
            humantime::format_duration(duration)
        )));
    }
    Ok(())
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
            on: None,
        }
    }

    const RUN: Duration = Duration::from_secs(24);

    #[test]
    fn flags_override_the_file_key_by_key() {
        let flags = WorkloadArgs {
            blocker_hold: Some(Duration::from_secs(8)),
            blocker_kind: Some(BlockerKind::Idle),
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
            blocker_at: Some(Duration::from_secs(3)),
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
            blocker_at: Some(Duration::from_secs(30)),
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

    fn blocker(at_ms: u64, hold_ms: u64) -> BlockerConfig {
        BlockerConfig {
            kind: BlockerKind::Report,
            at: Duration::from_millis(at_ms),
            hold: Duration::from_millis(hold_ms),
            sql: String::new(),
            source: "--blocker".to_string(),
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
