//! The workload file model (TOML) and the workloads bundled into the binary.
//!
//! This is the file as written: strings for durations, optional fields.
//! `config/` validates it into a `Config` that later stages trust. The same
//! types are serialized back as a results folder's `workload.toml`
//! (`export/workload_toml.rs`), so what is saved is exactly what loads.

use std::collections::BTreeMap;
use std::io::Read;
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
    ("pgbench", include_str!("../workloads/pgbench.toml")),
    ("hot-row", include_str!("../workloads/hot-row.toml")),
    (
        "transfer-deadlock",
        include_str!("../workloads/transfer-deadlock.toml"),
    ),
    ("write-skew", include_str!("../workloads/write-skew.toml")),
    ("job-queue", include_str!("../workloads/job-queue.toml")),
    (
        "replica-report",
        include_str!("../workloads/replica-report.toml"),
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
    /// `[[variants]]`: variants of the load compared in one run, as strategies are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<VariantFile>,
    /// `[[invariants]]`: SQL checked on the workload's data after each run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<InvariantFile>,
    /// `[expect.<strategy>]`: CI bounds checked after the run (see `expect.rs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub expect: BTreeMap<String, crate::expect::bounds::ExpectFile>,
    /// `[sweep]`: one setting varied across runs (`--sweep` wins over it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepFile>,
    /// `[replica]`: a streaming hot standby beside the throwaway server (`--replica`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<ReplicaFile>,
}

/// `[replica]`: a hot standby of the throwaway server, and the standby's
/// settings that decide what its replay does behind a long report.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaFile {
    /// How long replay waits for a conflicting query before cancelling it
    /// (PostgreSQL's default 30s; `-1` waits forever).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_standby_streaming_delay: Option<String>,
    /// Whether the standby tells the primary which rows its queries still need.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_standby_feedback: Option<bool>,
}

/// `[sweep]`: `name = "retry.lock_timeout"`, `values = ["100ms", "500ms", "2s"]`,
/// as `--sweep retry.lock_timeout=100ms,500ms,2s` writes it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    /// The setting: `<strategy>.lock_timeout`, `blocker.hold`, `clients`, `rate` or a script variable.
    pub name: String,
    /// Its values, in the order they run, as the flag or key they stand for takes them.
    pub values: Vec<String>,
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
    /// Tries of a transaction that failed with 40001 or 40P01 (`--max-tries`); 1 if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tries: Option<u32>,
    /// Retry lock timeouts (55P03) too (`--retry-lock-timeouts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_lock_timeouts: Option<bool>,
    /// Script variables, as `--set name=value` (the flags win over these).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, String>,
    /// `[load.pool]`: serve the load through an application pool (`--pool-size`
    /// and the pool flags win over these keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolFile>,
    /// How many times each strategy runs, interleaved (`--repeat` wins); 1 if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// How statements are sent: `simple`, `extended` or `prepared` (`--protocol`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The servers the clients run on: `primary` (the default), `replica`, or
    /// `both` (`clients` clients on each) (`--load-on`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
}

/// `[load.pool]`: the application pool, as the pool flags set it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PoolFile {
    /// Connections (`--pool-size`).
    pub size: u32,
    /// The wait for a connection (`--pool-timeout`).
    pub timeout: Option<String>,
    /// Opening a connection (`--pool-connect-timeout`).
    pub connect_timeout: Option<String>,
    /// `fast` or `verified` (`--pool-recycling`).
    pub recycling: Option<String>,
    /// The concurrency limit (`--max-in-flight`).
    pub max_in_flight: Option<u32>,
}

/// `[[load.scripts]]`: one pgbench script, inline (`sql`), from a file
/// (`file`) or one of pgbench's built-in scripts (`builtin`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptFile {
    pub name: Option<String>,
    pub sql: Option<String>,
    /// Path relative to the workload file's folder.
    pub file: Option<PathBuf>,
    /// A built-in script of pgbench: `tpcb-like`, `simple-update` or `select-only`.
    pub builtin: Option<String>,
    /// Relative weight, as pgbench `-f file@N`.
    #[serde(default = "default_weight")]
    pub weight: u32,
}

fn default_weight() -> u32 {
    1
}

