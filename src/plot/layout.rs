//! What the charts share: the embedded font and text styles, the common colours, the
//! frame of the two per-second charts (`timeline.png` and `latency-timeline.png` lay
//! their strategy panels out the same way, under the same kind of title and key).
//! Latencies and numbers are written by `export::format`, as in the tables.
//!
//! Text is drawn with DejaVu Sans embedded in the binary, so the charts render the
//! same on machines with no fonts installed.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::bail;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::metrics::{DdlOutcome, RunReport, StrategyReport};

/// DejaVu Sans, the only font the charts use.
static FONT_BYTES: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

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
/// Height of the latency chart of one strategy panel of `latency-timeline.png` in
/// pixels (it has no lock strip; widths, grid and header are those of `timeline.png`).
pub const LATENCY_TIMELINE_PANEL_HEIGHT_PX: u32 = 300;
/// Height of the failed transactions strip in pixels: under the TPS part of each panel
/// of `timeline.png` (above the lock strip) and under the latency chart of each panel of
/// `latency-timeline.png`, drawn only when some strategy has a failed transaction.
pub const FAILURES_STRIP_HEIGHT_PX: u32 = 70;

/// Shading of the blocker's window, in `timeline.png` and `latency-timeline.png`.
pub(super) const BLOCKER_SHADE: RGBColor = RGBColor(200, 200, 200);
/// A DDL try that failed (lock timeout, error, gave up).
pub(super) const ATTEMPT_FAILED: RGBColor = RGBColor(214, 39, 40);
/// A DDL try that succeeded.
pub(super) const ATTEMPT_OK: RGBColor = RGBColor(44, 160, 44);
/// How opaque a DDL try's bar is while the try waits for its lock (solid: holds it).
pub(super) const WAITING_ALPHA: f64 = 0.35;
/// Colours of the strategies' lines in `latency.png` and `sweep.png`, in run order (then repeating).
pub(super) const STRATEGY_COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];
/// All text.
const TEXT: RGBColor = RGBColor(30, 30, 30);
/// Grid lines.
pub(super) const GRID: RGBColor = RGBColor(225, 225, 225);

/// Width and height in pixels of `timeline.png` for `strategies` panels (a report
/// without strategies gets one, empty, panel). A panel is 370 px high (300 TPS + 70 lock
/// waiters); the header is 80 px for a two-line title, plus 24 px per extra title line.
///
/// - 1 to 3 strategies, stacked: 1200 x (370 per panel + 80).
/// - 4 or more, a grid of 2 columns of 900 px: 1800 x (370 per row + 80 + 24 x extra
///   title lines), with `ceil(n / 2)` rows and `ceil((n + 1) / 3)` title lines (at
///   least 2): 4 strategies give 1800 x 820, 9 give 1800 x 1978.
///
/// That is the size when no transaction failed; see `timeline_size_with_failures`.
pub fn timeline_size(strategies: usize) -> (u32, u32) {
    TimelineLayout::new(strategies).size()
}

/// Width and height in pixels of `timeline.png` for `strategies` panels when some
/// strategy has a failed transaction: each panel has the failed transactions strip too,
/// 440 px (300 TPS + 70 failed + 70 lock waiters), so 2 strategies give 1200 x 960.
#[cfg(test)]
pub fn timeline_size_with_failures(strategies: usize) -> (u32, u32) {
    TimelineLayout::new(strategies)
        .with_failures_strip(true)
        .size()
}

/// Width and height in pixels of `latency-timeline.png` for `strategies` panels: the
/// layout of [`timeline_size`] with panels of 300 px (no lock strip), so 1 to 3
/// strategies give 1200 x (300 per panel + 80) and 4 give 1800 x 680.
///
/// That is the size when no transaction failed; see
/// [`latency_timeline_size_with_failures`].
#[cfg(test)]
pub fn latency_timeline_size(strategies: usize) -> (u32, u32) {
    TimelineLayout::latency(strategies).size()
}

/// Width and height in pixels of `latency-timeline.png` for `strategies` panels when
/// some strategy has a failed transaction: panels of 370 px (300 latency + 70 failed),
/// so 2 strategies give 1200 x 820.
#[cfg(test)]
pub fn latency_timeline_size_with_failures(strategies: usize) -> (u32, u32) {
    TimelineLayout::latency(strategies)
        .with_failures_strip(true)
        .size()
}

/// Where the parts of `timeline.png` (and `latency-timeline.png`) go for a number of
/// strategies: panels stacked in one column of 1200 px up to [`TIMELINE_MAX_STACKED`]
/// strategies, a grid of [`TIMELINE_GRID_COLUMNS`] columns of 900 px beyond, filled left
/// to right, then top to bottom, in run order. The header spans the full width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TimelineLayout {
    /// Panels (at least one: a report without strategies gets an empty one).
    panels: u32,
    columns: u32,
    pub(super) column_width_px: u32,
    /// Height of one whole panel.
    panel_height_px: u32,
    /// Lines the title may take before it is cut.
    title_lines: u32,
}

