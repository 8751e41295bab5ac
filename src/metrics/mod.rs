//! Plain data that one scenario run produces, and the figures derived from it.
//!
//! Everything here is free of database and formatting concerns: the scenario
//! fills a [`StrategyReport`], the exporters and charts read it. The words and
//! number formats that describe these figures live in `export` (`sentences`,
//! `format`).

pub mod failures;
pub mod grant;
pub mod growth;
pub mod interruption;
pub mod invariants;
pub mod live;
pub mod lock_trace;
pub mod locks;
pub mod ranking;
pub mod recorder;
pub mod repeats;
pub mod replica;
pub mod spread;
pub mod summary;
pub mod timeline;
pub mod writes;

use serde::{Deserialize, Serialize};

pub use grant::{DdlActivity, DdlPoll, LockPhases, lock_phases};
pub use interruption::{AppliedStep, Interruption, PartialStrategy};
pub use live::LiveCounters;
pub use ranking::{
    Criterion, DdlWindow, Place, RankingRow, RunFigures, WorstSeconds, rank_strategies,
    worst_seconds,
};
pub use recorder::{Recorder, WorkerSecond};
pub use summary::{
    DdlOutcome, LatencyFigures, PoolFacts, RunFacts, Summary, longest_stall_s, summarize,
};
pub use timeline::build_timeline;

use crate::choices::{LoadLoop, LoadOn};
use failures::FailureKind;

/// Everything one `compare` or `run` produced: one entry per run in run order.
/// With `--repeat N` each strategy runs N times, interleaved (`naive, retry,
/// naive, retry`), each run an entry with its [`StrategyReport::repeat`].
#[derive(Debug, Clone)]
pub struct RunReport {
    pub workload: String,
    pub strategies: Vec<StrategyReport>,
    /// Set when the run was stopped before its end: what every output opens with.
    pub interruption: Option<Interruption>,
    /// The servers the load ran on: the figures of `seconds` (TPS, latency,
    /// stalls) are its main side's, `replica_load` the replica's beside them.
    pub load_on: LoadOn,
    /// Whether the clients ran a closed loop or an open one (`--rate`).
    pub load_loop: LoadLoop,
}

impl RunReport {
    /// How many times each strategy ran: the highest repeat of any run (1 for
    /// a run without repeats, 0 for a report without runs).
    pub fn repeats(&self) -> u32 {
        self.strategies
            .iter()
            .map(StrategyReport::repeat)
            .max()
            .unwrap_or(0)
    }

    /// The runs of each strategy, strategies in the order they first ran,
    /// each strategy's runs in repeat order.
    pub fn by_strategy(&self) -> Vec<Vec<&StrategyReport>> {
        let mut groups: Vec<Vec<&StrategyReport>> = Vec::new();
        for run in &self.strategies {
            match groups
                .iter_mut()
                .find(|group| group[0].strategy == run.strategy)
            {
                Some(group) => group.push(run),
                None => groups.push(vec![run]),
            }
        }
        for group in &mut groups {
            group.sort_by_key(|run| run.repeat());
        }
        groups
    }
}

/// The measured result of one strategy on one clock.
#[derive(Debug, Clone)]
pub struct StrategyReport {
    /// Strategy name as the workload or `--strategies` names it.
    pub strategy: String,
    /// One row per second of the load, `second k` covering `[k, k+1)`; zero seconds included.
    pub seconds: Vec<SecondRow>,
    /// Every DDL attempt in order; empty for a load-only run.
    pub attempts: Vec<DdlAttempt>,
    /// When the blocker held its transaction open, on the run clock; `None` if there was none.
    pub blocker: Option<BlockerWindow>,
    /// The latency distribution of the whole run, for `.hgrm` files and percentile curves.
    pub latency: LatencyDistribution,
    /// Headline figures derived from the above.
    pub summary: Summary,
    /// The lock queue: per-second figures, who waited for whom, the worst moment.
    pub locks: locks::LockReport,
    /// Per-second latency histograms for the `.hlog` interval log; empty when read back from files.
    pub intervals: LatencyIntervals,
    /// Failed transactions by second and kind; empty when read back from files.
    pub failures: Vec<failures::FailureCount>,
    /// The DDL's lock trace, taken on the quiet server before the run
    /// (`ddl_locks.csv`); empty without DDL, or read from a folder without the file.
    pub lock_trace: Vec<lock_trace::TracedStatement>,
    /// The workload's invariants checked after the run; empty without
    /// `[[invariants]]`, or when the run was interrupted.
    pub invariants: Vec<invariants::InvariantCheck>,
}

