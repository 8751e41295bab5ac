//! How a figure is written in a cell of the CSV files: a fixed number of
//! decimals, empty for a figure not measured, a flag as `1` or `0`, a list of
//! terminated sessions as one cell. The records name these in their serde
//! attributes, so each column's format is stated once, beside its field.

use serde::Serializer;

/// A figure with 3 decimals: `1.250`.
pub(super) fn three_decimals<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&format_args!("{value:.3}"))
}

/// A figure with 1 decimal: `9700.0`.
pub(super) fn one_decimal<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&format_args!("{value:.1}"))
}

/// A figure with 3 decimals, or empty for `None`.
pub(super) fn optional_three_decimals<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => three_decimals(value, serializer),
        None => serializer.serialize_str(""),
    }
}

/// A figure with 1 decimal, or empty for `None`.
pub(super) fn optional_one_decimal<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => one_decimal(value, serializer),
        None => serializer.serialize_str(""),
    }
}

/// A flag written as `1` or `0`; `true` and `false` read back too.
pub(super) mod zero_or_one {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &bool, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u8(u8::from(*value))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.as_str() {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            _ => Err(serde::de::Error::custom("not 0 or 1")),
        }
    }
}

/// A flag written as `1` or `0`, or empty for `None` (not known).
pub(super) mod optional_zero_or_one {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        value: &Option<bool>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => super::zero_or_one::serialize(value, serializer),
            None => serializer.serialize_str(""),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<bool>, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.as_str() {
            "" => Ok(None),
            "1" | "true" => Ok(Some(true)),
            "0" | "false" => Ok(Some(false)),
            _ => Err(serde::de::Error::custom("not 0, 1 or empty")),
        }
    }
}

/// A list of terminated sessions as one cell: `report (pid 4242); reader-2 (pid 4250)`.
pub(super) mod sessions {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::metrics::TerminatedSession;

    pub fn serialize<S: Serializer>(
        sessions: &[TerminatedSession],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let cell: Vec<String> = sessions
            .iter()
            .map(|session| format!("{} (pid {})", session.role, session.pid))
            .collect();
        serializer.serialize_str(&cell.join("; "))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<TerminatedSession>, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.split(';')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(|part| {
                let (role, pid) = part
                    .strip_suffix(')')
                    .and_then(|rest| rest.rsplit_once(" (pid "))
                    .and_then(|(role, pid)| Some((role, pid.parse().ok()?)))
                    .ok_or_else(|| {
                        serde::de::Error::custom(format!(
                            "\"{part}\" is not a terminated session like \"report (pid 4242)\""
                        ))
                    })?;
                Ok(TerminatedSession {
                    role: role.to_string(),
                    pid,
                })
            })
            .collect()
    }
}
