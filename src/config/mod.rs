//! The validated configuration of one `compare` or `run`: the workload file and
//! the command-line flags, checked once. Every later stage trusts it.
//!
//! `Config::new` reads one section at a time, in the order the checks report
//! errors: load, blocker, ddl, strategies, expectations, database, output. Each
//! section lives in its own file with the types it produces.

mod blocker;
mod check;
mod connections;
mod ddl;
pub(crate) mod expect;
mod load;
mod objects;
pub(crate) mod out_dir;
mod pool;
mod repetition;
mod replica;
mod server;
mod strategies;
mod variants;

use std::path::PathBuf;

use crate::cli::CommonArgs;
use crate::engine::postgres::server::ServerRequest;
use crate::error::Error;
use crate::strategy::{NamedStrategy, PRESET_NAMES};
use crate::workload::{self, WorkloadFile};

pub use crate::cli::in_ci;
pub use crate::duration::{MAX_DURATION, parse_duration};
pub use crate::strategy::LOAD_ONLY_STRATEGY;
pub use blocker::{BlockerConfig, BlockerKind};
pub use check::Selection;
pub use check::{
    BLOCKER_AT, BlockerChoice, Budgets, CheckConfig, DDL_AT, DEFAULT_ROWS, Data, LoadChoice,
    RowCounts, WorkloadLoad,
};
pub use connections::{ConnLimit, ConnectionNeeds, FreeSlots};
pub use ddl::DdlConfig;
pub use expect::Expectation;
pub use load::{LoadConfig, MAX_CLIENTS, Protocol, WeightedScript};
pub use objects::{Objects, rollback_blind_spots};
pub use pool::{PoolConfig, Recycling};
pub use repetition::{MAX_REPEATS, Sweep, SweepSetting, sweep_x_value};
pub use replica::ReplicaConfig;
pub use server::{parse_server, server_from_environment};
pub use variants::{Expected, Invariant, Isolation, TRANSACTIONS, Variant};

use blocker::{check_blocker_ends, parse_blocker};
use ddl::parse_ddl;
use load::parse_load;
use objects::{check_in_place_writes, parse_objects};
use out_dir::parse_out_dir;
use repetition::{args_at, parse_repeat, parse_sweep};
use replica::parse_replica;
use strategies::{parse_strategies, select_strategies, with_lock_timeout};
use variants::{parse_invariants, parse_variants};

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

impl Mode {
    /// The mode of `run`'s flags: `--load-only`, else `--strategy NAME`.
    pub fn of_run(load_only: bool, strategy: Option<String>) -> Result<Mode, Error> {
        match (load_only, strategy) {
            (true, _) => Ok(Mode::LoadOnly),
            (false, Some(strategy)) => Ok(Mode::Run { strategy }),
            (false, None) => Err(Error::bad_input("run needs --strategy NAME or --load-only")),
        }
    }
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
    pub database: DatabaseSpec,
    /// Whose objects the run uses (`--in-place`) and whether its DDL stays (`--apply`).
    pub objects: Objects,
    pub out_dir: PathBuf,
    /// Files of an earlier run in `out_dir` that `--force` replaces; empty without `--force`.
    pub replaced_files: Vec<PathBuf>,
    pub quiet: bool,
    /// Whether the progress line is printed every second: not with `--quiet`,
    /// and in CI only with `--progress`.
    pub progress: bool,
    /// Whether the run is in CI ([`in_ci`]): it then says so when it has no bound.
    pub ci: bool,
    /// CI bounds from `[expect.*]` and `--expect`, checked after the run.
    pub expectations: Vec<Expectation>,
    /// Sample the lock queue (off only to measure the observer's cost).
    pub observe_locks: bool,
    pub seed: u64,
    /// How many times each strategy runs, interleaved (`--repeat`, `[load] repeat`).
    pub repeat: u32,
    /// The setting `--sweep` varies and its values; `None` without a sweep,
    /// and in the config of one of its values (see [`Config::at_sweep_value`]).
    pub sweep: Option<Sweep>,
    /// The hot standby beside the throwaway server, and who runs on it;
    /// `None` without `[replica]` or `--replica`.
    pub replica: Option<ReplicaConfig>,
    /// `[[variants]]`: variants of the load, run as the strategies of the same
    /// names (see [`Config::for_strategy`]); empty for a workload without them.
    pub variants: Vec<Variant>,
    /// `[[invariants]]`: checked on the workload's data after each run.
    pub invariants: Vec<Invariant>,
}

