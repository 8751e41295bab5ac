//! The verdict on each migration, as plain data for every format: whether
//! it keeps the budgets the way it is deployed, which budget it breaks, the
//! fix (from the statement whose lock did the damage), and whether the
//! recommended strategy keeps it within budget.

use serde::{Deserialize, Serialize};

use super::breakage::{breakage, breakage_fix};
use super::run::{CheckedMigration, Outcome};
use crate::expect::{Bound, ExpectationResult, Verdict};
use crate::export::format::trim_number;
use crate::metrics::lock_trace::{Blocks, TracedLock, TracedStatement, strongest_table_locks};
use crate::metrics::{RunReport, StrategyReport};
use crate::strategy::statements::statement_words;

/// What the check says about one migration. In check.csv and check.json as
/// `pass`, `fail`, `invalid` or `not_measured`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MigrationVerdict {
    /// Within every budget as deployed.
    Pass,
    /// Over a budget as deployed: the check exits 3.
    Fail,
    /// No result: the deployed run did not happen as written (its blocker
    /// failed, or the migration failed for a reason other than its lock), or
    /// the migration could not run at all; the check exits 4, as `compare`
    /// does (2 when no migration could run).
    Invalid,
    /// It locks no table that existed before it: nothing for traffic to wait on.
    NotMeasured,
}

impl MigrationVerdict {
    /// `pass`, `FAIL`, `not measured`: how check.md shows it.
    pub fn words(self) -> &'static str {
        match self {
            MigrationVerdict::Pass => "pass",
            MigrationVerdict::Fail => "FAIL",
            MigrationVerdict::Invalid => "INVALID",
            MigrationVerdict::NotMeasured => "not measured",
        }
    }
}

/// The judgement of one migration, built once, rendered by every format.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub verdict: MigrationVerdict,
    /// The budgets the deploy strategy broke, in words: `longest stall 3 s (budget 1 s)`.
    pub broken: Vec<String>,
    /// For a failed migration: what blocked whom, for how long, and the fix.
    pub fix: Option<String>,
    /// Whether the recommended strategy keeps every budget; `None` when it did not run.
    pub fixed_by_recommended: Option<bool>,
    /// `fixed by retry: longest stall 0 s`, or `retry does not fix it: ...`.
    pub recommended: Option<String>,
    /// Why it was not measured, for a migration that was not.
    pub not_measured: Option<String>,
    /// Why the deployed run is no result, for an invalid migration.
    pub invalid: Option<String>,
}

/// Judges `checked`: `deploy` and `recommend` name the strategies.
pub fn judge(checked: &CheckedMigration, deploy: &str, recommend: &str) -> Judged {
    if let Outcome::NoResult(error) = &checked.outcome {
        return Judged {
            verdict: MigrationVerdict::Invalid,
            broken: Vec::new(),
            fix: None,
            fixed_by_recommended: None,
            recommended: None,
            not_measured: None,
            invalid: Some(error.clone()),
        };
    }
    let Outcome::Measured(run) = &checked.outcome else {
        return Judged {
            verdict: MigrationVerdict::NotMeasured,
            broken: Vec::new(),
            fix: None,
            fixed_by_recommended: None,
            recommended: None,
            not_measured: Some(
                "it locks no table that existed before it, so no traffic waits on it".to_string(),
            ),
            invalid: None,
        };
    };
    let of = |strategy: &str| -> Vec<&ExpectationResult> {
        run.results
            .iter()
            .filter(|result| result.expectation.strategy == strategy)
            .collect()
    };
    let deployed = strategy(&run.report, deploy);
    // A migration that breaks the application fails whatever the budgets say.
    let deployed_breakage = deployed.and_then(breakage);
    let broken: Vec<String> = deployed_breakage
        .iter()
        .map(|breakage| breakage.words())
        .chain(
            of(deploy)
                .into_iter()
                .filter(|result| result.verdict == Verdict::Fail)
                .map(budget_words),
        )
        .collect();
    let recommended_results = of(recommend);
    let recommended_run = strategy(&run.report, recommend);
    let recommended_breakage = recommended_run.and_then(breakage);
    let is_valid =
        |name: &str| strategy(&run.report, name).is_none_or(|s| s.summary.invalid.is_empty());
    let fixed_by_recommended = (recommend != deploy
        && !recommended_results.is_empty()
        && is_valid(recommend))
    .then(|| {
        recommended_breakage.is_none()
            && recommended_results
                .iter()
                .all(|r| r.verdict == Verdict::Pass)
    });
    let invalid = deployed
        .filter(|deployed| !deployed.summary.invalid.is_empty())
        .map(|deployed| deployed.summary.invalid.clone());
    let verdict = match (&invalid, broken.is_empty()) {
        (Some(_), _) => MigrationVerdict::Invalid,
        (None, true) => MigrationVerdict::Pass,
        (None, false) => MigrationVerdict::Fail,
    };
    let fix = match (verdict, deployed, &deployed_breakage) {
        (MigrationVerdict::Fail, _, Some(breakage)) => {
            Some(breakage_fix(&checked.statements, breakage))
        }
        (MigrationVerdict::Fail, Some(deployed), None) => {
            fix_sentence(&checked.statements, deployed)
        }
        _ => None,
    };
    let recommended = match (verdict, fixed_by_recommended, recommended_run) {
        (MigrationVerdict::Fail, Some(fixed), Some(report)) => {
            let stall = format!("longest stall {} s", report.summary.longest_stall_s);
            Some(match (fixed, &recommended_breakage) {
                (true, _) => format!("fixed by {recommend}: {stall}"),
                (false, Some(breakage)) => {
                    format!("{recommend} does not fix it: {}", breakage.words())
                }
                (false, None) => format!("{recommend} does not fix it: {stall}"),
            })
        }
        _ => None,
    };
    Judged {
        verdict,
        broken,
        fix,
        fixed_by_recommended,
        recommended,
        not_measured: None,
        invalid,
    }
}

