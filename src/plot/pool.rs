//! `pool.png`: what the application pool (`--rate` with `--pool-size`) saw, one
//! panel per strategy laid out, shaded and marked like `latency-timeline.png`:
//! the p99 of the wait for a connection and the p99 of the database time per
//! second on a log axis, and under them a strip of the requests that timed out
//! waiting for a connection. The two waits apart tell "the pool ran dry" from
//! "the database was slow". Drawn only for a run that used the pool.

use std::path::Path;

use anyhow::Context;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::layout::{
    KeySwatch, LATENCY_TIMELINE_PANEL_HEIGHT_PX, TimelineLayout, draw_panels_png, line_segments,
    register_embedded_font,
};
use super::log_axis::LogAxis;
use super::panel::{
    CountAxis, PanelChart, RunMarks, draw_strip_frame, mark_attempts, shade_blocker_windows, steps,
    timeline_duration_s,
};
use crate::export::format::format_latency;
use crate::metrics::{PoolRow, RunReport, SecondRow, StrategyReport};

/// The pool wait p99 line and the pool timeout bars.
const POOL_WAIT_LINE: RGBColor = RGBColor(214, 39, 40);
/// The database p99 line.
const DB_LINE: RGBColor = RGBColor(31, 119, 180);

/// Whether `report` comes from a run with the application pool: then it gets a `pool.png`.
pub fn used_pool(report: &RunReport) -> bool {
    report
        .strategies
        .iter()
        .flat_map(|strategy| &strategy.seconds)
        .any(|row| row.pool.is_some())
}

/// Draws `pool.png` to `path` (see the module comment).
pub fn draw_pool(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    register_embedded_font()?;
    draw_pool_png(report, path).with_context(|| format!("drawing {}", path.display()))
}

/// The key of `pool.png`, on one line: its lines, then the marks the run has.
fn pool_key(marks: RunMarks) -> Vec<(&'static str, KeySwatch)> {
    let mut key = vec![
        ("p99 wait for a connection", KeySwatch::Line(POOL_WAIT_LINE)),
        ("p99 database time", KeySwatch::Line(DB_LINE)),
    ];
    key.extend(marks.key());
    key
}

fn draw_pool_png(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    let key = pool_key(RunMarks::of(report));
    let duration_s = timeline_duration_s(report);
    let y_axis = pool_axis(report);
    let max_timeouts = report
        .strategies
        .iter()
        .flat_map(|strategy| &strategy.seconds)
        .map(|row| pool_of(row).timeouts)
        .max()
        .unwrap_or(0);
    draw_panels_png(
        report,
        path,
        &TimelineLayout::latency(report.strategies.len()).with_failures_strip(true),
        format!("{}: the application pool per second", report.workload),
        &key,
        |strategy, panel| {
            let (waits, strip) = panel.split_vertically(LATENCY_TIMELINE_PANEL_HEIGHT_PX);
            draw_waits(strategy, &waits, duration_s, &y_axis)?;
            draw_timeouts_strip(strategy, &strip, duration_s, max_timeouts)
        },
    )
}

/// The pool's figures of a second (zeros for a second without them).
fn pool_of(row: &SecondRow) -> PoolRow {
    row.pool.unwrap_or_default()
}

/// The log y range (ms) shared by the panels: around every drawn p99; 0.01 ms
/// to 100 ms when there is nothing to draw.
fn pool_axis(report: &RunReport) -> LogAxis {
    let values = report
        .strategies
        .iter()
        .flat_map(|strategy| &strategy.seconds)
        .flat_map(|row| [pool_of(row).wait_p99_ms, pool_of(row).db_p99_ms]);
    LogAxis::around(values, (-2.0, 2.0))
}

/// One strategy's chart: blocker shading, the two p99 lines (seconds without a
/// value left out), the DDL attempts.
fn draw_waits(
    strategy: &StrategyReport,
    panel: &DrawingArea<BitMapBackend, Shift>,
    duration_s: f64,
    y_axis: &LogAxis,
) -> anyhow::Result<()> {
    let mut chart = y_axis.panel_chart(panel, duration_s, caption(strategy), "p99 (log scale)")?;
    shade_blocker_windows(&mut chart, strategy, y_axis.low..y_axis.top)?;
    draw_line(&mut chart, strategy, |row| pool_of(row).db_p99_ms, DB_LINE)?;
    draw_line(
        &mut chart,
        strategy,
        |row| pool_of(row).wait_p99_ms,
        POOL_WAIT_LINE,
    )?;
    mark_attempts(
        &mut chart,
        strategy,
        duration_s,
        y_axis.low..y_axis.top,
        y_axis.at(0.88)..y_axis.at(0.96),
    )
}

