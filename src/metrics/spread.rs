//! One figure over the repeats of a strategy (`--repeat N`): its median, its
//! range, and from [`INTERVAL_FROM_REPEATS`] repeats on a 95% interval for the
//! median. The ranking decides ties on these bands, the tables print them as
//! `9 [8-10]`.
//!
//! The interval is the distribution-free order-statistic interval for the
//! median: with the values sorted, `[x(k), x(n+1-k)]` covers the true median
//! with probability `1 - 2 P(B <= k-1)`, `B ~ Binomial(n, 1/2)`, whatever the
//! figure's distribution. It takes the largest `k` whose coverage is at least
//! 95%; with 5 repeats no `k` reaches it and the range is used (93.75%
//! coverage). No resampling, so the same repeats always give the same interval.

/// The fewest repeats for which a figure gets a 95% interval; below it, the range is its band.
pub const INTERVAL_FROM_REPEATS: usize = 5;

/// The coverage the interval aims at.
const COVERAGE: f64 = 0.95;

/// A figure measured once per repeat.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median of the repeats (of two middle values, their mean).
    pub median: f64,
    /// The lowest repeat.
    pub min: f64,
    /// The highest repeat.
    pub max: f64,
    /// The 95% interval for the median, `(low, high)`, with 5 repeats or more.
    pub interval: Option<(f64, f64)>,
    /// How many repeats it was measured in.
    pub count: usize,
}

impl Spread {
    /// A figure measured once: median, range and band are the value itself.
    pub fn single(value: f64) -> Spread {
        Spread {
            median: value,
            min: value,
            max: value,
            interval: None,
            count: 1,
        }
    }

    /// A spread from its median and range as a file keeps them (no interval).
    pub fn from_range(median: f64, min: f64, max: f64, count: usize) -> Spread {
        Spread {
            median,
            min,
            max,
            interval: None,
            count,
        }
    }

    /// The spread of `values` (one per repeat, any order); `None` without any.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        Some(Spread {
            median: median_of_sorted(&sorted),
            min,
            max,
            interval: median_interval(&sorted),
            count: sorted.len(),
        })
    }

    /// The spread of whole-number figures (seconds, counts, tps).
    pub fn of_counts(values: impl IntoIterator<Item = u64>) -> Option<Spread> {
        let values: Vec<f64> = values.into_iter().map(|value| value as f64).collect();
        Spread::of(&values)
    }

    /// Where the figure may lie given the repeats: the 95% interval with 5
    /// repeats or more, else the range (the value itself for one repeat).
    pub fn band(&self) -> (f64, f64) {
        self.interval.unwrap_or((self.min, self.max))
    }

    /// Whether the figure varied at all between its repeats.
    pub fn varied(&self) -> bool {
        self.min != self.max
    }

    /// The spread with every figure passed through `map` (an increasing function).
    pub fn map(&self, map: impl Fn(f64) -> f64) -> Spread {
        Spread {
            median: map(self.median),
            min: map(self.min),
            max: map(self.max),
            interval: self.interval.map(|(low, high)| (map(low), map(high))),
            count: self.count,
        }
    }
}

/// Whether two bands `(low, high)` share a point.
pub fn overlap(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 <= b.1 && b.0 <= a.1
}

/// The median of `values`, any order (of two middle values, their mean); 0 without any.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_of_sorted(&sorted)
}

fn median_of_sorted(sorted: &[f64]) -> f64 {
    let count = sorted.len();
    match count {
        0 => 0.0,
        _ if count % 2 == 1 => sorted[count / 2],
        _ => (sorted[count / 2 - 1] + sorted[count / 2]) / 2.0,
    }
}

/// The order-statistic interval of sorted `values`, `None` under
/// [`INTERVAL_FROM_REPEATS`] values (see the module comment).
fn median_interval(sorted: &[f64]) -> Option<(f64, f64)> {
    let count = sorted.len();
    if count < INTERVAL_FROM_REPEATS {
        return None;
    }
    let k = (1..=count / 2)
        .take_while(|&k| interval_coverage(count, k) >= COVERAGE)
        .last()
        .unwrap_or(1);
    Some((sorted[k - 1], sorted[count - k]))
}

/// The probability that `[x(k), x(n+1-k)]` of `n` values holds their median:
/// `1 - 2 P(B <= k-1)` with `B ~ Binomial(n, 1/2)`.
pub fn interval_coverage(n: usize, k: usize) -> f64 {
    let mut below = 0.0;
    let mut choose = 1.0;
    for i in 0..k {
        if i > 0 {
            choose = choose * (n - i + 1) as f64 / i as f64;
        }
        below += choose;
    }
    1.0 - 2.0 * below / 2f64.powi(n as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_is_its_own_median_range_and_band() {
        let spread = Spread::single(9.0);
        assert_eq!((spread.median, spread.min, spread.max), (9.0, 9.0, 9.0));
        assert_eq!(spread.band(), (9.0, 9.0));
        assert!(!spread.varied());
        assert_eq!(Spread::of(&[9.0]), Some(spread));
        assert_eq!(Spread::of(&[]), None);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        let spread = Spread::of(&[10.0, 8.0, 9.0, 12.0]).unwrap();
        assert_eq!((spread.median, spread.min, spread.max), (9.5, 8.0, 12.0));
        assert_eq!(spread.interval, None);
        assert_eq!(spread.band(), (8.0, 12.0));
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn the_interval_is_the_widest_order_statistics_that_reach_95_percent() {
        // Five repeats cannot reach 95%: the range, with 93.75%.
        assert_eq!(interval_coverage(5, 1), 0.9375);
        let five = Spread::of(&[5.0, 1.0, 4.0, 2.0, 3.0]).unwrap();
        assert_eq!(five.interval, Some((1.0, 5.0)));
        // Six: the range holds the median with 96.9%.
        assert!((interval_coverage(6, 1) - 0.96875).abs() < 1e-12);
        // Nine: the second lowest to the second highest (96.1%), not the third (82%).
        assert!((interval_coverage(9, 2) - 0.9609375).abs() < 1e-12);
        assert!(interval_coverage(9, 3) < 0.95);
        let values: Vec<f64> = (1..=9).map(f64::from).collect();
        assert_eq!(Spread::of(&values).unwrap().interval, Some((2.0, 8.0)));
        assert_eq!(Spread::of(&values).unwrap().band(), (2.0, 8.0));
        // Twenty: x(6) to x(15), 95.9%.
        let values: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(Spread::of(&values).unwrap().interval, Some((6.0, 15.0)));
    }

    #[test]
    fn bands_overlap_when_they_share_a_point() {
        assert!(overlap((0.48, 0.55), (0.47, 0.56)));
        assert!(overlap((1.0, 2.0), (2.0, 3.0)));
        assert!(!overlap((0.0, 0.0), (0.4, 0.6)));
        assert!(!overlap((8.0, 10.0), (0.0, 0.0)));
    }
}
