//! The strategy panels of `timeline.png` and `latency-timeline.png` share the run clock
//! across: both shade the blocker's window, mark every DDL try the same way, draw a
//! per-second value as steps (second k covers [k, k+1)) and put small strips of
//! per-second counts under their charts, so these live here once.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::layout::{
    ATTEMPT_FAILED, ATTEMPT_OK, BLOCKER_SHADE, GRID, KeySwatch, WAITING_ALPHA, text_style,
};
use crate::metrics::{AttemptOutcome, RunReport, SecondRow, StrategyReport};

/// A chart of one panel: seconds of the run clock across, any f64 axis up.
pub(super) type PanelChart<'a, 'b, Y> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<SecondsAxis, Y>>;

/// The x axis of every panel: seconds of the run clock from 0, labelled at
/// whole seconds only, every 1, 2, 5, 10, 20, 50, ... s (the smallest step
/// that gives at most the labels asked for), so that a 2 s run reads
/// `0 s, 1 s, 2 s`, not `0 s, 0 s, 1 s, 2 s, 2 s`. On a long run these are
/// the labels plotters' own axis picks; the mapping to pixels is its own.
#[derive(Clone)]
pub(super) struct SecondsAxis {
    coord: RangedCoordf64,
}

impl SecondsAxis {
    pub(super) fn new(duration_s: f64) -> SecondsAxis {
        SecondsAxis {
            coord: (0.0..duration_s).into(),
        }
    }

    /// The labelled seconds, at most `max_ticks` of them (at least one).
    fn ticks(&self, max_ticks: usize) -> Vec<f64> {
        let end_s = self.coord.range().end;
        // A label at 0 and one per step up to the end.
        let labels = |step_s: f64| (end_s / step_s).floor() as usize + 1;
        let fits = |step_s: f64| labels(step_s) <= max_ticks.max(1);
        let step_s = (0..)
            .flat_map(|power| [1.0, 2.0, 5.0].map(|digit| digit * 10_f64.powi(power)))
            .find(|&step_s| fits(step_s))
            .expect("a step of 10^k s fits once it exceeds the run");
        (0..)
            .map(|index| f64::from(index) * step_s)
            .take_while(|&second| second <= end_s)
            .collect()
    }
}

impl Ranged for SecondsAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, second: &f64, limit: (i32, i32)) -> i32 {
        self.coord.map(second, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks(hint.max_num_points())
        }
    }

    fn range(&self) -> Range<f64> {
        self.coord.range()
    }
}

impl ValueFormatter<f64> for SecondsAxis {
    fn format(second: &f64) -> String {
        format!("{second:.0} s")
    }
}

/// Which of the marks shared by the panels a run has, so that a chart's key
/// names only those: a load-only run has no blocker and no DDL entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RunMarks {
    /// Some strategy had a blocker window (shaded).
    pub blocker: bool,
    /// Some DDL try failed (a red bar).
    pub ddl_failed: bool,
    /// Some DDL try succeeded (a green bar).
    pub ddl_succeeded: bool,
    /// Some DDL try has its lock phases (a bar light while waiting, solid once holding).
    pub lock_phases: bool,
}

impl RunMarks {
    /// Every mark: the key at its longest.
    #[cfg(test)]
    pub(super) const ALL: RunMarks = RunMarks {
        blocker: true,
        ddl_failed: true,
        ddl_succeeded: true,
        lock_phases: true,
    };

    /// The marks the panels of `report` draw.
    pub(super) fn of(report: &RunReport) -> RunMarks {
        let strategies = &report.strategies;
        let attempts = || strategies.iter().flat_map(|strategy| &strategy.attempts);
        RunMarks {
            blocker: strategies
                .iter()
                .any(|strategy| !blocker_windows_s(strategy).is_empty()),
            ddl_failed: attempts().any(|attempt| attempt.outcome != AttemptOutcome::Ok),
            ddl_succeeded: attempts().any(|attempt| attempt.outcome == AttemptOutcome::Ok),
            lock_phases: attempts().any(|attempt| attempt.lock.is_some()),
        }
    }

