//! The migration gate's stage (issue 27): what `check` found for each
//! migration, and the judging of it against the budgets. Plain data and
//! pure functions (save `sizes`' read of `--production-url`'s statistics);
//! the `check` front door fills these in, `export::check_report` renders them.
//!
//! - [`checked`]: the migrations read and what the check found for each;
//! - [`sizes`]: production sizes, and the holds of rewrites and scans there;
//! - [`breakage`]: the errors a migration's runs caused, and their fixes;
//! - [`phases`]: where a check's time went, phase by phase;
//! - [`replica`]: `check --replica`: the standby's readers' stall, judged;
//! - [`verdict`]: each migration judged against the budgets, with its fix.

pub mod breakage;
pub mod checked;
pub mod phases;
pub mod replica;
pub mod sizes;
pub mod verdict;
