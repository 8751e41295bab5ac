//! The runs of a plan in order, each after its reset (checked against the
//! first run's tables), with the files of its point written after each one.

use crate::config::Config;
use crate::engine::postgres::database::{self, Database};
use crate::engine::postgres::preflight;
use crate::engine::postgres::preflight::Traces;
use crate::error::Error;
use crate::fingerprint::Fingerprint;
use crate::metrics::RunReport;
use crate::metrics::lock_trace::TracedStatement;
use crate::plan::Plan;
use crate::plan::progress::PlanProgress;
use crate::scenario::Interrupt;
use crate::strategy::NamedStrategy;
use crate::{export, fingerprint, measure, output, plot, results, stop};

use super::run_file;
use crate::engine::postgres::invariants;

/// Runs the plan's runs in order, each after its reset, and writes the files
/// of its point (and of the sweep) after each one; a fired `interrupt` ends
/// the run in progress early (it is written too, up to its last whole second)
/// and starts no other.
pub(super) async fn run_plan(
    plan: &Plan,
    target: &Database,
    interrupt: &Interrupt,
    reports: &mut [RunReport],
) -> Result<(), Error> {
    let config = &plan.base;
    let workload_source = format!("workload {}", config.workload_name);
    let mut traces = prepare(plan, target, interrupt, &workload_source).await?;
    let mut progress = PlanProgress::new(plan, config.quiet);
    // The tables as the first run sees them; every later reset must give them back.
    let mut first_fingerprint = None;
    for (index, planned) in plan.runs.iter().enumerate() {
        let strategy = plan.strategy_of(planned);
        let config = &*plan.config_of(planned).for_strategy(&strategy.name);
        let reset = async {
            if let Some(replica) = &config.replica {
                target
                    .use_standby_settings(&replica.standby_settings)
                    .await?;
            }
            target.clear_sessions().await?;
            target.reset(&workload_source, &config.reset_sql).await?;
            target.fingerprint(database::SCHEMA, &[]).await
        };
        let fingerprint = interrupt.unless_fired(reset).await?;
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
        let lock_trace = lock_trace(
            (config, strategy),
            target,
            interrupt,
            &workload_source,
            (&fingerprint, &mut traces),
        )
        .await?;
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
        let mut measured = measured;
        if measured.interrupted.is_none() && !config.invariants.is_empty() {
            target.clear_sessions().await?;
            let transactions = measured.report.summary.transactions;
            measured.report.invariants =
                invariants::check_invariants(target, &config.invariants, transactions).await?;
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

/// The plan's setup before its first run: the schema and its data once, then
/// the statements that cannot run on this schema found before any load (exit
/// 2); the lock traces that check took.
async fn prepare(
    plan: &Plan,
    target: &Database,
    interrupt: &Interrupt,
    workload_source: &str,
) -> Result<Traces, Error> {
    let config = &plan.base;
    interrupt
        .unless_fired(target.prepare_schema(
            workload_source,
            &config.setup_sql,
            &config.load.variables,
        ))
        .await?;
    // The invariants run once on the fresh data: a broken query is exit 2 before any load.
    interrupt
        .unless_fired(invariants::check_invariants(target, &config.invariants, 0))
        .await?;
    if target.server_log().is_none() && !config.quiet {
        stderrln!(
            "note: on --db-url the server log is not available to stallbench; \
             lock waits longer than deadlock_timeout are in the server's own log"
        );
    }
    interrupt
        .unless_fired(preflight::check_before_load(plan, target, workload_source))
        .await
}

/// The lock trace of `strategy` before its run: strategies that run the same
/// steps with the same settings share one trace, so it is taken (on the tables
/// as `fingerprint` found them) only when `traces` has none for it yet.
async fn lock_trace(
    (config, strategy): (&Config, &NamedStrategy),
    target: &Database,
    interrupt: &Interrupt,
    workload_source: &str,
    (fingerprint, traces): (&Fingerprint, &mut Traces),
) -> Result<Vec<TracedStatement>, Error> {
    let key = measure::trace_key(config, strategy);
    if let Some((_, trace)) = traces.iter().find(|(traced, _)| *traced == key) {
        return Ok(trace.clone());
    }
    let trace = interrupt
        .unless_fired(measure::trace_before_run(
            config,
            target,
            strategy,
            workload_source,
            fingerprint,
        ))
        .await?;
    traces.push((key, trace.clone()));
    Ok(trace)
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
        export::html::pages::write_sweep_page(
            &plan.base.out_dir,
            sweep,
            &plan.base.workload_name,
            &records,
        )?;
    }
    Ok(())
}

/// The sweep's values in order (empty without a sweep).
pub(super) fn plan_values(plan: &Plan) -> Vec<String> {
    plan.points
        .iter()
        .filter_map(|point| point.value.clone())
        .collect()
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
