//! `stallbench compare` on MariaDB: a throwaway `mariadbd` or `--db-url`'s server, each strategy
//! of a MariaDB workload in turn, and then the PostgreSQL path's own
//! exporters, charts, console tables and expectations on the resulting
//! `RunReport`: one results folder, written the same way.
//!
//! `run` is the same with one strategy, or the load alone (`--load-only`);
//! `--repeat N` runs each strategy N times, interleaved; `--sweep` runs the
//! whole plan at each value of `clients` or `blocker.hold` on one server,
//! a folder per value and the sweep's files beside them ([`super::sweep`]).
//! Flags the MariaDB path does not take are refused by name.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::ddl::Strategy;
use super::ptosc;
use super::scenario::{create_database, run_strategy};
use super::sweep;
use super::target::{Target, is_mariadb_url, parse_url, shown_url};
use super::workload::{MariadbWorkload, bundled, names_mariadb, parse, strategies_named};
use crate::cli::CommonArgs;
use crate::config::Sweep;
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

/// One point of a plan: the workload at one sweep value (the plan's own
/// without a sweep) and the folder its results go to.
struct Point {
    /// The sweep's value; `None` without a sweep.
    value: Option<String>,
    workload: MariadbWorkload,
    out_dir: PathBuf,
}

/// The points of `plan`, written under `out_dir`: one, or one per sweep value.
fn points(plan: &Plan, out_dir: &Path) -> Result<Vec<Point>, Error> {
    let Some(sweep) = &plan.sweep else {
        return Ok(vec![Point {
            value: None,
            workload: plan.workload.clone(),
            out_dir: out_dir.to_path_buf(),
        }]);
    };
    sweep
        .values
        .iter()
        .map(|value| {
            Ok(Point {
                value: Some(value.clone()),
                workload: sweep::at_value(&plan.workload, sweep, value)?,
                out_dir: out_dir.join(sweep.folder(value)),
            })
        })
        .collect()
}

/// Runs `plan` and writes its folders, its console tables and its verdicts.
fn execute(plan: Plan, args: &CommonArgs) -> Result<i32, Error> {
    for strategy in &plan.strategies {
        if let Strategy::PtOsc(_) = strategy {
            ptosc::find_program(strategy.name())?;
        }
    }
    let out = parse_out_dir(args.out.as_deref(), args.force, &plan.workload.name)?;
    let points = points(&plan, &out.dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::runtime(format!("starting the async runtime: {err}")))?;
    let runs = (plan.strategies.as_slice(), plan.repeat);
    let (reports, target) = runtime.block_on(async {
        tokio::select! {
            ran = run_all(args.db_url.as_deref(), &points, runs, &out.dir, args.quiet) => ran,
            _ = tokio::signal::ctrl_c() => Err(Error::runtime(
                "interrupted (Ctrl-C): a throwaway MariaDB server was stopped and removed; \
                 no results were written for the strategy in progress",
            )),
        }
    })?;
    let mut failed_at = Vec::new();
    let mut point_reports = Vec::new();
    for (point, strategies) in points.iter().zip(reports) {
        let report = RunReport {
            workload: point.workload.name.clone(),
            strategies,
            interruption: None,
            load_on: Default::default(),
            load_loop: Default::default(),
        };
        let label = point
            .value
            .as_deref()
            .zip(plan.sweep.as_ref())
            .map(|(value, sweep)| sweep.label(value));
        if write_point(point, &report, runs, &target, label.as_deref())? {
            failed_at.push(label.unwrap_or_default());
        }
        point_reports.push(report);
    }
    let console = match &plan.sweep {
        None => console::summary_table(&point_reports[0]),
        Some(sweep) => sweep::write_files(&out.dir, sweep, &plan.workload.name, &point_reports)?,
    };
    output::write_stdout(&console)?;
    if plan.sweep.is_some() && !plan.workload.expectations.is_empty() {
        output::write_stdout(&format!("{}\n", ci::sweep_verdict(&failed_at)))?;
    }
    output::write_stdout(&format!("results: {}\n", out.dir.display()))?;
    Ok(match failed_at.is_empty() {
        true => exit_code::SUCCESS,
        false => exit_code::EXPECTATION_FAILED,
    })
}

/// The files of one point's folder, and its expectations judged and printed
/// (after `label` and a colon, for a sweep value); whether any failed.
fn write_point(
    point: &Point,
    report: &RunReport,
    runs: (&[Strategy], u32),
    target: &str,
    label: Option<&str>,
) -> Result<bool, Error> {
    export::write_all(report, &point.out_dir)?;
    plot::draw_all(report, &point.out_dir)?;
    write_files(&point.out_dir, &[run_json(&point.workload, runs, target)?])?;
    let results = expect::evaluate(&point.workload.expectations, report);
    for line in ci::report_lines_at(label, &results) {
        output::write_stdout(&format!("{line}\n"))?;
    }
    write_files(
        &point.out_dir,
        &ci::result_files(report, &results, &point.out_dir)?,
    )?;
    Ok(expect::any_failed(&results))
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
    /// `--sweep`: the plan runs at each of its values.
    pub sweep: Option<Sweep>,
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
    let sweep = sweep::parse(args.sweep.as_ref(), &workload)?;
    Ok(Plan {
        workload,
        strategies,
        repeat,
        sweep,
    })
}

/// Opens the target, runs each strategy of each point on it, keeps a
/// throwaway server's log as `server.log` in `out_dir`; the reports of each
/// point and what the target was.
async fn run_all(
    db_url: Option<&str>,
    points: &[Point],
    (strategies, repeats): (&[Strategy], u32),
    out_dir: &Path,
    quiet: bool,
) -> Result<(Vec<Vec<StrategyReport>>, String), Error> {
    let most_clients = points.iter().map(|point| point.workload.outage.clients);
    let max_connections = most_clients.max().unwrap_or(1) as u32 + 10;
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
    for point in points {
        let outage = &point.workload.outage;
        let mut point_reports = Vec::new();
        for repeat in 1..=repeats {
            for strategy in strategies {
                if !quiet {
                    let at = point
                        .value
                        .as_ref()
                        .map_or(String::new(), |value| format!(" at {value}"));
                    let of = match repeats {
                        1 => String::new(),
                        _ => format!(", repeat {repeat}/{repeats}"),
                    };
                    stderrln!(
                        "mariadb: {}{at}{of} for {} s ...",
                        strategy.name(),
                        outage.duration.as_secs()
                    );
                }
                // Each run sets up its tables in a fresh database.
                create_database(&target.opts())
                    .await
                    .map_err(|err| Error::runtime(format!("{}: {err:#}", target.describe())))?;
                let report = run_strategy(&target.opts(), outage, *strategy, repeat).await?;
                point_reports.push(report);
                // The server settles (the ALTER's table rebuilt) before the next strategy's setup.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        reports.push(point_reports);
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
