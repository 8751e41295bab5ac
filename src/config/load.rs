//! The `[load]` section: how many clients run which scripts for how long, and
//! how they are paced. The flags override the file here, key by key (`-f`
//! replaces the whole script list), and the open-loop flags are checked
//! together because each only makes sense with `--rate`.

use std::path::Path;
use std::time::Duration;

pub use crate::choices::Protocol;
use crate::choices::from_word;
use crate::cli::CommonArgs;
use crate::error::Error;
use crate::script::{self, Script, builtin};
use crate::workload::{self, LoadFile, LoadedWorkload, ScriptFile};

use super::pool::{PoolConfig, parse_pool};
use crate::duration::parse_duration;

/// The client workers.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub clients: u32,
    pub duration: Duration,
    pub scripts: Vec<WeightedScript>,
    /// `--set name=value` pairs, like pgbench -D.
    pub variables: Vec<(String, String)>,
    /// Open loop (`--rate`): transactions scheduled per second over all clients;
    /// `None` for the closed loop (each client starts its next transaction at once).
    pub rate_tps: Option<f64>,
    /// Open loop: skip a transaction this late behind its schedule (`--latency-limit`).
    pub latency_limit: Option<Duration>,
    /// Fail and cancel a transaction not finished this long after its (scheduled) start.
    pub client_timeout: Option<Duration>,
    /// Open loop with `--pool-size`: the arrivals are served by an application
    /// pool (deadpool-postgres); `None` for the lean connections.
    pub pool: Option<PoolConfig>,
    /// How the scripts' statements are sent (`--protocol`, pgbench `-M`).
    pub protocol: Protocol,
    /// The most tries of a transaction that failed with a serialization
    /// failure or a deadlock (`--max-tries`, pgbench's); 0: until the load
    /// ends; 1: never tried again.
    pub max_tries: u32,
    /// Lock timeouts (55P03) are retried too (`--retry-lock-timeouts`).
    pub retry_lock_timeouts: bool,
}

impl LoadConfig {
    /// The number of one-second rows of the timeline.
    pub fn duration_s(&self) -> u32 {
        self.duration.as_secs_f64().ceil() as u32
    }
}

/// A parsed script with its pgbench-style weight.
#[derive(Debug, Clone)]
pub struct WeightedScript {
    pub script: Script,
    pub weight: u32,
    /// The script's text as read, so `workload.toml` can inline it.
    pub text: String,
    /// Where the script came from, as errors name it: `workload w:
    /// [[load.scripts]] read-order`, or its file's path.
    pub source: String,
}

/// The `[load]` section of the workload, with the flags that override it.
pub(super) fn parse_load(loaded: &LoadedWorkload, args: &CommonArgs) -> Result<LoadConfig, Error> {
    let source = &loaded.source;
    let file = &loaded.file.load;
    let pacing = Pacing::new(source, file, args)?;
    let pool = parse_pool(source, file.pool.as_ref(), args)?;
    let clients = match &pool {
        // [load.pool] without --pool-size: the pool's connections are the clients.
        Some(pool) if args.pool_size.is_none() => check_pool_size(source, pool.size)?,
        _ => parse_clients(source, file, args)?,
    };
    let duration = parse_run_duration(source, file, args)?;
    let variables = parse_variables(file, &args.variables)?;
    let flags = &args.workload;
    let scripts = if flags.files.is_empty() && flags.builtins.is_empty() {
        load_scripts(loaded)?
    } else {
        let files = flags.files.iter().map(|arg| flag_script(arg));
        let builtins = flags.builtins.iter().map(|arg| flag_builtin(arg));
        files.chain(builtins).collect::<Result<Vec<_>, _>>()?
    };
    check_total_weight(source, &scripts)?;
    check_shell(source, &scripts, args.allow_shell)?;
    let protocol = parse_protocol(source, file, args)?;
    check_pipelines(&scripts, protocol, pool.is_some())?;
    let (max_tries, retry_lock_timeouts) = parse_retries(source, file, args)?;
    Ok(LoadConfig {
        clients,
        duration,
        scripts,
        variables,
        rate_tps: pacing.rate_tps,
        latency_limit: pacing.latency_limit,
        client_timeout: pacing.client_timeout,
        pool,
        protocol,
        max_tries,
        retry_lock_timeouts,
    })
}

