//! MariaDB behind the engine seam: a throwaway `mariadbd` ([`server`]) or
//! an existing server ([`target`]),
//! sessions named by role ([`session`]), its error numbers as neutral
//! classes ([`errors`]), the load ([`load`]) of pgbench-style scripts
//! ([`script`]), the metadata-lock observer ([`observer`]), the DDL
//! strategies ([`ddl`], pt-online-schema-change's in [`ptosc`]), one
//! strategy's run on one clock ([`scenario`]), whose report is the same
//! `StrategyReport` the PostgreSQL runs produce, and `compare` with its
//! `--repeat` and `--sweep` ([`compare`], [`sweep`]); the load speaks to
//! the server through its own lean client ([`wire`]).

pub mod compare;
pub mod ddl;
pub mod errors;
pub mod load;
pub mod observer;
pub mod ptosc;
pub mod scenario;
pub mod script;
pub mod server;
pub mod session;
pub mod sweep;
pub mod target;
pub mod wire;
pub mod workload;
