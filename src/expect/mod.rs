//! CI expectations: bounds per strategy that a run must meet.
//!
//! A workload file may hold `[expect.<strategy>]` tables and the command line
//! adds or overrides single bounds with `--expect STRATEGY.KEY=VALUE`. After
//! the run each expectation is checked against the strategy's summary and
//! printed as pass, fail or skip; any failure makes the process exit 3
//! ([`EXIT_CODE_FAILED`]). The results folder gets `expectations.csv`,
//! `junit.xml` and `pr-comment.md`, and when `GITHUB_STEP_SUMMARY` names a
//! file the verdict, ranking and key figures are appended to it.
//!
//! The steps live apart: `bound` (what can be required), `collect` (reading
//! the file tables and flags), `evaluate` (the verdicts), and the renderers
//! `render` (stdout lines, the result files), `junit`, `step_summary` and
//! `pr_comment`, the last two built from the pieces of `sections`. Reading
//! flags and the environment is left to the caller.

mod bound;
mod collect;
mod evaluate;
#[cfg(test)]
mod fixtures;
mod junit;
mod pr_comment;
mod render;
mod sections;
mod step_summary;

pub use bound::{Bound, ExpectFile, KEYS};
pub use collect::collect;
pub use evaluate::{ExpectationResult, Verdict, any_failed, evaluate};
pub(crate) use junit::xml_escape;
pub use pr_comment::pr_comment;
pub use render::{ExpectationRecord, report_lines, result_files};
pub use sections::{NO_BOUNDS, comment_marker, verdict_markdown};
pub use step_summary::{
    append_github_step_summary, append_to_step_summary, github_step_summary_path,
};

/// The process exit code of a finished run in which an expectation failed.
pub const EXIT_CODE_FAILED: i32 = 3;

/// One bound on one strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// The strategy name as the workload defines it.
    pub strategy: String,
    /// What the strategy's summary must meet.
    pub bound: Bound,
    /// Where it came from, for messages: `workload x.toml [expect.retry]` or `--expect`.
    pub source: String,
}

impl Expectation {
    /// `retry.max_p99_ms <= 600 ms`: what a result line and a test case are called.
    pub fn label(&self) -> String {
        format!(
            "{}.{} {}",
            self.strategy,
            self.bound.key(),
            self.bound.limit_text()
        )
    }
}