/// `--max-tries`, else `[load] max_tries`, else 1; and whether lock timeouts
/// are retried too, which needs more than one try. A run always has a
/// duration, so 0 (no limit) is bounded by the load's end, as pgbench's `-T`.
fn parse_retries(source: &str, file: &LoadFile, args: &CommonArgs) -> Result<(u32, bool), Error> {
    let max_tries = args.max_tries.or(file.max_tries).unwrap_or(1);
    let lock_timeouts = args.retry_lock_timeouts || file.retry_lock_timeouts.unwrap_or(false);
    if lock_timeouts && max_tries == 1 {
        let given = match args.retry_lock_timeouts {
            true => "--retry-lock-timeouts".to_string(),
            false => format!("{source}: [load] retry_lock_timeouts"),
        };
        return Err(Error::bad_input(format!(
            "{given}: retries need more than one try; add --max-tries N (e.g. 10)"
        )));
    }
    Ok((max_tries, lock_timeouts))
}

/// `--protocol`, else `[load] protocol`, else `prepared`.
fn parse_protocol(source: &str, file: &LoadFile, args: &CommonArgs) -> Result<Protocol, Error> {
    let name = match (args.protocol, &file.protocol) {
        (Some(protocol), _) => return Ok(protocol),
        (None, Some(name)) => name,
        (None, None) => return Ok(Protocol::default()),
    };
    from_word(&format!("{source}: [load] protocol"), name)
}

/// Pipelines need the extended protocol, and a connection whose syncs the
/// client controls: not the application pool's tokio-postgres.
fn check_pipelines(
    scripts: &[WeightedScript],
    protocol: Protocol,
    pooled: bool,
) -> Result<(), Error> {
    for weighted in scripts {
        let Some(line) = weighted.script.first_pipeline_line() else {
            continue;
        };
        let name = &weighted.script.name;
        if protocol == Protocol::Simple {
            return Err(Error::bad_input(format!(
                "script {name} line {line}: \\startpipeline needs the extended query \
                 protocol, and the run uses --protocol simple; use --protocol extended or prepared"
            )));
        }
        if pooled {
            return Err(Error::bad_input(format!(
                "script {name} line {line}: pipelines (\\startpipeline) cannot run in the \
                 application pool (--pool-size): tokio-postgres does not let a request place \
                 its own Sync messages; run the script on the lean connections (--clients)"
            )));
        }
    }
    Ok(())
}

/// The load worker adds the weights up in a `u32`: refuse totals that overflow it.
fn check_total_weight(source: &str, scripts: &[WeightedScript]) -> Result<(), Error> {
    let total = scripts
        .iter()
        .try_fold(0u32, |total, entry| total.checked_add(entry.weight));
    if total.is_none() {
        return Err(Error::bad_input(format!(
            "{source}: [[load.scripts]] weights add up to more than {}; use smaller weights \
             (only their ratios matter)",
            u32::MAX
        )));
    }
    Ok(())
}

/// The most clients a run may have: each holds a server connection and its own
/// histograms, and PostgreSQL servers allow far fewer connections than this.
pub const MAX_CLIENTS: u32 = 10_000;

