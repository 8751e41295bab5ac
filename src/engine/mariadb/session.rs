//! Sessions on a MariaDB server, opened under a role.
//!
//! MariaDB has no `application_name`: the harness learns each session's
//! connection id (the processlist's `ID`) when it opens it, and keeps the
//! role of every id in [`SessionRoles`], from which the lock observer names
//! the sessions it sees.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use mysql_async::prelude::Queryable;

use crate::role::Role;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_the_run_did_not_open_is_external() {
        let roles = SessionRoles::default();
        roles.insert(7, Role::Ddl);
        assert_eq!(roles.of(7), Role::Ddl);
        assert_eq!(roles.of(9).to_string(), "external:9");
    }
}
