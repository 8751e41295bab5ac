//! The SQL scanner: splits script text into SQL statements and meta-commands,
//! as psql's lexer does for pgbench.
//!
//! A `;` ends a statement only outside quotes, comments and parentheses, a
//! backslash starts a meta-command only outside quotes and comments (`\;` and
//! `\:` are literal), and `:name` becomes a parameter only outside quotes
//! (inside them it is kept for the simple protocol, which substitutes it
//! there too, as pgbench does). So the scanner tracks which of those it is in
//! (the [`ScanMode`]) and has one method per mode. What it finds goes to the
//! [`ScriptBuilder`].

use super::ScriptError;
use super::builder::ScriptBuilder;
use super::meta::MetaCommandPlace;

/// Where the scanner is inside SQL text.
#[derive(Debug, Clone, Copy)]
enum ScanMode {
    /// Plain SQL.
    Sql,
    /// Inside `'...'`; `E'...'` strings also allow backslash escapes.
    SingleQuote { backslash_escapes: bool },
    /// Inside `"..."`.
    DoubleQuote,
    /// Inside `$tag$...$tag$`; the tag is `text[tag_start..tag_start + tag_length]`.
    DollarQuote { tag_start: usize, tag_length: usize },
    /// Inside `/* ... */`, which nest.
    BlockComment { depth: usize },
}

/// Walks script text once, byte by byte, feeding a [`ScriptBuilder`].
struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    /// Byte index of the next byte to look at.
    index: usize,
    /// 1-based line of `index`.
    line: usize,
    mode: ScanMode,
    /// Line where the open quote or comment started.
    mode_line: usize,
    /// Byte index where the current line starts (for columns).
    line_start: usize,
    /// Open parentheses of the current statement.
    paren_depth: usize,
    builder: &'a mut ScriptBuilder,
}

/// Scans all of `text` into `builder`, ending with its last statement.
pub(super) fn scan(text: &str, builder: &mut ScriptBuilder) -> Result<(), ScriptError> {
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        index: 0,
        line: 1,
        mode: ScanMode::Sql,
        mode_line: 0,
        line_start: 0,
        paren_depth: 0,
        builder,
    };
    while scanner.index < scanner.bytes.len() {
        scanner.scan_next()?;
    }
    scanner.check_closed()?;
    scanner.builder.finish_statement()
}

