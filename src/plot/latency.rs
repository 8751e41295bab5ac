//! `latency.png`: the whole run's latency by percentile, one curve per strategy, on a
//! percentile axis that spreads the tail, where the strategies differ most. A
//! closed loop's chart says under it that its percentiles understate a stall
//! ([`loop_note`]), and each key entry counts the seconds without a completed transaction.

use std::ops::Range;
use std::path::Path;

use anyhow::Context;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::layout::{GRID, STRATEGY_COLOURS, line_segments, register_embedded_font, text_style};
use crate::choices::LoadLoop;
use crate::export::format::{format_latency, format_latency_label, trim_number};
use crate::metrics::{RunReport, StrategyReport};

/// Width and height of `latency.png` in pixels.
pub const LATENCY_SIZE_PX: (u32, u32) = (1200, 600);

/// The percentile axis of `latency.png` ends at 99.99 (4 nines); higher points,
/// the max included, are drawn at its right edge.
const LATENCY_AXIS_NINES: f64 = 4.0;

/// Draws `latency.png` to `path`: latency (ms, log scale) by percentile, one curve per
/// strategy with data; a report without any transaction gets a "no transactions" note.
pub fn draw_latency(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    register_embedded_font()?;
    draw_latency_png(report, path).with_context(|| format!("drawing {}", path.display()))
}

fn draw_latency_png(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, LATENCY_SIZE_PX).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!("{}: latency by percentile", report.workload);
    let curves = latency_curves(report);
    if curves.is_empty() {
        draw_nothing_to_draw(&root, &title)?;
    } else {
        let note = loop_note(report);
        let note_height_px = NOTE_LINE_PX * note.len() as u32;
        let (chart_area, note_area) =
            root.split_vertically(LATENCY_SIZE_PX.1 - note_height_px - NOTE_MARGIN_PX);
        draw_curves(&chart_area, &title, &curves)?;
        for (index, line) in note.iter().enumerate() {
            note_area.draw_text(
                line,
                &text_style(14).pos(Pos::new(HPos::Center, VPos::Top)),
                (
                    LATENCY_SIZE_PX.0 as i32 / 2,
                    (NOTE_LINE_PX * index as u32) as i32,
                ),
            )?;
        }
    }
    root.present()?;
    Ok(())
}

/// The height of one line of the note under the chart, in pixels.
const NOTE_LINE_PX: u32 = 20;

/// The space under the note's last line, in pixels; none without a note.
const NOTE_MARGIN_PX: u32 = 8;

/// The lines under the chart of a closed-loop run: what its percentiles
/// cannot show. A stalled client sends nothing while it waits, so a stall of
/// 9 s adds one slow transaction per client, not the thousands of requests
/// the clients would have sent: two strategies with the same curves up to
/// p99.9 may differ by a 9 s outage. None for an open loop (`--rate`), whose
/// latencies count from each request's scheduled start.
pub fn loop_note(report: &RunReport) -> Vec<String> {
    if report.load_loop == LoadLoop::Open {
        return Vec::new();
    }
    vec![
        "Closed loop: a stalled client sends nothing while it waits, so a stall adds one slow \
         transaction per client to these percentiles,"
            .to_string(),
        "not the requests it held back: they understate the stall (see each key's seconds \
         without a transaction); --rate draws the open-loop view."
            .to_string(),
    ]
}

/// The curves of the strategies with data. A strategy keeps its colour whether or not
/// the ones before it have data.
fn latency_curves(report: &RunReport) -> Vec<LatencyCurve<'_>> {
    report
        .strategies
        .iter()
        .enumerate()
        .map(|(index, strategy)| LatencyCurve {
            strategy,
            colour: STRATEGY_COLOURS[index % STRATEGY_COLOURS.len()],
            points: percentile_points(strategy),
        })
        .filter(|curve| !curve.points.is_empty())
        .collect()
}

/// The title and, in the middle, a note that there is no curve to draw.
fn draw_nothing_to_draw(
    root: &DrawingArea<BitMapBackend, Shift>,
    title: &str,
) -> anyhow::Result<()> {
    root.draw_text(
        title,
        &text_style(20).pos(Pos::new(HPos::Center, VPos::Top)),
        (LATENCY_SIZE_PX.0 as i32 / 2, 12),
    )?;
    root.draw_text(
        "no transactions: nothing to draw",
        &text_style(24).pos(Pos::new(HPos::Center, VPos::Center)),
        (LATENCY_SIZE_PX.0 as i32 / 2, LATENCY_SIZE_PX.1 as i32 / 2),
    )?;
    Ok(())
}