/// Compressed histograms by second: (second, HdrHistogram V2 + deflate bytes).
pub type CompressedSeconds = Vec<(u32, Vec<u8>)>;

/// Per-second latency histograms (microseconds) for the `.hlog` interval log,
/// kept compressed (HdrHistogram V2 + deflate, a few hundred bytes a second)
/// so a long run does not hold a full histogram per second.
#[derive(Debug, Clone, Default)]
pub struct LatencyIntervals {
    /// Wall-clock time of second 0, in seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// (second, compressed histogram) in second order; seconds without a completed
    /// transaction are missing, and a second may appear twice (a late hand-over).
    pub per_second: Vec<(u32, Vec<u8>)>,
    /// The application pool's wait for a connection, per second as above; empty without a pool.
    pub pool_wait: CompressedSeconds,
    /// The application pool's database time, per second as above; empty without a pool.
    pub db: CompressedSeconds,
}

impl StrategyReport {
    /// Which repeat of its strategy this run was, from 1 (kept in its summary).
    pub fn repeat(&self) -> u32 {
        self.summary.repeat
    }

    /// A report with only its summary (no seconds, attempts or latency yet):
    /// what reading `summary.csv` back starts from.
    pub fn from_summary(summary: Summary) -> StrategyReport {
        StrategyReport {
            strategy: summary.strategy.clone(),
            seconds: Vec::new(),
            attempts: Vec::new(),
            blocker: None,
            latency: LatencyDistribution {
                histogram: None,
                percentiles: Vec::new(),
            },
            summary,
            locks: locks::LockReport::default(),
            intervals: LatencyIntervals::default(),
            failures: Vec::new(),
            lock_trace: Vec::new(),
            invariants: Vec::new(),
        }
    }
}

/// One second of the timeline: what completed in `[second, second+1)`.
#[derive(Debug, Clone, PartialEq)]
pub struct SecondRow {
    pub second: u32,
    /// Transactions that completed in this second (this is the TPS figure).
    pub tps: u64,
    /// Transactions that failed in this second.
    pub failed: u64,
    pub lat_mean_ms: f64,
    pub lat_p50_ms: f64,
    pub lat_p99_ms: f64,
    pub lat_max_ms: f64,
    /// Most sessions seen waiting on a heavyweight lock during this second.
    pub lock_waiters: u32,
    /// Whether the blocker's transaction was open at any time in this second.
    pub blocker_active: bool,
    /// What the DDL injector was doing in this second.
    pub ddl_state: DdlState,
    /// Of `failed`, transactions that hit `--client-timeout` (cancelled on the server).
    pub timeouts: u64,
    /// Transactions skipped for `--latency-limit`: too late to be worth sending.
    pub skipped: u64,
    /// Open loop: mean schedule lag (start minus scheduled start) of the
    /// transactions sent that ended in this second, in ms.
    pub lag_ms: f64,
    /// Open loop: transactions scheduled by the end of this second and not yet started.
    pub behind_schedule: u64,
    /// Connections lost in this second (their transaction in flight is in `failed`).
    pub conn_lost: u64,
    /// Connections opened again in this second after a loss.
    pub reconnects: u64,
    /// Transactions that ended in this second after more than one try
    /// (`--max-tries`), completed or failed, and their tries beyond the first.
    pub retried: u64,
    pub retries: u64,
    /// Of `failed`, by kind: serialization failures (40001), deadlocks
    /// (40P01), lock timeouts (55P03), each after its last try.
    pub failed_serialization: u64,
    pub failed_deadlock: u64,
    pub failed_lock_timeout: u64,
    /// The application pool's figures (`--pool-size`); `None` for the lean connections.
    pub pool: Option<PoolRow>,
    /// The hot standby's figures (`--replica`); `None` for a run without one.
    pub replica: Option<replica::ReplicaRow>,
    /// The replica's clients when the load runs on both servers (`[load] on
    /// = "both"`); `None` otherwise (a load on one server is in the columns above).
    pub replica_load: Option<ReplicaLoadRow>,
}

