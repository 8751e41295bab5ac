//! Headline figures of one strategy, derived from its timeline and attempts.

use serde::{Deserialize, Serialize};

use super::ranking::worst_seconds;
use super::replica::ReplicaRow;
use super::spread::median;
use super::writes::{TableWrites, rows_written_cell};
use super::{AttemptOutcome, BlockerWindow, DdlAttempt, PoolRow, SecondRow, replica_view};

/// One row of `summary.csv` / `summary.json` / `summary.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub strategy: String,
    pub transactions: u64,
    pub failed: u64,
    pub mean_tps: f64,
    /// Seconds with no completed transaction.
    pub zero_tps_seconds: u32,
    /// Longest run of seconds below 10% of the median TPS before the blocker started.
    pub longest_stall_s: u32,
    /// The latency of every transaction that ended, completed or failed (a
    /// failed one's until its error arrived), in ms; `ok_*` has the completed only.
    pub lat_p50_ms: f64,
    pub lat_p99_ms: f64,
    pub lat_p999_ms: f64,
    pub lat_max_ms: f64,
    pub ddl_attempts: u32,
    /// From the start of the first attempt to the end of the last one, backoff included.
    pub ddl_total_ms: f64,
    /// How the DDL ended; [`DdlOutcome::None`] when the run had no DDL.
    pub ddl_outcome: DdlOutcome,
    /// How long the last attempt took (for `naive`, how long the ALTER waited).
    pub ddl_last_wait_ms: f64,
    pub max_lock_waiters: u32,
    /// Workers whose connection was lost during the run.
    pub lost_connections: u32,
    /// How the blocker (the report) ended: `none`, `ok`, or `failed: <server message>`
    /// (terminated by `kill-blockers`, cancelled at the end of the run, ...).
    pub blocker_outcome: String,
    /// Indexes left INVALID after the run (a failed `CREATE INDEX CONCURRENTLY`), space separated.
    pub invalid_indexes: String,
    /// Of `failed`, requests that hit `--client-timeout`: the errors an application saw.
    pub timeouts: u64,
    /// Transactions skipped for `--latency-limit` (open loop).
    pub skipped: u64,
    /// Open loop: the longest queue of transactions behind schedule at the end of a second.
    pub max_behind_schedule: u64,
    /// Connections lost during the run (each lost transaction in flight is in `failed`).
    pub conn_lost: u64,
    /// Lost connections opened again.
    pub reconnects: u64,
    /// Attempts to open a lost connection again that failed.
    pub reconnect_failures: u64,
    /// The longest time one worker was without a connection, in ms.
    pub max_disconnected_ms: f64,
    /// Why the run of this strategy ended before its time (Ctrl-C, SIGTERM, the
    /// server's death, an error); empty if it ran to its end. Its figures cover
    /// the whole seconds before the interruption.
    pub interrupted: String,
    /// When the blocker's transaction opened, in seconds on the run clock, so that
    /// `plot DIR` redraws its window exactly; empty without a blocker.
    pub blocker_started_s: Option<f64>,
    /// When the blocker's transaction ended, in seconds on the run clock; empty as above.
    pub blocker_ended_s: Option<f64>,
    /// Transactions still in flight at the end of the run that did not
    /// complete. They are in no second (nor in `transactions`); each one's age
    /// is in the run's latency figures, a lower bound of its latency.
    pub unfinished: u64,
    /// The age of the oldest unfinished transaction at the end, in ms; 0 without one.
    pub unfinished_oldest_ms: f64,
    /// Application pool (`--pool-size`): requests that gave up waiting for a
    /// connection (in `failed` too); 0 without a pool.
    pub pool_timeouts: u64,
    /// The most pool timeouts in one second.
    pub pool_timeouts_worst: u64,
    /// Requests rejected for `--max-in-flight` (in `failed` too).
    pub pool_rejected: u64,
    /// The 99th percentile of the wait for a connection over the run, in ms; empty without a pool.
    pub pool_wait_p99_ms: Option<f64>,
    /// The highest per-second 99th percentile of the wait for a connection, in ms.
    pub pool_wait_p99_worst_ms: Option<f64>,
    /// The 99th percentile of the database time (checkout to end of script) over the run, in ms.
    pub db_p99_ms: Option<f64>,
    /// The most requests waiting or running at the end of a second.
    pub in_flight_max: Option<u64>,
    /// The most pool connections checked out at the end of a second.
    pub pool_in_use_max: Option<u64>,
    /// When the first request that timed out waiting for a connection (at
    /// `--pool-timeout` or `--client-timeout`) began to wait, in seconds on the
    /// run clock: when the pool ran dry.
    pub pool_dry_at_s: Option<f64>,
    /// The lowest TPS of any second of the DDL window (the ranking's window: the
    /// first attempt's start to the last attempt's end plus 1 s; the whole run
    /// without DDL). See [`worst_seconds`].
    pub worst_second_tps: u64,
    /// The highest per-second p99 latency in the same window, in ms.
    pub worst_second_p99_ms: f64,
    /// `--in-place --allow-writes`: the rows the run wrote to the user's tables,
    /// per table (`public.events 86330 inserted, 0 updated, 0 deleted; ...`),
    /// `none`; empty when they were not counted (see [`rows_written_cell`]).
    pub rows_written: String,
    /// Which repeat of the strategy this run was, from 1 (`--repeat N`).
    pub repeat: u32,
    /// The run's baseline: the median TPS of its seconds before the blocker
    /// started (see [`baseline_tps`]).
    pub baseline_tps: f64,
    /// `worst_second_tps` as a share of `baseline_tps` (0.52 is 52%): what
    /// the ranking compares; 0 without a baseline.
    pub worst_second_share: f64,
    /// The median latency of the completed transactions only, in ms (what
    /// pgbench reports); `lat_p50_ms` covers the failed ones too.
    pub ok_p50_ms: Option<f64>,
    /// The 99th percentile of the completed transactions only, in ms.
    pub ok_p99_ms: Option<f64>,
    /// The highest latency of a completed transaction, in ms.
    pub ok_max_ms: Option<f64>,
    /// Why the run is no result: the scenario did not run as written (the
    /// blocker failed before its planned end, or the DDL failed for a reason
    /// other than its lock), e.g. `the report failed at 0.0 s: relation
    /// "acounts" does not exist`; empty for a valid run (see `scenario::validity`).
    pub invalid: String,
    /// The hot standby (`--replica`): the highest replay lag of any second,
    /// in seconds; empty for a run without one.
    pub replica_max_lag_s: Option<f64>,
    /// The seconds in which the standby's replay waited for a lock.
    pub replica_replay_waiting_s: Option<u32>,
    /// Queries the standby cancelled for recovery conflicts during the run.
    pub replica_cancelled: Option<u64>,
    /// The replica's clients, when the load runs on both servers (the
    /// columns above are then the primary's): their seconds with no
    /// completed transaction; empty for a load on one server.
    pub replica_zero_tps_seconds: Option<u32>,
    /// Their longest stall, as `longest_stall_s` counts it, in seconds.
    pub replica_longest_stall_s: Option<u32>,
    /// Their transactions that failed (a query the standby cancelled, 40001, among them).
    pub replica_failed: Option<u64>,
    /// The highest latency of a transaction of theirs, in ms (the highest
    /// per-second max: their whole-run histogram is not kept).
    pub replica_lat_max_ms: Option<f64>,
    /// The WAL the server wrote during the strategy's DDL tries, in bytes:
    /// the sum of the tries' `wal_bytes` that are known (see [`wal_bytes`]);
    /// empty without a try whose WAL is known.
    pub wal_bytes: Option<u64>,
    /// Transactions that needed more than one try (`--max-tries`), completed
    /// or failed at the end, and their tries beyond the first (pgbench's
    /// `retried` and `retries`).
    pub retried: u64,
    pub retries: u64,
    /// Of `failed`, by kind, each after its last try: serialization failures
    /// (40001), deadlocks (40P01) and lock timeouts (55P03).
    pub failed_serialization: u64,
    pub failed_deadlock: u64,
    pub failed_lock_timeout: u64,
}