/// Where the run happens.
#[derive(Debug, Clone)]
pub enum DatabaseSpec {
    /// A throwaway server started by the harness, of the binaries `server` asks for.
    Throwaway { server: ServerRequest },
    /// A real server (`--db-url` or `DATABASE_URL`).
    Url(String),
}

impl Config {
    /// Builds the config of one `compare` or `run` from the workload and the flags.
    pub fn new(workload_arg: Option<&str>, mode: Mode, args: &CommonArgs) -> Result<Config, Error> {
        Config::build(workload_arg, mode, args, None).map_err(Error::one_line)
    }

    /// The config of one value of `sweep` (of the config `Config::new` built
    /// from the same arguments): the flag the setting stands for set to
    /// `value` and checked as that flag is (a strategy's `lock_timeout` as its
    /// workload key), no sweep, writing into `out_dir`.
    pub fn at_sweep_value(
        workload_arg: Option<&str>,
        mode: Mode,
        args: &CommonArgs,
        sweep: &Sweep,
        value: &str,
        out_dir: PathBuf,
    ) -> Result<Config, Error> {
        let args = args_at(&sweep.setting, args, value, out_dir).map_err(Error::one_line)?;
        Config::build(workload_arg, mode, &args, Some((&sweep.setting, value)))
            .map_err(Error::one_line)
    }

    /// Builds the config; `at` is the sweep value it is built for, if any.
    fn build(
        workload_arg: Option<&str>,
        mode: Mode,
        args: &CommonArgs,
        at: Option<(&SweepSetting, &str)>,
    ) -> Result<Config, Error> {
        let scripts_from_flags =
            !args.workload.files.is_empty() || !args.workload.builtins.is_empty();
        let loaded = workload::choose(workload_arg, scripts_from_flags)?;
        let source = &loaded.source;
        let file = &loaded.file;

        let load = parse_load(&loaded, args)?;
        let load_only = mode == Mode::LoadOnly;
        let blocker = if load_only {
            None
        } else {
            parse_blocker(source, file.blocker.as_ref(), &args.workload, load.duration)?
        };
        let variants = parse_variants(&loaded)?;
        let invariants = parse_invariants(source, &file.invariants)?;
        // Variants compare the load itself: a migration is optional then.
        let no_ddl_given =
            file.ddl.is_none() && args.workload.ddl.is_empty() && args.workload.ddl_file.is_none();
        let ddl = if load_only || (!variants.is_empty() && no_ddl_given) {
            None
        } else {
            Some(parse_ddl(
                source,
                file.ddl.as_ref(),
                &args.workload,
                load.duration,
            )?)
        };
        // After both start times: a run too short for either is told about the starts first.
        if let Some(blocker) = &blocker {
            check_blocker_ends(source, blocker, load.duration)?;
        }
        let defined = match variants.is_empty() {
            true => parse_strategies(source, &file.strategies)?,
            false => variants.iter().map(Variant::as_strategy).collect(),
        };
        let expectations = parse_expectations(source, file, args, &defined, &mode)?;
        let mut strategies = select_strategies(source, defined, &mode)?;
        if let Some((SweepSetting::LockTimeout { strategy }, value)) = at {
            strategies = with_lock_timeout(strategies, strategy, value)?;
        }
        let repeat = parse_repeat(source, &file.load, args)?;
        let sweep = match at {
            Some(_) => None,
            None => parse_sweep(source, file.sweep.as_ref(), args.sweep.as_ref())?,
        };
        let output = parse_out_dir(args.out.as_deref(), args.force, &file.name)?;
        let database = database_of(args)?;
        let objects = parse_objects(args, &database, strategies.len(), &file.reset, source)?;
        check_in_place_writes(objects, &load.scripts, blocker.as_ref())?;
        let replica = parse_replica(source, file, args, (&database, at), &load, blocker.as_ref())?;
        let ci = in_ci();

        Ok(Config {
            workload_name: file.name.clone(),
            description: file.description.clone(),
            setup_sql: file.setup.clone(),
            reset_sql: file.reset.clone(),
            load,
            blocker,
            ddl,
            strategies,
            database,
            objects,
            out_dir: output.dir,
            replaced_files: output.replaced_files,
            quiet: args.quiet,
            progress: !args.quiet && (args.progress || !ci),
            ci,
            expectations,
            observe_locks: !args.no_observer,
            seed: args.seed.unwrap_or_else(rand::random),
            repeat,
            sweep,
            replica,
            variants,
            invariants,
        })
    }

