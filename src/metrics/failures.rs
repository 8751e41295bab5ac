//! Failed transactions by kind: a SQLSTATE and a normalised message, so that
//! 200,000 failures read as one line ("0A000 cached plan must not change
//! result type") instead of a bare count.
//!
//! The message is normalised so that failures that differ only in their
//! values group together: every run of digits becomes `N` and every
//! single-quoted literal becomes `'?'`. Double-quoted names (`relation "x"`)
//! stay, because they say which object failed.

use std::collections::BTreeMap;
use std::fmt;

use crate::engine::ErrorCode;

/// Why a transaction failed: the server's error code, or one of the client's
/// own reasons. Its [`Display`](fmt::Display) is the cell of the `sqlstate`
/// column (`55P03`, `timeout`, `connection_lost`, ...), and kinds sort as
/// those cells do, so the files keep their order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// The server answered with this error code (a SQLSTATE, a MariaDB error number).
    Server(ErrorCode),
    /// `--client-timeout` passed: cancelled on the server (`timeout`).
    ClientTimeout,
    /// No pool connection came within `--pool-timeout` (`pool_timeout`).
    PoolTimeout,
    /// Rejected at once: `--max-in-flight` requests were in flight (`rejected`).
    Rejected,
    /// The connection broke without a server error saying why: a reset, an
    /// end of stream, a pool that could not open one (`connection_lost`).
    ConnectionLost,
    /// The script itself failed, e.g. a division by zero in `\set` (`script`).
    Script,
}

impl FailureKind {
    /// The kind a `sqlstate` cell names: one of the client's own words, else a server's code.
    pub fn from_cell(cell: &str) -> FailureKind {
        match cell {
            "timeout" => FailureKind::ClientTimeout,
            "pool_timeout" => FailureKind::PoolTimeout,
            "rejected" => FailureKind::Rejected,
            "connection_lost" => FailureKind::ConnectionLost,
            "script" => FailureKind::Script,
            code => FailureKind::Server(ErrorCode::new(code)),
        }
    }

    /// The cell of the `sqlstate` column.
    pub fn cell(&self) -> &str {
        match self {
            FailureKind::Server(code) => code.as_str(),
            FailureKind::ClientTimeout => "timeout",
            FailureKind::PoolTimeout => "pool_timeout",
            FailureKind::Rejected => "rejected",
            FailureKind::ConnectionLost => "connection_lost",
            FailureKind::Script => "script",
        }
    }

    /// The server's error code, for a failure the server reported.
    pub fn server_code(&self) -> Option<&ErrorCode> {
        match self {
            FailureKind::Server(code) => Some(code),
            _ => None,
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.cell())
    }
}

impl Ord for FailureKind {
    fn cmp(&self, other: &FailureKind) -> std::cmp::Ordering {
        self.cell().cmp(other.cell())
    }
}

impl PartialOrd for FailureKind {
    fn partial_cmp(&self, other: &FailureKind) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl serde::Serialize for FailureKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.cell())
    }
}

impl<'de> serde::Deserialize<'de> for FailureKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<FailureKind, D::Error> {
        let cell = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(FailureKind::from_cell(&cell))
    }
}

/// One failed transaction: why, and the message as the server (or the client) said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
        }
    }

    /// A transaction that hit `--client-timeout`.
    pub fn client_timeout() -> Failure {
        Failure::new(
            FailureKind::ClientTimeout,
            "cancelled after --client-timeout",
        )
    }

    /// A request that gave up waiting for a pool connection.
    pub fn pool_timeout() -> Failure {
        Failure::new(
            FailureKind::PoolTimeout,
            "timed out waiting for a database connection (--pool-timeout)",
        )
    }

    /// A request rejected for `--max-in-flight`.
    pub fn rejected() -> Failure {
        Failure::new(
            FailureKind::Rejected,
            "rejected: too many requests in flight (--max-in-flight)",
        )
    }
}

/// Failed transactions of one kind in one second of one strategy's run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureCount {
    pub second: u32,
    pub kind: FailureKind,
    /// The error message, normalised by [`normalise_message`].
    pub message: String,
    pub count: u64,
}

/// One kind of failure over a whole run, for the summary sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct FailureTotal {
    pub kind: FailureKind,
    pub message: String,
    pub count: u64,
    /// The first and last second with a failure of this kind.
    pub first_second: u32,
    pub last_second: u32,
}

/// `message` with every run of digits replaced by `N` and every single-quoted
/// literal by `'?'`; double-quoted identifiers are kept. A quote inside a
/// word is an apostrophe, not a literal's start (MariaDB's "Table 'db.t'
/// doesn't exist").
pub fn normalise_message(message: &str) -> String {
    let mut normalised = String::with_capacity(message.len());
    let mut chars = message.chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        let in_word = previous.is_alphanumeric();
        previous = c;
        if c.is_ascii_digit() {
            while chars.peek().is_some_and(|next| next.is_ascii_digit()) {
                chars.next();
            }
            normalised.push('N');
        } else if c == '"' {
            normalised.push(c);
            for next in chars.by_ref() {
                normalised.push(next);
                if next == '"' {
                    break;
                }
            }
        } else if c == '\'' && !in_word {
            for next in chars.by_ref() {
                if next == '\'' {
                    break;
                }
            }
            normalised.push_str("'?'");
        } else {
            normalised.push(c);
        }
    }
    normalised
}

