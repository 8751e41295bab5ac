//! The load workers' own lean PostgreSQL client, hand-written so that the
//! load keeps up with pgbench's C client: a worker owns its socket and talks
//! the extended query protocol itself, as pgbench's clients do with libpq,
//! with no connection task, no channel and no allocation per transaction.
//! With tokio-postgres in the workers (a connection task and a channel per
//! connection) stallbench ran 2 to 8% below pgbench (docs/benchmark.md,
//! earlier figures). Messages are encoded, parsed and authenticated with
//! `postgres-protocol`, the crate under tokio-postgres.
//!
//! Everything else (setup, observer, report, DDL) stays on tokio-postgres.

mod cancel;
mod connect;
mod connection;
mod error;
mod query;

pub use cancel::WireCancel;
pub use connection::{WireConnection, WireStatement};
pub use error::{ConnectError, ServerError, WireError};
pub use query::Statement;
