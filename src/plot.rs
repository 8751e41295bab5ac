//! The two charts of a results folder: `timeline.png` (TPS per second, one panel per
//! strategy, with the blocker window and the DDL attempts, and under it a strip with
//! the sessions waiting on a lock; panels stacked up to 3 strategies, in two columns
//! beyond), `latency.png` (latency by percentile, one curve per strategy) and
//! `latency-timeline.png` (p99 latency per second on a log axis, one panel per strategy,
//! laid out, shaded and marked like `timeline.png`).
//!
//! Text is drawn with DejaVu Sans embedded in the binary, so the charts render the
//! same on machines with no fonts installed.

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, bail};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::metrics::{AttemptOutcome, RunReport, SecondRow, StrategyReport};

/// DejaVu Sans, the only font the charts use.
static FONT_BYTES: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

/// The family name the embedded font is registered under.
const FONT: &str = "sans-serif";

/// Width of `timeline.png` in pixels when its panels are stacked (1 to 3 strategies).
pub const TIMELINE_WIDTH_PX: u32 = 1200;
/// Width of one column of `timeline.png` in pixels when its panels are in a grid
/// (more than 3 strategies): two columns, 1800 px in all.
pub const TIMELINE_GRID_COLUMN_WIDTH_PX: u32 = 900;
/// The most strategies whose panels are stacked in one column; with more, `timeline.png`
/// puts them in a grid of [`TIMELINE_GRID_COLUMNS`] columns.
pub const TIMELINE_MAX_STACKED: usize = 3;
/// Columns of the grid of panels of `timeline.png` with more than 3 strategies.
pub const TIMELINE_GRID_COLUMNS: u32 = 2;
/// Height of the TPS part of one strategy panel of `timeline.png` in pixels.
pub const TIMELINE_PANEL_HEIGHT_PX: u32 = 300;
/// Height of the lock waiters strip under each strategy's TPS part in pixels.
pub const TIMELINE_LOCK_STRIP_HEIGHT_PX: u32 = 70;
/// Height of the title (two lines) and key above the panels of `timeline.png` in pixels;
/// each title line more (grid only) adds [`TIMELINE_TITLE_LINE_HEIGHT_PX`].
pub const TIMELINE_HEADER_HEIGHT_PX: u32 = 80;
/// Height of one line of the title of `timeline.png` in pixels.
pub const TIMELINE_TITLE_LINE_HEIGHT_PX: u32 = 24;
/// Width and height of `latency.png` in pixels.
pub const LATENCY_SIZE_PX: (u32, u32) = (1200, 600);
/// Height of one strategy panel of `latency-timeline.png` in pixels (it has no lock
/// strip; widths, grid and header are those of `timeline.png`).
pub const LATENCY_TIMELINE_PANEL_HEIGHT_PX: u32 = 300;

/// The percentile axis of `latency.png` ends at 99.99 (4 nines); higher points,
/// the max included, are drawn at its right edge.
const LATENCY_AXIS_NINES: f64 = 4.0;

const TPS_LINE: RGBColor = RGBColor(31, 119, 180);
const LOCK_WAITERS_LINE: RGBColor = RGBColor(148, 103, 189);
const BLOCKER_SHADE: RGBColor = RGBColor(200, 200, 200);
const ATTEMPT_FAILED: RGBColor = RGBColor(214, 39, 40);
const ATTEMPT_OK: RGBColor = RGBColor(44, 160, 44);
const LATENCY_P99_LINE: RGBColor = RGBColor(217, 95, 2);
const LATENCY_P50_LINE: RGBColor = RGBColor(31, 119, 180);
const NO_TRANSACTIONS_MARK: RGBColor = RGBColor(90, 90, 90);
const TEXT: RGBColor = RGBColor(30, 30, 30);
const GRID: RGBColor = RGBColor(225, 225, 225);

/// Colours of the strategies' curves in `latency.png`, in run order (then repeating).
const STRATEGY_COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// Width and height in pixels of `timeline.png` for `strategies` panels (a report
/// without strategies gets one, empty, panel). A panel is 370 px high (300 TPS + 70 lock
/// waiters); the header is 80 px for a two-line title, plus 24 px per extra title line.
///
/// - 1 to 3 strategies, stacked: 1200 x (370 per panel + 80).
/// - 4 or more, a grid of 2 columns of 900 px: 1800 x (370 per row + 80 + 24 x extra
///   title lines), with `ceil(n / 2)` rows and `ceil((n + 1) / 3)` title lines (at
///   least 2): 4 strategies give 1800 x 820, 9 give 1800 x 1978.
pub fn timeline_size(strategies: usize) -> (u32, u32) {
    TimelineLayout::new(strategies).size()
}

/// Width and height in pixels of `latency-timeline.png` for `strategies` panels: the
/// layout of [`timeline_size`] with panels of 300 px (no lock strip), so 1 to 3
/// strategies give 1200 x (300 per panel + 80) and 4 give 1800 x 680.
pub fn latency_timeline_size(strategies: usize) -> (u32, u32) {
    TimelineLayout::latency(strategies).size()
}

/// Where the parts of `timeline.png` (and `latency-timeline.png`) go for a number of
/// strategies: panels stacked in one column of 1200 px up to [`TIMELINE_MAX_STACKED`]
/// strategies, a grid of [`TIMELINE_GRID_COLUMNS`] columns of 900 px beyond, filled left
/// to right, then top to bottom, in run order. The header spans the full width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TimelineLayout {
    /// Panels (at least one: a report without strategies gets an empty one).
    panels: u32,
    columns: u32,
    column_width_px: u32,
    /// Height of one whole panel.
    panel_height_px: u32,
    /// Lines the title may take before it is cut.
    title_lines: u32,
}

impl TimelineLayout {
    /// The layout of `timeline.png`: panels of a TPS part and a lock strip.
    fn new(strategies: usize) -> TimelineLayout {
        TimelineLayout::with_panel_height(strategies, timeline_panel_height_px())
    }

    /// The layout of `latency-timeline.png`: the same, with panels of one chart only.
    fn latency(strategies: usize) -> TimelineLayout {
        TimelineLayout::with_panel_height(strategies, LATENCY_TIMELINE_PANEL_HEIGHT_PX)
    }

