//! The CSV files: `timeline.csv`, `ddl_attempts.csv`, `locks.csv`, `failures.csv`,
//! `summary.csv` and `ddl_locks.csv` (in `lock_trace`).
//!
//! Each file is one record type: its fields in order are the columns, their names
//! the header, and `read.rs` reads the same type back. Adding a column is adding a
//! field (at the end: users parse these files by header, some by position).

mod cells;
mod lock_trace;
pub mod sweep;

use serde::{Deserialize, Deserializer, Serialize};

use crate::choices::Side;
use crate::metrics::failures::{FailureCount, FailureKind};
use crate::metrics::locks::{LockSample, SecondLocks};
use crate::metrics::replica::ReplicaRow;
use crate::metrics::{
    AttemptOutcome, DdlAttempt, DdlState, LockPhases, PoolRow, ReplicaLoadRow, RunReport,
    SecondRow, StrategyReport, TerminatedSession,
};

pub use lock_trace::{LockTraceCsv, LockTraceRecord, statements_from_records};

use super::{Exporter, rounded_summary};
use crate::results::{
    ATTEMPTS_CSV, FAILURES_CSV, LOCKS_CSV, OutputFile, SUMMARY_CSV, TIMELINE_CSV,
};

/// One row of `timeline.csv`: one strategy in one second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineRecord {
    pub strategy: String,
    pub second: u32,
    pub tps: u64,
    pub failed: u64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub lat_mean_ms: f64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub lat_p50_ms: f64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub lat_p99_ms: f64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub lat_max_ms: f64,
    pub lock_waiters: u32,
    #[serde(with = "cells::zero_or_one")]
    pub blocker_active: bool,
    pub ddl_state: DdlState,
    pub waiting_behind_ddl: u32,
    #[serde(serialize_with = "cells::one_decimal")]
    pub oldest_wait_ms: f64,
    pub timeouts: u64,
    pub skipped: u64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub lag_ms: f64,
    pub behind_schedule: u64,
    pub conn_lost: u64,
    pub reconnects: u64,
    /// The application pool's columns, empty for a run without it.
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub pool_wait_p99_ms: Option<f64>,
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub db_p99_ms: Option<f64>,
    pub pool_timeouts: Option<u64>,
    pub pool_rejected: Option<u64>,
    pub in_flight: Option<u64>,
    pub pool_in_use: Option<u64>,
    /// The hot standby's columns (`--replica`), empty for a run without one:
    /// the replay lag (seconds, bytes), whether replay waited for a lock, the
    /// standby's lock waiters, the queries it cancelled for recovery conflicts.
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub replica_lag_s: Option<f64>,
    pub replica_lag_bytes: Option<u64>,
    pub replica_replay_waiting: Option<u8>,
    pub replica_lock_waiters: Option<u32>,
    pub replica_cancelled: Option<u64>,
    /// The replica's clients when the load runs on both servers (the load
    /// columns above are then the primary's), empty otherwise.
    pub replica_tps: Option<u64>,
    pub replica_failed: Option<u64>,
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub replica_lat_mean_ms: Option<f64>,
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub replica_lat_p50_ms: Option<f64>,
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub replica_lat_p99_ms: Option<f64>,
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub replica_lat_max_ms: Option<f64>,
    /// Which repeat of the strategy, from 1.
    pub repeat: u32,
    /// Transactions that ended after more than one try (`--max-tries`), and
    /// their tries beyond the first.
    pub retried: u64,
    pub retries: u64,
    /// Of `failed`: serialization failures, deadlocks and lock timeouts.
    pub failed_serialization: u64,
    pub failed_deadlock: u64,
    pub failed_lock_timeout: u64,
}