/// `[blocker]`: the session that holds a lock. `kind = "report"` (default) and
/// `"writer"` run `BEGIN; <sql>;`, a sleep of `<hold>` on the server, `COMMIT`; `"idle"` runs
/// `BEGIN; <sql>` and leaves the transaction idle for `hold`, then commits.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BlockerFile {
    pub kind: Option<String>,
    pub at: String,
    pub hold: String,
    pub sql: String,
    /// The server it holds its transaction on: `primary` (the default) or
    /// `replica` (`--blocker-on`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
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
    /// `plain`, `lock-timeout-retry`, `kill-blockers`, `kill-lock-holders`,
    /// `wait-for-idle` or `replica-aware`.
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
    /// `wait-for-idle` and `replica-aware`: the transaction age that counts as "not idle";
    /// `kill-blockers`: the transaction age a blocker must reach to be terminated.
    pub older_than: Option<String>,
    /// `kill-blockers`: how often to look for blockers and terminate them.
    pub every: Option<String>,
    /// `replica-aware`: the longest wait before a try for the replica's old transactions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_at_most: Option<String>,
    /// This strategy's own migration steps, instead of `[ddl]`'s (e.g. `CREATE INDEX CONCURRENTLY`).
    pub ddl: Option<Vec<String>>,
    /// Settings for every session of this strategy's run, e.g.
    /// `{ idle_in_transaction_session_timeout = "2s" }`.
    pub settings: Option<std::collections::BTreeMap<String, String>>,
}

/// `[[variants]]`: one way the application runs its transactions, compared
/// with the others in one run as DDL strategies are: its own scripts (else
/// `[load]`'s), isolation level and tries.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VariantFile {
    pub name: String,
    /// `read-committed`, `repeatable-read` or `serializable`, set for every
    /// transaction of the variant's clients; the server's default if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// Tries of a transaction that failed with 40001 or 40P01, as `[load] max_tries`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tries: Option<u32>,
    /// Lock timeouts and `NOWAIT`'s lock_not_available (55P03) are tried again
    /// too, as `[load] retry_lock_timeouts`; needs `max_tries` other than 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_lock_timeouts: Option<bool>,
    /// The variant's scripts, instead of `[load]`'s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<ScriptFile>,
}

/// `[[invariants]]`: a query on the workload's data whose one value must
/// equal `expect` after each run: a literal (`"100000"`), or `":transactions"`,
/// the transactions the run's clients completed.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InvariantFile {
    pub name: String,
    pub sql: String,
    pub expect: String,
    /// What one unit of difference is called in the sentences, e.g. `lost updates`;
    /// `anomalies` if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<String>,
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
                max_tries: None,
                retry_lock_timeouts: None,
                variables: BTreeMap::new(),
                pool: None,
                repeat: None,
                protocol: None,
                on: None,
            },
            blocker: None,
            ddl: None,
            strategies: vec![preset("naive"), preset("retry")],
            variants: Vec::new(),
            invariants: Vec::new(),
            expect: BTreeMap::new(),
            sweep: None,
            replica: None,
        },
        source: "workload from flags".to_string(),
        folder: None,
    }
}

/// `stallbench workloads`: one line per bundled workload, its name and description.
pub fn listing() -> Result<String, Error> {
    let mut out = String::new();
    for (name, _) in BUNDLED {
        let loaded = load(name)?;
        out.push_str(&format!("{name:<22} {}\n", loaded.file.description));
    }
    for (name, _) in crate::engine::mariadb::workload::BUNDLED {
        if let Some(loaded) = crate::engine::mariadb::workload::bundled(name) {
            out.push_str(&format!("{name:<22} {}\n", loaded.description));
        }
    }
    Ok(out)
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
        let bundled: Vec<&str> = BUNDLED
            .iter()
            .chain(crate::engine::mariadb::workload::BUNDLED.iter())
            .map(|(name, _)| *name)
            .collect();
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
/// `workload x.toml: line 3, key load.clients: invalid type ...`.
pub(crate) fn parse(source: &str, text: &str) -> Result<WorkloadFile, Error> {
    toml::from_str(text).map_err(|err| Error::bad_input(describe_toml_error(source, text, &err)))
}

/// A TOML error on one line: `workload x.toml: line 12, key load.scripts.sql: <what>`,
/// instead of the toml crate's several lines with a caret.
fn describe_toml_error(source: &str, text: &str, err: &toml::de::Error) -> String {
    let what = err.message().trim().replace('\n', "; ");
    // The usual cause: pgbench's `\set` pasted into a `"""` string, where `\s` is no escape.
    let hint = if what.contains("escape") {
        "; in a TOML \"...\" or \"\"\"...\"\"\" string a backslash starts an escape: \
         write \\\\set, or use a literal string '''...''' where \\set is written as is"
    } else {
        ""
    };
    // An empty span at the start stands for the root table (a missing top-level key).
    let span = err.span().filter(|span| *span != (0..0));
    let Some(span) = span else {
        return format!("{source}: {what}{hint}");
    };
    let offset = span.start.min(text.len());
    let line = text.as_bytes()[..offset]
        .iter()
        .filter(|byte| **byte == b'\n')
        .count()
        + 1;
    let key = key_at(text, offset)
        .map(|key| format!(", key {key}"))
        .unwrap_or_default();
    format!("{source}: line {line}{key}: {what}{hint}")
}

/// One `key = value` (or table header) of a TOML document, with where it is written.
struct TomlEntry {
    /// Dotted from the document's root: `load.scripts.sql`.
    key: String,
    /// From the key to the end of the value (a header table: the header line).
    span: std::ops::Range<usize>,
    depth: usize,
}

/// The dotted key at byte `offset` of `text`: the innermost entry written
/// there, else the last key written before it (a value left out, `at =`).
/// Read with the toml crate's error-tolerant parser, which keeps what it could parse.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let (document, _) = toml::de::DeTable::parse_recoverable(text);
    let mut entries = Vec::new();
    collect_entries(document.get_ref(), "", 0, &mut entries);
    let innermost = entries
        .iter()
        .filter(|entry| entry.span.contains(&offset))
        .max_by_key(|entry| entry.depth);
    let before = || {
        entries
            .iter()
            .filter(|entry| entry.span.start <= offset)
            .max_by_key(|entry| entry.span.start)
    };
    innermost.or_else(before).map(|entry| entry.key.clone())
}