impl SecondRow {
    /// The second as the replica's clients saw it, when the load ran on both
    /// servers: their figures in place of the primary's, every other column
    /// as it is (the primary's load-side counters zero). `None` otherwise.
    pub fn on_replica(&self) -> Option<SecondRow> {
        let load = self.replica_load?;
        Some(SecondRow {
            tps: load.tps,
            failed: load.failed,
            lat_mean_ms: load.lat_mean_ms,
            lat_p50_ms: load.lat_p50_ms,
            lat_p99_ms: load.lat_p99_ms,
            lat_max_ms: load.lat_max_ms,
            timeouts: 0,
            skipped: 0,
            lag_ms: 0.0,
            behind_schedule: 0,
            conn_lost: 0,
            reconnects: 0,
            retried: 0,
            retries: 0,
            failed_serialization: 0,
            failed_deadlock: 0,
            failed_lock_timeout: 0,
            pool: None,
            replica_load: None,
            ..self.clone()
        })
    }
}

/// The timeline as the replica's clients saw it (see [`SecondRow::on_replica`]);
/// `None` unless the load ran on both servers.
pub fn replica_view(seconds: &[SecondRow]) -> Option<Vec<SecondRow>> {
    seconds.first()?.replica_load?;
    seconds.iter().map(SecondRow::on_replica).collect()
}

/// One second of the replica's clients beside the primary's (`[load] on =
/// "both"`): `timeline.csv`'s `replica_tps` .. `replica_lat_max_ms`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplicaLoadRow {
    /// Transactions the replica's clients completed in this second.
    pub tps: u64,
    /// Transactions of theirs that failed in this second (a recovery-conflict
    /// cancellation, 40001, among them).
    pub failed: u64,
    pub lat_mean_ms: f64,
    pub lat_p50_ms: f64,
    pub lat_p99_ms: f64,
    pub lat_max_ms: f64,
}

/// One second of the application pool (`--rate` with `--pool-size`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PoolRow {
    /// The 99th percentile of the wait for a connection of the requests that ended in this second, in ms.
    pub wait_p99_ms: f64,
    /// The 99th percentile of their database time (checkout to end of script), in ms.
    pub db_p99_ms: f64,
    /// Requests that gave up waiting for a connection (`--pool-timeout`; in `failed` too).
    pub timeouts: u64,
    /// Requests rejected for `--max-in-flight` (in `failed` too).
    pub rejected: u64,
    /// Requests waiting for a connection or running at the end of the second.
    pub in_flight: u64,
    /// Pool connections checked out at the end of the second.
    pub in_use: u64,
}

/// The application pool's gauges at the end of one second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PoolGauge {
    /// Requests waiting for a connection or running.
    pub in_flight: u64,
    /// Pool connections checked out.
    pub in_use: u64,
}

/// What the DDL injector was doing during one second, most significant state wins.
/// In `timeline.csv` as its snake_case name: `idle`, `running`, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DdlState {
    /// No DDL yet (or no DDL in this run).
    Idle,
    /// An attempt was running (waiting for its lock or executing).
    Running,
    /// Sleeping between two attempts.
    Backoff,
    /// The DDL has succeeded.
    Done,
    /// The DDL failed for good (gave up or hit a non-retryable error).
    Failed,
}

/// How one DDL attempt ended. In `ddl_attempts.csv` as its snake_case name:
/// `ok`, `lock_timeout`, `error`, `gave_up`, `cut_off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    Ok,
    /// Cancelled by `lock_timeout` (SQLSTATE 55P03); the strategy may try again.
    LockTimeout,
    /// Any other error; the strategy stops.
    Error,
    /// The last allowed try failed; the strategy stops.
    GaveUp,
    /// Still running when the run ended: stallbench cancelled it once the
    /// grace after the load was over (its 57014 is stallbench's, not the
    /// migration's).
    CutOff,
}