/// How a strategy's DDL ended, judged by its last attempt. In `summary.csv`
/// and `summary.json` as its snake_case name: `ok`, `gave_up`, `cut_off`,
/// `error`, `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DdlOutcome {
    /// The last attempt succeeded.
    Ok,
    /// The strategy stopped trying (its last allowed try timed out waiting for the lock).
    GaveUp,
    /// The end of the run came while the strategy still had tries left (its
    /// schedule is longer than the run), or while a try still ran (and
    /// stallbench cancelled it): not a verdict on the strategy.
    CutOff,
    /// An error the strategy does not retry.
    Error,
    /// The run had no DDL.
    None,
}

impl DdlOutcome {
    /// Every outcome, in the order error messages list them.
    pub const ALL: [DdlOutcome; 5] = [
        DdlOutcome::Ok,
        DdlOutcome::GaveUp,
        DdlOutcome::CutOff,
        DdlOutcome::Error,
        DdlOutcome::None,
    ];

    /// The name as the files and `[expect] ddl_outcome` write it (the serde
    /// name; a test checks they agree).
    pub fn as_str(self) -> &'static str {
        match self {
            DdlOutcome::Ok => "ok",
            DdlOutcome::GaveUp => "gave_up",
            DdlOutcome::CutOff => "cut_off",
            DdlOutcome::Error => "error",
            DdlOutcome::None => "none",
        }
    }

    /// The outcome named `name` (`ok`, `gave_up`, ...) by its serde name, or
    /// `None` for any other text.
    pub fn from_name(name: &str) -> Option<DdlOutcome> {
        use serde::de::IntoDeserializer;
        let name: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
            name.into_deserializer();
        DdlOutcome::deserialize(name).ok()
    }
}

