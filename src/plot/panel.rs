//! The strategy panels of `timeline.png` and `latency-timeline.png` share the run clock
//! across: both shade the blocker's window, mark every DDL try the same way and draw a
//! per-second value as steps (second k covers [k, k+1)), so these live here once.

use std::ops::Range;

use plotters::coord::ranged1d::Ranged;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::layout::{ATTEMPT_FAILED, ATTEMPT_OK, BLOCKER_SHADE};
use crate::metrics::{AttemptOutcome, RunReport, SecondRow, StrategyReport};

/// A chart of one panel: seconds of the run clock across, any f64 axis up.
pub(super) type PanelChart<'a, 'b, Y> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, Y>>;

/// Shades the blocker's window(s) of `strategy` from `y.start` to `y.end`.
pub(super) fn shade_blocker_windows<Y: Ranged<ValueType = f64>>(
    chart: &mut PanelChart<Y>,
    strategy: &StrategyReport,
    y: Range<f64>,
) -> anyhow::Result<()> {
    for window in blocker_windows_s(strategy) {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(window.start, y.start), (window.end, y.end)],
            BLOCKER_SHADE.mix(0.6).filled(),
        )))?;
    }
    Ok(())
}

/// Marks each DDL attempt of `strategy`: a faint band over `band` (the whole height) and
/// a solid bar over `bar` (near the top), red when it failed, green when it succeeded.
/// Very short tries get a minimum width so that they stay visible.
pub(super) fn mark_attempts<Y: Ranged<ValueType = f64>>(
    chart: &mut PanelChart<Y>,
    strategy: &StrategyReport,
    duration_s: f64,
    band: Range<f64>,
    bar: Range<f64>,
) -> anyhow::Result<()> {
    let min_width_s = duration_s / 150.0;
    for attempt in &strategy.attempts {
        let colour = match attempt.outcome {
            AttemptOutcome::Ok => ATTEMPT_OK,
            AttemptOutcome::LockTimeout | AttemptOutcome::Error | AttemptOutcome::GaveUp => {
                ATTEMPT_FAILED
            }
        };
        let start = attempt.started_s;
        let end = attempt.ended_s.max(start + min_width_s);
        chart.draw_series([
            Rectangle::new(
                [(start, band.start), (end, band.end)],
                colour.mix(0.10).filled(),
            ),
            Rectangle::new([(start, bar.start), (end, bar.end)], colour.filled()),
        ])?;
    }
    Ok(())
}

/// A per-second value as the corners of a step line: second k covers [k, k+1).
pub(super) fn step_points(
    strategy: &StrategyReport,
    value: impl Fn(&SecondRow) -> f64,
) -> Vec<(f64, f64)> {
    steps(&strategy.seconds, &value)
}

/// The corners of a step line through `rows`: second k covers [k, k+1).
pub(super) fn steps<'a>(
    rows: impl IntoIterator<Item = &'a SecondRow>,
    value: &impl Fn(&SecondRow) -> f64,
) -> Vec<(f64, f64)> {
    let mut steps = Vec::new();
    for row in rows {
        let start = f64::from(row.second);
        steps.push((start, value(row)));
        steps.push((start + 1.0, value(row)));
    }
    steps
}

/// The x range of the timeline: every second of any strategy, every attempt and the blocker.
pub(super) fn timeline_duration_s(report: &RunReport) -> f64 {
    let mut duration_s: f64 = 1.0;
    for strategy in &report.strategies {
        if let Some(last) = strategy.seconds.last() {
            duration_s = duration_s.max(f64::from(last.second) + 1.0);
        }
        duration_s = duration_s.max(strategy.seconds.len() as f64);
        for attempt in &strategy.attempts {
            duration_s = duration_s.max(attempt.ended_s.ceil());
        }
        if let Some(blocker) = &strategy.blocker {
            duration_s = duration_s.max(blocker.ended_s.ceil());
        }
    }
    duration_s
}

/// When the blocker was open, in seconds of the run clock: the measured window, or, when
/// the report has none (read back from files), the runs of seconds with `blocker_active`.
fn blocker_windows_s(strategy: &StrategyReport) -> Vec<Range<f64>> {
    if let Some(blocker) = &strategy.blocker {
        return vec![blocker.started_s..blocker.ended_s];
    }
    let mut windows: Vec<Range<f64>> = Vec::new();
    for row in strategy.seconds.iter().filter(|row| row.blocker_active) {
        let start = f64::from(row.second);
        match windows.last_mut() {
            Some(last) if last.end == start => last.end = start + 1.0,
            _ => windows.push(start..start + 1.0),
        }
    }
    windows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::sample::reference_report;

    #[test]
    fn blocker_falls_back_to_the_active_seconds() {
        let mut strategy = reference_report().strategies.remove(0);
        assert_eq!(blocker_windows_s(&strategy), vec![4.0..16.0]);
        strategy.blocker = None;
        assert_eq!(blocker_windows_s(&strategy), vec![4.0..16.0]);
    }
}
