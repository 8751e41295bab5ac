//! The figures the ranking compares: of each run ([`RunFigures`], from its
//! timeline, tries and summary) and of each strategy over its repeats
//! ([`RankingRow`], each figure a [`Spread`]). The worst seconds of the DDL
//! window are found once ([`worst_seconds`]) for the ranking and `summary.csv`.

use super::super::failures::failure_kinds;
use super::super::spread::Spread;
use super::super::summary::{baseline_seconds, baseline_tps, share_of_baseline};
use super::super::{DdlAttempt, DdlOutcome, SecondRow, StrategyReport, replica_view};
use super::MASS_FAILURE_SHARE;
use crate::metrics::invariants::{InvariantCheck, total_anomalies};

/// The stretch of the run clock the migration touched, in seconds.
///
/// From the first attempt's start to the last attempt's end plus 1 s (so the
/// second in which the lock queue drains counts), clamped to the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct DdlWindow {
    /// Start of the window on the run clock, in seconds.
    pub start_s: f64,
    /// End of the window on the run clock, in seconds (exclusive).
    pub end_s: f64,
}

impl DdlWindow {
    /// Whether timeline second `second` (covering `[second, second + 1)`) overlaps the window.
    pub fn overlaps_second(&self, second: u32) -> bool {
        let second_start_s = f64::from(second);
        second_start_s < self.end_s && second_start_s + 1.0 > self.start_s
    }
}

/// The DDL window of a strategy, or `None` when there were no attempts or the
/// window does not overlap the timeline.
pub fn ddl_window(seconds: &[SecondRow], attempts: &[DdlAttempt]) -> Option<DdlWindow> {
    let first_attempt = attempts.first()?;
    let last_attempt = attempts.last()?;
    let timeline_start_s = f64::from(seconds.first()?.second);
    let timeline_end_s = f64::from(seconds.last()?.second) + 1.0;
    let start_s = first_attempt.started_s.max(timeline_start_s);
    let end_s = (last_attempt.ended_s + 1.0).min(timeline_end_s);
    if start_s >= end_s {
        return None;
    }
    Some(DdlWindow { start_s, end_s })
}

/// What traffic felt while the migration ran: the worst seconds of the DDL
/// window (of the whole run when there is none). The ranking compares these
/// figures and `summary.csv` records the first two, for CI bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct WorstSeconds {
    /// The DDL window, as [`ddl_window`] finds it; `None`: the figures cover the whole run.
    pub window: Option<DdlWindow>,
    /// Lowest TPS of any second overlapping the window; 0 when the window holds no second.
    pub worst_second_tps: u64,
    /// The highest latency a second of the window stands for, in ms (see
    /// [`second_latency`]): a second in which transactions ended, its p99; a
    /// second in which none did, the latency of the transactions stalled
    /// through it. Per-second histograms are not kept, so this is the worst
    /// second's figure, not a p99 of the window.
    pub worst_second_p99_ms: f64,
    /// Where `worst_second_p99_ms` comes from.
    pub worst_latency: WorstLatency,
    /// Highest latency of any transaction that completed in the window, in ms.
    pub window_max_latency_ms: f64,
}

/// Where a run's worst-second latency comes from: a second without an
/// ended transaction has no percentile of its own, so it stands for the
/// transactions that were stalled through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorstLatency {
    /// The p99 of a second in which transactions ended (or no second of the
    /// window had any figure: 0).
    #[default]
    SecondP99,
    /// No transaction ended in second `stalled_s`; the figure is the
    /// longest latency of those stalled through it, which ended in second `ended_s`.
    Stalled { stalled_s: u32, ended_s: u32 },
    /// No transaction ended in second `stalled_s` nor after it: the figure is
    /// the time from its start to the run's end, a lower bound of the wait of
    /// any transaction in flight through it.
    NoneCompleted { stalled_s: u32 },
}