impl Scanner<'_> {
    /// Consumes what starts at `index` in the current mode.
    fn scan_next(&mut self) -> Result<(), ScriptError> {
        if self.bytes[self.index] == b'\n' {
            self.scan_newline();
            return Ok(());
        }
        let in_quotes = !matches!(self.mode, ScanMode::Sql | ScanMode::BlockComment { .. });
        if in_quotes && self.bytes[self.index] == b':' && self.scan_quoted_variable() {
            return Ok(());
        }
        match self.mode {
            ScanMode::Sql => self.scan_sql()?,
            ScanMode::SingleQuote { backslash_escapes } => {
                self.scan_single_quote(backslash_escapes);
            }
            ScanMode::DoubleQuote => self.scan_double_quote(),
            ScanMode::DollarQuote {
                tag_start,
                tag_length,
            } => self.scan_dollar_quote(tag_start, tag_length),
            ScanMode::BlockComment { depth } => self.scan_block_comment(depth),
        }
        Ok(())
    }

    /// The byte `offset` bytes after `index`, if the text goes on that far.
    fn byte_at(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.index + offset).copied()
    }

    /// Copies the next `length` bytes into the current statement.
    fn copy(&mut self, length: usize) {
        let text = self.text;
        self.builder
            .push_sql(&text[self.index..self.index + length], self.line);
        self.index += length;
    }

    /// Copies the character at `index` into the current statement.
    fn copy_char(&mut self) {
        self.copy(char_length(self.text, self.index));
    }

    /// Enters a quote or comment that starts on the current line.
    fn open(&mut self, mode: ScanMode) {
        self.mode = mode;
        self.mode_line = self.line;
    }

    /// A newline is kept in the statement, except inside a comment.
    fn scan_newline(&mut self) {
        if !matches!(self.mode, ScanMode::BlockComment { .. }) {
            self.builder.push_sql("\n", self.line);
        }
        self.line += 1;
        self.index += 1;
        self.line_start = self.index;
    }

    /// Plain SQL: statement ends, comments, quote openings, variables and meta-commands.
    fn scan_sql(&mut self) -> Result<(), ScriptError> {
        let next = self.byte_at(1);
        match self.bytes[self.index] {
            b'-' if next == Some(b'-') => self.index = end_of_line(self.bytes, self.index),
            b'/' if next == Some(b'*') => {
                self.open(ScanMode::BlockComment { depth: 1 });
                self.index += 2;
            }
            b'\\' if matches!(next, Some(b';' | b':')) => {
                if next == Some(b';') {
                    self.builder.push_compound_separator(self.line);
                } else {
                    self.builder.push_sql(":", self.line);
                }
                self.index += 2;
            }
            b'\\' => self.scan_meta_command()?,
            b';' if self.paren_depth == 0 => {
                self.builder.finish_statement()?;
                self.index += 1;
            }
            b'(' => {
                self.paren_depth += 1;
                self.copy(1);
            }
            b')' => {
                self.paren_depth = self.paren_depth.saturating_sub(1);
                self.copy(1);
            }
            b'\'' => {
                let backslash_escapes = is_escape_string_prefix(self.bytes, self.index);
                self.open(ScanMode::SingleQuote { backslash_escapes });
                self.copy(1);
            }
            b'"' => {
                self.open(ScanMode::DoubleQuote);
                self.copy(1);
            }
            b'$' if !(self.index > 0 && is_identifier_byte(self.bytes[self.index - 1])) => {
                self.scan_sql_dollar()?;
            }
            b':' => self.scan_sql_colon()?,
            _ => self.copy_char(),
        }
        Ok(())
    }

    /// A backslash outside quotes ends the SQL statement, as in pgbench, and starts a
    /// meta-command that runs to the end of the line (or further, after a trailing `\`).
    fn scan_meta_command(&mut self) -> Result<(), ScriptError> {
        self.builder.finish_statement()?;
        self.paren_depth = 0;
        let (command_text, end, continuation_lines) = meta_command_text(self.text, self.index + 1);
        let place = MetaCommandPlace {
            line: self.line,
            column: self.text[self.line_start..self.index].chars().count() + 1,
        };
        self.builder.meta_command(&command_text, place)?;
        self.line += continuation_lines;
        self.index = end;
        if continuation_lines > 0 {
            self.line_start = self.text[..end]
                .rfind('\n')
                .map_or(0, |newline| newline + 1);
        }
        Ok(())
    }

    /// A `$` in plain SQL: a dollar-quote opening, a refused `$1`, or just a `$`.
    fn scan_sql_dollar(&mut self) -> Result<(), ScriptError> {
        if let Some(tag_length) = dollar_tag_length(self.bytes, self.index) {
            self.open(ScanMode::DollarQuote {
                tag_start: self.index,
                tag_length,
            });
            self.copy(tag_length);
        } else if self.byte_at(1).is_some_and(|digit| digit.is_ascii_digit()) {
            return Err(self.builder.error(
                self.line,
                "SQL uses a positional parameter like $1; write :name variables \
                 instead, stallbench numbers the parameters itself",
            ));
        } else {
            self.copy(1);
        }
        Ok(())
    }

    /// A `:` in plain SQL: a `::` cast, a `:name` variable, a `:{?name}` test, or just a colon.
    fn scan_sql_colon(&mut self) -> Result<(), ScriptError> {
        if let Some((name_start, name_end)) = defined_test(self.bytes, self.index) {
            let text = self.text;
            self.builder
                .push_sql_variable(&text[name_start..name_end], false, true, self.line);
            self.index = name_end + 1;
            return Ok(());
        }
        if self.byte_at(1) == Some(b':') {
            // A cast like `::int`: copy the whole run of colons so none starts a variable.
            let mut end = self.index;
            while end < self.bytes.len() && self.bytes[end] == b':' {
                end += 1;
            }
            self.copy(end - self.index);
            return Ok(());
        }
        let name_end = variable_name_end(self.bytes, self.index + 1);
        if name_end == self.index + 1 {
            self.copy(1);
            return Ok(());
        }
        let text = self.text;
        self.builder
            .push_sql_variable(&text[self.index + 1..name_end], false, false, self.line);
        self.index = name_end;
        Ok(())
    }

    /// A `:name` inside a quoted literal or identifier: kept as a variable
    /// for the simple protocol; false (nothing consumed) if no name follows.
    fn scan_quoted_variable(&mut self) -> bool {
        let previous_is_colon = self.index > 0 && self.bytes[self.index - 1] == b':';
        if previous_is_colon || self.byte_at(1) == Some(b':') {
            return false;
        }
        let name_end = variable_name_end(self.bytes, self.index + 1);
        if name_end == self.index + 1 {
            return false;
        }
        let text = self.text;
        self.builder
            .push_sql_variable(&text[self.index + 1..name_end], true, false, self.line);
        self.index = name_end;
        true
    }

    /// Inside `'...'`: a doubled `''` (or in `E'...'` a backslash) escapes the quote.
    fn scan_single_quote(&mut self, backslash_escapes: bool) {
        let next = self.byte_at(1);
        match self.bytes[self.index] {
            b'\\' if backslash_escapes && next.is_some_and(|escaped| escaped != b'\n') => {
                self.copy(1);
                self.copy_char();
            }
            b'\'' if next == Some(b'\'') => self.copy(2),
            b'\'' => {
                self.copy(1);
                self.mode = ScanMode::Sql;
            }
            _ => self.copy_char(),
        }
    }

    /// Inside `"..."`: a doubled `""` escapes the quote.
    fn scan_double_quote(&mut self) {
        match self.bytes[self.index] {
            b'"' if self.byte_at(1) == Some(b'"') => self.copy(2),
            b'"' => {
                self.copy(1);
                self.mode = ScanMode::Sql;
            }
            _ => self.copy_char(),
        }
    }

    /// Inside `$tag$...$tag$`: only the same tag closes it.
    fn scan_dollar_quote(&mut self, tag_start: usize, tag_length: usize) {
        let tag = &self.text[tag_start..tag_start + tag_length];
        if self.text[self.index..].starts_with(tag) {
            self.copy(tag_length);
            self.mode = ScanMode::Sql;
        } else {
            self.copy_char();
        }
    }

    /// Inside `/* ... */`, which nest; the whole comment becomes one space.
    fn scan_block_comment(&mut self, depth: usize) {
        let next = self.byte_at(1);
        match self.bytes[self.index] {
            b'/' if next == Some(b'*') => {
                self.mode = ScanMode::BlockComment { depth: depth + 1 };
                self.index += 2;
            }
            b'*' if next == Some(b'/') => {
                if depth == 1 {
                    self.mode = ScanMode::Sql;
                    self.builder.push_sql(" ", self.line);
                } else {
                    self.mode = ScanMode::BlockComment { depth: depth - 1 };
                }
                self.index += 2;
            }
            _ => self.index += char_length(self.text, self.index),
        }
    }

    /// At the end of the text: an error if a quote or comment is still open.
    fn check_closed(&self) -> Result<(), ScriptError> {
        let problem = match self.mode {
            ScanMode::Sql => return Ok(()),
            ScanMode::SingleQuote { .. } => "unterminated quoted string: the ' opened on this \
                 line is never closed; close it with a matching '"
                .to_string(),
            ScanMode::DoubleQuote => "unterminated quoted identifier: the \" opened on this \
                 line is never closed; close it with a matching \""
                .to_string(),
            ScanMode::DollarQuote {
                tag_start,
                tag_length,
            } => {
                let tag = &self.text[tag_start..tag_start + tag_length];
                format!(
                    "unterminated dollar-quoted string: the {tag} opened on this line is never \
                     closed; close it with a matching {tag}"
                )
            }
            ScanMode::BlockComment { .. } => {
                "unterminated /* comment opened on this line; close it with */".to_string()
            }
        };
        Err(self.builder.error(self.mode_line, problem))
    }
}

