//! The validated configuration of one `compare` or `run`: the workload file and
//! the command-line flags, checked once. Every later stage trusts it.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::cli::CommonArgs;
use crate::error::Error;
use crate::script::{self, Script};
use crate::strategy::{
    Backoff, Jitter, NamedStrategy, PRESET_NAMES, RetryPolicy, Schedule, Step, Strategy, preset,
};
use crate::workload::{self, BackoffFile, LoadFile, LoadedWorkload, StrategyFile};

/// What the command asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Every listed strategy in turn (`compare`).
    Compare { strategies: Vec<String> },
    /// One strategy (`run --strategy`).
    Run { strategy: String },
    /// The load alone, no blocker and no DDL (`run --load-only`).
    LoadOnly,
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct Config {
    pub workload_name: String,
    pub description: String,
    pub setup_sql: String,
    pub reset_sql: String,
    pub load: LoadConfig,
    /// `None` for a load-only run or a workload without `[blocker]`.
    pub blocker: Option<BlockerConfig>,
    /// `None` for a load-only run.
    pub ddl: Option<DdlConfig>,
    /// The strategies to run, in order; for a load-only run one pseudo-strategy named `load`.
    pub strategies: Vec<NamedStrategy>,
    pub target: Target,
    pub out_dir: PathBuf,
    pub quiet: bool,
    /// CI bounds from `[expect.*]` and `--expect`, checked after the run.
    pub expectations: Vec<crate::expect::Expectation>,
    /// Sample the lock queue (off only to measure the observer's cost).
    pub observe_locks: bool,
    pub seed: u64,
}

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
}

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

/// The migration: steps run one after another, each on its own.
#[derive(Debug, Clone)]
pub struct DdlConfig {
    pub at: Duration,
    pub steps: Vec<String>,
}

/// Where the run happens.
#[derive(Debug, Clone)]
pub enum Target {
    /// A throwaway server started by the harness; `pg_bin` from `--pg-bin`.
    Throwaway { pg_bin: Option<PathBuf> },
    /// A real server (`--db-url` or `DATABASE_URL`).
    Url(String),
}