impl TimelineRecord {
    /// The row of `run` for the second `row`, with that second's lock figures.
    pub fn new(run: &StrategyReport, row: &SecondRow, locks: &SecondLocks) -> TimelineRecord {
        TimelineRecord {
            strategy: run.strategy.clone(),
            second: row.second,
            tps: row.tps,
            failed: row.failed,
            lat_mean_ms: row.lat_mean_ms,
            lat_p50_ms: row.lat_p50_ms,
            lat_p99_ms: row.lat_p99_ms,
            lat_max_ms: row.lat_max_ms,
            lock_waiters: row.lock_waiters,
            blocker_active: row.blocker_active,
            ddl_state: row.ddl_state,
            waiting_behind_ddl: locks.waiting_behind_ddl,
            oldest_wait_ms: locks.oldest_wait_ms,
            timeouts: row.timeouts,
            skipped: row.skipped,
            lag_ms: row.lag_ms,
            behind_schedule: row.behind_schedule,
            conn_lost: row.conn_lost,
            reconnects: row.reconnects,
            pool_wait_p99_ms: row.pool.map(|pool| pool.wait_p99_ms),
            db_p99_ms: row.pool.map(|pool| pool.db_p99_ms),
            pool_timeouts: row.pool.map(|pool| pool.timeouts),
            pool_rejected: row.pool.map(|pool| pool.rejected),
            in_flight: row.pool.map(|pool| pool.in_flight),
            pool_in_use: row.pool.map(|pool| pool.in_use),
            replica_lag_s: row.replica.map(|replica| replica.lag_s),
            replica_lag_bytes: row.replica.map(|replica| replica.lag_bytes),
            replica_replay_waiting: row.replica.map(|replica| u8::from(replica.replay_waiting)),
            replica_lock_waiters: row.replica.map(|replica| replica.lock_waiters),
            replica_cancelled: row.replica.map(|replica| replica.cancelled),
            replica_tps: row.replica_load.map(|load| load.tps),
            replica_failed: row.replica_load.map(|load| load.failed),
            replica_lat_mean_ms: row.replica_load.map(|load| load.lat_mean_ms),
            replica_lat_p50_ms: row.replica_load.map(|load| load.lat_p50_ms),
            replica_lat_p99_ms: row.replica_load.map(|load| load.lat_p99_ms),
            replica_lat_max_ms: row.replica_load.map(|load| load.lat_max_ms),
            repeat: run.repeat(),
            retried: row.retried,
            retries: row.retries,
            failed_serialization: row.failed_serialization,
            failed_deadlock: row.failed_deadlock,
            failed_lock_timeout: row.failed_lock_timeout,
        }
    }

    /// The pool's figures of the second, if the row has them.
    fn pool_row(&self) -> Option<PoolRow> {
        Some(PoolRow {
            wait_p99_ms: self.pool_wait_p99_ms?,
            db_p99_ms: self.db_p99_ms.unwrap_or(0.0),
            timeouts: self.pool_timeouts.unwrap_or(0),
            rejected: self.pool_rejected.unwrap_or(0),
            in_flight: self.in_flight.unwrap_or(0),
            in_use: self.pool_in_use.unwrap_or(0),
        })
    }

    /// The standby's figures of the second, if the row has them.
    fn replica_row(&self) -> Option<ReplicaRow> {
        Some(ReplicaRow {
            lag_s: self.replica_lag_s?,
            lag_bytes: self.replica_lag_bytes.unwrap_or(0),
            replay_waiting: self.replica_replay_waiting == Some(1),
            lock_waiters: self.replica_lock_waiters.unwrap_or(0),
            cancelled: self.replica_cancelled.unwrap_or(0),
        })
    }

    /// The replica's clients' figures of the second, if the row has them.
    fn replica_load_row(&self) -> Option<ReplicaLoadRow> {
        Some(ReplicaLoadRow {
            tps: self.replica_tps?,
            failed: self.replica_failed.unwrap_or(0),
            lat_mean_ms: self.replica_lat_mean_ms.unwrap_or(0.0),
            lat_p50_ms: self.replica_lat_p50_ms.unwrap_or(0.0),
            lat_p99_ms: self.replica_lat_p99_ms.unwrap_or(0.0),
            lat_max_ms: self.replica_lat_max_ms.unwrap_or(0.0),
        })
    }

