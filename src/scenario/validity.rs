//! Whether a run is a result: a scenario that did not run as written is not.
//!
//! A run is invalid when its blocker failed before its planned end, or its
//! DDL ended in an error, for a reason that is not the scenario's own doing.
//! The scenario's own doing, and so a valid outcome:
//!
//! - a lock: a lock timeout (55P03) or a deadlock (40P01), of the blocker or
//!   of the DDL; a statement or session ended by the server on the
//!   strategy's behalf (class 57: a `statement_timeout`, the harness's cancel
//!   at the end of the run, a session terminated by `kill-blockers`);
//! - a blocker ended by its strategy: terminated by a strategy that
//!   terminates sessions, or closed by a timeout the strategy sets
//!   (`idle_in_transaction_session_timeout`, 25P03);
//! - a blocker still holding when the load ended (cancelled by the harness);
//! - anything after an interrupt (the run is partial, not invalid).
//!
//! Anything else (an undefined table, a syntax error, a permission, a
//! terminate from outside) means the stall the run measured is not the one
//! the workload describes: the ranking sets the run apart and the process
//! exits [`crate::error::exit_code::INVALID`].

use crate::choices::Side;
use crate::config::Expectation;
use crate::config::{BlockerConfig, BlockerKind, Config, ReplicaConfig};
use crate::engine::ErrorClass;
use crate::expect::bounds::Bound;
use crate::metrics::failures::FailureKind;
use crate::metrics::{AttemptOutcome, DdlAttempt, DdlOutcome, RunReport};
use crate::strategy::{NamedStrategy, Strategy};

use super::assemble::Measured;
use super::blocker::BlockerResult;

/// How much earlier than planned a blocker may end and still have held (the
/// run clock's rounding).
const EARLY_MARGIN_S: f64 = 0.05;

/// Why `measured`, the run of `strategy` in `config`, is no result; `None`
/// for a valid run (see the module comment).
pub fn invalid_reason(
    config: &Config,
    strategy: &NamedStrategy,
    measured: &Measured,
) -> Option<String> {
    if measured.interrupted.is_some() {
        return None;
    }
    let blocker = config
        .blocker
        .as_ref()
        .zip(measured.blocker.as_ref())
        .and_then(|(planned, result)| {
            let load_end_s = config.load.duration.as_secs_f64();
            let on_replica = ReplicaConfig::blocker_on(config.replica.as_ref()) == Side::Replica;
            blocker_failure(planned, result, strategy, (load_end_s, on_replica))
        });
    blocker.or_else(|| ddl_failure(&measured.attempts))
}

/// Whether `reason` (from [`invalid_reason`]) is the DDL's error, which an
/// expectation `ddl_outcome = "error"` names.
pub fn is_ddl_failure(reason: &str) -> bool {
    reason.starts_with(DDL_FAILED)
}

/// The invalid runs of `report` that no expectation names, each as
/// `strategy: reason`: what makes the process exit [`crate::error::exit_code::INVALID`].
/// An expectation `ddl_outcome = "error"` on a strategy names its DDL's error.
pub fn unexpected_invalid(expectations: &[Expectation], report: &RunReport) -> Vec<String> {
    let expects_error = |strategy: &str| {
        expectations.iter().any(|expectation| {
            expectation.strategy == strategy
                && expectation.bound == Bound::DdlOutcome(DdlOutcome::Error)
        })
    };
    report
        .strategies
        .iter()
        .map(|strategy| &strategy.summary)
        .filter(|summary| !summary.invalid.is_empty())
        .filter(|summary| !(is_ddl_failure(&summary.invalid) && expects_error(&summary.strategy)))
        .map(|summary| format!("{}: {}", summary.strategy, summary.invalid))
        .collect()
}

const DDL_FAILED: &str = "the DDL failed";

/// The blocker's failure, unless it held to its planned end (or the load's),
/// its strategy ended it, or, `on_replica`, the standby's replay cancelled
/// it (40001, a recovery conflict: `max_standby_streaming_delay` at work).
fn blocker_failure(
    planned: &BlockerConfig,
    result: &BlockerResult,
    strategy: &NamedStrategy,
    (load_end_s, on_replica): (f64, bool),
) -> Option<String> {
    let error = result.error.as_deref()?;
    let planned_end_s = (planned.at + planned.hold).as_secs_f64();
    let ended_s = result.window.ended_s;
    if ended_s + EARLY_MARGIN_S >= planned_end_s.min(load_end_s) {
        return None;
    }
    let sqlstate = sqlstate_of(error);
    if matches!(sqlstate, Some("55P03" | "40P01")) || (on_replica && sqlstate == Some("40001")) {
        return None;
    }
    let terminates = matches!(
        strategy.strategy,
        Strategy::KillBlockers { .. } | Strategy::KillLockHolders { .. }
    );
    let sets_timeout = strategy
        .settings
        .iter()
        .any(|(name, _)| name.ends_with("_timeout"));
    let by_strategy = match sqlstate {
        Some(code) if code.starts_with("57") => terminates || sets_timeout,
        Some("25P03") | None => sets_timeout || terminates,
        Some(_) => false,
    };
    if by_strategy {
        return None;
    }
    let who = match planned.kind {
        BlockerKind::Report => "the report",
        BlockerKind::Writer => "the writer",
        BlockerKind::Idle => "the idle transaction",
    };
    Some(format!(
        "{who} failed at {ended_s:.1} s, {:.1} s into its {} s hold: {error}",
        ended_s - result.window.started_s,
        planned.hold.as_secs_f64()
    ))
}

