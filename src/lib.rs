//! stallbench: a load-and-stall benchmark harness for PostgreSQL.
//!
//! The pipeline (see docs/architecture.md): workload + flags -> [`config::Config`] ->
//! [`database::Database`] (throwaway server or `--db-url`) -> setup SQL -> for each
//! strategy: reset -> [`scenario::run_strategy`] -> [`scenario::assemble_report`]
//! -> [`metrics::RunReport`] -> [`export`] and [`plot`] (the results folder, written
//! again after each strategy) -> [`console`] (the tables on stdout) -> [`expect`]
//! (the verdicts, their files, exit code 3 on a failure).
//!
//! [`run`] is the whole program, callable in-process from tests.
//!
//! A run that is stopped (Ctrl-C, SIGTERM, the throwaway server's death) is not
//! dropped: the stop fires the run's [`scenario::Interrupt`], the strategy in
//! progress winds down and is written up to its last whole second, and then
//! the stop is the error the program exits with.

pub mod check;
pub mod cli;
pub mod config;
pub mod conninfo;
pub mod console;
pub mod error;
pub mod expect;
pub mod export;
pub mod fingerprint;
pub mod metrics;
#[macro_use]
pub mod output;
pub mod database;
mod measure;
pub mod pgwire;
pub mod plan;
pub mod plot;
pub mod preflight;
pub mod results;
pub mod role;
pub mod scenario;
pub mod script;
pub mod server;
pub mod serverlog;
pub mod stop;
pub mod strategy;
#[cfg(test)]
pub(crate) mod testing;
pub mod workload;

use std::future::Future;
use std::path::Path;
use std::pin::{Pin, pin};
use std::time::Duration;

use anyhow::Context;

use crate::cli::{Cli, Command, CommonArgs};
use crate::config::{Config, Mode};
use crate::database::Database;
pub use crate::error::Error;
use crate::export::run_json::RunFile;
use crate::metrics::RunReport;
use crate::plan::Plan;
use crate::plan::progress::PlanProgress;
use crate::scenario::Interrupt;
use crate::stop::Stopped;

/// How long after a failed run the throwaway server's death is still taken as its cause.
const SERVER_DEATH_GRACE: Duration = Duration::from_millis(200);

/// How long a stopped run may take to wind down and write what it measured.
const WIND_DOWN_LIMIT: Duration = Duration::from_secs(15);

/// Runs one command line; returns the process exit code for a finished run
/// (0, or 3 when an expectation failed) and an `Error` (exit 1, 2 or 141) otherwise.
pub fn run(cli: Cli) -> Result<i32, Error> {
    match cli.command {
        Command::Workloads => {
            output::write_stdout(&list_workloads()?)?;
            Ok(0)
        }
        Command::Plot { dir } => {
            redraw_charts(&dir)?;
            Ok(0)
        }
        Command::Check { dir, args } => check::check(&config::CheckConfig::new(&dir, &args)?),
        Command::Compare {
            workload,
            strategies,
            common,
        } => run_benchmark(workload.as_deref(), Mode::Compare { strategies }, &common),
        Command::Run {
            workload,
            strategy,
            load_only,
            common,
        } => run_benchmark(
            workload.as_deref(),
            Mode::of_run(load_only, strategy)?,
            &common,
        ),
    }
}

/// `stallbench workloads`: one line per bundled workload.
pub fn list_workloads() -> Result<String, Error> {
    let mut out = String::new();
    for (name, _) in workload::BUNDLED {
        let loaded = workload::load(name)?;
        out.push_str(&format!("{name:<22} {}\n", loaded.file.description));
    }
    Ok(out)
}