/// The y range (ms) of `latency.png`: whole decades around every point of `curves`, so
/// the log axis always has labelled ticks.
fn latency_range_ms(curves: &[LatencyCurve]) -> Range<f64> {
    let all_ms = curves
        .iter()
        .flat_map(|curve| curve.points.iter().map(|point| point.1));
    let min_ms = all_ms.clone().fold(f64::INFINITY, f64::min);
    let max_ms = all_ms.fold(0.0, f64::max);
    // (A hair under the decade, so that rounding does not drop its tick label.)
    let y_low = 10_f64.powf(min_ms.log10().floor()) * 0.999;
    let y_high = 10_f64
        .powf((max_ms * 1.05).log10().ceil())
        .max(y_low * 10.0);
    y_low..y_high
}

/// The chart with its title, axes, one line per curve and the key in the upper left.
fn draw_curves(
    root: &DrawingArea<BitMapBackend, Shift>,
    title: &str,
    curves: &[LatencyCurve],
) -> anyhow::Result<()> {
    let mut chart = ChartBuilder::on(root)
        .margin(16)
        .margin_right(40)
        .caption(title, text_style(20))
        .x_label_area_size(52)
        .y_label_area_size(90)
        .build_cartesian_2d(PercentileAxis, latency_range_ms(curves).log_scale())?;
    chart
        .configure_mesh()
        .light_line_style(GRID.mix(0.5))
        .bold_line_style(GRID)
        .y_labels(12)
        .y_label_formatter(&|ms| format_latency_label(*ms))
        .x_desc("percentile")
        .y_desc("latency (log scale)")
        .label_style(text_style(14))
        .axis_desc_style(text_style(15))
        .draw()?;

    for curve in curves {
        let colour = curve.colour;
        chart
            .draw_series(line_segments(&curve.points, colour.stroke_width(3)))?
            .label(curve_label(curve.strategy))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(3))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .margin(12)
        .label_font(text_style(16))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(160, 160, 160))
        .draw()?;
    Ok(())
}

/// A curve's key entry: the strategy and its whole-run p50, p99, p99.9 and
/// max, then the seconds in which no transaction completed, when it had
/// some: what the percentiles of a closed loop do not show.
fn curve_label(strategy: &StrategyReport) -> String {
    let summary = &strategy.summary;
    let zero_tps = match summary.zero_tps_seconds {
        0 => String::new(),
        seconds => format!("; {seconds} s without a completed transaction"),
    };
    format!(
        "{}: p50 {}, p99 {}, p99.9 {}, max {}{zero_tps}",
        strategy.strategy,
        format_latency(summary.lat_p50_ms),
        format_latency(summary.lat_p99_ms),
        format_latency(summary.lat_p999_ms),
        format_latency(summary.lat_max_ms)
    )
}

/// One line of `latency.png`.
struct LatencyCurve<'a> {
    strategy: &'a StrategyReport,
    colour: RGBColor,
    /// (percentile, ms)
    points: Vec<(f64, f64)>,
}

/// A strategy's percentile curve as chart points (percentile, ms), leaving out
/// latencies of zero, which a log scale cannot show.
fn percentile_points(strategy: &StrategyReport) -> Vec<(f64, f64)> {
    strategy
        .latency
        .percentiles
        .iter()
        .filter(|(_, ms)| *ms > 0.0 && ms.is_finite())
        .copied()
        .collect()
}

/// The x axis of `latency.png`: percentiles 0 .. 99.99 placed at -log10(1 - p/100),
/// which spreads the tail; labelled at 0, 50, 75, 90, 99, 99.9 and 99.99.
struct PercentileAxis;

/// The labelled percentiles of [`PercentileAxis`].
const PERCENTILE_TICKS: [f64; 7] = [0.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99];

impl Ranged for PercentileAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, percentile: &f64, limit: (i32, i32)) -> i32 {
        let fraction = percentile_to_x(*percentile) / LATENCY_AXIS_NINES;
        limit.0 + (f64::from(limit.1 - limit.0) * fraction).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            // Light grid lines half way (on this axis) between the labelled ones.
            vec![25.0, 68.377, 84.189, 96.838, 99.684, 99.968]
        } else {
            PERCENTILE_TICKS.to_vec()
        }
    }

    fn range(&self) -> Range<f64> {
        0.0..99.99
    }
}

impl ValueFormatter<f64> for PercentileAxis {
    fn format(percentile: &f64) -> String {
        trim_number(*percentile, 2)
    }
}

