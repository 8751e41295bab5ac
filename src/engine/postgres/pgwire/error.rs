//! What can go wrong, as two types because callers act on them differently:
//! opening a connection ([`ConnectError`]: settings that can never work, a
//! server that refuses the login, a server that cannot be reached) and using
//! an open one ([`WireError`]: a failed statement, on a connection that goes
//! on, or a connection that broke). A load worker counts the first kind of
//! [`WireError`] as a failed transaction and the second as a lost connection.
//! The server's errors stay data (a [`SqlState`] and a message) all the way,
//! as tokio-postgres keeps them, so nobody parses a SQLSTATE back out of a text.

use std::{fmt, io};

use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::ErrorResponseBody;
use tokio_postgres::error::SqlState;

/// An ErrorResponse of the server: its SQLSTATE and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    pub code: SqlState,
    pub message: String,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (SQLSTATE {})", self.message, self.code.code())
    }
}

/// Why a call on an open [`WireConnection`](super::WireConnection) failed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The server answered with an error; the connection goes on.
    #[error("{0}")]
    Server(ServerError),
    /// The connection is gone or the server broke the protocol: `reason`
    /// says how, `server` is the error the server sent before it closed the
    /// connection, if it sent one (a FATAL such as `57P01`).
    #[error("{}", lost_text(reason, server.as_ref()))]
    Lost {
        server: Option<ServerError>,
        reason: String,
    },
}

impl WireError {
    /// A connection lost for `reason`, with no error from the server.
    pub fn lost(reason: impl Into<String>) -> WireError {
        WireError::Lost {
            server: None,
            reason: reason.into(),
        }
    }
}

/// `reason`, followed by the server's error when it sent one.
fn lost_text(reason: &str, server: Option<&ServerError>) -> String {
    match server {
        Some(server) => format!("{reason}: {server}"),
        None => reason.to_string(),
    }
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
    #[error("{0}")]
    Server(ServerError),
    /// No server answered, or the connection broke off during the login: the
    /// name lookup, the socket, the connect timeout or the protocol failed.
    #[error("{0}")]
    Unreachable(String),
}

impl From<io::Error> for WireError {
    fn from(err: io::Error) -> WireError {
        WireError::lost(format!("connection lost: {err}"))
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
            WireError::Server(server) => ConnectError::Server(server),
            lost @ WireError::Lost { .. } => ConnectError::Unreachable(lost.to_string()),
        }
    }
}

/// The SQLSTATE and message of an ErrorResponse (`XX000` internal_error if it has none).
pub(super) fn server_error(body: &ErrorResponseBody) -> ServerError {
    let mut code = None;
    let mut message = String::new();
    let mut fields = body.fields();
    while let Ok(Some(field)) = fields.next() {
        match field.type_() {
            b'C' => {
                code = Some(SqlState::from_code(&String::from_utf8_lossy(
                    field.value_bytes(),
                )))
            }
            b'M' => message = String::from_utf8_lossy(field.value_bytes()).into_owned(),
            _ => {}
        }
    }
    ServerError {
        code: code.unwrap_or(SqlState::INTERNAL_ERROR),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_error_reads_as_its_message_and_sqlstate() {
        let err = WireError::Server(ServerError {
            code: SqlState::DIVISION_BY_ZERO,
            message: "division by zero".into(),
        });
        assert_eq!(err.to_string(), "division by zero (SQLSTATE 22012)");
        let err = ConnectError::from(err);
        assert!(matches!(err, ConnectError::Server(_)));
        assert_eq!(err.to_string(), "division by zero (SQLSTATE 22012)");
    }

    #[test]
    fn a_lost_connection_keeps_the_servers_last_error_as_data() {
        let terminated = ServerError {
            code: SqlState::ADMIN_SHUTDOWN,
            message: "terminating connection due to administrator command".into(),
        };
        let lost = WireError::Lost {
            server: Some(terminated.clone()),
            reason: "the server closed the connection".into(),
        };
        assert_eq!(
            lost.to_string(),
            "the server closed the connection: terminating connection due to administrator \
             command (SQLSTATE 57P01)"
        );
        assert!(
            matches!(lost, WireError::Lost { server: Some(ref server), .. } if *server == terminated)
        );
    }

    #[test]
    fn a_broken_socket_is_a_lost_connection_or_an_unreachable_server() {
        let broken = || io::Error::from(io::ErrorKind::ConnectionReset);
        let lost = WireError::from(broken());
        assert!(matches!(lost, WireError::Lost { server: None, .. }));
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