fn strategy<'a>(report: &'a RunReport, name: &str) -> Option<&'a StrategyReport> {
    report.strategies.iter().find(|s| s.strategy == name)
}

/// A broken budget in words: `longest stall 3 s (budget 1 s)`.
fn budget_words(result: &ExpectationResult) -> String {
    let measured = &result.measured;
    match &result.expectation.bound {
        Bound::MaxLongestStallS(limit) => format!("longest stall {measured} s (budget {limit} s)"),
        Bound::MaxP99Ms(limit) => {
            format!("p99 {measured} (budget {} ms)", trim_number(*limit, 3))
        }
        Bound::MaxFailed(limit) => format!("{measured} failed transactions (budget {limit})"),
        other => format!("{} measured {measured}", other.key()),
    }
}

/// `CREATE INDEX blocks writes on orders for 1.8 s: use CREATE INDEX
/// CONCURRENTLY, ...`: the statement whose lock on a table blocks the most
/// (the longest held among equals), what it blocks, for how long the
/// deployed migration ran (its lock wait included), and the fix.
pub fn fix_sentence(statements: &[TracedStatement], deployed: &StrategyReport) -> Option<String> {
    let (statement, lock) = strongest_table_locks(statements)
        .into_iter()
        .filter(|(_, lock)| lock.blocks() != Blocks::Nothing)
        .max_by(|(a, x), (b, y)| {
            (x.blocks(), x.mode)
                .cmp(&(y.blocks(), y.mode))
                .then(a.held_ms.total_cmp(&b.held_ms))
        })?;
    let (what, fix) = advice(statement, lock);
    let seconds = trim_number(deployed.summary.ddl_total_ms / 1000.0, 1);
    Some(format!(
        "{what} blocks {} on {} for {seconds} s: {fix}",
        lock.blocks().words(),
        lock.relation
    ))
}