/// One try of the migration, timed on the run clock.
#[derive(Debug, Clone, PartialEq)]
pub struct DdlAttempt {
    /// 1-based try number.
    pub attempt: u32,
    pub started_s: f64,
    pub ended_s: f64,
    /// How long the attempt took, lock wait included.
    pub waited_ms: f64,
    pub outcome: AttemptOutcome,
    /// Why the try failed: the server's SQLSTATE, or `connection_lost`;
    /// `None` on success and for an error that carries neither.
    pub sqlstate: Option<FailureKind>,
    /// Server error message, empty on success.
    pub message: String,
    /// When the statement got its lock and how long it waited and held it, as
    /// the lock observer saw it; `None` when no observer ran.
    pub lock: Option<LockPhases>,
    /// How long `wait-for-idle` (or `replica-aware`, on the replica) waited
    /// for old transactions to end before this try started (0 for every
    /// other strategy).
    pub idle_wait_ms: f64,
    /// The sessions the strategy terminated during (or right after) this try.
    pub terminated: Vec<TerminatedSession>,
    /// The WAL the server wrote during the try, in bytes: its WAL insert
    /// position read in the DDL's session just before the try and just
    /// after it (every session's WAL in that time, a writing load's
    /// included); `None` when a position could not be read (the session was
    /// lost, the try never started).
    pub wal_bytes: Option<u64>,
}

impl DdlAttempt {
    /// The `sqlstate` cell of the try: the SQLSTATE, `connection_lost`, or empty.
    pub fn sqlstate_cell(&self) -> &str {
        self.sqlstate.as_ref().map_or("", FailureKind::cell)
    }
}

/// A session a strategy terminated (its backend ended by the server), named as the lock
/// samples name it (`report`, `reader-3`, `external:4242`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminatedSession {
    pub role: String,
    pub pid: u32,
}

/// The time the blocker's transaction was open, on the run clock.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockerWindow {
    pub started_s: f64,
    pub ended_s: f64,
}

/// A latency distribution in microseconds: the merged histogram when measured,
/// or only its percentile curve when read back from an `.hgrm` file.
#[derive(Debug, Clone)]
pub struct LatencyDistribution {
    /// Present for a live run; `None` when re-read from files.
    pub histogram: Option<hdrhistogram::Histogram<u64>>,
    /// (percentile 0..100, latency in ms), increasing; what `latency.png` draws.
    pub percentiles: Vec<(f64, f64)>,
}

impl LatencyDistribution {
    /// Builds the distribution and its percentile curve from a histogram of microseconds.
    pub fn from_histogram(histogram: hdrhistogram::Histogram<u64>) -> LatencyDistribution {
        let percentiles = percentile_curve(&histogram);
        LatencyDistribution {
            histogram: Some(histogram),
            percentiles,
        }
    }
}

/// Percentile points (0..99.99 and the max) of a histogram in microseconds, as (percentile, ms).
pub fn percentile_curve(histogram: &hdrhistogram::Histogram<u64>) -> Vec<(f64, f64)> {
    if histogram.is_empty() {
        return Vec::new();
    }
    histogram
        .iter_quantiles(5)
        .map(|step| {
            (
                step.quantile_iterated_to() * 100.0,
                histogram.highest_equivalent(step.value_iterated_to()) as f64 / 1000.0,
            )
        })
        .collect()
}

/// A DDL attempt for unit tests: try `number` from `started_s` to `ended_s`.
#[cfg(test)]
pub(crate) fn test_attempt(
    number: u32,
    started_s: f64,
    ended_s: f64,
    outcome: AttemptOutcome,
) -> DdlAttempt {
    DdlAttempt {
        attempt: number,
        started_s,
        ended_s,
        waited_ms: (ended_s - started_s) * 1000.0,
        outcome,
        sqlstate: None,
        message: String::new(),
        lock: None,
        idle_wait_ms: 0.0,
        terminated: Vec::new(),
        wal_bytes: None,
    }
}

/// A busy second for unit tests: `tps` transactions of 1 ms, nothing else going on.
#[cfg(test)]
pub(crate) fn test_second(second: u32, tps: u64) -> SecondRow {
    SecondRow {
        second,
        tps,
        failed: 0,
        lat_mean_ms: 1.0,
        lat_p50_ms: 1.0,
        lat_p99_ms: 1.0,
        lat_max_ms: 1.0,
        lock_waiters: 0,
        blocker_active: false,
        ddl_state: DdlState::Idle,
        timeouts: 0,
        skipped: 0,
        lag_ms: 0.0,
        behind_schedule: 0,
        conn_lost: 0,
        reconnects: 0,
        retried: 0,
        retries: 0,
        failed_serialization: 0,
        failed_deadlock: 0,
        failed_lock_timeout: 0,
        pool: None,
        replica: None,
        replica_load: None,
    }
}

/// A fresh latency histogram in microseconds: 1 us .. 1 h, 3 significant digits.
pub fn new_latency_histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3)
        .expect("constant histogram bounds are valid")
}