/// `stallbench plot DIR`: re-draws the charts from the folder's files; in a
/// sweep's folder `sweep.png` and the charts of every value's folder.
pub fn redraw_charts(dir: &Path) -> Result<(), Error> {
    let bad_input = |err: anyhow::Error| Error::bad_input(format!("{err:#}"));
    let mut paths: Vec<String> = Vec::new();
    match export::sweep::read_records(dir).map_err(bad_input)? {
        Some(records) => {
            let sweep = export::sweep::sweep_of(&records).map_err(bad_input)?;
            let path = dir.join(results::SWEEP_PNG);
            plot::draw_sweep(&records, &sweep, &path)?;
            paths.push(path.display().to_string());
            for value in &sweep.values {
                paths.extend(redraw_folder(&dir.join(sweep.folder(value)))?);
            }
        }
        None => paths.extend(redraw_folder(dir)?),
    }
    let (last, first) = paths
        .split_last()
        .expect("plot::draw_all draws at least one chart");
    stderrln!("wrote {} and {last}", first.join(", "));
    Ok(())
}

/// Re-draws the charts of one results folder; the paths drawn.
fn redraw_folder(dir: &Path) -> Result<Vec<String>, Error> {
    let report = export::read_report(dir).map_err(|err| Error::bad_input(format!("{err:#}")))?;
    let drawn = plot::draw_all(&report, dir)?;
    Ok(drawn
        .iter()
        .map(|name| dir.join(name).display().to_string())
        .collect())
}

fn run_benchmark(workload: Option<&str>, mode: Mode, args: &CommonArgs) -> Result<i32, Error> {
    let plan = Plan::new(workload, mode, args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(execute_plan_until(&plan, stop_signal()));
    runtime.shutdown_timeout(Duration::from_secs(1));
    let reports = result?;
    check_plan_expectations(&plan, &reports)
}

/// The expectations of every point of `plan` (see [`check_expectations`]);
/// with a sweep each line names its value and a last line names the values
/// that failed. Exit code 4 if a scenario did not run as written (and no
/// expectation names that outcome), else 3 if any expectation failed, else 0.
fn check_plan_expectations(plan: &Plan, reports: &[RunReport]) -> Result<i32, Error> {
    let mut failed_at = Vec::new();
    let mut invalid = Vec::new();
    for (point, report) in plan.points.iter().zip(reports) {
        invalid.extend(scenario::validity::unexpected_invalid(
            &point.config.expectations,
            report,
        ));
        let label = point
            .value
            .as_deref()
            .zip(plan.sweep())
            .map(|(value, sweep)| sweep.label(value));
        if check_expectations(&point.config, report, label.as_deref())? {
            failed_at.push(label.unwrap_or_default());
        }
    }
    if plan.sweep().is_some() && !plan.base.expectations.is_empty() {
        let verdict = match failed_at.is_empty() {
            true => "expectations: every bound held at every value".to_string(),
            false => format!("expectations failed at {}", failed_at.join(", ")),
        };
        output::write_stdout(&format!("{verdict}\n"))?;
    }
    if !invalid.is_empty() {
        stderrln!(
            "error: the scenario did not run as written, so these runs are no result: {}; \
             fix the workload (or name the outcome in an expectation, e.g. ddl_outcome = \"error\")",
            invalid.join("; ")
        );
        return Ok(scenario::validity::EXIT_CODE_INVALID);
    }
    Ok(if failed_at.is_empty() {
        0
    } else {
        expect::EXIT_CODE_FAILED
    })
}

/// Prints each expectation's verdict (after `label` and a colon, for a sweep
/// value; in CI, that there is no bound, if so), writes `expectations.csv`,
/// `junit.xml` and `pr-comment.md`, appends to `$GITHUB_STEP_SUMMARY` if set;
/// whether any failed.
fn check_expectations(
    config: &Config,
    report: &RunReport,
    label: Option<&str>,
) -> Result<bool, Error> {
    let results = expect::evaluate(&config.expectations, report);
    if config.ci && results.is_empty() {
        stderrln!("warning: {}", expect::NO_BOUNDS);
    }
    for line in expect::report_lines(&results) {
        let line = match label {
            Some(label) => format!("{label}: {line}"),
            None => line,
        };
        output::write_stdout(&format!("{line}\n"))?;
    }
    let files = expect::result_files(report, &results, &config.out_dir)?;
    results::write_files(&config.out_dir, &files)?;
    expect::append_github_step_summary(
        expect::github_step_summary_path().as_deref(),
        report,
        &results,
    )?;
    Ok(expect::any_failed(&results))
}

/// Resolves at Ctrl-C (SIGINT) or SIGTERM, naming the signal.
pub(crate) async fn stop_signal() -> String {
    let sigterm = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signals) => signals.recv().await,
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        Ok(()) = tokio::signal::ctrl_c() => stop::CTRL_C.to_string(),
        _ = sigterm => stop::SIGTERM.to_string(),
    }
}

