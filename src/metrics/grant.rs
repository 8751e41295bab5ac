//! Waiting for the lock versus holding it. A DDL attempt's duration is two
//! different costs: the time it queued for its lock (while every later
//! session queued behind it) and the time it held the lock (a table rewrite,
//! an index build). The server keeps no record of when a lock was granted, so
//! the lock observer polls what the DDL session is doing every
//! [`GRANT_POLL_EVERY_MS`] while a try runs, and this module places the
//! grant between those polls, after the run, as plain data.

/// How often the lock observer polls the DDL session while a try runs, in
/// milliseconds: the resolution of [`LockPhases`] (longer while a full lock
/// sample runs).
pub const GRANT_POLL_EVERY_MS: u64 = 20;

/// How long into a lock wait the server checks for a deadlock: its
/// `deadlock_timeout`, PostgreSQL's default of 1 s, which stallbench's own
/// servers are given too. While the check runs (and logs the wait, with
/// `log_lock_waits`) the session shows no wait event: an instant on a quiet
/// machine, a poll's worth or more on a busy one.
const DEADLOCK_CHECK_AFTER_S: f64 = 1.0;
/// How far from [`DEADLOCK_CHECK_AFTER_S`] into a wait a poll may see that
/// check: a poll early (the wait began before the first poll that saw it),
/// half a second late (a busy machine).
const DEADLOCK_CHECK_WINDOW_S: (f64, f64) = (0.05, 0.5);

use super::failures::FailureKind;
use super::{AttemptOutcome, DdlAttempt};
use crate::engine::ErrorClass;

/// What the DDL session was doing at one poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DdlActivity {
    /// Between statements (or not connected).
    Idle,
    /// Running a statement and waiting for a heavyweight lock (`wait_event_type = 'Lock'`).
    WaitingForLock,
    /// Running a statement and not waiting for a lock.
    Running,
}

/// One poll of the DDL session, on the run clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DdlPoll {
    pub t_s: f64,
    pub activity: DdlActivity,
}

/// When a DDL attempt got its lock, and how its duration splits into waiting
/// for the lock and holding it: `wait_ms + held_ms` is the attempt's duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LockPhases {
    /// When the statement's first lock wait ended, on the run clock; `None` if it never got the lock.
    pub granted_s: Option<f64>,
    /// From the start of the attempt to the grant; the whole attempt if it never got the lock.
    pub wait_ms: f64,
    /// From the grant to the end of the attempt; 0 if it never got the lock.
    pub held_ms: f64,
    /// Of `held_ms`, the time the statement waited again while holding its
    /// lock: for another lock, or for older transactions to end (what a
    /// `CONCURRENTLY` build does).
    pub held_waiting_ms: f64,
}

/// The lock phases of `attempt`, from the polls of the DDL session (in time order).
///
/// The grant is the end of the statement's first lock wait: the first poll
/// that saw it run after the first poll that saw it wait (up to one poll
/// late), unless that poll saw the server's deadlock check (alone between
/// two polls that saw the wait, one `deadlock_timeout` into it: see
/// [`DEADLOCK_CHECK_AFTER_S`]). A poll that saw it run before that saw it parse, before its lock
/// request; a try that failed for its lock wait (a lock timeout, a deadlock)
/// ran after its last wait only to raise the error. Never seen waiting, it
/// was granted at the start (it waited less than a poll) if it succeeded or
/// was seen running. Last seen waiting, it was granted at the end if it
/// succeeded (it held the lock less than a poll), and never if it failed.
pub fn lock_phases(attempt: &DdlAttempt, polls: &[DdlPoll]) -> LockPhases {
    let (started_s, ended_s) = (attempt.started_s, attempt.ended_s);
    let ok = attempt.outcome == AttemptOutcome::Ok;
    let mut during: Vec<&DdlPoll> = polls
        .iter()
        .filter(|poll| poll.t_s > started_s && poll.t_s < ended_s)
        .filter(|poll| poll.activity != DdlActivity::Idle)
        .collect();
    let failed_waiting = matches!(
        attempt.outcome,
        AttemptOutcome::LockTimeout | AttemptOutcome::GaveUp
    ) || attempt
        .sqlstate
        .as_ref()
        .and_then(FailureKind::server_code)
        .is_some_and(|code| code.class() == ErrorClass::Deadlock);
    if failed_waiting {
        let last_wait = during
            .iter()
            .rposition(|poll| poll.activity == DdlActivity::WaitingForLock);
        during.truncate(last_wait.map_or(0, |last| last + 1));
    }
    let running = |poll: &DdlPoll| poll.activity == DdlActivity::Running;
    let first_wait = during
        .iter()
        .position(|poll| poll.activity == DdlActivity::WaitingForLock);
    let granted_s = match first_wait {
        None => (ok || during.iter().any(|poll| running(poll))).then_some(started_s),
        Some(first_wait) => {
            let waits_on = &during[first_wait..];
            let grant = (1..waits_on.len())
                .find(|&at| running(waits_on[at]) && !is_deadlock_check(waits_on, at));
            match grant {
                Some(at) => Some(waits_on[at].t_s),
                None => ok.then_some(ended_s),
            }
        }
    };
    let duration_ms = (ended_s - started_s) * 1000.0;
    let Some(granted_s) = granted_s else {
        return LockPhases {
            granted_s: None,
            wait_ms: duration_ms,
            held_ms: 0.0,
            held_waiting_ms: 0.0,
        };
    };
    LockPhases {
        granted_s: Some(granted_s),
        wait_ms: (granted_s - started_s) * 1000.0,
        held_ms: (ended_s - granted_s) * 1000.0,
        held_waiting_ms: waiting_after_ms(&during, granted_s, ended_s),
    }
}