impl Config {
    /// Builds the config of one `compare` or `run` from the workload and the flags.
    pub fn new(workload_arg: Option<&str>, mode: Mode, args: &CommonArgs) -> Result<Config, Error> {
        let loaded = workload::load(workload_arg.unwrap_or(workload::DEFAULT_WORKLOAD))?;
        let source = loaded.source.clone();
        let file = &loaded.file;

        let pacing = Pacing::new(&source, &file.load, args)?;
        let clients = match args.clients.or(args.pool_size) {
            Some(0) if args.pool_size.is_some() => {
                return Err(Error::bad_input(
                    "--pool-size 0: a pool needs at least 1 connection",
                ));
            }
            Some(0) => return Err(Error::bad_input("--clients 0: need at least 1 client")),
            Some(clients) => clients,
            None if file.load.clients == 0 => {
                return Err(Error::bad_input(format!(
                    "{source}: [load] clients = 0; need at least 1 client"
                )));
            }
            None => file.load.clients,
        };
        let duration = match &args.duration {
            Some(text) => parse_duration("--duration", text)?,
            None => parse_duration(&format!("{source}: [load] duration"), &file.load.duration)?,
        };
        if duration < Duration::from_secs(1) {
            return Err(Error::bad_input(format!(
                "duration {} is too short; a run needs at least 1s",
                humantime::format_duration(duration)
            )));
        }
        let variables = parse_variables(&args.variables)?;
        let scripts = load_scripts(&loaded, &variables)?;

        let load_only = mode == Mode::LoadOnly;
        let blocker = match (&file.blocker, load_only) {
            (Some(blocker), false) => {
                let at = parse_duration(&format!("{source}: [blocker] at"), &blocker.at)?;
                let hold = parse_duration(&format!("{source}: [blocker] hold"), &blocker.hold)?;
                check_within_run(&source, "[blocker] at", at, duration)?;
                let kind = match blocker.kind.as_deref().unwrap_or("report") {
                    "report" => BlockerKind::Report,
                    "writer" => BlockerKind::Writer,
                    "idle" => BlockerKind::Idle,
                    other => {
                        return Err(Error::bad_input(format!(
                            "{source}: [blocker] kind = \"{other}\"; use \"report\", \"writer\" or \"idle\""
                        )));
                    }
                };
                Some(BlockerConfig {
                    kind,
                    at,
                    hold,
                    sql: blocker.sql.clone(),
                })
            }
            _ => None,
        };
        let ddl = match (&file.ddl, load_only) {
            (Some(ddl), false) => {
                let at = parse_duration(&format!("{source}: [ddl] at"), &ddl.at)?;
                check_within_run(&source, "[ddl] at", at, duration)?;
                let steps = match (&ddl.sql, &ddl.steps) {
                    (Some(sql), None) => vec![sql.clone()],
                    (None, Some(steps)) if !steps.is_empty() => steps.clone(),
                    _ => {
                        return Err(Error::bad_input(format!(
                            "{source}: [ddl] needs exactly one of sql = \"...\" or steps = [\"...\", \"...\"]"
                        )));
                    }
                };
                Some(DdlConfig { at, steps })
            }
            (None, false) => {
                return Err(Error::bad_input(format!(
                    "{source}: no [ddl] section, so there is nothing to compare; \
                     add [ddl] at = \"6s\" and sql = \"...\", or use `run --load-only`"
                )));
            }
            _ => None,
        };

        let defined = file
            .strategies
            .iter()
            .map(|strategy| parse_strategy(&source, strategy))
            .collect::<Result<Vec<_>, _>>()?;
        check_unique_names(&source, &defined)?;
        // Expectations may name the workload's strategies, the presets, and
        // `load` (the pseudo-strategy of `run --load-only`).
        let mut known: Vec<String> = defined.iter().map(|s| s.name.clone()).collect();
        known.extend(PRESET_NAMES.iter().map(|name| name.to_string()));
        known.push("load".to_string());
        let expectations = crate::expect::collect(&source, &file.expect, &args.expect, &known)?;
        let strategies = match &mode {
            Mode::LoadOnly => vec![NamedStrategy {
                name: "load".to_string(),
                strategy: Strategy::Plain,
                ddl_steps: None,
                settings: Vec::new(),
            }],
            Mode::Run { strategy } => vec![pick_strategy(&source, &defined, strategy)?],
            Mode::Compare { strategies } if strategies.is_empty() => {
                if defined.is_empty() {
                    return Err(Error::bad_input(format!(
                        "{source}: no [[strategies]] listed; add at least one, e.g. \
                         [[strategies]] name = \"naive\" kind = \"plain\""
                    )));
                }
                defined.clone()
            }
            Mode::Compare { strategies } if strategies.iter().any(|name| name == "all") => {
                // Every preset (as the workload redefines it, if it does), then the workload's own.
                let mut all: Vec<NamedStrategy> = PRESET_NAMES
                    .iter()
                    .map(|name| pick_strategy(&source, &defined, name))
                    .collect::<Result<Vec<_>, _>>()?;
                for strategy in &defined {
                    if !all.iter().any(|s| s.name == strategy.name) {
                        all.push(strategy.clone());
                    }
                }
                all
            }
            Mode::Compare { strategies } => strategies
                .iter()
                .map(|name| pick_strategy(&source, &defined, name))
                .collect::<Result<Vec<_>, _>>()?,
        };

        let target = match args.db_url.clone().or_else(|| {
            std::env::var("DATABASE_URL")
                .ok()
                .filter(|url| !url.is_empty())
        }) {
            Some(url) => Target::Url(url),
            None => Target::Throwaway {
                pg_bin: args.pg_bin.clone(),
            },
        };
        let out_dir = args
            .out
            .clone()
            .unwrap_or_else(|| default_out_dir(&file.name, SystemTime::now()));

        Ok(Config {
            workload_name: file.name.clone(),
            description: file.description.clone(),
            setup_sql: file.setup.clone(),
            reset_sql: file.reset.clone(),
            load: LoadConfig {
                clients,
                duration,
                scripts,
                variables,
                rate_tps: pacing.rate_tps,
                latency_limit: pacing.latency_limit,
                client_timeout: pacing.client_timeout,
            },
            blocker,
            ddl,
            strategies,
            target,
            out_dir,
            quiet: args.quiet,
            expectations,
            observe_locks: !args.no_observer,
            seed: args.seed.unwrap_or_else(rand::random),
        })
    }
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
        let duration_of =
            |flag: &Option<String>, key: &Option<String>, name: &str| match (flag, key) {
                (Some(text), _) => parse_duration(&format!("--{name}"), text).map(Some),
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

/// Parses a humantime duration; `what` names the key or flag in the message.
pub fn parse_duration(what: &str, text: &str) -> Result<Duration, Error> {
    let trimmed = text.trim();
    // A flag reads `--duration 10`, a workload key `[ddl] at = "6"`.
    let given = if what.starts_with("--") {
        format!("{what} {text}")
    } else {
        format!("{what} = \"{text}\"")
    };
    if !trimmed.is_empty() && trimmed.parse::<f64>().is_ok() {
        return Err(Error::bad_input(format!(
            "{given} has no unit; write \"{trimmed}s\" (or ms, min)"
        )));
    }
    humantime::parse_duration(trimmed).map_err(|err| {
        Error::bad_input(format!(
            "{given} is not a duration ({err}); write it like \"500ms\" or \"12s\""
        ))
    })
}

fn check_within_run(
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

fn parse_variables(pairs: &[String]) -> Result<Vec<(String, String)>, Error> {
    pairs
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
            _ => Err(Error::bad_input(format!(
                "--set {pair}: expected NAME=VALUE, e.g. --set scale=10"
            ))),
        })
        .collect()
}

fn load_scripts(
    loaded: &LoadedWorkload,
    variables: &[(String, String)],
) -> Result<Vec<WeightedScript>, Error> {
    let source = &loaded.source;
    let scripts = &loaded.file.load.scripts;
    if scripts.is_empty() {
        return Err(Error::bad_input(format!(
            "{source}: [load] has no scripts; add [[load.scripts]] with sql = \"...\" or file = \"x.sql\""
        )));
    }
    let outside: Vec<String> = variables.iter().map(|(name, _)| name.clone()).collect();
    scripts
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let label = entry
                .name
                .clone()
                .unwrap_or_else(|| format!("script {}", index + 1));
            if entry.weight == 0 {
                return Err(Error::bad_input(format!(
                    "{source}: [[load.scripts]] {label}: weight = 0; use a weight of 1 or more"
                )));
            }
            let (script_source, text) = match (&entry.sql, &entry.file) {
                (Some(sql), None) => (format!("{source}: [[load.scripts]] {label}"), sql.clone()),
                (None, Some(file)) => {
                    let path = match &loaded.folder {
                        Some(folder) => folder.join(file),
                        None => file.clone(),
                    };
                    let text = std::fs::read_to_string(&path).map_err(|err| {
                        Error::bad_input(format!(
                            "{source}: [[load.scripts]] {label}: cannot read file {}: {err}",
                            path.display()
                        ))
                    })?;
                    (path.display().to_string(), text)
                }
                _ => {
                    return Err(Error::bad_input(format!(
                        "{source}: [[load.scripts]] {label}: give exactly one of sql = \"...\" or file = \"x.sql\""
                    )))
                }
            };
            let mut script = script::parse(&script_source, &text, &outside)
                .map_err(|err| Error::bad_input(err.to_string()))?;
            script.name = label;
            Ok(WeightedScript {
                script,
                weight: entry.weight,
            })
        })
        .collect()
}

