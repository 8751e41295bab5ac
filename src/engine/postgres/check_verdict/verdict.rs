//! The verdict on each migration, as plain data for every format: whether
//! it keeps the budgets the way it is deployed (a hold estimated at a
//! production size included), which budget it breaks, a fix for each
//! statement that did damage (only statements on tables that existed before
//! the migration: a table it creates blocks no one), and whether the
//! recommended strategy keeps it within budget.

use serde::{Deserialize, Serialize};

use super::applied::{
    apply_fix, needed_after_commit_s, not_applied, not_applied_words, not_shown_words,
};
use super::breakage::{breakage, breakage_fix, broken_load};
use super::checked::{CheckedMigration, MeasuredRun, Outcome};
use super::fixes::{advice, lock_fixes};
use super::holds::{TransactionHold, transaction_holds};
use super::replica::{replica_fix, replica_stall};
use super::sizes::SizeEstimate;
use crate::choices::Layout;
use crate::expect::{Bound, ExpectationResult, Verdict};
use crate::export::format::{format_latency, trim_number};
use crate::metrics::lock_trace::{Blocks, RelationKind, TracedStatement, held_before};
use crate::metrics::{DdlOutcome, RunReport, StrategyReport};
use crate::strategy::statements::statement_words;

/// What the check says about one migration. In check.csv and check.json as
/// `pass`, `fail`, `invalid`, `not_measured` or `flagged`.
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
    /// Judged from its trace alone (`--trace-only`), which shows a lock that
    /// blocks traffic or a rename or drop: only a measured run can judge it.
    Flagged,
}

impl MigrationVerdict {
    /// `pass`, `FAIL`, `not measured`: how check.md shows it.
    pub fn words(self) -> &'static str {
        match self {
            MigrationVerdict::Pass => "pass",
            MigrationVerdict::Fail => "FAIL",
            MigrationVerdict::Invalid => "INVALID",
            MigrationVerdict::NotMeasured => "not measured",
            MigrationVerdict::Flagged => "flagged",
        }
    }
}

/// What every migration of a check is judged by.
#[derive(Debug, Clone, Copy)]
pub struct Judging<'a> {
    /// The strategy the budgets judge (`--deploy`).
    pub deploy: &'a str,
    /// The strategy measured beside it (`--recommend`).
    pub recommend: &'a str,
    /// The stall budget a hold estimated at a production size must keep.
    pub max_stall_s: u32,
    /// The folder's layout: how a fix says to run a statement outside a transaction.
    pub layout: Layout,
}

/// The judgement of one migration, built once, rendered by every format.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub verdict: MigrationVerdict,
    /// The budgets the deploy strategy broke, in words: `longest stall 3 s (budget 1 s)`.
    pub broken: Vec<String>,
    /// For a failed migration, one per statement that did damage, the worst
    /// first: what it blocked, for how long, and its fix.
    pub fixes: Vec<String>,
    /// Whether the recommended strategy keeps every budget; `None` when it did not run.
    pub fixed_by_recommended: Option<bool>,
    /// `fixed by retry: longest stall 0 s`, or `retry does not fix it: ...`.
    pub recommended: Option<String>,
    /// Why it was not measured, for a migration that was not.
    pub not_measured: Option<String>,
    /// What its trace flags for a measured run, for one judged from its
    /// trace alone (`--measure`): one line per statement.
    pub flags: Vec<String>,
    /// Why the deployed run is no result, for an invalid migration.
    pub invalid: Option<String>,
    /// Why the migration did not apply as deployed (it gave up, failed or
    /// was cut off): a failed deploy, which fails the gate.
    pub not_applied: Option<String>,
}

impl Judged {
    /// Whether the recommended strategy kept every budget but its run
    /// cannot show it as a fix (its migration committed as the run ended).
    pub fn fix_not_shown(&self) -> bool {
        self.fixed_by_recommended.is_none() && self.recommended.is_some()
    }
}

