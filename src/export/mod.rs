//! Renders a [`RunReport`] into the files of a results folder, one exporter per
//! format, and reads such a folder back.
//!
//! Exporters only render to memory; [`write_files`] is the one place their output
//! (and the expectation files) touches the disk; the charts draw their own PNGs.
//! The words and numbers every format shares live here too: `table` builds the
//! table rows once, `format` writes figures, `sentences` the sentences.
//! The file names and CSV headers are a contract: users and CI
//! parse these files, so change them only together with docs/reading-the-output.md's list of columns.

pub mod csv;
pub mod format;
pub mod hgrm;
pub mod hlog;
pub mod json;
pub mod markdown;
pub mod read;
pub mod run_json;
pub mod sentences;
pub mod table;
pub mod workload_toml;

use std::path::Path;

use anyhow::Context;

use crate::metrics::{RunReport, Summary};

pub use read::read_report;

/// File name of the per-second timeline of every strategy.
pub const TIMELINE_CSV: &str = "timeline.csv";
/// File name of the list of DDL attempts of every strategy.
pub const ATTEMPTS_CSV: &str = "ddl_attempts.csv";
/// File name of the sampled lock queue (who waited for whom).
pub const LOCKS_CSV: &str = "locks.csv";
/// File name of the failed transactions by strategy, second and kind.
pub const FAILURES_CSV: &str = "failures.csv";
/// File name of the one-row-per-strategy summary table.
pub const SUMMARY_CSV: &str = "summary.csv";
/// File name of the summary with the workload name, as JSON.
pub const SUMMARY_JSON: &str = "summary.json";
/// File name of the summary for people, as Markdown.
pub const SUMMARY_MD: &str = "summary.md";
/// File name of the TPS-over-time chart.
pub const TIMELINE_PNG: &str = "timeline.png";
/// File name of the latency-by-percentile chart.
pub const LATENCY_PNG: &str = "latency.png";
/// File name of the p99-latency-over-time chart.
pub const LATENCY_TIMELINE_PNG: &str = "latency-timeline.png";
/// The application pool's chart, written only for a run with the pool.
pub const POOL_PNG: &str = "pool.png";

/// One file of a results folder, rendered in memory.
pub struct OutputFile {
    /// File name inside the results folder, e.g. `timeline.csv`.
    pub name: String,
    /// The whole file.
    pub bytes: Vec<u8>,
}

/// One output format of a results folder.
pub trait Exporter {
    /// File name(s) this writes, for messages.
    fn name(&self) -> &'static str;
    /// Renders this format of `report` into one or more files.
    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>>;
}

/// Every file exporter: timeline CSV, attempts CSV, locks CSV, failures CSV, summary CSV/JSON/Markdown,
/// `.hgrm` and `.hlog` files.
/// The charts are not exporters; [`write_all`] draws them.
pub fn all_exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(csv::TimelineCsv),
        Box::new(csv::AttemptsCsv),
        Box::new(csv::LocksCsv),
        Box::new(csv::FailuresCsv),
        Box::new(csv::SummaryCsv),
        Box::new(json::SummaryJson),
        Box::new(markdown::SummaryMarkdown),
        Box::new(hgrm::HgrmFiles),
        Box::new(hlog::HlogFiles),
    ]
}

/// Creates `dir` if needed and writes every exporter's files plus the charts into it.
pub fn write_all(report: &RunReport, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating results folder {}", dir.display()))?;
    for exporter in all_exporters() {
        let files = exporter
            .render(report)
            .with_context(|| format!("exporting {}", exporter.name()))?;
        write_files(dir, &files).with_context(|| format!("exporting {}", exporter.name()))?;
    }
    crate::plot::draw_timeline(report, &dir.join(TIMELINE_PNG))?;
    crate::plot::draw_latency(report, &dir.join(LATENCY_PNG))?;
    crate::plot::draw_latency_timeline(report, &dir.join(LATENCY_TIMELINE_PNG))?;
    if crate::plot::used_pool(report) {
        crate::plot::draw_pool(report, &dir.join(POOL_PNG))?;
    }
    Ok(())
}