    fn with_panel_height(strategies: usize, panel_height_px: u32) -> TimelineLayout {
        let panels = strategies.max(1) as u32;
        if strategies <= TIMELINE_MAX_STACKED {
            TimelineLayout {
                panels,
                columns: 1,
                column_width_px: TIMELINE_WIDTH_PX,
                panel_height_px,
                title_lines: 2,
            }
        } else {
            // One title line per 3 parts (the workload and the headlines): the longest
            // headlines ("strong-migrations: 12 s at 0 tps, 12 tries, gave_up") take
            // about 430 px, so 3 fit on a line of 1760 px but not always 4.
            TimelineLayout {
                panels,
                columns: TIMELINE_GRID_COLUMNS,
                column_width_px: TIMELINE_GRID_COLUMN_WIDTH_PX,
                panel_height_px,
                title_lines: (panels + 1).div_ceil(3).max(2),
            }
        }
    }

    fn rows(&self) -> u32 {
        self.panels.div_ceil(self.columns)
    }

    fn width_px(&self) -> u32 {
        self.column_width_px * self.columns
    }

    fn header_height_px(&self) -> u32 {
        TIMELINE_HEADER_HEIGHT_PX + TIMELINE_TITLE_LINE_HEIGHT_PX * (self.title_lines - 2)
    }

    fn size(&self) -> (u32, u32) {
        (
            self.width_px(),
            self.header_height_px() + self.panel_height_px * self.rows(),
        )
    }

    /// The top left corner of panel `index` (run order) in the whole image.
    fn panel_origin_px(&self, index: u32) -> (u32, u32) {
        let column = index % self.columns;
        let row = index / self.columns;
        (
            self.column_width_px * column,
            self.header_height_px() + self.panel_height_px * row,
        )
    }

    /// The area of panel `index` (run order); in `timeline.png`, its TPS part and its
    /// lock strip.
    fn panel_area<'a>(
        &self,
        root: &DrawingArea<BitMapBackend<'a>, Shift>,
        index: u32,
    ) -> DrawingArea<BitMapBackend<'a>, Shift> {
        root.clone().shrink(
            self.panel_origin_px(index),
            (self.column_width_px, self.panel_height_px),
        )
    }
}

/// Height of one whole strategy panel of `timeline.png`: the TPS part and the lock strip.
fn timeline_panel_height_px() -> u32 {
    TIMELINE_PANEL_HEIGHT_PX + TIMELINE_LOCK_STRIP_HEIGHT_PX
}

/// Draws `timeline.png` to `path`: one panel per strategy, stacked up to 3 strategies and
/// in a grid of 2 columns beyond (see [`timeline_size`]), all sharing the x axis (seconds
/// of the run clock) and the y range (TPS, 0 to the highest second of any strategy).
/// Under each panel's TPS part, a strip on the same x axis shows the sessions waiting on a
/// lock in each second (0 to the highest count of any strategy).
pub fn draw_timeline(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    register_embedded_font()?;
    draw_timeline_png(report, path).with_context(|| format!("drawing {}", path.display()))
}

/// Draws `latency.png` to `path`: latency (ms, log scale) by percentile, one curve per
/// strategy with data; a report without any transaction gets a "no transactions" note.
pub fn draw_latency(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    register_embedded_font()?;
    draw_latency_png(report, path).with_context(|| format!("drawing {}", path.display()))
}

/// Draws `latency-timeline.png` to `path`: the p99 latency of each second (ms, log
/// scale), with the p50 and the max as thinner lines, one panel per strategy laid out as
/// in [`draw_timeline`] (see [`latency_timeline_size`]), on shared axes, with the blocker
/// window and the DDL attempts marked the same way. Seconds in which no transaction
/// completed (latency 0) are left out of the lines and marked at the bottom instead.
pub fn draw_latency_timeline(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    register_embedded_font()?;
    draw_latency_timeline_png(report, path).with_context(|| format!("drawing {}", path.display()))
}

/// Registers the embedded font with plotters once per process.
fn register_embedded_font() -> anyhow::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let registered = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok()
    });
    if !registered {
        bail!("the embedded font assets/fonts/DejaVuSans.ttf could not be loaded");
    }
    Ok(())
}

fn text_style(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).color(&TEXT)
}

// ---------------------------------------------------------------------------------------
// timeline.png

fn draw_timeline_png(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    let key = [
        ("transactions per second", KeySwatch::Line(TPS_LINE)),
        (
            "sessions waiting on a lock",
            KeySwatch::Line(LOCK_WAITERS_LINE),
        ),
        ("blocker's transaction open", KeySwatch::Box(BLOCKER_SHADE)),
        (
            "DDL try that failed (lock_timeout, error, gave up)",
            KeySwatch::Box(ATTEMPT_FAILED),
        ),
        ("DDL try that succeeded", KeySwatch::Box(ATTEMPT_OK)),
    ];
    let duration_s = timeline_duration_s(report);
    let max_tps = report
        .strategies
        .iter()
        .flat_map(|strategy| strategy.seconds.iter().map(|row| row.tps))
        .max()
        .unwrap_or(0)
        .max(8) as f64;
    // At least 8, so that a nearly idle run still gets whole-number ticks;
    // headroom above the highest second for the attempt bars.
    let y_top = max_tps * 1.25;
    let max_waiters = report
        .strategies
        .iter()
        .flat_map(|strategy| strategy.seconds.iter().map(|row| row.lock_waiters))
        .max()
        .unwrap_or(0)
        .max(1);
    draw_panels_png(
        report,
        path,
        &TimelineLayout::new(report.strategies.len()),
        report.workload.clone(),
        &key,
        |strategy, panel| {
            let (tps_part, lock_strip) = panel.split_vertically(TIMELINE_PANEL_HEIGHT_PX);
            draw_timeline_panel(strategy, &tps_part, duration_s, y_top)?;
            draw_lock_strip(strategy, &lock_strip, duration_s, max_waiters)
        },
    )
}

/// The frame of `timeline.png` and `latency-timeline.png`: a white image of the layout's
/// size, the header (the title, starting with `title_start` and followed by every
/// strategy's headline, and `key` under it), then `draw_panel` on each strategy's panel
/// area in run order, or a note when the report has no strategies.
fn draw_panels_png(
    report: &RunReport,
    path: &Path,
    layout: &TimelineLayout,
    title_start: String,
    key: &[(&str, KeySwatch)],
    mut draw_panel: impl FnMut(
        &StrategyReport,
        &DrawingArea<BitMapBackend, Shift>,
    ) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let size = layout.size();
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    let (header, body) = root.split_vertically(layout.header_height_px());
    let title = timeline_title(report, title_start, layout);
    draw_timeline_header(&header, layout, &title, key)?;

    if report.strategies.is_empty() {
        body.draw_text(
            "no strategies in this report",
            &text_style(20).pos(Pos::new(HPos::Center, VPos::Center)),
            (size.0 as i32 / 2, layout.panel_height_px as i32 / 2),
        )?;
    }
    for (index, strategy) in report.strategies.iter().enumerate() {
        draw_panel(strategy, &layout.panel_area(&root, index as u32))?;
    }
    root.present()?;
    Ok(())
}

