//! stallbench: a load-and-stall benchmark harness for PostgreSQL.
//!
//! The pipeline (see README.md): workload + flags -> [`config::Config`] ->
//! [`target::Target`] (throwaway server or `--db-url`) -> setup SQL -> for each
//! strategy: reset -> [`scenario::run_strategy`] -> [`scenario::assemble_report`]
//! -> [`metrics::RunReport`] -> [`export`] and [`plot`], written after each strategy.
//!
//! [`run`] is the whole program, callable in-process from tests.

pub mod cli;
pub mod config;
pub mod conninfo;
pub mod console;
pub mod error;
pub mod expect;
pub mod export;
pub mod metrics;
pub mod output;
pub mod pgwire;
pub mod plot;
pub mod scenario;
pub mod script;
pub mod server;
pub mod serverlog;
pub mod strategy;
pub mod target;
pub mod workload;

use std::path::Path;

use anyhow::Context;

use crate::cli::{Cli, Command, CommonArgs};
use crate::config::{Config, Mode};
pub use crate::error::Error;
use crate::export::run_json::RunFile;
use crate::metrics::RunReport;
use crate::target::Target;

/// How long after a failed run the throwaway server's death is still taken as its cause.
const SERVER_DEATH_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

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
        } => {
            let mode = match (load_only, strategy) {
                (true, _) => Mode::LoadOnly,
                (false, Some(strategy)) => Mode::Run { strategy },
                (false, None) => {
                    return Err(Error::bad_input("run needs --strategy NAME or --load-only"));
                }
            };
            run_benchmark(workload.as_deref(), mode, &common)
        }
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

/// `stallbench plot DIR`: re-draws the charts from the folder's files.
pub fn redraw_charts(dir: &Path) -> Result<(), Error> {
    let report = export::read_report(dir).map_err(|err| Error::bad_input(format!("{err:#}")))?;
    plot::draw_timeline(&report, &dir.join(export::TIMELINE_PNG))?;
    plot::draw_latency(&report, &dir.join(export::LATENCY_PNG))?;
    plot::draw_latency_timeline(&report, &dir.join(export::LATENCY_TIMELINE_PNG))?;
    eprintln!(
        "wrote {0}/{1}, {0}/{2} and {0}/{3}",
        dir.display(),
        export::TIMELINE_PNG,
        export::LATENCY_PNG,
        export::LATENCY_TIMELINE_PNG
    );
    Ok(())
}