/// Judges `checked` by `judging`.
pub fn judge(checked: &CheckedMigration, judging: &Judging) -> Judged {
    let (deploy, recommend) = (judging.deploy, judging.recommend);
    if let Outcome::NoResult(error) = &checked.outcome {
        return Judged {
            verdict: MigrationVerdict::Invalid,
            broken: Vec::new(),
            fixes: Vec::new(),
            fixed_by_recommended: None,
            recommended: None,
            not_measured: None,
            flags: Vec::new(),
            invalid: Some(error.clone()),
            not_applied: None,
        };
    }
    if let Outcome::Traced(flags) = &checked.outcome {
        return judge_trace(checked, flags, judging);
    }
    let Outcome::Measured(run) = &checked.outcome else {
        return Judged {
            verdict: MigrationVerdict::NotMeasured,
            broken: Vec::new(),
            fixes: Vec::new(),
            fixed_by_recommended: None,
            recommended: None,
            not_measured: Some(match checked.statements.is_empty() {
                true => "it holds no SQL statement (an empty file, or a step of your tool \
                         that printed no SQL, such as Django's RunPython)"
                    .to_string(),
                false => "it locks no table that existed before it, so no traffic waits on it"
                    .to_string(),
            }),
            flags: Vec::new(),
            invalid: None,
            not_applied: None,
        };
    };
    let of = |strategy: &str| -> Vec<&ExpectationResult> {
        run.results
            .iter()
            .filter(|result| result.expectation.strategy == strategy)
            .collect()
    };
    let deployed = strategy(&run.report, deploy);
    // A migration that does not apply as deployed fails: the deploy failed.
    let deployed_not_applied = deployed
        .filter(|run| run.summary.invalid.is_empty())
        .and_then(|run| not_applied(run).map(|reason| (run, reason)));
    // A migration that breaks the application fails whatever the budgets say.
    let deployed_breakage = deployed.and_then(breakage);
    // A hold at the production size no strategy shortens: it fails every one.
    let (too_long, hold_broken) = holds_over(checked, judging.max_stall_s);
    let over_budget: Vec<String> = of(deploy)
        .into_iter()
        .filter(|result| result.verdict == Verdict::Fail)
        .map(budget_words)
        .collect();
    let broken: Vec<String> = (deployed_not_applied.iter())
        .map(|(_, reason)| not_applied_words(reason))
        .chain(deployed_breakage.iter().map(|breakage| breakage.words()))
        .chain(hold_broken)
        .chain(over_budget.iter().cloned())
        .collect();
    // `--replica`: the deployed run with the report on the standby.
    let deployed_on_replica = replica_stall(run, deploy);
    let replica_over =
        (deployed_on_replica.as_ref()).filter(|stall| stall.over(judging.max_stall_s));
    let broken: Vec<String> = (broken.into_iter())
        .chain(replica_over.map(|stall| stall.words(judging.max_stall_s)))
        .collect();
    let recommended = judge_recommended(run, judging, &too_long);
    let invalid = match deployed {
        Some(deployed) if !deployed.summary.invalid.is_empty() => {
            Some(deployed.summary.invalid.clone())
        }
        Some(deployed) => broken_load(deployed),
        None => None,
    };
    let invalid = invalid.or_else(|| {
        (deployed_on_replica.as_ref())
            .filter(|stall| !stall.invalid.is_empty())
            .map(|stall| format!("with the report on the replica: {}", stall.invalid))
    });
    let verdict = match (&invalid, broken.is_empty()) {
        (Some(_), _) => MigrationVerdict::Invalid,
        (None, true) => MigrationVerdict::Pass,
        (None, false) => MigrationVerdict::Fail,
    };
    let mut fixes = Vec::new();
    if verdict == MigrationVerdict::Fail {
        if let Some((deployed, _)) = &deployed_not_applied {
            fixes.push(apply_fix(deployed, recommend));
        }
        if let Some(breakage) = &deployed_breakage {
            fixes.push(breakage_fix(
                &checked.statements,
                breakage,
                run.blamed_by_replay,
            ));
        }
        fixes.extend(
            too_long
                .iter()
                .map(|estimate| hold_fix(&checked.statements, estimate, judging)),
        );
        if let (Some(deployed), false) = (deployed, over_budget.is_empty()) {
            let estimated = |statement: &TracedStatement| {
                too_long.iter().any(|e| e.statement == statement.statement)
            };
            let others: Vec<TracedStatement> = (checked.statements.iter())
                .filter(|statement| !estimated(statement))
                .cloned()
                .collect();
            fixes.extend(lock_fixes(
                &others,
                &checked.existing_tables,
                deployed,
                judging.layout,
            ));
        }
        if replica_over.is_some() {
            fixes.push(replica_fix());
        }
    }
    let (fixed_by_recommended, recommended) = match recommended {
        Some((fixed, words)) => (fixed, (verdict == MigrationVerdict::Fail).then_some(words)),
        None => (None, None),
    };
    Judged {
        verdict,
        broken,
        fixes,
        fixed_by_recommended,
        recommended,
        not_measured: None,
        flags: Vec::new(),
        invalid,
        not_applied: deployed_not_applied.map(|(_, reason)| reason),
    }
}

