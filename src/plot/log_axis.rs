//! The log-scale y range the latency charts share (`latency-timeline.png`,
//! `pool.png`): whole decades around the values drawn, then room above for the
//! DDL attempt bars; and the panel chart drawn on it. One rule, so the charts
//! read alike.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::layout::{GRID, text_style};
use super::panel::{PanelChart, SecondsAxis};
use crate::export::format::format_latency_label;

/// A y range in ms: whole decades around every value (with at least a sixth
/// of a decade under the lowest), then a quarter as many decades again above,
/// for the attempt bars.
pub(super) struct LogAxis {
    /// The bottom of the axis, a hair under its lowest decade.
    pub low: f64,
    /// The top of the decades of the data: no labels above it.
    pub data_top: f64,
    /// The top of the axis, above the bars.
    pub top: f64,
}

impl LogAxis {
    /// The axis around the drawable `values_ms` (positive and finite; others are
    /// left out), or over the decades `empty` (as powers of ten) without any.
    pub fn around(values_ms: impl Iterator<Item = f64>, empty: (f64, f64)) -> LogAxis {
        let drawable: Vec<f64> = values_ms.filter(|ms| *ms > 0.0 && ms.is_finite()).collect();
        let min_ms = drawable.iter().copied().fold(f64::INFINITY, f64::min);
        let max_ms = drawable.iter().copied().fold(0.0, f64::max);
        let (low_decade, high_decade) = if max_ms > 0.0 {
            let low = (min_ms.log10() - 0.15).floor();
            (low, max_ms.log10().ceil().max(low + 1.0))
        } else {
            empty
        };
        let top_decade = high_decade + (high_decade - low_decade) * 0.25;
        LogAxis {
            // A hair under the decade, so that rounding does not drop its tick label.
            low: 10_f64.powf(low_decade) * 0.999,
            data_top: 10_f64.powf(high_decade),
            top: 10_f64.powf(top_decade),
        }
    }

    /// The value `fraction` of the way up the axis (on the log scale).
    pub fn at(&self, fraction: f64) -> f64 {
        let (low, top) = (self.low.log10(), self.top.log10());
        10_f64.powf(low + (top - low) * fraction)
    }

    /// One strategy's panel on this axis, with its caption, grid and labels
    /// drawn: seconds across, ms (log scale) up; the margins and label areas
    /// of the TPS part of `timeline.png`. No labels above the data's decades:
    /// they hold the attempt bars only.
    pub fn panel_chart<'a, 'b>(
        &self,
        panel: &'a DrawingArea<BitMapBackend<'b>, Shift>,
        duration_s: f64,
        caption: String,
        y_desc: &str,
    ) -> anyhow::Result<PanelChart<'a, 'b, LogCoord<f64>>> {
        let mut chart = ChartBuilder::on(panel)
            .margin_top(6)
            .margin_bottom(4)
            .margin_left(12)
            .margin_right(28)
            .caption(caption, text_style(16))
            .x_label_area_size(28)
            .y_label_area_size(72)
            .build_cartesian_2d(
                SecondsAxis::new(duration_s),
                (self.low..self.top).log_scale(),
            )?;
        chart
            .configure_mesh()
            .light_line_style(GRID.mix(0.5))
            .bold_line_style(GRID)
            .x_max_light_lines(0)
            .x_labels(16)
            .y_labels(8)
            .y_label_formatter(&|ms| match *ms > self.data_top * 1.001 {
                true => String::new(),
                false => format_latency_label(*ms),
            })
            .y_desc(y_desc)
            .label_style(text_style(13))
            .axis_desc_style(text_style(14))
            .draw()?;
        Ok(chart)
    }
}
