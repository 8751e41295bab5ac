//! The migration gate's stage: what `check` found for each
//! migration, and the judging of it against the budgets. Plain data and
//! pure functions (save `sizes`' read of `--production-url`'s statistics);
//! the `check` front door fills these in, `export::check_report` renders them.
//!
//! - [`checked`]: the migrations read and what the check found for each;
//! - [`sizes`]: production sizes, and the holds of rewrites and scans there;
//! - [`per_row`]: a statement's time split into its fixed part and its cost per row;
//! - [`applied`]: whether a run applied its migration, with traffic after it;
//! - [`breakage`]: the errors a migration's runs caused, and their fixes;
//! - [`fixes`]: a fix per statement that blocked traffic, fitting its form;
//! - [`holds`]: a transaction's hold of its strongest lock, at production size;
//! - [`phases`]: where a check's time went, phase by phase;
//! - [`replica`]: `check --replica`: the standby's readers' stall, judged;
//! - [`traced`]: what the traces of migrations not run under traffic found;
//! - [`verdict`]: each migration judged against the budgets, with its fix.

pub mod applied;
pub mod breakage;
pub mod checked;
pub mod fixes;
pub mod holds;
pub mod per_row;
pub mod phases;
pub mod replica;
pub mod sizes;
pub mod traced;
pub mod verdict;