impl std::fmt::Display for DdlOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Compares with the name as the files write it, so `outcome == "ok"` reads as the CSV does.
impl PartialEq<&str> for DdlOutcome {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

/// Facts of one run that its timeline and attempts do not show: which repeat
/// it was, what became of the sessions around the load and what the run left
/// on the server.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFacts {
    /// Which repeat of the strategy this run was, from 1.
    pub repeat: u32,
    /// Workers whose connection was lost during the run.
    pub lost_connections: u32,
    /// The server's error if the blocker (the report) failed; `None` if it
    /// ended well or the run had none.
    pub blocker_error: Option<String>,
    /// Indexes left INVALID after the run (a failed `CREATE INDEX CONCURRENTLY`).
    pub invalid_indexes: Vec<String>,
    /// Attempts to open a lost connection again that failed.
    pub reconnect_failures: u64,
    /// The longest time one worker was without a connection, in ms.
    pub max_disconnected_ms: f64,
    /// Why the run ended before its time; `None` if it ran to its end.
    pub interrupted: Option<String>,
    /// Transactions in flight at the end that did not complete.
    pub unfinished: u64,
    /// The age of the oldest of them at the end, in ms.
    pub unfinished_oldest_ms: f64,
    /// What the application pool measured over the whole run; `None` without a pool.
    pub pool: Option<PoolFacts>,
    /// The rows the run wrote to the user's tables; `None` when not counted.
    pub rows_written: Option<Vec<TableWrites>>,
    /// The latency of the completed transactions only (the `ok_*` columns).
    pub ok_latency: LatencyFigures,
}

