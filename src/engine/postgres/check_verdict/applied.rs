//! Whether a strategy's run applied its migration, and whether the load ran
//! long enough after it to show what the migration does to the traffic.
//!
//! A migration that gave up (its own `lock_timeout`, a strategy's last try),
//! failed or was cut off by the end of the run never applied: deployed that
//! way it fails the gate, whatever the stall, since the deploy failed. And a
//! strategy is a fix only when the load ran a measured stretch after its
//! migration committed: a break that shows in the application's statements
//! (a `NOT NULL` its inserts do not meet) shows only after the commit.

use crate::export::format::trim_number;
use crate::metrics::{DdlOutcome, StrategyReport};

/// How long the load must run after a migration commits, in seconds, for
/// its strategy to be called a fix: the stall budget plus two seconds (a
/// stall over the budget then ends inside the run), and never less than 3 s.
pub fn needed_after_commit_s(max_stall_s: u32) -> f64 {
    (f64::from(max_stall_s) + 2.0).max(3.0)
}

/// When the migration of `run` committed, on the run clock; `None` when it
/// did not apply (or the run had no migration).
pub fn committed_at_s(run: &StrategyReport) -> Option<f64> {
    match run.summary.ddl_outcome {
        DdlOutcome::Ok => run.attempts.last().map(|last| last.ended_s),
        _ => None,
    }
}

/// How long the load ran after the migration of `run` committed, in
/// seconds (the run's end is its last second's end); `None` when it did not apply.
pub fn measured_after_commit_s(run: &StrategyReport) -> Option<f64> {
    let run_s = run.seconds.len() as f64;
    committed_at_s(run).map(|committed_s| (run_s - committed_s).max(0.0))
}

/// Why the migration did not apply in `run`, in words (`it gave up waiting
/// for its lock (55P03 canceling statement due to lock timeout)`); `None`
/// when it applied or the run had no migration.
pub fn not_applied(run: &StrategyReport) -> Option<String> {
    let last = run.attempts.last()?;
    let error = format!("{} {}", last.sqlstate_cell(), last.message.trim());
    match run.summary.ddl_outcome {
        DdlOutcome::Ok | DdlOutcome::None => None,
        DdlOutcome::GaveUp => Some(format!("it gave up waiting for its lock ({error})")),
        DdlOutcome::Error => Some(format!("it failed at try {} ({error})", last.attempt)),
        DdlOutcome::CutOff => Some(format!(
            "the run ended ({} s) before it applied",
            run.seconds.len()
        )),
    }
}

/// What the broken budgets say of a migration that did not apply as
/// deployed: `the migration did not apply: it gave up waiting for its lock (55P03
/// ...), so the deploy failed`.
pub fn not_applied_words(reason: &str) -> String {
    format!("the migration did not apply: {reason}, so the deploy failed")
}

/// The fix of a migration that did not apply as deployed: why (so that a
/// line of its own says it) and what would apply it.
pub fn apply_fix(run: &StrategyReport, recommend: &str) -> String {
    let why = not_applied(run).unwrap_or_default();
    match run.summary.ddl_outcome {
        DdlOutcome::CutOff => format!(
            "{why}: to see it apply, lengthen --duration (or --hold less): the run ended while \
             it still waited or ran"
        ),
        _ => format!(
            "{why}, so it never applied: what would apply it: retry around your migration tool \
             (another try after a pause, as --recommend {recommend} does with a short \
             lock_timeout), a longer lock_timeout (the traffic then queues behind it longer), \
             or a deploy window in which no long transaction holds the table"
        ),
    }
}

/// Why `run` cannot show its strategy as a fix although it kept the
/// budgets: its migration committed with less than `needed_s` of the run
/// left. `extended_to_s`: the run was already lengthened to that many seconds.
pub fn not_shown_words(
    run: &StrategyReport,
    needed_s: f64,
    extended_to_s: Option<f64>,
) -> Option<String> {
    let committed_s = committed_at_s(run)?;
    let after_s = measured_after_commit_s(run)?;
    if after_s >= needed_s {
        return None;
    }
    let extended = match extended_to_s {
        Some(run_s) => format!(" (already lengthened to {} s)", trim_number(run_s, 1)),
        None => String::new(),
    };
    Some(format!(
        "not shown: {}'s migration committed at {} s of a {} s run{extended}, so {} s of \
         traffic were measured after it, not the {} s a fix needs; lengthen --duration",
        run.strategy,
        trim_number(committed_s, 1),
        run.seconds.len(),
        trim_number(after_s, 1),
        trim_number(needed_s, 1)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::reference_report;

    #[test]
    fn a_fix_needs_the_budget_plus_two_seconds_and_at_least_three() {
        assert_eq!(needed_after_commit_s(0), 3.0);
        assert_eq!(needed_after_commit_s(1), 3.0);
        assert_eq!(needed_after_commit_s(4), 6.0);
    }

    #[test]
    fn a_migration_that_commits_as_the_run_ends_shows_nothing() {
        let mut retry = reference_report().strategies[1].clone();
        assert_eq!(not_applied(&retry), None);
        let run_s = retry.seconds.len() as f64;
        assert_eq!(not_shown_words(&retry, 3.0, None), None);
        retry.attempts.last_mut().unwrap().ended_s = run_s - 0.5;
        let words = not_shown_words(&retry, 3.0, None).unwrap();
        assert!(
            words.starts_with(&format!(
                "not shown: retry's migration committed at {} s of a {} s run, so 0.5 s",
                trim_number(run_s - 0.5, 1),
                run_s
            )) && words.ends_with("lengthen --duration"),
            "{words}"
        );
        retry.summary.ddl_outcome = DdlOutcome::GaveUp;
        assert!(
            not_applied(&retry)
                .unwrap()
                .starts_with("it gave up waiting for its lock ("),
            "{:?}",
            not_applied(&retry)
        );
        assert_eq!(not_shown_words(&retry, 3.0, None), None);
    }
}
