//! `stallbench compare` on MariaDB: a throwaway `mariadbd` or `--db-url`'s server, each strategy
//! of a MariaDB workload in turn, and then the PostgreSQL path's own
//! exporters, charts, console tables and expectations on the resulting
//! `RunReport`: one results folder, written the same way.
//!
//! `run` is the same with one strategy, or the load alone (`--load-only`);
//! `--repeat N` runs each strategy N times, interleaved. Not yet here:
//! `--sweep`, the progress line; such flags are refused by name.

use std::path::Path;
use std::time::Duration;

use super::ddl::Strategy;
use super::ptosc;
use super::scenario::{create_database, run_strategy};
use super::target::{Target, is_mariadb_url, parse_url, shown_url};
use super::workload::{MariadbWorkload, bundled, names_mariadb, parse, strategies_named};
use crate::cli::CommonArgs;
use crate::config::out_dir::parse_out_dir;
use crate::engine::Engine;
use crate::error::{Error, exit_code};
use crate::export::{ci, console};
use crate::metrics::{RunReport, StrategyReport};
use crate::results::{OutputFile, RUN_JSON, SERVER_LOG, write_files};
use crate::{expect, export, output, plot};

/// The MariaDB workload a `compare` or `run` command line names, or `None`
/// when it is a PostgreSQL run: a bundled `mariadb-*` workload, a file that
/// says `engine = "mariadb"`, or no workload with `--engine mariadb`.
pub fn workload_of(
    workload: Option<&str>,
    engine: Option<Engine>,
) -> Result<Option<MariadbWorkload>, Error> {
    let found = match workload {
        None => None,
        Some(name) => match bundled(name) {
            Some(found) => Some(found),
            None if name.ends_with(".toml") && Path::new(name).is_file() => {
                let text = std::fs::read_to_string(name)
                    .map_err(|err| Error::bad_input(format!("{name}: {err}")))?;
                match names_mariadb(&text) {
                    true => Some(parse(name, &text)?),
                    false => None,
                }
            }
            None => None,
        },
    };
    match (found, engine) {
        (Some(_), Some(Engine::Postgres)) => Err(Error::bad_input(format!(
            "--engine postgres: workload {} is a MariaDB workload; drop --engine or choose a \
             PostgreSQL workload (stallbench workloads)",
            workload.unwrap_or_default()
        ))),
        (Some(found), _) => Ok(Some(found)),
        (None, Some(Engine::Mariadb)) => match workload {
            None => Ok(bundled("mariadb-add-column")),
            Some(name) => Err(Error::bad_input(format!(
                "--engine mariadb: workload {name} is not a MariaDB workload; use \
                 mariadb-add-column or a file with engine = \"mariadb\""
            ))),
        },
        (None, _) => Ok(None),
    }
}

/// The MariaDB workload of a command line (see [`workload_of`]), the engine
/// taken from `--engine`, else from a `--db-url` that is a MariaDB URL.
pub fn workload_for(
    workload: Option<&str>,
    args: &CommonArgs,
) -> Result<Option<MariadbWorkload>, Error> {
    let from_url = args
        .db_url
        .as_deref()
        .filter(|url| is_mariadb_url(url))
        .map(|_| Engine::Mariadb);
    workload_of(workload, args.engine.or(from_url))
}

/// Runs `strategies` (else the workload's) of `workload` on a throwaway
/// MariaDB server or `--db-url`'s and writes the results folder; the exit
/// code is 3 when an expectation failed.
pub fn compare(
    workload: MariadbWorkload,
    strategies: &[String],
    args: &CommonArgs,
) -> Result<i32, Error> {
    execute(plan(workload, strategies, args)?, args)
}

/// `run`: one strategy of `workload`, or with `load_only` its load alone
/// (no report, no DDL), written as `compare` writes its folder.
pub fn run(
    workload: MariadbWorkload,
    strategy: Option<&str>,
    load_only: bool,
    args: &CommonArgs,
) -> Result<i32, Error> {
    let names: Vec<String> = match (load_only, strategy) {
        (false, Some(name)) => vec![name.to_string()],
        _ => Vec::new(),
    };
    let mut plan = plan(workload, &names, args)?;
    if load_only {
        plan.strategies = vec![Strategy::LoadOnly];
    }
    execute(plan, args)
}

