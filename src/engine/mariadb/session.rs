//! Sessions on a MariaDB server: opened under a role, and their errors as
//! the engine-neutral [`ServerError`].
//!
//! MariaDB has no `application_name`: the harness learns each session's
//! connection id (the processlist's `ID`) when it opens it, and keeps the
//! role of every id in [`SessionRoles`], from which the lock observer names
//! the sessions it sees.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use mysql_async::prelude::Queryable;

use crate::engine::{ErrorClass, ServerError};
use crate::role::Role;

/// `ER_LOCK_WAIT_TIMEOUT`: a lock wait (metadata or row) ran out.
pub const LOCK_WAIT_TIMEOUT: u16 = 1205;
/// `ER_LOCK_DEADLOCK`.
pub const DEADLOCK: u16 = 1213;
/// `ER_CONNECTION_KILLED`: `KILL CONNECTION` ended the session.
pub const CONNECTION_KILLED: u16 = 1927;
/// `ER_QUERY_INTERRUPTED`: `KILL QUERY` ended the statement.
pub const QUERY_INTERRUPTED: u16 = 1317;

/// The role of every session the run opened, by connection id.
#[derive(Debug, Clone, Default)]
pub struct SessionRoles(Arc<Mutex<BTreeMap<u64, Role>>>);

impl SessionRoles {
    /// Remembers that session `id` plays `role`.
    pub fn insert(&self, id: u64, role: Role) {
        let mut roles = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        roles.insert(id, role);
    }

    /// The role of session `id`: `external:<id>` for a session the run did not open.
    pub fn of(&self, id: u64) -> Role {
        let roles = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        roles.get(&id).copied().unwrap_or(Role::External(id as u32))
    }
}

/// Opens a session with `opts` and remembers it as `role`.
pub async fn connect(
    opts: &mysql_async::Opts,
    role: Role,
    roles: &SessionRoles,
) -> Result<mysql_async::Conn, mysql_async::Error> {
    let conn = mysql_async::Conn::new(opts.clone()).await?;
    roles.insert(u64::from(conn.id()), role);
    Ok(conn)
}

/// Runs each of `statements` in order on `conn`, discarding their results.
pub async fn run_all(
    conn: &mut mysql_async::Conn,
    statements: &[String],
) -> Result<(), mysql_async::Error> {
    for statement in statements {
        conn.query_drop(statement).await?;
    }
    Ok(())
}

/// `error` as neutral data: the server's error number and SQLSTATE with its
/// class; a client-side error (I/O, a closed connection) as `connection_lost`.
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
            code: String::new(),
            sqlstate: String::new(),
            message: other.to_string(),
            class: ErrorClass::Other,
        },
    }
}

/// The class of MariaDB error `code` with SQLSTATE `sqlstate`.
pub fn class_of(code: u16, sqlstate: &str) -> ErrorClass {
    match (code, sqlstate) {
        (LOCK_WAIT_TIMEOUT, _) => ErrorClass::LockTimeout,
        (DEADLOCK, _) => ErrorClass::Deadlock,
        (CONNECTION_KILLED, _) => ErrorClass::ConnectionLost,
        (_, "40001") => ErrorClass::Serialization,
        _ => ErrorClass::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mariadb_errors_fall_into_neutral_classes() {
        assert_eq!(class_of(1205, "HY000"), ErrorClass::LockTimeout);
        assert_eq!(class_of(1213, "40001"), ErrorClass::Deadlock);
        assert_eq!(class_of(1927, "70100"), ErrorClass::ConnectionLost);
        assert_eq!(class_of(1146, "42S02"), ErrorClass::Other);
    }

    #[test]
    fn a_session_the_run_did_not_open_is_external() {
        let roles = SessionRoles::default();
        roles.insert(7, Role::Ddl);
        assert_eq!(roles.of(7), Role::Ddl);
        assert_eq!(roles.of(9).to_string(), "external:9");
    }
}