    /// The config `strategy`'s run runs with: for a variant, the load with its
    /// scripts and tries; for any other strategy this config.
    pub fn for_strategy(&self, strategy: &str) -> std::borrow::Cow<'_, Config> {
        match self
            .variants
            .iter()
            .find(|variant| variant.name == strategy)
        {
            Some(variant) => std::borrow::Cow::Owned(Config {
                load: variant.load(&self.load),
                ..self.clone()
            }),
            None => std::borrow::Cow::Borrowed(self),
        }
    }
}

/// `[expect.*]` and `--expect`. They may name the workload's strategies
/// (`defined`) and the presets, which an unknown name's error lists, and
/// `load` (the pseudo-strategy of `run --load-only`, which `collect` knows).
/// `run --load-only` runs none of the workload's strategies, so only its
/// `[expect.load]` and the flags apply (the other tables are checked, not kept).
fn parse_expectations(
    source: &str,
    file: &WorkloadFile,
    args: &CommonArgs,
    defined: &[NamedStrategy],
    mode: &Mode,
) -> Result<Vec<Expectation>, Error> {
    let mut known: Vec<String> = defined.iter().map(|s| s.name.clone()).collect();
    for name in PRESET_NAMES {
        // Each name once: the list appears in the error message of an unknown one.
        if !known.iter().any(|known| known == name) {
            known.push(name.to_string());
        }
    }
    let all = expect::collect(source, &file.expect, &args.expect, &known)?;
    if *mode != Mode::LoadOnly {
        return Ok(all);
    }
    let load_only: std::collections::BTreeMap<_, _> = file
        .expect
        .iter()
        .filter(|(strategy, _)| *strategy == LOAD_ONLY_STRATEGY)
        .map(|(strategy, table)| (strategy.clone(), table.clone()))
        .collect();
    expect::collect(source, &load_only, &args.expect, &known)
}