fn parse_strategy(source: &str, file: &StrategyFile) -> Result<NamedStrategy, Error> {
    let name = &file.name;
    let what = format!("{source}: strategy {name}");
    // Fields that only some kinds take; each kind below says which it reads.
    let given = [
        ("lock_timeout", file.lock_timeout.is_some()),
        ("statement_timeout", file.statement_timeout.is_some()),
        ("max_tries", file.max_tries.is_some()),
        ("backoff", file.backoff.is_some()),
        ("schedule", file.schedule.is_some()),
        ("set_local", file.set_local.is_some()),
        ("grace", file.grace.is_some()),
        ("older_than", file.older_than.is_some()),
    ];
    let only = |kind: &str, allowed: &[&str]| -> Result<(), Error> {
        match given
            .iter()
            .find(|(key, present)| *present && !allowed.contains(key))
        {
            Some((key, _)) => Err(Error::bad_input(format!(
                "{what}: kind \"{kind}\" takes no {key}; it takes {}",
                if allowed.is_empty() {
                    "no settings".to_string()
                } else {
                    allowed.join(", ")
                }
            ))),
            None => Ok(()),
        }
    };
    let Some(kind) = file.kind.as_deref() else {
        only("preset", &[])?;
        let named = preset(name).ok_or_else(|| {
            Error::bad_input(format!(
                "{what}: no kind given and {name:?} is not a preset ({}); \
                 add kind = \"plain\", \"lock-timeout-retry\", \"kill-blockers\" or \"wait-for-idle\"",
                PRESET_NAMES.join(", ")
            ))
        })?;
        return with_ddl_and_settings(&what, named.strategy, file);
    };
    const RETRY_KEYS: [&str; 6] = [
        "lock_timeout",
        "statement_timeout",
        "max_tries",
        "backoff",
        "schedule",
        "set_local",
    ];
    let strategy = match kind {
        "plain" => {
            only(kind, &[])?;
            Strategy::Plain
        }
        "lock-timeout-retry" => {
            only(kind, &RETRY_KEYS)?;
            Strategy::LockTimeoutRetry(parse_retry(&what, file)?)
        }
        "kill-blockers" => {
            only(kind, &["grace"])?;
            Strategy::KillBlockers {
                grace: match &file.grace {
                    Some(text) => parse_duration(&format!("{what}: grace"), text)?,
                    None => Duration::from_secs(1),
                },
            }
        }
        "wait-for-idle" => {
            let mut allowed = RETRY_KEYS.to_vec();
            allowed.push("older_than");
            only(kind, &allowed)?;
            Strategy::WaitForIdle {
                older_than: match &file.older_than {
                    Some(text) => parse_duration(&format!("{what}: older_than"), text)?,
                    None => Duration::from_secs(1),
                },
                retry: parse_retry(&what, file)?,
            }
        }
        other => {
            return Err(Error::bad_input(format!(
                "{what}: unknown kind \"{other}\"; use \"plain\", \"lock-timeout-retry\", \
                 \"kill-blockers\" or \"wait-for-idle\", or leave kind out to use a preset ({})",
                PRESET_NAMES.join(", ")
            )));
        }
    };
    with_ddl_and_settings(&what, strategy, file)
}