/// The whole benchmark of one config on an async runtime: target, setup, each
/// strategy (as often as it repeats), files. A sweep in `config` is not run
/// (see [`execute_plan`]).
pub async fn execute(config: &Config) -> Result<RunReport, Error> {
    execute_until(config, std::future::pending()).await
}

/// [`execute`], stopped early by `stop` (see [`execute_plan_until`]).
pub async fn execute_until(
    config: &Config,
    stop: impl Future<Output = String>,
) -> Result<RunReport, Error> {
    let plan = Plan::single(config.clone());
    let mut reports = execute_plan_until(&plan, stop).await?;
    Ok(reports.remove(0))
}

/// The whole plan on an async runtime: one report per point (per sweep value).
pub async fn execute_plan(plan: &Plan) -> Result<Vec<RunReport>, Error> {
    execute_plan_until(plan, std::future::pending()).await
}

/// [`execute_plan`], stopped early by `stop` (which resolves to the name of what
/// stopped it, e.g. a signal) or by the throwaway server's death: the run
/// in progress is written up to its last whole second and marked interrupted,
/// `run.json` names it and the strategies not run, and the stop is the error.
pub async fn execute_plan_until(
    plan: &Plan,
    stop: impl Future<Output = String>,
) -> Result<Vec<RunReport>, Error> {
    let config = &plan.base;
    let mut stop = pin!(stop);
    if !config.quiet {
        stderrln!("{}", plan_line(plan));
    }
    let started = std::time::Instant::now();
    let target = tokio::select! {
        target = Database::open(config) => target?,
        reason = &mut stop => {
            return Err(Error::runtime(format!(
                "interrupted by {reason} while the target was being prepared; nothing was run"
            )));
        }
    };
    if !config.quiet {
        stderrln!(
            "target: {}, PostgreSQL {} (ready in {:.1} s)",
            target.description,
            target.server_version,
            started.elapsed().as_secs_f64()
        );
    }
    for line in config::rollback_blind_spots(config) {
        output::write_stdout(&format!("{line}\n"))?;
    }
    let created = results::create_results_folder(
        &config.out_dir,
        &config.replaced_files,
        &[
            run_file(config, &target).render()?,
            export::workload_toml::render(config)?,
        ],
    )?;
    if !config.quiet {
        stderrln!("results in {}", config.out_dir.display());
    }
    let mut reports: Vec<RunReport> = plan
        .points
        .iter()
        .map(|point| RunReport {
            workload: point.config.workload_name.clone(),
            strategies: Vec::new(),
            interruption: None,
        })
        .collect();
    let result = run_until_stopped(plan, &target, stop, &mut reports).await;
    if let Err(stopped) = result {
        let failed = stopped.signal.is_none();
        let error = match after_stop(plan, &target, &mut reports, stopped).await {
            Ok(error) | Err(error) => error,
        };
        let measured = reports.iter().any(|report| !report.strategies.is_empty());
        if failed && !measured {
            // A failure before the first measurement leaves no results to read.
            if results::remove_unmeasured(&config.out_dir, created).is_ok() && !config.quiet {
                stderrln!(
                    "nothing was measured; removed the results in {}",
                    config.out_dir.display()
                );
            }
            return Err(error);
        }
        // The server log goes to the results folder on every path, errors included.
        let _ = target.copy_server_log(&config.out_dir);
        return Err(error);
    }
    target.copy_server_log(&config.out_dir)?;
    match plan.sweep() {
        None => output::write_stdout(&console::summary_table(&reports[0]))?,
        Some(sweep) => {
            let records = export::sweep::records(sweep, &plan_values(plan), &reports);
            output::write_stdout(&console::sweep_text(sweep, &records))?
        }
    }
    if !config.quiet {
        stderrln!("results: {}", config.out_dir.display());
    }
    Ok(reports)
}