/// The DDL's error other than its lock's, if a try ended in one.
fn ddl_failure(attempts: &[DdlAttempt]) -> Option<String> {
    let failed = attempts.iter().find(|attempt| {
        attempt.outcome == AttemptOutcome::Error && !is_lock_or_stop(attempt.sqlstate.as_ref())
    })?;
    Some(format!(
        "{DDL_FAILED} at {:.1} s (try {}): {} (SQLSTATE {})",
        failed.ended_s,
        failed.attempt,
        failed.message,
        failed.sqlstate_cell()
    ))
}

/// A failure that is the lock's or a stop's doing, not the statement's: lock
/// timeout, deadlock, cancelled, the session ended or the connection lost
/// (PostgreSQL's classes 57 and 08), or no server code at all (no answer
/// from the server: none, or `connection_lost`).
fn is_lock_or_stop(kind: Option<&FailureKind>) -> bool {
    let Some(code) = kind.and_then(FailureKind::server_code) else {
        return true;
    };
    matches!(
        code.class(),
        ErrorClass::LockTimeout
            | ErrorClass::Deadlock
            | ErrorClass::Cancelled
            | ErrorClass::ConnectionLost
    )
}

/// The SQLSTATE at the end of a message from `database::error_text`
/// (`... (SQLSTATE 42P01)`).
pub(crate) fn sqlstate_of(error: &str) -> Option<&str> {
    let start = error.rfind("(SQLSTATE ")? + "(SQLSTATE ".len();
    error[start..].strip_suffix(')')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{BlockerWindow, test_attempt};
    use std::time::Duration;

    fn report(at_s: u64, hold_s: u64) -> BlockerConfig {
        BlockerConfig {
            kind: BlockerKind::Report,
            at: Duration::from_secs(at_s),
            hold: Duration::from_secs(hold_s),
            sql: "SELECT count(*) FROM acounts".to_string(),
            source: "--blocker".to_string(),
        }
    }

    fn ended(started_s: f64, ended_s: f64, error: &str) -> BlockerResult {
        BlockerResult {
            window: BlockerWindow { started_s, ended_s },
            error: Some(error.to_string()),
        }
    }

    fn named(strategy: Strategy, settings: &[(&str, &str)]) -> NamedStrategy {
        NamedStrategy {
            name: "s".to_string(),
            strategy,
            ddl_steps: None,
            settings: settings
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
        }
    }

    #[test]
    fn a_report_that_fails_at_once_is_invalid_and_says_why() {
        let failed = ended(
            4.0,
            4.01,
            "relation \"acounts\" does not exist (SQLSTATE 42P01)",
        );
        let reason = blocker_failure(
            &report(4, 12),
            &failed,
            &named(Strategy::Plain, &[]),
            (24.0, false),
        );
        assert_eq!(
            reason.as_deref(),
            Some(
                "the report failed at 4.0 s, 0.0 s into its 12 s hold: relation \"acounts\" \
                 does not exist (SQLSTATE 42P01)"
            )
        );
    }

    #[test]
    fn a_blocker_its_strategy_or_the_run_ended_is_valid() {
        let terminated = ended(4.0, 7.0, "terminating connection (SQLSTATE 57P01)");
        let kill = Strategy::KillBlockers {
            grace: Duration::ZERO,
            older_than: Duration::ZERO,
            every: Duration::from_secs(1),
        };
        let plain = named(Strategy::Plain, &[]);
        assert!(
            blocker_failure(
                &report(4, 12),
                &terminated,
                &named(kill, &[]),
                (24.0, false)
            )
            .is_none()
        );
        assert!(blocker_failure(&report(4, 12), &terminated, &plain, (24.0, false)).is_some());
        let closed = ended(2.0, 4.0, "the server closed the session");
        let timeout = named(
            Strategy::Plain,
            &[("idle_in_transaction_session_timeout", "2s")],
        );
        assert!(blocker_failure(&report(2, 8), &closed, &timeout, (14.0, false)).is_none());
        // Cancelled as the load ended, before its planned end.
        let cancelled = ended(4.0, 10.0, "canceling statement (SQLSTATE 57014)");
        assert!(blocker_failure(&report(4, 12), &cancelled, &plain, (10.0, false)).is_none());
        let deadlock = ended(2.0, 3.0, "deadlock detected (SQLSTATE 40P01)");
        assert!(blocker_failure(&report(2, 0), &deadlock, &plain, (10.0, false)).is_none());
        // A standby's replay cancels a report that holds it up: the scenario's doing there only.
        let conflict = ended(
            2.0,
            4.0,
            "canceling statement due to conflict with recovery (SQLSTATE 40001)",
        );
        assert!(blocker_failure(&report(2, 8), &conflict, &plain, (10.0, true)).is_none());
        assert!(blocker_failure(&report(2, 8), &conflict, &plain, (10.0, false)).is_some());
    }

    #[test]
    fn a_ddl_error_is_invalid_unless_it_is_the_lock() {
        let mut attempts = vec![test_attempt(1, 6.0, 6.5, AttemptOutcome::LockTimeout)];
        assert_eq!(ddl_failure(&attempts), None);
        attempts.push(test_attempt(2, 7.0, 7.1, AttemptOutcome::Error));
        attempts[1].sqlstate = Some(FailureKind::from_cell("40P01"));
        assert_eq!(ddl_failure(&attempts), None);
        attempts[1].sqlstate = Some(FailureKind::ConnectionLost);
        assert_eq!(ddl_failure(&attempts), None);
        attempts[1].sqlstate = Some(FailureKind::from_cell("42703"));
        attempts[1].message = "column \"balanse\" does not exist".to_string();
        let reason = ddl_failure(&attempts).unwrap();
        assert_eq!(
            reason,
            "the DDL failed at 7.1 s (try 2): column \"balanse\" does not exist (SQLSTATE 42703)"
        );
        assert!(is_ddl_failure(&reason));
    }
}