/// What the recommended strategy did, when it ran beside the deployed one
/// and its run is a result: whether it keeps every budget (`None` when its
/// run cannot show it: its migration committed too close to the run's end,
/// or not before it) and that in words: `fixed by retry: longest stall 0
/// s`, `retry does not fix it: ...`, `not shown: ...`.
fn judge_recommended(
    run: &MeasuredRun,
    judging: &Judging,
    too_long: &[&SizeEstimate],
) -> Option<(Option<bool>, String)> {
    let (deploy, recommend) = (judging.deploy, judging.recommend);
    let results: Vec<&ExpectationResult> = (run.results.iter())
        .filter(|result| result.expectation.strategy == recommend)
        .collect();
    let report = strategy(&run.report, recommend)?;
    if recommend == deploy || results.is_empty() || !report.summary.invalid.is_empty() {
        return None;
    }
    let on_replica = replica_stall(run, recommend);
    let replica_over = (on_replica.as_ref())
        .is_some_and(|stall| !stall.invalid.is_empty() || stall.over(judging.max_stall_s));
    let breakage = breakage(report);
    let within = results.iter().all(|r| r.verdict == Verdict::Pass);
    let stall = match report.summary.ddl_outcome {
        DdlOutcome::CutOff => format!(
            "longest stall at least {} s (the run ended before the migration did: \
             lengthen --duration)",
            report.summary.longest_stall_s
        ),
        _ => format!("longest stall {} s", report.summary.longest_stall_s),
    };
    let stall = match &on_replica {
        Some(on_replica) if on_replica.over(judging.max_stall_s) => {
            on_replica.words(judging.max_stall_s)
        }
        Some(on_replica) => format!(
            "{stall}; the replica's readers {} s",
            on_replica.longest_stall_s
        ),
        None => stall,
    };
    let does_not = |why: String| Some((Some(false), format!("{recommend} does not fix it: {why}")));
    if let Some(breakage) = &breakage {
        return does_not(breakage.words());
    }
    if !too_long.is_empty() {
        let longest_hold_ms = (too_long.iter())
            .filter_map(|estimate| estimate.estimated_hold_ms)
            .fold(0.0, f64::max);
        return does_not(format!(
            "it shortens the wait for the lock, not the hold, about {} at the production size",
            format_latency(longest_hold_ms)
        ));
    }
    if !within || replica_over {
        return does_not(stall);
    }
    let needed_s = needed_after_commit_s(judging.max_stall_s);
    let extended = run.extended.iter().find(|e| e.strategy == recommend);
    match report.summary.ddl_outcome {
        DdlOutcome::GaveUp | DdlOutcome::Error => {
            return does_not(not_applied(report).unwrap_or_default());
        }
        DdlOutcome::CutOff => {
            return Some((
                None,
                format!(
                    "not shown: {recommend}'s migration had not applied when the run ended at \
                     {} s; lengthen --duration",
                    report.seconds.len()
                ),
            ));
        }
        DdlOutcome::Ok | DdlOutcome::None => {}
    }
    if let Some(words) = not_shown_words(report, needed_s, extended.map(|e| e.run_s)) {
        return Some((None, words));
    }
    let lengthened = extended.map_or(String::new(), |extended| {
        format!(
            " (its run lengthened from {} s to {} s, so that {} s of traffic followed its \
             migration's commit)",
            trim_number(extended.planned_s, 1),
            trim_number(extended.run_s, 1),
            trim_number(needed_s, 1)
        )
    });
    Some((
        Some(true),
        format!("fixed by {recommend}: {stall}{lengthened}"),
    ))
}

/// The judgement of a migration from its trace alone (`flags`, see
/// [`trace_flags`]): `fail` when a hold at a production size is over the
/// stall budget (no strategy shortens it), `flagged` when the trace shows
/// what only a measured run can judge, else `pass`.
fn judge_trace(checked: &CheckedMigration, flags: &[String], judging: &Judging) -> Judged {
    let (too_long, hold_broken) = holds_over(checked, judging.max_stall_s);
    let verdict = match (too_long.is_empty(), flags.is_empty()) {
        (false, _) => MigrationVerdict::Fail,
        (true, false) => MigrationVerdict::Flagged,
        (true, true) => MigrationVerdict::Pass,
    };
    Judged {
        verdict,
        broken: hold_broken,
        fixes: (too_long.iter())
            .map(|estimate| hold_fix(&checked.statements, estimate, judging))
            .collect(),
        fixed_by_recommended: None,
        recommended: None,
        not_measured: Some(match flags.is_empty() {
            true => "judged from its trace alone, which shows no lock that blocks traffic on a \
                     table that existed before it"
                .to_string(),
            false => "judged from its trace alone (--measure): not run under traffic".to_string(),
        }),
        flags: flags.to_vec(),
        invalid: None,
        not_applied: None,
    }
}

