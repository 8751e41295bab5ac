//! What a normalised statement (as pg_stat_statements shows it) names: its
//! tables (with their aliases), and what each `$n` stands for: the column it is compared with, set to or inserted into,
//! a `LIMIT` or `OFFSET`, or nothing this scanner recognises.
//!
//! A small hand-written scanner over the statement's tokens, not a SQL
//! parser: it knows `col = $n` (and the other comparisons, either side),
//! `col BETWEEN $n AND $m`, `col IN ($n, ...)`, `SET col = $n`,
//! `INSERT INTO t (cols) VALUES ($n, ...)` and `LIMIT`/`OFFSET $n`, and the
//! tables of `FROM`, `JOIN`, `UPDATE`, `INSERT INTO`, `DELETE FROM`, `USING`
//! and `MERGE INTO` with their aliases. The catalogs then decide which of the statement's tables has
//! the column (`capture/catalog.rs`); whatever is left is a FIXME in the file. `capture` resolves the
//! parameters; `check --load FILE.toml` reads the tables a workload's
//! scripts name.

/// One token of a statement, with its byte range in the text.
#[derive(Debug, Clone, PartialEq)]
struct SqlToken {
    kind: TokenKind,
    start: usize,
    end: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum TokenKind {
    /// A name or keyword: lower-cased unless it was double-quoted (then its text, unquoted).
    Word { text: String, quoted: bool },
    /// `$n`.
    Param(u32),
    /// A number, a string constant or anything else that is a value.
    Value,
    /// Punctuation and operators: `(`, `)`, `,`, `.`, `=`, `<>`, `::`, ...
    Symbol(String),
}

/// What one `$n` stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParameterTarget {
    /// A column of one of `tables` (the candidates, most likely first).
    KnownColumn {
        tables: Vec<String>,
        column: ColumnName,
    },
    /// `LIMIT $n`.
    Limit,
    /// `OFFSET $n`.
    Offset,
    /// Nothing recognised; the text says where the parameter appears.
    Unknown(String),
}

/// A column by name, or by position in the table (`INSERT INTO t VALUES (...)`
/// without a column list), counting from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnName {
    Named(String),
    Position(usize),
}

/// A table the statement reads or writes, and the alias it goes by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRef {
    /// As written, `orders` or `app.orders` (unquoted).
    pub name: String,
    pub alias: Option<String>,
}

/// The parameters of a statement, in order of their number, each with what it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedStatement {
    pub tables: Vec<TableRef>,
    pub parameters: Vec<(u32, ParameterTarget)>,
}

/// Words after which a name is a table (and what follows it may be an alias).
const TABLE_WORDS: &[&str] = &["from", "join", "update", "into", "using"];

/// Words that end a table reference rather than name its alias.
const NOT_ALIASES: &[&str] = &[
    "where",
    "join",
    "left",
    "right",
    "inner",
    "outer",
    "full",
    "cross",
    "natural",
    "on",
    "using",
    "group",
    "order",
    "limit",
    "offset",
    "set",
    "values",
    "returning",
    "for",
    "window",
    "having",
    "union",
    "except",
    "intersect",
    "select",
    "default",
    "tablesample",
    "when",
    "fetch",
    "as",
    "lateral",
    "only",
];

/// Comparison operators: the column is on the other side.
const COMPARISONS: &[&str] = &["=", "<>", "!=", "<", ">", "<=", ">="];
const WORD_COMPARISONS: &[&str] = &["like", "ilike"];

/// Resolves every `$n` of `query` (a normalised statement text).
pub fn resolve(query: &str) -> ScannedStatement {
    let tokens = tokenize(query);
    let tables = tables(&tokens);
    let mut parameters: Vec<(u32, ParameterTarget)> = Vec::new();
    for (index, token) in tokens.iter().enumerate() {
        let TokenKind::Param(number) = token.kind else {
            continue;
        };
        let target = target_at(&tokens, index, &tables, query);
        match parameters.iter_mut().find(|(n, _)| *n == number) {
            // A parameter used twice: the first use that resolves wins.
            Some((_, existing @ ParameterTarget::Unknown(_))) => *existing = target,
            Some(_) => {}
            None => parameters.push((number, target)),
        }
    }
    parameters.sort_by_key(|(number, _)| *number);
    ScannedStatement { tables, parameters }
}

/// `query` with each `$n` written as `:p<n>`, pgbench's variable, outside
/// quotes and comments.
pub fn with_variables(query: &str) -> String {
    let mut out = String::with_capacity(query.len() + 16);
    let mut last = 0;
    for token in tokenize(query) {
        if let TokenKind::Param(number) = token.kind {
            out.push_str(&query[last..token.start]);
            out.push_str(&format!(":p{number}"));
            last = token.end;
        }
    }
    out.push_str(&query[last..]);
    out
}