fn run_benchmark(workload: Option<&str>, mode: Mode, args: &CommonArgs) -> Result<i32, Error> {
    let config = Config::new(workload, mode, args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(async {
        tokio::select! {
            result = execute(&config) => result,
            _ = tokio::signal::ctrl_c() => Err(Error::runtime(format!(
                "interrupted (Ctrl-C); the server was stopped; results so far are in {}",
                config.out_dir.display()
            ))),
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    let report = result?;
    check_expectations(&config, &report)
}

/// Prints each expectation's verdict, writes `expectations.csv` and `junit.xml`,
/// appends to `$GITHUB_STEP_SUMMARY` if set; exit code 3 if any failed, else 0.
fn check_expectations(config: &Config, report: &RunReport) -> Result<i32, Error> {
    let results = expect::evaluate(&config.expectations, report);
    for line in expect::report_lines(&results) {
        output::write_stdout(&format!("{line}\n"))?;
    }
    let files = expect::result_files(&report.workload, &results)?;
    export::write_files(&config.out_dir, &files)?;
    expect::append_github_step_summary(
        expect::github_step_summary_path().as_deref(),
        &report.workload,
        &export::markdown::summary_markdown(report),
        &results,
    )?;
    Ok(if expect::any_failed(&results) {
        expect::EXIT_CODE_FAILED
    } else {
        0
    })
}

/// The whole benchmark on an async runtime: target, setup, each strategy, files.
pub async fn execute(config: &Config) -> Result<RunReport, Error> {
    let names: Vec<&str> = config.strategies.iter().map(|s| s.name.as_str()).collect();
    if !config.quiet {
        eprintln!(
            "stallbench {}: workload {}, strategies {}, {} clients for {} s; results in {}",
            env!("CARGO_PKG_VERSION"),
            config.workload_name,
            names.join(", "),
            config.load.clients,
            config.load.duration_s(),
            config.out_dir.display()
        );
    }
    let started = std::time::Instant::now();
    let target = Target::open(&config.target, &config.connection_needs()).await?;
    if !config.quiet {
        eprintln!(
            "target: {}, PostgreSQL {} (ready in {:.1} s)",
            target.description,
            target.server_version,
            started.elapsed().as_secs_f64()
        );
    }
    let run_file = RunFile::new(config, &target.description, &target.server_version);
    config::create_results_folder(
        &config.out_dir,
        &config.replaced_files,
        &[run_file.render()?],
    )?;
    let result = run_while_server_lives(config, &target).await;
    if result.is_err() {
        // Leave nothing behind on a real server, even after a failure (best effort).
        let cleanup = async {
            let _ = target.clear_sessions().await;
            let _ = target.drop_schema().await;
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), cleanup).await;
    }
    // The server log goes to the results folder on every path, errors included.
    let copied = target.copy_server_log(&config.out_dir);
    let report = result?;
    copied?;
    output::write_stdout(&console::summary_table(&report))?;
    if !config.quiet {
        eprintln!("results: {}", config.out_dir.display());
    }
    Ok(report)
}

/// Runs the strategies, ended at once by the throwaway server's death. A run
/// that fails as the server dies (connections refused) failed because of it.
async fn run_while_server_lives(config: &Config, target: &Target) -> Result<RunReport, Error> {
    let result = tokio::select! {
        result = run_strategies(config, target) => result,
        died = target.server_died() => return Err(died),
    };
    if result.is_err()
        && let Ok(died) = tokio::time::timeout(SERVER_DEATH_GRACE, target.server_died()).await
    {
        return Err(died);
    }
    result
}

async fn run_strategies(config: &Config, target: &Target) -> Result<RunReport, Error> {
    let workload_source = format!("workload {}", config.workload_name);
    target
        .prepare_schema(&workload_source, &config.setup_sql)
        .await?;
    let mut report = RunReport {
        workload: config.workload_name.clone(),
        strategies: Vec::new(),
    };
    if target.server_log().is_none() && !config.quiet {
        eprintln!(
            "note: on --db-url the server log is not available to stallbench; \
             lock waits longer than deadlock_timeout are in the server's own log"
        );
    }
    for (index, strategy) in config.strategies.iter().enumerate() {
        target.clear_sessions().await?;
        target.reset(&workload_source, &config.reset_sql).await?;
        let log_start = server_log_len(target);
        if !config.quiet {
            eprintln!("== {} ({}) ==", strategy.name, strategy.describe());
        }
        let (measured, notes) = scenario::run_strategy(
            target,
            config,
            strategy,
            config.seed.wrapping_add(index as u64),
        )
        .await?;
        for warning in &notes.warnings {
            eprintln!("warning: {warning}");
        }
        if !notes.failed_by_sqlstate.is_empty() && !config.quiet {
            let counts: Vec<String> = notes
                .failed_by_sqlstate
                .iter()
                .map(|(sqlstate, count)| format!("{count} x {sqlstate}"))
                .collect();
            eprintln!(
                "{}: failed transactions: {}",
                strategy.name,
                counts.join(", ")
            );
        }
        let after_run = scenario::AfterRun {
            server_log: server_log_sentences(target, log_start, &notes.roles),
            invalid_indexes: target.invalid_indexes().await?,
        };
        if !after_run.invalid_indexes.is_empty() {
            eprintln!(
                "warning: {}: the run left INVALID indexes behind: {} (a failed CREATE INDEX \
                 CONCURRENTLY); drop them before trying again",
                strategy.name,
                after_run.invalid_indexes.join(", ")
            );
        }
        let strategy_report = scenario::assemble_report(&strategy.name, measured, after_run);
        report.strategies.push(strategy_report);
        // Files of a finished strategy are written before the next one starts.
        export::write_all(&report, &config.out_dir)?;
        target.copy_server_log(&config.out_dir)?;
    }
    target.clear_sessions().await?;
    target.drop_schema().await?;
    Ok(report)
}

/// The current size of the throwaway server's structured log, where a strategy's part begins.
fn server_log_len(target: &Target) -> u64 {
    target
        .structured_log()
        .and_then(|log| std::fs::metadata(log.path).ok())
        .map_or(0, |meta| meta.len())
}

/// What the server log says about lock waits since `from` (one strategy's part),
/// naming sessions by their roles; empty on `--db-url`.
fn server_log_sentences(
    target: &Target,
    from: u64,
    roles: &std::collections::BTreeMap<u32, String>,
) -> Vec<String> {
    let Some(log) = target.structured_log() else {
        return Vec::new();
    };
    let Ok(bytes) = std::fs::read(&log.path) else {
        return Vec::new();
    };
    let part = bytes.get(from as usize..).unwrap_or_default();
    let facts = serverlog::parse_server_log(log.format, &String::from_utf8_lossy(part));
    let role_of = |pid: u32| {
        roles
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| format!("external:{pid}"))
    };
    facts.sentences(&role_of)
}
