//! `timeline.png`, the chart of the outage: transactions per second, one panel per
//! strategy, with the blocker's window and the DDL tries marked, and under each panel a
//! strip with the sessions waiting on a lock, so a stall and its cause are seen together
//! (and, when some transaction failed, a strip with the failures per second above it).

use std::path::Path;

use anyhow::Context;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::failures::{draw_failures_strip, max_failed_per_second};
use super::layout::{
    FAILURES_STRIP_HEIGHT_PX, GRID, KeySwatch, TIMELINE_PANEL_HEIGHT_PX, TimelineLayout,
    draw_panels_png, headline, line_segments, register_embedded_font, text_style,
};
use super::panel::{
    CountAxis, RunMarks, SecondsAxis, draw_strip_frame, mark_attempts, shade_blocker_windows,
    step_points, timeline_duration_s,
};
use crate::metrics::{DdlOutcome, RunReport, StrategyReport};

/// The TPS line and its shading.
const TPS_LINE: RGBColor = RGBColor(31, 119, 180);
/// The lock waiters line and its shading.
const LOCK_WAITERS_LINE: RGBColor = RGBColor(148, 103, 189);
/// The hot standby's lines: its clients' TPS beside the primary's (a load
/// on both servers), its lock waiters, and the seconds its replay waited.
const REPLICA_WAITERS_LINE: RGBColor = RGBColor(23, 190, 207);
/// The standby's replay lag, thin, scaled so that the run's highest lag
/// reaches 80% of the panel (the captions give the lag in seconds).
const REPLAY_LAG_LINE: RGBColor = RGBColor(255, 127, 14);

/// The replay lag's line style, in the panels and the key.
fn replay_lag_style() -> ShapeStyle {
    REPLAY_LAG_LINE.stroke_width(1)
}

/// Draws `timeline.png` to `path`: one panel per strategy, stacked up to 3 strategies and
/// in a grid of 2 columns beyond (see [`timeline_size`](super::layout::timeline_size)), all
/// sharing the x axis (seconds of the run clock) and the y range (TPS, 0 to the highest
/// second of any strategy). Under each panel's TPS part, a strip on the same x axis shows
/// the sessions waiting on a lock in each second (0 to the highest count of any strategy).
/// When some transaction failed, another strip between the two shows the failures per
/// second (see `layout::timeline_size_with_failures`).
#[cfg(test)]
pub fn draw_timeline(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    draw_timeline_with_bands(report, &[], path)
}

/// `draw_timeline` of a repeated run's chart view (see
/// `metrics::repeats::chart_report`): each strategy's TPS line is the median
/// of its repeats and `tps_bands[i]` (the lowest and highest TPS of strategy
/// `i`'s repeats, second by second) is shaded around it; an empty band (or a
/// missing one) draws no shading.
pub fn draw_timeline_with_bands(
    report: &RunReport,
    tps_bands: &[Vec<(f64, f64)>],
    path: &Path,
) -> anyhow::Result<()> {
    register_embedded_font()?;
    draw_timeline_png(report, tps_bands, path)
        .with_context(|| format!("drawing {}", path.display()))
}

/// The key of `timeline.png`, on one line: its lines (the standby's with
/// one), then the marks the run has.
fn timeline_key(marks: RunMarks, replica: bool) -> Vec<(&'static str, KeySwatch)> {
    let mut key = vec![
        ("TPS", KeySwatch::Line(TPS_LINE)),
        (
            "sessions waiting on a lock",
            KeySwatch::Line(LOCK_WAITERS_LINE),
        ),
    ];
    if replica {
        key.push(("on the replica", KeySwatch::Line(REPLICA_WAITERS_LINE)));
        key.push(("replay lag", KeySwatch::ThinLine(replay_lag_style())));
    }
    key.extend(marks.key());
    key
}

/// Whether any second of the report has the hot standby's figures.
fn has_replica(report: &RunReport) -> bool {
    report
        .strategies
        .iter()
        .any(|strategy| strategy.seconds.iter().any(|row| row.replica.is_some()))
}

