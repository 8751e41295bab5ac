//! The workload file model (TOML) and the workloads bundled into the binary.
//!
//! This is the file as written: strings for durations, optional fields.
//! `config/` validates it into a `Config` that later stages trust. The same
//! types are serialized back as a results folder's `workload.toml`
//! (`export/workload_toml.rs`), so what is saved is exactly what loads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadFile {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Schema and data, run once per target.
    pub setup: String,
    /// Undoes the DDL between strategies.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reset: String,
    pub load: LoadFile,
    pub blocker: Option<BlockerFile>,
    pub ddl: Option<DdlFile>,
    #[serde(default)]
    pub strategies: Vec<StrategyFile>,
    /// `[expect.<strategy>]`: CI bounds checked after the run (see `expect.rs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub expect: BTreeMap<String, crate::expect::ExpectFile>,
}

/// `[load]`: the client workers.
#[derive(Debug, Clone, Deserialize, Serialize)]
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
    /// Script variables, as `--set name=value` (the flags win over these).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, String>,
}

/// `[[load.scripts]]`: one pgbench script, inline (`sql`) or from a file (`file`).
#[derive(Debug, Clone, Deserialize, Serialize)]
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
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BlockerFile {
    pub kind: Option<String>,
    pub at: String,
    pub hold: String,
    pub sql: String,
}

/// `[ddl]`: the migration, one statement (`sql`) or several run one after
/// another, each on its own (`steps`; e.g. `ADD ... NOT VALID`, then `VALIDATE`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DdlFile {
    pub at: String,
    pub sql: Option<String>,
    pub steps: Option<Vec<String>>,
}

/// `[[strategies]]`: how the DDL is run. Which fields apply depends on `kind`;
/// without `kind`, `name` must be a preset (`naive`, `retry`, `gitlab`, ...).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
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
#[derive(Debug, Clone, Deserialize, Serialize)]
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

/// The name of a workload made from flags alone.
pub const FLAGS_WORKLOAD: &str = "flags";

/// The workload a command starts from: the one named by the argument; without
/// one, an empty workload when the load scripts come from flags (`-f`), else
/// [`DEFAULT_WORKLOAD`].
pub fn choose(
    workload_arg: Option<&str>,
    scripts_from_flags: bool,
) -> Result<LoadedWorkload, Error> {
    match workload_arg {
        Some(name_or_path) => load(name_or_path),
        None if scripts_from_flags => Ok(from_flags()),
        None => load(DEFAULT_WORKLOAD),
    }
}

/// The empty workload that flags fill in: no setup (the scripts use the target's
/// tables), no scripts, blocker or migration yet, and the reference experiment's
/// 4 clients for 24 s comparing `naive` and `retry`.
pub fn from_flags() -> LoadedWorkload {
    let preset = |name: &str| StrategyFile {
        name: name.to_string(),
        ..StrategyFile::default()
    };
    LoadedWorkload {
        file: WorkloadFile {
            name: FLAGS_WORKLOAD.to_string(),
            description: "a workload from flags".to_string(),
            setup: String::new(),
            reset: String::new(),
            load: LoadFile {
                clients: 4,
                duration: "24s".to_string(),
                scripts: Vec::new(),
                rate: None,
                client_timeout: None,
                latency_limit: None,
                variables: BTreeMap::new(),
            },
            blocker: None,
            ddl: None,
            strategies: vec![preset("naive"), preset("retry")],
            expect: BTreeMap::new(),
        },
        source: "workload from flags".to_string(),
        folder: None,
    }
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
    let text = std::fs::read_to_string(path).map_err(|err| {
        Error::bad_input(format!(
            "workload {}: cannot read it: {err}",
            path.display()
        ))
    })?;
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

fn parse(source: &str, text: &str) -> Result<WorkloadFile, Error> {
    toml::from_str(text).map_err(|err| {
        let detail = err.to_string();
        Error::bad_input(format!("{source}: {}", detail.trim_end()))
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
    fn an_unknown_workload_names_the_bundled_ones() {
        let message = load("no-such-workload").unwrap_err().to_string();
        assert!(message.contains("add-column"), "{message}");
        assert!(message.contains("stallbench workloads"), "{message}");
    }
}
