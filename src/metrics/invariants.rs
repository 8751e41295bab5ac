//! What a run lost: each `[[invariants]]` query's value after the run beside
//! the value it must equal, and how far apart they are.

use serde::{Deserialize, Serialize};

/// One invariant checked after a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvariantCheck {
    /// The invariant's name, as the workload gives it.
    pub name: String,
    /// The value it must equal (a literal, or the run's figure it names).
    pub expected: String,
    /// The value the query returned (`NULL` for SQL NULL).
    pub actual: String,
    /// What one unit of difference is called: `lost updates`, `anomalies`.
    pub counts: String,
    /// How many anomalies the difference counts: `|expected - actual|` when
    /// both are integers (lost updates), else 1 when they differ; 0 when it holds.
    pub anomalies: u64,
}

impl InvariantCheck {
    /// The check of `actual` against `expected`.
    pub fn new(name: &str, counts: &str, expected: &str, actual: &str) -> InvariantCheck {
        InvariantCheck {
            name: name.to_string(),
            counts: counts.to_string(),
            expected: expected.to_string(),
            actual: actual.to_string(),
            anomalies: anomalies(expected, actual),
        }
    }
}

/// The anomalies between two values: their distance when both are integers,
/// else 0 when they are equal (as numbers when both are numbers) and 1 when not.
fn anomalies(expected: &str, actual: &str) -> u64 {
    let (expected, actual) = (expected.trim(), actual.trim());
    if let (Ok(e), Ok(a)) = (expected.parse::<i128>(), actual.parse::<i128>()) {
        return u64::try_from(e.abs_diff(a)).unwrap_or(u64::MAX);
    }
    let same = match (expected.parse::<f64>(), actual.parse::<f64>()) {
        (Ok(e), Ok(a)) => e == a,
        _ => expected == actual,
    };
    u64::from(!same)
}

/// The anomalies of a run: the sum over its invariants.
pub fn total_anomalies(checks: &[InvariantCheck]) -> u64 {
    checks.iter().map(|check| check.anomalies).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_count_their_distance_and_other_values_count_one() {
        assert_eq!(
            InvariantCheck::new("c", "anomalies", "1510", "1198").anomalies,
            312
        );
        assert_eq!(
            InvariantCheck::new("c", "anomalies", "100", "100").anomalies,
            0
        );
        assert_eq!(
            InvariantCheck::new("c", "anomalies", "100", "100.0").anomalies,
            0
        );
        assert_eq!(
            InvariantCheck::new("c", "anomalies", "1.5", "2.5").anomalies,
            1
        );
        assert_eq!(InvariantCheck::new("c", "anomalies", "t", "f").anomalies, 1);
        assert_eq!(
            InvariantCheck::new("c", "anomalies", "100", "NULL").anomalies,
            1
        );
        let checks = [
            InvariantCheck::new("a", "anomalies", "10", "7"),
            InvariantCheck::new("b", "anomalies", "x", "y"),
        ];
        assert_eq!(total_anomalies(&checks), 4);
    }
}
