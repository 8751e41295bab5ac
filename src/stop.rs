//! A run until it is stopped, shared by both front doors (`compare` and
//! `check`): the async runtime they run on, the signals that stop them, the
//! wind-down a stopped run gets ([`WIND_DOWN_LIMIT`]), and what a run stopped
//! before its end does and says. The stop itself (the DDL rolled back first,
//! the strategy in progress written up to its last whole second) happens in
//! `scenario`; here the run's [`Interruption`] is built once, from the config
//! and what was measured, and the stop line is worded: why it stopped, which
//! DDL steps had committed (or that nothing was applied), and what became of
//! the server and of stallbench's schema.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use anyhow::Context;

use crate::config::Config;
use crate::error::Error;
use crate::export::sentences::applied_clause;
use crate::metrics::interruption::applied_steps;
use crate::metrics::{AppliedStep, Interruption, PartialStrategy, RunReport};
use crate::scenario::{Interrupt, Measured};
use crate::strategy::NamedStrategy;

/// What Ctrl-C is called in the lines of a run it stopped.
pub const CTRL_C: &str = "Ctrl-C (SIGINT)";
/// What SIGTERM is called in the lines of a run it stopped.
pub const SIGTERM: &str = "SIGTERM";

/// How long a stopped run may take to wind down and write what it measured.
pub const WIND_DOWN_LIMIT: Duration = Duration::from_secs(15);

/// Runs `work` to its end on a new multi-threaded runtime, which then gets a
/// second to end the tasks left behind.
pub fn on_runtime<T>(work: impl Future<Output = T>) -> Result<T, Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(work);
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(result)
}

/// Resolves at Ctrl-C (SIGINT) or SIGTERM, naming the signal.
pub async fn stop_signal() -> String {
    let sigterm = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signals) => signals.recv().await,
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        Ok(()) = tokio::signal::ctrl_c() => CTRL_C.to_string(),
        _ = sigterm => SIGTERM.to_string(),
    }
}

/// How a run raced against what may stop it ended.
pub enum Ending<T> {
    /// The run ended on its own, with this result.
    Finished(T),
    /// A stop came first and fired the run's interrupt.
    Stopped {
        /// What stopped it.
        cause: StopCause,
        /// Whether the run then ended within [`WIND_DOWN_LIMIT`].
        wound_down: bool,
    },
}

/// What stopped a run from outside.
pub enum StopCause {
    /// A signal, by the name [`stop_signal`] gives it.
    Signal(String),
    /// A failure beside the run (the throwaway server's death).
    Failure(Error),
}

/// Runs `run` until it ends or `stop` (a signal's name) or `failure` comes
/// first; a stop fires `interrupt` (with the signal's name or the failure's
/// message) and gives the run [`WIND_DOWN_LIMIT`] to stop its DDL and write
/// what it measured.
pub async fn until_stopped<T>(
    run: impl Future<Output = T>,
    interrupt: &Interrupt,
    stop: impl Future<Output = String>,
    failure: impl Future<Output = Error>,
) -> Ending<T> {
    let mut run = pin!(run);
    let cause = tokio::select! {
        result = &mut run => return Ending::Finished(result),
        reason = stop => {
            interrupt.fire(reason.as_str());
            StopCause::Signal(reason)
        }
        error = failure => {
            interrupt.fire(error.to_string());
            StopCause::Failure(error)
        }
    };
    let wound_down = tokio::time::timeout(WIND_DOWN_LIMIT, run).await.is_ok();
    Ending::Stopped { cause, wound_down }
}

/// Why a run ended before its end: the error it exits with, the signal that
/// stopped it (if one did), and whether the strategy in progress wound down
/// (its DDL stopped and its measurements written) in time.
pub struct Stopped {
    pub error: Error,
    pub signal: Option<String>,
    pub wound_down: bool,
}

impl Stopped {
    /// A run that failed on its own (no signal); what it did was wound down.
    pub fn failed(error: Error) -> Stopped {
        Stopped {
            error,
            signal: None,
            wound_down: true,
        }
    }
}

/// What became of the server and of stallbench's objects on it after a stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerFate {
    /// The throwaway server: stopped and removed with everything on it.
    ThrowawayStopped,
    /// A `--db-url` server, left running.
    LeftRunning {
        /// `host:port`, as the run connected to it.
        address: String,
        schema: SchemaFate,
        /// Sessions of the run that could not be ended: how to find them.
        open_sessions: Option<String>,
    },
}

/// What became of stallbench's schema on a `--db-url` server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaFate {
    Dropped,
    /// `--in-place`: the run made none.
    NoneMade,
    /// It could not be dropped: why.
    Left(String),
}

/// The steps a strategy runs: its own recipe, else the workload's migration.
fn steps_of<'a>(config: &'a Config, strategy: &'a NamedStrategy) -> &'a [String] {
    match (&strategy.ddl_steps, &config.ddl) {
        (Some(steps), _) => steps,
        (None, Some(ddl)) => &ddl.steps,
        (None, None) => &[],
    }
}

