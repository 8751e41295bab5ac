//! What the check writes beside the migrations' results folders: the
//! judged migrations as one [`CheckReport`], rendered as `check.csv` (one
//! [`CheckRecord`] per migration and strategy) and `junit.xml` (one test
//! case per migration) here, `check.json` in [`check_json`], `check.md` and
//! the console's text in [`check_md`], the PR comment in [`pr_comment`],
//! `report.html` in [`check_page`]. The check front door only calls these;
//! the data they read lives in `check_verdict`.

pub mod check_json;
pub mod check_md;
pub mod check_page;
pub mod phase_lines;
pub mod pr_comment;
pub mod replica_cells;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::choices::Measure;
use crate::config::{Budgets, CheckConfig, Data};
use crate::engine::postgres::check_verdict::checked::{
    CheckRun, CheckedMigration, Outcome, Unordered,
};
use crate::engine::postgres::check_verdict::phases::CheckPhases;
use crate::engine::postgres::check_verdict::traced::trace_findings;
use crate::engine::postgres::check_verdict::verdict::{Judged, Judging, MigrationVerdict, judge};
use crate::expect::Verdict;
use crate::export::junit::{JunitCase, JunitOutcome, JunitSuite};
use crate::metrics::lock_trace::Blocks;
use crate::metrics::ranking::run_figures;
use crate::metrics::{DdlOutcome, StrategyReport};
use crate::results::{CHECK_CSV, CHECK_JSON, OutputFile};
use check_json::{CheckJson, MigrationJson};
use replica_cells::{ReplicaCell, with_replica_cells};

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
    /// Tables the fill's scope left empty (`--fill locked`).
    pub left_empty: Vec<String>,
    /// Tables filled for their keys only, with their rows (see [`CheckRun::key_tables`]).
    pub key_tables: Vec<String>,
    /// Tables that got fewer rows than asked, with their count and why.
    pub fewer_rows: Vec<String>,
    /// What the reader should know about the folder (see [`CheckRun::notes`]).
    pub notes: Vec<String>,
    /// New migrations the tool would not apply after the others: the
    /// check's failure, nothing measured.
    pub unordered: Option<Unordered>,
    /// Which migrations ran under traffic (`--measure`).
    pub measure: Measure,
    /// `--replica`: each measured migration also ran with the report on the hot standby.
    pub replica: bool,
    pub migrations: Vec<(CheckedMigration, Judged)>,
    /// Where the check's time went (the report's own time set once it is rendered).
    pub phases: CheckPhases,
}

impl CheckReport {
    /// Judges every migration of `run`.
    pub fn new(config: &CheckConfig, run: CheckRun) -> CheckReport {
        let deploy = config.deploy.name.clone();
        let recommend = config.recommend.name.clone();
        let judging = Judging {
            deploy: &deploy,
            recommend: &recommend,
            max_stall_s: config.budgets.max_stall_s,
            layout: run.layout,
        };
        let migrations = run
            .migrations
            .into_iter()
            .map(|checked| {
                let judged = judge(&checked, &judging);
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
                Data::Rows(rows) => {
                    let count = crate::export::format::format_thousands;
                    let own: Vec<String> = (rows.tables.iter())
                        .map(|(table, rows)| format!(", {} in {table}", count(*rows)))
                        .collect();
                    let fewer = match run.fewer_rows.len() {
                        0 => String::new(),
                        1 => " (fewer in 1 table, listed below)".to_string(),
                        n => format!(" (fewer in {n} tables, listed below)"),
                    };
                    let mut aside = Vec::new();
                    if !run.key_tables.is_empty() {
                        aside.push(format!(
                            "{} of these with fewer, for their keys only, listed below",
                            run.key_tables.len()
                        ));
                    }
                    if !run.left_empty.is_empty() {
                        let left = run.left_empty.len();
                        aside.push(format!(
                            "{} other{} left empty: --fill all fills them",
                            count(left as u64),
                            if left == 1 { "" } else { "s" }
                        ));
                    }
                    let scope = match aside.is_empty() {
                        true => String::new(),
                        false => format!(
                            " in the {} tables the new migrations lock or name and those their \
                             foreign keys need ({})",
                            run.phases.fill_tables,
                            aside.join("; ")
                        ),
                    };
                    format!(
                        "{} generated rows per table{}{scope}{fewer}",
                        count(rows.every_table),
                        own.concat()
                    )
                }
            },
            server_version: run.server_version,
            earlier: run.earlier,
            unfilled: run.unfilled,
            left_empty: run.left_empty,
            key_tables: run.key_tables,
            fewer_rows: run.fewer_rows,
            notes: run.notes,
            unordered: run.unordered,
            measure: config.measure,
            replica: config.replica,
            migrations,
            phases: run.phases,
        }
    }

