//! CI expectations: bounds per strategy that a run must meet.
//!
//! A workload file may hold `[expect.<strategy>]` tables and the command line
//! adds or overrides single bounds with `--expect STRATEGY.KEY=VALUE`. After
//! the run each expectation is checked against the strategy's summary and
//! printed as pass, fail or skip; any failure makes the process exit 3
//! ([`crate::error::exit_code::EXPECTATION_FAILED`]). The results folder gets `expectations.csv`,
//! `junit.xml` and `pr-comment.md`, and when `GITHUB_STEP_SUMMARY` names a
//! file the verdict, ranking and key figures are appended to it.
//!
//! What can be required lives in `crate::bounds`, the expectations of a run
//! (the file tables and the flags) in `config::expectations`; here are
//! `evaluate` (the verdicts), and the renderers
//! `render` (stdout lines, the result files, the JUnit suite), `step_summary` and
//! `pr_comment`, the last two built from the pieces of `sections`. Reading
//! flags and the environment is left to the caller.

mod evaluate;
#[cfg(test)]
mod fixtures;
mod pr_comment;
mod render;
mod sections;
mod step_summary;

pub use crate::bounds::{Bound, ExpectFile, KEYS};
pub use crate::config::Expectation;
pub use evaluate::{ExpectationResult, Verdict, any_failed, evaluate};
pub use pr_comment::pr_comment;
pub use render::{ExpectationRecord, report_lines, result_files};
pub use sections::{NO_BOUNDS, comment_marker, verdict_markdown};
pub use step_summary::{
    append_github_step_summary, append_to_step_summary, github_step_summary_path,
};