fn draw_timeline_png(
    report: &RunReport,
    tps_bands: &[Vec<(f64, f64)>],
    path: &Path,
) -> anyhow::Result<()> {
    let key = timeline_key(RunMarks::of(report), has_replica(report));
    let duration_s = timeline_duration_s(report);
    let band_top = tps_bands
        .iter()
        .flatten()
        .map(|(_, high)| *high)
        .fold(0.0, f64::max);
    let max_tps = (report
        .strategies
        .iter()
        .flat_map(|strategy| strategy.seconds.iter())
        .map(|row| {
            row.replica_load
                .map_or(row.tps, |load| load.tps.max(row.tps))
        })
        .max()
        .unwrap_or(0)
        .max(8) as f64)
        .max(band_top);
    // At least 8, so that a nearly idle run still gets whole-number ticks;
    // headroom above the highest second for the attempt bars.
    let y_top = max_tps * 1.25;
    let lag_top_s = lag_axis_top_s(report);
    let max_waiters = report
        .strategies
        .iter()
        .flat_map(|strategy| strategy.seconds.iter())
        .map(|row| {
            let replica = row.replica.map_or(0, |replica| replica.lock_waiters);
            row.lock_waiters.max(replica)
        })
        .max()
        .unwrap_or(0)
        .max(1);
    let max_failed = max_failed_per_second(report);
    draw_panels_png(
        report,
        path,
        &TimelineLayout::new(report.strategies.len()).with_failures_strip(max_failed.is_some()),
        report.workload.clone(),
        &key,
        |strategy, panel| {
            let (tps_part, strips) = panel.split_vertically(TIMELINE_PANEL_HEIGHT_PX);
            let band = report
                .strategies
                .iter()
                .position(|other| other.strategy == strategy.strategy)
                .and_then(|index| tps_bands.get(index))
                .map_or(&[][..], Vec::as_slice);
            let tops = (y_top, lag_top_s);
            draw_timeline_panel(strategy, band, &tps_part, duration_s, tops)?;
            let lock_strip = match max_failed {
                Some(max_failed) => {
                    let (failures_strip, lock_strip) =
                        strips.split_vertically(FAILURES_STRIP_HEIGHT_PX);
                    draw_failures_strip(strategy, &failures_strip, duration_s, max_failed)?;
                    lock_strip
                }
                None => strips,
            };
            draw_lock_strip(strategy, &lock_strip, duration_s, max_waiters)
        },
    )
}

/// The top of the replay lag's scale, in seconds: a quarter above the
/// highest lag of any strategy, 1 s at least; `None` without a standby.
fn lag_axis_top_s(report: &RunReport) -> Option<f64> {
    has_replica(report).then(|| {
        let max_lag_s = (report.strategies.iter())
            .flat_map(|strategy| strategy.seconds.iter())
            .filter_map(|row| row.replica.map(|replica| replica.lag_s))
            .fold(0.0, f64::max);
        (max_lag_s * 1.25).max(1.0)
    })
}

/// The TPS part of one strategy's panel: blocker shading, the repeats' band (if
/// any), TPS, and a bar per DDL attempt near the top; with a standby, its
/// clients' TPS and its replay lag on a scale of its own up to `tops.1`.
fn draw_timeline_panel(
    strategy: &StrategyReport,
    band: &[(f64, f64)],
    panel: &DrawingArea<BitMapBackend, Shift>,
    duration_s: f64,
    (y_top, lag_top_s): (f64, Option<f64>),
) -> anyhow::Result<()> {
    let mut chart = ChartBuilder::on(panel)
        .margin_top(6)
        .margin_bottom(4)
        .margin_left(12)
        .margin_right(28)
        .caption(panel_caption(strategy, !band.is_empty()), text_style(16))
        .x_label_area_size(28)
        .y_label_area_size(72)
        .build_cartesian_2d(SecondsAxis::new(duration_s), 0.0..y_top)?
        .set_secondary_coord(SecondsAxis::new(duration_s), 0.0..lag_top_s.unwrap_or(1.0));
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(GRID)
        .x_labels(16)
        .y_labels(6)
        .y_label_formatter(&|tps| format!("{tps:.0}"))
        .y_desc("TPS")
        .label_style(text_style(13))
        .axis_desc_style(text_style(14))
        .draw()?;

    shade_blocker_windows(&mut chart, strategy, 0.0..y_top)?;
    draw_band(&mut chart, band)?;

    let steps = step_points(strategy, |row| row.tps as f64);
    chart.draw_series(AreaSeries::new(
        steps.iter().copied(),
        0.0,
        TPS_LINE.mix(0.12).filled(),
    ))?;
    chart.draw_series(line_segments(&steps, TPS_LINE.stroke_width(2)))?;
    if strategy
        .seconds
        .iter()
        .any(|row| row.replica_load.is_some())
    {
        let replica_steps = step_points(strategy, |row| {
            row.replica_load.map_or(0.0, |load| load.tps as f64)
        });
        chart.draw_series(line_segments(
            &replica_steps,
            REPLICA_WAITERS_LINE.stroke_width(2),
        ))?;
    }

    if lag_top_s.is_some() {
        let lag_steps = step_points(strategy, |row| row.replica.map_or(0.0, |r| r.lag_s));
        chart.draw_secondary_series(line_segments(&lag_steps, replay_lag_style()))?;
    }

    mark_attempts(
        &mut chart,
        strategy,
        duration_s,
        0.0..y_top,
        y_top * 0.88..y_top * 0.96,
    )
}

