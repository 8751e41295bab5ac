//! What one run of one strategy is, whichever engine it runs on: its clock
//! ([`RunClock`]), its early end ([`Interrupt`]), one transaction's life and
//! tries ([`txn`], with a script's steps in [`commands`]), the open loop's
//! schedule ([`arrivals`], [`precise_timer`]), the load's own thread
//! ([`runtime`]), the progress line ([`progress`]), and the last phase: the
//! report assembled from what the run's tasks returned ([`assemble_report`],
//! pure, so the summary is built once, with the facts the server only knows
//! after the run passed in) and judged valid or not ([`validity`]).
//!
//! Each engine runs its tasks on this clock: PostgreSQL's in
//! `engine::postgres::scenario` (load workers, application pool, blocker,
//! DDL injector and lock observer, started together), MariaDB's in
//! `engine::mariadb::scenario`.
//!
//! A run can end before its time ([`Interrupt`]): its run phase then ends at
//! once, winds down as at the end, and what was measured up to the last whole
//! second becomes a report like any other, marked interrupted.

mod assemble;

pub mod arrivals;
pub mod blocker;
pub mod commands;
pub mod precise_timer;
pub mod progress;
pub mod runtime;
pub mod txn;
pub mod validity;

pub use assemble::{Measured, PoolMeasured, ServerNotes, assemble_report};

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::metrics::failures::FailureKind;

/// The run clock: `second k` is `[k, k+1)` after the load starts.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    start: Instant,
    /// The wall-clock time of `start`, for files read by other tools.
    start_wall: SystemTime,
    duration: Duration,
}

impl RunClock {
    /// Starts the clock now.
    pub fn start(duration: Duration) -> RunClock {
        RunClock {
            start: Instant::now(),
            start_wall: SystemTime::now(),
            duration,
        }
    }

    /// The wall-clock time of second 0, in seconds since the Unix epoch.
    pub fn started_unix_s(&self) -> f64 {
        self.start_wall
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |since| since.as_secs_f64())
    }

    /// When the clock started (second 0 begins).
    pub fn started_at(&self) -> Instant {
        self.start
    }

    /// Seconds since the start, ms precision is what the files keep.
    pub fn now_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// The second an instant falls into.
    pub fn second_of(&self, at: Instant) -> u32 {
        at.saturating_duration_since(self.start).as_secs() as u32
    }

    /// The second the clock is in now.
    pub fn second_now(&self) -> u32 {
        self.second_of(Instant::now())
    }

    /// The number of one-second rows of the timeline.
    pub fn duration_s(&self) -> u32 {
        self.duration.as_secs_f64().ceil() as u32
    }

    /// When the load ends.
    pub fn end(&self) -> Instant {
        self.start + self.duration
    }

    /// Sleeps until `offset` after the start.
    pub async fn sleep_until(&self, offset: Duration) {
        tokio::time::sleep_until(tokio::time::Instant::from_std(self.start + offset)).await;
    }
}

/// Ends a run before its time: fired once with a reason (Ctrl-C, SIGTERM, the
/// server's death, a failed task) by whoever notices it first, watched by every
/// task of the run.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    token: CancellationToken,
    /// When it fired and why; the first reason is the one kept.
    fired: Arc<OnceLock<(Instant, String)>>,
}

impl Interrupt {
    /// Ends the run for `reason`, unless it was ended for another reason before.
    pub fn fire(&self, reason: impl Into<String>) {
        let _ = self.fired.set((Instant::now(), reason.into()));
        self.token.cancel();
    }

    /// Why the run was ended, once it was.
    pub fn reason(&self) -> Option<&str> {
        self.fired.get().map(|(_, reason)| reason.as_str())
    }

    /// The first second of `clock` that is not whole: the second it fired in.
    pub fn cut_second(&self, clock: &RunClock) -> Option<u32> {
        self.fired.get().map(|(at, _)| clock.second_of(*at))
    }

    /// When it fired, in seconds on `clock`.
    pub fn fired_at_s(&self, clock: &RunClock) -> Option<f64> {
        self.fired.get().map(|(at, _)| {
            at.saturating_duration_since(clock.started_at())
                .as_secs_f64()
        })
    }

    /// Resolves once it has fired.
    pub async fn fired(&self) {
        self.token.cancelled().await;
    }

    /// The token the load workers check between transactions (one atomic load).
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// `work`'s result, unless this fires first: then `work` is dropped
    /// mid-way (its sessions close; a statement still running on the server
    /// ends with the server, or when it sees its client gone) and the reason
    /// is the error.
    pub async fn unless_fired<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        tokio::select! {
            result = work => result,
            _ = self.fired() => Err(Error::runtime(self.reason().unwrap_or_default())),
        }
    }
}

/// What a strategy run produced besides its measurements: things to tell the user.
#[derive(Debug, Clone, Default)]
pub struct RunNotes {
    /// Lines worth a warning: lost connections, a failed report, observer errors.
    pub warnings: Vec<String>,
    /// Failed transactions by kind.
    pub failed_by_kind: Vec<(FailureKind, u64)>,
    /// The role of every session the observer saw, by backend pid.
    pub roles: BTreeMap<u32, crate::role::Role>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupt_keeps_its_first_reason_and_cuts_at_the_second_it_fired_in() {
        let clock = RunClock::start(Duration::from_secs(10));
        let interrupt = Interrupt::default();
        assert_eq!(interrupt.reason(), None);
        assert_eq!(interrupt.cut_second(&clock), None);
        assert!(!interrupt.token().is_cancelled());

        interrupt.fire("SIGTERM");
        interrupt.fire("the throwaway server died");
        assert_eq!(interrupt.reason(), Some("SIGTERM"));
        assert_eq!(interrupt.cut_second(&clock), Some(0));
        assert!(interrupt.token().is_cancelled());
    }
}
