//! MariaDB behind the engine seam: a throwaway `mariadbd` ([`server`]),
//! its error numbers as neutral classes ([`errors`]),
//! sessions named by role ([`session`]), the point-select load ([`load`]),
//! the metadata-lock observer ([`observer`]), the DDL strategies ([`ddl`]) and
//! one strategy's run on one clock ([`scenario`]), whose report is the same
//! `StrategyReport` the PostgreSQL runs produce.

pub mod compare;
pub mod ddl;
pub mod errors;
pub mod load;
pub mod observer;
pub mod scenario;
pub mod server;
pub mod session;
pub mod workload;
