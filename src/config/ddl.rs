//! The `[ddl]` section: the migration whose effect on live traffic the run
//! measures. A compare without one has nothing to compare, so it is required.
//! `--ddl` / `--ddl-file` replace its statements and `--ddl-at` its start;
//! a migration from flags alone starts at the reference experiment's 6 s.

use std::path::Path;
use std::time::Duration;

use crate::cli::WorkloadArgs;
use crate::error::Error;
use crate::workload::DdlFile;

use super::blocker::check_within_run;
use crate::duration::parse_duration;
use crate::sql_split::split_statements;

/// `at` of a migration made from flags: the reference experiment's 6 s.
const DEFAULT_AT: &str = "6s";

/// The migration: steps run one after another, each on its own.
#[derive(Debug, Clone, PartialEq)]
pub struct DdlConfig {
    pub at: Duration,
    pub steps: Vec<String>,
    /// Where `steps` came from, for messages: `--ddl`, `--ddl-file PATH`,
    /// `workload w: [ddl] sql` or `workload w: [ddl] steps`.
    pub source: String,
}

/// The `[ddl]` section of the workload (`file`) with the flags over it, which
/// every run but `--load-only` needs; `duration` is the run's, which `at` must precede.
pub(super) fn parse_ddl(
    source: &str,
    file: Option<&DdlFile>,
    flags: &WorkloadArgs,
    duration: Duration,
) -> Result<DdlConfig, Error> {
    let (steps, steps_source) = match (flag_steps(flags)?, file) {
        (Some(steps), _) => (steps, flag_source(flags)),
        (None, Some(file)) => {
            let key = if file.sql.is_some() { "sql" } else { "steps" };
            (file_steps(source, file)?, format!("{source}: [ddl] {key}"))
        }
        (None, None) => {
            return Err(Error::bad_input(format!(
                "{source}: no [ddl] section, so there is nothing to compare; \
                 add [ddl] at = \"6s\" and sql = \"...\" (or --ddl SQL, --ddl-file FILE), \
                 or use `run --load-only`"
            )));
        }
    };
    let (at_key, at) = match (&flags.ddl_at, file) {
        (Some(at), _) => ("--ddl-at", *at),
        (None, Some(file)) => (
            "[ddl] at",
            parse_duration(&format!("{source}: [ddl] at"), &file.at)?,
        ),
        (None, None) => ("--ddl-at", parse_duration("--ddl-at", DEFAULT_AT)?),
    };
    check_within_run(source, at_key, at, duration)?;
    Ok(DdlConfig {
        at,
        steps,
        source: steps_source,
    })
}

/// The flag the migration's steps came from: `--ddl-file PATH` or `--ddl`.
fn flag_source(flags: &WorkloadArgs) -> String {
    match &flags.ddl_file {
        Some(path) => format!("--ddl-file {}", path.display()),
        None => "--ddl".to_string(),
    }
}

/// `sql` or `steps` of `[ddl]`, exactly one of them.
fn file_steps(source: &str, file: &DdlFile) -> Result<Vec<String>, Error> {
    match (&file.sql, &file.steps) {
        (Some(sql), None) => Ok(vec![sql.clone()]),
        (None, Some(steps)) if !steps.is_empty() => Ok(steps.clone()),
        _ => Err(Error::bad_input(format!(
            "{source}: [ddl] needs exactly one of sql = \"...\" or steps = [\"...\", \"...\"]"
        ))),
    }
}

/// The steps of `--ddl` (one each) or `--ddl-file` (one per statement); `None` without either.
fn flag_steps(flags: &WorkloadArgs) -> Result<Option<Vec<String>>, Error> {
    if let Some(path) = &flags.ddl_file {
        return read_ddl_file(path).map(Some);
    }
    if flags.ddl.is_empty() {
        return Ok(None);
    }
    if flags.ddl.iter().any(|step| step.trim().is_empty()) {
        return Err(Error::bad_input(
            "--ddl \"\": an empty migration step; give a statement, e.g. \
             --ddl \"ALTER TABLE orders ADD COLUMN note text\"",
        ));
    }
    Ok(Some(flags.ddl.clone()))
}

fn read_ddl_file(path: &Path) -> Result<Vec<String>, Error> {
    let text = std::fs::read_to_string(path).map_err(|err| {
        Error::bad_input(format!(
            "--ddl-file {}: cannot read it: {err}",
            path.display()
        ))
    })?;
    let steps = split_statements(&text);
    if steps.is_empty() {
        return Err(Error::bad_input(format!(
            "--ddl-file {}: no SQL statement in it; write the migration, e.g. \
             ALTER TABLE orders ADD COLUMN note text;",
            path.display()
        )));
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: Duration = Duration::from_secs(24);

    #[test]
    fn a_ddl_file_gives_one_step_per_statement_at_the_default_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("migrate.sql");
        std::fs::write(
            &path,
            "ALTER TABLE a ADD b int;\nALTER TABLE a ADD c int;\n",
        )
        .unwrap();
        let flags = WorkloadArgs {
            ddl_file: Some(path),
            ..WorkloadArgs::default()
        };
        let ddl = parse_ddl("w", None, &flags, RUN).unwrap();
        assert_eq!(
            ddl.steps,
            ["ALTER TABLE a ADD b int", "ALTER TABLE a ADD c int"]
        );
        assert_eq!(ddl.at, Duration::from_secs(6));
    }

    #[test]
    fn ddl_flags_replace_the_steps_and_keep_the_file_start() {
        let file = DdlFile {
            at: "3s".into(),
            sql: Some("ALTER TABLE a ADD b int".into()),
            steps: None,
        };
        let flags = WorkloadArgs {
            ddl: vec!["SELECT 1".into(), "SELECT 2".into()],
            ..WorkloadArgs::default()
        };
        let ddl = parse_ddl("w", Some(&file), &flags, RUN).unwrap();
        assert_eq!(ddl.steps, ["SELECT 1", "SELECT 2"]);
        assert_eq!(ddl.at, Duration::from_secs(3));
        let flags = WorkloadArgs {
            ddl_at: Some(Duration::from_secs(30)),
            ..WorkloadArgs::default()
        };
        let message = parse_ddl("w", Some(&file), &flags, RUN)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("--ddl-at = \"30s\" is not before"),
            "{message}"
        );
    }

    #[test]
    fn an_empty_ddl_file_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.sql");
        std::fs::write(&path, "-- nothing yet\n;\n").unwrap();
        let flags = WorkloadArgs {
            ddl_file: Some(path.clone()),
            ..WorkloadArgs::default()
        };
        let message = parse_ddl("w", None, &flags, RUN).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!("--ddl-file {}: no SQL statement", path.display())),
            "{message}"
        );
    }
}
