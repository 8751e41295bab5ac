//! The failed transactions strip of `timeline.png` and `latency-timeline.png`. A second
//! in which every transaction failed (in an open-loop run, every request hit
//! `--client-timeout`) has no TPS and no latency to draw: without this strip, an outage
//! under a timeout would read as a gap in the charts instead of "N requests failed each
//! second". Runs without failures get no strip, so their charts do not change.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::layout::text_style;
use super::panel::{CountAxis, draw_strip_frame};
use crate::metrics::{RunReport, SecondRow, StrategyReport};

/// The part of a second's failures that hit `--client-timeout`.
const TIMED_OUT_BAR: RGBColor = RGBColor(140, 81, 10);
/// The part of a second's failures that ended in any other error.
const OTHER_FAILURE_BAR: RGBColor = RGBColor(223, 194, 125);

/// The most transactions that failed in one second, over every strategy: the top of
/// the strips' shared y axis. `None` when no transaction failed: then the charts get no
/// strip and stay as they were.
pub(super) fn max_failed_per_second(report: &RunReport) -> Option<u64> {
    report
        .strategies
        .iter()
        .flat_map(|strategy| strategy.seconds.iter().map(|row| row.failed))
        .max()
        .filter(|&failed| failed > 0)
}

/// The strip under a strategy's chart: a bar per second of the transactions that failed
/// in it, the timed-out part at the bottom and the other errors stacked on it, on the
/// x axis of the chart above and a y axis from 0 to `max_failed` (shared by every
/// strategy), with the blocker window shaded and the strip's own label in its top left
/// corner (see [`failures_label`]).
pub(super) fn draw_failures_strip(
    strategy: &StrategyReport,
    strip: &DrawingArea<BitMapBackend, Shift>,
    duration_s: f64,
    max_failed: u64,
) -> anyhow::Result<()> {
    let axis = CountAxis::new(max_failed);
    let mut chart = draw_strip_frame(strategy, strip, duration_s, axis, ["failed", "per s"])?;
    chart.draw_series(strategy.seconds.iter().flat_map(failure_bars))?;

    let (plot_columns, plot_rows) = chart.plotting_area().get_pixel_range();
    let (base_x, base_y) = strip.get_base_pixel();
    draw_label(
        strategy,
        strip,
        (
            plot_columns.start - base_x + 6,
            plot_rows.start - base_y + 2,
        ),
    )
}

/// The failures of a second that timed out: at `--client-timeout`, or (with
/// the application pool) waiting for a connection at `--pool-timeout`.
fn timed_out(row: &SecondRow) -> u64 {
    row.timeouts + row.pool.as_ref().map_or(0, |pool| pool.timeouts)
}

/// The bars of one second: the timed-out failures from 0, the other failures on top.
/// Empty parts are left out (a bar of height 0 would still draw a line).
fn failure_bars(row: &SecondRow) -> Vec<Rectangle<(f64, f64)>> {
    let start = f64::from(row.second);
    let timed_out = timed_out(row).min(row.failed) as f64;
    let failed = row.failed as f64;
    let mut bars = Vec::new();
    if timed_out > 0.0 {
        bars.push(Rectangle::new(
            [(start, 0.0), (start + 1.0, timed_out)],
            TIMED_OUT_BAR.filled(),
        ));
    }
    if failed > timed_out {
        bars.push(Rectangle::new(
            [(start, timed_out), (start + 1.0, failed)],
            OTHER_FAILURE_BAR.filled(),
        ));
    }
    bars
}

/// The label of a strategy's strip: "failed/s, max 187" with that strategy's worst
/// second, or "failed/s: none".
fn failures_label(strategy: &StrategyReport) -> String {
    let max_failed = strategy
        .seconds
        .iter()
        .map(|row| row.failed)
        .max()
        .unwrap_or(0);
    if max_failed == 0 {
        "failed/s: none".to_string()
    } else {
        format!("failed/s, max {max_failed}")
    }
}

