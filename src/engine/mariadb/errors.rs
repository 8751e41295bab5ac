//! MariaDB's error numbers as the neutral [`ErrorClass`], and a driver error
//! as a neutral [`ServerError`].
//!
//! The number, not the SQLSTATE, says what happened: MariaDB sends `HY000`
//! beside most errors (a lock wait timeout, 1205, among them) and `40001`
//! beside a deadlock (1213), which PostgreSQL uses for serialization
//! failures. So the engine's own code of a MariaDB error is its number, and
//! that number is what the `sqlstate` cells of `failures.csv` and
//! `ddl_attempts.csv` hold for a MariaDB run ("1205"); it cannot be taken for a
//! SQLSTATE, which always has five characters.
//!
//! Each number below was checked against MariaDB's error code reference
//! (mariadb.com/kb/en/mariadb-error-codes, `perror N` of Debian's
//! mariadb-server 10.11). MySQL numbers the same errors the same way up to
//! 1999; above 3000 the two servers diverge: 4031 is MySQL 8.0.24's
//! `ER_CLIENT_INTERACTION_TIMEOUT` (an idle session closed by `wait_timeout`)
//! but MariaDB's `ER_REFERENCED_TRG_DOES_NOT_EXIST`, and 3024 is MySQL's
//! `ER_QUERY_TIMEOUT` but unused in MariaDB. Those stay `Other`: the harness
//! talks to MariaDB, and its sessions are never idle long enough for
//! `wait_timeout`.

use super::wire::MariaWireError;
use crate::engine::{ErrorClass, ServerError};
use crate::metrics::failures::FailureKind;

/// `ER_CHECKREAD`: a row changed since this transaction's snapshot read it
/// (`innodb_snapshot_isolation=ON`, the default at REPEATABLE READ from
/// 11.6.2); the transaction was rolled back.
pub const CHECKREAD: u16 = 1020;
/// `ER_SERVER_SHUTDOWN`: the server is shutting down.
pub const SERVER_SHUTDOWN: u16 = 1053;
/// `ER_ABORTING_CONNECTION`.
pub const ABORTING_CONNECTION: u16 = 1152;
/// `ER_NET_READ_ERROR` .. `ER_NET_WRITE_INTERRUPTED`: the server could not
/// read or write the session's packets.
pub const NET_ERRORS: std::ops::RangeInclusive<u16> = 1158..=1161;
/// `ER_LOCK_WAIT_TIMEOUT`: a lock wait ran out, a metadata lock's
/// (`lock_wait_timeout`, `WAIT n`, `NOWAIT`) or a row's
/// (`innodb_lock_wait_timeout`).
pub const LOCK_WAIT_TIMEOUT: u16 = 1205;
/// `ER_LOCK_DEADLOCK`: InnoDB chose this transaction as a deadlock's victim
/// and rolled it back.
pub const DEADLOCK: u16 = 1213;
/// `ER_QUERY_INTERRUPTED`: `KILL QUERY` ended the statement.
pub const QUERY_INTERRUPTED: u16 = 1317;
/// `ER_XA_RBTIMEOUT`: an XA branch rolled back for taking too long.
pub const XA_RBTIMEOUT: u16 = 1613;
/// `ER_XA_RBDEADLOCK`: an XA branch rolled back for a deadlock.
pub const XA_RBDEADLOCK: u16 = 1614;
/// `ER_CONNECTION_KILLED`: `KILL CONNECTION` ended the session.
pub const CONNECTION_KILLED: u16 = 1927;
/// `ER_STATEMENT_TIMEOUT`: `max_statement_time` ended the statement.
pub const STATEMENT_TIMEOUT: u16 = 1969;
/// The client library's `CR_SERVER_GONE_ERROR` ("MySQL server has gone away")
/// and `CR_SERVER_LOST` ("Lost connection to MySQL server during query"), as
/// the mariadb client, sysbench and pt-online-schema-change report them.
pub const SERVER_GONE: u16 = 2006;
pub const SERVER_LOST: u16 = 2013;