/// Runs `plan` and writes its folder, its console tables and its verdicts.
fn execute(plan: Plan, args: &CommonArgs) -> Result<i32, Error> {
    let Plan {
        workload,
        strategies,
        repeat,
    } = plan;
    for strategy in &strategies {
        if let Strategy::PtOsc(_) = strategy {
            ptosc::find_program(strategy.name())?;
        }
    }
    let out = parse_out_dir(args.out.as_deref(), args.force, &workload.name)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::runtime(format!("starting the async runtime: {err}")))?;
    let (reports, target) = runtime.block_on(async {
        tokio::select! {
            ran = run_all(args.db_url.as_deref(), &workload, (&strategies, repeat), &out.dir, args.quiet) => ran,
            _ = tokio::signal::ctrl_c() => Err(Error::runtime(
                "interrupted (Ctrl-C): a throwaway MariaDB server was stopped and removed; \
                 no results were written for the strategy in progress",
            )),
        }
    })?;
    let report = RunReport {
        workload: workload.name.clone(),
        strategies: reports,
        interruption: None,
        load_on: Default::default(),
        load_loop: Default::default(),
    };
    export::write_all(&report, &out.dir)?;
    plot::draw_all(&report, &out.dir)?;
    write_files(
        &out.dir,
        &[run_json(&workload, (&strategies, repeat), &target)?],
    )?;
    output::write_stdout(&console::summary_table(&report))?;
    let results = expect::evaluate(&workload.expectations, &report);
    for line in ci::report_lines(&results) {
        output::write_stdout(&format!("{line}\n"))?;
    }
    write_files(&out.dir, &ci::result_files(&report, &results, &out.dir)?)?;
    output::write_stdout(&format!("results: {}\n", out.dir.display()))?;
    Ok(match expect::any_failed(&results) {
        true => exit_code::EXPECTATION_FAILED,
        false => exit_code::SUCCESS,
    })
}

/// What a MariaDB `compare` or `run` runs, checked before any server starts.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The workload with the flags that override it (`--clients`, `--duration`).
    pub workload: MariadbWorkload,
    /// `--strategies`, else the workload's.
    pub strategies: Vec<Strategy>,
    /// `--repeat`: how often each strategy runs, interleaved (naive, retry,
    /// naive, retry, ...).
    pub repeat: u32,
}

/// The plan of `compare` of `workload` with `strategies` and `args`: flags
/// the MariaDB path does not take, a `--db-url` that is not a MariaDB URL
/// and unknown strategies are bad input.
pub fn plan(
    mut workload: MariadbWorkload,
    strategies: &[String],
    args: &CommonArgs,
) -> Result<Plan, Error> {
    refuse_unsupported(args)?;
    if let Some(url) = &args.db_url {
        if !is_mariadb_url(url) {
            return Err(Error::bad_input(format!(
                "--db-url {}: workload {} is a MariaDB workload; give a mysql:// or \
                 mariadb:// URL",
                shown_url(url),
                workload.name
            )));
        }
        parse_url(url)?;
    }
    let strategies = match strategies.is_empty() {
        true => workload.strategies.clone(),
        false => strategies_named(&workload.name, strategies)?,
    };
    if let Some(clients) = args.clients {
        workload.outage.clients = clients as usize;
    }
    if let Some(duration) = args.duration {
        workload.outage.duration = duration;
    }
    let repeat = args.repeat.unwrap_or(1);
    if repeat == 0 {
        return Err(Error::bad_input(
            "--repeat 0: each strategy must run at least once; use --repeat 1 or more",
        ));
    }
    Ok(Plan {
        workload,
        strategies,
        repeat,
    })
}