    /// The second and its lock figures, as [`TimelineRecord::new`] took them.
    pub fn second_row(&self) -> (SecondRow, SecondLocks) {
        let row = SecondRow {
            second: self.second,
            tps: self.tps,
            failed: self.failed,
            lat_mean_ms: self.lat_mean_ms,
            lat_p50_ms: self.lat_p50_ms,
            lat_p99_ms: self.lat_p99_ms,
            lat_max_ms: self.lat_max_ms,
            lock_waiters: self.lock_waiters,
            blocker_active: self.blocker_active,
            ddl_state: self.ddl_state,
            timeouts: self.timeouts,
            skipped: self.skipped,
            lag_ms: self.lag_ms,
            behind_schedule: self.behind_schedule,
            conn_lost: self.conn_lost,
            reconnects: self.reconnects,
            retried: self.retried,
            retries: self.retries,
            failed_serialization: self.failed_serialization,
            failed_deadlock: self.failed_deadlock,
            failed_lock_timeout: self.failed_lock_timeout,
            pool: self.pool_row(),
            replica: self.replica_row(),
            replica_load: self.replica_load_row(),
        };
        let locks = SecondLocks {
            waiting_behind_ddl: self.waiting_behind_ddl,
            oldest_wait_ms: self.oldest_wait_ms,
        };
        (row, locks)
    }
}

/// One row of `ddl_attempts.csv`: one try of the migration of one strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub strategy: String,
    pub attempt: u32,
    #[serde(serialize_with = "cells::three_decimals")]
    pub started_s: f64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub ended_s: f64,
    #[serde(serialize_with = "cells::one_decimal")]
    pub waited_ms: f64,
    pub outcome: AttemptOutcome,
    pub sqlstate: Option<FailureKind>,
    pub message: String,
    /// When the statement got its lock; empty if it never did, or no observer ran.
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub lock_granted_s: Option<f64>,
    /// From the start to the grant (the whole try if never granted); empty without an observer.
    #[serde(serialize_with = "cells::optional_one_decimal")]
    pub lock_wait_ms: Option<f64>,
    /// From the grant to the end; empty without an observer.
    #[serde(serialize_with = "cells::optional_one_decimal")]
    pub lock_held_ms: Option<f64>,
    /// Of `lock_held_ms`, the time spent waiting again (a CONCURRENTLY build's waits).
    #[serde(serialize_with = "cells::optional_one_decimal")]
    pub held_waiting_ms: Option<f64>,
    /// `wait-for-idle`'s wait for old transactions before this try.
    #[serde(serialize_with = "cells::one_decimal")]
    pub idle_wait_ms: f64,
    /// The sessions the strategy terminated, `report (pid 4242); reader-2 (pid 4250)`.
    #[serde(with = "cells::sessions")]
    pub terminated: Vec<TerminatedSession>,
    /// The WAL the server wrote during the try, in bytes; empty when unknown.
    pub wal_bytes: Option<u64>,
    /// Which repeat of the strategy, from 1.
    pub repeat: u32,
}

impl AttemptRecord {
    /// The row of `attempt` of `run`.
    pub fn new(run: &StrategyReport, attempt: &DdlAttempt) -> AttemptRecord {
        AttemptRecord {
            strategy: run.strategy.clone(),
            attempt: attempt.attempt,
            started_s: attempt.started_s,
            ended_s: attempt.ended_s,
            waited_ms: attempt.waited_ms,
            outcome: attempt.outcome,
            sqlstate: attempt.sqlstate.clone(),
            message: attempt.message.clone(),
            lock_granted_s: attempt.lock.and_then(|lock| lock.granted_s),
            lock_wait_ms: attempt.lock.map(|lock| lock.wait_ms),
            lock_held_ms: attempt.lock.map(|lock| lock.held_ms),
            held_waiting_ms: attempt.lock.map(|lock| lock.held_waiting_ms),
            idle_wait_ms: attempt.idle_wait_ms,
            terminated: attempt.terminated.clone(),
            wal_bytes: attempt.wal_bytes,
            repeat: run.repeat(),
        }
    }

