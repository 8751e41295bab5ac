//! `check --replica`: what a migration did to the hot standby's readers in
//! its runs with the report on the standby, judged against the stall budget.
//! The standby replays the migration's ACCESS EXCLUSIVE lock behind its own
//! long transactions and its readers queue behind the replay, which a
//! `lock_timeout` on the primary cannot see: a deployed run that stalls the
//! replica's readers longer than `--max-stall` fails the gate as a stall on
//! the primary does.

use super::checked::MeasuredRun;
use crate::metrics::StrategyReport;

/// One strategy's run with the report on the standby, as the gate judges it
/// (the figures of `Summary::replica_*`, 0 where the run has none).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaStall {
    /// The standby's clients' longest stall, in whole seconds.
    pub longest_stall_s: u32,
    /// Their seconds with no completed transaction.
    pub zero_tps_seconds: u32,
    /// The seconds in which the standby's replay waited for a lock.
    pub replay_waiting_s: u32,
    /// The highest replay lag of any second, in seconds.
    pub max_lag_s: f64,
    /// Queries the standby cancelled for recovery conflicts.
    pub cancelled: u64,
    /// Why the run is no result (`Summary::invalid`); empty for a valid run.
    pub invalid: String,
}

impl ReplicaStall {
    /// The figures of `strategy`'s run.
    pub fn of(strategy: &StrategyReport) -> ReplicaStall {
        let summary = &strategy.summary;
        ReplicaStall {
            longest_stall_s: summary.replica_longest_stall_s.unwrap_or(0),
            zero_tps_seconds: summary.replica_zero_tps_seconds.unwrap_or(0),
            replay_waiting_s: summary.replica_replay_waiting_s.unwrap_or(0),
            max_lag_s: summary.replica_max_lag_s.unwrap_or(0.0),
            cancelled: summary.replica_cancelled.unwrap_or(0),
            invalid: summary.invalid.clone(),
        }
    }

    /// Whether the stall breaks the budget of `max_stall_s`.
    pub fn over(&self, max_stall_s: u32) -> bool {
        self.longest_stall_s > max_stall_s
    }

    /// The broken budget in words: `stalls the replica's readers 9 s (budget
    /// 1 s): the standby's replay waited 11 s for a lock behind the report
    /// there, which lock_timeout on the primary cannot see`.
    pub fn words(&self, max_stall_s: u32) -> String {
        let why = match self.replay_waiting_s {
            0 => String::new(),
            waited => format!(
                ": the standby's replay of its lock waited {waited} s behind the report there, \
                 which lock_timeout on the primary cannot see"
            ),
        };
        let cancelled = match self.cancelled {
            0 => String::new(),
            1 => ", and the standby cancelled 1 query (40001)".to_string(),
            count => format!(", and the standby cancelled {count} queries (40001)"),
        };
        format!(
            "stalls the replica's readers {} s (budget {max_stall_s} s){why}{cancelled}",
            self.longest_stall_s
        )
    }
}

/// The run of `strategy` with the report on the standby, if the check ran one.
pub fn replica_stall(run: &MeasuredRun, strategy: &str) -> Option<ReplicaStall> {
    let replica = run.replica.as_ref()?;
    (replica.report.strategies.iter())
        .find(|report| report.strategy == strategy)
        .map(ReplicaStall::of)
}

/// The fix of a migration that stalls the replica's readers.
pub fn replica_fix() -> String {
    "ACCESS EXCLUSIVE on the standby: its replay waits behind the standby's own long \
     transactions, and the readers there queue behind the replay: deploy with `replica-aware` \
     (it waits, within a bound, until no transaction on the replica holds the table, then \
     tries as retry does), or lower the standby's max_standby_streaming_delay, which cancels \
     the report instead"
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stall(longest_stall_s: u32, replay_waiting_s: u32, cancelled: u64) -> ReplicaStall {
        ReplicaStall {
            longest_stall_s,
            zero_tps_seconds: longest_stall_s.saturating_sub(1),
            replay_waiting_s,
            max_lag_s: 9.8,
            cancelled,
            invalid: String::new(),
        }
    }

    #[test]
    fn the_words_say_how_long_the_replica_stalled_and_why() {
        assert!(stall(9, 11, 0).over(1));
        assert!(!stall(1, 0, 0).over(1));
        assert_eq!(
            stall(9, 11, 0).words(2),
            "stalls the replica's readers 9 s (budget 2 s): the standby's replay of its lock \
             waited 11 s behind the report there, which lock_timeout on the primary cannot see"
        );
        assert_eq!(
            stall(3, 0, 2).words(1),
            "stalls the replica's readers 3 s (budget 1 s), and the standby cancelled 2 queries \
             (40001)"
        );
    }
}