/// Opens the target, runs each strategy on it, keeps a throwaway server's
/// log as `server.log`; the reports and what the target was.
async fn run_all(
    db_url: Option<&str>,
    workload: &MariadbWorkload,
    (strategies, repeats): (&[Strategy], u32),
    out_dir: &Path,
    quiet: bool,
) -> Result<(Vec<StrategyReport>, String), Error> {
    let max_connections = workload.outage.clients as u32 + 10;
    let begun = std::time::Instant::now();
    let mut target = Target::open(db_url, max_connections).await?;
    if !quiet {
        stderrln!(
            "mariadb: {} ready in {:.1} s",
            target.describe(),
            begun.elapsed().as_secs_f64()
        );
    }
    target.create_database().await?;
    let mut reports = Vec::new();
    for repeat in 1..=repeats {
        for strategy in strategies {
            if !quiet {
                let of = match repeats {
                    1 => String::new(),
                    _ => format!(", repeat {repeat}/{repeats}"),
                };
                stderrln!(
                    "mariadb: {}{of} for {} s ...",
                    strategy.name(),
                    workload.outage.duration.as_secs()
                );
            }
            // Each run sets up its tables in a fresh database.
            create_database(&target.opts())
                .await
                .map_err(|err| Error::runtime(format!("{}: {err:#}", target.describe())))?;
            let report = run_strategy(&target.opts(), &workload.outage, *strategy, repeat).await?;
            reports.push(report);
            // The server settles (the ALTER's table rebuilt) before the next strategy's setup.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    target.finish().await?;
    std::fs::create_dir_all(out_dir)
        .map_err(|err| Error::runtime(format!("{}: {err}", out_dir.display())))?;
    if let Some(log) = target.log_path() {
        std::fs::copy(log, out_dir.join(SERVER_LOG))
            .map_err(|err| Error::runtime(format!("copying the server's log: {err}")))?;
    }
    Ok((reports, target.describe()))
}

/// Flags the MariaDB path does not take yet, each refused by name (none is
/// ignored silently).
fn refuse_unsupported(args: &CommonArgs) -> Result<(), Error> {
    let flags = &args.workload;
    let pool = &args.pool;
    let given = [
        (args.in_place, "--in-place"),
        (args.apply, "--apply"),
        (args.allow_writes, "--allow-writes"),
        (args.replica, "--replica"),
        (args.replica_url.is_some(), "--replica-url"),
        (args.load_on.is_some(), "--load-on"),
        (args.blocker_on.is_some(), "--blocker-on"),
        (args.rate.is_some(), "--rate"),
        (args.pool_size.is_some(), "--pool-size"),
        (args.client_timeout.is_some(), "--client-timeout"),
        (args.latency_limit.is_some(), "--latency-limit"),
        (args.max_tries.is_some(), "--max-tries"),
        (args.retry_lock_timeouts, "--retry-lock-timeouts"),
        (!args.variables.is_empty(), "--set"),
        (!args.expect.is_empty(), "--expect"),
        (args.no_observer, "--no-observer"),
        (args.seed.is_some(), "--seed"),
        (args.sweep.is_some(), "--sweep"),
        (args.protocol.is_some(), "--protocol"),
        (args.allow_shell, "--allow-shell"),
        (args.server.pg_bin.is_some(), "--pg-bin"),
        (args.server.pg_version.is_some(), "--pg-version"),
        (args.server.offline, "--offline"),
        (!flags.files.is_empty(), "--file"),
        (!flags.builtins.is_empty(), "--builtin"),
        (!flags.ddl.is_empty(), "--ddl"),
        (flags.ddl_file.is_some(), "--ddl-file"),
        (flags.ddl_at.is_some(), "--ddl-at"),
        (flags.blocker.is_some(), "--blocker"),
        (flags.blocker_at.is_some(), "--blocker-at"),
        (flags.blocker_hold.is_some(), "--blocker-hold"),
        (flags.blocker_kind.is_some(), "--blocker-kind"),
        (flags.no_blocker, "--no-blocker"),
        (pool.pool_timeout.is_some(), "--pool-timeout"),
        (
            pool.pool_connect_timeout.is_some(),
            "--pool-connect-timeout",
        ),
        (pool.pool_recycling.is_some(), "--pool-recycling"),
        (pool.max_in_flight.is_some(), "--max-in-flight"),
    ];
    match given.iter().find(|(set, _)| *set) {
        Some((_, flag)) => Err(Error::bad_input(format!(
            "{flag}: not supported with MariaDB yet; drop it (docs/mariadb.md lists what works)"
        ))),
        None => Ok(()),
    }
}

/// `run.json`: the engine, the workload and its strategies, the tool's version.
fn run_json(
    workload: &MariadbWorkload,
    (strategies, repeat): (&[Strategy], u32),
    target: &str,
) -> anyhow::Result<OutputFile> {
    let outage = &workload.outage;
    let value = serde_json::json!({
        "tool_version": env!("CARGO_PKG_VERSION"),
        "engine": "mariadb",
        "target": target,
        "workload": workload.name,
        "strategies": strategies.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "repeat": repeat,
        "clients": outage.clients,
        "duration_s": outage.duration.as_secs_f64(),
        "load_scripts": outage.load.iter().map(|script| serde_json::json!({
            "name": script.weighted.script.name,
            "weight": script.weighted.weight,
            "sql": script.weighted.text,
        })).collect::<Vec<_>>(),
        "blocker": { "sql": outage.report_sql, "at_s": outage.report_at.as_secs_f64(),
                     "hold_s": outage.report_hold.as_secs_f64() },
        "ddl": { "sql": outage.ddl, "at_s": outage.ddl_at.as_secs_f64() },
    });
    Ok(OutputFile {
        name: RUN_JSON.into(),
        bytes: serde_json::to_vec_pretty(&value)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_comes_from_the_workload_or_the_flag() {
        let named = workload_of(Some("mariadb-add-column"), None).unwrap();
        assert_eq!(named.unwrap().name, "mariadb-add-column");
        let by_flag = workload_of(None, Some(Engine::Mariadb)).unwrap();
        assert_eq!(by_flag.unwrap().name, "mariadb-add-column");
        assert!(workload_of(Some("add-column"), None).unwrap().is_none());
        assert!(workload_of(None, None).unwrap().is_none());
    }

    #[test]
    fn flags_the_mariadb_path_does_not_take_are_refused_by_name() {
        let workload = bundled("mariadb-add-column").unwrap();
        let cases = [
            (
                CommonArgs {
                    repeat: Some(0),
                    ..Default::default()
                },
                "--repeat 0: each strategy must run",
            ),
            (
                CommonArgs {
                    rate: Some(100.0),
                    ..Default::default()
                },
                "--rate: not supported with MariaDB yet",
            ),
            (
                CommonArgs {
                    db_url: Some("postgres://x:secret@h/db".into()),
                    ..Default::default()
                },
                "--db-url postgres://x:***@h/db: workload mariadb-add-column is a MariaDB",
            ),
            (
                CommonArgs {
                    seed: Some(1),
                    ..Default::default()
                },
                "--seed: not supported with MariaDB yet",
            ),
        ];
        for (args, expected) in cases {
            let err = plan(workload.clone(), &[], &args).unwrap_err();
            assert_eq!(err.exit_code(), exit_code::BAD_INPUT);
            assert!(err.to_string().starts_with(expected), "{err}");
        }
        let args = CommonArgs {
            repeat: Some(3),
            ..Default::default()
        };
        assert_eq!(plan(workload, &[], &args).unwrap().repeat, 3);
    }

    #[test]
    fn a_workload_of_the_other_engine_is_bad_input() {
        let err = workload_of(Some("add-column"), Some(Engine::Mariadb)).unwrap_err();
        assert_eq!(err.exit_code(), exit_code::BAD_INPUT);
        assert!(
            err.to_string().contains("is not a MariaDB workload"),
            "{err}"
        );
        let err = workload_of(Some("mariadb-add-column"), Some(Engine::Postgres)).unwrap_err();
        assert!(err.to_string().contains("is a MariaDB workload"), "{err}");
    }
}
