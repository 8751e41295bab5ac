//! Assembling a [`Script`] from what the scanner finds: SQL statements with their
//! parameters, and the `\set` and `\sleep` meta-commands.
//!
//! The builder owns the variable slots, so a name is resolved once here: a `:name` used
//! before anything assigns it is an error now, not a surprise at run time.

use std::collections::HashMap;

use super::expression::parse_expression;
use super::scanner::is_valid_variable_name;
use super::{Command, Script, ScriptError, SleepAmount};

const MICROSECONDS_PER_MILLISECOND: u64 = 1_000;
const MICROSECONDS_PER_SECOND: u64 = 1_000_000;

/// Builds a [`Script`] while the scanner walks the text.
pub(super) struct ScriptBuilder {
    source: String,
    slot_by_name: HashMap<String, usize>,
    variable_names: Vec<String>,
    commands: Vec<Command>,
    /// Text of the SQL statement being collected (no leading whitespace).
    statement_sql: String,
    /// Slots of its parameters so far.
    statement_params: Vec<usize>,
    /// Line its first character is on.
    statement_line: usize,
}

impl ScriptBuilder {
    /// An empty script whose first slots are `client_id`, `scale` and the outside variables.
    pub(super) fn new(source: &str, outside_variables: &[String]) -> ScriptBuilder {
        let mut builder = ScriptBuilder {
            source: source.to_string(),
            slot_by_name: HashMap::new(),
            variable_names: Vec::new(),
            commands: Vec::new(),
            statement_sql: String::new(),
            statement_params: Vec::new(),
            statement_line: 0,
        };
        builder.slot_for_assignment("client_id");
        builder.slot_for_assignment("scale");
        for name in outside_variables {
            builder.slot_for_assignment(name);
        }
        builder
    }

    /// A [`ScriptError`] at `line` of this script. Problems quote the script's text; a
    /// control character in it (a stray `\r`) is shown escaped, so the error stays one line.
    pub(super) fn error(&self, line: usize, problem: impl Into<String>) -> ScriptError {
        let problem: String = problem.into();
        ScriptError {
            script: self.source.clone(),
            line,
            problem: problem
                .chars()
                .map(|character| match character.is_control() {
                    true => character.escape_default().to_string(),
                    false => character.to_string(),
                })
                .collect(),
        }
    }

    /// The slot of `name`, making one if the variable is new.
    fn slot_for_assignment(&mut self, name: &str) -> usize {
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
        if self.statement_sql.is_empty() {
            let trimmed = piece.trim_start();
            if trimmed.is_empty() {
                return;
            }
            self.statement_line = line;
            self.statement_sql.push_str(trimmed);
        } else {
            self.statement_sql.push_str(piece);
        }
    }

    /// Appends the `$n` placeholder of variable `name` to the current statement; a
    /// variable used twice in one statement keeps its first number.
    pub(super) fn push_sql_variable(&mut self, name: &str, line: usize) -> Result<(), ScriptError> {
        let slot = match self.slot_by_name.get(name) {
            Some(slot) => *slot,
            None => {
                return Err(self.error(
                    line,
                    format!(
                        "undefined variable :{name} in SQL; assign it with \\set earlier in the \
                         script or define it outside the script (like pgbench -D {name}=value); \
                         predefined are client_id and scale; if the colon is not meant as a \
                         variable, put a space after it"
                    ),
                ));
            }
        };
        let number = match self
            .statement_params
            .iter()
            .position(|known| *known == slot)
        {
            Some(position) => position + 1,
            None => {
                self.statement_params.push(slot);
                self.statement_params.len()
            }
        };
        self.push_sql(&format!("${number}"), line);
        Ok(())
    }

    /// Ends the current SQL statement, if it has any text.
    pub(super) fn finish_statement(&mut self) {
        let sql = self.statement_sql.trim_end().to_string();
        let params = std::mem::take(&mut self.statement_params);
        self.statement_sql.clear();
        if sql.is_empty() {
            return;
        }
        self.commands.push(Command::Sql {
            sql,
            params,
            line: self.statement_line,
        });
    }

