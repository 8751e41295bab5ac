//! The MariaDB load clients' own lean wire client, hand-written so that the
//! load keeps up with sysbench's C client (libmariadb): each client thread
//! owns a non-blocking socket and talks the binary protocol itself
//! (COM_STMT_PREPARE once, COM_STMT_EXECUTE per statement, COM_QUERY for a
//! statement without parameters), and waits for an answer as libmariadb
//! does, with `recv` and then `poll` for input only ([`socket`]).
//!
//! Why no crate: mysql_async runs on tokio, which registers every socket
//! for reading and writing, so a client thread wakes once more per
//! transaction when the server's read of a request frees the send buffer
//! (`EPOLLOUT`); the blocking `mysql` crate waits in a blocking `recv`,
//! which the same event wakes. Both cost about 1.4 context switches per
//! transaction where sysbench has one; on one shared load thread the
//! server thread a send wakes preempts the thread serving every client
//! (docs/benchmark.md, "Why the clients wait"). This client speaks only
//! what the load runs; the DDL session, the observer, the setup and the
//! blocker stay on mysql_async.

mod connect;
mod connection;
mod error;
mod packet;
mod socket;

pub use connect::{ConnectOptions, connect};
pub use connection::{MariaConnection, MariaStatement};
pub use error::{ErrPacket, MariaWireError};
pub use packet::Param;
pub use socket::{Deadline, STOP_CHECK_EVERY};