/// Index of the newline ending the line that contains `index`, or the text length.
fn end_of_line(bytes: &[u8], index: usize) -> usize {
    bytes[index..]
        .iter()
        .position(|&byte| byte == b'\n')
        .map_or(bytes.len(), |offset| index + offset)
}

/// Byte length of the character starting at `index`.
fn char_length(text: &str, index: usize) -> usize {
    text[index..].chars().next().map_or(1, char::len_utf8)
}

/// Bytes that can be part of an SQL identifier (including `$` and any non-ASCII byte).
fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$' || byte >= 0x80
}

/// Whether the `'` at `index` opens an `E'...'` escape string.
fn is_escape_string_prefix(bytes: &[u8], index: usize) -> bool {
    index > 0
        && matches!(bytes[index - 1], b'E' | b'e')
        && (index < 2 || !is_identifier_byte(bytes[index - 2]))
}

/// Length of a dollar-quote opening tag (`$$` or `$tag$`) at `index`, if there is one.
fn dollar_tag_length(bytes: &[u8], index: usize) -> Option<usize> {
    let first = *bytes.get(index + 1)?;
    if first == b'$' {
        return Some(2);
    }
    if !(first.is_ascii_alphabetic() || first == b'_' || first >= 0x80) {
        return None;
    }
    let mut end = index + 2;
    while end < bytes.len()
        && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_' || bytes[end] >= 0x80)
    {
        end += 1;
    }
    if bytes.get(end) == Some(&b'$') {
        Some(end + 1 - index)
    } else {
        None
    }
}

