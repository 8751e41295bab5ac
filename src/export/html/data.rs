//! The page's data: per strategy, its per-second figures as columns (the
//! layout uPlot's `data` takes, so the page does no reshaping), its DDL
//! tries and blocker as time spans, its failures by kind, and the lock chain
//! of each second in words. Per second, never per transaction: an hour of
//! one strategy is about 200 KB.

use serde::Serialize;

use crate::export::format::round3;
use crate::export::sentences::describe_chain;
use crate::metrics::locks::{LockSample, chain, is_worse_moment};
use crate::metrics::repeats::chart_report;
use crate::metrics::{AttemptOutcome, DdlState, RunReport, SecondRow, StrategyReport};

/// Everything the page's script draws, serialised once into the page.
#[derive(Debug, Serialize)]
pub struct PageData {
    pub workload: String,
    /// One entry per strategy (a repeated strategy: its median run, with the
    /// repeats' TPS range), in run order.
    pub strategies: Vec<StrategyData>,
    /// The time axis every chart shares: 0 to the longest timeline, in s.
    pub x_max_s: f64,
    /// The TPS axis every strategy shares.
    pub tps_max: f64,
    /// The latency axis every strategy shares (log scale), in ms.
    pub latency_min_ms: f64,
    pub latency_max_ms: f64,
    /// The lock waiters axis every strategy shares.
    pub waiters_max: f64,
}

/// One strategy's charts and hover figures.
#[derive(Debug, Serialize)]
pub struct StrategyData {
    pub name: String,
    /// `second`: second `k` covers `[k, k+1)`; the other columns line up with it.
    pub second: Vec<u32>,
    pub tps: Vec<u64>,
    pub failed: Vec<u64>,
    /// Latency of the transactions that ended in the second; `null` when none
    /// did (a gap on the log axis).
    pub p50_ms: Vec<Option<f64>>,
    pub p99_ms: Vec<Option<f64>>,
    pub max_ms: Vec<Option<f64>>,
    /// Most sessions seen waiting on a lock in the second.
    pub waiters: Vec<u32>,
    /// Of them, the sessions waiting behind the DDL.
    pub behind_ddl: Vec<u32>,
    /// What the DDL did in the second: `idle`, `running`, `backoff`, `done`, `failed`.
    pub ddl_state: Vec<DdlState>,
    /// The repeats' lowest and highest TPS per second; empty for one run.
    pub tps_low: Vec<f64>,
    pub tps_high: Vec<f64>,
    /// When the blocker's transaction was open: start and end.
    pub blocker_s: Option<[f64; 2]>,
    pub attempts: Vec<AttemptData>,
    /// Failure kinds (`55P03 lock timeout`) and, per kind, the count per second.
    pub failure_kinds: Vec<String>,
    pub failures: Vec<Vec<u64>>,
    /// The lock chains seen, each once, and per second the index of the one
    /// at that second's worst moment (-1: no one waited).
    pub chains: Vec<String>,
    pub chain_at: Vec<i32>,
    /// The hot standby's columns; absent for a run without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica: Option<ReplicaData>,
}

/// One strategy's hot standby, per second (`replica_*` of `timeline.csv`).
#[derive(Debug, Serialize)]
pub struct ReplicaData {
    /// The highest replay lag of the second, in s.
    pub lag_s: Vec<f64>,
    /// The most sessions waiting for a lock on the standby.
    pub waiters: Vec<u32>,
    /// 1 when the standby's replay waited for a lock in the second.
    pub replay_waiting: Vec<u8>,
    /// The replica's clients' TPS, with the load on both servers; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tps: Option<Vec<u64>>,
}

/// One DDL try as time spans, in s on the run clock.
#[derive(Debug, Serialize)]
pub struct AttemptData {
    pub attempt: u32,
    pub started_s: f64,
    pub ended_s: f64,
    /// When it got its lock; `None` if it never did (or no observer ran).
    pub granted_s: Option<f64>,
    /// `ok`, `lock_timeout`, `error`, `gave_up`.
    pub outcome: AttemptOutcome,
    /// The server's message for a failed try, empty on success.
    pub message: String,
}

