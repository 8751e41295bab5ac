//! What an expectation can require: the keys of `[expect.<strategy>]` and
//! `--expect` and their limits, as the workload file, the config and the
//! expectations' verdicts (`expect`) all read them.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

use crate::metrics::DdlOutcome;

/// Every expectation key, in the order they are listed and checked.
pub const KEYS: [&str; 16] = [
    "max_zero_tps_seconds",
    "min_zero_tps_seconds",
    "max_replica_zero_tps_seconds",
    "min_replica_zero_tps_seconds",
    "max_longest_stall_s",
    "min_worst_second_tps",
    "max_worst_second_p99_ms",
    "max_p99_ms",
    "max_ddl_s",
    "ddl_outcome",
    "max_failed",
    "max_pool_timeouts",
    "max_pool_wait_p99_ms",
    "max_anomalies",
    "min_anomalies",
    "min_deadlock_seconds",
];

/// The key of a bound on the failed transactions of one SQLSTATE class: this
/// prefix and the class, the SQLSTATE's first two characters (`max_failed_0A`).
const MAX_FAILED_CLASS_PREFIX: &str = "max_failed_";

/// How error messages list the keys beyond [`KEYS`].
const CLASS_KEY_HINT: &str =
    "max_failed_<class> (a SQLSTATE class of 2 characters, like max_failed_0A)";

/// `[expect.<strategy>]` as written in a workload file; every field is optional.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct ExpectFile {
    /// At most this many seconds with no completed transaction.
    pub max_zero_tps_seconds: Option<u32>,
    /// At least this many seconds with no completed transaction (the outage must reproduce).
    pub min_zero_tps_seconds: Option<u32>,
    /// With the load on both servers: at most this many seconds in which the
    /// replica's clients completed no transaction.
    pub max_replica_zero_tps_seconds: Option<u32>,
    /// With the load on both servers: at least this many such seconds on the replica.
    pub min_replica_zero_tps_seconds: Option<u32>,
    /// The longest stall is at most this many seconds.
    pub max_longest_stall_s: Option<u32>,
    /// Every second of the DDL window completed at least this many transactions.
    pub min_worst_second_tps: Option<u64>,
    /// No second of the DDL window had a p99 latency above this many milliseconds.
    pub max_worst_second_p99_ms: Option<f64>,
    /// The whole-run p99 latency is at most this many milliseconds.
    pub max_p99_ms: Option<f64>,
    /// The migration was done within this many seconds of its first attempt's start.
    pub max_ddl_s: Option<f64>,
    /// How the DDL ended: `ok`, `gave_up`, `error` or `none`, as written
    /// (kept as text so that a wrong value gets the message that lists the valid ones).
    pub ddl_outcome: Option<String>,
    /// At most this many failed transactions.
    pub max_failed: Option<u64>,
    /// Application pool: at most this many requests timed out waiting for a connection.
    pub max_pool_timeouts: Option<u64>,
    /// Application pool: the whole-run p99 of the wait for a connection is at most this many milliseconds.
    pub max_pool_wait_p99_ms: Option<f64>,
    /// `[[invariants]]`: at most this many anomalies after the run.
    pub max_anomalies: Option<u64>,
    /// `[[invariants]]`: at least this many anomalies (the lost data must reproduce).
    pub min_anomalies: Option<u64>,
    /// At least this many seconds in which a transaction failed with a
    /// deadlock (40P01) after its last try (the deadlocks must reproduce).
    pub min_deadlock_seconds: Option<u32>,
    /// `max_failed_<class> = N` by key: at most N failed transactions whose
    /// SQLSTATE is of that class (`max_failed_0A`); any other key is refused.
    #[serde(flatten, deserialize_with = "class_bounds")]
    pub max_failed_by_class: BTreeMap<String, u64>,
}

