//! The migration gate's stage: what `check` found for each
//! migration, and the judging of it against the budgets. Plain data and
//! pure functions (save `sizes`' read of `--production-url`'s statistics);
//! the `check` front door fills these in, `export::check_report` renders them.
//!
//! - [`checked`]: the migrations read and what the check found for each;
//! - [`sizes`]: production sizes, and the holds of rewrites and scans there;
//! - [`breakage`]: the errors a migration's runs caused, and their fixes;
//! - [`replica`]: `check --replica`: the standby's readers' stall, judged;
//! - [`verdict`]: each migration judged against the budgets, with its fix.

pub mod breakage;
pub mod checked;
pub mod per_row;
pub mod replica;
pub mod sizes;
pub mod verdict;