/// The repeats' band: each second's range of TPS as a shaded box over `[second, second + 1)`.
fn draw_band<DB: DrawingBackend>(
    chart: &mut ChartContext<DB, Cartesian2d<SecondsAxis, RangedCoordf64>>,
    band: &[(f64, f64)],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    chart
        .draw_series(band.iter().enumerate().map(|(second, &(low, high))| {
            let start = second as f64;
            Rectangle::new(
                [(start, low), (start + 1.0, high.max(low))],
                TPS_LINE.mix(0.25).filled(),
            )
        }))
        .map_err(|err| anyhow::anyhow!("{err:?}"))?;
    Ok(())
}

/// The strip under a strategy's TPS part: the most sessions waiting on a lock in each
/// second, as a step line on the same x axis, with the blocker window shaded; with a
/// hot standby, its waiters too, and the seconds its replay waited for a lock shaded.
/// The y axis runs from 0 to a little above `max_waiters`, labelled with whole numbers.
fn draw_lock_strip(
    strategy: &StrategyReport,
    strip: &DrawingArea<BitMapBackend, Shift>,
    duration_s: f64,
    max_waiters: u32,
) -> anyhow::Result<()> {
    let axis = CountAxis::new(u64::from(max_waiters));
    let mut chart = draw_strip_frame(strategy, strip, duration_s, axis, ["lock", "waiters"])?;
    let steps = step_points(strategy, |row| f64::from(row.lock_waiters));
    chart.draw_series(AreaSeries::new(
        steps.iter().copied(),
        0.0,
        LOCK_WAITERS_LINE.mix(0.15).filled(),
    ))?;
    chart.draw_series(line_segments(&steps, LOCK_WAITERS_LINE.stroke_width(2)))?;
    if strategy.seconds.iter().any(|row| row.replica.is_some()) {
        let top = chart.y_range().end;
        chart.draw_series(
            (strategy.seconds.iter())
                .filter(|row| row.replica.is_some_and(|replica| replica.replay_waiting))
                .map(|row| {
                    let start = f64::from(row.second);
                    Rectangle::new(
                        [(start, 0.0), (start + 1.0, top)],
                        REPLICA_WAITERS_LINE.mix(0.15).filled(),
                    )
                }),
        )?;
        let replica_steps = step_points(strategy, |row| {
            row.replica
                .map_or(0.0, |replica| f64::from(replica.lock_waiters))
        });
        chart.draw_series(line_segments(
            &replica_steps,
            REPLICA_WAITERS_LINE.stroke_width(2),
        ))?;
    }
    Ok(())
}

/// The panel caption: the strategy and its headline figures (with repeats,
/// those of its median repeat, and a word that the line is the median).
fn panel_caption(strategy: &StrategyReport, repeated: bool) -> String {
    let s = &strategy.summary;
    let mut caption = headline(strategy);
    match s.ddl_outcome {
        _ if s.ddl_attempts == 0 => {}
        // Its stall went on past the chart: say so, and how to see it end.
        DdlOutcome::CutOff => {
            caption.push_str(", DDL cut off by the run's end: lengthen --duration")
        }
        outcome => caption.push_str(&format!(", DDL outcome {outcome}")),
    }
    if repeated {
        caption.push_str("; line: median of the repeats, band: their range");
    }
    caption
}

#[cfg(test)]
mod tests {
    use std::ops::Range;

    use super::*;
    use crate::plot::layout::{
        TIMELINE_HEADER_HEIGHT_PX, TIMELINE_LOCK_STRIP_HEIGHT_PX, timeline_size,
    };
    use crate::plot::test_support::{
        ALL_STRATEGIES, decode_png, decode_rgb, load_only_report, output_dir,
        report_with_strategies,
    };
    use crate::testing::reference_report;

