//! The replica's figures: what the replica observer saw on the hot standby
//! in each sample (how far replay was behind, whether the startup process
//! waited for a lock, who queued behind it, how many queries it cancelled),
//! and the same folded into one row per second for `timeline.csv`.
//!
//! Replay lag is measured on the standby alone, with no write on the
//! primary: the standby's receive position is remembered at each sample, and
//! the lag at a sample is the age of the oldest WAL received and not yet
//! replayed (0 when replay has caught up with what was received). A primary
//! that writes nothing has nothing to replay, and no lag.

use std::collections::VecDeque;

use super::locks::LockSample;
use crate::role::Role;

/// One look at the standby, on the run clock.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaSample {
    pub at_s: f64,
    /// The age of the oldest WAL received and not yet replayed, in seconds.
    pub lag_s: f64,
    /// WAL received and not yet replayed, in bytes.
    pub lag_bytes: u64,
    /// Whether the startup process (replay) waited for a lock.
    pub replay_waiting: bool,
    /// Sessions on the standby waiting for a lock, the startup process aside.
    pub lock_waiters: u32,
    /// Queries the standby has cancelled for recovery conflicts so far
    /// (`pg_stat_database_conflicts`, this database, since the server started).
    pub conflicts_total: u64,
    /// The standby's sessions that waited for a lock or blocked a waiter at
    /// this look (the startup process as `startup`), as the lock observer
    /// keeps the primary's; empty when no one waited.
    pub locks: Vec<LockSample>,
}

/// One second of the replica in `timeline.csv` (`replica_*` columns).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplicaRow {
    /// The highest replay lag of the second's samples, in seconds.
    pub lag_s: f64,
    /// The most WAL received and not yet replayed in one sample, in bytes.
    pub lag_bytes: u64,
    /// Whether replay waited for a lock in any sample of the second.
    pub replay_waiting: bool,
    /// The most sessions waiting for a lock on the standby in one sample.
    pub lock_waiters: u32,
    /// Queries cancelled for recovery conflicts in this second.
    pub cancelled: u64,
}

/// The standby's receive positions, for the age of what it has not replayed.
#[derive(Debug, Default)]
pub struct LagClock {
    /// (when, receive position) of the samples whose received WAL may not be
    /// replayed yet, oldest first.
    received: VecDeque<(f64, u64)>,
}

impl LagClock {
    /// The lag at `at_s`, when the standby has received up to `receive_lsn`
    /// and replayed up to `replay_lsn`: (seconds, bytes).
    pub fn lag(&mut self, at_s: f64, receive_lsn: u64, replay_lsn: u64) -> (f64, u64) {
        if self
            .received
            .back()
            .is_none_or(|&(_, last)| receive_lsn > last)
        {
            self.received.push_back((at_s, receive_lsn));
        }
        // Replay only moves on: what it has passed is never the oldest again.
        while self
            .received
            .front()
            .is_some_and(|&(_, received)| received <= replay_lsn)
        {
            self.received.pop_front();
        }
        match self.received.front() {
            Some(&(since_s, _)) => ((at_s - since_s).max(0.0), receive_lsn - replay_lsn),
            None => (0.0, receive_lsn.saturating_sub(replay_lsn)),
        }
    }
}

/// One row per second `0..duration_s` from `samples` (in time order); a
/// second without a sample has the lag of the last sample before it and
/// nothing else.
pub fn replica_seconds(samples: &[ReplicaSample], duration_s: u32) -> Vec<ReplicaRow> {
    let mut rows = vec![ReplicaRow::default(); duration_s as usize];
    let mut conflicts_before = samples.first().map_or(0, |first| first.conflicts_total);
    let mut last_lag = (0.0, 0);
    for (second, row) in rows.iter_mut().enumerate() {
        let from = second as f64;
        let in_second: Vec<&ReplicaSample> = samples
            .iter()
            .filter(|sample| sample.at_s >= from && sample.at_s < from + 1.0)
            .collect();
        let Some(last) = in_second.last() else {
            (row.lag_s, row.lag_bytes) = last_lag;
            continue;
        };
        row.lag_s = in_second.iter().map(|s| s.lag_s).fold(0.0, f64::max);
        row.lag_bytes = in_second.iter().map(|s| s.lag_bytes).max().unwrap_or(0);
        row.replay_waiting = in_second.iter().any(|s| s.replay_waiting);
        row.lock_waiters = in_second.iter().map(|s| s.lock_waiters).max().unwrap_or(0);
        row.cancelled = last.conflicts_total.saturating_sub(conflicts_before);
        conflicts_before = conflicts_before.max(last.conflicts_total);
        last_lag = (last.lag_s, last.lag_bytes);
    }
    rows
}

/// One wait of the standby's replay the standby's log reported: from when
/// to when on the run clock, and the sessions it waited for (pid and role).
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedReplayWait {
    /// When replay began to wait, in seconds on the run clock.
    pub from_s: f64,
    /// When it stopped waiting (`f64::INFINITY` when the log does not say).
    pub to_s: f64,
    /// The log's `Conflicting process` pids with their roles.
    pub conflicting: Vec<(u32, String)>,
}

