//! Which strategy hurt traffic least, and what it cost in migration time.
//!
//! Pure functions over [`StrategyReport`]s: [`rank_strategies`] turns a run into
//! [`Place`]s in rank order, one per strategy however often it was repeated.
//! Whether the migration happened comes first, then whether traffic was still
//! served at all (a migration that made every later transaction fail never
//! stalled, yet it is the worst outcome), then what traffic felt, each
//! strategy measured against its own baseline (the machine's mood moves the
//! raw TPS between strategies). Differences within the run's noise (the
//! repeats' band, or with one run the spread of its steady seconds) are
//! ties, not ranks: a ranking that orders three copies of one strategy ranks
//! noise. The figures are computed here; the words (the headline, the notes,
//! what decided each place) are written in `export::sentences`.

use std::cmp::Ordering;

use super::failures::failure_kinds;
use super::spread::{Spread, overlap};
use super::summary::{baseline_seconds, baseline_tps, share_of_baseline};
use super::{DdlAttempt, DdlOutcome, RunReport, SecondRow, StrategyReport};

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
    /// Highest per-second p99 latency in the window, in ms (per-second histograms
    /// are not kept, so this is the worst second's p99, not a p99 of the window).
    pub worst_second_p99_ms: f64,
    /// Highest latency of any transaction that completed in the window, in ms.
    pub window_max_latency_ms: f64,
}

