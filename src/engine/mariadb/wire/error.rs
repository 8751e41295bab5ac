//! What can go wrong on a [`MariaConnection`](super::MariaConnection), as one
//! type a load client branches on: the server failed a statement (the
//! connection goes on), the connection is gone (open it again), or the run's
//! end or stop came while the client waited (the transaction is unfinished).
//! The server's error stays data (its number, its SQLSTATE, its message), so
//! `errors::class_of` classes it as it classes mysql_async's.

use std::{fmt, io};

/// An ERR packet of the server: its error number, SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrPacket {
    pub code: u16,
    pub sqlstate: String,
    pub message: String,
}

impl fmt::Display for ErrPacket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ERROR {} ({}): {}",
            self.code, self.sqlstate, self.message
        )
    }
}

/// Why a call on a connection failed.
#[derive(Debug, thiserror::Error)]
pub enum MariaWireError {
    /// The server answered with an error; the connection goes on.
    #[error("{0}")]
    Server(ErrPacket),
    /// The connection is gone, or the server broke the protocol (the stream
    /// cannot be trusted any more): `reason` says how.
    #[error("{reason}")]
    Lost { reason: String },
    /// The client refused, on its own side, what it was asked: a connection
    /// that could never work as set up (an authentication plugin this client
    /// does not speak, a server too old), or a command it cannot send (too
    /// long, the wrong number of parameters; nothing was sent, the
    /// connection goes on). `reason` says what to change, for a person.
    #[error("{reason}")]
    Refused { reason: String },
    /// The run's end, or its stop, came while the client waited for the
    /// server: the call is unfinished and the connection is out of step.
    #[error("the run ended while waiting for the server")]
    Ended,
}

impl MariaWireError {
    /// A connection lost for `reason`.
    pub fn lost(reason: impl Into<String>) -> MariaWireError {
        MariaWireError::Lost {
            reason: reason.into(),
        }
    }

    /// A connection lost to the I/O error `err` while `doing` something.
    pub fn io(doing: &str, err: io::Error) -> MariaWireError {
        MariaWireError::lost(format!("{doing}: {err}"))
    }

    /// A malformed or unexpected packet: the server broke the protocol.
    pub fn protocol(what: impl fmt::Display) -> MariaWireError {
        MariaWireError::lost(format!("the server broke the protocol: {what}"))
    }
}