/// Reads the keys [`ExpectFile`] does not name: each must be
/// `max_failed_<class>` with a whole number, else the error names the key and the valid ones.
fn class_bounds<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, u64>, D::Error> {
    let values = BTreeMap::<String, toml::Value>::deserialize(deserializer)?;
    let mut limits = BTreeMap::new();
    for (key, value) in values {
        let is_class_key = key
            .strip_prefix(MAX_FAILED_CLASS_PREFIX)
            .is_some_and(is_sqlstate_class);
        if !is_class_key {
            return Err(D::Error::custom(format!(
                "unknown field `{key}`, expected one of {}, {CLASS_KEY_HINT}",
                KEYS.join(", ")
            )));
        }
        let limit = value
            .as_integer()
            .and_then(|limit| u64::try_from(limit).ok());
        let Some(limit) = limit else {
            return Err(D::Error::custom(format!(
                "{key} = {value} is not a whole number of transactions; write one like 0"
            )));
        };
        limits.insert(key, limit);
    }
    Ok(limits)
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
            self.max_replica_zero_tps_seconds
                .map(|limit| Ok(Bound::MaxReplicaZeroTpsSeconds(limit))),
            self.min_replica_zero_tps_seconds
                .map(|limit| Ok(Bound::MinReplicaZeroTpsSeconds(limit))),
            self.max_longest_stall_s
                .map(|limit| Ok(Bound::MaxLongestStallS(limit))),
            self.min_worst_second_tps
                .map(|limit| Ok(Bound::MinWorstSecondTps(limit))),
            self.max_worst_second_p99_ms
                .map(|limit| Ok(Bound::MaxWorstSecondP99Ms(limit))),
            self.max_p99_ms.map(|limit| Ok(Bound::MaxP99Ms(limit))),
            self.max_ddl_s.map(|limit| Ok(Bound::MaxDdlS(limit))),
            ddl_outcome.map(|outcome| {
                outcome
                    .map(Bound::DdlOutcome)
                    .map_err(|p| ("ddl_outcome", p))
            }),
            self.max_failed.map(|limit| Ok(Bound::MaxFailed(limit))),
            self.max_pool_timeouts
                .map(|limit| Ok(Bound::MaxPoolTimeouts(limit))),
            self.max_pool_wait_p99_ms
                .map(|limit| Ok(Bound::MaxPoolWaitP99Ms(limit))),
            self.max_anomalies
                .map(|limit| Ok(Bound::MaxAnomalies(limit))),
            self.min_anomalies
                .map(|limit| Ok(Bound::MinAnomalies(limit))),
            self.min_deadlock_seconds
                .map(|limit| Ok(Bound::MinDeadlockSeconds(limit))),
        ];
        let by_class: Vec<Result<Bound, (&str, String)>> = self
            .max_failed_by_class
            .iter()
            .map(|(key, limit)| {
                parse_bound(key, &limit.to_string()).map_err(|problem| (key.as_str(), problem))
            })
            .collect();
        bounds
            .into_iter()
            .flatten()
            .chain(by_class)
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

impl ExpectFile {
    /// Sets the field of `bound`'s key to its limit (the inverse of [`ExpectFile::bounds`]).
    pub fn insert(&mut self, bound: &Bound) {
        match bound {
            Bound::MaxZeroTpsSeconds(limit) => self.max_zero_tps_seconds = Some(*limit),
            Bound::MinZeroTpsSeconds(limit) => self.min_zero_tps_seconds = Some(*limit),
            Bound::MaxReplicaZeroTpsSeconds(limit) => {
                self.max_replica_zero_tps_seconds = Some(*limit);
            }
            Bound::MinReplicaZeroTpsSeconds(limit) => {
                self.min_replica_zero_tps_seconds = Some(*limit);
            }
            Bound::MaxLongestStallS(limit) => self.max_longest_stall_s = Some(*limit),
            Bound::MinWorstSecondTps(limit) => self.min_worst_second_tps = Some(*limit),
            Bound::MaxWorstSecondP99Ms(limit) => self.max_worst_second_p99_ms = Some(*limit),
            Bound::MaxP99Ms(limit) => self.max_p99_ms = Some(*limit),
            Bound::MaxDdlS(limit) => self.max_ddl_s = Some(*limit),
            Bound::DdlOutcome(outcome) => self.ddl_outcome = Some(outcome.to_string()),
            Bound::MaxFailed(limit) => self.max_failed = Some(*limit),
            Bound::MaxPoolTimeouts(limit) => self.max_pool_timeouts = Some(*limit),
            Bound::MaxPoolWaitP99Ms(limit) => self.max_pool_wait_p99_ms = Some(*limit),
            Bound::MaxAnomalies(limit) => self.max_anomalies = Some(*limit),
            Bound::MinAnomalies(limit) => self.min_anomalies = Some(*limit),
            Bound::MinDeadlockSeconds(limit) => self.min_deadlock_seconds = Some(*limit),
            Bound::MaxFailedClass { limit, .. } => {
                self.max_failed_by_class.insert(bound.key(), *limit);
            }
        }
    }
}