    /// Handles a meta-command; `text` is what follows the backslash.
    pub(super) fn meta_command(&mut self, text: &str, line: usize) -> Result<(), ScriptError> {
        let text = match text.find("--") {
            Some(comment_start) => &text[..comment_start],
            None => text,
        };
        let text = text.trim();
        let (word, arguments) = match text.find(char::is_whitespace) {
            Some(space) => (&text[..space], text[space..].trim_start()),
            None => (text, ""),
        };
        match word.to_ascii_lowercase().as_str() {
            "set" => self.set_command(arguments, line),
            "sleep" => self.sleep_command(arguments, line),
            "" => Err(self.error(
                line,
                "backslash without a meta-command; stallbench supports \\set and \\sleep",
            )),
            "setrandom" => Err(self.error(
                line,
                "unsupported meta-command \\setrandom; write \\set name random(lb, ub) instead \
                 (or random_exponential / random_gaussian)",
            )),
            _ => Err(self.error(
                line,
                format!("unsupported meta-command \\{word}; stallbench supports \\set and \\sleep"),
            )),
        }
    }

    fn set_command(&mut self, arguments: &str, line: usize) -> Result<(), ScriptError> {
        let (name, expression) = match arguments.find(char::is_whitespace) {
            Some(space) => (&arguments[..space], arguments[space..].trim()),
            None => (arguments, ""),
        };
        if name.is_empty() {
            return Err(self.error(
                line,
                "bad \\set syntax: missing variable name and expression; write \\set name \
                 expression, e.g. \\set aid random(1, 100000 * :scale)",
            ));
        }
        if !is_valid_variable_name(name) {
            let fix = match name.strip_prefix(':') {
                Some(bare) => format!("write \\set {bare} ... without the colon"),
                None => "names are letters, digits and underscores, not starting with a digit"
                    .to_string(),
            };
            return Err(self.error(
                line,
                format!("bad \\set syntax: invalid variable name \"{name}\"; {fix}"),
            ));
        }
        if expression.is_empty() {
            return Err(self.error(
                line,
                format!(
                    "bad \\set syntax: missing expression; write \\set {name} expression, e.g. \
                     \\set {name} random(1, 1000)"
                ),
            ));
        }
        let expr = parse_expression(expression, &self.slot_by_name)
            .map_err(|problem| self.error(line, problem))?;
        let slot = self.slot_for_assignment(name);
        self.commands.push(Command::Set { slot, expr, line });
        Ok(())
    }

    fn sleep_command(&mut self, arguments: &str, line: usize) -> Result<(), ScriptError> {
        let words: Vec<&str> = arguments.split_whitespace().collect();
        let usage = "write \\sleep number [us|ms|s], e.g. \\sleep 10 ms or \\sleep :delay us";
        if words.is_empty() {
            return Err(self.error(
                line,
                format!("bad \\sleep syntax: missing duration; {usage}"),
            ));
        }
        if words.len() > 2 {
            return Err(self.error(
                line,
                format!("bad \\sleep syntax: too many arguments; {usage}"),
            ));
        }
        let unit_us = match words.get(1).map(|unit| unit.to_ascii_lowercase()) {
            None => MICROSECONDS_PER_SECOND,
            Some(unit) => match unit.as_str() {
                "us" => 1,
                "ms" => MICROSECONDS_PER_MILLISECOND,
                "s" => MICROSECONDS_PER_SECOND,
                _ => {
                    return Err(self.error(
                        line,
                        format!(
                            "bad \\sleep syntax: unknown unit \"{}\"; use us, ms or s",
                            words[1]
                        ),
                    ));
                }
            },
        };
        let amount_text = words[0];
        let duration = if let Some(name) = amount_text.strip_prefix(':') {
            match self.slot_by_name.get(name) {
                Some(slot) => SleepAmount::Variable {
                    slot: *slot,
                    name: name.to_string(),
                },
                None => {
                    return Err(self.error(
                        line,
                        format!(
                            "undefined variable :{name} in \\sleep; assign it with \\set earlier \
                             in the script or define it outside the script (like pgbench -D \
                             {name}=value)"
                        ),
                    ));
                }
            }
        } else {
            let amount = match amount_text.parse::<u64>() {
                Ok(amount) => amount,
                Err(_) => {
                    return Err(self.error(
                        line,
                        format!(
                            "bad \\sleep syntax: duration \"{amount_text}\" is not a \
                             non-negative integer or :variable; {usage} (for fractions use a \
                             smaller unit)"
                        ),
                    ));
                }
            };
            if amount.checked_mul(unit_us).is_none() {
                return Err(self.error(line, "\\sleep duration is too long"));
            }
            SleepAmount::Fixed(amount)
        };
        self.commands.push(Command::Sleep {
            duration,
            unit_us,
            line,
        });
        Ok(())
    }

    pub(super) fn finish(self) -> Result<Script, ScriptError> {
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
        })
    }
}