/// A per-second p99 as step lines, one per run of consecutive seconds that have one.
fn draw_line(
    chart: &mut PanelChart<LogCoord<f64>>,
    strategy: &StrategyReport,
    value: impl Fn(&SecondRow) -> f64,
    colour: RGBColor,
) -> anyhow::Result<()> {
    let mut runs: Vec<Vec<&SecondRow>> = Vec::new();
    let mut previous: Option<u32> = None;
    for row in strategy.seconds.iter().filter(|row| value(row) > 0.0) {
        match runs.last_mut() {
            Some(run) if previous.map(|second| second + 1) == Some(row.second) => run.push(row),
            _ => runs.push(vec![row]),
        }
        previous = Some(row.second);
    }
    for run in runs {
        chart.draw_series(line_segments(&steps(run, &value), colour.stroke_width(2)))?;
    }
    Ok(())
}

/// "naive: pool wait p99 1.00 s at worst (6 s); 1,843 timed out" or "retry: pool wait p99 ...".
fn caption(strategy: &StrategyReport) -> String {
    let summary = &strategy.summary;
    let worst = strategy
        .seconds
        .iter()
        .max_by(|a, b| pool_of(a).wait_p99_ms.total_cmp(&pool_of(b).wait_p99_ms));
    let mut text = match worst {
        Some(row) => format!(
            "{}: worst second's wait for a connection p99 {} (at {} s)",
            strategy.strategy,
            format_latency(pool_of(row).wait_p99_ms),
            row.second
        ),
        None => strategy.strategy.clone(),
    };
    if let Some(db_p99_ms) = summary.db_p99_ms {
        text.push_str(&format!(
            "; whole run database p99 {}",
            format_latency(db_p99_ms)
        ));
    }
    text
}

/// The strip under the chart: the requests that timed out waiting for a connection, per second.
fn draw_timeouts_strip(
    strategy: &StrategyReport,
    strip: &DrawingArea<BitMapBackend, Shift>,
    duration_s: f64,
    max_timeouts: u64,
) -> anyhow::Result<()> {
    let mut chart = draw_strip_frame(
        strategy,
        strip,
        duration_s,
        CountAxis::new(max_timeouts),
        ["timed out", "per s"],
    )?;
    chart.draw_series(
        strategy
            .seconds
            .iter()
            .filter(|row| pool_of(row).timeouts > 0)
            .map(|row| {
                let start = f64::from(row.second);
                Rectangle::new(
                    [(start, 0.0), (start + 1.0, pool_of(row).timeouts as f64)],
                    POOL_WAIT_LINE.filled(),
                )
            }),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::layout::latency_timeline_size_with_failures;
    use crate::plot::test_support::{decode_rgb, load_only_report, output_dir};
    use crate::testing::reference_report;

    #[test]
    fn the_key_of_a_load_only_run_names_its_lines_only() {
        let labels: Vec<&str> = pool_key(RunMarks::of(&load_only_report()))
            .into_iter()
            .map(|(label, _)| label)
            .collect();
        assert_eq!(labels, ["p99 wait for a connection", "p99 database time"]);
    }

    #[test]
    fn the_key_fits_on_its_line() {
        register_embedded_font().unwrap();
        let width_px = crate::plot::layout::key_width_px(&pool_key(RunMarks::ALL));
        assert!(
            width_px <= crate::plot::layout::TIMELINE_WIDTH_PX as i32 - 20,
            "{width_px} px"
        );
    }

    #[test]
    fn pool_png_draws_both_waits_and_the_timeouts_of_a_pool_run_only() {
        let mut report = reference_report();
        assert!(!used_pool(&report));
        for strategy in &mut report.strategies {
            for row in &mut strategy.seconds {
                let stalled = (6..15).contains(&row.second) && strategy.strategy == "naive";
                row.pool = Some(PoolRow {
                    wait_p99_ms: if stalled { 1_003.0 } else { 0.05 },
                    db_p99_ms: if stalled { 0.0 } else { 1.2 },
                    timeouts: if stalled { 190 } else { 0 },
                    in_use: 4,
                    ..PoolRow::default()
                });
            }
        }
        assert!(used_pool(&report));
        let (_keep, dir) = output_dir();
        let path = dir.join("pool.png");
        draw_pool(&report, &path).unwrap();
        let (width, height, pixels) = decode_rgb(&path);
        assert_eq!((width, height), latency_timeline_size_with_failures(2));
        let count = |colour: RGBColor| {
            let wanted = [colour.0, colour.1, colour.2];
            pixels.iter().filter(|pixel| **pixel == wanted).count()
        };
        assert!(count(POOL_WAIT_LINE) > 2_000, "{}", count(POOL_WAIT_LINE));
        assert!(count(DB_LINE) > 500, "{}", count(DB_LINE));
    }
}