/// What the statement is, in a few words, and how to do it without the stall.
fn advice(statement: &TracedStatement, lock: &TracedLock) -> (String, &'static str) {
    let words = statement_words(&statement.sql)
        .into_iter()
        .next()
        .unwrap_or_default();
    let has = |word: &str| words.iter().any(|w| w == word);
    let not_valid = words
        .windows(2)
        .any(|pair| pair[0] == "NOT" && pair[1] == "VALID");
    let first = |count: usize| {
        words
            .iter()
            .take(count)
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let scanned = lock.scanned == Some(true);
    match (first(2).as_str(), first(3).as_str()) {
        ("CREATE INDEX", _) | (_, "CREATE UNIQUE INDEX") if !has("CONCURRENTLY") => (
            first(2).replace("CREATE UNIQUE", "CREATE UNIQUE INDEX"),
            "use CREATE INDEX CONCURRENTLY, in a migration of its own (it cannot run in a \
             transaction)",
        ),
        _ if (has("FOREIGN") || has("REFERENCES")) && !not_valid && scanned => (
            "ADD FOREIGN KEY".to_string(),
            "add it NOT VALID, then VALIDATE CONSTRAINT in a migration of its own",
        ),
        _ if has("CHECK") && has("ADD") && !not_valid && scanned => (
            "ADD CHECK".to_string(),
            "add it NOT VALID, then VALIDATE CONSTRAINT in a migration of its own",
        ),
        _ if has("SET") && has("NOT") && has("NULL") && scanned => (
            "SET NOT NULL".to_string(),
            "add CHECK (column IS NOT NULL) NOT VALID, VALIDATE it in a migration of its own, \
             then SET NOT NULL, which then skips the scan",
        ),
        _ if lock.rewritten && has("ADD") && has("DEFAULT") => (
            "ADD COLUMN with a volatile DEFAULT (a rewrite)".to_string(),
            "add the column without the default, then SET DEFAULT (new rows only) and fill \
             the old rows in batches",
        ),
        _ if lock.rewritten && has("TYPE") => (
            "ALTER COLUMN ... TYPE (a rewrite)".to_string(),
            "add a column of the new type, fill it in batches, then switch over",
        ),
        _ if lock.rewritten => (
            format!("{} (a rewrite)", first(2)),
            "avoid rewriting the table under ACCESS EXCLUSIVE",
        ),
        _ => (
            first(2),
            "its lock queued behind the long transaction, and the traffic behind it: set \
             lock_timeout and retry (as --recommend retry does)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::lock_trace::{LockMode, RelationKind};
    use crate::testing::reference_report;

    fn statement(sql: &str, mode: LockMode, rewritten: bool, scanned: bool) -> TracedStatement {
        TracedStatement {
            step: 1,
            statement: 1,
            sql: sql.into(),
            duration_ms: 40.0,
            held_ms: 40.0,
            locks: vec![TracedLock {
                relation: "orders".into(),
                kind: RelationKind::Table,
                mode,
                taken: true,
                rewritten,
                scanned: Some(scanned),
            }],
        }
    }

    #[test]
    fn the_fix_names_the_statement_what_it_blocks_and_for_how_long() {
        let report = reference_report();
        let naive = &report.strategies[0];
        let seconds = trim_number(naive.summary.ddl_total_ms / 1000.0, 1);
        let fix = |sql: &str, mode, rewritten, scanned| {
            fix_sentence(&[statement(sql, mode, rewritten, scanned)], naive).unwrap()
        };
        assert_eq!(
            fix(
                "CREATE INDEX orders_created_at_idx ON orders (created_at)",
                LockMode::Share,
                false,
                true
            ),
            format!(
                "CREATE INDEX blocks writes on orders for {seconds} s: use CREATE INDEX \
                 CONCURRENTLY, in a migration of its own (it cannot run in a transaction)"
            )
        );
        assert!(
            fix(
                "ALTER TABLE orders ADD CONSTRAINT f FOREIGN KEY (customer_id) REFERENCES customers (id)",
                LockMode::ShareRowExclusive,
                false,
                true
            )
            .starts_with("ADD FOREIGN KEY blocks writes on orders for")
        );
        assert!(
            fix(
                "ALTER TABLE orders ADD COLUMN token uuid DEFAULT gen_random_uuid()",
                LockMode::AccessExclusive,
                true,
                true
            )
            .starts_with("ADD COLUMN with a volatile DEFAULT (a rewrite) blocks reads and writes")
        );
        assert!(
            fix(
                "ALTER TABLE orders ADD COLUMN note text",
                LockMode::AccessExclusive,
                false,
                false
            )
            .ends_with("set lock_timeout and retry (as --recommend retry does)")
        );
        let harmless = statement(
            "CREATE INDEX CONCURRENTLY i ON orders (total)",
            LockMode::ShareUpdateExclusive,
            false,
            false,
        );
        assert_eq!(fix_sentence(&[harmless], naive), None);
    }
}
