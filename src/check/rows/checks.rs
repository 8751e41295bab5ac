//! The CHECKs of one column the generator can satisfy, read from their text
//! as pg_get_constraintdef writes it: an `IN (...)` list
//! (`CHECK ((status = ANY (ARRAY['new'::text, 'paid'::text])))`) and bounds
//! joined by AND (`CHECK (((rating >= 1) AND (rating <= 5)))`). Anything
//! else is left to the server, which names the CHECK if the rows break it.

/// The values an `IN (...)` CHECK allows: the quoted literals of its `ARRAY[...]`.
pub(super) fn check_choices(definition: &str) -> Option<Vec<String>> {
    if definition.contains(" OR ") || definition.contains(" AND ") || !definition.contains("= ANY")
    {
        return None;
    }
    let start = definition.find("ARRAY[")? + "ARRAY[".len();
    let mut values = Vec::new();
    let mut chars = definition[start..].chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ']' => break,
            '\'' => {
                let mut value = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\'' if chars.peek() == Some(&'\'') => {
                            chars.next();
                            value.push('\'');
                        }
                        '\'' => break,
                        c => value.push(c),
                    }
                }
                values.push(value);
            }
            _ => {}
        }
    }
    (!values.is_empty()).then_some(values)
}

/// The whole numbers `column` may take by the comparisons of a CHECK with
/// constants: (lowest, highest), either missing when unbounded.
pub(super) fn check_bounds(definition: &str, column: &str) -> Option<(Option<i64>, Option<i64>)> {
    if definition.contains(" OR ") {
        return None;
    }
    let plain = format!("({column} ");
    let quoted = format!("(\"{}\" ", column.replace('"', "\"\""));
    let mut low: Option<i64> = None;
    let mut high: Option<i64> = None;
    for name in [plain, quoted] {
        let mut rest = definition;
        while let Some(at) = rest.find(&name) {
            rest = &rest[at + name.len()..];
            let Some((operator, value)) = comparison(rest) else {
                continue;
            };
            let (lowest, highest) = match operator {
                ">=" => (Some(value.ceil()), None),
                ">" => (Some(value.floor() + 1.0), None),
                "<=" => (None, Some(value.floor())),
                "<" => (None, Some(value.ceil() - 1.0)),
                "=" => (Some(value), Some(value)),
                _ => continue,
            };
            if let Some(lowest) = lowest {
                low = Some(low.map_or(lowest as i64, |low| low.max(lowest as i64)));
            }
            if let Some(highest) = highest {
                high = Some(high.map_or(highest as i64, |high| high.min(highest as i64)));
            }
        }
    }
    (low.is_some() || high.is_some()).then_some((low, high))
}

/// `>= 1)`, `> '-40'::integer)`, `<= (0.5)::numeric)`: the operator and the number.
fn comparison(text: &str) -> Option<(&str, f64)> {
    let (operator, rest) = text.split_once(' ')?;
    let literal = rest.trim_start_matches(['(', '\'']);
    let end = literal
        .find(|c: char| !(c.is_ascii_digit() || c == '-' || c == '.'))
        .unwrap_or(literal.len());
    let value: f64 = literal[..end].parse().ok()?;
    let after = &literal[end..];
    let ends = after.starts_with(')') || after.starts_with('\'') || after.starts_with("::");
    (ends && value.abs() < 1e15).then_some((operator, value))
}

/// Whether a CHECK's definition tests which of its columns are NULL
/// (`IS NULL`, `IS NOT NULL`, `num_nulls(`, `num_nonnulls(`), as
/// `pg_get_constraintdef` writes it.
pub(super) fn null_tests(definition: &str) -> bool {
    ["IS NULL", "IS NOT NULL", "num_nulls(", "num_nonnulls("]
        .iter()
        .any(|test| definition.contains(test))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_lists_are_read_from_their_definition() {
        assert_eq!(
            check_choices("CHECK ((status = ANY (ARRAY['new'::text, 'it''s'::text])))"),
            Some(vec!["new".to_string(), "it's".to_string()])
        );
        assert_eq!(
            check_choices(
                "CHECK (((kind)::text = ANY ((ARRAY['a'::character varying, \
                 'b'::character varying])::text[])))"
            ),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(check_choices("CHECK ((qty > 0))"), None);
        assert_eq!(
            check_choices("CHECK (((a = ANY (ARRAY[1, 2])) OR (b > 0)))"),
            None
        );
    }

    #[test]
    fn bounds_are_read_from_comparisons_with_constants() {
        assert_eq!(
            check_bounds("CHECK (((rating >= 1) AND (rating <= 5)))", "rating"),
            Some((Some(1), Some(5)))
        );
        assert_eq!(
            check_bounds("CHECK ((c > '-40'::integer))", "c"),
            Some((Some(-39), None))
        );
        assert_eq!(
            check_bounds("CHECK ((b >= 0.5))", "b"),
            Some((Some(1), None))
        );
        assert_eq!(
            check_bounds("CHECK ((price < (100)::numeric))", "price"),
            Some((None, Some(99)))
        );
        assert_eq!(
            check_bounds("CHECK ((\"Odd\" < 7))", "Odd"),
            Some((None, Some(6)))
        );
        assert_eq!(
            check_bounds("CHECK ((((e >= 1) AND (e <= 10)) OR (e IS NULL)))", "e"),
            None
        );
        assert_eq!(check_bounds("CHECK ((a < b))", "a"), None);
        assert_eq!(check_bounds("CHECK ((length(code) = 3))", "code"), None);
    }
}
