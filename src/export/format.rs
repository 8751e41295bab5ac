//! How numbers read in tables, sentences and charts, so every format shows a
//! figure the same way: latencies, counts with thousands separators, seconds.
//!
//! Latencies have three writers for three places: [`format_ms`] for a table
//! cell under an `ms` title (no unit), [`format_latency`] for a latency in
//! chart text (with its unit, `s` from 1000 ms on), and
//! [`format_latency_label`] for a tick on a chart's log axis (round values,
//! trailing zeros dropped). A figure over repeats is written by
//! [`format_spread`]: its median, then its range in brackets.

use crate::metrics::spread::Spread;

/// `value` rounded to 3 decimals, as the files write figures (`2975.118`,
/// not `2975.1176470588234`), so what a verdict or a page reads is what the
/// CSV shows.
pub fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// A latency in ms for a table cell whose title says `ms`, with a precision
/// that suits its size: `1.25`, `420.0`, `9700`.
pub fn format_ms(ms: f64) -> String {
    if ms < 10.0 {
        format!("{ms:.2}")
    } else if ms < 1000.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.0}")
    }
}

/// A latency in chart text, with its unit: "0.85 ms", "3.4 ms", "420 ms", "9.62 s".
pub fn format_latency(ms: f64) -> String {
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

/// A tick label of a latency axis: "0.1 ms", "10 ms", "1 s", "10 s".
pub fn format_latency_label(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{} s", trim_number(ms / 1000.0, 3))
    } else {
        format!("{} ms", trim_number(ms, 3))
    }
}

/// `value` with at most `decimals` decimals and no trailing zeros: 99.9, 1, 0.05.
pub fn trim_number(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A count with thousands separators: `2100` -> `2,100`.
pub fn format_thousands(count: u64) -> String {
    let digits = count.to_string();
    let mut text = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

/// A size in bytes with PostgreSQL's units (as `pg_size_pretty` writes
/// them, 1 kB = 1024 bytes), one decimal from kB on: `640 bytes`, `52.0 kB`,
/// `24.8 MB`, `1.2 GB`.
pub fn format_bytes(bytes: f64) -> String {
    const KB: f64 = 1024.0;
    if bytes < KB {
        format!("{bytes:.0} bytes")
    } else if bytes < KB * KB {
        format!("{:.1} kB", bytes / KB)
    } else if bytes < KB * KB * KB {
        format!("{:.1} MB", bytes / (KB * KB))
    } else {
        format!("{:.1} GB", bytes / (KB * KB * KB))
    }
}

/// Seconds with one decimal: `8.41` -> `8.4`.
pub fn format_seconds(seconds: f64) -> String {
    format!("{seconds:.1}")
}

/// A share as a whole percentage without its sign: `0.523` -> `52`.
pub fn format_percent(share: f64) -> String {
    format!("{:.0}", share * 100.0)
}

/// A whole number that may be a median of two (`8.5`): no decimals when whole.
pub fn format_count(value: f64) -> String {
    trim_number(value, 1)
}

/// A figure over its repeats, each number written by `number` and `unit`
/// after the last: `9` (one run, or repeats that all measured 9), `9 [8-10]`
/// (the median and the range, 2 to 4 runs), `9 [8-10; 95% 8-10]` (and the
/// 95% interval for the median, from 5 runs); `52% [48-55%]` with the unit `%`.
pub fn format_spread(spread: &Spread, number: impl Fn(f64) -> String, unit: &str) -> String {
    let median = format!("{}{unit}", number(spread.median));
    if spread.count < 2 || !spread.varied() {
        return median;
    }
    let range = format!("{}-{}{unit}", number(spread.min), number(spread.max));
    match spread.interval {
        Some((low, high)) => format!(
            "{median} [{range}; 95% {}-{}{unit}]",
            number(low),
            number(high)
        ),
        None => format!("{median} [{range}]"),
    }
}

/// A share and its band as the tie sentences write it: `52% [45-57%]`, or
/// `52%` for a band that is the share itself.
pub fn format_share_band(share: f64, band: (f64, f64)) -> String {
    if format_percent(band.0) == format_percent(band.1) {
        return format!("{}%", format_percent(share));
    }
    format!(
        "{}% [{}-{}%]",
        format_percent(share),
        format_percent(band.0),
        format_percent(band.1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(format_thousands(0), "0");
        assert_eq!(format_thousands(999), "999");
        assert_eq!(format_thousands(2_100), "2,100");
        assert_eq!(format_thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn sizes_take_postgresqls_units() {
        assert_eq!(format_bytes(0.0), "0 bytes");
        assert_eq!(format_bytes(640.0), "640 bytes");
        assert_eq!(format_bytes(53_248.0), "52.0 kB");
        assert_eq!(format_bytes(25_996_288.0), "24.8 MB");
        assert_eq!(format_bytes(1_288_490_189.0), "1.2 GB");
    }

    #[test]
    fn latencies_keep_three_significant_figures_or_so() {
        assert_eq!(format_ms(1.254), "1.25");
        assert_eq!(format_ms(420.0), "420.0");
        assert_eq!(format_ms(9700.4), "9700");
    }

    #[test]
    fn a_spread_reads_median_then_range_then_interval() {
        let one = Spread::single(9.0);
        assert_eq!(format_spread(&one, format_count, ""), "9");
        let three = Spread::of(&[8.0, 10.0, 9.0]).unwrap();
        assert_eq!(format_spread(&three, format_count, ""), "9 [8-10]");
        let shares = Spread::of(&[0.48, 0.55, 0.52]).unwrap();
        assert_eq!(format_spread(&shares, format_percent, "%"), "52% [48-55%]");
        let nine: Vec<f64> = (1..=9).map(f64::from).collect();
        let nine = Spread::of(&nine).unwrap();
        assert_eq!(
            format_spread(&nine, format_count, " s"),
            "5 s [1-9 s; 95% 2-8 s]"
        );
        let same = Spread::of(&[0.0, 0.0, 0.0]).unwrap();
        assert_eq!(format_spread(&same, format_count, " s"), "0 s");
        let two = Spread::of(&[8.0, 9.0]).unwrap();
        assert_eq!(format_spread(&two, format_count, ""), "8.5 [8-9]");
        assert_eq!(format_share_band(0.52, (0.45, 0.57)), "52% [45-57%]");
        assert_eq!(format_share_band(1.0, (1.0, 1.0)), "100%");
    }

    #[test]
    fn chart_latencies_carry_their_unit() {
        assert_eq!(format_latency(0.854), "0.85 ms");
        assert_eq!(format_latency(420.2), "420 ms");
        assert_eq!(format_latency(9620.0), "9.62 s");
        assert_eq!(trim_number(99.90, 2), "99.9");
        assert_eq!(trim_number(1.0, 3), "1");
    }
}
