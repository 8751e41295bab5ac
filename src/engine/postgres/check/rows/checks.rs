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

/// Whether a CHECK says that exactly one of its columns holds a value, in
/// the two forms `pg_get_constraintdef` writes for it:
/// `CHECK ((num_nonnulls(a, b, c) = 1))` and `CHECK (((a IS NULL) <> (b IS
/// NULL)))`. Rows with every column set meet the other usual forms (`a IS
/// NOT NULL OR b IS NOT NULL`, `(a IS NULL) = (b IS NULL)`), so only these
/// and [`at_most_one_value`]'s need columns left NULL.
pub(super) fn exactly_one_value(definition: &str) -> bool {
    let body = check_body(definition);
    if let Some(list) = body
        .strip_prefix("num_nonnulls(")
        .and_then(|rest| rest.strip_suffix(") = 1"))
    {
        return !list.contains(['(', ')']);
    }
    match body.split_once(" <> ") {
        Some((left, right)) => [left, right]
            .iter()
            .all(|side| column_test(side, " IS NULL)")),
        None => false,
    }
}

/// Whether a CHECK says that at most one of its columns holds a value, in
/// the forms `pg_get_constraintdef` writes for it: `CHECK ((NOT ((a IS NOT
/// NULL) AND (b IS NOT NULL))))`, `CHECK (((a IS NULL) OR (b IS NULL)))`
/// (two columns; with more, one NULL is enough, and every one but the
/// first NULL meets it too) and `CHECK ((num_nonnulls(a, b) <= 1))` or `<
/// 2`. Rows with every column set break it; rows where only the first
/// column holds a value meet it.
pub(super) fn at_most_one_value(definition: &str) -> bool {
    let body = check_body(definition);
    let counted = [") <= 1", ") < 2"].iter().find_map(|end| {
        body.strip_prefix("num_nonnulls(")
            .and_then(|rest| rest.strip_suffix(end))
    });
    if let Some(list) = counted {
        return !list.contains(['(', ')']);
    }
    let all_tests = |text: &str, joiner: &str, test: &str| {
        let sides = split_top(text, joiner);
        sides.len() >= 2 && sides.iter().all(|side| column_test(side, test))
    };
    if let Some(negated) = body.strip_prefix("NOT ") {
        let inner = unwrap_parentheses(negated);
        return inner != negated && all_tests(inner, " AND ", " IS NOT NULL)");
    }
    all_tests(body, " OR ", " IS NULL)")
}

/// The expression of a CHECK's definition, without `CHECK` and the
/// parentheses around the whole.
fn check_body(definition: &str) -> &str {
    let body = definition
        .trim()
        .strip_prefix("CHECK")
        .unwrap_or(definition)
        .trim();
    unwrap_parentheses(body)
}

/// `text` without every pair of parentheses around the whole of it (`(a)
/// <> (b)` has none).
fn unwrap_parentheses(mut text: &str) -> &str {
    while let Some(inner) = text
        .strip_prefix('(')
        .and_then(|rest| rest.strip_suffix(')'))
    {
        if !balanced(inner) {
            break;
        }
        text = inner.trim();
    }
    text
}

/// `(column IS NULL)` for `test` `" IS NULL)"`: a test of one bare column.
fn column_test(side: &str, test: &str) -> bool {
    side.strip_prefix('(')
        .and_then(|inside| inside.strip_suffix(test))
        .is_some_and(|column| !column.is_empty() && !column.contains(['(', ')', ' ']))
}

/// `text` split at each `joiner` outside parentheses.
fn split_top<'a>(text: &'a str, joiner: &str) -> Vec<&'a str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 && text[at..].starts_with(joiner) && at >= start => {
                parts.push(&text[start..at]);
                start = at + joiner.len();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Whether every parenthesis of `text` closes within it, none before it opens.
fn balanced(text: &str) -> bool {
    let mut depth = 0i32;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exactly_one_forms_are_read_as_such() {
        assert!(exactly_one_value(
            "CHECK ((num_nonnulls(post_report_id, comment_report_id, community_report_id) = 1))"
        ));
        assert!(exactly_one_value(
            "CHECK (((url IS NULL) <> (path IS NULL)))"
        ));
        // Every column set meets these: nothing to leave NULL.
        assert!(!exactly_one_value(
            "CHECK (((followed_at IS NULL) = (follow_pending IS NULL)))"
        ));
        assert!(!exactly_one_value(
            "CHECK (((a IS NOT NULL) OR (b IS NOT NULL)))"
        ));
        assert!(!exactly_one_value("CHECK ((num_nonnulls(a, b) = 2))"));
        assert!(!exactly_one_value(
            "CHECK ((((kind = 'x'::k) AND (num_nonnulls(a, b) = 1)) OR (kind = 'y'::k)))"
        ));
    }

    #[test]
    fn only_the_at_most_one_forms_are_read_as_such() {
        // As pg_get_constraintdef writes them (PostgreSQL 15).
        for definition in [
            "CHECK ((NOT ((unit_cost_llm_model_property IS NOT NULL) AND (unit_cost_llm_model IS NOT NULL))))",
            "CHECK ((NOT ((a IS NOT NULL) AND (b IS NOT NULL) AND (c IS NOT NULL))))",
            "CHECK (((a IS NULL) OR (b IS NULL)))",
            "CHECK ((num_nonnulls(a, b, c) <= 1))",
            "CHECK ((num_nonnulls(a, b) < 2))",
        ] {
            assert!(at_most_one_value(definition), "{definition}");
            assert!(!exactly_one_value(definition), "{definition}");
        }
        for definition in [
            // A further condition: not this form alone.
            "CHECK (((NOT ((a IS NOT NULL) AND (b IS NOT NULL))) AND (c IS NULL)))",
            "CHECK ((NOT ((a IS NOT NULL) OR (b IS NOT NULL))))",
            "CHECK (((a IS NOT NULL) OR (b IS NOT NULL)))",
            "CHECK (((a IS NULL) OR (b > 0)))",
            "CHECK (((a IS NULL) <> (b IS NULL)))",
            "CHECK ((num_nonnulls(a, b) = 1))",
            "CHECK ((NOT (a IS NOT NULL)))",
            "CHECK ((((a IS NULL) OR (b IS NULL)) AND (c > 0)))",
        ] {
            assert!(!at_most_one_value(definition), "{definition}");
        }
    }

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
