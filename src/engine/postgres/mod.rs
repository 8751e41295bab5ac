//! PostgreSQL behind the engine seam: every part of stallbench that speaks
//! to a PostgreSQL server or knows its catalog.
//!
//! - the server: a throwaway one ([`server`], its log read by [`serverlog`]),
//!   or one named by `--db-url` ([`conninfo`]), reached as a
//!   [`database::Database`] with sessions named by role;
//! - the lean load client's wire protocol ([`pgwire`]);
//! - its SQLSTATEs as the neutral codes and classes of the results ([`errors`]);
//! - the checks before a run ([`preflight`]) and a workload's invariants on
//!   its data after each run ([`invariants`]);
//! - one strategy's run on one clock ([`scenario`]);
//! - the commands that exist for PostgreSQL only: the migration gate
//!   ([`check`], its judging in [`check_verdict`]) and `capture` ([`capture`]),
//!   with the scanner of the statements they read ([`sql_scan`]).

pub mod capture;
pub mod check;
pub mod check_verdict;
pub mod conninfo;
pub mod database;
pub mod errors;
pub mod invariants;
pub mod pgwire;
pub mod preflight;
pub mod scenario;
pub mod server;
pub mod serverlog;
pub mod sql_scan;