    #[test]
    fn the_key_of_a_load_only_run_names_its_lines_only() {
        let labels: Vec<&str> = timeline_key(RunMarks::of(&load_only_report()), false)
            .into_iter()
            .map(|(label, _)| label)
            .collect();
        assert_eq!(labels, ["TPS", "sessions waiting on a lock"]);
        assert_eq!(
            timeline_key(RunMarks::of(&reference_report()), false).len(),
            6
        );
    }

    #[test]
    fn a_panel_cut_off_by_the_runs_end_says_so_and_how_to_see_the_end() {
        let mut report = reference_report();
        let retry = &mut report.strategies[1];
        assert!(panel_caption(retry, false).ends_with(", DDL outcome ok"));
        retry.summary.ddl_outcome = DdlOutcome::CutOff;
        assert!(
            panel_caption(retry, false)
                .ends_with(", DDL cut off by the run's end: lengthen --duration")
        );
    }

    #[test]
    fn the_key_fits_on_its_line() {
        register_embedded_font().unwrap();
        let width_px = crate::plot::layout::key_width_px(&timeline_key(RunMarks::ALL, true));
        assert!(
            width_px <= crate::plot::layout::TIMELINE_WIDTH_PX as i32 - 20,
            "{width_px} px"
        );
    }

    #[test]
    fn every_panel_of_a_grid_has_its_tps_line() {
        let (_keep, dir) = output_dir();
        // An odd count, so that the grid's last row has an empty cell.
        let mut names = ALL_STRATEGIES.to_vec();
        if names.len().is_multiple_of(2) {
            names.push("retry-b");
        }
        let report = report_with_strategies(&names);
        let count = names.len();
        let path = dir.join("timeline-all.png");
        draw_timeline(&report, &path).unwrap();
        let (width, height, pixels) = decode_rgb(&path);
        assert_eq!((width, height), timeline_size(count));

        let line = [TPS_LINE.0, TPS_LINE.1, TPS_LINE.2];
        let layout = TimelineLayout::new(count);
        let count_line_pixels = |index: u32| {
            let (left, top) = layout.panel_origin_px(index);
            (top..top + TIMELINE_PANEL_HEIGHT_PX)
                .flat_map(|y| {
                    (left..left + layout.column_width_px).map(move |x| (y * width + x) as usize)
                })
                .filter(|&pixel| pixels[pixel] == line)
                .count()
        };
        for index in 0..count as u32 {
            let pixels = count_line_pixels(index);
            assert!(
                pixels > 500,
                "panel {index}: only {pixels} pixels of the TPS line"
            );
        }
        // The cell right of the last panel stays empty.
        assert_eq!(count_line_pixels(count as u32), 0);
    }

    #[test]
    fn a_load_on_both_servers_draws_the_replicas_tps_in_its_panel() {
        let (_keep, dir) = output_dir();
        let mut report = report_with_strategies(&["naive", "retry"]);
        for row in &mut report.strategies[0].seconds {
            row.replica_load = Some(crate::metrics::ReplicaLoadRow {
                tps: row.tps / 2,
                ..Default::default()
            });
        }
        let path = dir.join("timeline-both.png");
        draw_timeline(&report, &path).unwrap();
        let (width, _, pixels) = decode_rgb(&path);
        let cyan = [
            REPLICA_WAITERS_LINE.0,
            REPLICA_WAITERS_LINE.1,
            REPLICA_WAITERS_LINE.2,
        ];
        let layout = TimelineLayout::new(2);
        let cyan_pixels = |index: u32| {
            let (left, top) = layout.panel_origin_px(index);
            (top..top + TIMELINE_PANEL_HEIGHT_PX)
                .flat_map(|y| {
                    (left..left + layout.column_width_px).map(move |x| (y * width + x) as usize)
                })
                .filter(|&pixel| pixels[pixel] == cyan)
                .count()
        };
        assert!(cyan_pixels(0) > 500, "naive: {} pixels", cyan_pixels(0));
        assert_eq!(cyan_pixels(1), 0, "retry had no load on the replica");
    }

