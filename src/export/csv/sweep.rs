//! `sweep.csv`: one row per sweep value and strategy, with the ranking's
//! figures over the value's repeats (each a median with its lowest and
//! highest repeat; one repeat gives three equal columns), then the mean tps
//! and the invariants' anomalies. The setting and the
//! value are columns of their own, so every sweep's file has the same header.

use serde::{Deserialize, Serialize};

use super::cells;
use crate::metrics::RankingRow;
use crate::metrics::spread::Spread;

/// One row of `sweep.csv`: one strategy at one value of the swept setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRecord {
    /// The swept setting as `--sweep` names it: `retry.lock_timeout`, `clients`.
    pub setting: String,
    /// The value as written: `250ms`.
    pub value: String,
    /// The value as a number, durations in seconds (`0.250`); empty when not a number.
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub value_number: Option<f64>,
    pub strategy: String,
    /// How many runs of the strategy the figures cover.
    pub repeats: u32,
    /// The longest stall, in seconds: the median run, the lowest and the highest.
    #[serde(serialize_with = "cells::one_decimal")]
    pub longest_stall_s: f64,
    #[serde(serialize_with = "cells::one_decimal")]
    pub longest_stall_s_min: f64,
    #[serde(serialize_with = "cells::one_decimal")]
    pub longest_stall_s_max: f64,
    /// Seconds with no completed transaction.
    #[serde(serialize_with = "cells::one_decimal")]
    pub zero_tps_seconds: f64,
    #[serde(serialize_with = "cells::one_decimal")]
    pub zero_tps_seconds_min: f64,
    #[serde(serialize_with = "cells::one_decimal")]
    pub zero_tps_seconds_max: f64,
    /// The worst second of the DDL window as a share of the run's baseline (0.520 is 52%).
    #[serde(serialize_with = "cells::three_decimals")]
    pub worst_second_share: f64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub worst_second_share_min: f64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub worst_second_share_max: f64,
    /// The worst second's TPS, raw (median run).
    #[serde(serialize_with = "cells::one_decimal")]
    pub worst_second_tps: f64,
    /// The highest per-second p99 of the DDL window, in ms.
    #[serde(serialize_with = "cells::three_decimals")]
    pub worst_second_p99_ms: f64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub worst_second_p99_ms_min: f64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub worst_second_p99_ms_max: f64,
    /// The highest latency of the DDL window, in ms.
    #[serde(serialize_with = "cells::three_decimals")]
    pub max_latency_ms: f64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub max_latency_ms_min: f64,
    #[serde(serialize_with = "cells::three_decimals")]
    pub max_latency_ms_max: f64,
    /// Failed transactions of the whole run.
    #[serde(serialize_with = "cells::one_decimal")]
    pub failed: f64,
    #[serde(serialize_with = "cells::one_decimal")]
    pub failed_min: f64,
    #[serde(serialize_with = "cells::one_decimal")]
    pub failed_max: f64,
    /// DDL tries.
    #[serde(serialize_with = "cells::one_decimal")]
    pub ddl_tries: f64,
    #[serde(serialize_with = "cells::one_decimal")]
    pub ddl_tries_min: f64,
    #[serde(serialize_with = "cells::one_decimal")]
    pub ddl_tries_max: f64,
    /// When the migration was done on the run clock, in seconds, over the runs
    /// that finished it; empty when none did.
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub migration_done_at_s: Option<f64>,
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub migration_done_at_s_min: Option<f64>,
    #[serde(serialize_with = "cells::optional_three_decimals")]
    pub migration_done_at_s_max: Option<f64>,
    /// How many of the runs finished the migration.
    pub migration_done_runs: u32,
    /// Completed transactions per second over the whole run: the median run,
    /// the lowest and the highest.
    #[serde(serialize_with = "cells::one_decimal")]
    pub mean_tps: f64,
    #[serde(serialize_with = "cells::one_decimal")]
    pub mean_tps_min: f64,
    #[serde(serialize_with = "cells::one_decimal")]
    pub mean_tps_max: f64,
    /// The anomalies the workload's invariants counted after the runs, the
    /// most any run counted (so a loss in one repeat shows); empty when the
    /// workload checks no invariants.
    pub anomalies: Option<u64>,
}

