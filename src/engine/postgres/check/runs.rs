//! A new migration's measured runs, the third step of check's course:
//! each strategy of its run design on a fresh copy of the work database
//! (`CREATE DATABASE ... TEMPLATE`), a retry lengthened until the traffic
//! after its commit is measured, the standby's runs with `--replica`, and
//! the migration's results folder (the files of a `compare`).

use std::time::Instant;

use super::course::{RUN_DATABASE, WORK_DATABASE, say, set_search_path};
use super::design::RunDesign;
use super::lengthen;
use super::replay::blame_by_replay;
use crate::config::{CheckConfig, Config};
use crate::engine::postgres::check_verdict::applied::{
    committed_at_s, needed_after_commit_s, not_applied,
};
use crate::engine::postgres::check_verdict::breakage::replay_needed;
use crate::engine::postgres::check_verdict::checked::{ExtendedRun, MeasuredRun, ReplicaRuns};
use crate::engine::postgres::check_verdict::phases::{MigrationPhases, RunPhase, seconds};
use crate::engine::postgres::database::Database;
use crate::error::Error;
use crate::expect;
use crate::export::{run_json::RunFile, workload_toml};
use crate::measure::measure_strategy;
use crate::metrics::RunReport;
use crate::metrics::lock_trace::TracedStatement;
use crate::scenario::Interrupt;
use crate::{export, plot, results};

/// Runs each strategy of `design` on its own copy of the work database and
/// writes the migration's results folder; with `--replica`, then each again
/// with the report on the standby, in the folder's `replica`.
pub(super) async fn measure(
    check: &CheckConfig,
    target: &mut Database,
    design: RunDesign,
    statements: &[TracedStatement],
    (interrupt, phases): (&Interrupt, &mut MigrationPhases),
) -> Result<MeasuredRun, Error> {
    let config = &design.config;
    say(
        check,
        format!("load: {}; blocker: {}", design.load, design.blocker),
    );
    let mut extended = Vec::new();
    let runs = (interrupt, &mut *phases);
    let mut report =
        run_strategies(check, target, config, statements, Some(&mut extended), runs).await?;
    let mut results = expect::evaluate(&config.expectations, &report);
    let planned_s = config.load.duration.as_secs_f64();
    let ran_s = extended
        .last()
        .map_or(planned_s, |run: &ExtendedRun| run.run_s);
    if let Some((index, run_s)) = lengthened_run(check, config, &report, &results, ran_s) {
        say(
            check,
            format!(
                "{}: its migration committed too close to the end of the {ran_s} s run to \
                 show a fix; running it again for {run_s} s",
                config.strategies[index].name
            ),
        );
        let longer = with_duration(config, run_s);
        let (run, interrupted) = run_strategy(
            check,
            target,
            &longer,
            index,
            statements,
            (interrupt, &mut *phases),
        )
        .await?;
        report.strategies[index] = run;
        export::write_all(&report, &config.out_dir)?;
        plot::draw_all(&report, &config.out_dir)?;
        if let Some(reason) = interrupted {
            return Err(Error::runtime(reason));
        }
        results = expect::evaluate(&config.expectations, &report);
        // Made longer from the start, and again now: one lengthened run.
        extended.clear();
        extended.push(ExtendedRun {
            strategy: config.strategies[index].name.clone(),
            planned_s,
            run_s,
        });
    }
    // The failure's message names no statement: replay to find the one to blame.
    let breakage = (report.strategies.iter())
        .find_map(crate::engine::postgres::check_verdict::breakage::breakage);
    let blamed_by_replay = match breakage {
        Some(breakage) if replay_needed(statements, &breakage.main_failure) => {
            let sqlstate = breakage.main_failure.split(' ').next().unwrap_or_default();
            blame_by_replay(target, statements, &config.load.scripts, sqlstate).await?
        }
        _ => None,
    };
    let replica = match design.replica {
        None => None,
        Some(replica) => {
            say(
                check,
                format!(
                    "on the replica: readers on both servers; blocker: {}",
                    replica.blocker
                ),
            );
            let runs = (interrupt, &mut *phases);
            let report =
                run_strategies(check, target, &replica.config, statements, None, runs).await?;
            Some(ReplicaRuns {
                blocker: replica.blocker,
                report,
                folder: replica.config.out_dir.clone(),
            })
        }
    };
    Ok(MeasuredRun {
        load: design.load,
        blocker: design.blocker,
        blocks: design.blocks,
        report,
        results,
        folder: config.out_dir.clone(),
        replica,
        extended,
        blamed_by_replay,
    })
}