    #[test]
    fn a_run_with_a_standby_draws_its_replay_lag_in_the_panel() {
        let (_keep, dir) = output_dir();
        let mut report = report_with_strategies(&["naive", "retry"]);
        for (second, row) in report.strategies[0].seconds.iter_mut().enumerate() {
            row.replica = Some(crate::metrics::replica::ReplicaRow {
                lag_s: second as f64,
                ..Default::default()
            });
        }
        let path = dir.join("timeline-lag.png");
        draw_timeline(&report, &path).unwrap();
        let (width, _, pixels) = decode_rgb(&path);
        let orange = [REPLAY_LAG_LINE.0, REPLAY_LAG_LINE.1, REPLAY_LAG_LINE.2];
        let layout = TimelineLayout::new(2);
        // Orange pixels in the upper half of a panel's TPS part.
        let high_orange_pixels = |index: u32| {
            let (left, top) = layout.panel_origin_px(index);
            (top..top + TIMELINE_PANEL_HEIGHT_PX / 2)
                .flat_map(|y| {
                    (left..left + layout.column_width_px).map(move |x| (y * width + x) as usize)
                })
                .filter(|&pixel| pixels[pixel] == orange)
                .count()
        };
        assert!(
            high_orange_pixels(0) > 50,
            "naive: {}",
            high_orange_pixels(0)
        );
        // retry had no standby figures: its lag line lies at 0.
        assert_eq!(high_orange_pixels(1), 0);
    }

    #[test]
    fn two_to_nine_strategies_draw_at_their_size() {
        let (_keep, dir) = output_dir();
        for count in [2, 3, 4, 9] {
            let report = report_with_strategies(&ALL_STRATEGIES[..count]);
            let path = dir.join(format!("timeline-{count}-strategies.png"));
            draw_timeline(&report, &path).unwrap();
            let (width, height, colours) = decode_png(&path);
            assert_eq!((width, height), timeline_size(count), "{count} strategies");
            assert!(colours > 2, "{count} strategies: only {colours} colours");
        }
    }

    #[test]
    fn the_lock_strip_shows_the_waiters_under_the_tps_part() {
        let (_keep, dir) = output_dir();
        // One strategy, no blocker shading and no attempts: only the waiters differ.
        let mut report = reference_report();
        report.strategies.truncate(1);
        let strategy = &mut report.strategies[0];
        strategy.blocker = None;
        strategy.attempts.clear();
        for row in &mut strategy.seconds {
            row.blocker_active = false;
            row.lock_waiters = 0;
        }
        let quiet = dir.join("timeline-no-waiters.png");
        draw_timeline(&report, &quiet).unwrap();
        for row in &mut report.strategies[0].seconds {
            if (6..15).contains(&row.second) {
                row.lock_waiters = 3;
            }
        }
        let waiting = dir.join("timeline-waiters.png");
        draw_timeline(&report, &waiting).unwrap();

        // Pixels of the waiters line in the upper half of the strip, which a line at 0
        // does not reach; and anywhere above the strip, where it has no business.
        let line = [
            LOCK_WAITERS_LINE.0,
            LOCK_WAITERS_LINE.1,
            LOCK_WAITERS_LINE.2,
        ];
        let strip_top = TIMELINE_HEADER_HEIGHT_PX + TIMELINE_PANEL_HEIGHT_PX;
        let count_line_pixels = |path: &Path, rows: Range<u32>| {
            let (width, height, pixels) = decode_rgb(path);
            assert_eq!((width, height), timeline_size(1));
            rows.flat_map(|y| (0..width).map(move |x| (y * width + x) as usize))
                .filter(|&index| pixels[index] == line)
                .count()
        };
        let upper_half = strip_top..strip_top + TIMELINE_LOCK_STRIP_HEIGHT_PX / 2;
        assert_eq!(count_line_pixels(&quiet, upper_half.clone()), 0);
        let raised = count_line_pixels(&waiting, upper_half);
        assert!(raised > 100, "only {raised} pixels of the waiters line");
        assert_eq!(
            count_line_pixels(&waiting, TIMELINE_HEADER_HEIGHT_PX..strip_top),
            0
        );
    }

    #[test]
    fn timeline_png_has_the_expected_size_and_is_not_blank() {
        let (_keep, dir) = output_dir();
        let path = dir.join("timeline.png");
        draw_timeline(&reference_report(), &path).unwrap();
        let (width, height, colours) = decode_png(&path);
        assert_eq!((width, height), timeline_size(2));
        assert!(colours > 2, "only {colours} colours");
    }

    #[test]
    fn a_drawing_error_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-folder").join("timeline.png");
        let error = draw_timeline(&reference_report(), &path).unwrap_err();
        assert!(
            format!("{error:#}").starts_with(&format!("drawing {}", path.display())),
            "{error:#}"
        );
    }
}