fn collect_entries(
    table: &toml::de::DeTable,
    prefix: &str,
    depth: usize,
    out: &mut Vec<TomlEntry>,
) {
    for (key, value) in table.iter() {
        let dotted = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        let (key_span, value_span) = (key.span(), value.span());
        out.push(TomlEntry {
            key: dotted.clone(),
            span: key_span.start.min(value_span.start)..key_span.end.max(value_span.end),
            depth,
        });
        collect_value_entries(value.get_ref(), &dotted, depth + 1, out);
    }
}

fn collect_value_entries(
    value: &toml::de::DeValue,
    prefix: &str,
    depth: usize,
    out: &mut Vec<TomlEntry>,
) {
    match value {
        toml::de::DeValue::Table(table) => collect_entries(table, prefix, depth, out),
        toml::de::DeValue::Array(items) => {
            for item in items.iter() {
                collect_value_entries(item.get_ref(), prefix, depth, out);
            }
        }
        _ => {}
    }
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
    fn toml_errors_are_one_line_with_file_line_and_key() {
        let text = BUNDLED[0].1;
        let hold = "hold = \"12s\"\n";
        for (broken, expected) in [
            (
                text.replace("clients = 4", "clients = 'four'"),
                "line 31, key load.clients: invalid type: string \"four\", expected u32",
            ),
            (
                text.replace(hold, "hold = \"12s\"\ncolour = 1\n"),
                "line 44, key blocker.colour: unknown field `colour`",
            ),
            (
                text.replace(hold, "hold =\n"),
                "line 43, key blocker.hold: string values must be quoted",
            ),
            (
                text.replace(hold, ""),
                "line 41, key blocker: missing field `hold`",
            ),
        ] {
            assert_ne!(broken, text);
            let message = parse("workload x.toml", &broken).unwrap_err().to_string();
            assert!(message.starts_with("workload x.toml: "), "{message}");
            assert!(message.contains(expected), "{message}");
            assert!(!message.contains('\n'), "{message}");
        }
    }

    #[test]
    fn a_missing_top_level_key_is_named() {
        let text = "name = 'x'\n[load]\nclients = 1\nduration = '1s'\nscripts = []\n";
        let message = parse("workload x.toml", text).unwrap_err().to_string();
        assert_eq!(message, "workload x.toml: missing field `setup`");
    }

    #[test]
    fn a_single_backslash_set_gets_a_hint() {
        let text = BUNDLED[0].1.replace("\\\\set", "\\set");
        let message = parse("workload x.toml", &text).unwrap_err().to_string();
        assert!(
            message.starts_with("workload x.toml: line 37, key load.scripts.sql: "),
            "{message}"
        );
        assert!(
            message.ends_with(
                "write \\\\set, or use a literal string '''...''' where \\set is written as is"
            ),
            "{message}"
        );
    }

    #[test]
    fn an_unknown_workload_names_the_bundled_ones() {
        let message = load("no-such-workload").unwrap_err().to_string();
        assert!(message.contains("add-column"), "{message}");
        assert!(message.contains("stallbench workloads"), "{message}");
    }
}
