//! `summary.json`: `{"workload": ..., "strategies": [Summary, ...]}`.

use serde::{Deserialize, Serialize};

use crate::metrics::invariants::{InvariantCheck, total_anomalies};
use crate::metrics::{RunReport, Summary};

use super::{Exporter, rounded_summary};
use crate::results::{OutputFile, SUMMARY_JSON};

/// The layout of `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryFile {
    /// Name of the workload that was run.
    pub workload: String,
    /// One summary per strategy, in run order.
    pub strategies: Vec<SummaryEntry>,
}

/// One strategy's run in `summary.json`: its summary, and with
/// `[[invariants]]` what its data lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryEntry {
    #[serde(flatten)]
    pub summary: Summary,
    /// The anomalies its invariants counted; absent without invariants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anomalies: Option<u64>,
    /// Each invariant's expected and actual value; absent without invariants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<InvariantCheck>,
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
                .map(|strategy| SummaryEntry {
                    summary: rounded_summary(&strategy.summary),
                    anomalies: (!strategy.invariants.is_empty())
                        .then(|| total_anomalies(&strategy.invariants)),
                    invariants: strategy.invariants.clone(),
                })
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
        assert!(strategies[0].get("anomalies").is_none());

        let file: SummaryFile = serde_json::from_str(&text).unwrap();
        assert_eq!(
            file.strategies[0].summary.strategy,
            report.strategies[0].summary.strategy
        );
        assert_eq!(
            file.strategies[1].summary.transactions,
            report.strategies[1].summary.transactions
        );
    }

    #[test]
    fn a_run_with_invariants_has_its_anomalies_and_each_check() {
        let mut report = reference_report();
        report.strategies[0].invariants = vec![
            InvariantCheck::new("counter", "lost updates", "1510", "1198"),
            InvariantCheck::new("rows", "anomalies", "1", "1"),
        ];
        let files = SummaryJson.render(&report).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&files[0].bytes).unwrap();
        let naive = &value["strategies"][0];
        assert_eq!(naive["anomalies"], 312);
        assert_eq!(naive["invariants"][0]["expected"], "1510");
        assert_eq!(naive["invariants"][0]["actual"], "1198");
        assert_eq!(naive["invariants"][1]["anomalies"], 0);
        assert_eq!(naive["strategy"], "naive");
        let file: SummaryFile = serde_json::from_slice(&files[0].bytes).unwrap();
        assert_eq!(file.strategies[0].anomalies, Some(312));
        assert_eq!(file.strategies[1].anomalies, None);
    }
}