/// What one expectation requires of a strategy's summary. Limits are inclusive.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// `zero_tps_seconds <= limit`.
    MaxZeroTpsSeconds(u32),
    /// `zero_tps_seconds >= limit`.
    MinZeroTpsSeconds(u32),
    /// `replica_zero_tps_seconds <= limit`; a run without a load on both servers fails it.
    MaxReplicaZeroTpsSeconds(u32),
    /// `replica_zero_tps_seconds >= limit`; a run without a load on both servers fails it.
    MinReplicaZeroTpsSeconds(u32),
    /// `longest_stall_s <= limit`.
    MaxLongestStallS(u32),
    /// `worst_second_tps >= limit`: the lowest TPS of a second of the DDL window.
    MinWorstSecondTps(u64),
    /// `worst_second_p99_ms <= limit`, the highest per-second p99 of the DDL
    /// window, rounded to 3 decimals as in `summary.csv`.
    MaxWorstSecondP99Ms(f64),
    /// `lat_p99_ms <= limit`: the whole run's p99, rounded to 3 decimals as in `summary.csv`.
    MaxP99Ms(f64),
    /// `ddl_total_ms / 1000 <= limit` (to the millisecond) and the DDL finished
    /// ok: the migration was done within `limit` seconds of its first attempt's
    /// start. A DDL that did not finish, or a run without one, fails it.
    MaxDdlS(f64),
    /// `ddl_outcome == outcome`.
    DdlOutcome(DdlOutcome),
    /// `failed <= limit`.
    MaxFailed(u64),
    /// Failed transactions whose SQLSTATE starts with `class` (2 characters) `<= limit`.
    MaxFailedClass { class: String, limit: u64 },
    /// `pool_timeouts <= limit`; a run without the application pool fails it.
    MaxPoolTimeouts(u64),
    /// `pool_wait_p99_ms <= limit`, rounded as in `summary.csv`; a run without the pool fails it.
    MaxPoolWaitP99Ms(f64),
    /// The anomalies the invariants counted `<= limit`; a run without invariants fails it.
    MaxAnomalies(u64),
    /// The anomalies the invariants counted `>= limit`; a run without invariants fails it.
    MinAnomalies(u64),
    /// Seconds with a transaction failed by 40P01 (`failed_deadlock` of
    /// `timeline.csv` above 0) `>= limit`.
    MinDeadlockSeconds(u32),
}

impl Bound {
    /// The key as written in a workload file or flag, e.g. `max_p99_ms`.
    pub fn key(&self) -> String {
        let key = match self {
            Bound::MaxZeroTpsSeconds(_) => "max_zero_tps_seconds",
            Bound::MinZeroTpsSeconds(_) => "min_zero_tps_seconds",
            Bound::MaxReplicaZeroTpsSeconds(_) => "max_replica_zero_tps_seconds",
            Bound::MinReplicaZeroTpsSeconds(_) => "min_replica_zero_tps_seconds",
            Bound::MaxLongestStallS(_) => "max_longest_stall_s",
            Bound::MinWorstSecondTps(_) => "min_worst_second_tps",
            Bound::MaxWorstSecondP99Ms(_) => "max_worst_second_p99_ms",
            Bound::MaxP99Ms(_) => "max_p99_ms",
            Bound::MaxDdlS(_) => "max_ddl_s",
            Bound::DdlOutcome(_) => "ddl_outcome",
            Bound::MaxFailed(_) => "max_failed",
            Bound::MaxPoolTimeouts(_) => "max_pool_timeouts",
            Bound::MaxPoolWaitP99Ms(_) => "max_pool_wait_p99_ms",
            Bound::MaxAnomalies(_) => "max_anomalies",
            Bound::MinAnomalies(_) => "min_anomalies",
            Bound::MinDeadlockSeconds(_) => "min_deadlock_seconds",
            Bound::MaxFailedClass { class, .. } => {
                return format!("{MAX_FAILED_CLASS_PREFIX}{class}");
            }
        };
        key.to_string()
    }

