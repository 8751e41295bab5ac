//! `sweep.png`: what a sweep's values did, one line per strategy: the
//! longest stall (upper panel) and when the migration was done (lower
//! panel) against the swept value, on one x axis, logarithmic for durations.
//! With repeats each point is the median and a bar spans the lowest to the
//! highest repeat. A value at which the migration did not finish has no
//! point in the lower panel, but a "not done" note, and the line breaks there.

use std::path::Path;

use anyhow::Context;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::layout::{GRID, STRATEGY_COLOURS, register_embedded_font, text_style};
use crate::config::{Sweep, sweep_x_value};
use crate::export::format::trim_number;
use crate::export::sweep::SweepRecord;
use crate::metrics::spread::Spread;

/// Width and height of `sweep.png` in pixels.
pub const SWEEP_SIZE_PX: (u32, u32) = (1200, 800);

/// Draws `sweep.png` to `path` from the rows of `sweep.csv`.
pub fn draw_sweep(records: &[SweepRecord], sweep: &Sweep, path: &Path) -> anyhow::Result<()> {
    register_embedded_font()?;
    draw_sweep_png(records, sweep, path).with_context(|| format!("drawing {}", path.display()))
}

/// Where each value sits on the x axis: log10 of a duration in seconds, the
/// number itself, or (when some value is not a number) its index.
struct XAxis {
    /// (position, label) of each value, in sweep order.
    ticks: Vec<(f64, String)>,
}

impl XAxis {
    fn new(sweep: &Sweep) -> XAxis {
        let numbers: Option<Vec<f64>> = sweep
            .values
            .iter()
            .map(|value| sweep_x_value(sweep.is_duration(), value))
            .collect();
        let positions: Vec<f64> = match numbers {
            Some(numbers) if sweep.is_duration() && numbers.iter().all(|n| *n > 0.0) => {
                numbers.iter().map(|n| n.log10()).collect()
            }
            Some(numbers) => numbers,
            None => (0..sweep.values.len()).map(|index| index as f64).collect(),
        };
        XAxis {
            ticks: positions
                .into_iter()
                .zip(sweep.values.iter().cloned())
                .collect(),
        }
    }

    /// The position of `value`.
    fn of(&self, value: &str) -> Option<f64> {
        self.ticks
            .iter()
            .find(|(_, label)| label == value)
            .map(|(position, _)| *position)
    }

    /// The range drawn: the positions with a margin of a tenth of their span each side.
    fn range(&self) -> std::ops::Range<f64> {
        let low = self.ticks.iter().map(|t| t.0).fold(f64::INFINITY, f64::min);
        let high = self
            .ticks
            .iter()
            .map(|t| t.0)
            .fold(f64::NEG_INFINITY, f64::max);
        if !low.is_finite() {
            return 0.0..1.0;
        }
        let margin = ((high - low) * 0.15).max(0.1);
        low - margin..high + margin
    }
}

fn draw_sweep_png(records: &[SweepRecord], sweep: &Sweep, path: &Path) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, SWEEP_SIZE_PX).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, panels) = root.split_vertically(40);
    title.draw_text(
        &format!(
            "sweep of {}: longest stall and migration done, per value{}",
            sweep.name(),
            if sweep.is_duration() {
                " (log scale)"
            } else {
                ""
            }
        ),
        &text_style(20).pos(Pos::new(HPos::Center, VPos::Center)),
        (SWEEP_SIZE_PX.0 as i32 / 2, 20),
    )?;
    let (upper, lower) = panels.split_vertically((SWEEP_SIZE_PX.1 - 40) / 2);
    let axis = XAxis::new(sweep);
    let strategies = strategies_of(records);
    draw_panel(
        &upper,
        &axis,
        &strategies,
        records,
        "longest stall, s",
        |record| Some(record.stall_spread()),
    )?;
    draw_panel(
        &lower,
        &axis,
        &strategies,
        records,
        "migration done at, s",
        SweepRecord::done_spread,
    )?;
    root.present()?;
    Ok(())
}

/// The strategies of the records, in the order they first appear.
fn strategies_of(records: &[SweepRecord]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for record in records {
        if !names.contains(&record.strategy) {
            names.push(record.strategy.clone());
        }
    }
    names
}

