//! How numbers read in tables and sentences, so every format shows a figure
//! the same way: latencies, counts with thousands separators, seconds.

/// A latency in ms with a precision that suits its size: `1.25`, `420.0`, `9700`.
pub fn format_ms(ms: f64) -> String {
    if ms < 10.0 {
        format!("{ms:.2}")
    } else if ms < 1000.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.0}")
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

/// Seconds with one decimal: `8.41` -> `8.4`.
pub fn format_seconds(seconds: f64) -> String {
    format!("{seconds:.1}")
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
    fn latencies_keep_three_significant_figures_or_so() {
        assert_eq!(format_ms(1.254), "1.25");
        assert_eq!(format_ms(420.0), "420.0");
        assert_eq!(format_ms(9700.4), "9700");
    }
}