/// `--clients`, else `--pool-size` (the pool's connections are the clients), else `[load] clients`.
fn parse_clients(source: &str, file: &LoadFile, args: &CommonArgs) -> Result<u32, Error> {
    let (given, clients) = match (args.clients, args.pool_size) {
        (Some(clients), _) => (format!("--clients {clients}"), clients),
        (None, Some(pool_size)) => (format!("--pool-size {pool_size}"), pool_size),
        (None, None) => (
            format!("{source}: [load] clients = {}", file.clients),
            file.clients,
        ),
    };
    if clients > MAX_CLIENTS {
        return Err(Error::bad_input(format!(
            "{given}: more than {MAX_CLIENTS} clients, each a server connection; use fewer"
        )));
    }
    match args.clients.or(args.pool_size) {
        Some(0) if args.pool_size.is_some() => Err(Error::bad_input(
            "--pool-size 0: a pool needs at least 1 connection",
        )),
        Some(0) => Err(Error::bad_input("--clients 0: need at least 1 client")),
        Some(clients) => Ok(clients),
        None if file.clients == 0 => Err(Error::bad_input(format!(
            "{source}: [load] clients = 0; need at least 1 client"
        ))),
        None => Ok(file.clients),
    }
}

/// `[load.pool] size`, at most [`MAX_CLIENTS`].
fn check_pool_size(source: &str, size: u32) -> Result<u32, Error> {
    if size > MAX_CLIENTS {
        return Err(Error::bad_input(format!(
            "{source}: [load.pool] size = {size}: more than {MAX_CLIENTS} connections; use fewer"
        )));
    }
    Ok(size)
}

/// `--duration`, else `[load] duration`; at least one second (one row of the timeline).
fn parse_run_duration(source: &str, file: &LoadFile, args: &CommonArgs) -> Result<Duration, Error> {
    let duration = match args.duration {
        Some(duration) => duration,
        None => parse_duration(&format!("{source}: [load] duration"), &file.duration)?,
    };
    if duration < Duration::from_secs(1) {
        return Err(Error::bad_input(format!(
            "duration {} is too short; a run needs at least 1s",
            humantime::format_duration(duration)
        )));
    }
    Ok(duration)
}

/// How transactions are paced, from `[load]` and the flags (flags win).
struct Pacing {
    rate_tps: Option<f64>,
    latency_limit: Option<Duration>,
    client_timeout: Option<Duration>,
}

impl Pacing {
    fn new(source: &str, file: &LoadFile, args: &CommonArgs) -> Result<Pacing, Error> {
        let (rate_tps, rate_name) = match (args.rate, file.rate) {
            (Some(rate), _) => (Some(rate), "--rate".to_string()),
            (None, Some(rate)) => (Some(rate), format!("{source}: [load] rate")),
            (None, None) => (None, String::new()),
        };
        if let Some(rate) = rate_tps
            && !(rate.is_finite() && rate > 0.0)
        {
            return Err(Error::bad_input(format!(
                "{rate_name} {rate}: the rate must be a positive number of transactions \
                 per second, e.g. 200"
            )));
        }
        if rate_tps.is_none() && args.pool_size.is_some() {
            return Err(Error::bad_input(
                "--pool-size needs --rate: a pool serves requests that arrive at a rate; \
                 for a closed loop of busy clients use --clients",
            ));
        }
        if rate_tps.is_none() && file.pool.is_some() {
            return Err(Error::bad_input(format!(
                "{source}: [load.pool] needs a rate: a pool serves requests that arrive at a \
                 rate; add --rate TPS or [load] rate"
            )));
        }
        let duration_of =
            |flag: &Option<Duration>, key: &Option<String>, name: &str| match (flag, key) {
                (Some(duration), _) => Ok(Some(*duration)),
                (None, Some(text)) => parse_duration(
                    &format!("{source}: [load] {}", name.replace('-', "_")),
                    text,
                )
                .map(Some),
                (None, None) => Ok(None),
            };
        let latency_limit = duration_of(&args.latency_limit, &file.latency_limit, "latency-limit")?;
        let client_timeout =
            duration_of(&args.client_timeout, &file.client_timeout, "client-timeout")?;
        if latency_limit.is_some() && rate_tps.is_none() {
            return Err(Error::bad_input(
                "--latency-limit skips transactions that are behind schedule, so it needs a \
                 schedule: add --rate TPS",
            ));
        }
        for (name, value) in [
            ("--latency-limit", latency_limit),
            ("--client-timeout", client_timeout),
        ] {
            if value.is_some_and(|value| value < Duration::from_millis(1)) {
                return Err(Error::bad_input(format!(
                    "{name} must be at least 1ms, e.g. 500ms"
                )));
            }
        }
        Ok(Pacing {
            rate_tps,
            latency_limit,
            client_timeout,
        })
    }
}