    /// The key entries of these marks, in the order every chart lists them.
    pub(super) fn key(self) -> Vec<(&'static str, KeySwatch)> {
        let entries = [
            (
                self.blocker,
                ("blocker's transaction open", KeySwatch::Box(BLOCKER_SHADE)),
            ),
            (
                self.ddl_failed,
                ("DDL try failed", KeySwatch::Box(ATTEMPT_FAILED)),
            ),
            (
                self.ddl_succeeded,
                ("DDL try succeeded", KeySwatch::Box(ATTEMPT_OK)),
            ),
            (
                self.lock_phases,
                (
                    "waiting / holding lock",
                    KeySwatch::WaitThenHold(ATTEMPT_OK),
                ),
            ),
        ];
        entries
            .into_iter()
            .filter_map(|(drawn, entry)| drawn.then_some(entry))
            .collect()
    }
}

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
/// a bar over `bar` (near the top), red when it failed, green when it succeeded; the
/// bar is light while the try waits for its lock and solid once it holds it (solid
/// throughout when no observer saw the grant). Very short tries and holds get a
/// minimum width so that they stay visible.
/// When a try's bar turns solid: its lock's grant, within `start` and
/// `latest_s` (`end` less the narrowest bar, which rounding can put a hair
/// before `start`: 1.504963533 + 0.12 - 0.12 = 1.5049635329999997).
fn held_from_s(granted_s: f64, start: f64, latest_s: f64) -> f64 {
    granted_s.clamp(start, latest_s.max(start))
}

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
            AttemptOutcome::LockTimeout
            | AttemptOutcome::Error
            | AttemptOutcome::GaveUp
            | AttemptOutcome::CutOff => ATTEMPT_FAILED,
        };
        let start = attempt.started_s;
        let end = attempt.ended_s.max(start + min_width_s);
        let held_from = match attempt.lock {
            None => Some(start),
            Some(lock) => lock
                .granted_s
                .map(|granted_s| held_from_s(granted_s, start, end - min_width_s)),
        };
        chart.draw_series([
            Rectangle::new(
                [(start, band.start), (end, band.end)],
                colour.mix(0.10).filled(),
            ),
            Rectangle::new(
                [(start, bar.start), (end, bar.end)],
                colour.mix(WAITING_ALPHA).filled(),
            ),
        ])?;
        if let Some(held_from) = held_from {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(held_from, bar.start), (end, bar.end)],
                colour.filled(),
            )))?;
        }
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

/// The frame of a strip under a panel's chart (the lock waiters, the failed
/// transactions): the x grid of the chart above, `axis` up, the axis name turned on the
/// left in two lines (on one line it would be taller than the strip), the blocker window
/// shaded and a baseline at 0. The strip has no x labels of its own: those of the chart
/// just above serve.
pub(super) fn draw_strip_frame<'a, 'b>(
    strategy: &StrategyReport,
    strip: &'a DrawingArea<BitMapBackend<'b>, Shift>,
    duration_s: f64,
    axis: CountAxis,
    axis_name: [&str; 2],
) -> anyhow::Result<PanelChart<'a, 'b, CountAxis>> {
    let y_top = axis.top;
    // The same horizontal margins and y label area as the chart above, so that the
    // seconds line up. The bottom margin leaves room under the "0" label.
    let mut chart = ChartBuilder::on(strip)
        .margin_top(4)
        .margin_bottom(10)
        .margin_left(12)
        .margin_right(28)
        .x_label_area_size(0)
        .y_label_area_size(72)
        .build_cartesian_2d(SecondsAxis::new(duration_s), axis)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(GRID)
        .x_labels(16)
        .label_style(text_style(12))
        .draw()?;

    let (_, plot_rows) = chart.plotting_area().get_pixel_range();
    let centre_y = (plot_rows.start + plot_rows.end) / 2 - strip.get_base_pixel().1;
    let name_style = text_style(13)
        .transform(FontTransform::Rotate270)
        .pos(Pos::new(HPos::Center, VPos::Top));
    strip.draw_text(axis_name[0], &name_style, (10, centre_y))?;
    strip.draw_text(axis_name[1], &name_style, (25, centre_y))?;

    shade_blocker_windows(&mut chart, strategy, 0.0..y_top)?;
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, 0.0), (duration_s, 0.0)],
        BLACK.stroke_width(1),
    )))?;
    Ok(chart)
}

/// The y axis of a strip of counts: 0 to a little above `max` (so that a line or bar
/// at `max` is not cut by the edge), labelled at 0, at `max`, and half way when that is
/// a whole number.
pub(super) struct CountAxis {
    max: u64,
    top: f64,
}

impl CountAxis {
    pub(super) fn new(max: u64) -> CountAxis {
        CountAxis {
            max,
            top: max.max(1) as f64 * 1.15,
        }
    }

    /// The labelled values, all whole numbers.
    fn ticks(&self) -> Vec<u64> {
        let mut ticks = vec![0];
        if self.max >= 2 && self.max.is_multiple_of(2) {
            ticks.push(self.max / 2);
        }
        if self.max > 0 {
            ticks.push(self.max);
        }
        ticks
    }
}