impl TimelineLayout {
    /// The layout of `timeline.png`: panels of a TPS part and a lock strip.
    pub(super) fn new(strategies: usize) -> TimelineLayout {
        TimelineLayout::with_panel_height(strategies, timeline_panel_height_px())
    }

    /// The layout of `latency-timeline.png`: the same, with panels of one chart only.
    pub(super) fn latency(strategies: usize) -> TimelineLayout {
        TimelineLayout::with_panel_height(strategies, LATENCY_TIMELINE_PANEL_HEIGHT_PX)
    }

    /// The same layout with, when `drawn`, the failed transactions strip in every panel
    /// ([`FAILURES_STRIP_HEIGHT_PX`] more per panel).
    pub(super) fn with_failures_strip(self, drawn: bool) -> TimelineLayout {
        if !drawn {
            return self;
        }
        TimelineLayout {
            panel_height_px: self.panel_height_px + FAILURES_STRIP_HEIGHT_PX,
            ..self
        }
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
    pub(super) fn panel_origin_px(&self, index: u32) -> (u32, u32) {
        let column = index % self.columns;
        let row = index / self.columns;
        (
            self.column_width_px * column,
            self.header_height_px() + self.panel_height_px * row,
        )
    }

    /// The area of panel `index` (run order); in `timeline.png`, its TPS part, its
    /// failed transactions strip (if drawn) and its lock strip.
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

/// Registers the embedded font with plotters once per process.
pub(super) fn register_embedded_font() -> anyhow::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let registered = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok()
    });
    if !registered {
        bail!("the embedded font assets/fonts/DejaVuSans.ttf could not be loaded");
    }
    Ok(())
}

pub(super) fn text_style(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).color(&TEXT)
}

/// The frame of `timeline.png` and `latency-timeline.png`: a white image of the layout's
/// size, the header (the title, starting with `title_start` and followed by every
/// strategy's headline, and `key` under it), then `draw_panel` on each strategy's panel
/// area in run order, or a note when the report has no strategies.
pub(super) fn draw_panels_png(
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

    // 58 in the 80 px header of a two-line title.
    draw_key(header, items, title_top + line_px * shown_lines + 2)
}

/// The key, centred on one line whose top is at pixel row `y`: a swatch and a label per
/// item.
fn draw_key(
    header: &DrawingArea<BitMapBackend, Shift>,
    items: &[(&str, KeySwatch)],
    y: i32,
) -> anyhow::Result<()> {
    let (width, _) = header.dim_in_pixel();
    let key_style = text_style(14);
    let swatch_px = 14;
    let label_widths = key_label_widths_px(items);
    let mut x = (width as i32 - key_width_px(items)) / 2;
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
            KeySwatch::WaitThenHold(colour) => {
                header.draw(&Rectangle::new(
                    [(x, y), (x + swatch_px / 2, y + swatch_px)],
                    colour.mix(WAITING_ALPHA).filled(),
                ))?;
                header.draw(&Rectangle::new(
                    [(x + swatch_px / 2, y), (x + swatch_px, y + swatch_px)],
                    colour.filled(),
                ))?;
            }
        }
        header.draw_text(
            label,
            &key_style.pos(Pos::new(HPos::Left, VPos::Center)),
            (x + swatch_px + 6, y + swatch_px / 2),
        )?;
        x += swatch_px + 6 + label_width + KEY_GAP_PX;
    }
    Ok(())
}

/// Pixels between one key entry and the next.
const KEY_GAP_PX: i32 = 28;

/// The width of each key label, in pixels.
fn key_label_widths_px(items: &[(&str, KeySwatch)]) -> Vec<i32> {
    let key_style = text_style(14);
    items
        .iter()
        .map(|(label, _)| key_style.font.box_size(label).map_or(0, |(w, _)| w as i32))
        .collect()
}

