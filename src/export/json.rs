//! `summary.json`: `{"workload": ..., "strategies": [Summary, ...]}`.

use serde::{Deserialize, Serialize};

use crate::metrics::{RunReport, Summary};

use super::{Exporter, rounded_summary};
use crate::results::{OutputFile, SUMMARY_JSON};

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

    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>> {
        let file = SummaryFile {
            workload: report.workload.clone(),
            strategies: report
                .strategies
                .iter()
                .map(|strategy| rounded_summary(&strategy.summary))
                .collect(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file)?;
        bytes.push(b'\n');
        Ok(vec![OutputFile {
            name: SUMMARY_JSON.to_string(),
            bytes,
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::reference_report;

    #[test]
    fn summary_json_parses_and_has_both_strategies() {
        let report = reference_report();
        let files = SummaryJson.render(&report).unwrap();
        assert_eq!(files[0].name, SUMMARY_JSON);
        let text = String::from_utf8(files[0].bytes.clone()).unwrap();

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