/// The recommended strategy's run to make longer, and its length in
/// seconds: when the deployed run fails (a budget, a break, a migration that
/// did not apply) and the recommended one kept every budget but its
/// migration committed less than [`needed_after_commit_s`] before the end
/// (or had not applied yet), so that its run of `ran_s` cannot show a fix.
/// At most twice `--duration`: a strategy that needs longer is `not shown`.
fn lengthened_run(
    check: &CheckConfig,
    config: &Config,
    report: &RunReport,
    results: &[expect::ExpectationResult],
    ran_s: f64,
) -> Option<(usize, f64)> {
    let (deploy, recommend) = (&check.deploy.name, &check.recommend.name);
    let passes = |name: &str| {
        (results.iter())
            .filter(|result| result.expectation.strategy == name)
            .all(|result| result.verdict == expect::Verdict::Pass)
    };
    let index = (report.strategies.iter()).position(|run| run.strategy == *recommend)?;
    let deployed = report
        .strategies
        .iter()
        .find(|run| run.strategy == *deploy)?;
    let deploy_fails = !passes(deploy)
        || crate::engine::postgres::check_verdict::breakage::breakage(deployed).is_some()
        || not_applied(deployed).is_some();
    let recommended = &report.strategies[index];
    let breaks = crate::engine::postgres::check_verdict::breakage::breakage(recommended).is_some();
    if deploy == recommend || !deploy_fails || !passes(recommend) || breaks {
        return None;
    }
    let bound_s = 2.0 * config.load.duration.as_secs_f64();
    let needed_s = needed_after_commit_s(check.budgets.max_stall_s);
    let run_s = match (recommended.summary.ddl_outcome, committed_at_s(recommended)) {
        (_, Some(committed_s)) if ran_s - committed_s >= needed_s => return None,
        (_, Some(committed_s)) => (committed_s + needed_s + 1.0).ceil().min(bound_s),
        (crate::metrics::DdlOutcome::CutOff, None) => bound_s,
        _ => return None,
    };
    (run_s > ran_s).then_some((index, run_s))
}

/// `config` with each run `run_s` long.
fn with_duration(config: &Config, run_s: f64) -> Config {
    Config {
        load: crate::config::LoadConfig {
            duration: std::time::Duration::from_secs_f64(run_s),
            ..config.load.clone()
        },
        ..config.clone()
    }
}

/// Runs each strategy of `config` on its own copy of the work database,
/// writing its results folder after each. With `extended`, a recommended
/// strategy whose fix the run would end too soon to show runs longer from
/// the start ([`lengthen::run_s_from_start`]), and is named there.
async fn run_strategies(
    check: &CheckConfig,
    target: &mut Database,
    config: &Config,
    statements: &[TracedStatement],
    mut extended: Option<&mut Vec<ExtendedRun>>,
    (interrupt, phases): (&Interrupt, &mut MigrationPhases),
) -> Result<RunReport, Error> {
    open_results_folder(check, config, target)?;
    let mut report = RunReport {
        workload: config.workload_name.clone(),
        strategies: Vec::new(),
        interruption: None,
        load_on: crate::config::ReplicaConfig::load_on(config.replica.as_ref()),
        load_loop: crate::choices::LoadLoop::of_rate(config.load.rate_tps),
    };
    for index in 0..config.strategies.len() {
        let longer = match extended.as_deref_mut() {
            Some(extended) => {
                lengthen::run_s_from_start(check, config, &report, index).map(|run_s| {
                    let planned_s = config.load.duration.as_secs_f64();
                    say(
                        check,
                        format!(
                            "{}: the deployed run failed, and its migration would commit too \
                             close to the end of the {planned_s} s run to show a fix; running \
                             it for {run_s} s",
                            config.strategies[index].name
                        ),
                    );
                    extended.push(ExtendedRun {
                        strategy: config.strategies[index].name.clone(),
                        planned_s,
                        run_s,
                    });
                    with_duration(config, run_s)
                })
            }
            None => None,
        };
        let (run, interrupted) = run_strategy(
            check,
            target,
            longer.as_ref().unwrap_or(config),
            index,
            statements,
            (interrupt, &mut *phases),
        )
        .await?;
        report.strategies.push(run);
        export::write_all(&report, &config.out_dir)?;
        plot::draw_all(&report, &config.out_dir)?;
        target.copy_server_log(&config.out_dir)?;
        if let Some(reason) = interrupted {
            return Err(Error::runtime(reason));
        }
    }
    Ok(report)
}