/// Adds the fields every kind takes: its own migration steps and session settings.
fn with_ddl_and_settings(
    what: &str,
    strategy: Strategy,
    file: &StrategyFile,
) -> Result<NamedStrategy, Error> {
    if file.ddl.as_ref().is_some_and(|steps| steps.is_empty()) {
        return Err(Error::bad_input(format!(
            "{what}: ddl = [] has no statements; list the migration steps or leave ddl out"
        )));
    }
    let settings: Vec<(String, String)> = file
        .settings
        .iter()
        .flatten()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    if let Some((name, _)) = settings.iter().find(|(name, _)| {
        !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    }) {
        return Err(Error::bad_input(format!(
            "{what}: settings key {name:?} is not a PostgreSQL setting name"
        )));
    }
    Ok(NamedStrategy {
        name: file.name.clone(),
        strategy,
        ddl_steps: file.ddl.clone(),
        settings,
    })
}

/// The retry settings of `lock-timeout-retry` and `wait-for-idle`: either
/// `lock_timeout` + `max_tries` + `backoff`, or an explicit `schedule`.
fn parse_retry(what: &str, file: &StrategyFile) -> Result<RetryPolicy, Error> {
    let statement_timeout = file
        .statement_timeout
        .as_deref()
        .map(|text| parse_duration(&format!("{what}: statement_timeout"), text))
        .transpose()?;
    let schedule = match &file.schedule {
        Some(pairs) => {
            if file.lock_timeout.is_some() || file.max_tries.is_some() || file.backoff.is_some() {
                return Err(Error::bad_input(format!(
                    "{what}: give either schedule = [[\"lock_timeout\", \"sleep\"], ...] or \
                     lock_timeout/max_tries/backoff, not both"
                )));
            }
            if pairs.is_empty() {
                return Err(Error::bad_input(format!(
                    "{what}: schedule = [] has no tries; list at least one [\"500ms\", \"1s\"]"
                )));
            }
            let steps = pairs
                .iter()
                .enumerate()
                .map(|(index, (lock_timeout, sleep))| {
                    let at = format!("{what}: schedule[{index}]");
                    Ok(Step {
                        lock_timeout: parse_lock_timeout(&at, lock_timeout)?,
                        sleep: parse_duration(&format!("{at} sleep"), sleep)?,
                    })
                })
                .collect::<Result<Vec<_>, Error>>()?;
            Schedule::Steps(steps)
        }
        None => {
            let lock_timeout = match &file.lock_timeout {
                Some(text) => parse_lock_timeout(what, text)?,
                None => {
                    return Err(Error::bad_input(format!(
                        "{what}: needs lock_timeout (e.g. lock_timeout = \"500ms\") or a schedule"
                    )));
                }
            };
            let max_tries = file.max_tries.unwrap_or(10);
            if max_tries == 0 {
                return Err(Error::bad_input(format!(
                    "{what}: max_tries = 0; need at least 1 try"
                )));
            }
            let backoff = match &file.backoff {
                Some(backoff) => parse_backoff(what, backoff)?,
                None => Backoff::Linear {
                    step: Duration::from_secs(1),
                    cap: Duration::from_secs(5),
                },
            };
            Schedule::Uniform {
                lock_timeout,
                max_tries,
                backoff,
            }
        }
    };
    Ok(RetryPolicy {
        schedule,
        statement_timeout,
        set_local: file.set_local.unwrap_or(false),
    })
}

