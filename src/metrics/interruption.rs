//! How a run stopped before its end (Ctrl-C, SIGTERM, the server's death, an
//! error): the strategy it cut short, those it did not start, and the DDL
//! steps that had committed by then. Plain data, built once when the stop is
//! known; `export::sentences` words it for stdout and `summary.md`, and the
//! stop line on stderr names what was applied.

use super::{AttemptOutcome, DdlAttempt};

/// A run stopped before its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Interruption {
    /// Why: `Ctrl-C (SIGINT)`, `SIGTERM`, the server's death, an error.
    pub reason: String,
    /// Whether `reason` is a signal (the user stopped it), not a failure.
    pub by_signal: bool,
    /// The strategy the stop cut short; `None` when it came between strategies.
    pub partial: Option<PartialStrategy>,
    /// The strategies that did not start, in run order.
    pub not_run: Vec<String>,
    /// The DDL steps that committed, in run order (none when each step is rolled back).
    pub applied: Vec<AppliedStep>,
}

/// The strategy a stop cut short: written up to its last whole second.
#[derive(Debug, Clone, PartialEq)]
pub struct PartialStrategy {
    pub strategy: String,
    /// When the stop came, in seconds on the strategy's run clock.
    pub at_s: f64,
    /// The whole seconds kept (the rows of its timeline).
    pub kept_s: u32,
    /// The seconds it was to run.
    pub planned_s: u32,
    /// Its last DDL try, one started in the second it was cut in included
    /// (which its files leave out); `None` if none started.
    pub last_try: Option<DdlAttempt>,
}

/// A DDL step that committed.
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedStep {
    pub strategy: String,
    /// The step's statement(s), as the workload or strategy gives them.
    pub sql: String,
    /// When its try ended (the commit), in seconds on the strategy's run clock.
    pub at_s: f64,
    /// It committed after the stop came, before the cancel reached it.
    pub after_stop: bool,
}

/// The steps of `strategy` that committed: each step ends with its one
/// successful try, so the n-th `ok` try is the n-th of `steps`. `stop_at_s`:
/// when the stop came on this strategy's clock, if it came during it.
pub fn applied_steps(
    strategy: &str,
    steps: &[String],
    attempts: &[DdlAttempt],
    stop_at_s: Option<f64>,
) -> Vec<AppliedStep> {
    attempts
        .iter()
        .filter(|attempt| attempt.outcome == AttemptOutcome::Ok)
        .zip(steps)
        .map(|(attempt, sql)| AppliedStep {
            strategy: strategy.to_string(),
            sql: sql.trim().to_string(),
            at_s: attempt.ended_s,
            after_stop: stop_at_s.is_some_and(|stop_at_s| attempt.ended_s >= stop_at_s),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::test_attempt;

    #[test]
    fn each_successful_try_is_the_next_step() {
        let steps = vec![
            "ALTER TABLE orders ADD COLUMN note text".to_string(),
            "CREATE INDEX ON orders (note)".to_string(),
        ];
        let attempts = vec![
            test_attempt(1, 2.0, 2.5, AttemptOutcome::LockTimeout),
            test_attempt(2, 3.5, 3.6, AttemptOutcome::Ok),
            test_attempt(3, 3.6, 9.1, AttemptOutcome::Ok),
        ];
        let applied = applied_steps("retry", &steps, &attempts, Some(9.0));
        assert_eq!(applied.len(), 2);
        assert_eq!(applied[0].sql, steps[0]);
        assert_eq!(applied[0].at_s, 3.6);
        assert!(!applied[0].after_stop);
        assert_eq!(applied[1].sql, steps[1]);
        assert!(applied[1].after_stop, "it ended after the stop at 9.0 s");
        assert!(applied_steps("naive", &steps, &attempts[..1], None).is_empty());
    }
}