/// The variable name of parameter `number`.
pub fn variable(number: u32) -> String {
    format!("p{number}")
}

/// The tokens of `text`; comments are skipped.
fn tokenize(text: &str) -> Vec<SqlToken> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        let start = index;
        let byte = bytes[index];
        let next = bytes.get(index + 1).copied();
        let kind = match byte {
            b if b.is_ascii_whitespace() => {
                index += 1;
                continue;
            }
            b'-' if next == Some(b'-') => {
                index = text[index..]
                    .find('\n')
                    .map_or(bytes.len(), |at| index + at);
                continue;
            }
            b'/' if next == Some(b'*') => {
                index = text[index + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |at| index + 2 + at + 2);
                continue;
            }
            b'$' if next.is_some_and(|b| b.is_ascii_digit()) => {
                index += 1;
                while bytes.get(index).is_some_and(u8::is_ascii_digit) {
                    index += 1;
                }
                match text[start + 1..index].parse() {
                    Ok(number) => TokenKind::Param(number),
                    Err(_) => TokenKind::Value,
                }
            }
            b'$' => {
                // A dollar-quoted string: $tag$ ... $tag$.
                let tag_end = text[index + 1..].find('$').map(|at| index + 1 + at + 1);
                index = match tag_end {
                    Some(tag_end) => {
                        let tag = &text[index..tag_end];
                        text[tag_end..]
                            .find(tag)
                            .map_or(bytes.len(), |at| tag_end + at + tag.len())
                    }
                    None => bytes.len(),
                };
                TokenKind::Value
            }
            b'\'' => {
                index = end_of_quoted(bytes, index, b'\'');
                TokenKind::Value
            }
            b'"' => {
                index = end_of_quoted(bytes, index, b'"');
                let inner = &text[start + 1..index.saturating_sub(1).max(start + 1)];
                TokenKind::Word {
                    text: inner.replace("\"\"", "\""),
                    quoted: true,
                }
            }
            b if b.is_ascii_digit() => {
                while bytes
                    .get(index)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'.')
                {
                    index += 1;
                }
                TokenKind::Value
            }
            b if b.is_ascii_alphabetic() || b == b'_' || b >= 0x80 => {
                while bytes
                    .get(index)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b >= 0x80)
                {
                    index += 1;
                }
                TokenKind::Word {
                    text: text[start..index].to_lowercase(),
                    quoted: false,
                }
            }
            b'(' | b')' | b',' | b'.' | b';' | b'[' | b']' => {
                index += 1;
                TokenKind::Symbol((byte as char).to_string())
            }
            _ => {
                while bytes
                    .get(index)
                    .is_some_and(|b| b"+-*/<>=~!@#%^&|`?:".contains(b))
                {
                    index += 1;
                }
                if index == start {
                    index += 1;
                }
                TokenKind::Symbol(text[start..index].to_string())
            }
        };
        tokens.push(SqlToken {
            kind,
            start,
            end: index,
        });
    }
    tokens
}

/// The index after the quote that closes the one at `start` (a doubled quote is part of it).
fn end_of_quoted(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut index = start + 1;
    while index < bytes.len() {
        if bytes[index] == quote {
            if bytes.get(index + 1) == Some(&quote) {
                index += 2;
                continue;
            }
            return index + 1;
        }
        index += 1;
    }
    bytes.len()
}

fn word(token: Option<&SqlToken>) -> Option<&str> {
    match token.map(|token| &token.kind) {
        Some(TokenKind::Word { text, .. }) => Some(text),
        _ => None,
    }
}

fn is_keyword(token: Option<&SqlToken>, keyword: &str) -> bool {
    matches!(token.map(|t| &t.kind), Some(TokenKind::Word { text, quoted: false }) if text == keyword)
}

fn is_symbol(token: Option<&SqlToken>, symbol: &str) -> bool {
    matches!(token.map(|t| &t.kind), Some(TokenKind::Symbol(text)) if text == symbol)
}

