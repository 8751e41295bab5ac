//! `summary.json`: `{"workload": ..., "strategies": [Summary, ...]}`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::metrics::{RunReport, Summary};

use super::{Exporter, SUMMARY_JSON, rounded_summary, write_file};

/// The layout of `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryFile {
    /// Name of the workload that was run.
    pub workload: String,
    /// One summary per strategy, in run order.
    pub strategies: Vec<Summary>,
}

/// Writes `summary.json`.
pub struct SummaryJson;

impl Exporter for SummaryJson {
    fn name(&self) -> &'static str {
        SUMMARY_JSON
    }

    fn write(&self, report: &RunReport, dir: &Path) -> anyhow::Result<()> {
        let file = SummaryFile {
            workload: report.workload.clone(),
            strategies: report
                .strategies
                .iter()
                .map(|strategy| rounded_summary(&strategy.summary))
                .collect(),
        };
        write_file(&dir.join(SUMMARY_JSON), |out| {
            serde_json::to_writer_pretty(&mut *out, &file)?;
            std::io::Write::write_all(out, b"\n")?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::sample::reference_report;

    #[test]
    fn summary_json_parses_and_has_both_strategies() {
        let report = reference_report();
        let dir = tempfile::tempdir().unwrap();
        SummaryJson.write(&report, dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(SUMMARY_JSON)).unwrap();

        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["workload"], "add-column");
        let strategies = value["strategies"].as_array().unwrap();
        assert_eq!(strategies.len(), 2);
        assert_eq!(strategies[0]["strategy"], "naive");
        assert_eq!(strategies[1]["strategy"], "retry");
        assert_eq!(strategies[0]["zero_tps_seconds"], 9);
        assert_eq!(strategies[1]["ddl_attempts"], 5);

        let file: SummaryFile = serde_json::from_str(&text).unwrap();
        assert_eq!(
            file.strategies[0].strategy,
            report.strategies[0].summary.strategy
        );
        assert_eq!(
            file.strategies[1].transactions,
            report.strategies[1].summary.transactions
        );
    }
}