impl Default for RunFacts {
    /// The facts of a first repeat that ran to its end with nothing to tell.
    fn default() -> RunFacts {
        RunFacts {
            repeat: 1,
            lost_connections: 0,
            blocker_error: None,
            invalid_indexes: Vec::new(),
            reconnect_failures: 0,
            max_disconnected_ms: 0.0,
            interrupted: None,
            unfinished: 0,
            unfinished_oldest_ms: 0.0,
            pool: None,
            rows_written: None,
            ok_latency: LatencyFigures::default(),
        }
    }
}

/// The p50, p99 and max of a latency histogram in microseconds, in ms, as the
/// summary writes them (0 for an empty histogram).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatencyFigures {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl LatencyFigures {
    /// The figures of `latency_us`.
    pub fn of(latency_us: &hdrhistogram::Histogram<u64>) -> LatencyFigures {
        LatencyFigures {
            p50_ms: quantile_ms(latency_us, 0.5),
            p99_ms: quantile_ms(latency_us, 0.99),
            max_ms: if latency_us.is_empty() {
                0.0
            } else {
                latency_us.max() as f64 / 1000.0
            },
        }
    }
}

/// The latency at `quantile` of a histogram in microseconds, in ms, with the
/// same definition as the .hgrm file (the top of the quantile's bucket); 0 when empty.
fn quantile_ms(latency_us: &hdrhistogram::Histogram<u64>, quantile: f64) -> f64 {
    if latency_us.is_empty() {
        0.0
    } else {
        latency_us.highest_equivalent(latency_us.value_at_quantile(quantile)) as f64 / 1000.0
    }
}

/// The application pool's whole-run figures that the per-second rows do not hold.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PoolFacts {
    /// The 99th percentile of the wait for a connection, in ms.
    pub wait_p99_ms: f64,
    /// The 99th percentile of the database time, in ms.
    pub db_p99_ms: f64,
    /// When the first request that timed out waiting for a connection began to wait, on the run clock.
    pub dry_at_s: Option<f64>,
}