/// The `run.json` of `config` run against `target`.
fn run_file<'a>(config: &'a Config, target: &'a Database) -> RunFile<'a> {
    RunFile {
        // Milliseconds are plenty for a start that takes a second or more.
        server_start_s: target
            .server_start_s
            .map(|seconds| (seconds * 1000.0).round() / 1000.0),
        ..RunFile::new(config, &target.description, &target.server_version)
    }
}

/// The first line of a run: what runs and how often (where the results go
/// comes once the folder exists).
fn plan_line(plan: &Plan) -> String {
    let config = &plan.base;
    let names: Vec<&str> = config.strategies.iter().map(|s| s.name.as_str()).collect();
    let mut runs = String::new();
    if config.repeat > 1 {
        runs.push_str(&format!(", each {} times", config.repeat));
    }
    if let Some(sweep) = plan.sweep() {
        runs.push_str(&format!(
            ", at {} = {}",
            sweep.name(),
            sweep.values.join(", ")
        ));
    }
    format!(
        "stallbench {}: workload {}, strategies {}{runs}, {} clients for {} s",
        env!("CARGO_PKG_VERSION"),
        config.workload_name,
        names.join(", "),
        config.load.clients,
        config.load.duration_s(),
    )
}

/// The sweep's values in order (empty without a sweep).
fn plan_values(plan: &Plan) -> Vec<String> {
    plan.points
        .iter()
        .filter_map(|point| point.value.clone())
        .collect()
}

/// What a run that stopped before its end does after the stop: ends its
/// sessions and drops its schema (best effort), writes `run.json` with what
/// was not run, marks the files (and stdout, which shows what was measured)
/// with the interruption, and returns the stop line to exit with.
async fn after_stop(
    plan: &Plan,
    target: &Database,
    reports: &mut [RunReport],
    stopped: Stopped,
) -> Result<Error, Error> {
    let server = target.leave_after_stop().await;
    write_stopped_run_files(plan, target, reports, &stopped.error.to_string())?;
    // The point in progress: the last one that started.
    let current = reports
        .iter()
        .rposition(|report| !report.strategies.is_empty())
        .unwrap_or(0);
    let config = &plan.points[current].config;
    let report = &mut reports[current];
    // A stop between strategies: the files written after the last one say so too.
    if let Some(signal) = &stopped.signal
        && report.interruption.is_none()
        && stopped.wound_down
        && !report.strategies.is_empty()
    {
        report.interruption = Some(stop::interruption(config, report, signal, None));
        export::write_all(report, &config.out_dir)?;
    }
    if report.interruption.is_some() {
        output::write_stdout(&console::summary_table(report))?;
    }
    let applied = match &report.interruption {
        Some(interruption) => Some(interruption.applied.clone()),
        None if stopped.wound_down => {
            Some(stop::interruption(config, report, &stopped.error.to_string(), None).applied)
        }
        None => None,
    };
    Ok(stop::stop_line(
        stopped,
        config,
        applied.as_deref(),
        &server,
    ))
}

/// `run.json` of a stopped plan: the sweep's, with the values not started, and
/// each started point's, with what it did not run.
fn write_stopped_run_files(
    plan: &Plan,
    target: &Database,
    reports: &[RunReport],
    message: &str,
) -> Result<(), Error> {
    if let Some(sweep) = plan.sweep() {
        let not_started: Vec<String> = plan
            .points
            .iter()
            .zip(reports)
            .filter(|(_, report)| report.strategies.is_empty())
            .filter_map(|(point, _)| point.value.as_deref())
            .map(|value| sweep.label(value))
            .collect();
        let stopped_file = run_file(&plan.base, target).sweep_stopped(message, not_started);
        results::write_files(&plan.base.out_dir, &[stopped_file.render()?])?;
    }
    for (point, report) in plan.points.iter().zip(reports) {
        let unstarted_value = point.value.is_some() && report.strategies.is_empty();
        if unstarted_value {
            continue;
        }
        let stopped_file = run_file(&point.config, target).stopped_early(report, message);
        if !stopped_file.not_run.is_empty() {
            stderrln!("not run: {}", stopped_file.not_run.join(", "));
        }
        results::write_files(&point.config.out_dir, &[stopped_file.render()?])?;
    }
    Ok(())
}

