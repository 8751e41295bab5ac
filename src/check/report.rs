//! What the check writes beside the migrations' results folders: the
//! judged migrations as one [`CheckReport`], rendered as `check.csv` (one
//! [`CheckRecord`] per migration and strategy), `check.json` and `junit.xml`
//! (one test case per migration) here, and as `check.md` in `markdown`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::run::{CheckRun, CheckedMigration, Outcome};
use super::verdict::{Judged, MigrationVerdict, judge};
use crate::config::{Budgets, CheckConfig, Data};
use crate::expect::{Verdict, xml_escape};
use crate::export::csv::LockTraceRecord;
use crate::metrics::lock_trace::Blocks;
use crate::metrics::ranking::ranking_row;
use crate::metrics::{DdlOutcome, StrategyReport};
use crate::results::{CHECK_CSV, CHECK_JSON, JUNIT_XML, OutputFile};

/// A whole check as every format shows it: the settings that frame the
/// figures and each migration with its judgement.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// The migrations folder, as the command line named it.
    pub dir: PathBuf,
    pub out_dir: PathBuf,
    pub deploy: String,
    pub recommend: String,
    pub budgets: Budgets,
    /// The blocker's hold, in seconds.
    pub hold_s: f64,
    pub clients: u32,
    /// Where the rows came from: `100,000 generated rows per table`, `--seed seed.sql`.
    pub data: String,
    pub server_version: String,
    pub earlier: usize,
    /// Tables the generator could not fill.
    pub unfilled: Vec<String>,
    pub migrations: Vec<(CheckedMigration, Judged)>,
}

impl CheckReport {
    /// Judges every migration of `run`.
    pub fn new(config: &CheckConfig, run: CheckRun) -> CheckReport {
        let deploy = config.deploy.name.clone();
        let recommend = config.recommend.name.clone();
        let migrations = run
            .migrations
            .into_iter()
            .map(|checked| {
                let judged = judge(&checked, &deploy, &recommend);
                (checked, judged)
            })
            .collect();
        CheckReport {
            dir: config.dir.clone(),
            out_dir: config.out_dir.clone(),
            deploy,
            recommend,
            budgets: config.budgets.clone(),
            hold_s: config.hold.as_secs_f64(),
            clients: config.clients,
            data: match &config.data {
                Data::Seed { path, .. } => format!("the rows of --seed {}", path.display()),
                Data::Rows(rows) => format!(
                    "{} generated rows per table",
                    crate::export::format::format_thousands(*rows)
                ),
            },
            server_version: run.server_version,
            earlier: run.earlier,
            unfilled: run.unfilled,
            migrations,
        }
    }

    /// The migrations that break a budget as deployed.
    pub fn failed(&self) -> Vec<&(CheckedMigration, Judged)> {
        self.migrations
            .iter()
            .filter(|(_, judged)| judged.verdict == MigrationVerdict::Fail)
            .collect()
    }

    /// The process exit code: 3 when a migration breaks a budget as deployed, else 0.
    pub fn exit_code(&self) -> i32 {
        match self.failed().is_empty() {
            true => 0,
            false => crate::expect::EXIT_CODE_FAILED,
        }
    }

    /// The budgets in words: `longest stall <= 1 s, p99 <= 200 ms`.
    pub fn budgets_words(&self) -> String {
        let budgets = &self.budgets;
        let mut words = vec![format!("longest stall <= {} s", budgets.max_stall_s)];
        if let Some(ms) = budgets.max_p99_ms {
            words.push(format!(
                "p99 <= {} ms",
                crate::export::format::trim_number(ms, 3)
            ));
        }
        if let Some(failed) = budgets.max_failed {
            words.push(format!("failed transactions <= {failed}"));
        }
        words.join(", ")
    }

    /// The verdict sentence, the first line of check.md and of stdout.
    pub fn verdict_line(&self) -> String {
        let failed = self.failed();
        let count = self.migrations.len();
        let plural = |n: usize| if n == 1 { "migration" } else { "migrations" };
        if count == 0 {
            return "**pass**: no new migrations to check.".to_string();
        }
        if failed.is_empty() {
            return format!(
                "**pass**: {count} new {} within budget as deployed ({}): {}.",
                plural(count),
                self.deploy,
                self.budgets_words()
            );
        }
        let names: Vec<&str> = failed
            .iter()
            .map(|(m, _)| m.migration.name.as_str())
            .collect();
        let fixed: Vec<&str> = failed
            .iter()
            .filter(|(_, judged)| judged.fixed_by_recommended == Some(true))
            .map(|(m, _)| m.migration.name.as_str())
            .collect();
        let recommended = match (fixed.len(), failed.len()) {
            (0, _) => format!("; {} does not keep any of them within it", self.recommend),
            (fixed_count, all) if fixed_count == all => {
                format!("; {} keeps every one within it", self.recommend)
            }
            _ => format!("; {} keeps {} within it", self.recommend, fixed.join(", ")),
        };
        format!(
            "**FAIL**: {} of {count} new {} break the budget as deployed ({}; {}): {}{recommended}.",
            failed.len(),
            plural(count),
            self.deploy,
            self.budgets_words(),
            names.join(", ")
        )
    }

