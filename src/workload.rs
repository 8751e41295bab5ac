//! The workload file model (TOML) and the workloads bundled into the binary.
//!
//! This is the file as written: strings for durations, optional fields.
//! `config.rs` validates it into a `Config` that later stages trust.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::Error;

/// Workloads compiled into the binary, so `compare` works from any folder.
pub const BUNDLED: &[(&str, &str)] = &[
    ("add-column", include_str!("../workloads/add-column.toml")),
    (
        "create-index",
        include_str!("../workloads/create-index.toml"),
    ),
    (
        "add-foreign-key",
        include_str!("../workloads/add-foreign-key.toml"),
    ),
    (
        "set-not-null",
        include_str!("../workloads/set-not-null.toml"),
    ),
    (
        "idle-in-transaction",
        include_str!("../workloads/idle-in-transaction.toml"),
    ),
    (
        "lock-upgrade-deadlock",
        include_str!("../workloads/lock-upgrade-deadlock.toml"),
    ),
];

/// The default workload of `compare` and `run`.
pub const DEFAULT_WORKLOAD: &str = "add-column";

/// A workload file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadFile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Schema and data, run once per target.
    pub setup: String,
    /// Undoes the DDL between strategies.
    #[serde(default)]
    pub reset: String,
    pub load: LoadFile,
    pub blocker: Option<BlockerFile>,
    pub ddl: Option<DdlFile>,
    #[serde(default)]
    pub strategies: Vec<StrategyFile>,
    /// `[expect.<strategy>]`: CI bounds checked after the run (see `expect.rs`).
    #[serde(default)]
    pub expect: std::collections::BTreeMap<String, crate::expect::ExpectFile>,
}

/// `[load]`: the client workers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadFile {
    pub clients: u32,
    pub duration: String,
    pub scripts: Vec<ScriptFile>,
    /// Open loop: transactions per second over all clients (`--rate`).
    pub rate: Option<f64>,
    /// A transaction not finished within this fails as `timeout` (`--client-timeout`).
    pub client_timeout: Option<String>,
    /// Open loop: skip transactions this late (`--latency-limit`).
    pub latency_limit: Option<String>,
}

/// `[[load.scripts]]`: one pgbench script, inline (`sql`) or from a file (`file`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptFile {
    pub name: Option<String>,
    pub sql: Option<String>,
    /// Path relative to the workload file's folder.
    pub file: Option<PathBuf>,
    /// Relative weight, as pgbench `-f file@N`.
    #[serde(default = "default_weight")]
    pub weight: u32,
}

fn default_weight() -> u32 {
    1
}

/// `[blocker]`: the session that holds a lock. `kind = "report"` (default) and
/// `"writer"` run `BEGIN; <sql>; SELECT pg_sleep(<hold>); COMMIT`; `"idle"` runs
/// `BEGIN; <sql>` and leaves the transaction idle for `hold`, then commits.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockerFile {
    pub kind: Option<String>,
    pub at: String,
    pub hold: String,
    pub sql: String,
}

/// `[ddl]`: the migration, one statement (`sql`) or several run one after
/// another, each on its own (`steps`; e.g. `ADD ... NOT VALID`, then `VALIDATE`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DdlFile {
    pub at: String,
    pub sql: Option<String>,
    pub steps: Option<Vec<String>>,
}

/// `[[strategies]]`: how the DDL is run. Which fields apply depends on `kind`;
/// without `kind`, `name` must be a preset (`naive`, `retry`, `gitlab`, ...).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrategyFile {
    pub name: String,
    /// `plain`, `lock-timeout-retry`, `kill-blockers` or `wait-for-idle`.
    pub kind: Option<String>,
    pub lock_timeout: Option<String>,
    pub statement_timeout: Option<String>,
    pub max_tries: Option<u32>,
    pub backoff: Option<BackoffFile>,
    /// An explicit list of `["lock_timeout", "sleep after"]` pairs, one per try.
    pub schedule: Option<Vec<(String, String)>>,
    /// Each try as `BEGIN; SET LOCAL lock_timeout ...; <ddl>; COMMIT`.
    pub set_local: Option<bool>,
    /// `kill-blockers`: how long to wait before terminating the DDL's blockers.
    pub grace: Option<String>,
    /// `wait-for-idle`: the transaction age that counts as "not idle".
    pub older_than: Option<String>,
    /// This strategy's own migration steps, instead of `[ddl]`'s (e.g. `CREATE INDEX CONCURRENTLY`).
    pub ddl: Option<Vec<String>>,
    /// Settings for every session of this strategy's run, e.g.
    /// `{ idle_in_transaction_session_timeout = "2s" }`.
    pub settings: Option<std::collections::BTreeMap<String, String>>,
}

/// `backoff = { kind = "linear", step = "1s", cap = "5s" }` or
/// `{ kind = "exponential", base = "100ms", cap = "10s", jitter = "full" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackoffFile {
    pub kind: String,
    pub step: Option<String>,
    pub base: Option<String>,
    pub cap: Option<String>,
    /// `none` (default), `full` or `add-up-to-50%`.
    pub jitter: Option<String>,
}

