//! Assembling a [`Script`] from what the scanner finds: SQL statements cut at
//! their variables, and meta-commands (parsed in `meta`).
//!
//! The builder owns the variable slots, so a name is resolved once here, and
//! it checks the structure pgbench checks before running: every `\if` has its
//! `\endif`, `\gset` follows an SQL command, pipelines open and close.

use std::collections::HashMap;

use super::{
    PREDEFINED, Param, ResultTarget, Script, ScriptCommand, ScriptError, SqlCommand, SqlPiece,
};

/// An `\if` whose `\endif` has not come yet.
struct OpenIf {
    /// Index of the `\if`, then of each `\elif` and the `\else`, in order.
    branches: Vec<usize>,
    /// Line of the `\if`, for the error when it is never closed.
    line: usize,
    seen_else: bool,
}

/// Builds a [`Script`] while the scanner walks the text.
pub(super) struct ScriptBuilder {
    source: String,
    lines: Vec<String>,
    slot_by_name: HashMap<String, usize>,
    variable_names: Vec<String>,
    pub(super) commands: Vec<ScriptCommand>,
    /// The SQL statement being collected.
    pieces: Vec<SqlPiece>,
    compound: bool,
    /// Line its first character is on.
    statement_line: usize,
    open_ifs: Vec<OpenIf>,
    /// Line of the `\startpipeline` of the pipeline open at this point of the text.
    pub(super) open_pipeline: Option<usize>,
}

impl ScriptBuilder {
    /// An empty script whose first slots are the predefined variables.
    pub(super) fn new(source: &str, text: &str) -> ScriptBuilder {
        let mut builder = ScriptBuilder {
            source: source.to_string(),
            lines: text.lines().map(str::to_string).collect(),
            slot_by_name: HashMap::new(),
            variable_names: Vec::new(),
            commands: Vec::new(),
            pieces: Vec::new(),
            compound: false,
            statement_line: 0,
            open_ifs: Vec::new(),
            open_pipeline: None,
        };
        for name in PREDEFINED {
            builder.slot_of(name);
        }
        builder
    }

    /// A [`ScriptError`] at `line` (and `column`) of this script. Problems quote the
    /// script's text; a control character in it is shown escaped, so the error stays one line.
    pub(super) fn error_at(
        &self,
        line: usize,
        column: Option<usize>,
        problem: impl Into<String>,
    ) -> ScriptError {
        let problem: String = problem.into();
        ScriptError {
            script: self.source.clone(),
            line,
            column,
            problem: problem
                .chars()
                .map(|character| match character.is_control() {
                    true => character.escape_default().to_string(),
                    false => character.to_string(),
                })
                .collect(),
        }
    }

    /// A [`ScriptError`] at `line`, without a column.
    pub(super) fn error(&self, line: usize, problem: impl Into<String>) -> ScriptError {
        self.error_at(line, None, problem)
    }

    /// The slot of `name`, making one if the variable is new.
    pub(super) fn slot_of(&mut self, name: &str) -> usize {
        if let Some(slot) = self.slot_by_name.get(name) {
            return *slot;
        }
        let slot = self.variable_names.len();
        self.variable_names.push(name.to_string());
        self.slot_by_name.insert(name.to_string(), slot);
        slot
    }

    /// Appends SQL text to the current statement; leading whitespace is dropped.
    pub(super) fn push_sql(&mut self, piece: &str, line: usize) {
        if self.pieces.is_empty() {
            let trimmed = piece.trim_start();
            if trimmed.is_empty() {
                return;
            }
            self.statement_line = line;
            self.pieces.push(SqlPiece::Text(trimmed.to_string()));
            return;
        }
        match self.pieces.last_mut() {
            Some(SqlPiece::Text(text)) => text.push_str(piece),
            _ => self.pieces.push(SqlPiece::Text(piece.to_string())),
        }
    }

    /// Appends `:name` (or `:{?name}` when `defined_test`) to the current statement.
    pub(super) fn push_sql_variable(
        &mut self,
        name: &str,
        quoted: bool,
        defined_test: bool,
        line: usize,
    ) {
        if self.pieces.is_empty() {
            self.statement_line = line;
        }
        let slot = self.slot_of(name);
        self.pieces.push(match defined_test {
            true => SqlPiece::Defined {
                slot,
                name: name.to_string(),
                quoted,
            },
            false => SqlPiece::Variable {
                slot,
                name: name.to_string(),
                quoted,
            },
        });
    }

    /// `\;`: the statement goes on after a `;` (several statements in one command).
    pub(super) fn push_compound_separator(&mut self, line: usize) {
        self.push_sql(";", line);
        self.compound = true;
    }

    /// Ends the current SQL statement, if it has any text.
    pub(super) fn finish_statement(&mut self) -> Result<(), ScriptError> {
        let mut pieces = std::mem::take(&mut self.pieces);
        let compound = std::mem::replace(&mut self.compound, false);
        if let Some(SqlPiece::Text(last)) = pieces.last_mut() {
            last.truncate(last.trim_end().len());
        }
        let is_blank = pieces
            .iter()
            .all(|piece| matches!(piece, SqlPiece::Text(text) if text.trim().is_empty()));
        if is_blank {
            return Ok(());
        }
        let line = self.statement_line;
        if compound && self.open_pipeline.is_some() {
            return Err(self.error(
                line,
                "a compound statement (\\;) cannot run inside a pipeline: it goes as one \
                 simple query; end the pipeline before it or split it into statements",
            ));
        }
        let (sql, params) = numbered_sql(&pieces);
        let number = self
            .commands
            .iter()
            .filter(|command| matches!(command, ScriptCommand::Sql(_)))
            .count();
        self.commands.push(ScriptCommand::Sql(SqlCommand {
            sql,
            params,
            pieces,
            compound,
            results: None,
            line,
            number,
        }));
        Ok(())
    }