/// Whether `polls[at]`, which saw the statement run, saw the server's
/// deadlock check rather than the grant: alone between two polls that saw
/// it wait, about `deadlock_timeout` after the first poll of that wait.
fn is_deadlock_check(polls: &[&DdlPoll], at: usize) -> bool {
    let waiting = |poll: &&DdlPoll| poll.activity == DdlActivity::WaitingForLock;
    let alone = at > 0 && waiting(&polls[at - 1]) && polls.get(at + 1).is_some_and(waiting);
    if !alone {
        return false;
    }
    let wait_began_s = match polls[..at].iter().rposition(|poll| !waiting(poll)) {
        Some(before) => polls[before + 1].t_s,
        None => polls[0].t_s,
    };
    let into_s = polls[at].t_s - wait_began_s;
    let (early_s, late_s) = DEADLOCK_CHECK_WINDOW_S;
    (DEADLOCK_CHECK_AFTER_S - early_s..=DEADLOCK_CHECK_AFTER_S + late_s).contains(&into_s)
}

/// The time from `granted_s` to `ended_s` that `polls` saw waiting for a lock:
/// each poll that saw a wait counts until the next poll (or the end).
fn waiting_after_ms(polls: &[&DdlPoll], granted_s: f64, ended_s: f64) -> f64 {
    let after: Vec<&&DdlPoll> = polls.iter().filter(|poll| poll.t_s > granted_s).collect();
    let mut waiting_s = 0.0;
    for (index, poll) in after.iter().enumerate() {
        if poll.activity == DdlActivity::WaitingForLock {
            let until_s = after.get(index + 1).map_or(ended_s, |next| next.t_s);
            waiting_s += until_s - poll.t_s;
        }
    }
    waiting_s * 1000.0
}

#[cfg(test)]
mod tests {
    use super::DdlActivity::{Idle, Running, WaitingForLock};
    use super::*;

    fn polls(from_s: f64, activities: &[DdlActivity]) -> Vec<DdlPoll> {
        activities
            .iter()
            .enumerate()
            .map(|(index, &activity)| DdlPoll {
                t_s: from_s + index as f64 * 0.25,
                activity,
            })
            .collect()
    }