/// A workload as loaded: the parsed file and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedWorkload {
    pub file: WorkloadFile,
    /// How errors name it: `add-column (bundled)` or the path given.
    pub source: String,
    /// Folder that relative script paths start from; `None` for bundled workloads.
    pub folder: Option<PathBuf>,
}

/// Loads a workload by bundled name or by path to a `.toml` file.
pub fn load(name_or_path: &str) -> Result<LoadedWorkload, Error> {
    if let Some((name, text)) = BUNDLED.iter().find(|(name, _)| *name == name_or_path) {
        let source = format!("workload {name} (bundled)");
        return Ok(LoadedWorkload {
            file: parse(&source, text)?,
            source,
            folder: None,
        });
    }
    let path = Path::new(name_or_path);
    if !path.exists() {
        let bundled: Vec<&str> = BUNDLED.iter().map(|(name, _)| *name).collect();
        return Err(Error::bad_input(format!(
            "unknown workload {name_or_path:?}: not a bundled workload ({}) and no such file; \
             run `stallbench workloads` to list them or give a path to a .toml file",
            bundled.join(", ")
        )));
    }
    let text = read_text_file(path)
        .map_err(|problem| Error::bad_input(format!("workload {}: {problem}", path.display())))?;
    let source = format!("workload {}", path.display());
    Ok(LoadedWorkload {
        file: parse(&source, &text)?,
        source,
        folder: Some(
            path.parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
        ),
    })
}

/// The largest workload or script file read: far above any real one, small
/// enough that a wrong path (a log, a dump) fails at once instead of filling memory.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// Reads a workload or script file as text. Refuses what is not a regular file
/// (a folder, `/dev/zero`, a pipe that may never end) and files over
/// `MAX_FILE_BYTES`; the error is the problem and the fix, for the caller to prefix.
pub fn read_text_file(path: &Path) -> Result<String, String> {
    let metadata = std::fs::metadata(path).map_err(|err| format!("cannot read it: {err}"))?;
    if !metadata.is_file() {
        return Err("not a regular file; give the path of a text file".to_string());
    }
    let too_large = || {
        format!(
            "larger than {} MiB; give the path of the workload or script itself",
            MAX_FILE_BYTES >> 20
        )
    };
    if metadata.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text))
        .map_err(|err| format!("cannot read it: {err}"))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    Ok(text)
}

/// Parses the TOML; an error is one line naming the place, e.g.
/// `workload x.toml line 3, column 1: unknown field `colour`, expected ...`.
fn parse(source: &str, text: &str) -> Result<WorkloadFile, Error> {
    toml::from_str(text).map_err(|err| {
        let place = match err.span() {
            Some(span) => {
                let before = &text.as_bytes()[..span.start.min(text.len())];
                let line = 1 + before.iter().filter(|byte| **byte == b'\n').count();
                let line_start = before
                    .iter()
                    .rposition(|byte| *byte == b'\n')
                    .map_or(0, |at| at + 1);
                let column = 1 + String::from_utf8_lossy(&before[line_start..])
                    .chars()
                    .count();
                format!(" line {line}, column {column}")
            }
            None => String::new(),
        };
        let problem = err.message().trim().replace(['\n', '\r'], " ");
        Error::bad_input(format!(
            "{source}{place}: {problem}; the README section \"Workload files\" shows the format"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_workload_parses() {
        for (name, _) in BUNDLED {
            let loaded = load(name).unwrap();
            assert_eq!(&loaded.file.name, name);
            assert!(loaded.folder.is_none());
        }
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_name() {
        let err = parse(
            "workload x.toml",
            "name = 'x'\nsetup = ''\ncolour = 'red'\n[load]\nclients = 1\nduration = '1s'\nscripts = []\n",
        )
        .unwrap_err();
        let message = err.to_string();
        assert!(message.contains("workload x.toml"), "{message}");
        assert!(message.contains("colour"), "{message}");
    }

    #[test]
    fn a_syntax_error_is_one_line_with_its_place() {
        let message = parse("workload x.toml", "name = 'x'\n[load\n")
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("workload x.toml line 2, column 6: "),
            "{message}"
        );
        assert!(!message.contains('\n'), "{message}");
    }

    #[test]
    fn only_regular_files_of_sane_size_are_read() {
        let message = load("/dev/zero").unwrap_err().to_string();
        assert_eq!(
            message,
            "workload /dev/zero: not a regular file; give the path of a text file"
        );
        let folder = tempfile::tempdir().unwrap();
        let message = load(folder.path().to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(message.ends_with("not a regular file; give the path of a text file"));
        let huge = folder.path().join("huge.toml");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(MAX_FILE_BYTES + 1)
            .unwrap();
        let message = read_text_file(&huge).unwrap_err();
        assert!(message.starts_with("larger than 16 MiB"), "{message}");
    }

    #[test]
    fn an_unknown_workload_names_the_bundled_ones() {
        let message = load("no-such-workload").unwrap_err().to_string();
        assert!(message.contains("add-column"), "{message}");
        assert!(message.contains("stallbench workloads"), "{message}");
    }
}
