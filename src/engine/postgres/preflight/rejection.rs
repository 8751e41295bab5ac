//! What the check before the load (and the lock trace, its dry run of a
//! migration) makes of a statement the server refused: whether the refusal
//! depends on timing, and the exit-2 error that names it; and how long a
//! session of the check waits for a lock.

use tokio_postgres::error::SqlState;

use crate::engine::postgres::database::Database;
use crate::error::Error;
use crate::role::Role;
use crate::scenario::validity::sqlstate_of;

/// How long a session of the check waits for a lock before it gives up on
/// that statement (and leaves it to the run).
pub const LOCK_TIMEOUT: &str = "1s";

/// The exit-2 error for `sql` from `source` (at `place`, e.g. `line 3`),
/// which the server of `target` refused with `message` (with the hint of a
/// `--db-url` run for an undefined table: where the run's tables live).
pub fn statement_error(
    target: &Database,
    source: &str,
    place: &str,
    sql: &str,
    message: &str,
) -> Error {
    let code = sqlstate_of(message).map(SqlState::from_code);
    let message = target
        .connector(Role::Check, &[])
        .rejection(message, code.as_ref());
    Error::bad_input(format!(
        "{source} ({place}): the server rejects this statement: \"{}\": {message}; found \
         before the load started, nothing was measured; fix the statement",
        sql.trim()
    ))
}

/// Whether a server error (as `database::error_text` writes it, ending
/// `(SQLSTATE xxxxx)`) does not depend on timing: syntax and access rules
/// (class 42: undefined table or column, type mismatch, permission), data
/// (22), integrity (23), a feature not supported (0A), dependent objects
/// (2B), an unknown schema (3F). A lock timeout, a deadlock or a cancel may
/// not happen in the run, so they are left to it.
pub fn is_static_error(message: &str) -> bool {
    let Some(code) = sqlstate_of(message) else {
        return false;
    };
    ["42", "22", "23", "0A", "2B", "3F"]
        .iter()
        .any(|class| code.starts_with(class))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_that_do_not_depend_on_timing_are_static() {
        assert!(is_static_error(
            "relation \"acounts\" does not exist (SQLSTATE 42P01)"
        ));
        assert!(is_static_error("permission denied (SQLSTATE 42501)"));
        assert!(!is_static_error(
            "canceling statement due to lock timeout (SQLSTATE 55P03)"
        ));
        assert!(!is_static_error("deadlock detected (SQLSTATE 40P01)"));
        assert!(!is_static_error("connection closed"));
    }
}