    fn ended(started_s: f64, ended_s: f64, outcome: AttemptOutcome) -> DdlAttempt {
        crate::metrics::test_attempt(1, started_s, ended_s, outcome)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn a_rewrite_behind_a_blocker_waits_then_holds() {
        // Polls at 6.0, 6.25, ..., 7.5: waiting until 7.0, running from 7.25.
        let seen = polls(
            6.0,
            &[
                Idle,
                WaitingForLock,
                WaitingForLock,
                WaitingForLock,
                WaitingForLock,
                Running,
                Running,
            ],
        );
        let phases = lock_phases(&ended(6.1, 7.6, AttemptOutcome::Ok), &seen);
        assert_eq!(phases.granted_s, Some(7.25));
        assert!(close(phases.wait_ms, 1150.0), "{phases:?}");
        assert!(close(phases.held_ms, 350.0), "{phases:?}");
        assert_eq!(phases.held_waiting_ms, 0.0);
    }

    #[test]
    fn a_lock_timeout_never_got_the_lock() {
        let seen = polls(6.0, &[WaitingForLock, WaitingForLock, Idle]);
        let phases = lock_phases(&ended(5.9, 6.4, AttemptOutcome::LockTimeout), &seen);
        assert_eq!(phases.granted_s, None);
        assert!(close(phases.wait_ms, 500.0));
        assert_eq!(phases.held_ms, 0.0);
    }

    #[test]
    fn a_short_wait_between_polls_is_granted_at_the_start() {
        // Seen running at once, or never seen at all: the wait was under a poll.
        let running = lock_phases(
            &ended(6.0, 6.6, AttemptOutcome::Ok),
            &polls(6.1, &[Running, Running]),
        );
        assert_eq!(running.granted_s, Some(6.0));
        assert!(close(running.held_ms, 600.0));
        let unseen = lock_phases(
            &ended(6.0, 6.002, AttemptOutcome::Ok),
            &polls(5.0, &[Idle, Idle]),
        );
        assert_eq!(unseen.granted_s, Some(6.0));
        assert_eq!(unseen.wait_ms, 0.0);
        assert!(close(unseen.held_ms, 2.0));
    }

    #[test]
    fn last_seen_waiting_is_granted_at_the_end_if_it_succeeded() {
        let seen = polls(6.0, &[WaitingForLock, WaitingForLock]);
        let ok = lock_phases(&ended(5.9, 6.3, AttemptOutcome::Ok), &seen);
        assert_eq!(ok.granted_s, Some(6.3));
        assert!(close(ok.wait_ms, 400.0));
        assert!(close(ok.held_ms, 0.0));
        let failed = lock_phases(&ended(5.9, 6.3, AttemptOutcome::LockTimeout), &seen);
        assert_eq!(failed.granted_s, None);
        assert!(close(failed.wait_ms, 400.0));
    }

    #[test]
    fn waits_while_holding_count_apart() {
        // Polls at 6.1, 6.35, ...: a wait, the lock, then waits again (another
        // lock, or a CONCURRENTLY build waiting for older transactions).
        let seen = polls(
            6.1,
            &[
                WaitingForLock,
                Running,
                WaitingForLock,
                WaitingForLock,
                Running,
            ],
        );
        let phases = lock_phases(&ended(6.0, 7.2, AttemptOutcome::Ok), &seen);
        assert_eq!(phases.granted_s, Some(6.35));
        assert!(close(phases.wait_ms, 350.0), "{phases:?}");
        assert!(close(phases.held_ms, 850.0), "{phases:?}");
        assert!(close(phases.held_waiting_ms, 500.0), "{phases:?}");
    }

    #[test]
    fn the_deadlock_check_one_second_into_the_wait_is_not_the_grant() {
        // Polls at 6.0, 6.25, ...: waiting, seen running alone at 7.0 (one
        // second into the wait: the server's deadlock check), waiting again,
        // then running from 7.75 on.
        let seen = polls(
            6.0,
            &[
                WaitingForLock,
                WaitingForLock,
                WaitingForLock,
                WaitingForLock,
                Running,
                WaitingForLock,
                WaitingForLock,
                Running,
            ],
        );
        let phases = lock_phases(&ended(5.99, 7.9, AttemptOutcome::Ok), &seen);
        assert_eq!(phases.granted_s, Some(7.75), "{phases:?}");
        assert_eq!(phases.held_waiting_ms, 0.0);
        // Seen running alone half a second into the wait, it had the lock
        // (`waits_while_holding_count_apart`); and at the check's time but
        // followed by running, too.
        let mut granted = seen.clone();
        granted[5].activity = Running;
        let phases = lock_phases(&ended(5.99, 7.9, AttemptOutcome::Ok), &granted);
        assert_eq!(phases.granted_s, Some(7.0), "{phases:?}");
    }

    #[test]
    fn running_before_the_first_wait_is_the_statement_before_its_lock_request() {
        let seen = polls(6.0, &[Running, WaitingForLock, WaitingForLock, Running]);
        let phases = lock_phases(&ended(5.99, 6.9, AttemptOutcome::Ok), &seen);
        assert_eq!(phases.granted_s, Some(6.75));
        assert_eq!(phases.held_waiting_ms, 0.0);
        let timed_out = lock_phases(&ended(5.99, 6.6, AttemptOutcome::LockTimeout), &seen[..3]);
        assert_eq!(timed_out.granted_s, None, "{timed_out:?}");
        // An error seen running and never waiting got its lock, then failed.
        let failed = lock_phases(&ended(5.99, 6.3, AttemptOutcome::Error), &seen[..1]);
        assert_eq!(failed.granted_s, Some(5.99));
    }

    #[test]
    fn a_try_that_failed_for_its_wait_ran_after_it_only_to_raise_the_error() {
        let seen = polls(6.0, &[WaitingForLock, WaitingForLock, Running]);
        let timed_out = lock_phases(&ended(5.99, 6.51, AttemptOutcome::LockTimeout), &seen);
        assert_eq!(timed_out.granted_s, None, "{timed_out:?}");
        assert!(close(timed_out.wait_ms, 520.0));
        let mut deadlock = ended(5.99, 6.51, AttemptOutcome::Error);
        deadlock.sqlstate = Some(FailureKind::from_cell("40P01"));
        assert_eq!(lock_phases(&deadlock, &seen).granted_s, None);
        // Another error after the wait (a rewrite that overflowed) had the lock.
        let overflow = lock_phases(&ended(5.99, 6.51, AttemptOutcome::Error), &seen);
        assert_eq!(overflow.granted_s, Some(6.5));
    }
}