    /// The attempt, as [`AttemptRecord::new`] took it.
    pub fn attempt(&self) -> DdlAttempt {
        DdlAttempt {
            attempt: self.attempt,
            started_s: self.started_s,
            ended_s: self.ended_s,
            waited_ms: self.waited_ms,
            outcome: self.outcome,
            sqlstate: self.sqlstate.clone(),
            message: self.message.clone(),
            lock: match (self.lock_wait_ms, self.lock_held_ms) {
                (Some(wait_ms), Some(held_ms)) => Some(LockPhases {
                    granted_s: self.lock_granted_s,
                    wait_ms,
                    held_ms,
                    held_waiting_ms: self.held_waiting_ms.unwrap_or(0.0),
                }),
                _ => None,
            },
            idle_wait_ms: self.idle_wait_ms,
            terminated: self.terminated.clone(),
            wal_bytes: self.wal_bytes,
        }
    }
}

/// One row of `locks.csv`: one sampled session that waited for a lock or blocked another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockRecord {
    pub strategy: String,
    #[serde(serialize_with = "cells::three_decimals")]
    pub t_s: f64,
    pub pid: u32,
    pub role: String,
    pub state: String,
    pub wait_event_type: String,
    pub wait_event: String,
    pub lock_mode: String,
    #[serde(with = "cells::zero_or_one")]
    pub granted: bool,
    /// The roles of the blocking sessions, separated by spaces.
    pub blocked_by: String,
    #[serde(serialize_with = "cells::one_decimal")]
    pub wait_ms: f64,
    /// Which repeat of the strategy, from 1.
    pub repeat: u32,
    /// The server the session was sampled on: `primary` or `replica` (the
    /// hot standby); `primary` in folders written before the column.
    #[serde(default)]
    pub server: Side,
    /// For a row-lock wait (`wait_event` `transactionid` or `tuple`), the
    /// table of the row when it was seen; empty otherwise (and in folders
    /// written before the column).
    #[serde(default)]
    pub row_of: String,
}

impl LockRecord {
    /// The row of `sample` of `run`.
    pub fn new(run: &StrategyReport, sample: &LockSample) -> LockRecord {
        LockRecord {
            strategy: run.strategy.clone(),
            t_s: sample.t_s,
            pid: sample.pid,
            role: sample.role.clone(),
            state: sample.state.clone(),
            wait_event_type: sample.wait_event_type.clone(),
            wait_event: sample.wait_event.clone(),
            lock_mode: sample.lock_mode.clone(),
            granted: sample.granted,
            blocked_by: sample.blocked_by.join(" "),
            wait_ms: sample.wait_ms,
            repeat: run.repeat(),
            server: sample.server,
            row_of: sample.row_table().unwrap_or_default().to_string(),
        }
    }

    /// The sample this row records; its relation is not in the file (empty)
    /// but for a row wait's table.
    pub fn into_sample(self) -> LockSample {
        LockSample {
            t_s: self.t_s,
            pid: self.pid,
            role: self.role,
            state: self.state,
            wait_event_type: self.wait_event_type,
            wait_event: self.wait_event,
            lock_mode: self.lock_mode,
            relation: self.row_of,
            granted: self.granted,
            blocked_by: self
                .blocked_by
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            wait_ms: self.wait_ms,
            server: self.server,
        }
    }
}

/// Writes `timeline.csv`: one row per strategy and second, zero seconds included.
pub struct TimelineCsv;

impl Exporter for TimelineCsv {
    fn name(&self) -> &'static str {
        TIMELINE_CSV
    }

    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>> {
        let records = report.strategies.iter().flat_map(|strategy| {
            strategy
                .seconds
                .iter()
                .map(|row| TimelineRecord::new(strategy, row, &strategy.locks.second(row.second)))
        });
        Ok(vec![csv_file::<TimelineRecord>(TIMELINE_CSV, records)?])
    }
}

/// Writes `locks.csv`: every sampled session that waited for a lock or blocked
/// another, with `blocked_by` as roles separated by spaces.
pub struct LocksCsv;