/// The class of MariaDB error `code`; a code of no class of its own is
/// `Serialization` when its SQLSTATE is `40001` and MariaDB did not say it
/// was a deadlock, else `Other`.
pub fn class_of(code: u16, sqlstate: &str) -> ErrorClass {
    match code {
        LOCK_WAIT_TIMEOUT | XA_RBTIMEOUT => ErrorClass::LockTimeout,
        DEADLOCK | XA_RBDEADLOCK => ErrorClass::Deadlock,
        CHECKREAD => ErrorClass::Serialization,
        QUERY_INTERRUPTED | STATEMENT_TIMEOUT => ErrorClass::Cancelled,
        CONNECTION_KILLED | SERVER_SHUTDOWN | ABORTING_CONNECTION | SERVER_GONE | SERVER_LOST => {
            ErrorClass::ConnectionLost
        }
        code if NET_ERRORS.contains(&code) => ErrorClass::ConnectionLost,
        _ if sqlstate == "40001" => ErrorClass::Serialization,
        _ => ErrorClass::Other,
    }
}

/// The class of a `sqlstate` cell that holds a MariaDB error number
/// (`"1205"`); `None` for any other cell.
pub fn class_of_cell(cell: &str) -> Option<ErrorClass> {
    let looks_like_a_number = cell.len() == 4 && cell.bytes().all(|b| b.is_ascii_digit());
    looks_like_a_number.then(|| class_of(cell.parse().unwrap_or(0), ""))
}

/// The code of an error the client made itself (a bad URL, a value it
/// could not convert).
const CLIENT_ERROR: &str = "client";

/// How a failure of `error` is recorded: the server's error number as the
/// `sqlstate` cell (`1205`), a connection broken on the client's side as
/// `connection_lost`.
pub fn failure_kind(error: &ServerError) -> FailureKind {
    FailureKind::from_cell(&error.code)
}

/// `error` as neutral data: the server's error number (its code) and
/// SQLSTATE with its class; a client-side error (I/O, a closed connection)
/// as `connection_lost`.
pub fn server_error(error: &mysql_async::Error) -> ServerError {
    match error {
        mysql_async::Error::Server(server) => ServerError {
            code: server.code.to_string(),
            sqlstate: server.state.clone(),
            message: server.message.clone(),
            class: class_of(server.code, &server.state),
        },
        mysql_async::Error::Io(_) | mysql_async::Error::Driver(_) => ServerError {
            code: "connection_lost".to_string(),
            sqlstate: String::new(),
            message: error.to_string(),
            class: ErrorClass::ConnectionLost,
        },
        other => ServerError {
            code: CLIENT_ERROR.to_string(),
            sqlstate: String::new(),
            message: other.to_string(),
            class: ErrorClass::Other,
        },
    }
}