/// Runs strategy `index` of `config` on its own copy of the work database;
/// the run, and why it was interrupted if it was.
async fn run_strategy(
    check: &CheckConfig,
    target: &mut Database,
    config: &Config,
    index: usize,
    statements: &[TracedStatement],
    (interrupt, phases): (&Interrupt, &mut MigrationPhases),
) -> Result<(crate::metrics::StrategyReport, Option<String>), Error> {
    let strategy = &config.strategies[index];
    let started = Instant::now();
    copy_work_database(check, target).await?;
    let copy_s = seconds(started.elapsed());
    if !config.quiet {
        stderrln!("== {} ({}) ==", strategy.name, strategy.describe());
    }
    let measured = measure_strategy(
        config,
        target,
        strategy,
        (config.seed.wrapping_add(index as u64), 1),
        interrupt,
        statements.to_vec(),
    )
    .await;
    let back = back_to_work_database(target).await;
    let measured = measured?;
    back?;
    if let Some(line) = &measured.ddl_error {
        stderrln!("{}", line.trim_end());
    }
    phases.runs.push(RunPhase {
        strategy: strategy.name.clone(),
        replica: config.replica.is_some(),
        copy_s,
        run_s: seconds(started.elapsed()),
    });
    Ok((measured.report, measured.interrupted))
}

/// The migration's folder with `run.json` and `workload.toml`; an earlier
/// check's files there go with `--force`.
fn open_results_folder(
    check: &CheckConfig,
    config: &Config,
    target: &Database,
) -> Result<(), Error> {
    let replaced = match check.force {
        true => results::earlier_run_files(&config.out_dir).map_err(|err| {
            Error::runtime(format!("listing {}: {err}", config.out_dir.display()))
        })?,
        false => Vec::new(),
    };
    let run_file = RunFile {
        server_start_s: target.server_start_s,
        ..RunFile::new(config, &target.description, &target.server_version)
    };
    results::create_results_folder(
        &config.out_dir,
        &replaced,
        &[run_file.render()?, workload_toml::render(config)?],
    )?;
    Ok(())
}

/// Ends every session of the check and makes [`RUN_DATABASE`] a fresh copy
/// of the work database, where the later connections go.
pub(super) async fn copy_work_database(
    config: &CheckConfig,
    target: &mut Database,
) -> Result<(), Error> {
    target.clear_sessions().await?;
    target
        .run_on_home_database(&format!("DROP DATABASE IF EXISTS {RUN_DATABASE}"))
        .await?;
    target
        .run_on_home_database(&copy_sql(target.server_version_num))
        .await?;
    set_search_path(config, target, RUN_DATABASE).await?;
    target.use_database(RUN_DATABASE);
    Ok(())
}

/// `CREATE DATABASE` of the run's copy: from PostgreSQL 15 on, by copying
/// the work database's files (`STRATEGY FILE_COPY`, as every earlier major
/// does) rather than each of its blocks through the WAL, the default since
/// 15: a third of the time for a filled database of 450 MB.
fn copy_sql(server_version_num: u32) -> String {
    let strategy = match server_version_num >= 150_000 {
        true => " STRATEGY FILE_COPY",
        false => "",
    };
    format!("CREATE DATABASE {RUN_DATABASE} TEMPLATE {WORK_DATABASE}{strategy}")
}

/// Back on the work database; the copy is dropped.
pub(super) async fn back_to_work_database(target: &mut Database) -> Result<(), Error> {
    target.clear_sessions().await?;
    target.use_database(WORK_DATABASE);
    target
        .run_on_home_database(&format!("DROP DATABASE IF EXISTS {RUN_DATABASE}"))
        .await
}

#[cfg(test)]
mod tests {
    use super::copy_sql;

    #[test]
    fn the_runs_copy_copies_files_from_postgresql_15_on() {
        assert_eq!(
            copy_sql(150_018),
            "CREATE DATABASE stallbench_check_run TEMPLATE stallbench_check STRATEGY FILE_COPY"
        );
        assert_eq!(
            copy_sql(140_011),
            "CREATE DATABASE stallbench_check_run TEMPLATE stallbench_check"
        );
    }
}