/// Names the blocker of the startup process in each of `looks` where it
/// waited blocked by no session the look saw, from the standby log's wait
/// covering that look: its conflicting sessions become the startup
/// process's blockers, and each one the look lacks joins it as holding a
/// lock (its mode unknown: left empty) on the relation replay waits for.
pub fn name_replay_blockers(looks: &mut [ReplicaSample], logged: &[LoggedReplayWait]) {
    for look in looks {
        let Some(startup) = look.locks.iter().position(|s| {
            Role::parse(&s.role) == Some(Role::Startup) && !s.granted && s.blocked_by.is_empty()
        }) else {
            continue;
        };
        let Some(wait) = logged
            .iter()
            .find(|wait| wait.from_s <= look.at_s && look.at_s <= wait.to_s)
        else {
            continue;
        };
        let replay = look.locks[startup].clone();
        look.locks[startup].blocked_by = (wait.conflicting.iter())
            .map(|(_, role)| role.clone())
            .collect();
        for (pid, role) in &wait.conflicting {
            if look.locks.iter().any(|s| s.pid == *pid) {
                continue;
            }
            look.locks.push(LockSample {
                pid: *pid,
                role: role.clone(),
                state: String::new(),
                wait_event_type: String::new(),
                wait_event: String::new(),
                lock_mode: String::new(),
                granted: true,
                blocked_by: Vec::new(),
                wait_ms: 0.0,
                ..replay.clone()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_is_the_age_of_the_oldest_wal_not_replayed() {
        let mut clock = LagClock::default();
        // Caught up: nothing to replay.
        assert_eq!(clock.lag(0.0, 100, 100), (0.0, 0));
        // The ALTER's WAL arrives at 6 s; replay waits behind the report.
        assert_eq!(clock.lag(6.0, 740, 100), (0.0, 640));
        assert_eq!(clock.lag(7.0, 740, 100), (1.0, 640));
        // More arrives; the oldest unreplayed is still the 6 s one.
        assert_eq!(clock.lag(9.5, 900, 100), (3.5, 800));
        // Replay passes the first arrival: the oldest is now the 9.5 s one.
        assert_eq!(clock.lag(16.0, 900, 740), (6.5, 160));
        assert_eq!(clock.lag(16.2, 900, 900), (0.0, 0));
    }

    fn sample(at_s: f64, lag_s: f64, waiting: bool, conflicts_total: u64) -> ReplicaSample {
        ReplicaSample {
            at_s,
            lag_s,
            lag_bytes: (lag_s * 100.0) as u64,
            replay_waiting: waiting,
            lock_waiters: u32::from(waiting) * 4,
            conflicts_total,
            locks: Vec::new(),
        }
    }

    #[test]
    fn seconds_keep_the_worst_sample_and_count_the_cancellations_in_them() {
        let samples = [
            sample(0.1, 0.0, false, 7),
            sample(0.6, 0.0, false, 7),
            sample(1.2, 0.5, true, 7),
            sample(1.7, 1.0, true, 8),
            // second 2 has no sample
            sample(3.4, 0.0, false, 8),
        ];
        let rows = replica_seconds(&samples, 4);
        assert_eq!(rows[0], ReplicaRow::default());
        assert_eq!(
            rows[1],
            ReplicaRow {
                lag_s: 1.0,
                lag_bytes: 100,
                replay_waiting: true,
                lock_waiters: 4,
                cancelled: 1,
            }
        );
        assert_eq!((rows[2].lag_s, rows[2].replay_waiting), (1.0, false));
        assert_eq!(rows[3], ReplicaRow::default());
    }

    #[test]
    fn the_log_names_the_replay_s_blocker_where_the_look_did_not() {
        use crate::metrics::locks::replica_moment;
        let unnamed = |at_s: f64| {
            let mut locks = replica_moment();
            locks.retain(|s| s.role != "report");
            for sample in &mut locks {
                sample.t_s = at_s;
                if sample.role == "startup" {
                    sample.blocked_by.clear();
                }
            }
            ReplicaSample {
                at_s,
                locks,
                ..ReplicaSample::default()
            }
        };
        let mut looks = vec![unnamed(5.0), unnamed(7.0), replica_sample_named(7.2)];
        let logged = [LoggedReplayWait {
            from_s: 6.0,
            to_s: 16.1,
            conflicting: vec![(3026, "report".to_string())],
        }];
        name_replay_blockers(&mut looks, &logged);
        // Before the logged wait: nothing to name.
        assert!(looks[0].locks.iter().all(|s| s.pid != 3026));
        // In it: the startup process is blocked by the report, which holds a lock.
        let startup = looks[1].locks.iter().find(|s| s.role == "startup").unwrap();
        assert_eq!(startup.blocked_by, ["report"]);
        let report = looks[1].locks.iter().find(|s| s.pid == 3026).unwrap();
        assert!(report.granted && report.lock_mode.is_empty());
        assert_eq!((report.relation.as_str(), report.t_s), ("orders", 7.0));
        assert_eq!(report.server, crate::choices::Side::Replica);
        // A look that named the blocker itself stays as it was.
        assert_eq!(looks[2], replica_sample_named(7.2));
    }

    fn replica_sample_named(at_s: f64) -> ReplicaSample {
        ReplicaSample {
            at_s,
            locks: crate::metrics::locks::replica_moment(),
            ..ReplicaSample::default()
        }
    }
}
