//! What can go wrong, as two types because callers act on them differently:
//! opening a connection ([`ConnectError`]: settings that can never work, a
//! server that refuses the login, a server that cannot be reached) and using
//! an open one ([`WireError`]: a failed statement, on a connection that goes
//! on, or a connection that broke). A load worker counts the first kind of
//! [`WireError`] as a failed transaction and the second as a lost connection.

use std::io;

use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::ErrorResponseBody;

/// Why a call on an open [`WireConnection`](super::WireConnection) failed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The server answered with an error; the connection goes on.
    #[error("{message} (SQLSTATE {sqlstate})")]
    Server { sqlstate: String, message: String },
    /// The connection is gone or the server broke the protocol.
    #[error("{0}")]
    Lost(String),
}

/// Why [`WireConnection::connect`](super::WireConnection::connect) opened no connection.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The connection settings cannot work with this client or with the
    /// server's login rules (TLS required and not offered, a certificate that
    /// does not verify, no host, no user name, no password where the server
    /// asks for one, a login method stallbench does not support): trying again
    /// does not help, the settings must change.
    #[error("{0}")]
    Settings(String),
    /// The server refused the login (a wrong password, an unknown database,
    /// too many connections).
    #[error("{message} (SQLSTATE {sqlstate})")]
    Server { sqlstate: String, message: String },
    /// No server answered, or the connection broke off during the login: the
    /// name lookup, the socket, the connect timeout or the protocol failed.
    #[error("{0}")]
    Unreachable(String),
}

impl From<io::Error> for WireError {
    fn from(err: io::Error) -> WireError {
        WireError::Lost(format!("connection lost: {err}"))
    }
}

impl From<io::Error> for ConnectError {
    fn from(err: io::Error) -> ConnectError {
        ConnectError::Unreachable(format!("connection lost: {err}"))
    }
}

/// An error while logging in, where the connection is not open yet.
impl From<WireError> for ConnectError {
    fn from(err: WireError) -> ConnectError {
        match err {
            WireError::Server { sqlstate, message } => ConnectError::Server { sqlstate, message },
            WireError::Lost(message) => ConnectError::Unreachable(message),
        }
    }
}

/// The SQLSTATE and message of an ErrorResponse.
pub(super) fn server_error(body: &ErrorResponseBody) -> WireError {
    let mut sqlstate = String::new();
    let mut message = String::new();
    let mut fields = body.fields();
    while let Ok(Some(field)) = fields.next() {
        match field.type_() {
            b'C' => sqlstate = String::from_utf8_lossy(field.value_bytes()).into_owned(),
            b'M' => message = String::from_utf8_lossy(field.value_bytes()).into_owned(),
            _ => {}
        }
    }
    if sqlstate.is_empty() {
        sqlstate.push_str("XX000");
    }
    WireError::Server { sqlstate, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_error_reads_as_its_message_and_sqlstate() {
        let err = WireError::Server {
            sqlstate: "22012".into(),
            message: "division by zero".into(),
        };
        assert_eq!(err.to_string(), "division by zero (SQLSTATE 22012)");
        let err = ConnectError::from(err);
        assert!(matches!(err, ConnectError::Server { .. }));
        assert_eq!(err.to_string(), "division by zero (SQLSTATE 22012)");
    }

    #[test]
    fn a_broken_socket_is_a_lost_connection_or_an_unreachable_server() {
        let broken = || io::Error::from(io::ErrorKind::ConnectionReset);
        let lost = WireError::from(broken());
        assert!(matches!(lost, WireError::Lost(_)));
        assert_eq!(lost.to_string(), format!("connection lost: {}", broken()));
        let unreachable = ConnectError::from(broken());
        assert!(matches!(unreachable, ConnectError::Unreachable(_)));
        assert_eq!(unreachable.to_string(), lost.to_string());
        assert!(matches!(
            ConnectError::from(lost),
            ConnectError::Unreachable(_)
        ));
    }
}
