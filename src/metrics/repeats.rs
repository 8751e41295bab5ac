//! A repeated run (`--repeat N`) as the charts draw it: one strategy report
//! per strategy whose seconds are the median of its repeats, second by
//! second, with a band of their lowest and highest TPS. Its DDL tries, blocker
//! window, lock queue and summary are those of its median repeat (the one
//! whose longest stall, then worst second, is the middle one), and its latency
//! distribution is all repeats' together. A report without repeats is drawn
//! as it is.

use super::spread::median;
use super::{LatencyDistribution, RunReport, SecondRow, StrategyReport};

/// What the charts draw of a report: one entry per strategy, and per
/// strategy the band of its repeats' TPS (empty without repeats).
#[derive(Debug, Clone)]
pub struct ChartReport {
    /// One report per strategy, in run order.
    pub report: RunReport,
    /// Per strategy, per second of its timeline, the lowest and the highest
    /// TPS of its repeats; empty for a strategy that ran once.
    pub tps_bands: Vec<Vec<(f64, f64)>>,
}

/// The chart view of `report`.
pub fn chart_report(report: &RunReport) -> ChartReport {
    if report.repeats() <= 1 {
        return ChartReport {
            report: report.clone(),
            tps_bands: vec![Vec::new(); report.strategies.len()],
        };
    }
    let groups = report.by_strategy();
    ChartReport {
        report: RunReport {
            workload: report.workload.clone(),
            strategies: groups.iter().map(|runs| median_strategy(runs)).collect(),
            interruption: report.interruption.clone(),
            load_on: report.load_on,
            load_loop: report.load_loop,
        },
        tps_bands: groups.iter().map(|runs| tps_band(runs)).collect(),
    }
}

/// The run whose (longest stall, worst-second TPS) is the middle one of `runs`
/// (the lower middle for an even count).
pub fn median_run<'a>(runs: &[&'a StrategyReport]) -> &'a StrategyReport {
    let mut sorted = runs.to_vec();
    sorted.sort_by_key(|run| {
        let worst_tps = run.seconds.iter().map(|row| row.tps).min().unwrap_or(0);
        (run.summary.longest_stall_s, std::cmp::Reverse(worst_tps))
    });
    sorted[(sorted.len() - 1) / 2]
}

/// One strategy's runs as one report: the median repeat with each second's
/// figures replaced by the median of the repeats' (seconds some repeats lack,
/// an interrupted one's, are the median of those that have them), and the
/// latency of all repeats.
fn median_strategy(runs: &[&StrategyReport]) -> StrategyReport {
    let middle = median_run(runs);
    let seconds = middle
        .seconds
        .iter()
        .map(|row| median_second(row, runs))
        .collect();
    StrategyReport {
        seconds,
        latency: merged_latency(runs).unwrap_or_else(|| middle.latency.clone()),
        ..middle.clone()
    }
}

/// `row` of the median run with the median of the repeats' figures of its second.
fn median_second(row: &SecondRow, runs: &[&StrategyReport]) -> SecondRow {
    let same: Vec<&SecondRow> = runs
        .iter()
        .filter_map(|run| run.seconds.iter().find(|other| other.second == row.second))
        .collect();
    let of = |figure: fn(&SecondRow) -> f64| {
        median(&same.iter().map(|row| figure(row)).collect::<Vec<_>>())
    };
    SecondRow {
        tps: of(|row| row.tps as f64).round() as u64,
        failed: of(|row| row.failed as f64).round() as u64,
        lat_mean_ms: of(|row| row.lat_mean_ms),
        lat_p50_ms: of(|row| row.lat_p50_ms),
        lat_p99_ms: of(|row| row.lat_p99_ms),
        lat_max_ms: of(|row| row.lat_max_ms),
        lock_waiters: of(|row| f64::from(row.lock_waiters)).round() as u32,
        ..row.clone()
    }
}

/// The lowest and highest TPS of each second of the longest run.
fn tps_band(runs: &[&StrategyReport]) -> Vec<(f64, f64)> {
    let seconds = runs.iter().map(|run| run.seconds.len()).max().unwrap_or(0);
    (0..seconds)
        .map(|index| {
            let tps = runs
                .iter()
                .filter_map(|run| run.seconds.get(index))
                .map(|row| row.tps as f64);
            let low = tps.clone().fold(f64::INFINITY, f64::min);
            let high = tps.fold(0.0, f64::max);
            (low, high)
        })
        .collect()
}

/// All repeats' histograms together; `None` when a run has none (read back from files).
pub fn merged_latency(runs: &[&StrategyReport]) -> Option<LatencyDistribution> {
    let mut merged = super::new_latency_histogram();
    for run in runs {
        merged.add(run.latency.histogram.as_ref()?).ok()?;
    }
    Some(LatencyDistribution::from_histogram(merged))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::reference_report;

    /// The sample's naive run as repeat `repeat`, its TPS scaled by `factor`
    /// and its stall `stall_s` long.
    fn naive(repeat: u32, factor: f64, stall_s: u32) -> StrategyReport {
        let mut run = reference_report().strategies[0].clone();
        for row in &mut run.seconds {
            row.tps = (row.tps as f64 * factor) as u64;
        }
        run.summary.repeat = repeat;
        run.summary.longest_stall_s = stall_s;
        run
    }

    #[test]
    fn one_run_per_strategy_is_drawn_as_it_is() {
        let report = reference_report();
        let chart = chart_report(&report);
        assert_eq!(chart.report.strategies.len(), 2);
        assert_eq!(chart.tps_bands, [Vec::new(), Vec::new()]);
    }

    #[test]
    fn repeats_are_drawn_as_their_median_with_a_band() {
        let report = RunReport {
            workload: "add-column".to_string(),
            strategies: vec![naive(1, 1.0, 9), naive(2, 0.5, 10), naive(3, 1.5, 8)],
            interruption: None,
            load_on: crate::choices::LoadOn::Primary,
            load_loop: crate::choices::LoadLoop::Closed,
        };
        let chart = chart_report(&report);
        assert_eq!(chart.report.strategies.len(), 1);
        let drawn = &chart.report.strategies[0];
        // The median repeat by its stall is repeat 1 (8, 9, 10 s).
        assert_eq!(drawn.repeat(), 1);
        assert_eq!(drawn.seconds[0].tps, 3_000);
        let band = &chart.tps_bands[0];
        assert_eq!(band.len(), drawn.seconds.len());
        assert_eq!(band[0], (1_500.0, 4_500.0));
        // All three histograms together.
        let one = report.strategies[0]
            .latency
            .histogram
            .as_ref()
            .unwrap()
            .len();
        assert_eq!(drawn.latency.histogram.as_ref().unwrap().len(), 3 * one);
    }
}