    /// The migrations that break a budget as deployed.
    pub fn failed(&self) -> Vec<&(CheckedMigration, Judged)> {
        self.migrations
            .iter()
            .filter(|(_, judged)| judged.verdict == MigrationVerdict::Fail)
            .collect()
    }

    /// The migrations judged from their trace alone that need a measured run.
    pub fn flagged(&self) -> Vec<&(CheckedMigration, Judged)> {
        self.migrations
            .iter()
            .filter(|(_, judged)| judged.verdict == MigrationVerdict::Flagged)
            .collect()
    }

    /// The migrations whose deployed run is no result.
    pub fn invalid(&self) -> Vec<&(CheckedMigration, Judged)> {
        self.migrations
            .iter()
            .filter(|(_, judged)| judged.verdict == MigrationVerdict::Invalid)
            .collect()
    }

    /// The process exit code, as `compare`'s: 2 when no new migration has a
    /// result (none could run, or their tables are empty: bad input), 4 when
    /// a migration's deployed run is no result, else 3 when one breaks a
    /// budget as deployed, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.unordered.is_some() {
            return crate::error::exit_code::EXPECTATION_FAILED;
        }
        let could_not_run = |(checked, _): &(CheckedMigration, Judged)| {
            matches!(checked.outcome, Outcome::NoResult(_))
        };
        if !self.migrations.is_empty() && self.migrations.iter().all(could_not_run) {
            return crate::error::exit_code::BAD_INPUT;
        }
        if !self.invalid().is_empty() {
            return crate::error::exit_code::INVALID;
        }
        match self.failed().is_empty() {
            true => crate::error::exit_code::SUCCESS,
            false => crate::error::exit_code::EXPECTATION_FAILED,
        }
    }

    /// The budgets in words: `longest stall <= 1 s, p99 <= 200 ms`.
    pub fn budgets_words(&self) -> String {
        let budgets = &self.budgets;
        let on_replica = match self.replica {
            true => " (the replica's readers too)",
            false => "",
        };
        let mut words = vec![format!(
            "longest stall <= {} s{on_replica}",
            budgets.max_stall_s
        )];
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
        if let Some(unordered) = &self.unordered {
            return format!(
                "**FAIL**: the migration tool would not apply {} where the check puts new \
                 migrations, so nothing was run: {}.",
                unordered.migrations.join(", "),
                unordered.reason
            );
        }
        let failed = self.failed();
        let count = self.migrations.len();
        let plural = |n: usize| if n == 1 { "migration" } else { "migrations" };
        if count == 0 {
            return "**pass**: no new migrations to check.".to_string();
        }
        let invalid = self.invalid();
        if !invalid.is_empty() {
            let reasons: Vec<String> = invalid
                .iter()
                .map(|(m, judged)| {
                    let reason = judged.invalid.as_deref().unwrap_or_default();
                    format!("{} ({reason})", m.migration.name)
                })
                .collect();
            // The failures stay in the headline: no result for one migration
            // does not make the others' stalls any shorter.
            let also_failed = match failed.len() {
                0 => String::new(),
                n => format!(
                    " Besides, {n} of {count} {} the budget as deployed ({}): {}.",
                    if n == 1 { "breaks" } else { "break" },
                    self.deploy,
                    failed
                        .iter()
                        .map(|(m, _)| m.migration.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            return format!(
                "**INVALID**: {} of {count} new {} did not run as written, so the check has \
                 no result for them: {}.{also_failed}",
                invalid.len(),
                plural(count),
                reasons.join("; ")
            );
        }
        let flagged: Vec<&str> = (self.flagged().into_iter())
            .map(|(m, _)| m.migration.name.as_str())
            .collect();
        let also_flagged = match flagged.len() {
            0 => String::new(),
            n => format!(
                " {n} of {count} judged from the trace alone {} a lock that blocks traffic or a \
                 rename, which only a measured run can judge (--measure flagged): {}.",
                if n == 1 { "shows" } else { "show" },
                flagged.join(", ")
            ),
        };
        let traced = self.traced_only();
        let trace_words = match traced.len() {
            0 => String::new(),
            n if n == count => format!(
                " None ran under traffic ({}), so no stall was measured: {}.",
                self.why_not_measured(),
                trace_findings(&traced)
            ),
            n => format!(
                " {n} of {count} did not run under traffic ({}), so no stall was measured for \
                 them: {}.",
                self.why_not_measured(),
                trace_findings(&traced)
            ),
        };
        if failed.is_empty() && !flagged.is_empty() {
            return format!("**flagged**:{also_flagged}{trace_words}");
        }
        if failed.is_empty() && traced.len() == count {
            return format!(
                "**pass**: {count} new {} traced, none over a budget by the trace.{trace_words}",
                plural(count),
            );
        }
        if failed.is_empty() {
            let measured = count - traced.len();
            let of_count = match measured == count {
                true => format!("{count} new {}", plural(count)),
                false => format!("{measured} of {count} new {}", plural(count)),
            };
            return format!(
                "**pass**: {of_count} within budget as deployed ({}): {}.{trace_words}",
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
        let not_shown: Vec<&str> = (failed.iter())
            .filter(|(_, judged)| judged.fix_not_shown())
            .map(|(m, _)| m.migration.name.as_str())
            .collect();
        let not_shown_words = match not_shown.len() {
            0 => String::new(),
            _ => format!(
                "; not shown whether {} keeps {} within it: its migration committed as its run \
                 ended (lengthen --duration)",
                self.recommend,
                not_shown.join(", ")
            ),
        };
        let not_fixed: Vec<&str> = (names.iter().copied())
            .filter(|name| !fixed.contains(name) && !not_shown.contains(name))
            .collect();
        let named = |keeps: &str, which: &[&str]| match which.is_empty() {
            true => String::new(),
            false => format!(
                "; {} {keeps} {} within it",
                self.recommend,
                which.join(", ")
            ),
        };
        let recommended = match (fixed.len(), failed.len()) {
            _ if self.measure == Measure::None => "; no strategy shortens a hold".to_string(),
            _ if !not_shown.is_empty() => {
                named("keeps", &fixed) + &named("does not keep", &not_fixed)
            }
            (0, 1) => format!("; {} does not keep it within the budget", self.recommend),
            (1, 1) => format!("; {} keeps it within the budget", self.recommend),
            (0, _) => format!("; {} does not keep any of them within it", self.recommend),
            (fixed_count, all) if fixed_count == all => {
                format!("; {} keeps every one within it", self.recommend)
            }
            _ => format!("; {} keeps {} within it", self.recommend, fixed.join(", ")),
        };
        let not_applied: Vec<&str> = (failed.iter())
            .filter(|(_, judged)| judged.not_applied.is_some())
            .map(|(m, _)| m.migration.name.as_str())
            .collect();
        let not_applied = match not_applied.len() {
            0 => String::new(),
            _ => format!(
                " ({} did not apply as deployed: a failed deploy)",
                not_applied.join(", ")
            ),
        };
        format!(
            "**FAIL**: {} of {count} new {} {} the budget as deployed ({}; {}): \
             {}{not_applied}{recommended}{not_shown_words}.{also_flagged}",
            failed.len(),
            plural(count),
            if failed.len() == 1 { "breaks" } else { "break" },
            self.deploy,
            self.budgets_words(),
            names.join(", ")
        )
    }

    /// The migrations that did not run under traffic: judged from their
    /// trace alone (`--measure`), or locking no table that existed before them.
    pub fn traced_only(&self) -> Vec<&CheckedMigration> {
        (self.migrations.iter())
            .map(|(checked, _)| checked)
            .filter(|checked| matches!(checked.outcome, Outcome::Traced(_) | Outcome::NotMeasured))
            .collect()
    }

    /// Why the migrations of [`CheckReport::traced_only`] did not run under
    /// traffic: `--trace-only`, `--measure flagged`, or that they lock no
    /// table that existed before them.
    fn why_not_measured(&self) -> String {
        let outcomes = || {
            self.traced_only()
                .into_iter()
                .map(|checked| &checked.outcome)
        };
        let mut why = Vec::new();
        if outcomes().any(|outcome| matches!(outcome, Outcome::Traced(_))) {
            why.push(match self.measure {
                Measure::Flagged => "--measure flagged",
                _ => "--trace-only",
            });
        }
        if outcomes().any(|outcome| matches!(outcome, Outcome::NotMeasured)) {
            why.push("or they lock no table that existed before them");
        }
        why.join(", ").trim_start_matches("or ").to_string()
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
                fix: judged.fixes.join("; "),
                replica_zero_tps_seconds: ReplicaCell::Absent,
                replica_longest_stall_s: ReplicaCell::Absent,
                replica_failed: ReplicaCell::Absent,
                replica_replay_waiting_s: ReplicaCell::Absent,
                replica_max_lag_s: ReplicaCell::Absent,
                replica_cancelled: ReplicaCell::Absent,
                wal_bytes: ReplicaCell::Absent,
            };
            let base = with_replica_cells(base, self.replica, None);
            let Outcome::Measured(run) = &checked.outcome else {
                records.push(base);
                continue;
            };
            for strategy in &run.report.strategies {
                let within = run
                    .results
                    .iter()
                    .filter(|result| result.expectation.strategy == strategy.strategy)
                    .all(|result| result.verdict == Verdict::Pass);
                let record = CheckRecord {
                    strategy: strategy.strategy.clone(),
                    role: self.role_of(&strategy.strategy).to_string(),
                    blocks: Some(run.blocks),
                    within_budget: Some(within),
                    ..figures(strategy, base.clone())
                };
                records.push(with_replica_cells(record, self.replica, Some(strategy)));
            }
            let replica_runs = run.replica.iter().flat_map(|r| &r.report.strategies);
            for strategy in replica_runs {
                let stall =
                    crate::engine::postgres::check_verdict::replica::ReplicaStall::of(strategy);
                let record = CheckRecord {
                    strategy: strategy.strategy.clone(),
                    role: format!("{}{REPLICA_ROLE}", self.role_of(&strategy.strategy)),
                    blocks: Some(run.blocks),
                    within_budget: Some(!stall.over(self.budgets.max_stall_s)),
                    ..figures(strategy, base.clone())
                };
                records.push(with_replica_cells(record, true, Some(strategy)));
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
                0 if !self.flagged().is_empty() => "flagged",
                0 => "pass",
                crate::error::exit_code::INVALID | crate::error::exit_code::BAD_INPUT => "invalid",
                _ => "fail",
            },
            deploy: &self.deploy,
            recommend: &self.recommend,
            max_stall_s: self.budgets.max_stall_s,
            max_p99_ms: self.budgets.max_p99_ms,
            max_failed: self.budgets.max_failed,
            unordered: self.unordered.as_ref(),
            notes: &self.notes,
            measured: (self.migrations.iter())
                .filter(|(checked, _)| matches!(checked.outcome, Outcome::Measured(_)))
                .count(),
            migrations,
            phases: &self.phases,
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
        let unordered = self.unordered.iter().flat_map(|unordered| {
            unordered.migrations.iter().map(|name| JunitCase {
                classname: "stallbench.check".to_string(),
                name: name.clone(),
                outcome: JunitOutcome::Failed {
                    message: "the migration tool would not apply it here".to_string(),
                    body: unordered.reason.clone(),
                },
            })
        });
        let cases: Vec<JunitCase> = self
            .migrations
            .iter()
            .map(|(checked, judged)| {
                let outcome = if let Some(reason) = &judged.invalid {
                    JunitOutcome::Error {
                        message: "no result".to_string(),
                        body: reason.clone(),
                    }
                } else if judged.verdict == MigrationVerdict::Flagged {
                    JunitOutcome::Skipped {
                        message: format!("flagged, not measured: {}", judged.flags.join("; ")),
                    }
                } else if judged.verdict != MigrationVerdict::Fail {
                    JunitOutcome::Passed
                } else {
                    let body: Vec<&str> = (judged.fixes.iter().map(String::as_str))
                        .chain(judged.recommended.as_deref())
                        .collect();
                    JunitOutcome::Failed {
                        message: format!("{}: {}", self.deploy, judged.broken.join("; ")),
                        body: body.join("; "),
                    }
                };
                JunitCase {
                    classname: "stallbench.check".to_string(),
                    name: checked.migration.name.clone(),
                    outcome,
                }
            })
            .collect();
        JunitSuite {
            name: format!("stallbench check {}", self.dir.display()),
            cases: unordered.chain(cases).collect(),
        }
        .file()
    }
}

/// `base` with the measured figures of `strategy`.
fn figures(strategy: &StrategyReport, base: CheckRecord) -> CheckRecord {
    let row = run_figures(strategy);
    let round = crate::export::format::round3;
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
    /// The migration's verdict: `pass`, `fail`, `invalid` or `not_measured`.
    pub verdict: MigrationVerdict,
    pub strategy: String,
    /// `deployed` (`--deploy`, which the budgets judge) or `recommended`;
    /// `deployed-replica` and `recommended-replica` for their runs with the
    /// report on the hot standby (`--replica`), whose figures of traffic are
    /// those of the server whose clients fared worse, as the ranking judges
    /// a load on both servers.
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
    /// The fixes, for a migration that breaks a budget, separated by `; `.
    pub fix: String,
    /// `--replica` (these columns only then): the hot standby's clients'
    /// seconds with no completed transaction, in the `*-replica` rows.
    #[serde(default, skip_serializing_if = "ReplicaCell::is_absent")]
    pub replica_zero_tps_seconds: ReplicaCell<u32>,
    /// The standby's clients' longest stall, in seconds, in the `*-replica` rows.
    #[serde(default, skip_serializing_if = "ReplicaCell::is_absent")]
    pub replica_longest_stall_s: ReplicaCell<u32>,
    /// The standby's clients' failed transactions (40001 among them), in the `*-replica` rows.
    #[serde(default, skip_serializing_if = "ReplicaCell::is_absent")]
    pub replica_failed: ReplicaCell<u64>,
    /// The seconds in which the standby's replay waited for a lock.
    #[serde(default, skip_serializing_if = "ReplicaCell::is_absent")]
    pub replica_replay_waiting_s: ReplicaCell<u32>,
    /// The highest replay lag of any second, in seconds.
    #[serde(default, skip_serializing_if = "ReplicaCell::is_absent")]
    pub replica_max_lag_s: ReplicaCell<f64>,
    /// Queries the standby cancelled for recovery conflicts.
    #[serde(default, skip_serializing_if = "ReplicaCell::is_absent")]
    pub replica_cancelled: ReplicaCell<u64>,
    /// The WAL the strategy's DDL tries wrote, in bytes (`summary.csv`'s
    /// `wal_bytes`): what the standby received and replayed.
    #[serde(default, skip_serializing_if = "ReplicaCell::is_absent")]
    pub wal_bytes: ReplicaCell<u64>,
}

impl CheckRecord {
    /// Whether the row is a run with the report on the hot standby
    /// (`check --replica`, role `deployed-replica` or `recommended-replica`).
    pub fn on_replica(&self) -> bool {
        self.role.ends_with(REPLICA_ROLE)
    }
}

/// The end of the role of a run with the report on the standby.
const REPLICA_ROLE: &str = "-replica";

#[cfg(test)]
pub(crate) mod tests;