/// The worst seconds of the DDL window of a strategy's `seconds` and `attempts`.
pub fn worst_seconds(seconds: &[SecondRow], attempts: &[DdlAttempt]) -> WorstSeconds {
    let window = ddl_window(seconds, attempts);
    let seconds_in_window: Vec<&SecondRow> = seconds
        .iter()
        .filter(|row| match &window {
            Some(window) => window.overlaps_second(row.second),
            None => true,
        })
        .collect();
    WorstSeconds {
        worst_second_tps: seconds_in_window
            .iter()
            .map(|row| row.tps)
            .min()
            .unwrap_or(0),
        worst_second_p99_ms: seconds_in_window
            .iter()
            .map(|row| row.lat_p99_ms)
            .fold(0.0, f64::max),
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
    /// Highest per-second p99 latency in the window, in ms (per-second histograms
    /// are not kept, so this is the worst second's p99, not a p99 of the window).
    pub worst_second_p99_ms: f64,
    /// Highest latency of any transaction that completed in the window, in ms.
    pub window_max_latency_ms: f64,
    /// The run's baseline: the median TPS of its seconds before the blocker started.
    pub baseline_tps: f64,
    /// The lowest and the highest of those seconds as shares of the baseline
    /// (`(0.93, 1.05)`): how much the steady seconds vary, the run's own noise.
    pub steady_shares: (f64, f64),
    /// Transactions that failed during the whole run.
    pub failed_transactions: u64,
    /// Transactions that completed during the whole run.
    pub transactions: u64,
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

/// The ranking figures of one run.
pub fn run_figures(strategy: &StrategyReport) -> RunFigures {
    let summary = &strategy.summary;
    let WorstSeconds {
        window,
        worst_second_tps,
        worst_second_p99_ms,
        window_max_latency_ms,
    } = worst_seconds(&strategy.seconds, &strategy.attempts);
    let migration_done_at_s = if summary.ddl_outcome == DdlOutcome::Ok {
        strategy.attempts.last().map(|last| last.ended_s)
    } else {
        None
    };
    let blocker = strategy.blocker.as_ref();
    let baseline_tps = baseline_tps(&strategy.seconds, blocker);
    RunFigures {
        window,
        worst_second_tps,
        worst_second_p99_ms,
        window_max_latency_ms,
        baseline_tps,
        steady_shares: steady_shares(baseline_seconds(&strategy.seconds, blocker), baseline_tps),
        failed_transactions: summary.failed,
        transactions: summary.transactions,
        main_failure: failure_kinds(&strategy.failures)
            .first()
            .map(|kind| format!("{} {}", kind.sqlstate, kind.message)),
        longest_stall_s: summary.longest_stall_s,
        zero_tps_seconds: summary.zero_tps_seconds,
        migration_done_at_s,
        ddl_tries: summary.ddl_attempts,
        ddl_outcome: summary.ddl_outcome,
        blocker_outcome: summary.blocker_outcome.clone(),
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
    /// median (a run whose steady seconds lie within 93% and 105% of their
    /// median has a worst second of 52% in `[45%, 57%]`), never below 0.
    pub fn share_band(&self) -> (f64, f64) {
        match self.runs.as_slice() {
            [run] => {
                let worst = run.worst_second_share();
                let (low, high) = run.steady_shares;
                ((worst + low - 1.0).max(0.0), worst + high - 1.0)
            }
            _ => self.worst_second_share().band(),
        }
    }

    /// The highest per-second p99 latency of the window, in ms.
    pub fn worst_second_p99_ms(&self) -> Spread {
        self.spread(|run| run.worst_second_p99_ms)
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

/// One criterion of the ranking; [`Criterion::IN_ORDER`] lists them in the
/// order they apply. Differences within the run's noise (see
/// [`Criterion::ties`]) are ties, so the next criterion decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Criterion {
    /// The migration completed (`DdlOutcome::Ok`), or there was none to run;
    /// with repeats, in more of them.
    Completed,
    /// Failed under [`MASS_FAILURE_SHARE`] of the transactions it attempted;
    /// a strategy at or above it ranks after those under it, whatever its stalls.
    FailureShare,
    /// The shorter longest stall, in whole seconds.
    LongestStall,
    /// The higher worst second as a share of the strategy's own baseline.
    WorstSecondShare,
    /// Fewer failed transactions.
    Failures,
    /// The lower worst-second p99.
    WorstSecondP99,
}

impl Criterion {
    /// Every criterion, in the order the ranking applies them.
    pub const IN_ORDER: [Criterion; 6] = [
        Criterion::Completed,
        Criterion::FailureShare,
        Criterion::LongestStall,
        Criterion::WorstSecondShare,
        Criterion::Failures,
        Criterion::WorstSecondP99,
    ];

    /// `a` against `b` on this criterion alone (medians with repeats), better
    /// first, noise not considered.
    fn compare(self, a: &RankingRow, b: &RankingRow) -> Ordering {
        let by = |figure: fn(&RankingRow) -> Spread| figure(a).median.total_cmp(&figure(b).median);
        match self {
            Criterion::Completed => completed_share(b).total_cmp(&completed_share(a)),
            Criterion::FailureShare => a.failed_massively().cmp(&b.failed_massively()),
            Criterion::LongestStall => by(RankingRow::longest_stall_s),
            Criterion::WorstSecondShare => by(RankingRow::worst_second_share).reverse(),
            Criterion::Failures => by(RankingRow::failed_transactions),
            Criterion::WorstSecondP99 => by(RankingRow::worst_second_p99_ms),
        }
    }

    /// Whether `other` is as good as `best` on this criterion given the noise:
    /// the worst second's shares tie when their bands overlap (see
    /// [`RankingRow::share_band`]); with repeats, stalls, failures and p99
    /// tie when their bands overlap; the p99 also within 10% of the better
    /// one or within 1 ms; the rest when equal.
    pub fn ties(self, best: &RankingRow, other: &RankingRow) -> bool {
        let bands_overlap =
            |figure: fn(&RankingRow) -> Spread| overlap(figure(best).band(), figure(other).band());
        match self {
            Criterion::WorstSecondShare => overlap(best.share_band(), other.share_band()),
            Criterion::LongestStall => bands_overlap(RankingRow::longest_stall_s),
            Criterion::Failures => bands_overlap(RankingRow::failed_transactions),
            Criterion::WorstSecondP99 => {
                let best_ms = best.worst_second_p99_ms().median;
                let excess_ms = other.worst_second_p99_ms().median - best_ms;
                bands_overlap(RankingRow::worst_second_p99_ms)
                    || excess_ms < (best_ms * TIE_FRACTION).max(TIE_LATENCY_MS)
            }
            Criterion::Completed | Criterion::FailureShare => self.compare(best, other).is_eq(),
        }
    }
}

/// The share of a row's runs that completed their migration.
fn completed_share(row: &RankingRow) -> f64 {
    share(row.completed_runs() as f64, row.repeats() as f64)
}

/// Latency differences under this fraction of the better figure are ties.
const TIE_FRACTION: f64 = 0.1;

/// Latency differences under this many milliseconds are ties.
const TIE_LATENCY_MS: f64 = 1.0;

/// A strategy whose failed transactions are at least this fraction of those it
/// attempted (completed plus failed) failed massively.
pub const MASS_FAILURE_SHARE: f64 = 0.01;

/// One place of the ranking: a strategy's figures and the criterion that
/// separated it from the place above (for the first place, from the second).
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    /// The strategy's ranking figures.
    pub row: RankingRow,
    /// The deciding criterion; `None` when every criterion tied (the place
    /// shares its rank with the place above) or the place has no neighbour.
    pub decided_by: Option<Criterion>,
}

/// `rows` in rank order, best first, each with the criterion that decided its place.
///
/// Criterion by criterion, the rows still tied are split into groups: each
/// group is the best remaining row and every row that ties it (see
/// [`Criterion::ties`]); groups are ranked by that best row and each is
/// ranked further by the next criterion. Rows tied on every criterion keep
/// run order and share a rank. Anchoring a group on its best row keeps the
/// order well defined although overlapping is not transitive.
pub fn rank_rows(rows: Vec<RankingRow>) -> Vec<Place> {
    let mut places = rank_group(rows, 0);
    if places.len() > 1 {
        places[0].decided_by = places[1].decided_by;
    }
    places
}

/// Ranks rows tied on the criteria before `IN_ORDER[level]`; the first
/// place's `decided_by` is left `None` for the caller to set.
fn rank_group(mut rows: Vec<RankingRow>, level: usize) -> Vec<Place> {
    let Some(&criterion) = Criterion::IN_ORDER.get(level) else {
        rows.sort_by_key(|row| row.run_order);
        return rows
            .into_iter()
            .map(|row| Place {
                row,
                decided_by: None,
            })
            .collect();
    };
    rows.sort_by(|a, b| criterion.compare(a, b).then(a.run_order.cmp(&b.run_order)));
    let mut places: Vec<Place> = Vec::new();
    while !rows.is_empty() {
        let best = rows[0].clone();
        let (tied, rest): (Vec<RankingRow>, Vec<RankingRow>) =
            rows.into_iter().partition(|row| criterion.ties(&best, row));
        let mut group = rank_group(tied, level + 1);
        if !places.is_empty() {
            group[0].decided_by = Some(criterion);
        }
        places.extend(group);
        rows = rest;
    }
    places
}

/// The rank of each place (1 = best), in order: a place tied with the one
/// above on every criterion shares its rank (`1, 1, 1, 4`).
pub fn ranks(places: &[Place]) -> Vec<usize> {
    let mut ranks: Vec<usize> = Vec::with_capacity(places.len());
    for (index, place) in places.iter().enumerate() {
        let tied_with_above = index > 0 && place.decided_by.is_none();
        ranks.push(match tied_with_above {
            true => ranks[index - 1],
            false => index + 1,
        });
    }
    ranks
}

/// The places that share the first rank: the first place and every place
/// after it tied with it on every criterion (one place when nothing tied).
pub fn tied_first(places: &[Place]) -> &[Place] {
    let tied = ranks(places).iter().take_while(|&&rank| rank == 1).count();
    &places[..tied]
}

/// The ranking row of each strategy of the run, in run order; a strategy's
/// repeats make one row.
pub fn ranking_rows(report: &RunReport) -> Vec<RankingRow> {
    report
        .by_strategy()
        .iter()
        .enumerate()
        .map(|(run_order, runs)| ranking_row(run_order, runs))
        .collect()
}

/// Every strategy of the run as a [`Place`], in rank order: index 0 is rank 1.
pub fn rank_strategies(report: &RunReport) -> Vec<Place> {
    rank_rows(ranking_rows(report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::sentences::{migration_done_cell, window_note};
    use crate::metrics::failures::test_failure as failure;
    use crate::metrics::{
        AttemptOutcome, LatencyDistribution, Summary, new_latency_histogram, summarize,
    };
    use crate::testing::{neutral_row as row, reference_report};

    fn second(second: u32, tps: u64, p99_ms: f64, max_ms: f64) -> SecondRow {
        SecondRow {
            lat_p99_ms: p99_ms,
            lat_max_ms: max_ms,
            ..crate::metrics::test_second(second, tps)
        }
    }

    fn attempt(number: u32, started_s: f64, ended_s: f64, outcome: AttemptOutcome) -> DdlAttempt {
        crate::metrics::test_attempt(number, started_s, ended_s, outcome)
    }

    /// A strategy from per-second TPS (p99 1 ms, max 2 ms each) and attempts.
    fn strategy(name: &str, tps: &[u64], attempts: Vec<DdlAttempt>) -> StrategyReport {
        let seconds: Vec<SecondRow> = tps
            .iter()
            .enumerate()
            .map(|(index, &tps)| second(index as u32, tps, 1.0, 2.0))
            .collect();
        let histogram = new_latency_histogram();
        let summary = summarize(
            name,
            &seconds,
            &attempts,
            None,
            &histogram,
            &crate::metrics::RunFacts::default(),
        );
        StrategyReport {
            strategy: name.to_string(),
            seconds,
            attempts,
            blocker: None,
            latency: LatencyDistribution::from_histogram(histogram),
            summary,
            locks: Default::default(),
            intervals: Default::default(),
            failures: Vec::new(),
        }
    }

    fn names(places: &[Place]) -> Vec<&str> {
        places
            .iter()
            .map(|place| place.row.strategy.as_str())
            .collect()
    }

    fn decisions(places: &[Place]) -> Vec<Option<Criterion>> {
        places.iter().map(|place| place.decided_by).collect()
    }

    #[test]
    fn the_window_runs_from_the_first_start_to_the_last_end_plus_one_second() {
        let seconds: Vec<SecondRow> = (0..10).map(|s| second(s, 100, 1.0, 1.0)).collect();
        let attempts = vec![
            attempt(1, 2.5, 3.0, AttemptOutcome::LockTimeout),
            attempt(2, 4.0, 4.2, AttemptOutcome::Ok),
        ];
        let window = ddl_window(&seconds, &attempts).unwrap();
        assert_eq!(window.start_s, 2.5);
        assert_eq!(window.end_s, 5.2);
        assert!(!window.overlaps_second(1));
        assert!(window.overlaps_second(2));
        assert!(window.overlaps_second(5));
        assert!(!window.overlaps_second(6));
    }

    #[test]
    fn the_window_is_clamped_to_the_timeline() {
        let seconds: Vec<SecondRow> = (0..5).map(|s| second(s, 100, 1.0, 1.0)).collect();
        let window = ddl_window(&seconds, &[attempt(1, 3.0, 9.0, AttemptOutcome::Ok)]).unwrap();
        assert_eq!(window.end_s, 5.0);
        assert_eq!(
            ddl_window(&seconds, &[attempt(1, 7.0, 9.0, AttemptOutcome::Ok)]),
            None
        );
        assert_eq!(ddl_window(&seconds, &[]), None);
    }

    #[test]
    fn a_stall_inside_the_window_gives_worst_tps_zero() {
        let mut report = strategy(
            "naive",
            &[1000, 1000, 0, 0, 800, 1000, 1000],
            vec![attempt(1, 2.0, 3.6, AttemptOutcome::Ok)],
        );
        report.seconds[4].lat_p99_ms = 3000.0;
        report.seconds[4].lat_max_ms = 3600.0;
        // Outside the window (ends at 4.6 s): must not count.
        report.seconds[6].lat_p99_ms = 9999.0;
        let row = run_figures(&report);
        assert_eq!(
            row.window,
            Some(DdlWindow {
                start_s: 2.0,
                end_s: 4.6
            })
        );
        assert_eq!(row.worst_second_tps, 0);
        assert_eq!(row.worst_second_p99_ms, 3000.0);
        assert_eq!(row.window_max_latency_ms, 3600.0);
        assert_eq!(row.migration_done_at_s, Some(3.6));
        assert_eq!(row.ddl_tries, 1);
        assert_eq!(row.zero_tps_seconds, 2);
        assert_eq!(row.longest_stall_s, 2);
    }

    #[test]
    fn a_dip_outside_the_window_does_not_count() {
        let report = strategy(
            "retry",
            &[10, 1000, 1000, 900, 1000],
            vec![attempt(1, 2.0, 2.5, AttemptOutcome::Ok)],
        );
        assert_eq!(run_figures(&report).worst_second_tps, 900);
    }

    #[test]
    fn a_strategy_without_attempts_is_measured_over_the_whole_run() {
        let report = strategy("load", &[1000, 400, 1000], Vec::new());
        let row = ranking_row(0, &[&report]);
        assert_eq!(row.window(), None);
        assert_eq!(row.runs[0].worst_second_tps, 400);
        assert_eq!(row.migration_done_at_s(), None);
        assert_eq!(row.runs[0].ddl_tries, 0);
        assert_eq!(migration_done_cell(&row), "no DDL");
        assert_eq!(
            window_note(&row).unwrap(),
            "load: no DDL attempt, so its worst-second figures cover the whole run."
        );
    }

    #[test]
    fn a_ddl_that_failed_has_no_completion_time() {
        let report = strategy(
            "deadlock",
            &[1000, 1000, 1000],
            vec![attempt(1, 1.0, 1.5, AttemptOutcome::Error)],
        );
        let row = ranking_row(0, &[&report]);
        assert_eq!(row.migration_done_at_s(), None);
        assert_eq!(migration_done_cell(&row), "did not finish");
    }

    #[test]
    fn the_sample_ranks_the_stall_free_strategy_first() {
        let ranked = rank_strategies(&reference_report());
        assert_eq!(names(&ranked), ["retry", "naive"]);
        assert_eq!(decisions(&ranked), [Some(Criterion::LongestStall); 2]);
        let retry = &ranked[0].row.runs[0];
        assert_eq!(retry.longest_stall_s, 0);
        assert_eq!(retry.worst_second_tps, 1_700);
        assert_eq!(retry.worst_second_p99_ms, 420.0);
        assert_eq!(retry.window_max_latency_ms, 500.0);
        assert_eq!(retry.migration_done_at_s, Some(18.01));
        assert_eq!(retry.ddl_tries, 5);
        // Its seconds before the blocker (0-3): 2,980 to 3,025 tps, median 3,002.5.
        assert_eq!(retry.baseline_tps, 3_002.5);
        assert!((retry.worst_second_share() - 1_700.0 / 3_002.5).abs() < 1e-12);
        let naive = &ranked[1].row.runs[0];
        assert_eq!(naive.longest_stall_s, 9);
        assert_eq!(naive.worst_second_tps, 0);
        assert_eq!(naive.worst_second_share(), 0.0);
        assert_eq!(naive.worst_second_p99_ms, 9_100.0);
        assert_eq!(naive.window_max_latency_ms, 9_700.0);
        assert_eq!(naive.migration_done_at_s, Some(15.7));
    }

    #[test]
    fn completion_then_stall_then_worst_tps_then_failures_then_p99_then_run_order() {
        let mut gave_up = row("gave-up", 0);
        gave_up.runs[0].ddl_outcome = DdlOutcome::GaveUp;
        gave_up.runs[0].migration_done_at_s = None;
        let mut stalled = row("stalled", 1);
        stalled.runs[0].longest_stall_s = 3;
        let mut low_tps = row("low-tps", 2);
        low_tps.runs[0].worst_second_tps = 800;
        let mut failing = row("failing", 3);
        failing.runs[0].failed_transactions = 7;
        let mut slow = row("slow-p99", 4);
        slow.runs[0].worst_second_p99_ms = 12.0;
        let first = row("first", 5);
        let twin = row("twin", 6);
        let ranked = rank_rows(vec![gave_up, stalled, low_tps, failing, slow, twin, first]);
        assert_eq!(
            names(&ranked),
            [
                "first", "twin", "slow-p99", "failing", "low-tps", "stalled", "gave-up"
            ]
        );
        assert_eq!(
            decisions(&ranked),
            [
                None,
                None,
                Some(Criterion::WorstSecondP99),
                Some(Criterion::Failures),
                Some(Criterion::WorstSecondShare),
                Some(Criterion::LongestStall),
                Some(Criterion::Completed),
            ]
        );
    }

    #[test]
    fn a_strategy_that_did_not_complete_never_outranks_one_that_did() {
        let mut gave_up = row("strong-migrations", 0);
        gave_up.runs[0].ddl_outcome = DdlOutcome::GaveUp;
        gave_up.runs[0].migration_done_at_s = None;
        gave_up.runs[0].worst_second_p99_ms = 0.83;
        let mut errored = row("error", 1);
        errored.runs[0].ddl_outcome = DdlOutcome::Error;
        errored.runs[0].migration_done_at_s = None;
        errored.runs[0].worst_second_p99_ms = 0.88;
        let mut naive = row("naive", 2);
        naive.runs[0].longest_stall_s = 10;
        naive.runs[0].worst_second_tps = 0;
        naive.runs[0].failed_transactions = 500;
        naive.runs[0].worst_second_p99_ms = 10_000.0;
        let mut load = row("load", 3);
        load.runs[0].ddl_outcome = DdlOutcome::None;
        load.runs[0].ddl_tries = 0;
        load.runs[0].migration_done_at_s = None;
        load.runs[0].window = None;
        load.runs[0].longest_stall_s = 12;
        let ranked = rank_rows(vec![gave_up, errored, naive, load]);
        assert_eq!(
            names(&ranked),
            ["naive", "load", "strong-migrations", "error"]
        );
        assert_eq!(ranked[2].decided_by, Some(Criterion::Completed));
        assert_eq!(ranked[3].decided_by, None, "both did not complete: a tie");
    }

    #[test]
    fn latency_within_10_percent_or_1_ms_ties_and_run_order_decides() {
        let mut naive = row("naive", 0);
        naive.runs[0].worst_second_p99_ms = 1.26;
        let mut retry = row("retry", 1);
        retry.runs[0].worst_second_p99_ms = 1.50;
        let ranked = rank_rows(vec![retry.clone(), naive.clone()]);
        assert_eq!(names(&ranked), ["naive", "retry"]);
        assert_eq!(decisions(&ranked), [None, None]);
        // Above 1 ms, within 10%: a tie; beyond 10%: a rank.
        naive.runs[0].worst_second_p99_ms = 20.0;
        retry.runs[0].worst_second_p99_ms = 18.5;
        assert_eq!(
            names(&rank_rows(vec![naive.clone(), retry.clone()])),
            ["naive", "retry"]
        );
        retry.runs[0].worst_second_p99_ms = 17.5;
        let ranked = rank_rows(vec![naive, retry]);
        assert_eq!(names(&ranked), ["retry", "naive"]);
        assert_eq!(decisions(&ranked), [Some(Criterion::WorstSecondP99); 2]);
    }

    #[test]
    fn worst_shares_tie_when_their_noise_bands_overlap_and_failures_decide() {
        let mut pgroll = row("pgroll", 0);
        pgroll.runs[0].worst_second_tps = 547;
        let mut reshape = row("reshape", 1);
        reshape.runs[0].worst_second_tps = 17;
        reshape.runs[0].worst_second_p99_ms = 1.0;
        let ranked = rank_rows(vec![reshape.clone(), pgroll.clone()]);
        assert_eq!(names(&ranked), ["pgroll", "reshape"]);
        assert_eq!(ranked[1].decided_by, Some(Criterion::WorstSecondShare));
        // 50% against 54.7% with steady seconds that never strayed: a rank.
        reshape.runs[0].worst_second_tps = 500;
        pgroll.runs[0].failed_transactions = 1;
        let ranked = rank_rows(vec![pgroll.clone(), reshape.clone()]);
        assert_eq!(names(&ranked), ["pgroll", "reshape"]);
        assert_eq!(ranked[1].decided_by, Some(Criterion::WorstSecondShare));
        // Steady seconds within 97% and 103% of their median: [47%, 53%]
        // against [51.7%, 57.7%] overlap, and the failures decide.
        for row in [&mut pgroll, &mut reshape] {
            row.runs[0].steady_shares = (0.97, 1.03);
        }
        let ranked = rank_rows(vec![pgroll, reshape]);
        assert_eq!(names(&ranked), ["reshape", "pgroll"]);
        assert_eq!(ranked[1].decided_by, Some(Criterion::Failures));
    }

    #[test]
    fn the_worst_second_counts_against_each_strategy_s_own_baseline() {
        // 9,564 tps on a baseline of 19,000 against 3,682 on a baseline of 6,000:
        // the raw figures favour the first, the shares (50% against 61%) the second.
        let mut busy = row("busy-machine", 0);
        busy.runs[0].baseline_tps = 19_000.0;
        busy.runs[0].worst_second_tps = 9_564;
        let mut slow = row("slow-machine", 1);
        slow.runs[0].baseline_tps = 6_000.0;
        slow.runs[0].worst_second_tps = 3_682;
        let ranked = rank_rows(vec![busy, slow]);
        assert_eq!(names(&ranked), ["slow-machine", "busy-machine"]);
        assert_eq!(decisions(&ranked), [Some(Criterion::WorstSecondShare); 2]);
    }

    #[test]
    fn one_run_s_band_is_its_share_widened_by_its_steady_seconds() {
        let mut retry = row("retry", 0);
        retry.runs[0].worst_second_tps = 520;
        retry.runs[0].steady_shares = (0.93, 1.05);
        let (low, high) = retry.share_band();
        assert!(
            (low - 0.45).abs() < 1e-9 && (high - 0.57).abs() < 1e-9,
            "{low} {high}"
        );
        // Never below 0: a stall's band starts at 0.
        let mut naive = row("naive", 1);
        naive.runs[0].worst_second_tps = 0;
        naive.runs[0].steady_shares = (0.75, 1.25);
        assert_eq!(naive.share_band(), (0.0, 0.25));
    }

    /// `name` with one run per worst-second TPS (baseline 1000), each with the
    /// longest stall of `stalls_s` at the same index.
    fn repeated(name: &str, run_order: usize, worst_tps: &[u64], stalls_s: &[u32]) -> RankingRow {
        let runs = worst_tps
            .iter()
            .zip(stalls_s)
            .map(|(&tps, &stall_s)| RunFigures {
                worst_second_tps: tps,
                longest_stall_s: stall_s,
                ..crate::testing::neutral_run()
            })
            .collect();
        RankingRow {
            strategy: name.to_string(),
            run_order,
            runs,
        }
    }

    #[test]
    fn three_copies_of_one_strategy_tie_on_overlapping_repeats_and_share_the_first_rank() {
        let naive = repeated("naive", 0, &[0, 0, 0], &[10, 8, 9]);
        let retry = repeated("retry", 1, &[480, 550, 520], &[0, 0, 0]);
        let retry_b = repeated("retry-b", 2, &[470, 500, 560], &[0, 0, 0]);
        let retry_c = repeated("retry-c", 3, &[490, 530, 550], &[0, 0, 0]);
        let ranked = rank_rows(vec![naive, retry_c, retry_b, retry]);
        assert_eq!(names(&ranked), ["retry", "retry-b", "retry-c", "naive"]);
        assert_eq!(
            decisions(&ranked),
            [None, None, None, Some(Criterion::LongestStall)]
        );
        assert_eq!(ranks(&ranked), [1, 1, 1, 4]);
        assert_eq!(names(tied_first(&ranked)), ["retry", "retry-b", "retry-c"]);
        let share = ranked[0].row.worst_second_share();
        assert_eq!((share.median, share.min, share.max), (0.52, 0.48, 0.55));
        assert_eq!(ranked[3].row.longest_stall_s().median, 9.0);
    }

    #[test]
    fn repeats_that_do_not_overlap_decide() {
        let steady = repeated("steady", 0, &[700, 720, 690], &[0, 0, 0]);
        let dipping = repeated("dipping", 1, &[480, 550, 520], &[0, 0, 0]);
        let ranked = rank_rows(vec![dipping, steady]);
        assert_eq!(names(&ranked), ["steady", "dipping"]);
        assert_eq!(decisions(&ranked), [Some(Criterion::WorstSecondShare); 2]);
        assert_eq!(ranks(&ranked), [1, 2]);
        assert_eq!(names(tied_first(&ranked)), ["steady"]);
        // Stalls of 1-3 s and 2-4 s overlap: a tie on the stall, the share decides.
        let short = repeated("short", 0, &[100, 250, 300], &[1, 3, 2]);
        let long = repeated("long", 1, &[0, 0, 0], &[4, 2, 3]);
        let ranked = rank_rows(vec![long, short]);
        assert_eq!(names(&ranked), ["short", "long"]);
        assert_eq!(decisions(&ranked), [Some(Criterion::WorstSecondShare); 2]);
    }

    #[test]
    fn groups_are_anchored_on_their_best_row() {
        // 95% ties 100% and 89% ties 95%, but 89% does not tie 100% (each
        // band 4 points either side): the group of 100% holds 95%, and 89%
        // ranks below both although it has the fewest failures.
        let mut best = row("best", 0);
        best.runs[0].failed_transactions = 5;
        let mut close = row("close", 1);
        close.runs[0].worst_second_tps = 950;
        close.runs[0].failed_transactions = 1;
        let mut far = row("far", 2);
        far.runs[0].worst_second_tps = 890;
        for row in [&mut best, &mut close, &mut far] {
            row.runs[0].steady_shares = (0.96, 1.04);
        }
        let ranked = rank_rows(vec![far, best, close]);
        assert_eq!(names(&ranked), ["close", "best", "far"]);
        assert_eq!(
            decisions(&ranked),
            [
                Some(Criterion::Failures),
                Some(Criterion::Failures),
                Some(Criterion::WorstSecondShare)
            ]
        );
    }

    #[test]
    fn a_strategy_whose_transactions_failed_massively_ranks_after_one_that_stalled() {
        // The migration made every later read fail: never a stall, yet the worst outcome.
        let mut failing = row("retry", 0);
        failing.runs[0].transactions = 62_000;
        failing.runs[0].failed_transactions = 38_000;
        failing.runs[0].worst_second_p99_ms = 0.5;
        let mut stalled = row("naive", 1);
        stalled.runs[0].longest_stall_s = 9;
        stalled.runs[0].worst_second_tps = 0;
        stalled.runs[0].failed_transactions = 4;
        let ranked = rank_rows(vec![failing.clone(), stalled.clone()]);
        assert_eq!(names(&ranked), ["naive", "retry"]);
        assert_eq!(decisions(&ranked), [Some(Criterion::FailureShare); 2]);
        assert!((ranked[1].row.failed_share().median - 0.38).abs() < 1e-9);
        // Completing the migration still comes first.
        let mut gave_up = stalled.clone();
        gave_up.runs[0].ddl_outcome = DdlOutcome::GaveUp;
        gave_up.runs[0].migration_done_at_s = None;
        assert_eq!(
            names(&rank_rows(vec![failing.clone(), gave_up])),
            ["retry", "naive"]
        );
        // Under 1% of the attempted transactions is no mass failure: the stall decides.
        failing.runs[0].transactions = 99_001;
        failing.runs[0].failed_transactions = 999;
        assert!(!failing.failed_massively());
        let ranked = rank_rows(vec![stalled, failing]);
        assert_eq!(names(&ranked), ["retry", "naive"]);
        assert_eq!(decisions(&ranked), [Some(Criterion::LongestStall); 2]);
    }

    #[test]
    fn two_strategies_that_failed_massively_tie_on_it_and_the_next_criterion_decides() {
        let mut worse = row("worse", 0);
        worse.runs[0].failed_transactions = 90_000;
        worse.runs[0].longest_stall_s = 2;
        let mut better = row("better", 1);
        better.runs[0].failed_transactions = 50_000;
        let ranked = rank_rows(vec![worse, better]);
        assert_eq!(names(&ranked), ["better", "worse"]);
        assert_eq!(decisions(&ranked), [Some(Criterion::LongestStall); 2]);
        let mut none_attempted = row("none", 0);
        none_attempted.runs[0].transactions = 0;
        assert_eq!(none_attempted.failed_share().median, 0.0);
    }

    #[test]
    fn the_row_holds_the_transactions_and_the_main_kind_of_failure() {
        let mut report = strategy(
            "naive",
            &[1000, 1000, 0],
            vec![attempt(1, 1.0, 1.5, AttemptOutcome::Ok)],
        );
        report.failures = vec![
            failure(1, "40P01", "deadlock detected", 2),
            failure(2, "0A000", "cached plan must not change result type", 700),
        ];
        report.summary.failed = 702;
        let row = ranking_row(0, &[&report]);
        assert_eq!(row.runs[0].transactions, 2000);
        assert_eq!(
            row.main_failure(),
            Some("0A000 cached plan must not change result type")
        );
        assert!(row.failed_massively());
        assert_eq!(
            run_figures(&strategy("load", &[5], Vec::new())).main_failure,
            None
        );
    }

    #[test]
    fn a_ddl_that_did_not_finish_ranks_after_one_that_did() {
        let mut unfinished = row("unfinished", 0);
        unfinished.runs[0].migration_done_at_s = None;
        unfinished.runs[0].ddl_outcome = DdlOutcome::GaveUp;
        let mut finished_late = row("finished-late", 1);
        finished_late.runs[0].migration_done_at_s = Some(100.0);
        finished_late.runs[0].longest_stall_s = 30;
        let ranked = rank_rows(vec![unfinished, finished_late]);
        assert_eq!(names(&ranked), ["finished-late", "unfinished"]);
    }

    #[test]
    fn the_blocker_outcome_and_failures_come_from_the_summary() {
        let mut report = strategy(
            "kill-blockers",
            &[1000, 1000],
            vec![attempt(1, 0.5, 0.7, AttemptOutcome::Ok)],
        );
        report.summary = Summary {
            failed: 3,
            blocker_outcome: "failed: terminating connection due to administrator command \
                              (57P01)"
                .to_string(),
            ..report.summary.clone()
        };
        let row = ranking_row(2, &[&report]);
        assert_eq!(row.run_order, 2);
        assert_eq!(row.runs[0].failed_transactions, 3);
        assert!(row.blocker_outcome().ends_with("(57P01)"));
    }
}