/// Runs the plan into `reports` until it ends or a stop comes: `stop`
/// (Ctrl-C, SIGTERM) or the throwaway server's death. A stop fires the run's
/// interrupt and gives the run [`WIND_DOWN_LIMIT`] to stop its DDL and write
/// what it measured; the stop is then the error. A run that fails as the
/// server dies (connections refused) failed because of it.
async fn run_until_stopped(
    plan: &Plan,
    target: &Database,
    stop: Pin<&mut impl Future<Output = String>>,
    reports: &mut [RunReport],
) -> Result<(), Stopped> {
    let interrupt = Interrupt::default();
    let mut run = pin!(run_plan(plan, target, &interrupt, reports));
    let (error, signal) = tokio::select! {
        result = &mut run => {
            let Err(error) = result else {
                return Ok(());
            };
            if let Ok(died) = tokio::time::timeout(SERVER_DEATH_GRACE, target.server_died()).await {
                return Err(Stopped::failed(died));
            }
            return Err(Stopped::failed(error));
        }
        reason = stop => {
            interrupt.fire(reason.as_str());
            (Error::runtime(format!("interrupted by {reason}")), Some(reason))
        }
        died = target.server_died() => {
            interrupt.fire(died.to_string());
            (died, None)
        }
    };
    let wound_down = tokio::time::timeout(WIND_DOWN_LIMIT, run).await.is_ok();
    if !wound_down {
        stderrln!(
            "warning: the run did not wind down within {} s; its last strategy was not written",
            WIND_DOWN_LIMIT.as_secs()
        );
    }
    Err(Stopped {
        error,
        signal,
        wound_down,
    })
}

/// Runs the plan's runs in order, each after its reset, and writes the files
/// of its point (and of the sweep) after each one; a fired `interrupt` ends
/// the run in progress early (it is written too, up to its last whole second)
/// and starts no other.
async fn run_plan(
    plan: &Plan,
    target: &Database,
    interrupt: &Interrupt,
    reports: &mut [RunReport],
) -> Result<(), Error> {
    let config = &plan.base;
    let workload_source = format!("workload {}", config.workload_name);
    unless_interrupted(
        interrupt,
        target.prepare_schema(&workload_source, &config.setup_sql, &config.load.variables),
    )
    .await?;
    if target.server_log().is_none() && !config.quiet {
        stderrln!(
            "note: on --db-url the server log is not available to stallbench; \
             lock waits longer than deadlock_timeout are in the server's own log"
        );
    }
    // Statements that cannot run on this schema stop the run before any load (exit 2).
    let mut traces = unless_interrupted(
        interrupt,
        preflight::check_before_load(plan, target, &workload_source),
    )
    .await?;
    let mut progress = PlanProgress::new(plan, config.quiet);
    // The tables as the first run sees them; every later reset must give them back.
    let mut first_fingerprint = None;
    for (index, planned) in plan.runs.iter().enumerate() {
        let config = plan.config_of(planned);
        let strategy = plan.strategy_of(planned);
        let reset = async {
            target.clear_sessions().await?;
            target.reset(&workload_source, &config.reset_sql).await?;
            target.fingerprint(database::SCHEMA, &[]).await
        };
        let fingerprint = unless_interrupted(interrupt, reset).await?;
        match &first_fingerprint {
            None => first_fingerprint = Some(fingerprint.clone()),
            Some(first) => check_reset(
                &workload_source,
                &plan.strategy_of(&plan.runs[index - 1]).name,
                &config.reset_sql,
                first,
                &fingerprint,
            )?,
        }
        if let Some(reason) = interrupt.reason() {
            return Err(Error::runtime(reason));
        }
        // Strategies that run the same steps with the same settings share one trace.
        let key = measure::trace_key(config, strategy);
        let lock_trace = match traces.iter().find(|(traced, _)| *traced == key) {
            Some((_, trace)) => trace.clone(),
            None => {
                let trace = unless_interrupted(
                    interrupt,
                    measure::trace_before_run(
                        config,
                        target,
                        strategy,
                        &workload_source,
                        &fingerprint,
                    ),
                )
                .await?;
                traces.push((key, trace.clone()));
                trace
            }
        };
        if reports[planned.point].strategies.is_empty() && plan.sweep().is_some() {
            create_value_folder(config, target)?;
        }
        progress.start_run(plan, index);
        let seed = plan.seed_of(planned);
        let measured = measure::measure_strategy(
            config,
            target,
            strategy,
            (seed, planned.repeat),
            interrupt,
            lock_trace,
        )
        .await?;
        if let Some(line) = &measured.ddl_error {
            output::write_stdout(line)?;
        }
        let interrupted = measured.interrupted;
        let report = &mut reports[planned.point];
        let interruption = interrupted
            .as_deref()
            .map(|reason| stop::interruption(config, report, reason, measured.partial));
        report.strategies.push(measured.report);
        report.interruption = interruption;
        // Files of a finished (or interrupted) run are written before the next one starts.
        write_point_files(plan, planned.point, reports)?;
        target.copy_server_log(&plan.base.out_dir)?;
        if let Some(reason) = interrupted {
            return Err(Error::runtime(reason));
        }
    }
    drop(progress);
    target.clear_sessions().await?;
    target.drop_schema().await?;
    Ok(())
}