    /// `check.csv`, `check.json` and `junit.xml`.
    pub fn files(&self) -> anyhow::Result<Vec<OutputFile>> {
        Ok(vec![self.csv()?, self.json()?, self.junit()])
    }

    /// One record per migration and strategy (one without a strategy for a migration not measured).
    pub fn records(&self) -> Vec<CheckRecord> {
        let mut records = Vec::new();
        for (checked, judged) in &self.migrations {
            let base = CheckRecord {
                migration: checked.migration.name.clone(),
                verdict: judged.verdict,
                strategy: String::new(),
                role: String::new(),
                blocks: None,
                within_budget: None,
                longest_stall_s: None,
                zero_tps_seconds: None,
                worst_second_tps: None,
                lat_p99_ms: None,
                lat_max_ms: None,
                failed: None,
                ddl_tries: None,
                ddl_outcome: None,
                done_after_s: None,
                broken: judged.broken.join("; "),
                fix: judged.fix.clone().unwrap_or_default(),
            };
            let Outcome::Measured(run) = &checked.outcome else {
                records.push(base);
                continue;
            };
            for (order, strategy) in run.report.strategies.iter().enumerate() {
                let within = run
                    .results
                    .iter()
                    .filter(|result| result.expectation.strategy == strategy.strategy)
                    .all(|result| result.verdict == Verdict::Pass);
                records.push(CheckRecord {
                    strategy: strategy.strategy.clone(),
                    role: self.role_of(&strategy.strategy).to_string(),
                    blocks: Some(run.blocks),
                    within_budget: Some(within),
                    ..figures(order, strategy, base.clone())
                });
            }
        }
        records
    }

    /// `deployed` or `recommended`.
    pub fn role_of(&self, strategy: &str) -> &'static str {
        match strategy == self.deploy {
            true => "deployed",
            false => "recommended",
        }
    }

    fn csv(&self) -> anyhow::Result<OutputFile> {
        let mut writer = ::csv::Writer::from_writer(Vec::new());
        for record in self.records() {
            writer.serialize(record)?;
        }
        Ok(OutputFile {
            name: CHECK_CSV.to_string(),
            bytes: writer.into_inner()?,
        })
    }

    fn json(&self) -> anyhow::Result<OutputFile> {
        let records = self.records();
        let migrations: Vec<MigrationJson> = self
            .migrations
            .iter()
            .map(|(checked, judged)| MigrationJson::new(checked, judged, &records))
            .collect();
        let file = CheckJson {
            verdict: match self.exit_code() {
                0 => "pass",
                _ => "fail",
            },
            deploy: &self.deploy,
            recommend: &self.recommend,
            max_stall_s: self.budgets.max_stall_s,
            max_p99_ms: self.budgets.max_p99_ms,
            max_failed: self.budgets.max_failed,
            migrations,
        };
        let mut bytes = serde_json::to_vec_pretty(&file)?;
        bytes.push(b'\n');
        Ok(OutputFile {
            name: CHECK_JSON.to_string(),
            bytes,
        })
    }

    /// One test case per migration; a failed one names the broken budgets,
    /// the fix and what the recommended strategy did.
    fn junit(&self) -> OutputFile {
        let failures = self.failed().len();
        let mut text = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        text.push_str(&format!(
            "<testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">\n",
            xml_escape(&format!("stallbench check {}", self.dir.display())),
            self.migrations.len(),
        ));
        for (checked, judged) in &self.migrations {
            let open = format!(
                "  <testcase classname=\"stallbench.check\" name=\"{}\"",
                xml_escape(&checked.migration.name)
            );
            if judged.verdict != MigrationVerdict::Fail {
                text.push_str(&open);
                text.push_str("/>\n");
                continue;
            }
            let body: Vec<&str> = [judged.fix.as_deref(), judged.recommended.as_deref()]
                .into_iter()
                .flatten()
                .collect();
            text.push_str(&format!(
                "{open}>\n    <failure message=\"{}\">{}</failure>\n  </testcase>\n",
                xml_escape(&format!("{}: {}", self.deploy, judged.broken.join("; "))),
                xml_escape(&body.join("; "))
            ));
        }
        text.push_str("</testsuite>\n");
        OutputFile {
            name: JUNIT_XML.to_string(),
            bytes: text.into_bytes(),
        }
    }
}

