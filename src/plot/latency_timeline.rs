//! `latency-timeline.png`: what the stall does to each second's latency (p99, with the
//! p50 and the max), one panel per strategy laid out, shaded and marked like
//! `timeline.png`, on a log axis. Seconds in which no transaction ended have no
//! latency, so they are left out of the lines and marked at the bottom instead.

use std::path::Path;

use anyhow::Context;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::failures::{draw_failures_strip, max_failed_per_second};
use super::layout::{
    KeySwatch, LATENCY_TIMELINE_PANEL_HEIGHT_PX, TimelineLayout, draw_panels_png, line_segments,
    register_embedded_font, text_style,
};
use super::log_axis::LogAxis;
use super::panel::{
    PanelChart, RunMarks, mark_attempts, shade_blocker_windows, steps, timeline_duration_s,
};
use crate::export::format::format_latency;
use crate::metrics::{RunReport, SecondRow, StrategyReport};

/// The p99 line (and, fainter, the max).
const LATENCY_P99_LINE: RGBColor = RGBColor(217, 95, 2);
/// The p99 of the standby's clients (a load on both servers), in the
/// standby's colour of `timeline.png`.
const REPLICA_P99_LINE: RGBColor = RGBColor(23, 190, 207);
/// The p50 line.
const LATENCY_P50_LINE: RGBColor = RGBColor(31, 119, 180);
/// The mark of a second in which no transaction ended.
const NO_TRANSACTIONS_MARK: RGBColor = RGBColor(90, 90, 90);

/// Draws `latency-timeline.png` to `path`: the p99 latency of each second (ms, log
/// scale), with the p50 and the max as thinner lines, one panel per strategy laid out as
/// in `draw_timeline` (see
/// `layout::latency_timeline_size`), on shared axes, with the
/// blocker window and the DDL attempts marked the same way. Seconds in which no
/// transaction ended (latency 0) are left out of the lines and marked at the bottom
/// instead. When some transaction failed, a strip under each panel's chart shows the
/// failures per second, so that a second in which every request timed out reads as such
/// (see `layout::latency_timeline_size_with_failures`).
pub fn draw_latency_timeline(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    register_embedded_font()?;
    draw_latency_timeline_png(report, path).with_context(|| format!("drawing {}", path.display()))
}

/// The key of `latency-timeline.png`, on one line: its lines, the mark of the
/// seconds without a latency when some second has none, then the marks the run has.
fn latency_timeline_key(
    seconds_without_latency: bool,
    marks: RunMarks,
    replica_load: bool,
) -> Vec<(&'static str, KeySwatch)> {
    let mut key = vec![
        ("p99", KeySwatch::Line(LATENCY_P99_LINE)),
        ("p50", KeySwatch::ThinLine(p50_style())),
        ("max", KeySwatch::ThinLine(max_style())),
    ];
    if replica_load {
        key.push(("replica p99", KeySwatch::Line(REPLICA_P99_LINE)));
    }
    if seconds_without_latency {
        key.push(("no transaction ended", KeySwatch::Box(NO_TRANSACTIONS_MARK)));
    }
    key.extend(marks.key());
    key
}

/// Whether the load of `report` ran on both servers (its seconds have the
/// standby's clients' figures).
fn has_replica_load(report: &RunReport) -> bool {
    (report.strategies.iter())
        .flat_map(|strategy| &strategy.seconds)
        .any(|row| row.replica_load.is_some())
}

/// Whether some second of `report` has no latency to draw (no transaction in it).
fn has_seconds_without_latency(report: &RunReport) -> bool {
    report
        .strategies
        .iter()
        .flat_map(|strategy| &strategy.seconds)
        .any(|row| !is_drawable_latency(row.lat_p99_ms))
}

fn draw_latency_timeline_png(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    let key = latency_timeline_key(
        has_seconds_without_latency(report),
        RunMarks::of(report),
        has_replica_load(report),
    );
    let duration_s = timeline_duration_s(report);
    let y_axis = latency_axis(report);
    let max_failed = max_failed_per_second(report);
    draw_panels_png(
        report,
        path,
        &TimelineLayout::latency(report.strategies.len()).with_failures_strip(max_failed.is_some()),
        format!("{}: latency per second", report.workload),
        &key,
        |strategy, panel| match max_failed {
            Some(max_failed) => {
                let (latency_part, failures_strip) =
                    panel.split_vertically(LATENCY_TIMELINE_PANEL_HEIGHT_PX);
                draw_latency_timeline_panel(strategy, &latency_part, duration_s, &y_axis)?;
                draw_failures_strip(strategy, &failures_strip, duration_s, max_failed)
            }
            None => draw_latency_timeline_panel(strategy, panel, duration_s, &y_axis),
        },
    )
}

