//! Splits a migration file (`--ddl-file`, and each file `stallbench check`
//! reads) into its statements, each run as one DDL step. A `;` ends a
//! statement only outside what PostgreSQL's own lexer treats as one token:
//! single-quoted strings (`E'...'` escapes included), double-quoted names,
//! dollar quotes (`$$...$$`, `$tag$...$tag$`), `--` line comments and `/* */`
//! block comments, which nest. Comments stay in their statement's text
//! ([`split_located`] leaves out those before its first token); a statement
//! of only comments and blanks is dropped.

/// The statements of `text`, trimmed, without their `;`, empty ones dropped.
pub fn split_statements(text: &str) -> Vec<String> {
    statement_ranges(text)
        .into_iter()
        .filter_map(|(start, end)| {
            let trimmed = text[start..end].trim();
            (!only_comments(trimmed)).then(|| trimmed.to_string())
        })
        .collect()
}

/// A statement of a file and where it starts: `sql` begins at its first token
/// (the comments and blanks before it are left out), found at byte `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedStatement {
    pub sql: String,
    pub offset: usize,
}

/// The statements of `text` as [`split_statements`] finds them, each without
/// its leading comments and with the byte offset of its first token.
pub fn split_located(text: &str) -> Vec<LocatedStatement> {
    statement_ranges(text)
        .into_iter()
        .filter_map(|(start, end)| {
            let first_token = start + skip_comments_and_blanks(&text.as_bytes()[start..end]);
            let sql = text[first_token..end].trim_end();
            (!sql.is_empty()).then(|| LocatedStatement {
                sql: sql.to_string(),
                offset: first_token,
            })
        })
        .collect()
}

/// The byte ranges between the statement-ending `;`s of `text` (the `;` left out).
fn statement_ranges(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        at = match bytes[at] {
            b';' => {
                ranges.push((start, at));
                start = at + 1;
                at + 1
            }
            b'\'' => skip_quoted(bytes, at, b'\'', is_escape_string(bytes, at)),
            b'"' => skip_quoted(bytes, at, b'"', false),
            b'-' if bytes.get(at + 1) == Some(&b'-') => skip_line_comment(bytes, at),
            b'/' if bytes.get(at + 1) == Some(&b'*') => skip_block_comment(bytes, at),
            b'$' => match dollar_tag(text, at) {
                Some(tag) => skip_dollar_quoted(text, at, tag),
                None => at + 1,
            },
            _ => at + 1,
        };
    }
    ranges.push((start, bytes.len()));
    ranges
}

fn only_comments(statement: &str) -> bool {
    skip_comments_and_blanks(statement.as_bytes()) == statement.len()
}

/// The index of the first byte of `bytes` that is neither blank nor in a comment.
fn skip_comments_and_blanks(bytes: &[u8]) -> usize {
    let mut at = 0;
    while at < bytes.len() {
        at = match bytes[at] {
            b'-' if bytes.get(at + 1) == Some(&b'-') => skip_line_comment(bytes, at),
            b'/' if bytes.get(at + 1) == Some(&b'*') => skip_block_comment(bytes, at),
            byte if byte.is_ascii_whitespace() => at + 1,
            _ => return at,
        };
    }
    bytes.len()
}

/// `E'...'` (or `e'...'`), where a backslash escapes the next character: the `E`
/// must start a token, so `name'` is not one.
fn is_escape_string(bytes: &[u8], quote: usize) -> bool {
    quote >= 1
        && matches!(bytes[quote - 1], b'E' | b'e')
        && (quote < 2 || !is_identifier_byte(bytes[quote - 2]))
}

fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$' || byte >= 0x80
}