/// The latency second `index` of `seconds` stands for, in ms, and where it
/// comes from. A second in which transactions ended: its p99. A second in
/// which none ended: the highest latency of the first later second in
/// which some did, when that latency reaches back into it (a transaction
/// that ended in second `j` after `L` ms started before the end of second
/// `k` only if `L > (j - k - 1) * 1000`); `None` when it does not (nothing
/// was in flight through the second). None ended after it either: the time
/// from its start to the end of the timeline, as a lower bound.
pub fn second_latency(seconds: &[SecondRow], index: usize) -> Option<(f64, WorstLatency)> {
    let ended = |row: &SecondRow| row.tps + row.failed > 0;
    let row = seconds.get(index)?;
    if ended(row) {
        return Some((row.lat_p99_ms, WorstLatency::SecondP99));
    }
    let stalled_s = row.second;
    match seconds[index + 1..].iter().find(|later| ended(later)) {
        Some(later) => {
            let reach_ms = f64::from(later.second - stalled_s - 1) * 1000.0;
            (later.lat_max_ms > reach_ms).then_some((
                later.lat_max_ms,
                WorstLatency::Stalled {
                    stalled_s,
                    ended_s: later.second,
                },
            ))
        }
        None => {
            let end_s = seconds.last().map_or(stalled_s + 1, |last| last.second + 1);
            Some((
                f64::from(end_s - stalled_s) * 1000.0,
                WorstLatency::NoneCompleted { stalled_s },
            ))
        }
    }
}

/// The worst seconds of the DDL window of a strategy's `seconds` and `attempts`.
pub fn worst_seconds(seconds: &[SecondRow], attempts: &[DdlAttempt]) -> WorstSeconds {
    let window = ddl_window(seconds, attempts);
    let in_window = |row: &SecondRow| match &window {
        Some(window) => window.overlaps_second(row.second),
        None => true,
    };
    let seconds_in_window: Vec<&SecondRow> = seconds.iter().filter(|row| in_window(row)).collect();
    let mut worst_latency = (0.0, WorstLatency::SecondP99);
    for (index, row) in seconds.iter().enumerate() {
        if !in_window(row) {
            continue;
        }
        if let Some(latency) = second_latency(seconds, index)
            && latency.0 > worst_latency.0
        {
            worst_latency = latency;
        }
    }
    WorstSeconds {
        worst_second_tps: seconds_in_window
            .iter()
            .map(|row| row.tps)
            .min()
            .unwrap_or(0),
        worst_second_p99_ms: worst_latency.0,
        worst_latency: worst_latency.1,
        window_max_latency_ms: seconds_in_window
            .iter()
            .map(|row| row.lat_max_ms)
            .fold(0.0, f64::max),
        window,
    }
}

/// The figures of one run of a strategy that the ranking compares.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFigures {
    /// The DDL window; `None` when the run made no DDL attempt or its attempts
    /// lie outside the timeline, and then the worst-second figures cover the whole run.
    pub window: Option<DdlWindow>,
    /// Lowest TPS of any second overlapping the window; 0 when the window holds no second.
    pub worst_second_tps: u64,
    /// The highest latency a second of the window stands for, in ms (see
    /// [`WorstSeconds::worst_second_p99_ms`]).
    pub worst_second_p99_ms: f64,
    /// Where `worst_second_p99_ms` comes from.
    pub worst_latency: WorstLatency,
    /// Highest latency of any transaction that completed in the window, in ms.
    pub window_max_latency_ms: f64,
    /// The run's baseline: the median TPS of its seconds before the blocker started.
    pub baseline_tps: f64,
    /// The lowest and the highest of those seconds as shares of the baseline
    /// (`(0.93, 1.05)`): how much the steady seconds vary, the run's own noise.
    pub steady_shares: (f64, f64),
    /// The lowest and the highest p99 latency of those seconds, in ms
    /// (`(8.0, 28.0)`): how far a second's tail moves with the machine's load,
    /// the run's own latency noise; `(0, 0)` when none completed a transaction.
    pub steady_p99_ms: (f64, f64),
    /// Transactions that failed during the whole run.
    pub failed_transactions: u64,
    /// Transactions that completed during the whole run.
    pub transactions: u64,
    /// Completed transactions per second over the whole run's seconds.
    pub mean_tps: f64,
    /// The most frequent kind of failure, as `SQLSTATE message`; `None` when nothing failed.
    pub main_failure: Option<String>,
    /// Longest run of stalled seconds in the whole run (see `longest_stall_s`).
    pub longest_stall_s: u32,
    /// Seconds of the whole run with no completed transaction.
    pub zero_tps_seconds: u32,
    /// When the last attempt ended, on the run clock in seconds, if the DDL finished ok.
    pub migration_done_at_s: Option<f64>,
    /// How many DDL attempts the run made.
    pub ddl_tries: u32,
    /// The summary's DDL outcome.
    pub ddl_outcome: DdlOutcome,
    /// How the blocker ended: `none`, `ok` or `failed: <server message>`.
    pub blocker_outcome: String,
    /// With the load on both servers, whether the figures of traffic above
    /// are the replica's clients' (they fared worse in their worst second
    /// than the primary's); false for a load on one server.
    pub judged_on_replica: bool,
    /// What the run's data lost: the anomalies its invariants counted (0
    /// without invariants), and the checks behind them.
    pub anomalies: u64,
    pub invariants: Vec<InvariantCheck>,
}