/// The tables of the statement, in order of appearance, each with its alias.
fn tables(tokens: &[SqlToken]) -> Vec<TableRef> {
    let mut tables: Vec<TableRef> = Vec::new();
    let mut index = 0;
    while index < tokens.len() {
        let Some(keyword) = TABLE_WORDS
            .iter()
            .find(|w| is_keyword(tokens.get(index), w))
        else {
            index += 1;
            continue;
        };
        // `SELECT ... FOR UPDATE` locks rows, it names no table.
        let previous = index.checked_sub(1).and_then(|i| tokens.get(i));
        index += 1;
        if *keyword == "update" && is_keyword(previous, "for") {
            continue;
        }
        // FROM a x, b y: a list of tables; a `(` starts a subquery, skipped here.
        loop {
            if is_keyword(tokens.get(index), "only") {
                index += 1;
            }
            let Some((name, next)) = qualified_name(tokens, index) else {
                break;
            };
            index = next;
            // `FROM generate_series(...)` is a function; `INTO t (a, b)` a column list.
            if is_symbol(tokens.get(index), "(") && *keyword != "into" {
                break;
            }
            if is_keyword(tokens.get(index), "as") {
                index += 1;
            }
            let alias = match word(tokens.get(index)) {
                Some(alias) if !NOT_ALIASES.contains(&alias) => {
                    index += 1;
                    Some(alias.to_string())
                }
                _ => None,
            };
            if !tables.iter().any(|t| t.name == name && t.alias == alias) {
                tables.push(TableRef { name, alias });
            }
            if !is_symbol(tokens.get(index), ",") {
                break;
            }
            index += 1;
        }
    }
    tables
}

/// A name, `schema.name` or `name` (quoted parts kept as written, unquoted),
/// starting at `index`, and the index after it.
fn qualified_name(tokens: &[SqlToken], index: usize) -> Option<(String, usize)> {
    let first = word(tokens.get(index))?;
    if NOT_ALIASES.contains(&first)
        && !matches!(tokens[index].kind, TokenKind::Word { quoted: true, .. })
    {
        return None;
    }
    let mut name = first.to_string();
    let mut next = index + 1;
    while is_symbol(tokens.get(next), ".")
        && let Some(part) = word(tokens.get(next + 1))
    {
        name = format!("{name}.{part}");
        next += 2;
    }
    Some((name, next))
}

/// A column reference that ends at `end` (inclusive): `col` or `alias.col`,
/// as (qualifier, column).
fn column_before(tokens: &[SqlToken], end: usize) -> Option<(Option<String>, String)> {
    let column = word(tokens.get(end))?.to_string();
    if end >= 2 && is_symbol(tokens.get(end - 1), ".") {
        let qualifier = word(tokens.get(end - 2))?.to_string();
        return Some((Some(qualifier), column));
    }
    Some((None, column))
}

/// A column reference that starts at `start`: `col` or `alias.col`.
fn column_after(tokens: &[SqlToken], start: usize) -> Option<(Option<String>, String)> {
    let first = word(tokens.get(start))?.to_string();
    if is_symbol(tokens.get(start + 1), ".") {
        let column = word(tokens.get(start + 2))?.to_string();
        return Some((Some(first), column));
    }
    if is_symbol(tokens.get(start + 1), "(") {
        return None;
    }
    Some((None, first))
}

/// The candidate tables of a column with `qualifier` (an alias or a table name), or all.
fn candidates(tables: &[TableRef], qualifier: Option<&str>) -> Vec<String> {
    let bare = |name: &str| name.rsplit('.').next().unwrap_or(name).to_string();
    match qualifier {
        Some(qualifier) => tables
            .iter()
            .filter(|t| t.alias.as_deref() == Some(qualifier) || bare(&t.name) == qualifier)
            .map(|t| t.name.clone())
            .take(1)
            .collect(),
        None => tables.iter().map(|t| t.name.clone()).collect(),
    }
}

/// What the parameter at token `index` stands for.
fn target_at(
    tokens: &[SqlToken],
    index: usize,
    tables: &[TableRef],
    query: &str,
) -> ParameterTarget {
    let before = |back: usize| index.checked_sub(back).and_then(|i| tokens.get(i));
    let column = |found: Option<(Option<String>, String)>| {
        found.map(|(qualifier, column)| ParameterTarget::KnownColumn {
            tables: candidates(tables, qualifier.as_deref()),
            column: ColumnName::Named(column),
        })
    };
    if is_keyword(before(1), "limit") {
        return ParameterTarget::Limit;
    }
    if is_keyword(before(1), "offset") {
        return ParameterTarget::Offset;
    }
    // =, <>, <, >, LIKE, ...
    let comparison = |token: Option<&SqlToken>| {
        matches!(token.map(|t| &t.kind), Some(TokenKind::Symbol(s)) if COMPARISONS.contains(&s.as_str()))
            || WORD_COMPARISONS.iter().any(|w| is_keyword(token, w))
    };
    // col <op> $n, col BETWEEN $n ...
    if (comparison(before(1)) || is_keyword(before(1), "between"))
        && let Some(target) = column(
            index
                .checked_sub(2)
                .and_then(|end| column_before(tokens, end)),
        )
    {
        return target;
    }
    // $n <op> col; `$n::type` casts it first.
    let mut after = index + 1;
    if is_symbol(tokens.get(after), "::") {
        after += 2;
    }
    if comparison(tokens.get(after))
        && let Some(target) = column(column_after(tokens, after + 1))
    {
        return target;
    }
    // col BETWEEN $m AND $n
    if is_keyword(before(1), "and")
        && matches!(before(2).map(|t| &t.kind), Some(TokenKind::Param(_)))
        && is_keyword(before(3), "between")
        && let Some(target) = column(
            index
                .checked_sub(4)
                .and_then(|end| column_before(tokens, end)),
        )
    {
        return target;
    }
    if let Some(target) = in_list(tokens, index, tables) {
        return target;
    }
    if let Some(target) = insert_value(tokens, index) {
        return target;
    }
    ParameterTarget::Unknown(context(tokens, index, query))
}