impl SweepRecord {
    /// The row of `row` (a strategy's ranking figures) at `value` of `setting`.
    pub fn new(
        setting: &str,
        value: &str,
        value_number: Option<f64>,
        row: &RankingRow,
    ) -> SweepRecord {
        let stall = row.longest_stall_s();
        let zero = row.zero_tps_seconds();
        // The shares as the file keeps them (three decimals), so the table
        // written now and the one read back from the file round alike
        // (0.41496 is 41% but its cell 0.415 would read 42%).
        let share = row.worst_second_share();
        let share = Spread::from_range(
            round_to_thousandths(share.median),
            round_to_thousandths(share.min),
            round_to_thousandths(share.max),
            share.count,
        );
        let p99 = row.worst_second_p99_ms();
        let max = row.window_max_latency_ms();
        let failed = row.failed_transactions();
        let tries = row.ddl_tries();
        let done = row.migration_done_at_s();
        let tps = row.mean_tps();
        SweepRecord {
            setting: setting.to_string(),
            value: value.to_string(),
            value_number,
            strategy: row.strategy.clone(),
            repeats: row.repeats() as u32,
            longest_stall_s: stall.median,
            longest_stall_s_min: stall.min,
            longest_stall_s_max: stall.max,
            zero_tps_seconds: zero.median,
            zero_tps_seconds_min: zero.min,
            zero_tps_seconds_max: zero.max,
            worst_second_share: share.median,
            worst_second_share_min: share.min,
            worst_second_share_max: share.max,
            worst_second_tps: row.worst_second_tps().median,
            worst_second_p99_ms: p99.median,
            worst_second_p99_ms_min: p99.min,
            worst_second_p99_ms_max: p99.max,
            max_latency_ms: max.median,
            max_latency_ms_min: max.min,
            max_latency_ms_max: max.max,
            failed: failed.median,
            failed_min: failed.min,
            failed_max: failed.max,
            ddl_tries: tries.median,
            ddl_tries_min: tries.min,
            ddl_tries_max: tries.max,
            migration_done_at_s: done.map(|done| done.median),
            migration_done_at_s_min: done.map(|done| done.min),
            migration_done_at_s_max: done.map(|done| done.max),
            migration_done_runs: done.map_or(0, |done| done.count as u32),
            mean_tps: tps.median,
            mean_tps_min: tps.min,
            mean_tps_max: tps.max,
            anomalies: row.checked_invariants().then(|| row.anomalies().max as u64),
        }
    }

    /// Whether every run of the strategy at this value finished the migration.
    pub fn finished_every_run(&self) -> bool {
        self.migration_done_runs == self.repeats
    }

    /// The longest stall as a spread (median, lowest, highest repeat).
    pub fn stall_spread(&self) -> Spread {
        Spread::from_range(
            self.longest_stall_s,
            self.longest_stall_s_min,
            self.longest_stall_s_max,
            self.repeats as usize,
        )
    }

    /// The mean tps as a spread (median, lowest, highest repeat).
    pub fn tps_spread(&self) -> Spread {
        Spread::from_range(
            self.mean_tps,
            self.mean_tps_min,
            self.mean_tps_max,
            self.repeats as usize,
        )
    }

    /// Whether no run of the strategy at this value ran a DDL.
    pub fn ran_no_ddl(&self) -> bool {
        self.ddl_tries_max == 0.0
    }

    /// When the migration was done, as a spread over the runs that finished it.
    pub fn done_spread(&self) -> Option<Spread> {
        Some(Spread::from_range(
            self.migration_done_at_s?,
            self.migration_done_at_s_min?,
            self.migration_done_at_s_max?,
            self.migration_done_runs as usize,
        ))
    }
}

/// `value` as a three-decimal cell holds it: `0.41496` -> `0.415`.
fn round_to_thousandths(value: f64) -> f64 {
    format!("{value:.3}").parse().unwrap_or(value)
}