/// One panel: `figure` of each strategy against the value, a line through
/// the medians, a bar over each value's range, the values labelled below.
fn draw_panel(
    area: &DrawingArea<BitMapBackend, Shift>,
    axis: &XAxis,
    strategies: &[String],
    records: &[SweepRecord],
    y_desc: &str,
    figure: impl Fn(&SweepRecord) -> Option<Spread>,
) -> anyhow::Result<()> {
    let y_top = records
        .iter()
        .filter_map(&figure)
        .map(|spread| spread.max)
        .fold(1.0, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .margin_right(40)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(axis.range(), 0.0..y_top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(GRID)
        .y_labels(6)
        .y_label_formatter(&|value| trim_number(*value, 1))
        .y_desc(y_desc)
        .label_style(text_style(13))
        .axis_desc_style(text_style(14))
        .draw()?;
    for (index, strategy) in strategies.iter().enumerate() {
        let colour = STRATEGY_COLOURS[index % STRATEGY_COLOURS.len()];
        let values = strategy_values(axis, records, strategy, &figure);
        let points: Vec<(f64, Spread)> = values
            .iter()
            .filter_map(|(x, spread)| Some((*x, (*spread)?)))
            .collect();
        let medians: Vec<(f64, f64)> = points.iter().map(|(x, s)| (*x, s.median)).collect();
        // A line only between neighbouring values that both have the figure.
        let joined: Vec<PathElement<(f64, f64)>> = values
            .windows(2)
            .filter_map(|pair| {
                let (a, b) = (pair[0].1?, pair[1].1?);
                Some(PathElement::new(
                    vec![(pair[0].0, a.median), (pair[1].0, b.median)],
                    colour.stroke_width(2),
                ))
            })
            .collect();
        chart
            .draw_series(joined)?
            .label(strategy.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(3))
            });
        let missing = values.iter().filter(|(_, spread)| spread.is_none());
        chart.draw_series(missing.map(|(x, _)| {
            Text::new(
                "not done",
                (*x, y_top * (0.95 - 0.06 * index as f64)),
                text_style(12)
                    .color(&colour)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            )
        }))?;
        chart.draw_series(points.iter().filter(|(_, spread)| spread.varied()).map(
            |(x, spread)| {
                PathElement::new(
                    vec![(*x, spread.min), (*x, spread.max)],
                    colour.stroke_width(2),
                )
            },
        ))?;
        chart.draw_series(
            medians
                .iter()
                .map(|point| Circle::new(*point, 5, colour.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .margin(10)
        .label_font(text_style(14))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(160, 160, 160))
        .draw()?;
    for (position, label) in &axis.ticks {
        let (x, y) = chart.backend_coord(&(*position, 0.0));
        let origin = area.get_base_pixel();
        area.draw_text(
            label,
            &text_style(13).pos(Pos::new(HPos::Center, VPos::Top)),
            (x - origin.0, y - origin.1 + 8),
        )?;
    }
    Ok(())
}

/// One strategy's values in sweep order, each with `figure` (`None` where it
/// is missing: the migration not done).
fn strategy_values(
    axis: &XAxis,
    records: &[SweepRecord],
    strategy: &str,
    figure: &impl Fn(&SweepRecord) -> Option<Spread>,
) -> Vec<(f64, Option<Spread>)> {
    records
        .iter()
        .filter(|record| record.strategy == strategy)
        .filter_map(|record| Some((axis.of(&record.value)?, figure(record))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SweepSetting;
    use crate::plot::test_support::{decode_png, output_dir};
    use crate::testing::neutral_run;

    fn records(values: &[&str]) -> Vec<SweepRecord> {
        let mut records = Vec::new();
        for (index, value) in values.iter().enumerate() {
            for (strategy, stall_s) in [("naive", 9), ("retry", index as u32)] {
                let mut run = neutral_run();
                run.longest_stall_s = stall_s;
                let mut second = run.clone();
                second.longest_stall_s = stall_s + 1;
                let row = crate::metrics::RankingRow {
                    strategy: strategy.to_string(),
                    run_order: 0,
                    runs: vec![run, second],
                };
                records.push(SweepRecord::new("x", value, None, &row));
            }
        }
        records
    }

    #[test]
    fn sweep_png_draws_durations_numbers_and_text() {
        let (_keep, dir) = output_dir();
        let cases = [
            (
                SweepSetting::LockTimeout {
                    strategy: "retry".into(),
                },
                vec!["50ms", "100ms", "250ms", "500ms", "1s", "2s"],
            ),
            (SweepSetting::Clients, vec!["1", "2", "4", "8"]),
            (SweepSetting::Variable("mode".into()), vec!["a", "b"]),
        ];
        for (index, (setting, values)) in cases.into_iter().enumerate() {
            let sweep = Sweep {
                setting,
                values: values.iter().map(|v| v.to_string()).collect(),
            };
            let path = dir.join(format!("sweep-{index}.png"));
            draw_sweep(&records(&values), &sweep, &path).unwrap();
            let (width, height, colours) = decode_png(&path);
            assert_eq!((width, height), SWEEP_SIZE_PX);
            assert!(colours > 4, "{index}: only {colours} colours");
        }
    }

    #[test]
    fn durations_sit_on_a_log_axis() {
        let sweep = Sweep {
            setting: SweepSetting::BlockerHold,
            values: vec!["100ms".into(), "1s".into(), "10s".into()],
        };
        let axis = XAxis::new(&sweep);
        assert_eq!(axis.of("100ms"), Some(-1.0));
        assert_eq!(axis.of("10s"), Some(1.0));
        let text = Sweep {
            setting: SweepSetting::Variable("mode".into()),
            values: vec!["a".into(), "b".into()],
        };
        assert_eq!(XAxis::new(&text).of("b"), Some(1.0));
    }
}
