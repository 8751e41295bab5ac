//! `stallbench check DIR`: the migration gate (issue 27). Each new migration
//! of a project's migrations folder is traced (the locks each statement
//! takes, rewrites, scans) and measured under traffic, the way it is
//! deployed and the recommended way, with the same Target, Scenario,
//! RunReport and exporters as `compare`: one engine, two front doors.
//!
//! - [`migrations`]: reading a migrations folder (layouts, order, which
//!   migrations are new, statements and their transactions);
//! - [`rows`]: generating rows for the schema the earlier migrations built.

pub mod migrations;
pub mod rows;