/// `[load] variables`, then the `--set` pairs (a flag replaces the file's value of its name).
fn parse_variables(file: &LoadFile, pairs: &[String]) -> Result<Vec<(String, String)>, Error> {
    let mut variables: Vec<(String, String)> = file
        .variables
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    for pair in pairs {
        let (name, value) = match pair.split_once('=') {
            Some((name, value)) if !name.is_empty() => (name.to_string(), value.to_string()),
            _ => {
                return Err(Error::bad_input(format!(
                    "--set {pair}: expected NAME=VALUE, e.g. --set scale=10"
                )));
            }
        };
        variables.retain(|(existing, _)| *existing != name);
        variables.push((name, value));
    }
    Ok(variables)
}

/// A script that runs programs (`\shell`, `\setshell`) runs only with `--allow-shell`.
fn check_shell(source: &str, scripts: &[WeightedScript], allow_shell: bool) -> Result<(), Error> {
    if allow_shell {
        return Ok(());
    }
    for weighted in scripts {
        if let Some(line) = weighted.script.first_shell_line() {
            return Err(Error::bad_input(format!(
                "{source}: script {} line {line}: \\shell and \\setshell run programs on this \
                 machine, which a workload must not do unasked; pass --allow-shell to allow them",
                weighted.script.name
            )));
        }
    }
    Ok(())
}

/// The workload's `[[load.scripts]]`.
pub(super) fn load_scripts(loaded: &LoadedWorkload) -> Result<Vec<WeightedScript>, Error> {
    let source = &loaded.source;
    let scripts = &loaded.file.load.scripts;
    if scripts.is_empty() {
        return Err(Error::bad_input(format!(
            "{source}: [load] has no scripts; add [[load.scripts]] with sql = \"...\" or file = \"x.sql\", \
             or give script files with -f FILE[@WEIGHT]"
        )));
    }
    scripts
        .iter()
        .enumerate()
        .map(|(index, entry)| load_script(loaded, "[[load.scripts]]", index, entry))
        .collect()
}

/// The scripts of a section other than `[load]` (a variant's), each named in
/// errors by `section` (`[[variants]] for-update scripts`).
pub(super) fn section_scripts(
    loaded: &LoadedWorkload,
    section: &str,
    entries: &[ScriptFile],
) -> Result<Vec<WeightedScript>, Error> {
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| load_script(loaded, section, index, entry))
        .collect()
}

/// One `-b NAME[@WEIGHT]`: a built-in script, named by its full name.
fn flag_builtin(arg: &str) -> Result<WeightedScript, Error> {
    let (name, weight) = split_weight(arg);
    if weight == Some(0) {
        return Err(Error::bad_input(format!(
            "-b {arg}: weight 0; use a weight of 1 or more"
        )));
    }
    let builtin =
        builtin::find(name).map_err(|problem| Error::bad_input(format!("-b {arg}: {problem}")))?;
    builtin_script(builtin, weight.unwrap_or(1))
}

/// A built-in script with its weight.
fn builtin_script(builtin: &builtin::Builtin, weight: u32) -> Result<WeightedScript, Error> {
    let script = script::parse(builtin.name, builtin.text)
        .map_err(|err| Error::bad_input(err.to_string()))?;
    Ok(WeightedScript {
        script,
        weight,
        text: builtin.text.to_string(),
        source: format!("built-in script {}", builtin.name),
    })
}