    /// The limit for people, e.g. `<= 600 ms`, `>= 3` or `= ok`.
    pub fn limit_text(&self) -> String {
        match self {
            Bound::MaxZeroTpsSeconds(limit) | Bound::MaxReplicaZeroTpsSeconds(limit) => {
                format!("<= {limit}")
            }
            Bound::MinZeroTpsSeconds(limit) | Bound::MinReplicaZeroTpsSeconds(limit) => {
                format!(">= {limit}")
            }
            Bound::MaxLongestStallS(limit) => format!("<= {limit}"),
            Bound::MinWorstSecondTps(limit) => format!(">= {limit} tps"),
            Bound::MaxWorstSecondP99Ms(limit)
            | Bound::MaxP99Ms(limit)
            | Bound::MaxPoolWaitP99Ms(limit) => format!("<= {limit} ms"),
            Bound::MaxDdlS(limit) => format!("<= {limit} s"),
            Bound::DdlOutcome(outcome) => format!("= {outcome}"),
            Bound::MaxFailed(limit)
            | Bound::MaxFailedClass { limit, .. }
            | Bound::MaxPoolTimeouts(limit)
            | Bound::MaxAnomalies(limit) => {
                format!("<= {limit}")
            }
            Bound::MinAnomalies(limit) => format!(">= {limit}"),
            Bound::MinDeadlockSeconds(limit) => format!(">= {limit}"),
        }
    }

    /// Checks a value that parsed but may still be meaningless; the problem
    /// starts with the value, so callers can put `key = ` or `flag: ` before it.
    pub(crate) fn check(&self) -> Result<(), String> {
        match self {
            Bound::MaxWorstSecondP99Ms(limit)
            | Bound::MaxP99Ms(limit)
            | Bound::MaxPoolWaitP99Ms(limit)
                if !limit.is_finite() || *limit < 0.0 =>
            {
                Err(format!(
                    "{limit} is not a latency; write milliseconds of 0 or more, like 600"
                ))
            }
            Bound::MaxDdlS(limit) if !limit.is_finite() || *limit < 0.0 => Err(format!(
                "{limit} is not a duration; write seconds of 0 or more, like 30"
            )),
            _ => Ok(()),
        }
    }
}

/// Parses the value of `key` from a flag; the error is the problem without the flag.
pub(crate) fn parse_bound(key: &str, value: &str) -> Result<Bound, String> {
    let whole = |what: &str, example: &str| {
        format!("\"{value}\" is not a whole number of {what}; write one like {example}")
    };
    let milliseconds = |example: &str| {
        format!(
            "\"{value}\" is not a number of milliseconds; write one like {example}, without a unit"
        )
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
        "max_replica_zero_tps_seconds" => value
            .parse()
            .map(Bound::MaxReplicaZeroTpsSeconds)
            .map_err(|_| whole("seconds", "0"))?,
        "min_replica_zero_tps_seconds" => value
            .parse()
            .map(Bound::MinReplicaZeroTpsSeconds)
            .map_err(|_| whole("seconds", "3"))?,
        "max_longest_stall_s" => value
            .parse()
            .map(Bound::MaxLongestStallS)
            .map_err(|_| whole("seconds", "1"))?,
        "min_worst_second_tps" => value
            .parse()
            .map(Bound::MinWorstSecondTps)
            .map_err(|_| whole("transactions per second", "1"))?,
        "max_worst_second_p99_ms" => value
            .parse()
            .map(Bound::MaxWorstSecondP99Ms)
            .map_err(|_| milliseconds("600"))?,
        "max_p99_ms" => value
            .parse()
            .map(Bound::MaxP99Ms)
            .map_err(|_| milliseconds("600"))?,
        "max_ddl_s" => value.parse().map(Bound::MaxDdlS).map_err(|_| {
            format!("\"{value}\" is not a number of seconds; write one like 30, without a unit")
        })?,
        "ddl_outcome" => Bound::DdlOutcome(parse_ddl_outcome(value)?),
        "max_failed" => value
            .parse()
            .map(Bound::MaxFailed)
            .map_err(|_| whole("transactions", "0"))?,
        "max_pool_timeouts" => value
            .parse()
            .map(Bound::MaxPoolTimeouts)
            .map_err(|_| whole("requests", "0"))?,
        "max_pool_wait_p99_ms" => value
            .parse()
            .map(Bound::MaxPoolWaitP99Ms)
            .map_err(|_| milliseconds("50"))?,
        "max_anomalies" => value
            .parse()
            .map(Bound::MaxAnomalies)
            .map_err(|_| whole("anomalies", "0"))?,
        "min_anomalies" => value
            .parse()
            .map(Bound::MinAnomalies)
            .map_err(|_| whole("anomalies", "1"))?,
        "min_deadlock_seconds" => value
            .parse()
            .map(Bound::MinDeadlockSeconds)
            .map_err(|_| whole("seconds", "5"))?,
        _ => match key.strip_prefix(MAX_FAILED_CLASS_PREFIX) {
            Some(class) if is_sqlstate_class(class) => value
                .parse()
                .map(|limit| Bound::MaxFailedClass {
                    class: class.to_ascii_uppercase(),
                    limit,
                })
                .map_err(|_| whole("transactions", "0"))?,
            _ => {
                return Err(format!(
                    "unknown expectation \"{key}\"; the valid keys are {}, {CLASS_KEY_HINT}",
                    KEYS.join(", ")
                ));
            }
        },
    };
    bound.check()?;
    Ok(bound)
}

