//! The `[ddl]` section: the migration whose effect on live traffic the run
//! measures. A compare without one has nothing to compare, so it is required.

use std::time::Duration;

use crate::error::Error;
use crate::workload::DdlFile;

use super::duration::{check_within_run, parse_duration};

/// The migration: steps run one after another, each on its own.
#[derive(Debug, Clone)]
pub struct DdlConfig {
    pub at: Duration,
    pub steps: Vec<String>,
}

/// The `[ddl]` section of the workload, which every run but `--load-only` needs;
/// `duration` is the run's, which `at` must precede.
pub(super) fn parse_ddl(
    source: &str,
    file: Option<&DdlFile>,
    duration: Duration,
) -> Result<DdlConfig, Error> {
    let Some(file) = file else {
        return Err(Error::bad_input(format!(
            "{source}: no [ddl] section, so there is nothing to compare; \
             add [ddl] at = \"6s\" and sql = \"...\", or use `run --load-only`"
        )));
    };
    let at = parse_duration(&format!("{source}: [ddl] at"), &file.at)?;
    check_within_run(source, "[ddl] at", at, duration)?;
    let steps = match (&file.sql, &file.steps) {
        (Some(sql), None) => vec![sql.clone()],
        (None, Some(steps)) if !steps.is_empty() => steps.clone(),
        _ => {
            return Err(Error::bad_input(format!(
                "{source}: [ddl] needs exactly one of sql = \"...\" or steps = [\"...\", \"...\"]"
            )));
        }
    };
    Ok(DdlConfig { at, steps })
}