/// One `-f FILE[@WEIGHT]`, read relative to the current folder and named by its path.
fn flag_script(arg: &str) -> Result<WeightedScript, Error> {
    let (path, weight) = split_weight(arg);
    if weight == Some(0) {
        return Err(Error::bad_input(format!(
            "-f {arg}: weight 0; use a weight of 1 or more"
        )));
    }
    let text = std::fs::read_to_string(Path::new(path)).map_err(|err| {
        let hint = if arg.contains('@') && weight.is_none() {
            "; a weight is written FILE@N with digits only, e.g. -f read.sql@9"
        } else {
            ""
        };
        Error::bad_input(format!("-f {arg}: cannot read file {path}: {err}{hint}"))
    })?;
    let mut script = script::parse(path, &text).map_err(|err| Error::bad_input(err.to_string()))?;
    script.name = path.to_string();
    Ok(WeightedScript {
        script,
        weight: weight.unwrap_or(1),
        text,
        source: path.to_string(),
    })
}

/// `FILE[@WEIGHT]` as pgbench reads it: the last `@` followed by digits only starts
/// the weight; otherwise the whole argument is the path (which may contain `@`).
/// A weight too large for `u32` is left in the path, whose reading then fails.
fn split_weight(arg: &str) -> (&str, Option<u32>) {
    if let Some((path, weight)) = arg.rsplit_once('@')
        && !weight.is_empty()
        && weight.chars().all(|c| c.is_ascii_digit())
        && let Ok(weight) = weight.parse::<u32>()
    {
        return (path, Some(weight));
    }
    (arg, None)
}

/// One `[[load.scripts]]` entry: its SQL inline, from a file next to the workload, or a
/// built-in script, parsed.
fn load_script(
    loaded: &LoadedWorkload,
    section: &str,
    index: usize,
    entry: &ScriptFile,
) -> Result<WeightedScript, Error> {
    let source = &loaded.source;
    let label = entry
        .name
        .clone()
        .unwrap_or_else(|| format!("script {}", index + 1));
    if entry.weight == 0 {
        return Err(Error::bad_input(format!(
            "{source}: {section} {label}: weight = 0; use a weight of 1 or more"
        )));
    }
    let (script_source, text) = match (&entry.sql, &entry.file, &entry.builtin) {
        (None, None, Some(name)) => {
            let builtin = builtin::find(name).map_err(|problem| {
                Error::bad_input(format!(
                    "{source}: {section} {label}: builtin = \"{name}\": {problem}"
                ))
            })?;
            let mut weighted = builtin_script(builtin, entry.weight)?;
            weighted.script.name = entry
                .name
                .clone()
                .unwrap_or_else(|| builtin.name.to_string());
            return Ok(weighted);
        }
        (Some(sql), None, None) => (format!("{source}: {section} {label}"), sql.clone()),
        (None, Some(file), None) => {
            let path = match &loaded.folder {
                Some(folder) => folder.join(file),
                None => file.clone(),
            };
            let text = workload::read_text_file(&path).map_err(|problem| {
                Error::bad_input(format!(
                    "{source}: {section} {label}: file {}: {problem}",
                    path.display()
                ))
            })?;
            (path.display().to_string(), text)
        }
        _ => {
            return Err(Error::bad_input(format!(
                "{source}: {section} {label}: give exactly one of sql = \"...\", \
                 file = \"x.sql\" or builtin = \"tpcb-like\""
            )));
        }
    };
    let mut script =
        script::parse(&script_source, &text).map_err(|err| Error::bad_input(err.to_string()))?;
    script.name = label;
    Ok(WeightedScript {
        script,
        weight: entry.weight,
        text,
        source: script_source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_at_sign_followed_by_digits_is_the_weight() {
        assert_eq!(split_weight("read.sql@9"), ("read.sql", Some(9)));
        assert_eq!(split_weight("read.sql"), ("read.sql", None));
        assert_eq!(split_weight("a@b/read.sql@12"), ("a@b/read.sql", Some(12)));
        assert_eq!(split_weight("a@b/read.sql"), ("a@b/read.sql", None));
        assert_eq!(split_weight("read.sql@"), ("read.sql@", None));
        assert_eq!(split_weight("read.sql@x9"), ("read.sql@x9", None));
        assert_eq!(split_weight("read.sql@+9"), ("read.sql@+9", None));
    }
}