/// Derives the summary of one strategy. `latency_us` is the whole-run
/// histogram of every transaction that ended, completed or failed.
pub fn summarize(
    strategy: &str,
    seconds: &[SecondRow],
    attempts: &[DdlAttempt],
    blocker: Option<&BlockerWindow>,
    latency_us: &hdrhistogram::Histogram<u64>,
    facts: &RunFacts,
) -> Summary {
    let transactions: u64 = seconds.iter().map(|row| row.tps).sum();
    let failed: u64 = seconds.iter().map(|row| row.failed).sum();
    let mean_tps = if seconds.is_empty() {
        0.0
    } else {
        transactions as f64 / seconds.len() as f64
    };
    let latency = LatencyFigures::of(latency_us);
    let ddl_total_ms = match (attempts.first(), attempts.last()) {
        (Some(first), Some(last)) => (last.ended_s - first.started_s) * 1000.0,
        _ => 0.0,
    };
    let ddl_outcome = match attempts.last() {
        None => DdlOutcome::None,
        Some(last) => match last.outcome {
            AttemptOutcome::Ok => DdlOutcome::Ok,
            AttemptOutcome::GaveUp => DdlOutcome::GaveUp,
            // A lock timeout with tries left is last only when the run ended first.
            AttemptOutcome::LockTimeout | AttemptOutcome::CutOff => DdlOutcome::CutOff,
            AttemptOutcome::Error => DdlOutcome::Error,
        },
    };
    let pool = PoolSummary::new(seconds);
    let worst = worst_seconds(seconds, attempts);
    let baseline_tps = baseline_tps(seconds, blocker);
    // The standby's seconds; `None` for a run without one.
    let replica_rows: Vec<ReplicaRow> = seconds.iter().filter_map(|row| row.replica).collect();
    let replica = (!replica_rows.is_empty()).then_some(replica_rows);
    let replica_load = replica_view(seconds);
    Summary {
        strategy: strategy.to_string(),
        transactions,
        failed,
        mean_tps,
        zero_tps_seconds: seconds.iter().filter(|row| row.tps == 0).count() as u32,
        longest_stall_s: longest_stall_s(seconds, blocker),
        lat_p50_ms: latency.p50_ms,
        lat_p99_ms: latency.p99_ms,
        lat_p999_ms: quantile_ms(latency_us, 0.999),
        lat_max_ms: latency.max_ms,
        ddl_attempts: attempts.len() as u32,
        ddl_total_ms,
        ddl_outcome,
        ddl_last_wait_ms: attempts.last().map_or(0.0, |last| last.waited_ms),
        max_lock_waiters: seconds
            .iter()
            .map(|row| row.lock_waiters)
            .max()
            .unwrap_or(0),
        lost_connections: facts.lost_connections,
        blocker_outcome: match (blocker, &facts.blocker_error) {
            (_, Some(error)) => format!("failed: {error}"),
            (Some(_), None) => "ok".to_string(),
            (None, None) => "none".to_string(),
        },
        invalid_indexes: facts.invalid_indexes.join(" "),
        timeouts: seconds.iter().map(|row| row.timeouts).sum(),
        skipped: seconds.iter().map(|row| row.skipped).sum(),
        max_behind_schedule: seconds
            .iter()
            .map(|row| row.behind_schedule)
            .max()
            .unwrap_or(0),
        conn_lost: seconds.iter().map(|row| row.conn_lost).sum(),
        reconnects: seconds.iter().map(|row| row.reconnects).sum(),
        reconnect_failures: facts.reconnect_failures,
        max_disconnected_ms: facts.max_disconnected_ms,
        interrupted: facts.interrupted.clone().unwrap_or_default(),
        blocker_started_s: blocker.map(|window| window.started_s),
        blocker_ended_s: blocker.map(|window| window.ended_s),
        unfinished: facts.unfinished,
        unfinished_oldest_ms: facts.unfinished_oldest_ms,
        pool_timeouts: pool.timeouts,
        pool_timeouts_worst: pool.timeouts_worst,
        pool_rejected: pool.rejected,
        pool_wait_p99_ms: facts.pool.map(|facts| facts.wait_p99_ms),
        pool_wait_p99_worst_ms: pool.wait_p99_worst_ms,
        db_p99_ms: facts.pool.map(|facts| facts.db_p99_ms),
        in_flight_max: pool.in_flight_max,
        pool_in_use_max: pool.in_use_max,
        pool_dry_at_s: facts.pool.and_then(|facts| facts.dry_at_s),
        worst_second_tps: worst.worst_second_tps,
        worst_second_p99_ms: worst.worst_second_p99_ms,
        repeat: facts.repeat,
        invalid: String::new(),
        baseline_tps,
        worst_second_share: share_of_baseline(worst.worst_second_tps, baseline_tps),
        rows_written: rows_written_cell(facts.rows_written.as_deref()),
        ok_p50_ms: Some(facts.ok_latency.p50_ms),
        ok_p99_ms: Some(facts.ok_latency.p99_ms),
        ok_max_ms: Some(facts.ok_latency.max_ms),
        replica_max_lag_s: replica
            .as_ref()
            .map(|rows| rows.iter().map(|row| row.lag_s).fold(0.0, f64::max)),
        replica_replay_waiting_s: replica
            .as_ref()
            .map(|rows| rows.iter().filter(|row| row.replay_waiting).count() as u32),
        replica_cancelled: replica
            .as_ref()
            .map(|rows| rows.iter().map(|row| row.cancelled).sum()),
        replica_zero_tps_seconds: replica_load
            .as_ref()
            .map(|rows| rows.iter().filter(|row| row.tps == 0).count() as u32),
        replica_longest_stall_s: replica_load
            .as_ref()
            .map(|rows| longest_stall_s(rows, blocker)),
        replica_failed: replica_load
            .as_ref()
            .map(|rows| rows.iter().map(|row| row.failed).sum()),
        replica_lat_max_ms: replica_load
            .as_ref()
            .map(|rows| rows.iter().map(|row| row.lat_max_ms).fold(0.0, f64::max)),
        wal_bytes: wal_bytes(attempts),
        retried: seconds.iter().map(|row| row.retried).sum(),
        retries: seconds.iter().map(|row| row.retries).sum(),
        failed_serialization: seconds.iter().map(|row| row.failed_serialization).sum(),
        failed_deadlock: seconds.iter().map(|row| row.failed_deadlock).sum(),
        failed_lock_timeout: seconds.iter().map(|row| row.failed_lock_timeout).sum(),
    }
}