/// End of a variable name (a letter, `_` or non-ASCII byte, then those or
/// digits) starting at `start`; `start` if none.
fn variable_name_end(bytes: &[u8], start: usize) -> usize {
    match bytes.get(start) {
        Some(first) if first.is_ascii_alphabetic() || *first == b'_' || *first >= 0x80 => {}
        _ => return start,
    }
    let mut end = start + 1;
    while end < bytes.len()
        && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_' || bytes[end] >= 0x80)
    {
        end += 1;
    }
    end
}

/// The name of a `:{?name}` test at `index`: its start and end (the `}` is at the end).
fn defined_test(bytes: &[u8], index: usize) -> Option<(usize, usize)> {
    if !bytes[index..].starts_with(b":{?") {
        return None;
    }
    let name_start = index + 3;
    let name_end = variable_name_end(bytes, name_start);
    (name_end > name_start && bytes.get(name_end) == Some(&b'}')).then_some((name_start, name_end))
}

/// Collects a meta-command starting at `start` (just after the backslash) up to the end of
/// its line, joining following lines while a line ends with a backslash. Returns the command
/// text, the index of the newline (or text end) that ends it, and the number of newlines
/// joined.
fn meta_command_text(text: &str, start: usize) -> (String, usize, usize) {
    let bytes = text.as_bytes();
    let mut command = String::new();
    let mut position = start;
    let mut joined_lines = 0;
    loop {
        let end = end_of_line(bytes, position);
        let piece = text[position..end].trim_end_matches('\r');
        match piece.strip_suffix('\\') {
            Some(before_backslash) if end < bytes.len() => {
                command.push_str(before_backslash);
                command.push(' ');
                joined_lines += 1;
                position = end + 1;
            }
            _ => {
                command.push_str(piece);
                return (command, end, joined_lines);
            }
        }
    }
}
