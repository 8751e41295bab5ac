//! The log-scale y range the latency charts share (`latency-timeline.png`,
//! `pool.png`): whole decades around the values drawn, then room above for the
//! DDL attempt bars. One rule, so the charts read alike.

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
}