fn p50_style() -> ShapeStyle {
    LATENCY_P50_LINE.stroke_width(1)
}

fn max_style() -> ShapeStyle {
    LATENCY_P99_LINE.mix(0.5).stroke_width(1)
}

/// Whether a latency can be drawn on a log axis: seconds in which no transaction
/// ended (completed or failed) have 0.
fn is_drawable_latency(ms: f64) -> bool {
    ms > 0.0 && ms.is_finite()
}

/// The y range (ms) shared by the panels of `latency-timeline.png`: around every
/// drawable p50, p99 and max of any strategy; 1 ms to 100 ms when there is nothing to draw.
fn latency_axis(report: &RunReport) -> LogAxis {
    let values = report
        .strategies
        .iter()
        .flat_map(|strategy| &strategy.seconds)
        .flat_map(|row| {
            let replica_p99_ms = row.replica_load.map_or(0.0, |load| load.lat_p99_ms);
            [
                row.lat_p50_ms,
                row.lat_p99_ms,
                row.lat_max_ms,
                replica_p99_ms,
            ]
        });
    LogAxis::around(values, (0.0, 2.0))
}

/// One strategy's panel of `latency-timeline.png`: blocker shading, the p50, p99 and max
/// of each second (left out where no transaction ended, which is marked at the
/// bottom), and the DDL attempts as in `timeline.png`.
fn draw_latency_timeline_panel(
    strategy: &StrategyReport,
    panel: &DrawingArea<BitMapBackend, Shift>,
    duration_s: f64,
    y_axis: &LogAxis,
) -> anyhow::Result<()> {
    let (low, top) = (y_axis.low, y_axis.top);
    let mut chart = y_axis.panel_chart(
        panel,
        duration_s,
        latency_panel_caption(strategy),
        "latency (log scale)",
    )?;
    shade_blocker_windows(&mut chart, strategy, low..top)?;
    mark_seconds_without_latency(&mut chart, strategy, y_axis)?;
    draw_latency_lines(&mut chart, strategy)?;

    if !strategy
        .seconds
        .iter()
        .any(|row| is_drawable_latency(row.lat_p99_ms))
    {
        let (width, height) = panel.dim_in_pixel();
        panel.draw_text(
            "no transaction ended",
            &text_style(18).pos(Pos::new(HPos::Center, VPos::Center)),
            (width as i32 / 2, height as i32 / 2),
        )?;
    }

    mark_attempts(
        &mut chart,
        strategy,
        duration_s,
        low..top,
        y_axis.at(0.88)..y_axis.at(0.96),
    )
}

/// The seconds without a latency, as a low bar along the x axis.
fn mark_seconds_without_latency(
    chart: &mut PanelChart<LogCoord<f64>>,
    strategy: &StrategyReport,
    y_axis: &LogAxis,
) -> anyhow::Result<()> {
    let mark_top = y_axis.at(0.035);
    chart.draw_series(
        strategy
            .seconds
            .iter()
            .filter(|row| !is_drawable_latency(row.lat_p99_ms))
            .map(|row| {
                let start = f64::from(row.second);
                Rectangle::new(
                    [(start, y_axis.low), (start + 1.0, mark_top)],
                    NO_TRANSACTIONS_MARK.filled(),
                )
            }),
    )?;
    Ok(())
}

/// The max and the p50 of each second, then over them the p99, which matters most.
fn draw_latency_lines(
    chart: &mut PanelChart<LogCoord<f64>>,
    strategy: &StrategyReport,
) -> anyhow::Result<()> {
    for run in positive_step_runs(strategy, |row| row.lat_max_ms) {
        chart.draw_series(line_segments(&run, max_style()))?;
    }
    for run in positive_step_runs(strategy, |row| row.lat_p50_ms) {
        chart.draw_series(line_segments(&run, p50_style()))?;
    }
    for run in positive_step_runs(strategy, |row| row.lat_p99_ms) {
        chart.draw_series(line_segments(&run, LATENCY_P99_LINE.stroke_width(2)))?;
    }
    let replica_p99_ms = |row: &SecondRow| row.replica_load.map_or(0.0, |load| load.lat_p99_ms);
    for run in positive_step_runs(strategy, replica_p99_ms) {
        chart.draw_series(line_segments(&run, REPLICA_P99_LINE.stroke_width(2)))?;
    }
    Ok(())
}

