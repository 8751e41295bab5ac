//! `latency-<strategy>.hlog`: the HdrHistogram interval log, one histogram per
//! second of the run clock, in the standard format that HistogramLogAnalyzer,
//! `HistogramLogProcessor` and the HdrHistogram libraries read. Values are
//! microseconds; the max column is in milliseconds. With the application pool
//! each second has three intervals, tagged `total`, `pool_wait` and `db`.

use std::time::{Duration, SystemTime};

use anyhow::Context;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};

use crate::metrics::{CompressedSeconds, RunReport, StrategyReport, new_latency_histogram};

use super::Exporter;
use crate::results::{OutputFile, latency_file_name};

/// Writes one `latency-<strategy>.hlog` per strategy that has per-second histograms
/// (a live run; a folder read back by `plot` has none); with repeats one per run,
/// the first repeat's as above and repeat `k`'s `latency-<strategy>-repeat-<k>.hlog`.
pub struct HlogFiles;

impl Exporter for HlogFiles {
    fn name(&self) -> &'static str {
        "latency-<strategy>.hlog"
    }

    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>> {
        let mut files = Vec::new();
        for strategy in &report.strategies {
            if strategy.intervals.per_second.is_empty() && strategy.seconds.is_empty() {
                continue;
            }
            let mut bytes = Vec::new();
            write_interval_log(strategy, &mut bytes)?;
            let name = match strategy.repeat() {
                1 => strategy.strategy.clone(),
                repeat => format!("{}-repeat-{repeat}", strategy.strategy),
            };
            files.push(OutputFile {
                name: latency_file_name(&name, "hlog"),
                bytes,
            });
        }
        Ok(files)
    }
}

/// The interval log of one strategy: a header, then one interval per second
/// `0..seconds.len()` (an empty histogram for a second without completed
/// transactions), plus any late hand-over as a second interval of its second.
/// A run with the application pool writes three tagged intervals per second:
/// `total` (end to end), `pool_wait` (the wait for a connection) and `db`.
fn write_interval_log(
    strategy: &StrategyReport,
    out: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    let intervals = &strategy.intervals;
    let started = SystemTime::UNIX_EPOCH + Duration::from_secs_f64(intervals.started_unix_s);
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "stallbench {}: latency of strategy {} in microseconds, one interval per second",
            env!("CARGO_PKG_VERSION"),
            strategy.strategy
        ))
        .add_comment("HistogramLogProcessor: use -outputValueUnitRatio 1000 for milliseconds")
        .with_start_time(started)
        .with_base_time(started)
        .with_max_value_divisor(1000.0)
        .begin_log_with(out, &mut serializer)?;
    let pooled = strategy.seconds.iter().any(|row| row.pool.is_some());
    let series: Vec<(Option<&str>, &CompressedSeconds)> = match pooled {
        false => vec![(None, &intervals.per_second)],
        true => vec![
            (Some("total"), &intervals.per_second),
            (Some("pool_wait"), &intervals.pool_wait),
            (Some("db"), &intervals.db),
        ],
    };
    let mut stored: Vec<_> = series
        .iter()
        .map(|(tag, per_second)| (tag.and_then(Tag::new), per_second.iter().peekable()))
        .collect();
    let last_stored = series
        .iter()
        .filter_map(|(_, per_second)| per_second.last())
        .map(|(second, _)| second + 1)
        .max()
        .unwrap_or(0);
    let empty = new_latency_histogram();
    let mut deserializer = Deserializer::new();
    for second in 0..(strategy.seconds.len() as u32).max(last_stored) {
        for (tag, per_second) in &mut stored {
            let mut written = false;
            while let Some((_, bytes)) = per_second.next_if(|(at, _)| *at == second) {
                let histogram: hdrhistogram::Histogram<u64> = deserializer
                    .deserialize(&mut bytes.as_slice())
                    .with_context(|| format!("decoding the histogram of second {second}"))?;
                log.write_histogram(&histogram, start_of(second), ONE_SECOND, *tag)
                    .map_err(|err| anyhow::anyhow!("writing second {second}: {err:?}"))?;
                written = true;
            }
            if !written {
                log.write_histogram(&empty, start_of(second), ONE_SECOND, *tag)
                    .map_err(|err| anyhow::anyhow!("writing second {second}: {err:?}"))?;
            }
        }
    }
    Ok(())
}