/// The WAL of `attempts` added up: the sum of the tries whose WAL is known
/// (a try that lost its session is not in it); `None` when no try's is.
pub fn wal_bytes(attempts: &[DdlAttempt]) -> Option<u64> {
    let known: Vec<u64> = attempts.iter().filter_map(|a| a.wal_bytes).collect();
    (!known.is_empty()).then(|| known.iter().sum())
}

/// The pool's per-second figures added up: totals and worst seconds (zeros
/// and `None` for a run without the pool).
struct PoolSummary {
    timeouts: u64,
    timeouts_worst: u64,
    rejected: u64,
    wait_p99_worst_ms: Option<f64>,
    in_flight_max: Option<u64>,
    in_use_max: Option<u64>,
}

impl PoolSummary {
    fn new(seconds: &[SecondRow]) -> PoolSummary {
        let rows: Vec<&PoolRow> = seconds.iter().filter_map(|row| row.pool.as_ref()).collect();
        let used = !rows.is_empty();
        let max = |figure: fn(&PoolRow) -> u64| rows.iter().map(|row| figure(row)).max();
        PoolSummary {
            timeouts: rows.iter().map(|row| row.timeouts).sum(),
            timeouts_worst: max(|row| row.timeouts).unwrap_or(0),
            rejected: rows.iter().map(|row| row.rejected).sum(),
            wait_p99_worst_ms: used
                .then(|| rows.iter().map(|row| row.wait_p99_ms).fold(0.0, f64::max)),
            in_flight_max: max(|row| row.in_flight),
            in_use_max: max(|row| row.in_use),
        }
    }
}

/// The seconds a run's baseline comes from: those before the blocker started
/// (all seconds if there is no blocker or it started in the first second).
pub fn baseline_seconds<'a>(
    seconds: &'a [SecondRow],
    blocker: Option<&BlockerWindow>,
) -> &'a [SecondRow] {
    let before_blocker = blocker.map_or(seconds.len(), |window| {
        (window.started_s.floor().max(0.0) as usize).min(seconds.len())
    });
    if before_blocker > 0 {
        &seconds[..before_blocker]
    } else {
        seconds
    }
}

/// A run's baseline throughput: the median TPS of its [`baseline_seconds`]; 0 without seconds.
pub fn baseline_tps(seconds: &[SecondRow], blocker: Option<&BlockerWindow>) -> f64 {
    let tps: Vec<f64> = baseline_seconds(seconds, blocker)
        .iter()
        .map(|row| row.tps as f64)
        .collect();
    median(&tps)
}

/// `tps` as a share of `baseline_tps`; 0 when there is no baseline.
pub fn share_of_baseline(tps: u64, baseline_tps: f64) -> f64 {
    if baseline_tps > 0.0 {
        tps as f64 / baseline_tps
    } else {
        0.0
    }
}