/// The title lines and, under them, the key. A title shorter than the header has room
/// for (grid only) is moved down by half the unused lines, so that the title and key
/// stay together in the middle of the header.
fn draw_timeline_header(
    header: &DrawingArea<BitMapBackend, Shift>,
    layout: &TimelineLayout,
    lines: &[String],
    items: &[(&str, KeySwatch)],
) -> anyhow::Result<()> {
    let (width, _) = header.dim_in_pixel();
    let line_px = TIMELINE_TITLE_LINE_HEIGHT_PX as i32;
    // A one-line title keeps the room of a second line, as in the 80 px header.
    let shown_lines = lines.len().max(2) as i32;
    let title_top = 8 + (layout.title_lines as i32 - shown_lines) * line_px / 2;
    let centred = text_style(TITLE_FONT_PX).pos(Pos::new(HPos::Center, VPos::Top));
    for (index, line) in lines.iter().enumerate() {
        let y = title_top + line_px * index as i32;
        header.draw_text(line, &centred, (width as i32 / 2, y))?;
    }

    // The key, centred on one line under the title.
    let key_style = text_style(14);
    let swatch_px = 14;
    let gap_px = 28;
    let label_widths: Vec<i32> = items
        .iter()
        .map(|(label, _)| {
            header
                .estimate_text_size(label, &key_style)
                .map_or(0, |(w, _)| w as i32)
        })
        .collect();
    let total_px: i32 = label_widths.iter().map(|w| swatch_px + 6 + w).sum::<i32>()
        + gap_px * (items.len() as i32 - 1);
    let mut x = (width as i32 - total_px) / 2;
    // 58 in the 80 px header of a two-line title.
    let y = title_top + line_px * shown_lines + 2;
    for ((label, swatch), label_width) in items.iter().zip(&label_widths) {
        match swatch {
            KeySwatch::Line(colour) => header.draw(&PathElement::new(
                vec![(x, y + swatch_px / 2), (x + swatch_px, y + swatch_px / 2)],
                colour.stroke_width(3),
            ))?,
            KeySwatch::ThinLine(style) => header.draw(&PathElement::new(
                vec![(x, y + swatch_px / 2), (x + swatch_px, y + swatch_px / 2)],
                *style,
            ))?,
            KeySwatch::Box(colour) => header.draw(&Rectangle::new(
                [(x, y), (x + swatch_px, y + swatch_px)],
                colour.filled(),
            ))?,
        }
        header.draw_text(
            label,
            &key_style.pos(Pos::new(HPos::Left, VPos::Center)),
            (x + swatch_px + 6, y + swatch_px / 2),
        )?;
        x += swatch_px + 6 + label_width + gap_px;
    }
    Ok(())
}

/// Font size of the title of `timeline.png`.
const TITLE_FONT_PX: u32 = 20;

/// The lines of the title of `timeline.png` (and `latency-timeline.png`): `start` (the
/// workload) and every strategy's headline figures, joined by " | ", wrapped between
/// strategies onto at most the layout's title lines, each at most the image width less
/// 40 px (cut after a word with "…" if they do not all fit).
fn timeline_title(report: &RunReport, start: String, layout: &TimelineLayout) -> Vec<String> {
    let title_style = text_style(TITLE_FONT_PX);
    let max_width_px = layout.width_px() - 40;
    let mut parts = vec![start];
    parts.extend(report.strategies.iter().map(headline));
    wrap_parts(&parts, " | ", layout.title_lines as usize, |text| {
        title_style.font.box_size(text).map_or(0, |(w, _)| w) <= max_width_px
    })
}

/// What a key entry shows next to its label.
enum KeySwatch {
    Line(RGBColor),
    /// A line drawn in its own style (thinner or fainter than a [`KeySwatch::Line`]).
    ThinLine(ShapeStyle),
    Box(RGBColor),
}

/// The TPS part of one strategy's panel: blocker shading, TPS, and a bar per DDL attempt
/// near the top.
fn draw_timeline_panel(
    strategy: &StrategyReport,
    panel: &DrawingArea<BitMapBackend, Shift>,
    duration_s: f64,
    y_top: f64,
) -> anyhow::Result<()> {
    let mut chart = ChartBuilder::on(panel)
        .margin_top(6)
        .margin_bottom(4)
        .margin_left(12)
        .margin_right(28)
        .caption(panel_caption(strategy), text_style(16))
        .x_label_area_size(28)
        .y_label_area_size(72)
        .build_cartesian_2d(0.0..duration_s, 0.0..y_top)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(GRID)
        .x_labels(16)
        .y_labels(6)
        .x_label_formatter(&|seconds| format!("{seconds:.0} s"))
        .y_label_formatter(&|tps| format!("{tps:.0}"))
        .y_desc("TPS")
        .label_style(text_style(13))
        .axis_desc_style(text_style(14))
        .draw()?;

    shade_blocker_windows(&mut chart, strategy, 0.0..y_top)?;

    let steps = step_points(strategy, |row| row.tps as f64);
    chart.draw_series(AreaSeries::new(
        steps.iter().copied(),
        0.0,
        TPS_LINE.mix(0.12).filled(),
    ))?;
    chart.draw_series(line_segments(&steps, TPS_LINE.stroke_width(2)))?;

    mark_attempts(
        &mut chart,
        strategy,
        duration_s,
        0.0..y_top,
        y_top * 0.88..y_top * 0.96,
    )
}

/// A chart of one panel: seconds of the run clock across, any f64 axis up.
type PanelChart<'a, 'b, Y> = ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, Y>>;