/// The kinds of failure of a run, most frequent first (ties: by SQLSTATE, message).
pub fn failure_kinds(failures: &[FailureCount]) -> Vec<FailureTotal> {
    let mut kinds: BTreeMap<(&FailureKind, &str), FailureTotal> = BTreeMap::new();
    for failure in failures {
        let kind = kinds
            .entry((&failure.kind, &failure.message))
            .or_insert_with(|| FailureTotal {
                kind: failure.kind.clone(),
                message: failure.message.clone(),
                count: 0,
                first_second: failure.second,
                last_second: failure.second,
            });
        kind.count += failure.count;
        kind.first_second = kind.first_second.min(failure.second);
        kind.last_second = kind.last_second.max(failure.second);
    }
    let mut kinds: Vec<FailureTotal> = kinds.into_values().collect();
    kinds.sort_by_key(|kind| std::cmp::Reverse(kind.count));
    kinds
}

/// Failed transactions whose SQLSTATE is of class `class` (its first two characters).
pub fn failed_in_class(failures: &[FailureCount], class: &str) -> u64 {
    failures
        .iter()
        .filter(|failure| {
            failure
                .kind
                .server_code()
                .is_some_and(|code| code.as_str().starts_with(class))
        })
        .map(|failure| failure.count)
        .sum()
}

/// `count` failures of one kind in `second` (for tests).
#[cfg(test)]
pub(crate) fn test_failure(second: u32, cell: &str, message: &str, count: u64) -> FailureCount {
    FailureCount {
        second,
        kind: FailureKind::from_cell(cell),
        message: message.to_string(),
        count,
    }
}

#[cfg(test)]
mod tests {
    use super::test_failure as count;
    use super::*;

    #[test]
    fn values_are_normalised_names_are_kept() {
        assert_eq!(
            normalise_message("cached plan must not change result type"),
            "cached plan must not change result type"
        );
        assert_eq!(
            normalise_message(r#"duplicate key value violates unique constraint "orders_pkey""#),
            r#"duplicate key value violates unique constraint "orders_pkey""#
        );
        assert_eq!(
            normalise_message("invalid input syntax for type integer: 'abc' at 12, 345"),
            "invalid input syntax for type integer: '?' at N, N"
        );
        assert_eq!(
            normalise_message(r#"relation "t2" does not exist"#),
            r#"relation "t2" does not exist"#
        );
        assert_eq!(normalise_message("unterminated 'quote"), "unterminated '?'");
        assert_eq!(
            normalise_message("Table 'shop_7.orders' doesn't exist"),
            "Table '?' doesn't exist"
        );
    }

    #[test]
    fn a_failure_kind_is_its_cell_and_sorts_as_the_cell_does() {
        let cells = [
            "0A000",
            "40P01",
            "57P01",
            "connection_lost",
            "pool_timeout",
            "rejected",
            "script",
            "timeout",
        ];
        let kinds: Vec<FailureKind> = cells
            .iter()
            .map(|cell| FailureKind::from_cell(cell))
            .collect();
        for (kind, cell) in kinds.iter().zip(cells) {
            assert_eq!(kind.to_string(), cell);
        }
        assert_eq!(kinds[1], FailureKind::Server(ErrorCode::new("40P01")));
        assert_eq!(kinds[7], FailureKind::ClientTimeout);
        let mut sorted = kinds.clone();
        sorted.reverse();
        sorted.sort();
        assert_eq!(sorted, kinds);
        let json = serde_json::to_string(&kinds[4]).unwrap();
        assert_eq!(json, "\"pool_timeout\"");
        assert_eq!(
            serde_json::from_str::<FailureKind>(&json).unwrap(),
            FailureKind::PoolTimeout
        );
    }

    #[test]
    fn kinds_add_up_over_seconds_most_frequent_first() {
        let failures = [
            count(3, "40P01", "deadlock detected", 1),
            count(13, "0A000", "cached plan must not change result type", 40),
            count(14, "0A000", "cached plan must not change result type", 60),
            count(14, "timeout", "client timeout", 2),
        ];
        let kinds = failure_kinds(&failures);
        assert_eq!(kinds.len(), 3);
        assert_eq!(kinds[0].kind, FailureKind::Server(ErrorCode::new("0A000")));
        assert_eq!(kinds[0].count, 100);
        assert_eq!((kinds[0].first_second, kinds[0].last_second), (13, 14));
        assert_eq!(kinds[2].kind.to_string(), "40P01");
        assert_eq!(failed_in_class(&failures, "0A"), 100);
        assert_eq!(failed_in_class(&failures, "40"), 1);
        assert_eq!(failed_in_class(&failures, "ti"), 0);
    }
}
