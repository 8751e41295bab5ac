//! Failed transactions by kind: a SQLSTATE and a normalised message, so that
//! 200,000 failures read as one line ("0A000 cached plan must not change
//! result type") instead of a bare count.
//!
//! The message is normalised so that failures that differ only in their
//! values group together: every run of digits becomes `N` and every
//! single-quoted literal becomes `'?'`. Double-quoted names (`relation "x"`)
//! stay, because they say which object failed.

use std::collections::BTreeMap;

/// Failed transactions of one kind in one second of one strategy's run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureCount {
    pub second: u32,
    /// The server's SQLSTATE, or `timeout`, `connection_lost`, `script`.
    pub sqlstate: String,
    /// The error message, normalised by [`normalise_message`].
    pub message: String,
    pub count: u64,
}

/// One kind of failure over a whole run, for the summary sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct FailureKind {
    pub sqlstate: String,
    pub message: String,
    pub count: u64,
    /// The first and last second with a failure of this kind.
    pub first_second: u32,
    pub last_second: u32,
}

/// `message` with every run of digits replaced by `N` and every single-quoted
/// literal by `'?'`; double-quoted identifiers are kept.
pub fn normalise_message(message: &str) -> String {
    let mut normalised = String::with_capacity(message.len());
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
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
        } else if c == '\'' {
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
pub fn failure_kinds(failures: &[FailureCount]) -> Vec<FailureKind> {
    let mut kinds: BTreeMap<(&str, &str), FailureKind> = BTreeMap::new();
    for failure in failures {
        let kind = kinds
            .entry((&failure.sqlstate, &failure.message))
            .or_insert_with(|| FailureKind {
                sqlstate: failure.sqlstate.clone(),
                message: failure.message.clone(),
                count: 0,
                first_second: failure.second,
                last_second: failure.second,
            });
        kind.count += failure.count;
        kind.first_second = kind.first_second.min(failure.second);
        kind.last_second = kind.last_second.max(failure.second);
    }
    let mut kinds: Vec<FailureKind> = kinds.into_values().collect();
    kinds.sort_by_key(|kind| std::cmp::Reverse(kind.count));
    kinds
}

/// Failed transactions whose SQLSTATE is of class `class` (its first two characters).
pub fn failed_in_class(failures: &[FailureCount], class: &str) -> u64 {
    failures
        .iter()
        .filter(|failure| failure.sqlstate.len() == 5 && failure.sqlstate.starts_with(class))
        .map(|failure| failure.count)
        .sum()
}

/// `count` failures of one kind in `second` (for tests).
#[cfg(test)]
pub(crate) fn test_failure(second: u32, sqlstate: &str, message: &str, count: u64) -> FailureCount {
    FailureCount {
        second,
        sqlstate: sqlstate.to_string(),
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
        assert_eq!(kinds[0].sqlstate, "0A000");
        assert_eq!(kinds[0].count, 100);
        assert_eq!((kinds[0].first_second, kinds[0].last_second), (13, 14));
        assert_eq!(kinds[2].sqlstate, "40P01");
        assert_eq!(failed_in_class(&failures, "0A"), 100);
        assert_eq!(failed_in_class(&failures, "40"), 1);
        assert_eq!(failed_in_class(&failures, "ti"), 0);
    }
}