/// Shades the blocker's window(s) of `strategy` from `y.start` to `y.end`.
fn shade_blocker_windows<Y: Ranged<ValueType = f64>>(
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
fn mark_attempts<Y: Ranged<ValueType = f64>>(
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

/// The strip under a strategy's TPS part: the most sessions waiting on a lock in each
/// second, as a step line on the same x axis, with the blocker window shaded.
/// The y axis runs from 0 to a little above `max_waiters`, labelled with whole numbers.
fn draw_lock_strip(
    strategy: &StrategyReport,
    strip: &DrawingArea<BitMapBackend, Shift>,
    duration_s: f64,
    max_waiters: u32,
) -> anyhow::Result<()> {
    let y_axis = WaitersAxis::new(max_waiters);
    let y_top = y_axis.top;
    // The same horizontal margins and y label area as the TPS part, so that the
    // seconds line up; no x labels of its own (those of the TPS part are just above).
    // The bottom margin leaves room under the "0" label.
    let mut chart = ChartBuilder::on(strip)
        .margin_top(4)
        .margin_bottom(10)
        .margin_left(12)
        .margin_right(28)
        .x_label_area_size(0)
        .y_label_area_size(72)
        .build_cartesian_2d(0.0..duration_s, y_axis)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(GRID)
        .x_labels(16)
        .label_style(text_style(12))
        .draw()?;

    // The axis name, turned like "TPS" above it but on two lines ("lock", "waiters"):
    // on one line it would be taller than the strip.
    let (_, plot_rows) = chart.plotting_area().get_pixel_range();
    let centre_y = (plot_rows.start + plot_rows.end) / 2 - strip.get_base_pixel().1;
    let desc_style = text_style(13)
        .transform(FontTransform::Rotate270)
        .pos(Pos::new(HPos::Center, VPos::Top));
    strip.draw_text("lock", &desc_style, (10, centre_y))?;
    strip.draw_text("waiters", &desc_style, (25, centre_y))?;

    shade_blocker_windows(&mut chart, strategy, 0.0..y_top)?;
    // No x axis of its own: a baseline at 0 instead.
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, 0.0), (duration_s, 0.0)],
        BLACK.stroke_width(1),
    )))?;
    let steps = step_points(strategy, |row| f64::from(row.lock_waiters));
    chart.draw_series(AreaSeries::new(
        steps.iter().copied(),
        0.0,
        LOCK_WAITERS_LINE.mix(0.15).filled(),
    ))?;
    chart.draw_series(line_segments(&steps, LOCK_WAITERS_LINE.stroke_width(2)))?;
    Ok(())
}

/// The y axis of the lock strip: 0 to a little above `max` (so that a line at `max`
/// is not cut by the edge), labelled at 0, at `max`, and half way when that is a
/// whole number.
struct WaitersAxis {
    max: u32,
    top: f64,
}

impl WaitersAxis {
    fn new(max: u32) -> WaitersAxis {
        WaitersAxis {
            max,
            top: f64::from(max.max(1)) * 1.15,
        }
    }

    /// The labelled values, all whole numbers.
    fn ticks(&self) -> Vec<u32> {
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

impl Ranged for WaitersAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, waiters: &f64, limit: (i32, i32)) -> i32 {
        let fraction = waiters / self.top;
        limit.0 + (f64::from(limit.1 - limit.0) * fraction).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks().into_iter().map(f64::from).collect()
        }
    }

    fn range(&self) -> Range<f64> {
        0.0..self.top
    }
}

impl ValueFormatter<f64> for WaitersAxis {
    fn format(waiters: &f64) -> String {
        format!("{waiters:.0}")
    }
}