/// Writes rendered files into `dir` (the one place exporter output touches the disk).
/// Every error names the file: `writing results/x/timeline.csv: ...`.
pub fn write_files(dir: &Path, files: &[OutputFile]) -> anyhow::Result<()> {
    for file in files {
        let path = dir.join(&file.name);
        std::fs::write(&path, &file.bytes)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// `summary` with its float figures rounded to 3 decimals, so the files show
/// `2975.118` rather than `2975.1176470588234`.
pub(crate) fn rounded_summary(summary: &Summary) -> Summary {
    let round = |value: f64| (value * 1000.0).round() / 1000.0;
    Summary {
        mean_tps: round(summary.mean_tps),
        lat_p50_ms: round(summary.lat_p50_ms),
        lat_p99_ms: round(summary.lat_p99_ms),
        lat_p999_ms: round(summary.lat_p999_ms),
        lat_max_ms: round(summary.lat_max_ms),
        ddl_total_ms: round(summary.ddl_total_ms),
        ddl_last_wait_ms: round(summary.ddl_last_wait_ms),
        blocker_started_s: summary.blocker_started_s.map(round),
        blocker_ended_s: summary.blocker_ended_s.map(round),
        unfinished_oldest_ms: round(summary.unfinished_oldest_ms),
        pool_wait_p99_ms: summary.pool_wait_p99_ms.map(round),
        pool_wait_p99_worst_ms: summary.pool_wait_p99_worst_ms.map(round),
        db_p99_ms: summary.db_p99_ms.map(round),
        pool_dry_at_s: summary.pool_dry_at_s.map(round),
        ..summary.clone()
    }
}

/// The name of the `.hgrm` file of `strategy`: `latency-<strategy>.hgrm`.
pub fn hgrm_file_name(strategy: &str) -> String {
    latency_file_name(strategy, "hgrm")
}

/// `latency-<strategy>.<extension>`, with any character of the strategy name other
/// than letters, digits, `-`, `_` and `.` replaced by `_`.
pub fn latency_file_name(strategy: &str, extension: &str) -> String {
    let safe: String = strategy
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("latency-{safe}.{extension}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::reference_report;

    #[test]
    fn write_all_writes_every_file() {
        let report = reference_report();
        let dir = tempfile::tempdir().unwrap();
        write_all(&report, dir.path()).unwrap();
        let mut written = Vec::new();
        for exporter in all_exporters() {
            let files = exporter.render(&report).unwrap();
            assert!(!files.is_empty(), "{} renders no file", exporter.name());
            for file in files {
                let on_disk = std::fs::read(dir.path().join(&file.name))
                    .unwrap_or_else(|_| panic!("{} is missing", file.name));
                assert_eq!(on_disk, file.bytes, "{} differs from its render", file.name);
                written.push(file.name);
            }
        }
        for name in [
            TIMELINE_CSV,
            ATTEMPTS_CSV,
            LOCKS_CSV,
            FAILURES_CSV,
            SUMMARY_CSV,
            SUMMARY_JSON,
            SUMMARY_MD,
            "latency-naive.hgrm",
            "latency-retry.hgrm",
            "latency-naive.hlog",
            "latency-retry.hlog",
        ] {
            assert!(
                written.iter().any(|file| file == name),
                "no exporter writes {name}"
            );
        }
        for chart in [TIMELINE_PNG, LATENCY_PNG, LATENCY_TIMELINE_PNG] {
            let size = std::fs::metadata(dir.path().join(chart))
                .unwrap_or_else(|_| panic!("{chart} is missing"))
                .len();
            assert!(size > 0, "{chart} is empty");
        }
    }

    #[test]
    fn write_all_creates_the_folder() {
        let report = reference_report();
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("results").join("add-column");
        write_all(&report, &nested).unwrap();
        assert!(nested.join(TIMELINE_CSV).exists());
    }

    #[test]
    fn a_write_error_names_the_file() {
        let report = reference_report();
        let dir = tempfile::tempdir().unwrap();
        // A folder where the file should go makes File::create fail.
        std::fs::create_dir(dir.path().join(TIMELINE_CSV)).unwrap();
        let error = write_all(&report, dir.path()).unwrap_err();
        let message = format!("{error:#}");
        assert!(
            message.contains(&format!(
                "writing {}",
                dir.path().join(TIMELINE_CSV).display()
            )),
            "{message}"
        );
        let files = csv::TimelineCsv.render(&report).unwrap();
        let error = write_files(dir.path(), &files).unwrap_err();
        let message = format!("{error:#}");
        assert!(
            message.starts_with(&format!(
                "writing {}",
                dir.path().join(TIMELINE_CSV).display()
            )),
            "{message}"
        );
    }

    #[test]
    fn hgrm_file_names_are_safe() {
        assert_eq!(hgrm_file_name("naive"), "latency-naive.hgrm");
        assert_eq!(
            hgrm_file_name("lock timeout/2"),
            "latency-lock_timeout_2.hgrm"
        );
    }
}