impl Ranged for CountAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, count: &f64, limit: (i32, i32)) -> i32 {
        let fraction = count / self.top;
        limit.0 + (f64::from(limit.1 - limit.0) * fraction).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks().into_iter().map(|tick| tick as f64).collect()
        }
    }

    fn range(&self) -> Range<f64> {
        0.0..self.top
    }
}

impl ValueFormatter<f64> for CountAxis {
    fn format(count: &f64) -> String {
        format!("{count:.0}")
    }
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
    use crate::plot::test_support::load_only_report;
    use crate::testing::reference_report;

    #[test]
    fn a_try_as_short_as_the_narrowest_bar_is_drawn_from_its_start() {
        let (start, width) = (1.504963533, 18.0 / 150.0);
        let end = start + width;
        assert!(end - width < start, "the rounding this guards against");
        assert_eq!(super::held_from_s(start, start, end - width), start);
        assert_eq!(super::held_from_s(1.7, start, end - width), start);
        assert_eq!(super::held_from_s(1.55, 1.5, 1.6), 1.55);
    }

    #[test]
    fn blocker_falls_back_to_the_active_seconds() {
        let mut strategy = reference_report().strategies.remove(0);
        assert_eq!(blocker_windows_s(&strategy), vec![4.0..16.0]);
        strategy.blocker = None;
        assert_eq!(blocker_windows_s(&strategy), vec![4.0..16.0]);
    }

    /// The x labels of a panel of a `duration_s` run, as the charts ask for them.
    fn second_labels(duration_s: f64) -> Vec<String> {
        SecondsAxis::new(duration_s)
            .ticks(16)
            .iter()
            .map(SecondsAxis::format)
            .collect()
    }

    #[test]
    fn a_short_run_is_labelled_at_whole_seconds_without_repeats() {
        // plotters' own axis labelled a 2 s run "0 s, 0 s, 1 s, 2 s, 2 s, ...".
        assert_eq!(second_labels(2.0), ["0 s", "1 s", "2 s"]);
        assert_eq!(
            second_labels(7.0),
            ["0 s", "1 s", "2 s", "3 s", "4 s", "5 s", "6 s", "7 s"]
        );
        assert_eq!(second_labels(1.0), ["0 s", "1 s"]);
        for duration_s in 1..=200 {
            let labels = second_labels(f64::from(duration_s));
            let mut unique = labels.clone();
            unique.dedup();
            assert_eq!(unique, labels, "{duration_s} s");
            assert!(labels.len() <= 16, "{duration_s} s: {labels:?}");
        }
    }

    #[test]
    fn a_long_run_keeps_the_labels_plotters_picks() {
        // So the charts of the example folders (24 s runs) stay byte for byte.
        for duration_s in [16.0, 24.0, 40.0, 100.0, 600.0, 3600.0] {
            let plotters: RangedCoordf64 = (0.0..duration_s).into();
            assert_eq!(
                SecondsAxis::new(duration_s).ticks(16),
                plotters.key_points(16),
                "{duration_s} s"
            );
        }
        assert_eq!(
            second_labels(24.0),
            [
                "0 s", "2 s", "4 s", "6 s", "8 s", "10 s", "12 s", "14 s", "16 s", "18 s", "20 s",
                "22 s", "24 s"
            ]
        );
    }

    #[test]
    fn the_key_names_only_the_marks_a_run_has() {
        let labels = |marks: RunMarks| -> Vec<&str> {
            marks.key().into_iter().map(|(label, _)| label).collect()
        };
        let load_only = RunMarks::of(&load_only_report());
        assert_eq!(labels(load_only), Vec::<&str>::new());
        // The sample run: a report, tries that timed out and one that
        // succeeded, each with the lock phases the observer saw.
        let sample = reference_report();
        assert_eq!(RunMarks::of(&sample), RunMarks::ALL);
        // Without an observer, no wait/hold entry; without a failed try, no red one.
        let mut unobserved = sample;
        for strategy in &mut unobserved.strategies {
            for attempt in &mut strategy.attempts {
                attempt.lock = None;
                attempt.outcome = AttemptOutcome::Ok;
            }
        }
        assert_eq!(
            labels(RunMarks::of(&unobserved)),
            ["blocker's transaction open", "DDL try succeeded"]
        );
    }

    #[test]
    fn a_strip_is_labelled_with_whole_numbers() {
        assert_eq!(CountAxis::new(1).ticks(), vec![0, 1]);
        assert_eq!(CountAxis::new(5).ticks(), vec![0, 5]);
        assert_eq!(CountAxis::new(100).ticks(), vec![0, 50, 100]);
        assert_eq!(CountAxis::format(&50.0), "50");
        assert!(CountAxis::new(5).range().end > 5.0);
    }
}
