//! Renders a [`RunReport`] into the files of a results folder, one exporter per
//! format, and reads such a folder back; `console` renders the same tables
//! for stdout, `junit` the one JUnit writer, `check_report` the files of
//! `check` (from `check_verdict`'s data: check.csv, check.json, junit.xml's cases,
//! check.md, pr-comment.md, report.html).
//!
//! Exporters only render to memory; [`results::write_files`] is the one place
//! their output (and the expectation files) touches the disk; the charts
//! (`plot::draw_all`) draw their own PNGs. The files' names live in [`results`].
//! The words and numbers every format shares live here too: `table` builds the
//! table rows once, `format` writes figures, `sentences` the sentences.
//! The CSV headers are a contract: users and CI parse these files, so change
//! them only together with docs/reading-the-output.md's list of columns.

pub mod check_report;
pub mod ci;
pub mod console;
pub mod csv;
pub mod format;
pub mod hgrm;
pub mod hlog;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod read;
pub mod run_json;
pub mod sentences;
pub mod sweep;
pub mod table;
pub mod workload_toml;

use std::path::Path;

use anyhow::Context;

use crate::metrics::{RunReport, Summary};
use crate::results::{self, OutputFile};

pub use read::read_report;

/// One output format of a results folder.
pub trait Exporter {
    /// File name(s) this writes, for messages.
    fn name(&self) -> &'static str;
    /// Renders this format of `report` into one or more files.
    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>>;
}

/// Every file exporter: timeline CSV, attempts CSV, lock trace CSV, locks CSV, failures CSV, summary CSV/JSON/Markdown,
/// `.hgrm` and `.hlog` files, `report.html`.
/// The charts are not exporters; `plot::draw_all` draws them.
pub fn all_exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(csv::TimelineCsv),
        Box::new(csv::AttemptsCsv),
        Box::new(csv::LockTraceCsv),
        Box::new(csv::LocksCsv),
        Box::new(csv::FailuresCsv),
        Box::new(csv::SummaryCsv),
        Box::new(json::SummaryJson),
        Box::new(markdown::SummaryMarkdown),
        Box::new(hgrm::HgrmFiles),
        Box::new(hlog::HlogFiles),
        Box::new(html::ReportHtml),
    ]
}

/// Creates `dir` if needed and writes every exporter's files into it.
pub fn write_all(report: &RunReport, dir: &Path) -> anyhow::Result<()> {
    results::create_folder(dir)?;
    for exporter in all_exporters() {
        let files = exporter
            .render(report)
            .with_context(|| format!("exporting {}", exporter.name()))?;
        results::write_files(dir, &files)
            .with_context(|| format!("exporting {}", exporter.name()))?;
    }
    Ok(())
}

/// `summary` with its float figures rounded to 3 decimals, so the files show
/// `2975.118` rather than `2975.1176470588234`.
pub(crate) fn rounded_summary(summary: &Summary) -> Summary {
    let round = format::round3;
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
        worst_second_p99_ms: round(summary.worst_second_p99_ms),
        baseline_tps: round(summary.baseline_tps),
        worst_second_share: round(summary.worst_second_share),
        replica_max_lag_s: summary.replica_max_lag_s.map(round),
        replica_lat_max_ms: summary.replica_lat_max_ms.map(round),
        ok_p50_ms: summary.ok_p50_ms.map(round),
        ok_p99_ms: summary.ok_p99_ms.map(round),
        ok_max_ms: summary.ok_max_ms.map(round),
        ..summary.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{
        ATTEMPTS_CSV, FAILURES_CSV, LOCKS_CSV, SUMMARY_CSV, SUMMARY_JSON, SUMMARY_MD, TIMELINE_CSV,
        is_run_file,
    };
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
        let error = results::write_files(dir.path(), &files).unwrap_err();
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
    fn every_file_an_exporter_writes_is_a_run_file() {
        let report = reference_report();
        for exporter in all_exporters() {
            for file in exporter.render(&report).unwrap() {
                assert!(is_run_file(&file.name), "{} is not listed", file.name);
            }
        }
    }
}