/// Whether `class` can be a SQLSTATE class: two digits or capital letters
/// (`0A`, `40`, `57`), lower case accepted.
fn is_sqlstate_class(class: &str) -> bool {
    class.len() == 2 && class.bytes().all(|byte| byte.is_ascii_alphanumeric())
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
            (Bound::MinWorstSecondTps(1), ">= 1 tps"),
            (Bound::MaxWorstSecondP99Ms(250.0), "<= 250 ms"),
            (Bound::MaxDdlS(30.0), "<= 30 s"),
            (Bound::MaxDdlS(2.5), "<= 2.5 s"),
            (Bound::DdlOutcome(DdlOutcome::Ok), "= ok"),
            (Bound::MaxFailed(0), "<= 0"),
        ];
        for (bound, limit) in &bounds {
            assert_eq!(bound.limit_text(), *limit);
            assert!(KEYS.contains(&bound.key().as_str()));
        }
        // Every key parses from a flag back into the bound it names, and a
        // table of each key gives back that bound.
        for key in KEYS {
            let value = if key == "ddl_outcome" { "ok" } else { "1" };
            let bound = parse_bound(key, value).unwrap();
            assert_eq!(bound.key(), key);
            let mut table = ExpectFile::default();
            table.insert(&bound);
            assert_eq!(table.bounds().unwrap(), [bound]);
            let written = toml::to_string(&table).unwrap();
            assert!(written.starts_with(&format!("{key} = ")), "{written}");
        }
        for (key, value) in [("max_ddl_s", "-1"), ("max_worst_second_p99_ms", "inf")] {
            assert!(parse_bound(key, value).is_err(), "{key} = {value}");
        }
    }

    #[test]
    fn failed_by_class_keys_name_a_sqlstate_class() {
        let bound = parse_bound("max_failed_0a", "5").unwrap();
        assert_eq!(
            bound,
            Bound::MaxFailedClass {
                class: "0A".to_string(),
                limit: 5
            }
        );
        assert_eq!(
            (bound.key(), bound.limit_text()),
            ("max_failed_0A".to_string(), "<= 5".to_string())
        );
        for key in ["max_failed_0A0", "max_failed_", "max_failed_0-"] {
            let problem = parse_bound(key, "1").unwrap_err();
            assert!(problem.contains("max_failed_<class>"), "{problem}");
        }
        let file: ExpectFile = toml::from_str("max_failed = 9\nmax_failed_0A = 0").unwrap();
        let keys: Vec<String> = file.bounds().unwrap().iter().map(Bound::key).collect();
        assert_eq!(keys, ["max_failed", "max_failed_0A"]);
        let unknown = toml::from_str::<ExpectFile>("max_fail = 1").unwrap_err();
        assert!(
            unknown.to_string().contains("max_failed_<class>"),
            "{unknown}"
        );
        let not_a_count = toml::from_str::<ExpectFile>("max_failed_40 = -1").unwrap_err();
        assert!(
            not_a_count
                .to_string()
                .contains("max_failed_40 = -1 is not"),
            "{not_a_count}"
        );
    }
}