impl Exporter for LocksCsv {
    fn name(&self) -> &'static str {
        LOCKS_CSV
    }

    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>> {
        let records = report.strategies.iter().flat_map(|strategy| {
            strategy
                .locks
                .samples
                .iter()
                .map(|sample| LockRecord::new(strategy, sample))
        });
        Ok(vec![csv_file::<LockRecord>(LOCKS_CSV, records)?])
    }
}

/// Writes `ddl_attempts.csv`: one row per DDL attempt of every strategy (only the header
/// when the run had no DDL).
pub struct AttemptsCsv;

impl Exporter for AttemptsCsv {
    fn name(&self) -> &'static str {
        ATTEMPTS_CSV
    }

    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>> {
        let records = report.strategies.iter().flat_map(|strategy| {
            strategy
                .attempts
                .iter()
                .map(|attempt| AttemptRecord::new(strategy, attempt))
        });
        Ok(vec![csv_file::<AttemptRecord>(ATTEMPTS_CSV, records)?])
    }
}

/// One row of `failures.csv`: the failed transactions of one kind (SQLSTATE and
/// normalised message) of one strategy in one second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureRecord {
    pub strategy: String,
    pub second: u32,
    pub sqlstate: FailureKind,
    pub message: String,
    pub count: u64,
    /// Which repeat of the strategy, from 1.
    pub repeat: u32,
}

impl FailureRecord {
    /// The row of `failure` of `run`.
    pub fn new(run: &StrategyReport, failure: &FailureCount) -> FailureRecord {
        FailureRecord {
            strategy: run.strategy.clone(),
            second: failure.second,
            sqlstate: failure.kind.clone(),
            message: failure.message.clone(),
            count: failure.count,
            repeat: run.repeat(),
        }
    }

    /// The count this row records.
    pub fn into_count(self) -> FailureCount {
        FailureCount {
            second: self.second,
            kind: self.sqlstate,
            message: self.message,
            count: self.count,
        }
    }
}

/// Writes `failures.csv`: one row per strategy, second and kind of failure
/// (only the header when nothing failed).
pub struct FailuresCsv;

impl Exporter for FailuresCsv {
    fn name(&self) -> &'static str {
        FAILURES_CSV
    }

    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>> {
        let records = report.strategies.iter().flat_map(|strategy| {
            strategy
                .failures
                .iter()
                .map(|failure| FailureRecord::new(strategy, failure))
        });
        Ok(vec![csv_file::<FailureRecord>(FAILURES_CSV, records)?])
    }
}

/// Writes `summary.csv`: one row per strategy, the fields of `metrics::Summary` in
/// their order, the header being their serde names.
pub struct SummaryCsv;

impl Exporter for SummaryCsv {
    fn name(&self) -> &'static str {
        SUMMARY_CSV
    }

    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>> {
        let mut writer = ::csv::Writer::from_writer(Vec::new());
        for strategy in &report.strategies {
            writer.serialize(rounded_summary(&strategy.summary))?;
        }
        Ok(vec![OutputFile {
            name: SUMMARY_CSV.to_string(),
            bytes: writer.into_inner()?,
        }])
    }
}

/// The CSV file `name`: the header of `R` (also when there are no records), then the records.
pub(crate) fn csv_file<R: Serialize + for<'de> Deserialize<'de>>(
    name: &str,
    records: impl Iterator<Item = R>,
) -> anyhow::Result<OutputFile> {
    let mut writer = ::csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    writer.write_record(header_of::<R>())?;
    for record in records {
        writer.serialize(record)?;
    }
    Ok(OutputFile {
        name: name.to_string(),
        bytes: writer.into_inner()?,
    })
}

/// The field names of the record type `R` in order: the header of its CSV file.
pub fn header_of<R: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    // FieldNames fails on purpose once serde has told it the names.
    let _ = R::deserialize(FieldNames(&mut fields));
    fields
}

/// A deserializer that only records the field names serde asks a struct for.
struct FieldNames<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for FieldNames<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("a record is a struct"))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(serde::de::Error::custom("only the field names were wanted"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests;
