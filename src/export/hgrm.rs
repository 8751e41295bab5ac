//! `latency-<strategy>.hgrm`: the HdrHistogram percentile distribution (with
//! repeats, of all of them together) in the text
//! layout of HdrHistogram's `outputPercentileDistribution`, which HdrHistogram's
//! plotter and other tools read. Values are in milliseconds (the histograms hold
//! microseconds), with 5 percentile ticks per half distance.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::bail;
use hdrhistogram::Histogram;

use crate::metrics::RunReport;
use crate::metrics::repeats::merged_latency;

use super::Exporter;
use crate::results::{OutputFile, hgrm_file_name};

/// The first line of every `.hgrm` file.
pub const HGRM_HEADER: &str = "       Value     Percentile TotalCount 1/(1-Percentile)";

/// Percentile rows per halving of the distance to 100%.
pub const TICKS_PER_HALF_DISTANCE: u32 = 5;

/// The histograms hold microseconds; the file shows milliseconds.
const MICROSECONDS_PER_MILLISECOND: f64 = 1000.0;

/// Writes one `latency-<strategy>.hgrm` per strategy whose `latency.histogram` is Some;
/// with repeats, of all its repeats together.
pub struct HgrmFiles;

impl Exporter for HgrmFiles {
    fn name(&self) -> &'static str {
        "latency-<strategy>.hgrm"
    }

    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>> {
        let files = report
            .by_strategy()
            .iter()
            .filter_map(|runs| {
                let latency = merged_latency(runs)?;
                let histogram = latency.histogram.as_ref()?;
                Some(OutputFile {
                    name: hgrm_file_name(&runs[0].strategy),
                    bytes: percentile_distribution(histogram).into_bytes(),
                })
            })
            .collect();
        Ok(files)
    }
}

/// The percentile distribution of a histogram of microseconds, in milliseconds,
/// as the full text of an `.hgrm` file.
pub fn percentile_distribution(histogram: &Histogram<u64>) -> String {
    let ms = |us: u64| us as f64 / MICROSECONDS_PER_MILLISECOND;
    let mut text = String::new();
    // Writing into a String cannot fail, hence the ignored results.
    let _ = writeln!(text, "{HGRM_HEADER}\n");
    if !histogram.is_empty() {
        let mut total_count: u64 = 0;
        for step in histogram.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
            total_count += step.count_since_last_iteration();
            let quantile = step.quantile_iterated_to();
            if quantile < 1.0 {
                let _ = writeln!(
                    text,
                    "{:12.3} {:2.12} {:10} {:14.2}",
                    ms(step.value_iterated_to()),
                    quantile,
                    total_count,
                    1.0 / (1.0 - quantile)
                );
            } else {
                let _ = writeln!(
                    text,
                    "{:12.3} {:2.12} {:10}",
                    ms(step.value_iterated_to()),
                    quantile,
                    total_count
                );
            }
        }
    }
    let max_ms = if histogram.is_empty() {
        0.0
    } else {
        ms(histogram.max())
    };
    let sub_buckets = (2_u64 * 10_u64.pow(u32::from(histogram.sigfig()))).next_power_of_two();
    let _ = writeln!(
        text,
        "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]",
        histogram.mean() / MICROSECONDS_PER_MILLISECOND,
        histogram.stdev() / MICROSECONDS_PER_MILLISECOND
    );
    let _ = writeln!(
        text,
        "#[Max     = {:12.3}, Total count    = {:12}]",
        max_ms,
        histogram.len()
    );
    let _ = writeln!(
        text,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        histogram.buckets(),
        sub_buckets
    );
    text
}