/// The DDL steps of `strategy` that committed, by its `attempts` (none when
/// each step is rolled back); `stop_at_s`: when a stop came during it.
fn committed(
    config: &Config,
    strategy: &str,
    attempts: &[crate::metrics::DdlAttempt],
    stop_at_s: Option<f64>,
) -> Vec<AppliedStep> {
    let Some(named) = config.strategies.iter().find(|s| s.name == strategy) else {
        return Vec::new();
    };
    if config.objects.rolls_back_ddl() {
        return Vec::new();
    }
    applied_steps(strategy, steps_of(config, named), attempts, stop_at_s)
}

/// The strategy `measured` cut short, and the DDL steps it committed (from
/// every try, those of the second it was cut in included).
pub fn partial(
    config: &Config,
    strategy: &str,
    measured: &Measured,
) -> (PartialStrategy, Vec<AppliedStep>) {
    let at_s = measured
        .interrupted_at_s
        .unwrap_or(f64::from(measured.duration_s));
    let partial = PartialStrategy {
        strategy: strategy.to_string(),
        at_s,
        kept_s: measured.duration_s,
        planned_s: config.load.duration_s(),
        last_try: measured.attempts.last().cloned(),
    };
    let applied = committed(config, strategy, &measured.attempts, Some(at_s));
    (partial, applied)
}

/// The interruption of a run of `config` stopped for `reason` after the
/// strategies of `report` (without the one cut short) and during `partial`,
/// if the stop came during a strategy.
pub fn interruption(
    config: &Config,
    report: &RunReport,
    reason: &str,
    partial: Option<(PartialStrategy, Vec<AppliedStep>)>,
) -> Interruption {
    let mut applied: Vec<AppliedStep> = report
        .strategies
        .iter()
        .flat_map(|run| committed(config, &run.strategy, &run.attempts, None))
        .collect();
    let (partial, partial_applied) = match partial {
        Some((partial, applied)) => (Some(partial), applied),
        None => (None, Vec::new()),
    };
    applied.extend(partial_applied);
    let started = |name: &str| {
        report.strategies.iter().any(|run| run.strategy == name)
            || partial.as_ref().is_some_and(|cut| cut.strategy == name)
    };
    Interruption {
        reason: reason.to_string(),
        by_signal: reason == CTRL_C || reason == SIGTERM,
        not_run: config
            .strategies
            .iter()
            .map(|strategy| strategy.name.clone())
            .filter(|name| !started(name))
            .collect(),
        partial,
        applied,
    }
}

/// The one line a stopped run ends with (the error it exits with). For a
/// signal: why it stopped, what was applied (`None`: unknown, the run did not
/// wind down), what became of the server, and where the results are. For a
/// failure: its own error, with what was applied when a step committed on the
/// user's tables (`--in-place --apply`).
pub fn stop_line(
    stopped: Stopped,
    config: &Config,
    applied: Option<&[AppliedStep]>,
    server: &ServerFate,
) -> Error {
    let applied_text = match applied {
        Some([]) if config.objects.rolls_back_ddl() => {
            "nothing was applied (each DDL step is rolled back)".to_string()
        }
        Some(steps) => applied_clause(steps),
        None => "whether the DDL in progress was applied is unknown (the run did not wind down); \
                 look at the tables"
            .to_string(),
    };
    let Some(signal) = &stopped.signal else {
        return match (stopped.error, applied) {
            (Error::BadInput(message), Some(steps))
                if !steps.is_empty() && config.objects.in_place() =>
            {
                Error::BadInput(format!("{message}; {applied_text}"))
            }
            (error, Some(steps)) if !steps.is_empty() && config.objects.in_place() => {
                Error::runtime(format!("{error}; {applied_text}"))
            }
            (error, _) => error,
        };
    };
    Error::runtime(format!(
        "interrupted by {signal}; {applied_text}; {}; results so far are in {}",
        server_words(server),
        config.out_dir.display()
    ))
}

/// What became of the server, in words.
fn server_words(server: &ServerFate) -> String {
    let ServerFate::LeftRunning {
        address,
        schema,
        open_sessions,
    } = server
    else {
        return "the throwaway server was stopped".to_string();
    };
    let schema = match schema {
        SchemaFate::Dropped => "stallbench's schema was dropped".to_string(),
        SchemaFate::NoneMade => "--in-place made no schema of its own".to_string(),
        SchemaFate::Left(why) => format!(
            "stallbench's schema could not be dropped ({why}): drop it with DROP SCHEMA {} CASCADE",
            crate::engine::postgres::database::SCHEMA
        ),
    };
    let sessions = match open_sessions {
        Some(how) => format!("; sessions of the run may still be open: {how}"),
        None => String::new(),
    };
    format!("the server at {address} was left running; {schema}{sessions}")
}