impl RunFigures {
    /// The worst second as a share of the run's baseline (0.52 for 52%); 0
    /// when the run had no baseline throughput.
    pub fn worst_second_share(&self) -> f64 {
        share_of_baseline(self.worst_second_tps, self.baseline_tps)
    }

    /// Failed transactions as a fraction of those attempted (completed plus
    /// failed); 0 when none was attempted.
    pub fn failed_share(&self) -> f64 {
        let attempted = self.transactions + self.failed_transactions;
        share(self.failed_transactions as f64, attempted as f64)
    }

    /// Whether the migration completed, or the run had none to run.
    pub fn completed(&self) -> bool {
        matches!(self.ddl_outcome, DdlOutcome::Ok | DdlOutcome::None)
    }
}

/// `part / whole`, 0 when `whole` is 0.
fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { part / whole } else { 0.0 }
}

/// The ranking figures of one run. With the load on both servers, the
/// traffic figures are those of the server whose clients fared worse (the
/// lower worst second, then the longer stall): a strategy that keeps the
/// primary flowing and stalls the replica is judged by the replica.
pub fn run_figures(strategy: &StrategyReport) -> RunFigures {
    let summary = &strategy.summary;
    let primary = figures_of(
        strategy,
        &strategy.seconds,
        LoadTotals {
            transactions: summary.transactions,
            failed: summary.failed,
            longest_stall_s: summary.longest_stall_s,
            zero_tps_seconds: summary.zero_tps_seconds,
        },
    );
    let Some(replica_seconds) = replica_view(&strategy.seconds) else {
        return primary;
    };
    let replica = RunFigures {
        judged_on_replica: true,
        main_failure: None,
        ..figures_of(
            strategy,
            &replica_seconds,
            LoadTotals {
                transactions: replica_seconds.iter().map(|row| row.tps).sum(),
                failed: summary.replica_failed.unwrap_or(0),
                longest_stall_s: summary.replica_longest_stall_s.unwrap_or(0),
                zero_tps_seconds: summary.replica_zero_tps_seconds.unwrap_or(0),
            },
        )
    };
    let replica_worse = (replica.worst_second_share(), primary.longest_stall_s)
        < (primary.worst_second_share(), replica.longest_stall_s);
    if replica_worse { replica } else { primary }
}

/// The totals of one server's clients over a run, for [`figures_of`].
struct LoadTotals {
    transactions: u64,
    failed: u64,
    longest_stall_s: u32,
    zero_tps_seconds: u32,
}

/// The ranking figures of a run whose traffic is `seconds` (the run's own,
/// or the replica's clients' beside them) and `load`.
fn figures_of(strategy: &StrategyReport, seconds: &[SecondRow], load: LoadTotals) -> RunFigures {
    let summary = &strategy.summary;
    let WorstSeconds {
        window,
        worst_second_tps,
        worst_second_p99_ms,
        worst_latency,
        window_max_latency_ms,
    } = worst_seconds(seconds, &strategy.attempts);
    let migration_done_at_s = if summary.ddl_outcome == DdlOutcome::Ok {
        strategy.attempts.last().map(|last| last.ended_s)
    } else {
        None
    };
    let blocker = strategy.blocker.as_ref();
    let baseline_tps = baseline_tps(seconds, blocker);
    RunFigures {
        window,
        worst_second_tps,
        worst_second_p99_ms,
        worst_latency,
        window_max_latency_ms,
        baseline_tps,
        steady_shares: steady_shares(baseline_seconds(seconds, blocker), baseline_tps),
        steady_p99_ms: steady_p99_ms(baseline_seconds(seconds, blocker)),
        failed_transactions: load.failed,
        transactions: load.transactions,
        mean_tps: share(load.transactions as f64, seconds.len() as f64),
        main_failure: failure_kinds(&strategy.failures)
            .first()
            .map(|total| format!("{} {}", total.kind, total.message)),
        longest_stall_s: load.longest_stall_s,
        zero_tps_seconds: load.zero_tps_seconds,
        migration_done_at_s,
        ddl_tries: summary.ddl_attempts,
        ddl_outcome: summary.ddl_outcome,
        blocker_outcome: summary.blocker_outcome.clone(),
        judged_on_replica: false,
        anomalies: total_anomalies(&strategy.invariants),
        invariants: strategy.invariants.clone(),
    }
}