/// `--db-url`, else a non-empty `DATABASE_URL`, else a throwaway server.
fn database_of(args: &CommonArgs) -> Result<DatabaseSpec, Error> {
    let url = args.db_url.clone().or_else(|| {
        std::env::var("DATABASE_URL")
            .ok()
            .filter(|url| !url.is_empty())
    });
    Ok(match url {
        Some(url) => DatabaseSpec::Url(url),
        None => DatabaseSpec::Throwaway {
            server: parse_server(&args.server, &|name| std::env::var(name).ok())?,
        },
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::strategy::preset;

    fn args() -> CommonArgs {
        CommonArgs {
            quiet: true,
            seed: Some(1),
            ..CommonArgs::default()
        }
    }

    /// The error clap writes for `compare` with these flags.
    fn flag_error(flags: &[&str]) -> String {
        let command_line = ["stallbench", "compare"].iter().chain(flags);
        let parsed = <crate::cli::Cli as clap::Parser>::try_parse_from(command_line);
        parsed.unwrap_err().to_string()
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
        let message = error(|flags| flags.latency_limit = Some(Duration::from_millis(500)));
        assert!(message.contains("add --rate TPS"), "{message}");
        let message = error(|flags| flags.rate = Some(0.0));
        assert!(
            message.contains(
                "--rate 0: the rate must be a positive number of transactions per second"
            ),
            "{message}"
        );
        let message = flag_error(&["--rate", "100", "--client-timeout", "1"]);
        assert!(
            message.contains("--client-timeout 1 has no unit"),
            "{message}"
        );

        let mut flags = args();
        flags.rate = Some(250.0);
        flags.pool_size = Some(8);
        flags.client_timeout = Some(Duration::from_secs(1));
        flags.latency_limit = Some(Duration::from_millis(500));
        let config = Config::new(None, compare(), &flags).unwrap();
        assert_eq!(config.load.clients, 8);
        assert_eq!(config.load.rate_tps, Some(250.0));
        assert_eq!(config.load.client_timeout, Some(Duration::from_secs(1)));
        assert_eq!(config.load.latency_limit, Some(Duration::from_millis(500)));
    }

    #[test]
    fn max_tries_defaults_to_one_and_lock_timeouts_need_more() {
        let config = Config::new(None, compare(), &args()).unwrap();
        assert_eq!(
            (config.load.max_tries, config.load.retry_lock_timeouts),
            (1, false)
        );
        let mut flags = args();
        flags.max_tries = Some(0);
        flags.retry_lock_timeouts = true;
        let config = Config::new(None, compare(), &flags).unwrap();
        assert_eq!(
            (config.load.max_tries, config.load.retry_lock_timeouts),
            (0, true)
        );
        flags.max_tries = None;
        let message = Config::new(None, compare(), &flags)
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with(
                "--retry-lock-timeouts: retries need more than one try; add --max-tries N"
            ),
            "{message}"
        );
    }

    #[test]
    fn an_unknown_expect_lists_the_strategies_and_not_load() {
        let mut flags = args();
        flags.expect = vec!["nosuch.max_failed=0".into()];
        let message = Config::new(None, compare(), &flags)
            .unwrap_err()
            .to_string();
        let listed = message
            .split_once("(the workload defines: ")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(list, _)| list.split(", ").collect::<Vec<_>>())
            .unwrap_or_default();
        assert_eq!(listed[..3], ["naive", "retry", "gitlab"], "{message}");
        assert!(!listed.contains(&"load"), "{message}");
        flags.expect = vec!["load.max_failed=0".into()];
        assert!(Config::new(None, Mode::LoadOnly, &flags).is_ok());
    }

    #[test]
    fn a_load_only_run_keeps_only_the_expectations_of_load() {
        let mut flags = args();
        let strategies = |config: Config| -> Vec<String> {
            config
                .expectations
                .into_iter()
                .map(|expectation| expectation.strategy)
                .collect()
        };
        let compared = strategies(Config::new(None, compare(), &flags).unwrap());
        assert!(compared.contains(&"naive".to_string()), "{compared:?}");
        assert!(strategies(Config::new(None, Mode::LoadOnly, &flags).unwrap()).is_empty());
        flags.expect = vec!["load.max_failed=0".into()];
        let load_only = strategies(Config::new(None, Mode::LoadOnly, &flags).unwrap());
        assert_eq!(load_only, ["load"]);
    }

    #[test]
    fn the_pool_flags_need_the_pool_and_default_as_a_service_would() {
        let error = |change: fn(&mut CommonArgs)| {
            let mut flags = args();
            change(&mut flags);
            Config::new(None, compare(), &flags)
                .unwrap_err()
                .to_string()
        };
        let message = error(|flags| {
            flags.rate = Some(100.0);
            flags.pool.pool_timeout = Some(Duration::from_secs(1));
        });
        assert!(
            message.contains("--pool-timeout") && message.contains("add --pool-size"),
            "{message}"
        );
        let message = error(|flags| {
            flags.rate = Some(100.0);
            flags.pool_size = Some(4);
            flags.pool.max_in_flight = Some(0);
        });
        assert!(message.contains("max in flight 0"), "{message}");
        let message = error(|flags| {
            flags.rate = Some(100.0);
            flags.pool_size = Some(0);
        });
        assert!(
            message.contains("--pool-size 0; a pool needs at least 1 connection"),
            "{message}"
        );
        assert!(!message.contains("[load.pool]"), "{message}");

        let mut flags = args();
        flags.rate = Some(100.0);
        assert_eq!(
            Config::new(None, compare(), &flags).unwrap().load.pool,
            None
        );
        flags.pool_size = Some(4);
        let pool = Config::new(None, compare(), &flags)
            .unwrap()
            .load
            .pool
            .unwrap();
        assert_eq!(
            (
                pool.size,
                pool.wait_timeout,
                pool.recycling,
                pool.max_in_flight
            ),
            (4, Duration::from_secs(30), Recycling::Fast, None)
        );
        flags.pool.pool_timeout = Some(Duration::from_secs(1));
        flags.pool.pool_recycling = Some(Recycling::Verified);
        flags.pool.max_in_flight = Some(50);
        let pool = Config::new(None, compare(), &flags)
            .unwrap()
            .load
            .pool
            .unwrap();
        assert_eq!(
            (pool.wait_timeout, pool.recycling, pool.max_in_flight),
            (Duration::from_secs(1), Recycling::Verified, Some(50))
        );
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
    fn flags_override_and_are_checked() {
        let mut flags = args();
        flags.clients = Some(0);
        let err = Config::new(None, compare(), &flags).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("--clients 0"));

        let mut flags = args();
        flags.duration = Some(Duration::from_secs(5));
        let message = Config::new(None, compare(), &flags)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("[ddl] at = \"6s\" is not before the end"),
            "{message}"
        );

        let mut flags = args();
        flags.duration = Some(Duration::from_secs(17));
        flags.clients = Some(2);
        let config = Config::new(None, compare(), &flags).unwrap();
        assert_eq!(config.load.clients, 2);
        assert_eq!(config.load.duration_s(), 17);
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
    fn runaway_sizes_are_refused() {
        let mut flags = args();
        flags.clients = Some(u32::MAX);
        let message = Config::new(None, compare(), &flags)
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            "--clients 4294967295: more than 10000 clients, each a server connection; use fewer"
        );
        let message = flag_error(&["--duration", "18446744073709551615s"]);
        assert!(message.contains("is longer than 7days"), "{message}");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weights.toml");
        let text = "name = 'w'\nsetup = ''\n[load]\nclients = 1\nduration = '10s'\n\
                    [[load.scripts]]\nsql = 'SELECT 1'\nweight = 4294967295\n\
                    [[load.scripts]]\nsql = 'SELECT 2'\n";
        std::fs::write(&path, text).unwrap();
        let workload = path.to_str().unwrap();
        let message = Config::new(Some(workload), Mode::LoadOnly, &args())
            .unwrap_err()
            .to_string();
        assert!(
            message.ends_with(
                "[[load.scripts]] weights add up to more than 4294967295; use smaller weights \
                 (only their ratios matter)"
            ),
            "{message}"
        );
    }

    #[test]
    fn quoted_control_characters_are_escaped_to_keep_errors_on_one_line() {
        let message = flag_error(&["--client-timeout", "x=\r\n"]);
        assert_eq!(
            message,
            "error: --client-timeout x=\\r\\n is not a duration (expected number at 0); write it like \
             \"500ms\" or \"12s\"\n"
        );
    }
}