/// The longest run of consecutive seconds whose TPS is below 10% of the
/// run's [`baseline_tps`].
pub fn longest_stall_s(seconds: &[SecondRow], blocker: Option<&BlockerWindow>) -> u32 {
    if seconds.is_empty() {
        return 0;
    }
    let threshold = baseline_tps(seconds, blocker) * 0.1;
    let mut longest = 0;
    let mut current = 0;
    for row in seconds {
        if (row.tps as f64) < threshold {
            current += 1;
            longest = longest.max(current);
        } else {
            current = 0;
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::new_latency_histogram;

    fn row(second: u32, tps: u64) -> SecondRow {
        crate::metrics::test_second(second, tps)
    }

    fn timeline(tps: &[u64]) -> Vec<SecondRow> {
        tps.iter()
            .enumerate()
            .map(|(second, &tps)| row(second as u32, tps))
            .collect()
    }

    fn attempt(number: u32, started_s: f64, ended_s: f64, outcome: AttemptOutcome) -> DdlAttempt {
        crate::metrics::test_attempt(number, started_s, ended_s, outcome)
    }

    #[test]
    fn the_reference_outage_is_a_nine_second_stall() {
        // The published naive run: 2-5k tps, then seconds 6..14 at zero, then recovery.
        let seconds = timeline(&[
            2123, 2628, 4293, 5355, 2874, 0, 0, 0, 0, 0, 0, 0, 0, 0, 713, 2708, 2230,
        ]);
        let blocker = BlockerWindow {
            started_s: 4.0,
            ended_s: 16.0,
        };
        assert_eq!(longest_stall_s(&seconds, Some(&blocker)), 9);
    }

    #[test]
    fn a_dip_above_ten_percent_is_not_a_stall() {
        let seconds = timeline(&[1000, 1000, 1000, 150, 1000, 99, 1000]);
        assert_eq!(longest_stall_s(&seconds, None), 1);
    }

    #[test]
    fn the_median_comes_from_the_seconds_before_the_blocker() {
        // After the blocker starts the load halves: no stall, since 500 >= 10% of 1000.
        let seconds = timeline(&[1000, 1000, 500, 500, 50]);
        let blocker = BlockerWindow {
            started_s: 2.5,
            ended_s: 4.0,
        };
        assert_eq!(longest_stall_s(&seconds, Some(&blocker)), 1);
    }

    #[test]
    fn summary_counts_transactions_zero_seconds_and_ddl() {
        let seconds = timeline(&[10, 0, 0, 10]);
        let mut latency = new_latency_histogram();
        for value_us in [1_000, 2_000, 3_000, 2_000_000] {
            latency.record(value_us).unwrap();
        }
        let attempts = vec![
            attempt(1, 1.0, 1.5, AttemptOutcome::LockTimeout),
            attempt(2, 2.5, 2.75, AttemptOutcome::Ok),
        ];
        let facts = RunFacts {
            lost_connections: 1,
            ..RunFacts::default()
        };
        let summary = summarize("retry", &seconds, &attempts, None, &latency, &facts);
        assert_eq!(summary.transactions, 20);
        assert_eq!(summary.mean_tps, 5.0);
        assert_eq!(summary.zero_tps_seconds, 2);
        assert_eq!(summary.longest_stall_s, 2);
        assert_eq!(summary.ddl_attempts, 2);
        assert_eq!(summary.ddl_total_ms, 1750.0);
        assert_eq!(summary.ddl_outcome, "ok");
        assert_eq!(summary.ddl_last_wait_ms, 250.0);
        assert_eq!(summary.lost_connections, 1);
        assert!((summary.lat_max_ms - 2000.0).abs() < 2.0);
        assert!((summary.lat_p50_ms - 2.0).abs() < 0.01);
    }

    #[test]
    fn the_wal_of_a_strategy_is_the_sum_of_its_known_tries() {
        let mut attempts = vec![
            attempt(1, 1.0, 1.5, AttemptOutcome::LockTimeout),
            attempt(2, 2.5, 2.75, AttemptOutcome::LockTimeout),
            attempt(3, 4.0, 4.5, AttemptOutcome::Ok),
        ];
        assert_eq!(wal_bytes(&[]), None, "no DDL");
        assert_eq!(wal_bytes(&attempts), None, "no try's WAL known");
        attempts[0].wal_bytes = Some(120);
        attempts[2].wal_bytes = Some(25_996_288);
        assert_eq!(
            wal_bytes(&attempts),
            Some(25_996_408),
            "the lost try is left out"
        );
    }

    #[test]
    fn a_schedule_cut_by_the_end_of_the_run_is_cut_off() {
        let attempts = vec![
            attempt(1, 6.0, 6.5, AttemptOutcome::LockTimeout),
            attempt(2, 7.5, 8.0, AttemptOutcome::LockTimeout),
        ];
        let summary = summarize(
            "retry",
            &timeline(&[10; 10]),
            &attempts,
            None,
            &new_latency_histogram(),
            &RunFacts::default(),
        );
        assert_eq!(summary.ddl_outcome, DdlOutcome::CutOff);
        assert_eq!(summary.ddl_attempts, 2);
        let mut last_allowed = attempts;
        last_allowed[1].outcome = AttemptOutcome::GaveUp;
        let summary = summarize(
            "retry",
            &timeline(&[10; 10]),
            &last_allowed,
            None,
            &new_latency_histogram(),
            &RunFacts::default(),
        );
        assert_eq!(summary.ddl_outcome, DdlOutcome::GaveUp);
    }

    #[test]
    fn lat_columns_count_every_transaction_and_ok_columns_the_completed_only() {
        // Three completed in a few ms; one held 6 s, then failed with 0A000.
        let mut ok = new_latency_histogram();
        for value_us in [1_000, 2_000, 3_000] {
            ok.record(value_us).unwrap();
        }
        let mut every = ok.clone();
        every.record(6_043_000).unwrap();
        let facts = RunFacts {
            ok_latency: LatencyFigures::of(&ok),
            ..RunFacts::default()
        };
        let summary = summarize("naive", &timeline(&[3]), &[], None, &every, &facts);
        assert!((summary.lat_max_ms - 6043.0).abs() < 5.0, "{summary:?}");
        assert!((summary.lat_p99_ms - 6043.0).abs() < 5.0, "{summary:?}");
        let ok_max_ms = summary.ok_max_ms.unwrap();
        assert!((ok_max_ms - 3.0).abs() < 0.01, "{ok_max_ms}");
        assert!((summary.ok_p50_ms.unwrap() - 2.0).abs() < 0.01);
        assert!((summary.ok_p99_ms.unwrap() - 3.0).abs() < 0.01);
    }

    #[test]
    fn ddl_outcome_names_are_the_serde_names() {
        for outcome in DdlOutcome::ALL {
            let json = serde_json::to_string(&outcome).unwrap();
            assert_eq!(json, format!("\"{outcome}\""));
            assert_eq!(DdlOutcome::from_name(outcome.as_str()), Some(outcome));
        }
        assert_eq!(DdlOutcome::from_name("OK"), None);
    }

    #[test]
    fn summary_adds_up_lost_connections_and_reconnects() {
        let mut seconds = timeline(&[10, 4, 0, 10]);
        seconds[1].conn_lost = 4;
        seconds[1].failed = 4;
        seconds[2].reconnects = 1;
        seconds[3].reconnects = 3;
        let facts = RunFacts {
            reconnect_failures: 7,
            max_disconnected_ms: 1_250.5,
            ..RunFacts::default()
        };
        let latency = new_latency_histogram();
        let summary = summarize("load", &seconds, &[], None, &latency, &facts);
        assert_eq!((summary.conn_lost, summary.reconnects), (4, 4));
        assert_eq!(summary.reconnect_failures, 7);
        assert_eq!(summary.max_disconnected_ms, 1_250.5);
        assert_eq!(summary.failed, 4);
    }

    #[test]
    fn a_run_without_ddl_says_none() {
        let summary = summarize(
            "load",
            &timeline(&[5]),
            &[],
            None,
            &new_latency_histogram(),
            &RunFacts::default(),
        );
        assert_eq!(summary.ddl_outcome, "none");
        assert_eq!(summary.ddl_total_ms, 0.0);
        assert_eq!(summary.lat_max_ms, 0.0);
    }
}