/// "naive: worst second 15 s (max 10.0 s, p99 9.10 s); whole run p50 1.10 ms, p99
/// 4.00 ms", or just "naive" when no transaction ended (the panel says so in its
/// middle). The worst second is the one with the slowest transaction: in a closed loop
/// the stalled transactions all complete in one second, which few of that second's
/// transactions are, so its p99 may hide them while its max does not.
fn latency_panel_caption(strategy: &StrategyReport) -> String {
    let worst = strategy
        .seconds
        .iter()
        .filter(|row| is_drawable_latency(row.lat_max_ms))
        .max_by(|a, b| a.lat_max_ms.total_cmp(&b.lat_max_ms));
    match worst {
        Some(row) => format!(
            "{}: worst second {} s (max {}, p99 {}); whole run p50 {}, p99 {}",
            strategy.strategy,
            row.second,
            format_latency(row.lat_max_ms),
            format_latency(row.lat_p99_ms),
            format_latency(strategy.summary.lat_p50_ms),
            format_latency(strategy.summary.lat_p99_ms),
        ),
        None => strategy.strategy.clone(),
    }
}

/// A per-second value that a log axis can show (above 0) as step lines, one per run of
/// consecutive such seconds: the seconds in between are left out, not drawn at 0.
fn positive_step_runs(
    strategy: &StrategyReport,
    value: impl Fn(&SecondRow) -> f64,
) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<&SecondRow>> = Vec::new();
    let mut previous: Option<u32> = None;
    for row in &strategy.seconds {
        if !is_drawable_latency(value(row)) {
            previous = None;
            continue;
        }
        match runs.last_mut() {
            Some(run) if previous.map(|second| second + 1) == Some(row.second) => run.push(row),
            _ => runs.push(vec![row]),
        }
        previous = Some(row.second);
    }
    runs.into_iter().map(|run| steps(run, &value)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::layout::{LATENCY_TIMELINE_PANEL_HEIGHT_PX, latency_timeline_size};
    use crate::plot::test_support::{
        ALL_STRATEGIES, decode_png, decode_rgb, load_only_report, output_dir,
        report_with_strategies,
    };
    use crate::testing::reference_report;

    #[test]
    fn the_key_of_a_load_only_run_names_its_lines_only() {
        let load_only = load_only_report();
        let key = latency_timeline_key(
            has_seconds_without_latency(&load_only),
            RunMarks::of(&load_only),
            false,
        );
        let labels: Vec<&str> = key.into_iter().map(|(label, _)| label).collect();
        assert_eq!(labels, ["p99", "p50", "max"]);
        // The sample run has seconds at 0 tps: their mark is in its key.
        let sample = reference_report();
        let key = latency_timeline_key(
            has_seconds_without_latency(&sample),
            RunMarks::of(&sample),
            false,
        );
        assert_eq!(key.len(), 8);
    }

    #[test]
    fn the_key_fits_on_its_line() {
        register_embedded_font().unwrap();
        let width_px =
            crate::plot::layout::key_width_px(&latency_timeline_key(true, RunMarks::ALL, true));
        assert!(
            width_px <= crate::plot::layout::TIMELINE_WIDTH_PX as i32 - 20,
            "{width_px} px"
        );
    }

    #[test]
    fn a_load_on_both_servers_draws_the_replicas_p99_in_its_panel() {
        let (_keep, dir) = output_dir();
        let mut report = reference_report();
        for row in &mut report.strategies[0].seconds {
            row.replica_load = Some(crate::metrics::ReplicaLoadRow {
                tps: 100,
                lat_p99_ms: 5.0,
                ..Default::default()
            });
        }
        let path = dir.join("latency-timeline-both.png");
        draw_latency_timeline(&report, &path).unwrap();
        let (width, _, pixels) = decode_rgb(&path);
        let cyan = [REPLICA_P99_LINE.0, REPLICA_P99_LINE.1, REPLICA_P99_LINE.2];
        let layout = TimelineLayout::latency(2);
        let cyan_pixels = |index: u32| {
            let (_, top) = layout.panel_origin_px(index);
            (top..top + LATENCY_TIMELINE_PANEL_HEIGHT_PX)
                .flat_map(|y| (0..width).map(move |x| (y * width + x) as usize))
                .filter(|&pixel| pixels[pixel] == cyan)
                .count()
        };
        assert!(cyan_pixels(0) > 300, "naive: {}", cyan_pixels(0));
        assert_eq!(cyan_pixels(1), 0, "retry had no load on the replica");
    }

    #[test]
    fn latency_timeline_png_has_the_expected_size_and_its_p99_lines() {
        let (_keep, dir) = output_dir();
        let path = dir.join("latency-timeline.png");
        draw_latency_timeline(&reference_report(), &path).unwrap();
        let (width, height, pixels) = decode_rgb(&path);
        assert_eq!((width, height), latency_timeline_size(2));
        let line = [LATENCY_P99_LINE.0, LATENCY_P99_LINE.1, LATENCY_P99_LINE.2];
        let layout = TimelineLayout::latency(2);
        for index in 0..2 {
            let (_, top) = layout.panel_origin_px(index);
            let count = (top..top + LATENCY_TIMELINE_PANEL_HEIGHT_PX)
                .flat_map(|y| (0..width).map(move |x| (y * width + x) as usize))
                .filter(|&pixel| pixels[pixel] == line)
                .count();
            assert!(count > 500, "panel {index}: only {count} pixels of p99");
        }
        // Every preset: the grid of timeline.png, and a title that is not cut.
        let all = dir.join("latency-timeline-all.png");
        draw_latency_timeline(&report_with_strategies(ALL_STRATEGIES), &all).unwrap();
        let (width, height, colours) = decode_png(&all);
        assert_eq!((width, height), latency_timeline_size(ALL_STRATEGIES.len()));
        assert!(colours > 2, "only {colours} colours");
    }

    #[test]
    fn latency_timeline_leaves_out_the_seconds_without_transactions() {
        let strategy = &reference_report().strategies[0];
        // naive: seconds 0-5 and 15-24 have a p99, 6-14 none.
        let runs = positive_step_runs(strategy, |row| row.lat_p99_ms);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].first(), Some(&(0.0, 4.0)));
        assert_eq!(runs[0].last(), Some(&(6.0, 4.0)));
        assert_eq!(runs[1].first(), Some(&(15.0, 9_100.0)));
        assert!(runs.iter().flatten().all(|(_, ms)| *ms > 0.0));
        // A missing second splits a run too.
        let mut strategy = strategy.clone();
        strategy.seconds.remove(2);
        assert_eq!(positive_step_runs(&strategy, |row| row.lat_p99_ms).len(), 3);

        let axis = latency_axis(&reference_report());
        assert!(axis.low <= 1.1 && axis.low > 0.0, "{}", axis.low);
        assert!(axis.at(0.8) >= 9_700.0, "{}", axis.at(0.8));
        assert!((axis.at(0.0) - axis.low).abs() < 1e-9);
    }

    #[test]
    fn the_worst_second_is_the_one_with_the_slowest_transaction() {
        // A closed loop: four clients stalled 10 s complete in second 12 among a
        // thousand fast transactions, so that second's p99 is low and its max is 10 s,
        // while second 1 has a busier p99 of 5.5 ms.
        let mut strategy = reference_report().strategies[0].clone();
        for row in &mut strategy.seconds {
            row.lat_p99_ms = 1.0;
            row.lat_max_ms = 2.0;
        }
        strategy.seconds[1].lat_p99_ms = 5.5;
        strategy.seconds[1].lat_max_ms = 6.0;
        strategy.seconds[12].lat_p99_ms = 1.2;
        strategy.seconds[12].lat_max_ms = 10_000.0;
        let caption = latency_panel_caption(&strategy);
        let second = strategy.seconds[12].second;
        assert!(
            caption.starts_with(&format!(
                "naive: worst second {second} s (max {}, p99 {});",
                format_latency(10_000.0),
                format_latency(1.2)
            )),
            "{caption}"
        );
    }

    #[test]
    fn latency_timeline_of_a_strategy_without_transactions_draws() {
        let (_keep, dir) = output_dir();
        // One strategy with only zero seconds next to one with data.
        let mut report = reference_report();
        for row in &mut report.strategies[0].seconds {
            row.tps = 0;
            row.lat_mean_ms = 0.0;
            row.lat_p50_ms = 0.0;
            row.lat_p99_ms = 0.0;
            row.lat_max_ms = 0.0;
        }
        let path = dir.join("latency-timeline-one-empty.png");
        draw_latency_timeline(&report, &path).unwrap();
        let (width, height, colours) = decode_png(&path);
        assert_eq!((width, height), latency_timeline_size(2));
        assert!(colours > 2, "only {colours} colours");
        assert_eq!(latency_panel_caption(&report.strategies[0]), "naive");
        assert!(latency_panel_caption(&report.strategies[1]).starts_with("retry: worst second "));

        // Every strategy without data, and no strategy at all.
        for row in &mut report.strategies[1].seconds {
            row.lat_p50_ms = 0.0;
            row.lat_p99_ms = 0.0;
            row.lat_max_ms = 0.0;
        }
        let path = dir.join("latency-timeline-all-empty.png");
        draw_latency_timeline(&report, &path).unwrap();
        assert_eq!(decode_png(&path).1, latency_timeline_size(2).1);
        let nothing = RunReport {
            workload: "empty".to_string(),
            strategies: Vec::new(),
            interruption: None,
            load_on: crate::choices::LoadOn::Primary,
            load_loop: crate::choices::LoadLoop::Closed,
        };
        let path = dir.join("latency-timeline-nothing.png");
        draw_latency_timeline(&nothing, &path).unwrap();
        assert_eq!(decode_png(&path).1, latency_timeline_size(0).1);
    }
}
