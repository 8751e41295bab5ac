//! PostgreSQL's SQLSTATEs as neutral data: the [`ErrorCode`] of a failure
//! (the `sqlstate` cells of the results), and the few codes whose meaning
//! the PostgreSQL load acts on (the session is gone, the prepared statements
//! are stale).

use tokio_postgres::error::SqlState;

use crate::engine::ErrorCode;
use crate::metrics::failures::FailureKind;

/// `state` as the neutral code the results keep.
pub fn error_code(state: &SqlState) -> ErrorCode {
    ErrorCode::new(state.code())
}

/// A failure the server reported with `state`.
pub fn failure_kind(state: &SqlState) -> FailureKind {
    FailureKind::Server(error_code(state))
}

/// Whether `kind` is the server's error `state`.
pub fn is_state(kind: &FailureKind, state: &SqlState) -> bool {
    kind.server_code()
        .is_some_and(|code| code.as_str() == state.code())
}

/// SQLSTATEs with which the server ends the session: admin_shutdown (57P01:
/// `pg_terminate_backend`, a fast shutdown), crash_shutdown (57P02) and
/// cannot_connect_now (57P03).
pub const ENDS_SESSION: [SqlState; 3] = [
    SqlState::ADMIN_SHUTDOWN,
    SqlState::CRASH_SHUTDOWN,
    SqlState::CANNOT_CONNECT_NOW,
];

/// Whether the server ends the session with an error `state` (see [`ENDS_SESSION`]).
pub fn ends_session(state: &SqlState) -> bool {
    ENDS_SESSION.contains(state)
}

/// SQLSTATEs after which a driver prepares its statements again:
/// feature_not_supported (0A000, "cached plan must not change result type"
/// once a column's type changed) and invalid_sql_statement_name (26000).
pub fn statements_are_stale(kind: &FailureKind) -> bool {
    is_state(kind, &SqlState::FEATURE_NOT_SUPPORTED)
        || is_state(kind, &SqlState::INVALID_SQL_STATEMENT_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sqlstate_becomes_the_code_its_cell_holds() {
        let kind = failure_kind(&SqlState::T_R_DEADLOCK_DETECTED);
        assert_eq!(kind.to_string(), "40P01");
        assert_eq!(kind, FailureKind::from_cell("40P01"));
        assert!(is_state(&kind, &SqlState::T_R_DEADLOCK_DETECTED));
        assert!(!is_state(&kind, &SqlState::LOCK_NOT_AVAILABLE));
        assert!(statements_are_stale(&FailureKind::from_cell("0A000")));
        assert!(!statements_are_stale(&FailureKind::from_cell("timeout")));
    }
}