fn parse_lock_timeout(what: &str, text: &str) -> Result<Duration, Error> {
    let lock_timeout = parse_duration(&format!("{what}: lock_timeout"), text)?;
    if lock_timeout.is_zero() {
        return Err(Error::bad_input(format!(
            "{what}: lock_timeout = 0 waits forever; use kind = \"plain\" for that, or a timeout like \"500ms\""
        )));
    }
    Ok(lock_timeout)
}

fn parse_backoff(what: &str, file: &BackoffFile) -> Result<Backoff, Error> {
    let duration = |key: &str, value: &Option<String>| -> Result<Duration, Error> {
        match value {
            Some(text) => parse_duration(&format!("{what}: backoff {key}"), text),
            None => Err(Error::bad_input(format!(
                "{what}: backoff kind \"{}\" needs {key}, e.g. {key} = \"1s\"",
                file.kind
            ))),
        }
    };
    let refuse = |key: &str, present: bool| -> Result<(), Error> {
        if present {
            Err(Error::bad_input(format!(
                "{what}: backoff kind \"{}\" takes no {key}",
                file.kind
            )))
        } else {
            Ok(())
        }
    };
    match file.kind.as_str() {
        "linear" => {
            refuse("base", file.base.is_some())?;
            refuse("jitter", file.jitter.is_some())?;
            Ok(Backoff::Linear {
                step: duration("step", &file.step)?,
                cap: duration("cap", &file.cap)?,
            })
        }
        "exponential" => {
            refuse("step", file.step.is_some())?;
            let jitter = match file.jitter.as_deref() {
                None => Jitter::None,
                Some(text) => Jitter::parse(text).ok_or_else(|| {
                    Error::bad_input(format!(
                        "{what}: backoff jitter = \"{text}\"; use \"none\", \"full\" or \"add-up-to-50%\""
                    ))
                })?,
            };
            Ok(Backoff::Exponential {
                base: duration("base", &file.base)?,
                cap: duration("cap", &file.cap)?,
                jitter,
            })
        }
        other => Err(Error::bad_input(format!(
            "{what}: unknown backoff kind \"{other}\"; use \"linear\" or \"exponential\""
        ))),
    }
}

fn check_unique_names(source: &str, strategies: &[NamedStrategy]) -> Result<(), Error> {
    for (index, strategy) in strategies.iter().enumerate() {
        if strategies[..index]
            .iter()
            .any(|earlier| earlier.name == strategy.name)
        {
            return Err(Error::bad_input(format!(
                "{source}: strategy {} is defined twice; give each [[strategies]] its own name",
                strategy.name
            )));
        }
    }
    Ok(())
}

fn pick_strategy(
    source: &str,
    defined: &[NamedStrategy],
    name: &str,
) -> Result<NamedStrategy, Error> {
    defined
        .iter()
        .find(|strategy| strategy.name == name)
        .cloned()
        .or_else(|| preset(name))
        .ok_or_else(|| {
            let names: Vec<&str> = defined.iter().map(|s| s.name.as_str()).collect();
            Error::bad_input(format!(
                "unknown strategy {name:?}; {source} defines: {}; the presets are: {}, or all",
                names.join(", "),
                PRESET_NAMES.join(", ")
            ))
        })
}

