//! The charts of a results folder, drawn from a `RunReport` alone (so that
//! `stallbench plot DIR` can redraw them from the folder's files), one file
//! each: `timeline.png` (`timeline.rs`: TPS per second, a panel per strategy,
//! the blocker window, the DDL attempts, the lock waiters), `latency.png`
//! (`latency.rs`: latency by percentile), `latency-timeline.png`
//! (`latency_timeline.rs`: p99 per second), `pool.png` (`pool.rs`, with the
//! application pool only) and `sweep.png` (`sweep.rs`, beside a sweep's value
//! folders). A run with repeats is drawn as the median of its repeats;
//! failures get a strip under the per-second charts (`failures.rs`).
//! `layout.rs` and `panel.rs` hold what the charts share.

mod failures;
pub mod folder;
mod latency;
mod latency_timeline;
mod layout;
mod log_axis;
mod panel;
mod pool;
mod sweep;
#[cfg(test)]
mod test_support;
mod timeline;

pub use latency::LATENCY_SIZE_PX;
pub use layout::timeline_size;
pub use sweep::draw_sweep;

use latency::draw_latency;
use latency_timeline::draw_latency_timeline;
use pool::{draw_pool, used_pool};
use timeline::draw_timeline_with_bands;
#[cfg(test)]
use {layout::latency_timeline_size, timeline::draw_timeline};

use std::path::Path;

use crate::metrics::RunReport;
use crate::metrics::repeats::chart_report;
use crate::results::{LATENCY_PNG, LATENCY_TIMELINE_PNG, POOL_PNG, TIMELINE_PNG};

/// Draws every chart of `report` into the results folder `dir` (`pool.png` only
/// for a run with the application pool); returns the names of the files drawn.
/// The run and `stallbench plot DIR` both draw through here.
/// A repeated run is drawn as its chart view (`metrics::repeats::chart_report`):
/// one panel or curve per strategy, the median of its repeats.
pub fn draw_all(report: &RunReport, dir: &Path) -> anyhow::Result<Vec<&'static str>> {
    let chart = chart_report(report);
    let report = &chart.report;
    draw_timeline_with_bands(report, &chart.tps_bands, &dir.join(TIMELINE_PNG))?;
    draw_latency(report, &dir.join(LATENCY_PNG))?;
    draw_latency_timeline(report, &dir.join(LATENCY_TIMELINE_PNG))?;
    let mut drawn = vec![TIMELINE_PNG, LATENCY_PNG, LATENCY_TIMELINE_PNG];
    if used_pool(report) {
        draw_pool(report, &dir.join(POOL_PNG))?;
        drawn.push(POOL_PNG);
    }
    Ok(drawn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{LatencyDistribution, RunReport};
    use crate::plot::test_support::{decode_png, output_dir};
    use crate::testing::reference_report;

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
        // Read back, the blocker window comes from summary.csv.
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
    fn draw_all_draws_every_chart_and_the_pool_chart_only_for_a_pool_run() {
        let (_keep, dir) = output_dir();
        let mut report = reference_report();
        let drawn = draw_all(&report, &dir).unwrap();
        assert_eq!(drawn, [TIMELINE_PNG, LATENCY_PNG, LATENCY_TIMELINE_PNG]);
        for name in &drawn {
            assert!(decode_png(&dir.join(name)).2 > 2, "{name}");
        }
        assert!(!dir.join(POOL_PNG).exists());

        report.strategies[0].seconds[0].pool = Some(crate::metrics::PoolRow::default());
        let drawn = draw_all(&report, &dir).unwrap();
        assert_eq!(drawn.last(), Some(&POOL_PNG));
        assert!(decode_png(&dir.join(POOL_PNG)).2 > 2);
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
            interruption: None,
            load_on: crate::choices::LoadOn::Primary,
            load_loop: crate::choices::LoadLoop::Closed,
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
            interruption: None,
            load_on: crate::choices::LoadOn::Primary,
            load_loop: crate::choices::LoadLoop::Closed,
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
}