/// The page data of `report`: a repeated run as its chart view (the median
/// run per strategy and the repeats' TPS range), as the PNG charts draw it.
pub fn page_data(report: &RunReport) -> PageData {
    let chart = chart_report(report);
    let strategies: Vec<StrategyData> = (chart.report.strategies.iter())
        .zip(&chart.tps_bands)
        .map(|(strategy, band)| strategy_data(strategy, band))
        .collect();
    let x_max_s = (strategies.iter())
        .filter_map(|strategy| strategy.second.last())
        .map(|last| f64::from(*last) + 1.0)
        .fold(1.0, f64::max);
    let tps_max = (strategies.iter())
        .flat_map(|strategy| strategy.tps.iter().map(|tps| *tps as f64))
        .chain(strategies.iter().flat_map(|s| s.tps_high.iter().copied()))
        .chain(
            (strategies.iter())
                .filter_map(|s| s.replica.as_ref()?.tps.as_ref())
                .flat_map(|tps| tps.iter().map(|tps| *tps as f64)),
        )
        .fold(1.0, f64::max);
    let latencies = || {
        (strategies.iter()).flat_map(|strategy| {
            (strategy.p50_ms.iter())
                .chain(&strategy.max_ms)
                .filter_map(|ms| *ms)
                .filter(|ms| *ms > 0.0)
        })
    };
    let latency_min_ms = latencies().fold(f64::INFINITY, f64::min);
    let latency_max_ms = latencies().fold(0.0, f64::max);
    let (latency_min_ms, latency_max_ms) = match latency_max_ms > 0.0 {
        true => (
            10f64.powf(latency_min_ms.log10().floor()),
            10f64.powf(latency_max_ms.log10().ceil()),
        ),
        false => (0.1, 1000.0),
    };
    let waiters_max = (strategies.iter())
        .flat_map(|strategy| strategy.waiters.iter().map(|w| f64::from(*w)))
        .fold(1.0, f64::max);
    PageData {
        workload: report.workload.clone(),
        strategies,
        x_max_s,
        tps_max: (tps_max * 1.15).ceil(),
        latency_min_ms,
        latency_max_ms: latency_max_ms.max(latency_min_ms * 10.0),
        waiters_max: waiters_max + 1.0,
    }
}

/// One strategy's columns; `band` is its repeats' TPS range per second.
fn strategy_data(strategy: &StrategyReport, band: &[(f64, f64)]) -> StrategyData {
    let seconds = &strategy.seconds;
    let latency = |figure: fn(&SecondRow) -> f64| -> Vec<Option<f64>> {
        (seconds.iter())
            .map(|row| (row.tps + row.failed > 0).then(|| round3(figure(row))))
            .collect()
    };
    let (failure_kinds, failures) = failures_by_kind(strategy);
    let (chains, chain_at) = chains_per_second(&strategy.locks.samples, seconds.len());
    StrategyData {
        name: crate::export::table::strategy_cell(&strategy.summary),
        second: seconds.iter().map(|row| row.second).collect(),
        tps: seconds.iter().map(|row| row.tps).collect(),
        failed: seconds.iter().map(|row| row.failed).collect(),
        p50_ms: latency(|row| row.lat_p50_ms),
        p99_ms: latency(|row| row.lat_p99_ms),
        max_ms: latency(|row| row.lat_max_ms),
        waiters: seconds.iter().map(|row| row.lock_waiters).collect(),
        behind_ddl: (seconds.iter())
            .map(|row| strategy.locks.second(row.second).waiting_behind_ddl)
            .collect(),
        ddl_state: seconds.iter().map(|row| row.ddl_state).collect(),
        // The band follows the longest repeat; the chart, the median run.
        tps_low: (band.iter().take(seconds.len()))
            .map(|(low, _)| *low)
            .collect(),
        tps_high: (band.iter().take(seconds.len()))
            .map(|(_, high)| *high)
            .collect(),
        blocker_s: (strategy.blocker.as_ref())
            .map(|window| [round3(window.started_s), round3(window.ended_s)]),
        attempts: (strategy.attempts.iter())
            .map(|attempt| AttemptData {
                attempt: attempt.attempt,
                started_s: round3(attempt.started_s),
                ended_s: round3(attempt.ended_s),
                granted_s: attempt.lock.and_then(|lock| lock.granted_s).map(round3),
                outcome: attempt.outcome,
                message: attempt.message.clone(),
            })
            .collect(),
        failure_kinds,
        failures,
        chains,
        chain_at,
        replica: replica_data(seconds),
    }
}