/// `results/<workload>-<UTC timestamp>`, e.g. `results/add-column-20261130T131913Z`.
pub fn default_out_dir(workload: &str, now: SystemTime) -> PathBuf {
    let stamp: String = humantime::format_rfc3339_seconds(now)
        .to_string()
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    Path::new("results").join(format!("{workload}-{stamp}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> CommonArgs {
        CommonArgs {
            db_url: None,
            clients: None,
            rate: None,
            pool_size: None,
            client_timeout: None,
            latency_limit: None,
            duration: None,
            out: None,
            quiet: true,
            variables: Vec::new(),
            pg_bin: None,
            no_observer: false,
            expect: Vec::new(),
            seed: Some(1),
        }
    }

    #[test]
    fn open_loop_flags_are_checked_together() {
        let error = |change: fn(&mut CommonArgs)| {
            let mut flags = args();
            change(&mut flags);
            Config::new(None, compare(), &flags)
                .unwrap_err()
                .to_string()
        };
        let message = error(|flags| flags.pool_size = Some(8));
        assert!(message.contains("--pool-size needs --rate"), "{message}");
        let message = error(|flags| flags.latency_limit = Some("500ms".into()));
        assert!(message.contains("add --rate TPS"), "{message}");
        let message = error(|flags| flags.rate = Some(0.0));
        assert!(
            message.contains(
                "--rate 0: the rate must be a positive number of transactions per second"
            ),
            "{message}"
        );
        let message = error(|flags| {
            flags.rate = Some(100.0);
            flags.client_timeout = Some("1".into());
        });
        assert!(
            message.contains("--client-timeout 1 has no unit"),
            "{message}"
        );

        let mut flags = args();
        flags.rate = Some(250.0);
        flags.pool_size = Some(8);
        flags.client_timeout = Some("1s".into());
        flags.latency_limit = Some("500ms".into());
        let config = Config::new(None, compare(), &flags).unwrap();
        assert_eq!(config.load.clients, 8);
        assert_eq!(config.load.rate_tps, Some(250.0));
        assert_eq!(config.load.client_timeout, Some(Duration::from_secs(1)));
        assert_eq!(config.load.latency_limit, Some(Duration::from_millis(500)));
    }

    fn compare() -> Mode {
        Mode::Compare {
            strategies: Vec::new(),
        }
    }

    #[test]
    fn the_reference_workload_resolves() {
        let config = Config::new(None, compare(), &args()).unwrap();
        assert_eq!(config.workload_name, "add-column");
        assert_eq!(config.load.clients, 4);
        assert_eq!(config.load.duration_s(), 24);
        let blocker = config.blocker.unwrap();
        assert_eq!(blocker.at, Duration::from_secs(4));
        assert_eq!(blocker.hold, Duration::from_secs(12));
        assert_eq!(config.ddl.unwrap().at, Duration::from_secs(6));
        let names: Vec<&str> = config.strategies.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["naive", "retry"]);
        // The bundled workload's own retry is exactly the reference preset.
        assert_eq!(config.strategies[1], preset("retry").unwrap());
        assert_eq!(config.strategies[0], preset("naive").unwrap());
    }

    #[test]
    fn presets_resolve_by_name_and_all_runs_every_one() {
        let mode = Mode::Compare {
            strategies: vec!["gitlab".into(), "kill-blockers".into()],
        };
        let config = Config::new(None, mode, &args()).unwrap();
        assert_eq!(config.strategies[0], preset("gitlab").unwrap());
        assert_eq!(config.strategies[1], preset("kill-blockers").unwrap());
        let all = Config::new(
            None,
            Mode::Compare {
                strategies: vec!["all".into()],
            },
            &args(),
        )
        .unwrap();
        let names: Vec<&str> = all.strategies.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, PRESET_NAMES);
    }

    #[test]
    fn an_explicit_schedule_gives_each_try_its_timeout_and_sleep() {
        let file = StrategyFile {
            name: "custom".into(),
            kind: Some("lock-timeout-retry".into()),
            schedule: Some(vec![
                ("100ms".into(), "50ms".into()),
                ("1s".into(), "5s".into()),
            ]),
            set_local: Some(true),
            ..StrategyFile::default()
        };
        let strategy = parse_strategy("w", &file).unwrap();
        let Strategy::LockTimeoutRetry(policy) = strategy.strategy else {
            panic!("{strategy:?}")
        };
        assert_eq!(
            policy.schedule,
            Schedule::Steps(vec![
                Step {
                    lock_timeout: Duration::from_millis(100),
                    sleep: Duration::from_millis(50)
                },
                Step {
                    lock_timeout: Duration::from_secs(1),
                    sleep: Duration::from_secs(5)
                },
            ])
        );
        assert!(policy.set_local);
        let both = StrategyFile {
            lock_timeout: Some("1s".into()),
            ..file
        };
        let message = parse_strategy("w", &both).unwrap_err().to_string();
        assert!(message.contains("not both"), "{message}");
    }

    #[test]
    fn a_strategy_without_kind_must_be_a_preset() {
        let file = StrategyFile {
            name: "pgroll".into(),
            ..StrategyFile::default()
        };
        assert_eq!(
            parse_strategy("w", &file).unwrap(),
            preset("pgroll").unwrap()
        );
        let unknown = StrategyFile {
            name: "mine".into(),
            ..StrategyFile::default()
        };
        let message = parse_strategy("w", &unknown).unwrap_err().to_string();
        assert!(message.contains("is not a preset"), "{message}");
    }

    #[test]
    fn a_duration_without_unit_says_how_to_write_it() {
        let message = parse_duration("[ddl] at", "6").unwrap_err().to_string();
        assert_eq!(
            message,
            "[ddl] at = \"6\" has no unit; write \"6s\" (or ms, min)"
        );
        assert!(parse_duration("x", "soon").is_err());
        assert_eq!(
            parse_duration("x", "1.5s").unwrap(),
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn flags_override_and_are_checked() {
        let mut flags = args();
        flags.clients = Some(0);
        let err = Config::new(None, compare(), &flags).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("--clients 0"));

        let mut flags = args();
        flags.duration = Some("5s".into());
        let message = Config::new(None, compare(), &flags)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("[ddl] at = \"6s\" is not before the end"),
            "{message}"
        );

        let mut flags = args();
        flags.duration = Some("10s".into());
        flags.clients = Some(2);
        let config = Config::new(None, compare(), &flags).unwrap();
        assert_eq!(config.load.clients, 2);
        assert_eq!(config.load.duration_s(), 10);
    }

    #[test]
    fn unknown_strategies_name_the_defined_ones() {
        let mode = Mode::Compare {
            strategies: vec!["naive".into(), "yolo".into()],
        };
        let message = Config::new(None, mode, &args()).unwrap_err().to_string();
        assert!(message.contains("\"yolo\""), "{message}");
        assert!(message.contains("naive, retry"), "{message}");
    }

    #[test]
    fn load_only_has_no_blocker_and_no_ddl() {
        let config = Config::new(None, Mode::LoadOnly, &args()).unwrap();
        assert!(config.blocker.is_none());
        assert!(config.ddl.is_none());
        assert_eq!(config.strategies.len(), 1);
        assert_eq!(config.strategies[0].name, "load");
    }

    #[test]
    fn set_needs_name_and_value() {
        let mut flags = args();
        flags.variables = vec!["scale".into()];
        let message = Config::new(None, compare(), &flags)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("--set scale: expected NAME=VALUE"),
            "{message}"
        );
    }

    #[test]
    fn strategy_fields_must_fit_the_kind() {
        let plain_with_timeout = StrategyFile {
            name: "x".into(),
            kind: Some("plain".into()),
            lock_timeout: Some("1s".into()),
            ..StrategyFile::default()
        };
        let message = parse_strategy("w", &plain_with_timeout)
            .unwrap_err()
            .to_string();
        assert!(message.contains("takes no lock_timeout"), "{message}");

        let retry_without_timeout = StrategyFile {
            kind: Some("lock-timeout-retry".into()),
            lock_timeout: None,
            ..plain_with_timeout
        };
        let message = parse_strategy("w", &retry_without_timeout)
            .unwrap_err()
            .to_string();
        assert!(message.contains("needs lock_timeout"), "{message}");
    }

    #[test]
    fn default_out_dir_has_workload_and_utc_stamp() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_000_000);
        let dir = default_out_dir("add-column", at);
        assert_eq!(dir, Path::new("results/add-column-20261130T005320Z"));
    }
}