/// `col IN ($1, $2)`, `col NOT IN (...)`. (`col = ANY ($1)` takes an array,
/// which a `\set` cannot make: it stays unknown.)
fn in_list(tokens: &[SqlToken], index: usize, tables: &[TableRef]) -> Option<ParameterTarget> {
    let (open, _) = list_item(tokens, index)?;
    let keyword_at = open.checked_sub(1)?;
    if !is_keyword(tokens.get(keyword_at), "in") {
        return None;
    }
    let column_end = match is_keyword(tokens.get(keyword_at.checked_sub(1)?), "not") {
        true => keyword_at.checked_sub(2)?,
        false => keyword_at.checked_sub(1)?,
    };
    let (qualifier, column) = column_before(tokens, column_end)?;
    Some(ParameterTarget::KnownColumn {
        tables: candidates(tables, qualifier.as_deref()),
        column: ColumnName::Named(column),
    })
}

/// The `(` of the parenthesised list that holds the parameter at `index` at
/// depth 0, and the parameter's position in it (from 0).
fn list_item(tokens: &[SqlToken], index: usize) -> Option<(usize, usize)> {
    let mut position = 0;
    let mut depth = 0;
    let mut at = index;
    while at > 0 {
        at -= 1;
        match &tokens[at].kind {
            TokenKind::Symbol(s) if s == ")" => depth += 1,
            TokenKind::Symbol(s) if s == "(" && depth == 0 => return Some((at, position)),
            TokenKind::Symbol(s) if s == "(" => depth -= 1,
            TokenKind::Symbol(s) if s == "," && depth == 0 => position += 1,
            TokenKind::Symbol(s) if s == ";" => return None,
            _ => {}
        }
    }
    None
}

/// `INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)`: the column at the
/// parameter's position, or the table's column at that position without a list.
fn insert_value(tokens: &[SqlToken], index: usize) -> Option<ParameterTarget> {
    let (open, position) = list_item(tokens, index)?;
    // The tuple follows VALUES, or `),` of an earlier tuple.
    let mut before = open.checked_sub(1)?;
    while is_symbol(tokens.get(before), ",") && is_symbol(tokens.get(before.checked_sub(1)?), ")") {
        before = matching_open(tokens, before - 1)?.checked_sub(1)?;
    }
    if !is_keyword(tokens.get(before), "values") {
        return None;
    }
    let into = (0..before)
        .rev()
        .find(|&at| is_keyword(tokens.get(at), "into"))?;
    let (table, after_name) = qualified_name(tokens, into + 1)?;
    let column = if is_symbol(tokens.get(after_name), "(") {
        let names: Vec<String> = tokens[after_name + 1..before]
            .iter()
            .take_while(|token| !is_symbol(Some(token), ")"))
            .filter_map(|token| word(Some(token)).map(str::to_string))
            .collect();
        ColumnName::Named(names.get(position)?.clone())
    } else {
        ColumnName::Position(position + 1)
    };
    Some(ParameterTarget::KnownColumn {
        tables: vec![table],
        column,
    })
}

/// The `(` that the `)` at `close` closes.
fn matching_open(tokens: &[SqlToken], close: usize) -> Option<usize> {
    let mut depth = 0;
    for at in (0..=close).rev() {
        if is_symbol(tokens.get(at), ")") {
            depth += 1;
        } else if is_symbol(tokens.get(at), "(") {
            depth -= 1;
            if depth == 0 {
                return Some(at);
            }
        }
    }
    None
}

/// A few tokens around the parameter at `index`, as written, for a FIXME.
fn context(tokens: &[SqlToken], index: usize, query: &str) -> String {
    let from = tokens[index.saturating_sub(3)].start;
    let to = tokens[(index + 3).min(tokens.len() - 1)].end;
    query[from..to]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