/// A per-second value as the corners of a step line: second k covers [k, k+1).
fn step_points(strategy: &StrategyReport, value: impl Fn(&SecondRow) -> f64) -> Vec<(f64, f64)> {
    steps(&strategy.seconds, &value)
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

/// The corners of a step line through `rows`: second k covers [k, k+1).
fn steps<'a>(
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

/// A polyline as separate two-point segments. Plotters draws the joints of a thick
/// `LineSeries` with visible dents; segments drawn one by one do not have them.
fn line_segments(points: &[(f64, f64)], style: ShapeStyle) -> Vec<PathElement<(f64, f64)>> {
    points
        .windows(2)
        .map(|pair| PathElement::new(vec![pair[0], pair[1]], style))
        .collect()
}

/// The panel caption: the strategy and its headline figures.
fn panel_caption(strategy: &StrategyReport) -> String {
    let s = &strategy.summary;
    let mut caption = headline(strategy);
    if s.ddl_attempts > 0 {
        caption.push_str(&format!(", DDL outcome {}", s.ddl_outcome));
    }
    caption
}

/// "naive: 9 s at 0 tps, DDL waited 9.7 s" or "retry: 0 s at 0 tps, 5 tries".
fn headline(strategy: &StrategyReport) -> String {
    let s = &strategy.summary;
    let mut text = format!("{}: {} s at 0 tps", strategy.strategy, s.zero_tps_seconds);
    match s.ddl_attempts {
        0 => {}
        1 if s.ddl_outcome == "ok" => {
            text.push_str(&format!(
                ", DDL waited {:.1} s",
                s.ddl_last_wait_ms / 1000.0
            ));
        }
        1 => {
            text.push_str(&format!(
                ", DDL failed after {:.1} s",
                s.ddl_last_wait_ms / 1000.0
            ));
        }
        tries if s.ddl_outcome == "ok" => text.push_str(&format!(", {tries} tries")),
        tries => text.push_str(&format!(", {tries} tries, {}", s.ddl_outcome)),
    }
    text
}

/// Joins `parts` with `separator` into at most `max_lines` lines that `fits`, breaking
/// lines between parts only; what does not fit on the last line is cut after a whole
/// word (and any separator or punctuation before the cut dropped) and ends with "…".
fn wrap_parts(
    parts: &[String],
    separator: &str,
    max_lines: usize,
    fits: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for part in parts {
        let candidate = if current.is_empty() {
            part.clone()
        } else {
            format!("{current}{separator}{part}")
        };
        if current.is_empty() || fits(&candidate) {
            current = candidate;
        } else {
            lines.push(current);
            current = part.clone();
        }
    }
    lines.push(current);
    if lines.len() > max_lines {
        let mut last = lines[max_lines - 1..].join(separator);
        while !last.is_empty() && !fits(&format!("{last} …")) {
            // Drop the last word, then what would dangle before the "…".
            let word_start = last.rfind(' ').unwrap_or(0);
            last.truncate(word_start);
            let kept = last.trim_end_matches(|c: char| {
                c.is_whitespace() || c == ',' || c == ':' || separator.trim().contains(c)
            });
            last.truncate(kept.len());
        }
        lines.truncate(max_lines - 1);
        if last.is_empty() {
            lines.push("…".to_string());
        } else {
            lines.push(format!("{last} …"));
        }
    }
    lines
}

/// The x range of the timeline: every second of any strategy, every attempt and the blocker.
fn timeline_duration_s(report: &RunReport) -> f64 {
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

// ---------------------------------------------------------------------------------------
// latency-timeline.png

fn draw_latency_timeline_png(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    let key = [
        ("p99 of the second", KeySwatch::Line(LATENCY_P99_LINE)),
        ("p50", KeySwatch::ThinLine(p50_style())),
        ("max", KeySwatch::ThinLine(max_style())),
        (
            "no transaction completed",
            KeySwatch::Box(NO_TRANSACTIONS_MARK),
        ),
        ("blocker's transaction open", KeySwatch::Box(BLOCKER_SHADE)),
        ("DDL try that failed", KeySwatch::Box(ATTEMPT_FAILED)),
        ("DDL try that succeeded", KeySwatch::Box(ATTEMPT_OK)),
    ];
    let duration_s = timeline_duration_s(report);
    let y_axis = LatencyTimelineAxis::new(report);
    draw_panels_png(
        report,
        path,
        &TimelineLayout::latency(report.strategies.len()),
        format!("{}: latency per second", report.workload),
        &key,
        |strategy, panel| draw_latency_timeline_panel(strategy, panel, duration_s, &y_axis),
    )
}

fn p50_style() -> ShapeStyle {
    LATENCY_P50_LINE.stroke_width(1)
}

fn max_style() -> ShapeStyle {
    LATENCY_P99_LINE.mix(0.5).stroke_width(1)
}

/// Whether a latency can be drawn on a log axis: seconds in which no transaction
/// completed have 0.
fn is_drawable_latency(ms: f64) -> bool {
    ms > 0.0 && ms.is_finite()
}

/// The y range (ms) shared by the panels of `latency-timeline.png`: whole decades around
/// every drawable p50, p99 and max of any strategy (with at least a sixth of a decade
/// under the lowest), then a quarter as many decades again above, for the attempt bars.
struct LatencyTimelineAxis {
    low: f64,
    /// The top of the decades of the data: no labels above it.
    data_top: f64,
    top: f64,
}

impl LatencyTimelineAxis {
    fn new(report: &RunReport) -> LatencyTimelineAxis {
        let values = report
            .strategies
            .iter()
            .flat_map(|strategy| &strategy.seconds)
            .flat_map(|row| [row.lat_p50_ms, row.lat_p99_ms, row.lat_max_ms])
            .filter(|ms| is_drawable_latency(*ms));
        let min_ms = values.clone().fold(f64::INFINITY, f64::min);
        let max_ms = values.fold(0.0, f64::max);
        // 1 ms to 100 ms when there is nothing to draw.
        let (low_decade, high_decade) = if max_ms > 0.0 {
            let low = (min_ms.log10() - 0.15).floor();
            (low, max_ms.log10().ceil().max(low + 1.0))
        } else {
            (0.0, 2.0)
        };
        let top_decade = high_decade + (high_decade - low_decade) * 0.25;
        LatencyTimelineAxis {
            // A hair under the decade, so that rounding does not drop its tick label.
            low: 10_f64.powf(low_decade) * 0.999,
            data_top: 10_f64.powf(high_decade),
            top: 10_f64.powf(top_decade),
        }
    }

    /// The latency `fraction` of the way up the axis (on the log scale).
    fn at(&self, fraction: f64) -> f64 {
        let (low, top) = (self.low.log10(), self.top.log10());
        10_f64.powf(low + (top - low) * fraction)
    }
}

/// One strategy's panel of `latency-timeline.png`: blocker shading, the p50, p99 and max
/// of each second (left out where no transaction completed, which is marked at the
/// bottom), and the DDL attempts as in `timeline.png`.
fn draw_latency_timeline_panel(
    strategy: &StrategyReport,
    panel: &DrawingArea<BitMapBackend, Shift>,
    duration_s: f64,
    y_axis: &LatencyTimelineAxis,
) -> anyhow::Result<()> {
    let (low, top) = (y_axis.low, y_axis.top);
    // The margins and label areas of the TPS part of `timeline.png`.
    let mut chart = ChartBuilder::on(panel)
        .margin_top(6)
        .margin_bottom(4)
        .margin_left(12)
        .margin_right(28)
        .caption(latency_panel_caption(strategy), text_style(16))
        .x_label_area_size(28)
        .y_label_area_size(72)
        .build_cartesian_2d(0.0..duration_s, (low..top).log_scale())?;
    chart
        .configure_mesh()
        .light_line_style(GRID.mix(0.5))
        .bold_line_style(GRID)
        .x_max_light_lines(0)
        .x_labels(16)
        .y_labels(8)
        .x_label_formatter(&|seconds| format!("{seconds:.0} s"))
        .y_label_formatter(&|ms| {
            // The decades above the data hold the attempt bars only.
            if *ms > y_axis.data_top * 1.001 {
                String::new()
            } else {
                format_latency_label(*ms)
            }
        })
        .y_desc("latency (log scale)")
        .label_style(text_style(13))
        .axis_desc_style(text_style(14))
        .draw()?;

    shade_blocker_windows(&mut chart, strategy, low..top)?;

    // The seconds without a latency, as a low bar along the x axis.
    let mark_top = y_axis.at(0.035);
    chart.draw_series(
        strategy
            .seconds
            .iter()
            .filter(|row| !is_drawable_latency(row.lat_p99_ms))
            .map(|row| {
                let start = f64::from(row.second);
                Rectangle::new(
                    [(start, low), (start + 1.0, mark_top)],
                    NO_TRANSACTIONS_MARK.filled(),
                )
            }),
    )?;

    // The max and the p50 under the p99, which matters most.
    for run in positive_step_runs(strategy, |row| row.lat_max_ms) {
        chart.draw_series(line_segments(&run, max_style()))?;
    }
    for run in positive_step_runs(strategy, |row| row.lat_p50_ms) {
        chart.draw_series(line_segments(&run, p50_style()))?;
    }
    for run in positive_step_runs(strategy, |row| row.lat_p99_ms) {
        chart.draw_series(line_segments(&run, LATENCY_P99_LINE.stroke_width(2)))?;
    }

    if !strategy
        .seconds
        .iter()
        .any(|row| is_drawable_latency(row.lat_p99_ms))
    {
        let (width, height) = panel.dim_in_pixel();
        panel.draw_text(
            "no transaction completed",
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

/// "naive: worst second p99 9.10 s (at 15 s); whole run p50 1.10 ms, p99 4.00 ms", or
/// just "naive" when no transaction completed (the panel says so in its middle).
fn latency_panel_caption(strategy: &StrategyReport) -> String {
    let worst = strategy
        .seconds
        .iter()
        .filter(|row| is_drawable_latency(row.lat_p99_ms))
        .max_by(|a, b| a.lat_p99_ms.total_cmp(&b.lat_p99_ms));
    match worst {
        Some(row) => format!(
            "{}: worst second p99 {} (at {} s); whole run p50 {}, p99 {}",
            strategy.strategy,
            format_latency(row.lat_p99_ms),
            row.second,
            format_latency(strategy.summary.lat_p50_ms),
            format_latency(strategy.summary.lat_p99_ms),
        ),
        None => strategy.strategy.clone(),
    }
}

// ---------------------------------------------------------------------------------------
// latency.png

fn draw_latency_png(report: &RunReport, path: &Path) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, LATENCY_SIZE_PX).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!("{}: latency by percentile", report.workload);

    // A strategy keeps its colour whether or not the ones before it have data.
    let curves: Vec<LatencyCurve> = report
        .strategies
        .iter()
        .enumerate()
        .map(|(index, strategy)| LatencyCurve {
            strategy,
            colour: STRATEGY_COLOURS[index % STRATEGY_COLOURS.len()],
            points: percentile_points(strategy),
        })
        .filter(|curve| !curve.points.is_empty())
        .collect();

    if curves.is_empty() {
        root.draw_text(
            &title,
            &text_style(20).pos(Pos::new(HPos::Center, VPos::Top)),
            (LATENCY_SIZE_PX.0 as i32 / 2, 12),
        )?;
        root.draw_text(
            "no transactions: nothing to draw",
            &text_style(24).pos(Pos::new(HPos::Center, VPos::Center)),
            (LATENCY_SIZE_PX.0 as i32 / 2, LATENCY_SIZE_PX.1 as i32 / 2),
        )?;
        root.present()?;
        return Ok(());
    }

    let all_ms = curves
        .iter()
        .flat_map(|curve| curve.points.iter().map(|point| point.1));
    let min_ms = all_ms.clone().fold(f64::INFINITY, f64::min);
    let max_ms = all_ms.fold(0.0, f64::max);
    // Whole decades, so the log axis always has labelled ticks.
    // (A hair under the decade, so that rounding does not drop its tick label.)
    let y_low = 10_f64.powf(min_ms.log10().floor()) * 0.999;
    let y_high = 10_f64
        .powf((max_ms * 1.05).log10().ceil())
        .max(y_low * 10.0);

    let mut chart = ChartBuilder::on(&root)
        .margin(16)
        .margin_right(40)
        .caption(&title, text_style(20))
        .x_label_area_size(52)
        .y_label_area_size(90)
        .build_cartesian_2d(PercentileAxis, (y_low..y_high).log_scale())?;
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

    for curve in &curves {
        let (strategy, colour) = (curve.strategy, curve.colour);
        chart
            .draw_series(line_segments(&curve.points, colour.stroke_width(3)))?
            .label(format!(
                "{}: p50 {}, p99 {}, p99.9 {}, max {}",
                strategy.strategy,
                format_latency(strategy.summary.lat_p50_ms),
                format_latency(strategy.summary.lat_p99_ms),
                format_latency(strategy.summary.lat_p999_ms),
                format_latency(strategy.summary.lat_max_ms)
            ))
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
    root.present()?;
    Ok(())
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

/// A latency tick label: "0.1 ms", "10 ms", "1 s", "10 s".
fn format_latency_label(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{} s", trim_number(ms / 1000.0, 3))
    } else {
        format!("{} ms", trim_number(ms, 3))
    }
}

/// A latency for people: "0.85 ms", "3.4 ms", "420 ms", "9.62 s".
fn format_latency(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

/// `value` with at most `decimals` decimals and no trailing zeros: 99.9, 1, 0.05.
fn trim_number(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::sample::reference_report;
    use crate::metrics::LatencyDistribution;

    /// Width, height and the number of distinct colours of a PNG file.
    fn decode_png(path: &Path) -> (u32, u32, usize) {
        let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
        let mut reader = decoder.read_info().unwrap();
        let mut buffer = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buffer).unwrap();
        let bytes_per_pixel = info.line_size / info.width as usize;
        let mut colours = std::collections::HashSet::new();
        for pixel in buffer[..info.buffer_size()].chunks(bytes_per_pixel) {
            colours.insert(pixel.to_vec());
        }
        (info.width, info.height, colours.len())
    }

    /// Where the charts go: /tmp/plot-check/ when STALLBENCH_PLOT_CHECK is set, to look at
    /// them; a temporary folder otherwise.
    fn output_dir() -> (Option<tempfile::TempDir>, std::path::PathBuf) {
        if std::env::var_os("STALLBENCH_PLOT_CHECK").is_some() {
            let dir = std::path::PathBuf::from("/tmp/plot-check");
            std::fs::create_dir_all(&dir).unwrap();
            (None, dir)
        } else {
            let temp = tempfile::tempdir().unwrap();
            let dir = temp.path().to_path_buf();
            (Some(temp), dir)
        }
    }

    /// Width, height and the RGB colour of every pixel (row by row) of a PNG file.
    fn decode_rgb(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
        let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
        let mut reader = decoder.read_info().unwrap();
        let mut buffer = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buffer).unwrap();
        let bytes_per_pixel = info.line_size / info.width as usize;
        let pixels = buffer[..info.buffer_size()]
            .chunks(bytes_per_pixel)
            .map(|pixel| [pixel[0], pixel[1], pixel[2]])
            .collect();
        (info.width, info.height, pixels)
    }

    #[test]
    fn timeline_size_is_300_plus_70_per_panel_plus_80() {
        assert_eq!(timeline_size(1), (1200, 450));
        assert_eq!(timeline_size(2), (1200, 820));
        assert_eq!(timeline_size(3), (1200, 1190));
        assert_eq!(timeline_size(0), (1200, 450));
    }

    #[test]
    fn more_than_three_strategies_make_a_grid_of_two_columns() {
        // 370 px per row of two panels; 80 px of header, 24 more per title line past 2.
        assert_eq!(timeline_size(4), (1800, 2 * 370 + 80));
        assert_eq!(timeline_size(5), (1800, 3 * 370 + 80));
        assert_eq!(timeline_size(6), (1800, 3 * 370 + 80 + 24));
        assert_eq!(timeline_size(9), (1800, 5 * 370 + 80 + 48));
        assert_eq!(timeline_size(9), (1800, 1978));
        assert_eq!(timeline_size(12), (1800, 6 * 370 + 80 + 72));

        // Left to right, then top to bottom.
        let layout = TimelineLayout::new(9);
        assert_eq!(layout.panel_origin_px(0), (0, 128));
        assert_eq!(layout.panel_origin_px(1), (900, 128));
        assert_eq!(layout.panel_origin_px(2), (0, 128 + 370));
        assert_eq!(layout.panel_origin_px(8), (0, 128 + 4 * 370));
        // Stacked: one below the other, the full width.
        let layout = TimelineLayout::new(3);
        assert_eq!(layout.panel_origin_px(2), (0, 80 + 2 * 370));
        assert_eq!(layout.column_width_px, 1200);
    }

    /// The sample report with one strategy per name, taking turns at copying the
    /// sample's `naive` and `retry`.
    fn report_with_strategies(names: &[&str]) -> RunReport {
        let sample = reference_report();
        let mut report = RunReport {
            workload: sample.workload.clone(),
            strategies: Vec::new(),
        };
        for (index, name) in names.iter().enumerate() {
            let mut strategy = sample.strategies[index % 2].clone();
            strategy.strategy = name.to_string();
            strategy.summary.strategy = name.to_string();
            report.strategies.push(strategy);
        }
        report
    }

    /// The 9 strategies of `compare --strategies all`, in run order.
    const ALL_STRATEGIES: &[&str] = crate::strategy::PRESET_NAMES;

    #[test]
    fn every_panel_of_a_grid_has_its_tps_line() {
        let (_keep, dir) = output_dir();
        let report = report_with_strategies(ALL_STRATEGIES);
        let path = dir.join("timeline-nine.png");
        draw_timeline(&report, &path).unwrap();
        let (width, height, pixels) = decode_rgb(&path);
        assert_eq!((width, height), timeline_size(9));

        let line = [TPS_LINE.0, TPS_LINE.1, TPS_LINE.2];
        let layout = TimelineLayout::new(9);
        let count_line_pixels = |index: u32| {
            let (left, top) = layout.panel_origin_px(index);
            (top..top + TIMELINE_PANEL_HEIGHT_PX)
                .flat_map(|y| {
                    (left..left + layout.column_width_px).map(move |x| (y * width + x) as usize)
                })
                .filter(|&pixel| pixels[pixel] == line)
                .count()
        };
        for index in 0..9 {
            let count = count_line_pixels(index);
            assert!(
                count > 500,
                "panel {index}: only {count} pixels of the TPS line"
            );
        }
        // The cell right of the last panel stays empty.
        assert_eq!(count_line_pixels(9), 0);
    }

    #[test]
    fn the_title_of_nine_strategies_wraps_between_them() {
        register_embedded_font().unwrap();
        let mut report = report_with_strategies(ALL_STRATEGIES);
        report.workload = "add-column-with-a-default".to_string();
        // The longest headlines: double-digit stalls and tries, and a failed DDL.
        for strategy in &mut report.strategies {
            strategy.summary.zero_tps_seconds = 12;
            strategy.summary.ddl_attempts = 12;
            strategy.summary.ddl_outcome = "gave_up".to_string();
        }
        let layout = TimelineLayout::new(9);
        let lines = timeline_title(&report, report.workload.clone(), &layout);
        assert!(lines.len() <= layout.title_lines as usize, "{lines:?}");
        let joined = lines.join(" | ");
        assert!(!joined.contains('…'), "{lines:?}");
        for strategy in &report.strategies {
            assert!(joined.contains(&headline(strategy)), "{lines:?}");
        }
        let title_style = text_style(TITLE_FONT_PX);
        for line in &lines {
            let (line_width, _) = title_style.font.box_size(line).unwrap();
            assert!(line_width <= 1800 - 40, "{line_width} px: {line}");
        }
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
    fn the_lock_strip_is_labelled_with_whole_numbers() {
        assert_eq!(WaitersAxis::new(1).ticks(), vec![0, 1]);
        assert_eq!(WaitersAxis::new(5).ticks(), vec![0, 5]);
        assert_eq!(WaitersAxis::new(100).ticks(), vec![0, 50, 100]);
        assert_eq!(WaitersAxis::format(&50.0), "50");
        assert!(WaitersAxis::new(5).range().end > 5.0);
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
    fn latency_png_has_the_expected_size_and_is_not_blank() {
        let (_keep, dir) = output_dir();
        let path = dir.join("latency.png");
        draw_latency(&reference_report(), &path).unwrap();
        let (width, height, colours) = decode_png(&path);
        assert_eq!((width, height), LATENCY_SIZE_PX);
        assert!(colours > 2, "only {colours} colours");
    }

    #[test]
    fn latency_timeline_size_is_300_per_panel_plus_80() {
        assert_eq!(latency_timeline_size(1), (1200, 380));
        assert_eq!(latency_timeline_size(2), (1200, 680));
        assert_eq!(latency_timeline_size(4), (1800, 2 * 300 + 80));
        assert_eq!(latency_timeline_size(9), (1800, 5 * 300 + 80 + 48));
        let layout = TimelineLayout::latency(9);
        assert_eq!(layout.panel_origin_px(3), (900, 128 + 300));
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
        // Nine strategies: the grid of timeline.png, and a title that is not cut.
        let nine = dir.join("latency-timeline-nine.png");
        draw_latency_timeline(&report_with_strategies(ALL_STRATEGIES), &nine).unwrap();
        let (width, height, colours) = decode_png(&nine);
        assert_eq!((width, height), latency_timeline_size(9));
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

        let axis = LatencyTimelineAxis::new(&reference_report());
        assert!(axis.low <= 1.1 && axis.low > 0.0, "{}", axis.low);
        assert!(axis.at(0.8) >= 9_700.0, "{}", axis.at(0.8));
        assert!((axis.at(0.0) - axis.low).abs() < 1e-9);
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
        assert!(
            latency_panel_caption(&report.strategies[1]).starts_with("retry: worst second p99")
        );

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
        };
        let path = dir.join("latency-timeline-nothing.png");
        draw_latency_timeline(&nothing, &path).unwrap();
        assert_eq!(decode_png(&path).1, latency_timeline_size(0).1);
    }

    #[test]
    fn charts_of_a_report_read_back_from_files_draw() {
        let (_keep, dir) = output_dir();
        let results = dir.join("read-back");
        crate::export::write_all(&reference_report(), &results).unwrap();
        let report = crate::export::read_report(&results).unwrap();
        let timeline = dir.join("timeline-read-back.png");
        let latency = dir.join("latency-read-back.png");
        draw_timeline(&report, &timeline).unwrap();
        draw_latency(&report, &latency).unwrap();
        assert_eq!(decode_png(&timeline).0, 1200);
        assert!(decode_png(&latency).2 > 2);
        // Read back, the blocker window comes from the blocker_active seconds.
        let latency_timeline = dir.join("latency-timeline-read-back.png");
        draw_latency_timeline(&report, &latency_timeline).unwrap();
        assert_eq!(
            {
                let (w, h, _) = decode_png(&latency_timeline);
                (w, h)
            },
            latency_timeline_size(2)
        );
    }

    #[test]
    fn a_report_without_transactions_still_draws() {
        let (_keep, dir) = output_dir();
        let mut report = reference_report();
        for strategy in &mut report.strategies {
            strategy.latency = LatencyDistribution {
                histogram: None,
                percentiles: Vec::new(),
            };
            for row in &mut strategy.seconds {
                row.tps = 0;
            }
        }
        let latency = dir.join("latency-empty.png");
        draw_latency(&report, &latency).unwrap();
        let (width, height, colours) = decode_png(&latency);
        assert_eq!((width, height), LATENCY_SIZE_PX);
        assert!(colours > 2, "the note is missing");
        let timeline = dir.join("timeline-empty.png");
        draw_timeline(&report, &timeline).unwrap();
        assert_eq!(decode_png(&timeline).1, timeline_size(2).1);

        let nothing = RunReport {
            workload: "empty".to_string(),
            strategies: Vec::new(),
        };
        let path = dir.join("timeline-nothing.png");
        draw_timeline(&nothing, &path).unwrap();
        assert_eq!(decode_png(&path).1, timeline_size(0).1);
    }

    #[test]
    fn many_strategies_over_a_long_run_draw() {
        let (_keep, dir) = output_dir();
        let sample = reference_report();
        let mut report = RunReport {
            workload: "add-column-with-a-rather-long-workload-name".to_string(),
            strategies: Vec::new(),
        };
        for (index, name) in [
            "naive",
            "retry",
            "lock-timeout-with-backoff",
            "load-only",
            "x",
        ]
        .iter()
        .enumerate()
        {
            let mut strategy = sample.strategies[index % 2].clone();
            strategy.strategy = name.to_string();
            strategy.summary.strategy = name.to_string();
            let mut seconds = Vec::new();
            for round in 0..5_u32 {
                for row in &strategy.seconds {
                    let mut row = row.clone();
                    row.second += round * 25;
                    seconds.push(row);
                }
            }
            strategy.seconds = seconds;
            if *name == "load-only" {
                strategy.attempts.clear();
                strategy.summary.ddl_attempts = 0;
                strategy.blocker = None;
            }
            report.strategies.push(strategy);
        }
        let timeline = dir.join("timeline-five.png");
        draw_timeline(&report, &timeline).unwrap();
        assert_eq!(
            {
                let (w, h, _) = decode_png(&timeline);
                (w, h)
            },
            timeline_size(5)
        );
        let latency = dir.join("latency-five.png");
        draw_latency(&report, &latency).unwrap();
        assert!(decode_png(&latency).2 > 2);
    }

    #[test]
    fn one_strategy_without_data_is_skipped() {
        let (_keep, dir) = output_dir();
        let mut report = reference_report();
        report.strategies[0].latency.percentiles.clear();
        let path = dir.join("latency-one.png");
        draw_latency(&report, &path).unwrap();
        assert!(decode_png(&path).2 > 2);
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

    #[test]
    fn headlines_name_the_stall_and_the_ddl() {
        let report = reference_report();
        assert_eq!(
            headline(&report.strategies[0]),
            "naive: 9 s at 0 tps, DDL waited 9.7 s"
        );
        assert_eq!(
            headline(&report.strategies[1]),
            "retry: 0 s at 0 tps, 5 tries"
        );
    }

    #[test]
    fn long_titles_wrap_and_are_cut_after_a_word() {
        let parts: Vec<String> = ["aaaa", "bbbb", "cccc", "dddd", "eeee"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let fits = |text: &str| text.chars().count() <= 11;
        assert_eq!(wrap_parts(&parts[..2], " | ", 2, fits), vec!["aaaa | bbbb"]);
        assert_eq!(
            wrap_parts(&parts[..4], " | ", 2, fits),
            vec!["aaaa | bbbb", "cccc | dddd"]
        );
        assert_eq!(
            wrap_parts(&parts, " | ", 2, fits),
            vec!["aaaa | bbbb".to_string(), "cccc …".to_string()]
        );
        // A headline too long for what is left is cut after a word, with no dangling
        // comma or separator.
        let parts: Vec<String> = ["naive: 9 s at 0 tps", "retry: 0 s at 0 tps, 5 tries"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let fits = |text: &str| text.chars().count() <= 40;
        assert_eq!(
            wrap_parts(&parts, " | ", 1, fits),
            vec!["naive: 9 s at 0 tps | retry: 0 s at 0 …"]
        );
        let fits = |text: &str| text.chars().count() <= 25;
        assert_eq!(
            wrap_parts(&parts, " | ", 1, fits),
            vec!["naive: 9 s at 0 tps …"]
        );
        let fits = |text: &str| text.chars().count() <= 3;
        assert_eq!(wrap_parts(&parts, " | ", 1, fits), vec!["…"]);
    }

    #[test]
    fn blocker_falls_back_to_the_active_seconds() {
        let mut strategy = reference_report().strategies.remove(0);
        assert_eq!(blocker_windows_s(&strategy), vec![4.0..16.0]);
        strategy.blocker = None;
        assert_eq!(blocker_windows_s(&strategy), vec![4.0..16.0]);
    }
}