/// The standby's columns of `seconds`; `None` for a run without one.
fn replica_data(seconds: &[SecondRow]) -> Option<ReplicaData> {
    if seconds.iter().all(|row| row.replica.is_none()) {
        return None;
    }
    let rows: Vec<_> = seconds
        .iter()
        .map(|row| row.replica.unwrap_or_default())
        .collect();
    Some(ReplicaData {
        lag_s: rows.iter().map(|row| round3(row.lag_s)).collect(),
        waiters: rows.iter().map(|row| row.lock_waiters).collect(),
        replay_waiting: rows
            .iter()
            .map(|row| u8::from(row.replay_waiting))
            .collect(),
        tps: (seconds.iter())
            .map(|row| row.replica_load.map(|load| load.tps))
            .collect(),
    })
}

/// The failure kinds of `strategy` (`55P03 canceling statement due to lock
/// timeout`) and, per kind, its count in each second of the timeline.
fn failures_by_kind(strategy: &StrategyReport) -> (Vec<String>, Vec<Vec<u64>>) {
    let mut kinds: Vec<String> = Vec::new();
    let mut counts: Vec<Vec<u64>> = Vec::new();
    for failure in &strategy.failures {
        let kind = format!("{} {}", failure.kind.cell(), failure.message);
        let index = match kinds.iter().position(|seen| *seen == kind) {
            Some(index) => index,
            None => {
                kinds.push(kind);
                counts.push(vec![0; strategy.seconds.len()]);
                kinds.len() - 1
            }
        };
        if let Some(count) = counts[index].get_mut(failure.second as usize) {
            *count += failure.count;
        }
    }
    (kinds, counts)
}

/// The lock chain at each second's worst moment (the samples taken at one
/// instant on one server are one moment; the worst as `is_worse_moment`
/// orders them, the rule the summary's "lock queue at its worst" uses), in
/// the summary's words: each distinct chain once, and per second its index
/// or -1.
pub fn chains_per_second(samples: &[LockSample], seconds: usize) -> (Vec<String>, Vec<i32>) {
    let mut worst: Vec<Vec<LockSample>> = vec![Vec::new(); seconds];
    let mut moment_start = 0;
    while moment_start < samples.len() {
        let (t_s, server) = (samples[moment_start].t_s, samples[moment_start].server);
        let moment_end = (samples[moment_start..].iter())
            .position(|sample| sample.t_s != t_s || sample.server != server)
            .map_or(samples.len(), |offset| moment_start + offset);
        let moment = &samples[moment_start..moment_end];
        let second = t_s.max(0.0) as usize;
        if let Some(slot) = worst.get_mut(second)
            && is_worse_moment(moment, slot)
        {
            *slot = moment.to_vec();
        }
        moment_start = moment_end;
    }
    let mut chains: Vec<String> = Vec::new();
    let chain_at = (worst.iter())
        .map(|moment| {
            if !moment.iter().any(|sample| !sample.granted) {
                return -1;
            }
            let words = describe_chain(&chain(moment));
            let index = match chains.iter().position(|seen| *seen == words) {
                Some(index) => index,
                None => {
                    chains.push(words);
                    chains.len() - 1
                }
            };
            index as i32
        })
        .collect();
    (chains, chain_at)
}