/// The percentile axis: x = -log10(1 - p/100), so 90 is at 1, 99 at 2, 99.9 at 3;
/// everything from 99.99 up (the max included) is drawn at the right edge.
fn percentile_to_x(percentile: f64) -> f64 {
    let x = -(1.0 - percentile / 100.0).log10();
    // NaN comes from a percentile over 100 (rounding): the edge too.
    if x.is_nan() || x > LATENCY_AXIS_NINES {
        LATENCY_AXIS_NINES
    } else {
        x.max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::test_support::{decode_png, decode_rgb, output_dir};
    use crate::testing::reference_report;

    #[test]
    fn latency_png_has_the_expected_size_and_is_not_blank() {
        let (_keep, dir) = output_dir();
        let path = dir.join("latency.png");
        draw_latency(&reference_report(), &path).unwrap();
        let (width, height, colours) = decode_png(&path);
        assert_eq!((width, height), LATENCY_SIZE_PX);
        assert!(colours > 2, "only {colours} colours");
    }

    #[test]
    fn one_strategy_without_data_is_skipped() {
        let (_keep, dir) = output_dir();
        let mut report = reference_report();
        report.strategies[0].latency.percentiles.clear();
        let curves = latency_curves(&report);
        let drawn: Vec<&str> = curves
            .iter()
            .map(|c| c.strategy.strategy.as_str())
            .collect();
        assert_eq!(drawn, ["retry"]);
        // retry keeps its own colour, the second, when naive before it has no curve.
        assert_eq!(curves[0].colour, STRATEGY_COLOURS[1]);

        let path = dir.join("latency-one.png");
        draw_latency(&report, &path).unwrap();
        let (_, _, pixels) = decode_rgb(&path);
        let count = |colour: RGBColor| {
            pixels
                .iter()
                .filter(|pixel| **pixel == [colour.0, colour.1, colour.2])
                .count()
        };
        assert_eq!(
            count(STRATEGY_COLOURS[0]),
            0,
            "naive's curve or key is drawn"
        );
        assert!(count(STRATEGY_COLOURS[1]) > 100, "retry's curve is missing");
    }

    #[test]
    fn a_closed_loop_s_chart_says_its_percentiles_understate_a_stall() {
        let closed = reference_report();
        let note = loop_note(&closed).join(" ");
        assert!(
            note.starts_with("Closed loop: a stalled client sends nothing while it waits")
                && note.contains("they understate the stall")
                && note.contains("--rate draws the open-loop view"),
            "{note}"
        );
        assert_eq!(
            curve_label(&closed.strategies[0]),
            "naive: p50 1.20 ms, p99 2.16 ms, p99.9 5.47 s, max 9.62 s; 9 s without a \
             completed transaction"
        );
        assert_eq!(
            curve_label(&closed.strategies[1]),
            "retry: p50 1.21 ms, p99 3.01 ms, p99.9 419 ms, max 496 ms"
        );
        assert!(loop_note(&crate::testing::open_loop_report()).is_empty());
        // The note is drawn: the closed loop's bottom rows hold two lines of
        // text, the open loop's only the axis title.
        let (_keep, dir) = output_dir();
        let dark_pixels_at_bottom = |report: &RunReport, name: &str| {
            let path = dir.join(name);
            draw_latency(report, &path).unwrap();
            let (width, _, pixels) = decode_rgb(&path);
            let bottom = &pixels[pixels.len() - 40 * width as usize..];
            bottom.iter().filter(|pixel| pixel[0] < 100).count()
        };
        let closed_px = dark_pixels_at_bottom(&closed, "closed.png");
        let open_px = dark_pixels_at_bottom(&crate::testing::open_loop_report(), "open.png");
        assert!(closed_px > 4 * open_px, "{closed_px} vs {open_px}");
    }

    #[test]
    fn percentile_axis_spreads_the_tail() {
        assert_eq!(percentile_to_x(0.0), 0.0);
        assert!((percentile_to_x(90.0) - 1.0).abs() < 1e-9);
        assert!((percentile_to_x(99.9) - 3.0).abs() < 1e-9);
        assert_eq!(percentile_to_x(100.0), LATENCY_AXIS_NINES);
        assert_eq!(PercentileAxis.map(&99.0, (0, 400)), 200);
        assert_eq!(PercentileAxis.map(&100.0, (0, 400)), 400);
        assert_eq!(PercentileAxis::format(&99.99), "99.99");
        assert_eq!(PercentileAxis::format(&0.0), "0");
        assert_eq!(format_latency_label(0.1), "0.1 ms");
        assert_eq!(format_latency_label(10000.0), "10 s");
    }
}
