//! What an expectation can require: the keys of `[expect.<strategy>]` and
//! `--expect`, their limits, and how each is measured on a [`Summary`].

use serde::{Deserialize, Serialize};

use crate::metrics::{DdlOutcome, Summary};

/// Every expectation key, in the order they are listed and checked.
pub const KEYS: [&str; 6] = [
    "max_zero_tps_seconds",
    "min_zero_tps_seconds",
    "max_longest_stall_s",
    "max_p99_ms",
    "ddl_outcome",
    "max_failed",
];

/// `[expect.<strategy>]` as written in a workload file; every field is optional.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExpectFile {
    /// At most this many seconds with no completed transaction.
    pub max_zero_tps_seconds: Option<u32>,
    /// At least this many seconds with no completed transaction (the outage must reproduce).
    pub min_zero_tps_seconds: Option<u32>,
    /// The longest stall is at most this many seconds.
    pub max_longest_stall_s: Option<u32>,
    /// The whole-run p99 latency is at most this many milliseconds.
    pub max_p99_ms: Option<f64>,
    /// How the DDL ended: `ok`, `gave_up`, `error` or `none`, as written
    /// (kept as text so that a wrong value gets the message that lists the valid ones).
    pub ddl_outcome: Option<String>,
    /// At most this many failed transactions.
    pub max_failed: Option<u64>,
}

impl ExpectFile {
    /// The bounds this table sets, in the order of [`KEYS`], each checked; the
    /// error is `key = problem` for the first value that does not parse or make sense.
    pub fn bounds(&self) -> Result<Vec<Bound>, String> {
        let ddl_outcome = self.ddl_outcome.as_deref().map(parse_ddl_outcome);
        let bounds = [
            self.max_zero_tps_seconds
                .map(|limit| Ok(Bound::MaxZeroTpsSeconds(limit))),
            self.min_zero_tps_seconds
                .map(|limit| Ok(Bound::MinZeroTpsSeconds(limit))),
            self.max_longest_stall_s
                .map(|limit| Ok(Bound::MaxLongestStallS(limit))),
            self.max_p99_ms.map(|limit| Ok(Bound::MaxP99Ms(limit))),
            ddl_outcome.map(|outcome| {
                outcome
                    .map(Bound::DdlOutcome)
                    .map_err(|p| ("ddl_outcome", p))
            }),
            self.max_failed.map(|limit| Ok(Bound::MaxFailed(limit))),
        ];
        bounds
            .into_iter()
            .flatten()
            .map(|parsed| {
                let bound = parsed.map_err(|(key, problem)| format!("{key} = {problem}"))?;
                bound
                    .check()
                    .map_err(|problem| format!("{} = {problem}", bound.key()))?;
                Ok(bound)
            })
            .collect()
    }
}

/// What one expectation requires of a strategy's summary. Limits are inclusive.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// `zero_tps_seconds <= limit`.
    MaxZeroTpsSeconds(u32),
    /// `zero_tps_seconds >= limit`.
    MinZeroTpsSeconds(u32),
    /// `longest_stall_s <= limit`.
    MaxLongestStallS(u32),
    /// `lat_p99_ms <= limit`, the measured value rounded to 3 decimals as in `summary.csv`.
    MaxP99Ms(f64),
    /// `ddl_outcome == outcome`.
    DdlOutcome(DdlOutcome),
    /// `failed <= limit`.
    MaxFailed(u64),
}