/// The label at `(x, y)` (the top left corner, in pixels of the strip), on a white
/// background so that bars under it do not hide it, followed by a swatch and a name for
/// each kind of failure the strategy has (timed out, other errors).
fn draw_label(
    strategy: &StrategyReport,
    strip: &DrawingArea<BitMapBackend, Shift>,
    (x, y): (i32, i32),
) -> anyhow::Result<()> {
    let style = text_style(12);
    let swatch_px = 10;
    let mut parts = vec![(failures_label(strategy), None)];
    let timed_out: u64 = strategy.seconds.iter().map(timed_out).sum();
    let failed: u64 = strategy.seconds.iter().map(|row| row.failed).sum();
    if timed_out > 0 {
        parts.push(("timed out".to_string(), Some(TIMED_OUT_BAR)));
    }
    if failed > timed_out {
        parts.push(("other errors".to_string(), Some(OTHER_FAILURE_BAR)));
    }

    let gap_px = 12;
    let mut widths = Vec::new();
    for (text, swatch) in &parts {
        let (text_px, _) = strip.estimate_text_size(text, &style)?;
        let swatch_width_px = if swatch.is_some() { swatch_px + 4 } else { 0 };
        widths.push(swatch_width_px + text_px as i32);
    }
    let total_px = widths.iter().sum::<i32>() + gap_px * (parts.len() as i32 - 1);
    let line_px = 15;
    strip.draw(&Rectangle::new(
        [(x - 3, y), (x + total_px + 3, y + line_px)],
        WHITE.mix(0.85).filled(),
    ))?;

    let mut left = x;
    let middle = y + line_px / 2;
    for ((text, swatch), width) in parts.iter().zip(&widths) {
        let mut text_x = left;
        if let Some(colour) = swatch {
            strip.draw(&Rectangle::new(
                [
                    (left, middle - swatch_px / 2),
                    (left + swatch_px, middle + swatch_px / 2),
                ],
                colour.filled(),
            ))?;
            text_x += swatch_px + 4;
        }
        strip.draw_text(
            text,
            &style.pos(Pos::new(HPos::Left, VPos::Center)),
            (text_x, middle),
        )?;
        left += width + gap_px;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::plot::layout::{
        FAILURES_STRIP_HEIGHT_PX, LATENCY_TIMELINE_PANEL_HEIGHT_PX, TIMELINE_PANEL_HEIGHT_PX,
        TimelineLayout, latency_timeline_size_with_failures, timeline_size,
        timeline_size_with_failures,
    };
    use crate::plot::test_support::{decode_rgb, output_dir};
    use crate::plot::{draw_latency_timeline, draw_timeline};
    use crate::testing::{open_loop_report, reference_report};

    /// The open-loop sample with naive's stall made uneven: 200 requests timed out in each
    /// of seconds 6-10, and in 11-14 100 failed, 60 of them timed out.
    fn report_with_timeouts() -> RunReport {
        let mut report = open_loop_report();
        for row in &mut report.strategies[0].seconds {
            match row.second {
                6..=10 => (row.failed, row.timeouts) = (200, 200),
                11..=14 => (row.failed, row.timeouts) = (100, 60),
                _ => {}
            }
        }
        report
    }

    /// Per pixel column of `rows`, how many pixels have `colour`.
    fn column_heights(path: &Path, rows: std::ops::Range<u32>, colour: RGBColor) -> Vec<u32> {
        let (width, _, pixels) = decode_rgb(path);
        let colour = [colour.0, colour.1, colour.2];
        (0..width)
            .map(|x| {
                rows.clone()
                    .filter(|y| pixels[(y * width + x) as usize] == colour)
                    .count() as u32
            })
            .collect()
    }

    #[test]
    fn the_label_names_the_worst_second_of_the_strategy() {
        let report = report_with_timeouts();
        assert_eq!(max_failed_per_second(&report), Some(200));
        assert_eq!(failures_label(&report.strategies[0]), "failed/s, max 200");
        assert_eq!(failures_label(&report.strategies[1]), "failed/s: none");
        assert_eq!(max_failed_per_second(&reference_report()), None);
    }

    #[test]
    fn timeouts_draw_the_failures_strip_under_the_tps_part() {
        let (_keep, dir) = output_dir();
        let path = dir.join("timeline-timeouts.png");
        draw_timeline(&report_with_timeouts(), &path).unwrap();
        let (width, height, _) = decode_rgb(&path);
        assert_eq!((width, height), timeline_size_with_failures(2));
        assert_eq!(
            timeline_size_with_failures(2).1,
            timeline_size(2).1 + 2 * 70
        );

        let layout = TimelineLayout::new(2).with_failures_strip(true);
        let (_, naive_top) = layout.panel_origin_px(0);
        let strip_top = naive_top + TIMELINE_PANEL_HEIGHT_PX;
        let strip = strip_top..strip_top + FAILURES_STRIP_HEIGHT_PX;
        let timed_out = column_heights(&path, strip.clone(), TIMED_OUT_BAR);
        let other = column_heights(&path, strip, OTHER_FAILURE_BAR);
        // The strip's plot is 56 px high (70 less its margins of 4 and 10) and its axis
        // reaches 1.15 times the worst second: 200 failed are 49 px, 60 are 15 px.
        let tallest = *timed_out.iter().max().unwrap();
        assert!((48..=50).contains(&tallest), "{tallest} px");
        assert!(timed_out.iter().any(|&px| (14..=16).contains(&px)));
        // The 40 other errors are stacked on the 60 timed out: 10 px, some of the
        // label's swatch aside.
        assert!(other.iter().filter(|&&px| (9..=11).contains(&px)).count() > 100);
        // Nothing of the strip anywhere else: not in the TPS part, not in retry's panel.
        let elsewhere = column_heights(&path, 0..strip_top, TIMED_OUT_BAR);
        assert_eq!(elsewhere.iter().sum::<u32>(), 0);
        let (_, retry_top) = layout.panel_origin_px(1);
        let retry = column_heights(&path, retry_top..height, TIMED_OUT_BAR);
        assert_eq!(retry.iter().sum::<u32>(), 0);
    }

    #[test]
    fn timeouts_draw_the_failures_strip_under_the_latency_chart() {
        let (_keep, dir) = output_dir();
        let path = dir.join("latency-timeline-timeouts.png");
        draw_latency_timeline(&report_with_timeouts(), &path).unwrap();
        let (width, height, _) = decode_rgb(&path);
        assert_eq!((width, height), latency_timeline_size_with_failures(2));

        let layout = TimelineLayout::latency(2).with_failures_strip(true);
        let (_, naive_top) = layout.panel_origin_px(0);
        let strip_top = naive_top + LATENCY_TIMELINE_PANEL_HEIGHT_PX;
        let strip = strip_top..strip_top + FAILURES_STRIP_HEIGHT_PX;
        let tallest = *column_heights(&path, strip, TIMED_OUT_BAR)
            .iter()
            .max()
            .unwrap();
        assert!((48..=50).contains(&tallest), "{tallest} px");
        let above = column_heights(&path, 0..strip_top, TIMED_OUT_BAR);
        assert_eq!(above.iter().sum::<u32>(), 0);
    }

    #[test]
    fn a_run_without_failures_has_no_strip() {
        let (_keep, dir) = output_dir();
        let path = dir.join("timeline-no-failures.png");
        draw_timeline(&reference_report(), &path).unwrap();
        let (width, height, _) = decode_rgb(&path);
        assert_eq!((width, height), timeline_size(2));
        let bars = column_heights(&path, 0..height, TIMED_OUT_BAR);
        assert_eq!(bars.iter().sum::<u32>(), 0);
    }
}
