//! `stallbench compare` and `stallbench run`: a workload's strategies run on
//! one database, one after another, into one results folder. [`compare`] is
//! the command; [`execute_plan`] the run itself, callable in-process from
//! tests. The runs in order are in [`runs`], the expectations after them in
//! [`judging`]; what a stop does is shared with `check` in [`crate::stop`].

mod judging;
mod runs;

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use crate::cli::CommonArgs;
use crate::config::{self, Config, Mode, ReplicaConfig};
use crate::engine::postgres::database::Database;
use crate::error::Error;
use crate::export::console;
use crate::export::{self, run_json::RunFile};
use crate::metrics::RunReport;
use crate::output;
use crate::plan::Plan;
use crate::results;
use crate::scenario::Interrupt;
use crate::stop::{self, Ending, StopCause, Stopped};

use runs::{plan_values, run_plan};

/// How long after a failed run the throwaway server's death is still taken as its cause.
const SERVER_DEATH_GRACE: Duration = Duration::from_millis(200);

/// `stallbench compare` and `stallbench run`: the plan of the command line,
/// run until it ends or is stopped, then its expectations and the page's
/// name; the exit code.
pub fn compare(workload: Option<&str>, mode: Mode, args: &CommonArgs) -> Result<i32, Error> {
    let plan = Plan::new(workload, mode, args)?;
    let reports = stop::on_runtime(execute_plan_until(&plan, stop::stop_signal()))??;
    let exit_code = judging::check_plan_expectations(&plan, &reports)?;
    crate::opener::name_the_page(&plan.base.out_dir, args.open)?;
    Ok(exit_code)
}

/// The whole benchmark of one config on an async runtime: target, setup, each
/// strategy (as often as it repeats), files. A sweep in `config` is not run
/// (see [`execute_plan`]).
pub async fn execute(config: &Config) -> Result<RunReport, Error> {
    let plan = Plan::single(config.clone());
    let mut reports = execute_plan(&plan).await?;
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
        if let Some(standby) = target.users_standby() {
            stderrln!("replica: {standby}, in recovery (read only: readers, a report, looks)");
        }
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
            load_on: ReplicaConfig::load_on(point.config.replica.as_ref()),
            load_loop: crate::choices::LoadLoop::of_rate(point.config.load.rate_tps),
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
        server_start_s: target.server_start_s.map(crate::export::format::round3),
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
/// (Ctrl-C, SIGTERM) or the throwaway server's death (see
/// [`stop::until_stopped`]); the stop is then the error. A run that fails as
/// the server dies (connections refused) failed because of it.
async fn run_until_stopped(
    plan: &Plan,
    database: &Database,
    stop: impl Future<Output = String>,
    reports: &mut [RunReport],
) -> Result<(), Stopped> {
    let interrupt = Interrupt::default();
    let run = run_plan(plan, database, &interrupt, reports);
    match stop::until_stopped(run, &interrupt, stop, database.server_died()).await {
        Ending::Finished(Ok(())) => Ok(()),
        Ending::Finished(Err(error)) => {
            let died = tokio::time::timeout(SERVER_DEATH_GRACE, database.server_died()).await;
            Err(Stopped::failed(died.unwrap_or(error)))
        }
        Ending::Stopped { cause, wound_down } => {
            if !wound_down {
                stderrln!(
                    "warning: the run did not wind down within {} s; its last strategy was not written",
                    stop::WIND_DOWN_LIMIT.as_secs()
                );
            }
            let (error, signal) = match cause {
                StopCause::Signal(reason) => (
                    Error::runtime(format!("interrupted by {reason}")),
                    Some(reason),
                ),
                StopCause::Failure(died) => (died, None),
            };
            Err(Stopped {
                error,
                signal,
                wound_down,
            })
        }
    }
}