/// The width of the key on its one line, in pixels: swatches, labels and gaps.
pub(super) fn key_width_px(items: &[(&str, KeySwatch)]) -> i32 {
    let swatches_px = 14 + 6;
    key_label_widths_px(items)
        .iter()
        .map(|width| swatches_px + width)
        .sum::<i32>()
        + KEY_GAP_PX * (items.len() as i32 - 1)
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
pub(super) enum KeySwatch {
    Line(RGBColor),
    /// A line drawn in its own style (thinner or fainter than a [`KeySwatch::Line`]).
    ThinLine(ShapeStyle),
    Box(RGBColor),
    /// Half light (a DDL try waiting for its lock), half solid (holding it).
    WaitThenHold(RGBColor),
}

/// "naive: 9 s at 0 tps, DDL waited 9.4 s, held 0.3 s" or "retry: 0 s at 0 tps, 5 tries".
pub(super) fn headline(strategy: &StrategyReport) -> String {
    let s = &strategy.summary;
    let mut text = format!("{}: {} s at 0 tps", strategy.strategy, s.zero_tps_seconds);
    if let Some(replica_zero_s) = s.replica_zero_tps_seconds {
        text.push_str(&format!(" (primary), {replica_zero_s} s (replica)"));
    }
    let lock = strategy.attempts.last().and_then(|attempt| attempt.lock);
    match s.ddl_attempts {
        0 => {}
        1 if s.ddl_outcome == DdlOutcome::Ok => match lock {
            Some(lock) => text.push_str(&format!(
                ", DDL waited {:.1} s, held {:.1} s",
                lock.wait_ms / 1000.0,
                lock.held_ms / 1000.0
            )),
            None => text.push_str(&format!(", DDL took {:.1} s", s.ddl_last_wait_ms / 1000.0)),
        },
        1 => {
            text.push_str(&format!(
                ", DDL failed after {:.1} s",
                s.ddl_last_wait_ms / 1000.0
            ));
        }
        tries if s.ddl_outcome == DdlOutcome::Ok => text.push_str(&format!(", {tries} tries")),
        tries => text.push_str(&format!(", {tries} tries, {}", s.ddl_outcome)),
    }
    if let Some(seconds) = s.replica_replay_waiting_s.filter(|seconds| *seconds > 0) {
        let lag_s = s.replica_max_lag_s.unwrap_or(0.0);
        text.push_str(&format!(
            ", replica replay waited {seconds} s (lag up to {lag_s:.1} s)"
        ));
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

/// A polyline as separate two-point segments. Plotters draws the joints of a thick
/// `LineSeries` with visible dents; segments drawn one by one do not have them.
pub(super) fn line_segments(
    points: &[(f64, f64)],
    style: ShapeStyle,
) -> Vec<PathElement<(f64, f64)>> {
    points
        .windows(2)
        .map(|pair| PathElement::new(vec![pair[0], pair[1]], style))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::test_support::{ALL_STRATEGIES, report_with_strategies};
    use crate::testing::reference_report;

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
    fn the_failures_strip_adds_70_px_to_every_panel() {
        assert_eq!(timeline_size_with_failures(1), (1200, 440 + 80));
        assert_eq!(timeline_size_with_failures(2), (1200, 960));
        assert_eq!(timeline_size_with_failures(9), (1800, 5 * 440 + 80 + 48));
        assert_eq!(latency_timeline_size_with_failures(2), (1200, 820));
        assert_eq!(latency_timeline_size_with_failures(4), (1800, 2 * 370 + 80));
        let layout = TimelineLayout::new(9).with_failures_strip(true);
        assert_eq!(layout.panel_origin_px(2), (0, 128 + 440));
        assert_eq!(
            TimelineLayout::new(9).with_failures_strip(false),
            TimelineLayout::new(9)
        );
    }

    #[test]
    fn the_title_of_every_preset_wraps_between_them() {
        register_embedded_font().unwrap();
        let mut report = report_with_strategies(ALL_STRATEGIES);
        report.workload = "add-column-with-a-default".to_string();
        // The longest headlines: double-digit stalls and tries, and a failed DDL.
        for strategy in &mut report.strategies {
            strategy.summary.zero_tps_seconds = 12;
            strategy.summary.ddl_attempts = 12;
            strategy.summary.ddl_outcome = DdlOutcome::GaveUp;
        }
        let layout = TimelineLayout::new(report.strategies.len());
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
    fn headlines_name_the_stall_and_the_ddl() {
        let report = reference_report();
        assert_eq!(
            headline(&report.strategies[0]),
            "naive: 9 s at 0 tps, DDL waited 9.4 s, held 0.3 s"
        );
        let mut unobserved = report.strategies[0].clone();
        unobserved.attempts[0].lock = None;
        assert_eq!(headline(&unobserved), "naive: 9 s at 0 tps, DDL took 9.7 s");
        assert_eq!(
            headline(&report.strategies[1]),
            "retry: 0 s at 0 tps, 5 tries"
        );
        let mut on_replica = unobserved;
        on_replica.summary.replica_replay_waiting_s = Some(11);
        on_replica.summary.replica_max_lag_s = Some(10.02);
        assert_eq!(
            headline(&on_replica),
            "naive: 9 s at 0 tps, DDL took 9.7 s, replica replay waited 11 s (lag up to 10.0 s)"
        );
        on_replica.summary.zero_tps_seconds = 0;
        on_replica.summary.replica_zero_tps_seconds = Some(9);
        assert!(
            headline(&on_replica).starts_with("naive: 0 s at 0 tps (primary), 9 s (replica), "),
            "{}",
            headline(&on_replica)
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
}