/// The index after the string or name that opens at `open` with `quote`; a doubled
/// quote inside is one quote character. Unterminated: the end of the text.
fn skip_quoted(bytes: &[u8], open: usize, quote: u8, backslash_escapes: bool) -> usize {
    let mut at = open + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' if backslash_escapes => at += 2,
            byte if byte == quote && bytes.get(at + 1) == Some(&quote) => at += 2,
            byte if byte == quote => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// The index of the newline that ends the `--` comment at `open` (or the end).
fn skip_line_comment(bytes: &[u8], open: usize) -> usize {
    bytes[open..]
        .iter()
        .position(|&byte| byte == b'\n')
        .map_or(bytes.len(), |offset| open + offset)
}

/// The index after the `*/` that closes the `/*` at `open`, counting nested ones.
fn skip_block_comment(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0;
    let mut at = open;
    while at < bytes.len() {
        if bytes[at] == b'/' && bytes.get(at + 1) == Some(&b'*') {
            depth += 1;
            at += 2;
        } else if bytes[at] == b'*' && bytes.get(at + 1) == Some(&b'/') {
            depth -= 1;
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    bytes.len()
}

/// The tag of the dollar quote opening at `open` (`$$` or `$tag$`, the tag an
/// identifier not starting with a digit), or `None` for a `$1` parameter or a
/// `$` inside an identifier such as `a$b`.
fn dollar_tag(text: &str, open: usize) -> Option<&str> {
    let bytes = text.as_bytes();
    if open > 0 && is_identifier_byte(bytes[open - 1]) {
        return None;
    }
    let rest = &bytes[open + 1..];
    let length = rest
        .iter()
        .position(|&byte| byte == b'$')
        .filter(|&length| {
            let tag = &rest[..length];
            tag.iter()
                .all(|&byte| is_identifier_byte(byte) && byte != b'$')
                && !tag.first().is_some_and(u8::is_ascii_digit)
        })?;
    Some(&text[open..open + length + 2])
}

/// The index after the closing `tag` of the dollar quote opening at `open`.
fn skip_dollar_quoted(text: &str, open: usize, tag: &str) -> usize {
    let body = open + tag.len();
    text[body..]
        .find(tag)
        .map_or(text.len(), |offset| body + offset + tag.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_on_semicolons_and_the_last_needs_none() {
        assert_eq!(
            split_statements(
                "ALTER TABLE a ADD COLUMN b int;\n\n  CREATE INDEX ON a (b) ;\nVACUUM a"
            ),
            [
                "ALTER TABLE a ADD COLUMN b int",
                "CREATE INDEX ON a (b)",
                "VACUUM a"
            ]
        );
    }

    #[test]
    fn empty_statements_and_comment_only_ones_are_dropped() {
        assert_eq!(
            split_statements(";; -- nothing here;\n /* or; here */ ;\nSELECT 1;;\n-- the end\n"),
            ["SELECT 1"]
        );
        assert!(split_statements("  \n-- only a comment\n").is_empty());
    }

    #[test]
    fn a_semicolon_in_quotes_does_not_split() {
        assert_eq!(
            split_statements(
                "UPDATE t SET a = 'x; y', b = 'it''s; fine';\
                 ALTER TABLE \"odd;name\" ADD c int; SELECT E'\\'; still';SELECT 2"
            ),
            [
                "UPDATE t SET a = 'x; y', b = 'it''s; fine'",
                "ALTER TABLE \"odd;name\" ADD c int",
                "SELECT E'\\'; still'",
                "SELECT 2"
            ]
        );
    }

    #[test]
    fn a_semicolon_in_dollar_quotes_does_not_split() {
        let text = "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;\n\
                    DO $body$ BEGIN PERFORM 1; RAISE NOTICE $x$;$x$; END $body$;\n\
                    SELECT $1, a$b FROM t; SELECT 3";
        assert_eq!(
            split_statements(text),
            [
                "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql",
                "DO $body$ BEGIN PERFORM 1; RAISE NOTICE $x$;$x$; END $body$",
                "SELECT $1, a$b FROM t",
                "SELECT 3"
            ]
        );
    }

    #[test]
    fn a_semicolon_in_comments_does_not_split_and_block_comments_nest() {
        let text = "ALTER TABLE a -- add b; later\n ADD b int;\n\
                    /* outer /* inner; */ still comment; */ ALTER TABLE a ADD c int;";
        assert_eq!(
            split_statements(text),
            [
                "ALTER TABLE a -- add b; later\n ADD b int",
                "/* outer /* inner; */ still comment; */ ALTER TABLE a ADD c int"
            ]
        );
    }

    #[test]
    fn located_statements_start_at_their_first_token() {
        let text = "--\n-- Create model Author\n--\nCREATE TABLE a (id int);\n\n  /* x */ ALTER TABLE a ADD b int -- tail\n;\n-- only a comment\n";
        let located = split_located(text);
        assert_eq!(
            located,
            [
                LocatedStatement {
                    sql: "CREATE TABLE a (id int)".into(),
                    offset: text.find("CREATE").unwrap(),
                },
                LocatedStatement {
                    sql: "ALTER TABLE a ADD b int -- tail".into(),
                    offset: text.find("ALTER").unwrap(),
                },
            ]
        );
    }
}