    /// `\gset`/`\aset`: the previous command, which must be SQL without one, stores its results.
    pub(super) fn attach_results(
        &mut self,
        target: ResultTarget,
        line: usize,
    ) -> Result<(), ScriptError> {
        let word = if target.all_queries { "aset" } else { "gset" };
        if self.open_pipeline.is_some() {
            return Err(self.error(
                line,
                format!(
                    "\\{word} is not allowed in pipeline mode: the results are not there yet \
                     when the next command runs; end the pipeline before the query"
                ),
            ));
        }
        match self.commands.last_mut() {
            Some(ScriptCommand::Sql(sql)) if sql.results.is_none() => {
                sql.results = Some(target);
                Ok(())
            }
            _ => Err(self.error(
                line,
                format!(
                    "\\{word} must follow an SQL command; write it at the end of the query, \
                     e.g. SELECT abalance FROM pgbench_accounts WHERE aid = :aid \\{word}"
                ),
            )),
        }
    }

    /// Opens an `\if` at the command about to be pushed.
    pub(super) fn open_if(&mut self, line: usize) {
        self.open_ifs.push(OpenIf {
            branches: vec![self.commands.len()],
            line,
            seen_else: false,
        });
    }

    /// An `\elif` (`is_else` false) or `\else` at the command about to be
    /// pushed: the previous branch of the innermost `\if` jumps here when false.
    pub(super) fn add_branch(&mut self, is_else: bool, line: usize) -> Result<(), ScriptError> {
        let word = if is_else { "\\else" } else { "\\elif" };
        let index = self.commands.len();
        let Some(open) = self.open_ifs.last_mut() else {
            return Err(self.error(line, format!("{word} without matching \\if")));
        };
        if open.seen_else {
            return Err(self.error(line, format!("{word} after \\else")));
        }
        open.seen_else = is_else;
        let previous = *open.branches.last().unwrap_or(&index);
        open.branches.push(index);
        self.set_next_branch(previous, index);
        Ok(())
    }

    /// `\endif` at the command about to be pushed: closes the innermost `\if`.
    pub(super) fn close_if(&mut self, line: usize) -> Result<(), ScriptError> {
        let end = self.commands.len();
        let Some(open) = self.open_ifs.pop() else {
            return Err(self.error(line, "\\endif without matching \\if"));
        };
        if let Some(last) = open.branches.last() {
            self.set_next_branch(*last, end);
        }
        for branch in &open.branches[1..] {
            match &mut self.commands[*branch] {
                ScriptCommand::Elif { end: target, .. }
                | ScriptCommand::Else { end: target, .. } => {
                    *target = end;
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn set_next_branch(&mut self, branch: usize, target: usize) {
        match &mut self.commands[branch] {
            ScriptCommand::If { next_branch, .. } | ScriptCommand::Elif { next_branch, .. } => {
                *next_branch = target;
            }
            _ => {}
        }
    }

    pub(super) fn finish(self) -> Result<Script, ScriptError> {
        if let Some(open) = self.open_ifs.last() {
            return Err(self.error(open.line, "\\if without matching \\endif"));
        }
        if let Some(line) = self.open_pipeline {
            return Err(self.error(
                line,
                "the pipeline started here is still open at the end of the script; end it \
                 with \\endpipeline",
            ));
        }
        if self.commands.is_empty() {
            return Err(self.error(
                1,
                "script has no commands; add at least one SQL statement, \\set or \\sleep",
            ));
        }
        Ok(Script {
            name: self.source,
            commands: self.commands,
            variable_names: self.variable_names,
            slot_by_name: self.slot_by_name,
            lines: self.lines,
        })
    }
}

/// The statement with `$1`, `$2`, ... for its unquoted variables, one
/// number per use as pgbench numbers them (so the server sees the same
/// statement text from both), and what feeds each number.
fn numbered_sql(pieces: &[SqlPiece]) -> (String, Vec<Param>) {
    let mut sql = String::new();
    let mut params: Vec<Param> = Vec::new();
    for piece in pieces {
        match piece {
            SqlPiece::Text(text) => sql.push_str(text),
            SqlPiece::Variable {
                name, quoted: true, ..
            } => {
                sql.push(':');
                sql.push_str(name);
            }
            SqlPiece::Variable { slot, .. } => {
                params.push(Param::Value { slot: *slot });
                sql.push_str(&format!("${}", params.len()));
            }
            SqlPiece::Defined {
                name, quoted: true, ..
            } => {
                sql.push_str(":{?");
                sql.push_str(name);
                sql.push('}');
            }
            SqlPiece::Defined { slot, .. } => {
                params.push(Param::Defined { slot: *slot });
                sql.push_str(&format!("${}::boolean", params.len()));
            }
        }
    }
    (sql, params)
}