/// `base` with the measured figures of `strategy`, the `order`-th of its run.
fn figures(order: usize, strategy: &StrategyReport, base: CheckRecord) -> CheckRecord {
    let row = ranking_row(order, strategy);
    let round = |value: f64| (value * 1000.0).round() / 1000.0;
    let started_s = strategy.attempts.first().map(|attempt| attempt.started_s);
    CheckRecord {
        longest_stall_s: Some(row.longest_stall_s),
        zero_tps_seconds: Some(row.zero_tps_seconds),
        worst_second_tps: Some(row.worst_second_tps),
        lat_p99_ms: Some(round(strategy.summary.lat_p99_ms)),
        lat_max_ms: Some(round(strategy.summary.lat_max_ms)),
        failed: Some(strategy.summary.failed),
        ddl_tries: Some(row.ddl_tries),
        ddl_outcome: Some(row.ddl_outcome),
        done_after_s: match (row.migration_done_at_s, started_s) {
            (Some(done), Some(started)) => Some(round(done - started)),
            _ => None,
        },
        ..base
    }
}

/// One row of `check.csv`: one strategy's run of one migration (a migration
/// not measured has one row with the strategy and figures empty).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRecord {
    pub migration: String,
    /// The migration's verdict: `pass`, `fail` or `not_measured`.
    pub verdict: MigrationVerdict,
    pub strategy: String,
    /// `deployed` (`--deploy`, which the budgets judge) or `recommended`.
    pub role: String,
    /// What the strongest lock on a table the load touches blocks.
    pub blocks: Option<Blocks>,
    /// This strategy's run kept every budget.
    pub within_budget: Option<bool>,
    pub longest_stall_s: Option<u32>,
    pub zero_tps_seconds: Option<u32>,
    /// The lowest TPS of a second the migration touched.
    pub worst_second_tps: Option<u64>,
    pub lat_p99_ms: Option<f64>,
    pub lat_max_ms: Option<f64>,
    pub failed: Option<u64>,
    pub ddl_tries: Option<u32>,
    pub ddl_outcome: Option<DdlOutcome>,
    /// From the first try's start until the migration was done, in seconds.
    pub done_after_s: Option<f64>,
    /// The budgets the deployed run broke, separated by `; `.
    pub broken: String,
    /// The fix, for a migration that breaks a budget.
    pub fix: String,
}

/// `check.json`.
#[derive(Serialize)]
struct CheckJson<'a> {
    /// `pass` or `fail` (exit 3).
    verdict: &'a str,
    deploy: &'a str,
    recommend: &'a str,
    max_stall_s: u32,
    max_p99_ms: Option<f64>,
    max_failed: Option<u64>,
    migrations: Vec<MigrationJson>,
}

/// One migration in `check.json`: its judgement, its trace (the rows of
/// `ddl_locks.csv`) and its measured rows (those of `check.csv`).
#[derive(Serialize)]
struct MigrationJson {
    name: String,
    path: String,
    verdict: MigrationVerdict,
    broken: Vec<String>,
    fix: Option<String>,
    recommended: Option<String>,
    fixed_by_recommended: Option<bool>,
    not_measured: Option<String>,
    load: Option<String>,
    blocker: Option<String>,
    results: Option<String>,
    trace_ms: f64,
    locks: Vec<LockTraceRecord>,
    strategies: Vec<CheckRecord>,
}

impl MigrationJson {
    fn new(checked: &CheckedMigration, judged: &Judged, records: &[CheckRecord]) -> MigrationJson {
        let name = &checked.migration.name;
        let run = match &checked.outcome {
            Outcome::Measured(run) => Some(run),
            Outcome::NotMeasured => None,
        };
        MigrationJson {
            name: name.clone(),
            path: checked.migration.path.display().to_string(),
            verdict: judged.verdict,
            broken: judged.broken.clone(),
            fix: judged.fix.clone(),
            recommended: judged.recommended.clone(),
            fixed_by_recommended: judged.fixed_by_recommended,
            not_measured: judged.not_measured.clone(),
            load: run.map(|run| run.load.clone()),
            blocker: run.map(|run| run.blocker.clone()),
            results: run.map(|run| run.folder.display().to_string()),
            trace_ms: (checked.trace_ms * 1000.0).round() / 1000.0,
            locks: checked
                .statements
                .iter()
                .flat_map(|statement| LockTraceRecord::of_statement("trace", statement))
                .collect(),
            strategies: records
                .iter()
                .filter(|record| record.migration == *name && !record.strategy.is_empty())
                .cloned()
                .collect(),
        }
    }
}