/// The lowest and highest TPS of `seconds` as shares of `baseline_tps`; `(1, 1)` without either.
fn steady_shares(seconds: &[SecondRow], baseline_tps: f64) -> (f64, f64) {
    let shares = seconds
        .iter()
        .map(|row| share(row.tps as f64, baseline_tps));
    let low = shares.clone().fold(f64::INFINITY, f64::min);
    let high = shares.fold(f64::NEG_INFINITY, f64::max);
    if baseline_tps > 0.0 && low.is_finite() {
        (low, high)
    } else {
        (1.0, 1.0)
    }
}

/// The lowest and highest p99 latency of the `seconds` that completed a
/// transaction, in ms; `(0, 0)` without one.
fn steady_p99_ms(seconds: &[SecondRow]) -> (f64, f64) {
    let p99s = seconds
        .iter()
        .filter(|row| row.tps > 0)
        .map(|row| row.lat_p99_ms);
    let low = p99s.clone().fold(f64::INFINITY, f64::min);
    let high = p99s.fold(f64::NEG_INFINITY, f64::max);
    if low.is_finite() {
        (low, high)
    } else {
        (0.0, 0.0)
    }
}

/// The figures of one strategy that the ranking compares, over its repeats;
/// one row of the ranking table. Each figure is a [`Spread`] of its runs'.
#[derive(Debug, Clone, PartialEq)]
pub struct RankingRow {
    /// Strategy name as the run names it.
    pub strategy: String,
    /// Position of the strategy in the run, 0 for the first one.
    pub run_order: usize,
    /// The figures of each of its runs, in repeat order (at least one).
    pub runs: Vec<RunFigures>,
}

impl RankingRow {
    /// The spread of `figure` over the runs.
    pub fn spread(&self, figure: impl Fn(&RunFigures) -> f64) -> Spread {
        let values: Vec<f64> = self.runs.iter().map(figure).collect();
        Spread::of(&values).unwrap_or(Spread::single(0.0))
    }

    /// How many repeats the row holds.
    pub fn repeats(&self) -> usize {
        self.runs.len()
    }

    /// The first run's DDL window: `None` when its figures cover the whole run.
    pub fn window(&self) -> Option<&DdlWindow> {
        self.runs.first().and_then(|run| run.window.as_ref())
    }

    /// The anomalies the invariants counted after each run.
    pub fn anomalies(&self) -> Spread {
        self.spread(|run| run.anomalies as f64)
    }

    /// Whether any of its runs checked invariants.
    pub fn checked_invariants(&self) -> bool {
        self.runs.iter().any(|run| !run.invariants.is_empty())
    }

    /// Completed transactions per second over each whole run.
    pub fn mean_tps(&self) -> Spread {
        self.spread(|run| run.mean_tps)
    }

    /// Whether any of its runs lost data (an invariant did not hold).
    pub fn lost_data(&self) -> bool {
        self.runs.iter().any(|run| run.anomalies > 0)
    }

    /// The longest stall of the whole run, in seconds.
    pub fn longest_stall_s(&self) -> Spread {
        self.spread(|run| f64::from(run.longest_stall_s))
    }

    /// Seconds of the whole run with no completed transaction.
    pub fn zero_tps_seconds(&self) -> Spread {
        self.spread(|run| f64::from(run.zero_tps_seconds))
    }

    /// The worst second's TPS (raw, as the files keep it).
    pub fn worst_second_tps(&self) -> Spread {
        self.spread(|run| run.worst_second_tps as f64)
    }

    /// The worst second as a share of each run's own baseline: the figure the ranking decides on.
    pub fn worst_second_share(&self) -> Spread {
        self.spread(RunFigures::worst_second_share)
    }

