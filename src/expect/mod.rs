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
//! What can be required lives in `crate::expect::bounds`, the expectations of a run
//! (the file tables and the flags) in `config::expect`, and what is
//! written of the verdicts (stdout lines, expectations.csv, junit.xml, the
//! step summary, pr-comment.md) in `export::ci`; here is `evaluate`, the
//! verdicts themselves.

pub mod bounds;
mod evaluate;
#[cfg(test)]
pub(crate) mod fixtures;

pub use crate::config::Expectation;
pub use bounds::{Bound, ExpectFile, KEYS};
pub use evaluate::{ExpectationResult, Verdict, any_failed, evaluate};