impl Bound {
    /// The key as written in a workload file or flag, e.g. `max_p99_ms`.
    pub fn key(&self) -> &'static str {
        match self {
            Bound::MaxZeroTpsSeconds(_) => "max_zero_tps_seconds",
            Bound::MinZeroTpsSeconds(_) => "min_zero_tps_seconds",
            Bound::MaxLongestStallS(_) => "max_longest_stall_s",
            Bound::MaxP99Ms(_) => "max_p99_ms",
            Bound::DdlOutcome(_) => "ddl_outcome",
            Bound::MaxFailed(_) => "max_failed",
        }
    }

    /// The limit for people, e.g. `<= 600 ms`, `>= 3` or `= ok`.
    pub fn limit_text(&self) -> String {
        match self {
            Bound::MaxZeroTpsSeconds(limit) => format!("<= {limit}"),
            Bound::MinZeroTpsSeconds(limit) => format!(">= {limit}"),
            Bound::MaxLongestStallS(limit) => format!("<= {limit}"),
            Bound::MaxP99Ms(limit) => format!("<= {limit} ms"),
            Bound::DdlOutcome(outcome) => format!("= {outcome}"),
            Bound::MaxFailed(limit) => format!("<= {limit}"),
        }
    }

    /// The measured value as text and whether it meets this bound.
    pub(super) fn measure(&self, summary: &Summary) -> (String, bool) {
        match self {
            Bound::MaxZeroTpsSeconds(limit) => {
                let value = summary.zero_tps_seconds;
                (value.to_string(), value <= *limit)
            }
            Bound::MinZeroTpsSeconds(limit) => {
                let value = summary.zero_tps_seconds;
                (value.to_string(), value >= *limit)
            }
            Bound::MaxLongestStallS(limit) => {
                let value = summary.longest_stall_s;
                (value.to_string(), value <= *limit)
            }
            Bound::MaxP99Ms(limit) => {
                // The figure summary.csv shows, so the file and the verdict agree.
                let value = (summary.lat_p99_ms * 1000.0).round() / 1000.0;
                (format!("{value} ms"), value <= *limit)
            }
            Bound::DdlOutcome(outcome) => {
                let value = summary.ddl_outcome;
                (value.to_string(), value == *outcome)
            }
            Bound::MaxFailed(limit) => {
                let value = summary.failed;
                (value.to_string(), value <= *limit)
            }
        }
    }

    /// Checks a value that parsed but may still be meaningless; the problem
    /// starts with the value, so callers can put `key = ` or `flag: ` before it.
    pub(super) fn check(&self) -> Result<(), String> {
        match self {
            Bound::MaxP99Ms(limit) if !limit.is_finite() || *limit < 0.0 => Err(format!(
                "{limit} is not a latency; write milliseconds of 0 or more, like 600"
            )),
            _ => Ok(()),
        }
    }
}

/// Parses the value of `key` from a flag; the error is the problem without the flag.
pub(super) fn parse_bound(key: &str, value: &str) -> Result<Bound, String> {
    let whole = |what: &str, example: &str| {
        format!("\"{value}\" is not a whole number of {what}; write one like {example}")
    };
    let bound = match key {
        "max_zero_tps_seconds" => value
            .parse()
            .map(Bound::MaxZeroTpsSeconds)
            .map_err(|_| whole("seconds", "0"))?,
        "min_zero_tps_seconds" => value
            .parse()
            .map(Bound::MinZeroTpsSeconds)
            .map_err(|_| whole("seconds", "3"))?,
        "max_longest_stall_s" => value
            .parse()
            .map(Bound::MaxLongestStallS)
            .map_err(|_| whole("seconds", "1"))?,
        "max_p99_ms" => value.parse().map(Bound::MaxP99Ms).map_err(|_| {
            format!(
                "\"{value}\" is not a number of milliseconds; write one like 600, without a unit"
            )
        })?,
        "ddl_outcome" => Bound::DdlOutcome(parse_ddl_outcome(value)?),
        "max_failed" => value
            .parse()
            .map(Bound::MaxFailed)
            .map_err(|_| whole("transactions", "0"))?,
        _ => {
            return Err(format!(
                "unknown expectation \"{key}\"; the valid keys are {}",
                KEYS.join(", ")
            ));
        }
    };
    bound.check()?;
    Ok(bound)
}

/// Parses a `ddl_outcome` value; the error names the value and the valid ones.
fn parse_ddl_outcome(value: &str) -> Result<DdlOutcome, String> {
    DdlOutcome::from_name(value).ok_or_else(|| {
        let names: Vec<&str> = DdlOutcome::ALL.iter().map(|o| o.as_str()).collect();
        format!(
            "\"{value}\" is not a DDL outcome; use one of {}",
            names.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_limits_read_as_in_the_workload_file() {
        let bounds = [
            (Bound::MaxZeroTpsSeconds(0), "<= 0"),
            (Bound::MinZeroTpsSeconds(3), ">= 3"),
            (Bound::MaxLongestStallS(1), "<= 1"),
            (Bound::MaxP99Ms(600.0), "<= 600 ms"),
            (Bound::MaxP99Ms(0.25), "<= 0.25 ms"),
            (Bound::DdlOutcome(DdlOutcome::Ok), "= ok"),
            (Bound::MaxFailed(0), "<= 0"),
        ];
        for (bound, limit) in &bounds {
            assert_eq!(bound.limit_text(), *limit);
            assert!(KEYS.contains(&bound.key()));
        }
        // Every key parses from a flag back into the bound it names.
        for key in KEYS {
            let value = if key == "ddl_outcome" { "ok" } else { "1" };
            assert_eq!(parse_bound(key, value).unwrap().key(), key);
        }
    }
}