const ONE_SECOND: Duration = Duration::from_secs(1);

fn start_of(second: u32) -> Duration {
    Duration::from_secs(u64::from(second))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::reference_report;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

    fn compressed(latencies_us: &[u64]) -> Vec<u8> {
        let mut histogram = new_latency_histogram();
        for &latency in latencies_us {
            histogram.record(latency).unwrap();
        }
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&histogram, &mut bytes)
            .unwrap();
        bytes
    }

    #[test]
    fn the_log_parses_back_with_one_interval_per_second_and_every_count() {
        let mut report = reference_report();
        let naive = &mut report.strategies[0];
        naive.intervals.started_unix_s = 1_790_000_000.5;
        naive.intervals.per_second = vec![
            (0, compressed(&[1_000, 2_000, 3_000])),
            (2, compressed(&[9_700_000])),
            (2, compressed(&[500])), // a late hand-over
        ];
        let files = HlogFiles.render(&report).unwrap();
        let naive = files.iter().find(|file| file.name == "latency-naive.hlog");
        let bytes = naive.unwrap().bytes.clone();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains("#[StartTime: 1790000000.500"), "{text}");
        assert!(text.contains("#[BaseTime: 1790000000.500"), "{text}");

        let mut deserializer = Deserializer::new();
        let mut starts = Vec::new();
        let mut total = 0;
        for entry in IntervalLogIterator::new(&bytes) {
            if let LogEntry::Interval(interval) = entry.unwrap() {
                let decoded = STANDARD.decode(interval.encoded_histogram()).unwrap();
                let histogram: hdrhistogram::Histogram<u64> =
                    deserializer.deserialize(&mut decoded.as_slice()).unwrap();
                starts.push(interval.start_timestamp().as_secs());
                total += histogram.len();
                assert_eq!(interval.duration(), ONE_SECOND);
            }
        }
        // Every second of the timeline, second 2 twice.
        let seconds = report.strategies[0].seconds.len() as u64;
        assert_eq!(starts.len() as u64, seconds + 1);
        assert_eq!(&starts[..4], &[0, 1, 2, 2]);
        assert_eq!(total, 5);
    }

    #[test]
    fn a_pool_run_writes_three_tagged_intervals_per_second() {
        let mut report = reference_report();
        let naive = &mut report.strategies[0];
        for row in &mut naive.seconds {
            row.pool = Some(crate::metrics::PoolRow::default());
        }
        naive.intervals.per_second = vec![(0, compressed(&[1_000, 2_000]))];
        naive.intervals.pool_wait = vec![(0, compressed(&[10, 20]))];
        naive.intervals.db = vec![(0, compressed(&[900, 1_900]))];
        let files = HlogFiles.render(&report).unwrap();
        let naive = files.iter().find(|file| file.name == "latency-naive.hlog");
        let bytes = naive.unwrap().bytes.clone();
        let mut tags = Vec::new();
        for entry in IntervalLogIterator::new(&bytes) {
            if let LogEntry::Interval(interval) = entry.unwrap()
                && interval.start_timestamp().as_secs() == 0
            {
                tags.push(interval.tag().map(|tag| tag.as_str().to_string()));
            }
        }
        let expected = ["total", "pool_wait", "db"].map(|tag| Some(tag.to_string()));
        assert_eq!(tags, expected);
    }

    #[test]
    fn a_read_back_report_without_seconds_writes_no_log() {
        let mut report = reference_report();
        for strategy in &mut report.strategies {
            strategy.seconds.clear();
        }
        assert_eq!(HlogFiles.render(&report).unwrap().len(), 0);
    }
}