    /// Where the worst second's share may lie given the run's noise: with
    /// repeats their band (range, or the 95% interval from 5 repeats); with one
    /// run, its share widened by how far its steady seconds stray from their
    /// median, by [`MIN_SHARE_NOISE`] at least (a run whose steady seconds
    /// lie within 93% and 105% of their median has a worst second of 52% in
    /// `[45%, 57%]`), never below 0.
    pub fn share_band(&self) -> (f64, f64) {
        match self.runs.as_slice() {
            [run] => {
                let worst = run.worst_second_share();
                let (low, high) = run.steady_shares;
                let below = (1.0 - low).max(MIN_SHARE_NOISE);
                let above = (high - 1.0).max(MIN_SHARE_NOISE);
                ((worst - below).max(0.0), worst + above)
            }
            _ => self.worst_second_share().band(),
        }
    }

    /// The highest per-second p99 latency of the window, in ms.
    pub fn worst_second_p99_ms(&self) -> Spread {
        self.spread(|run| run.worst_second_p99_ms)
    }

    /// Where the worst second's p99 may lie given the run's noise: with
    /// repeats their band; with one run, its p99 widened either way by the
    /// range of its steady seconds' p99s (steady seconds between 8 and 28 ms
    /// put a worst second of 190 ms in `[170, 210]`), never below 0.
    pub fn p99_band(&self) -> (f64, f64) {
        match self.runs.as_slice() {
            [run] => {
                let (low, high) = run.steady_p99_ms;
                let noise_ms = high - low;
                let worst_ms = run.worst_second_p99_ms;
                ((worst_ms - noise_ms).max(0.0), worst_ms + noise_ms)
            }
            _ => self.worst_second_p99_ms().band(),
        }
    }

    /// The highest latency of the window, in ms.
    pub fn window_max_latency_ms(&self) -> Spread {
        self.spread(|run| run.window_max_latency_ms)
    }

    /// Transactions that failed during the whole run.
    pub fn failed_transactions(&self) -> Spread {
        self.spread(|run| run.failed_transactions as f64)
    }

    /// Failed transactions as a fraction of those attempted.
    pub fn failed_share(&self) -> Spread {
        self.spread(RunFigures::failed_share)
    }

    /// How many DDL attempts the runs made.
    pub fn ddl_tries(&self) -> Spread {
        self.spread(|run| f64::from(run.ddl_tries))
    }

    /// When the migration was done, over the runs whose migration finished;
    /// `None` when none did.
    pub fn migration_done_at_s(&self) -> Option<Spread> {
        let done: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|run| run.migration_done_at_s)
            .collect();
        Spread::of(&done)
    }

    /// How many runs completed their migration (or had none to run).
    pub fn completed_runs(&self) -> usize {
        self.runs.iter().filter(|run| run.completed()).count()
    }

    /// Whether the median run failed at least [`MASS_FAILURE_SHARE`] of the
    /// transactions it attempted.
    pub fn failed_massively(&self) -> bool {
        self.failed_share().median >= MASS_FAILURE_SHARE
    }

    /// The main kind of failure of the first run that had one.
    pub fn main_failure(&self) -> Option<&str> {
        self.runs.iter().find_map(|run| run.main_failure.as_deref())
    }

    /// How the blocker ended in each run: one outcome, or the different ones joined by ` / `.
    pub fn blocker_outcome(&self) -> String {
        let mut outcomes: Vec<&str> = Vec::new();
        for run in &self.runs {
            if !outcomes.contains(&run.blocker_outcome.as_str()) {
                outcomes.push(&run.blocker_outcome);
            }
        }
        outcomes.join(" / ")
    }

    /// Whether the runs tried the DDL and none finished it.
    pub fn did_not_finish(&self) -> bool {
        self.ddl_tries().median > 0.0 && self.migration_done_at_s().is_none()
    }
}

/// The least a single run's worst-second share is widened by, either way: its
/// steady seconds may agree closely (an open loop's arrivals are steady) while
/// the seconds after a lock wait do not (the queued requests complete in a
/// burst). Three identical copies of retry in one open-loop run had worst
/// seconds of 104.5%, 105.5% and 108.1% of their baselines with steady seconds
/// within 1-3 points (`cargo test --test suite repeats::`).
pub const MIN_SHARE_NOISE: f64 = 0.05;

/// The ranking row of a strategy from its runs (in repeat order); `run_order`
/// is its position in the run.
pub fn ranking_row(run_order: usize, runs: &[&StrategyReport]) -> RankingRow {
    RankingRow {
        strategy: runs
            .first()
            .map_or_else(String::new, |run| run.strategy.clone()),
        run_order,
        runs: runs.iter().map(|run| run_figures(run)).collect(),
    }
}

#[cfg(test)]
#[path = "figures_tests.rs"]
mod tests;