/// The holds at a production size over `max_stall_s`, which no strategy
/// shortens: the statements' estimates that are over it alone or count in
/// a transaction's hold that is (see [`transaction_holds`]), and the broken
/// budgets in words: a transaction's hold for the statements it counts,
/// each other statement's own.
fn holds_over(checked: &CheckedMigration, max_stall_s: u32) -> (Vec<&SizeEstimate>, Vec<String>) {
    let holds = transaction_holds(&checked.statements, &checked.estimates);
    let holds: Vec<&TransactionHold> = holds.iter().filter(|h| h.over(max_stall_s)).collect();
    let in_a_hold = |estimate: &SizeEstimate| holds.iter().any(|hold| hold.covers(estimate));
    let too_long: Vec<&SizeEstimate> = (checked.estimates.iter())
        .filter(|estimate| estimate.over(max_stall_s) || in_a_hold(estimate))
        .collect();
    let words = (too_long.iter())
        .filter(|estimate| !in_a_hold(estimate))
        .map(|estimate| hold_words(estimate, max_stall_s))
        .chain((holds.iter()).map(|hold| format!("{} (budget {max_stall_s} s)", hold.words())))
        .collect();
    (too_long, words)
}

/// What a migration's trace shows that only a measured run can judge, one
/// line per statement: a lock that blocks traffic on a table that existed
/// before it (it queues behind a long transaction, and the traffic behind
/// it), or a rename, a drop or a type change of such a table's columns,
/// which the application as it ran before may still use.
pub fn trace_flags(statements: &[TracedStatement], existing_tables: &[String]) -> Vec<String> {
    let mut flags = Vec::new();
    for statement in statements {
        let words = statement_words(&statement.sql)
            .into_iter()
            .next()
            .unwrap_or_default();
        let has = |word: &str| words.iter().any(|w| w == word);
        let what = words.iter().take(2).cloned().collect::<Vec<_>>().join(" ");
        let Some(lock) = (statement.locks.iter())
            .filter(|lock| lock.kind == RelationKind::Table)
            .filter(|lock| existing_tables.contains(&lock.relation))
            .max_by_key(|lock| (lock.blocks(), lock.mode))
        else {
            continue;
        };
        let changes_names = has("RENAME")
            || (what == "ALTER TABLE" && has("DROP") && !has("CONSTRAINT") && !has("DEFAULT"))
            || (what == "ALTER TABLE" && has("TYPE"))
            || what == "DROP TABLE";
        if changes_names {
            flags.push(format!(
                "statement {} ({what}) renames, drops or retypes what {} holds, which the \
                 application as it runs may still use",
                statement.statement, lock.relation
            ));
        } else if lock.blocks() != Blocks::Nothing {
            flags.push(format!(
                "statement {} ({what}) takes {} on {}, which blocks {} while it waits for the \
                 lock and runs",
                statement.statement,
                lock.mode.sql_name(),
                lock.relation,
                lock.blocks().words()
            ));
        }
    }
    flags
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

/// `rewrites orders under ACCESS EXCLUSIVE for about 70 s at 50,000,000
/// rows (an estimate; budget 1 s)`: a hold over the stall budget, as `broken` says it.
fn hold_words(estimate: &SizeEstimate, max_stall_s: u32) -> String {
    format!(
        "{} for about {} at {} rows ({}; an estimate; budget {max_stall_s} s)",
        estimate.what(),
        format_latency(estimate.estimated_hold_ms.unwrap_or_default()),
        crate::export::format::format_thousands(estimate.production_rows.unwrap_or_default()),
        estimate.source.map_or("", |source| source.flag())
    )
}

/// The fix of a statement whose hold at the production size is over the
/// budget: `` `ALTER TABLE ...` rewrites orders under ACCESS EXCLUSIVE: 140
/// ms for 100,000 rows, so about 70 s at 50,000,000 rows (...); no strategy
/// shortens a hold: add a column of the new type, ... ``.
fn hold_fix(statements: &[TracedStatement], estimate: &SizeEstimate, judging: &Judging) -> String {
    let advice = statements
        .iter()
        .find(|statement| statement.statement == estimate.statement)
        .and_then(|statement| {
            let lock = statement
                .locks
                .iter()
                .find(|lock| lock.relation == estimate.relation)?;
            let index = statements
                .iter()
                .position(|s| s.statement == statement.statement)?;
            let under = held_before(&statements[..index], statement, &lock.relation)
                .filter(|(held, _)| lock.mode.covered_by(*held))
                .map(|(_, by)| by);
            Some(advice(statement, lock, judging.layout, under).1)
        })
        // The hold is the problem, not the queue: no lock_timeout here.
        .filter(|advice| !advice.contains("lock_timeout"))
        .unwrap_or_else(|| "avoid reading the whole table under that lock".to_string());
    format!(
        "`{}` {}: {}; lock_timeout and retry do not shorten a hold: {advice}",
        estimate.sql.trim(),
        estimate.what(),
        estimate.figures()
    )
}