/// Reads the percentile rows of an `.hgrm` file back as (percentile 0..100, latency ms).
/// `path` is only used in error messages.
pub fn parse_percentile_distribution(path: &Path, text: &str) -> anyhow::Result<Vec<(f64, f64)>> {
    let mut lines = text.lines().enumerate();
    let header = lines.by_ref().find(|(_, line)| !line.trim().is_empty());
    match header {
        Some((_, line)) if line.trim_end() == HGRM_HEADER => {}
        Some((index, line)) => bail!(
            "{} line {}: expected the HdrHistogram header \"{}\", found \"{}\"; \
             is this an .hgrm file written by stallbench or HdrHistogram?",
            path.display(),
            index + 1,
            HGRM_HEADER.trim(),
            line.trim()
        ),
        None => bail!(
            "{}: the file is empty; delete it or rerun the benchmark",
            path.display()
        ),
    }
    let mut percentiles = Vec::new();
    for (index, line) in lines {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 3 {
            bail!(
                "{} line {}: expected at least 3 columns (Value Percentile TotalCount), \
                 found \"{}\"",
                path.display(),
                index + 1,
                line
            );
        }
        let number = |column: &str, text: &str| -> anyhow::Result<f64> {
            match text.parse::<f64>() {
                Ok(value) if value.is_finite() => Ok(value),
                _ => bail!(
                    "{} line {}: column {} is \"{}\", not a number",
                    path.display(),
                    index + 1,
                    column,
                    text
                ),
            }
        };
        let value_ms = number("Value", fields[0])?;
        let quantile = number("Percentile", fields[1])?;
        percentiles.push((quantile * 100.0, value_ms));
    }
    Ok(percentiles)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::new_latency_histogram;
    use crate::testing::reference_report;

    /// The bytes of the file `name` among `files`, if it is there.
    fn rendered(files: &[OutputFile], name: &str) -> Option<Vec<u8>> {
        let file = files.iter().find(|file| file.name == name)?;
        Some(file.bytes.clone())
    }

    fn naive_hgrm() -> (Histogram<u64>, String) {
        let report = reference_report();
        let histogram = report.strategies[0].latency.histogram.clone().unwrap();
        let files = HgrmFiles.render(&report).unwrap();
        let text = String::from_utf8(rendered(&files, "latency-naive.hgrm").unwrap()).unwrap();
        assert!(rendered(&files, "latency-retry.hgrm").is_some());
        (histogram, text)
    }

    #[test]
    fn hgrm_has_header_rows_and_footer() {
        let (histogram, text) = naive_hgrm();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HGRM_HEADER);
        assert_eq!(lines[1], "");
        let first_row: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(first_row.len(), 4);
        assert_eq!(first_row[1], "0.000000000000");
        assert_eq!(first_row[3], "1.00");
        let footer = &lines[lines.len() - 3..];
        assert!(footer[0].starts_with("#[Mean    = "), "{}", footer[0]);
        assert!(footer[0].contains(", StdDeviation   = "));
        assert_eq!(
            footer[1],
            format!(
                "#[Max     = {:12.3}, Total count    = {:12}]",
                histogram.max() as f64 / 1000.0,
                histogram.len()
            )
        );
        assert_eq!(
            footer[2],
            format!(
                "#[Buckets = {:12}, SubBuckets     = {:12}]",
                histogram.buckets(),
                2048
            )
        );
    }

    #[test]
    fn hgrm_max_row_matches_the_histogram_max() {
        let (histogram, text) = naive_hgrm();
        let last_row = text
            .lines()
            .rfind(|line| !line.starts_with('#') && !line.trim().is_empty())
            .unwrap();
        let fields: Vec<&str> = last_row.split_whitespace().collect();
        assert_eq!(fields.len(), 3, "{last_row}");
        assert_eq!(fields[0], format!("{:.3}", histogram.max() as f64 / 1000.0));
        assert_eq!(fields[1], "1.000000000000");
        assert_eq!(fields[2], histogram.len().to_string());
        // The row layout is the fixed-width one of outputPercentileDistribution.
        assert_eq!(&last_row[12..13], " ");
    }

    #[test]
    fn hgrm_reads_back_as_the_percentile_curve() {
        let report = reference_report();
        let (_, text) = naive_hgrm();
        let read = parse_percentile_distribution(Path::new("x.hgrm"), &text).unwrap();
        let curve = &report.strategies[0].latency.percentiles;
        assert_eq!(read.len(), curve.len());
        for ((read_p, read_ms), (p, ms)) in read.iter().zip(curve) {
            assert!((read_p - p).abs() < 1e-9, "{read_p} vs {p}");
            assert!((read_ms - ms).abs() < 0.0005, "{read_ms} vs {ms}");
        }
    }

    #[test]
    fn an_empty_histogram_gives_header_and_footer_only() {
        let text = percentile_distribution(&new_latency_histogram());
        assert!(text.starts_with(HGRM_HEADER));
        assert!(text.contains("Total count    =            0]"));
        let read = parse_percentile_distribution(Path::new("x.hgrm"), &text).unwrap();
        assert!(read.is_empty());
    }

    #[test]
    fn a_bad_value_names_file_line_and_column() {
        let text = format!(
            "{HGRM_HEADER}\n\n       1.000 0.000000000000          1           1.00\n       abc 0.5 2 2.00\n"
        );
        let error = parse_percentile_distribution(Path::new("r/latency-x.hgrm"), &text)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "r/latency-x.hgrm line 4: column Value is \"abc\", not a number"
        );
    }

    #[test]
    fn no_histogram_no_file() {
        let mut report = reference_report();
        report.strategies[0].latency.histogram = None;
        let files = HgrmFiles.render(&report).unwrap();
        assert!(rendered(&files, "latency-naive.hgrm").is_none());
        assert!(rendered(&files, "latency-retry.hgrm").is_some());
    }
}