/// A failure of the load's own client ([`super::wire`]) as neutral data,
/// classed as [`server_error`] classes mysql_async's: the server's error by
/// its number, a refusal of the client's own (a statement too long to send,
/// the wrong number of parameters) as a `client` error on a connection that
/// goes on, anything else as a lost connection (the load opens it again).
pub fn wire_error(error: &MariaWireError) -> ServerError {
    match error {
        MariaWireError::Server(server) => ServerError {
            code: server.code.to_string(),
            sqlstate: server.sqlstate.clone(),
            message: server.message.clone(),
            class: class_of(server.code, &server.sqlstate),
        },
        MariaWireError::Refused { .. } => ServerError {
            code: CLIENT_ERROR.to_string(),
            sqlstate: String::new(),
            message: error.to_string(),
            class: ErrorClass::Other,
        },
        MariaWireError::Lost { .. } | MariaWireError::Ended => ServerError {
            code: "connection_lost".to_string(),
            sqlstate: String::new(),
            message: error.to_string(),
            class: ErrorClass::ConnectionLost,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_waits_deadlocks_and_lost_sessions_have_their_classes() {
        // (code, the SQLSTATE MariaDB 10.11 sends beside it, class)
        let cases = [
            (1205, "HY000", ErrorClass::LockTimeout),
            (1613, "XA106", ErrorClass::LockTimeout),
            (1213, "40001", ErrorClass::Deadlock),
            (1614, "XA102", ErrorClass::Deadlock),
            (1020, "HY000", ErrorClass::Serialization),
            (1317, "70100", ErrorClass::Cancelled),
            (1969, "70100", ErrorClass::Cancelled),
            (1927, "70100", ErrorClass::ConnectionLost),
            (1053, "08S01", ErrorClass::ConnectionLost),
            (1152, "08S01", ErrorClass::ConnectionLost),
            (1158, "08S01", ErrorClass::ConnectionLost),
            (1161, "08S01", ErrorClass::ConnectionLost),
            (2006, "HY000", ErrorClass::ConnectionLost),
            (2013, "HY000", ErrorClass::ConnectionLost),
            (1146, "42S02", ErrorClass::Other),
            (1062, "23000", ErrorClass::Other),
        ];
        for (code, sqlstate, class) in cases {
            assert_eq!(class_of(code, sqlstate), class, "{code}");
        }
    }

    #[test]
    fn a_deadlock_is_not_a_serialization_failure_though_its_sqlstate_is_40001() {
        assert_eq!(class_of(DEADLOCK, "40001"), ErrorClass::Deadlock);
        // A 40001 of no class of its own (e.g. from a storage engine plugin).
        assert_eq!(class_of(1180, "40001"), ErrorClass::Serialization);
    }

    #[test]
    fn numbers_that_mean_other_things_on_mysql_stay_other() {
        // MariaDB's 4031 is ER_REFERENCED_TRG_DOES_NOT_EXIST, MySQL's an idle timeout.
        assert_eq!(class_of(4031, "HY000"), ErrorClass::Other);
        assert_eq!(class_of(3024, "HY000"), ErrorClass::Other);
    }

    #[test]
    fn a_cell_is_read_as_an_error_number_only_when_it_is_four_digits() {
        assert_eq!(class_of_cell("1205"), Some(ErrorClass::LockTimeout));
        assert_eq!(class_of_cell("1213"), Some(ErrorClass::Deadlock));
        assert_eq!(class_of_cell("1146"), Some(ErrorClass::Other));
        assert_eq!(class_of_cell("40001"), None);
        assert_eq!(class_of_cell("55P03"), None);
        assert_eq!(class_of_cell("timeout"), None);
    }

    #[test]
    fn a_client_side_error_is_a_lost_connection() {
        let closed = mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed);
        let error = server_error(&closed);
        assert_eq!(error.class, ErrorClass::ConnectionLost);
        assert_eq!(error.code, "connection_lost");
        assert_eq!(failure_kind(&error), FailureKind::ConnectionLost);
    }

    #[test]
    fn the_wire_clients_errors_get_the_same_classes() {
        let lock_wait = MariaWireError::Server(super::super::wire::ErrPacket {
            code: 1205,
            sqlstate: "HY000".to_string(),
            message: "Lock wait timeout exceeded".to_string(),
        });
        let error = wire_error(&lock_wait);
        assert_eq!(
            (error.code.as_str(), error.class),
            ("1205", ErrorClass::LockTimeout)
        );
        assert_eq!(failure_kind(&error).to_string(), "1205");
        let lost = wire_error(&MariaWireError::lost("the server closed the connection"));
        assert_eq!(lost.class, ErrorClass::ConnectionLost);
        assert_eq!(failure_kind(&lost), FailureKind::ConnectionLost);
        let refused = wire_error(&MariaWireError::Refused {
            reason: "the statement takes 2 parameters, 1 given".to_string(),
        });
        assert_eq!(
            (refused.code.as_str(), refused.class),
            ("client", ErrorClass::Other)
        );
        assert_eq!(failure_kind(&refused).to_string(), "client");
    }

    #[test]
    fn a_server_error_is_recorded_under_its_number() {
        let error = ServerError {
            code: "1205".to_string(),
            sqlstate: "HY000".to_string(),
            message: "Lock wait timeout exceeded; try restarting transaction".to_string(),
            class: ErrorClass::LockTimeout,
        };
        assert_eq!(failure_kind(&error).to_string(), "1205");
        assert_eq!(
            ErrorClass::of_code(failure_kind(&error).cell()),
            ErrorClass::LockTimeout
        );
    }
}