/// The folder of a sweep value, made as its first run starts, with its own
/// `run.json` and `workload.toml` (which rerun that value alone).
fn create_value_folder(config: &Config, target: &Database) -> Result<(), Error> {
    results::create_results_folder(
        &config.out_dir,
        &config.replaced_files,
        &[
            run_file(config, target).render()?,
            export::workload_toml::render(config)?,
        ],
    )?;
    Ok(())
}

/// The files of point `point` (its folder's data and charts) and, for a
/// sweep, the sweep's own files beside them.
fn write_point_files(plan: &Plan, point: usize, reports: &[RunReport]) -> Result<(), Error> {
    let out_dir = &plan.points[point].config.out_dir;
    export::write_all(&reports[point], out_dir)?;
    plot::draw_all(&reports[point], out_dir)?;
    if let Some(sweep) = plan.sweep() {
        let started = reports
            .iter()
            .take_while(|report| !report.strategies.is_empty())
            .count();
        let records =
            export::sweep::records(sweep, &plan_values(plan)[..started], &reports[..started]);
        let files = export::sweep::render(sweep, &plan.base.workload_name, &records)?;
        results::write_files(&plan.base.out_dir, &files)?;
        plot::draw_sweep(&records, sweep, &plan.base.out_dir.join(results::SWEEP_PNG))?;
    }
    Ok(())
}

/// Exit 2 when the tables after `previous`'s run and the reset differ from
/// what the first strategy saw, naming what the reset left behind (or that the
/// workload needs a reset at all).
fn check_reset(
    workload_source: &str,
    previous: &str,
    reset_sql: &str,
    first: &fingerprint::Fingerprint,
    now: &fingerprint::Fingerprint,
) -> Result<(), Error> {
    let differences = fingerprint::diff(first, now);
    if differences.is_empty() {
        return Ok(());
    }
    let described: Vec<String> = differences.iter().map(|d| d.describe()).collect();
    let problem = if reset_sql.trim().is_empty() {
        format!("the workload has no reset and needs one: after {previous}")
    } else {
        format!("after {previous} and its reset")
    };
    Err(Error::bad_input(format!(
        "{workload_source}: {problem}, {}",
        described.join("; ")
    )))
}

/// `work` (a phase before the load, with nothing measured to keep), unless
/// `interrupt` fires first.
pub(crate) async fn unless_interrupted<T>(
    interrupt: &Interrupt,
    work: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    tokio::select! {
        result = work => result,
        _ = interrupt.fired() => Err(Error::runtime(interrupt.reason().unwrap_or_default())),
    }
}
