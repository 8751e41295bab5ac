//! `check.csv`'s and `check.json`'s columns of `check --replica`: written
//! only by a check with `--replica`, so that a check without it writes the
//! file it always did, byte for byte, and a file without them reads back.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::CheckRecord;
use crate::metrics::StrategyReport;

/// A cell of a column that only a check with `--replica` writes: `Absent`
/// leaves the column out of the file (serde's `skip_serializing_if`), and a
/// file without the column reads back as `Absent`; `Present` writes the
/// cell, empty (`null` in JSON) for `None`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum ReplicaCell<T> {
    /// The check ran without `--replica`: no column.
    #[default]
    Absent,
    /// The check ran with `--replica`: the value, if the row has one.
    Present(Option<T>),
}

impl<T> ReplicaCell<T> {
    /// Whether the column is left out (for `skip_serializing_if`).
    pub fn is_absent(&self) -> bool {
        matches!(self, ReplicaCell::Absent)
    }
}

impl<T: std::fmt::Display> ReplicaCell<T> {
    /// The value as a table cell shows it; empty without one.
    pub fn cell_text(&self) -> String {
        match self {
            ReplicaCell::Present(Some(value)) => value.to_string(),
            _ => String::new(),
        }
    }
}

impl<T: Serialize> Serialize for ReplicaCell<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ReplicaCell::Absent => serializer.serialize_none(),
            ReplicaCell::Present(value) => value.serialize(serializer),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ReplicaCell<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Option::<T>::deserialize(deserializer).map(ReplicaCell::Present)
    }
}

/// `record` with its `--replica` cells: absent without `--replica`
/// (`present` false); else `strategy`'s figures from its summary (empty
/// where the run has none: the standby's clients only ran in the runs with
/// the report on the standby), all empty for a row without a strategy.
pub fn with_replica_cells(
    record: CheckRecord,
    present: bool,
    strategy: Option<&StrategyReport>,
) -> CheckRecord {
    if !present {
        return record;
    }
    let summary = strategy.map(|strategy| &strategy.summary);
    CheckRecord {
        replica_zero_tps_seconds: ReplicaCell::Present(
            summary.and_then(|s| s.replica_zero_tps_seconds),
        ),
        replica_longest_stall_s: ReplicaCell::Present(
            summary.and_then(|s| s.replica_longest_stall_s),
        ),
        replica_failed: ReplicaCell::Present(summary.and_then(|s| s.replica_failed)),
        replica_replay_waiting_s: ReplicaCell::Present(
            summary.and_then(|s| s.replica_replay_waiting_s),
        ),
        replica_max_lag_s: ReplicaCell::Present(summary.and_then(|s| s.replica_max_lag_s)),
        replica_cancelled: ReplicaCell::Present(summary.and_then(|s| s.replica_cancelled)),
        wal_bytes: ReplicaCell::Present(summary.and_then(|s| s.wal_bytes)),
        ..record
    }
}
