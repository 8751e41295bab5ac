//! Stepping through one transaction of a script. [`Script::step`] runs the
//! commands that need nothing but the client's variables (`\set`, the `\if`
//! family) and stops at the first one that needs the caller (SQL, a sleep, a
//! shell command, a pipeline boundary), which it hands back as a [`Step`].
//! A script without `\if` costs one match per command, as a plain loop would.

use super::eval::{EvalError, Evaluator};
use super::prng::Prng;
use super::value::{Scalar, Value, Vars};
use super::{Script, ScriptCommand, ShellWord, SleepAmount, SqlCommand};

/// Longest command line `\shell` runs, as in pgbench.
const SHELL_COMMAND_MAX_BYTES: usize = 255;

/// Where a transaction is in its script; a new one starts at the first command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursor {
    next: usize,
}

/// What the caller must do next in a transaction.
#[derive(Debug, PartialEq)]
pub enum Step<'s> {
    /// Run this SQL command (and store its results if it has a target).
    Sql(&'s SqlCommand),
    /// Pause this long.
    Sleep {
        duration_us: u64,
    },
    /// Run this command line with `/bin/sh -c`; with `assign`, its output's
    /// integer goes into that slot (`\setshell`).
    Shell {
        command: String,
        assign: Option<usize>,
        line: usize,
    },
    /// `\startpipeline`, `\syncpipeline`, `\endpipeline`.
    StartPipeline,
    SyncPipeline,
    EndPipeline,
    /// The transaction's script is done.
    Done,
}

/// A command that failed at run time: where, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptFailure {
    /// The 1-based script line of the command.
    pub line: usize,
    pub error: EvalError,
}

impl Script {
    /// Runs commands from `cursor` until one needs the caller, and returns it.
    pub fn step<'s>(
        &'s self,
        cursor: &mut Cursor,
        vars: &mut Vars,
        prng: &mut Prng,
    ) -> Result<Step<'s>, ScriptFailure> {
        loop {
            let index = cursor.next;
            let Some(command) = self.commands.get(index) else {
                return Ok(Step::Done);
            };
            cursor.next = index + 1;
            let fail = |error| ScriptFailure {
                line: command.line(),
                error,
            };
            match command {
                ScriptCommand::Sql(sql) => return Ok(Step::Sql(sql)),
                ScriptCommand::Set { slot, expr, .. } => {
                    let value = self.evaluate(expr, index, vars, prng).map_err(fail)?;
                    vars.set(*slot, Value::Scalar(value));
                }
                ScriptCommand::Sleep {
                    duration, unit_us, ..
                } => {
                    let units = sleep_units(duration, vars).map_err(fail)?;
                    let duration_us = u64::try_from(units).unwrap_or(0).saturating_mul(*unit_us);
                    return Ok(Step::Sleep { duration_us });
                }
                ScriptCommand::If {
                    expr, next_branch, ..
                } => {
                    if !self
                        .evaluate(expr, index, vars, prng)
                        .map_err(fail)?
                        .truth()
                    {
                        cursor.next = self.enter_branch(*next_branch, vars, prng)?;
                    }
                }
                // Reached after a branch that ran: skip to the end of the \if.
                ScriptCommand::Elif { end, .. } | ScriptCommand::Else { end, .. } => {
                    cursor.next = end + 1
                }
                ScriptCommand::Endif { .. } => {}
                ScriptCommand::Shell {
                    assign,
                    words,
                    line,
                } => {
                    let command = shell_command_line(words, vars).map_err(fail)?;
                    return Ok(Step::Shell {
                        command,
                        assign: *assign,
                        line: *line,
                    });
                }
                ScriptCommand::StartPipeline { .. } => return Ok(Step::StartPipeline),
                ScriptCommand::SyncPipeline { .. } => return Ok(Step::SyncPipeline),
                ScriptCommand::EndPipeline { .. } => return Ok(Step::EndPipeline),
            }
        }
    }

    /// Where to go when the branch before `target` was not taken: into the
    /// `\elif` at `target` if its condition holds (else on to its next
    /// branch), into an `\else`, or past an `\endif`.
    fn enter_branch(
        &self,
        mut target: usize,
        vars: &Vars,
        prng: &mut Prng,
    ) -> Result<usize, ScriptFailure> {
        loop {
            match &self.commands[target] {
                ScriptCommand::Elif {
                    expr,
                    next_branch,
                    line,
                    ..
                } => {
                    let value = self
                        .evaluate(expr, target, vars, prng)
                        .map_err(|error| ScriptFailure { line: *line, error })?;
                    if value.truth() {
                        return Ok(target + 1);
                    }
                    target = *next_branch;
                }
                _ => return Ok(target + 1),
            }
        }
    }

    fn evaluate(
        &self,
        expr: &super::Expr,
        index: usize,
        vars: &Vars,
        prng: &mut Prng,
    ) -> Result<Scalar, EvalError> {
        let place = || format!("script={},command={}", self.name, index + 1);
        Evaluator {
            vars,
            prng,
            debug_place: &place,
        }
        .eval(expr)
    }

    /// The message of a runtime failure: the place in double quotes (kept
    /// whole when failures are grouped), the command, and the problem.
    pub fn failure_message(&self, failure: &ScriptFailure) -> String {
        format!(
            "\"{}:{}\" {}: {}",
            self.name,
            failure.line,
            self.line_text(failure.line),
            failure.error
        )
    }
}

/// The number of units of a `\sleep`: a literal, or a variable read as C's
/// `atoi` reads its text (pgbench's rule), which must start with a number.
fn sleep_units(duration: &SleepAmount, vars: &Vars) -> Result<i64, EvalError> {
    let (slot, name) = match duration {
        SleepAmount::Fixed(units) => return Ok(*units),
        SleepAmount::Variable { slot, name } => (*slot, name),
    };
    let Some(value) = vars.get(slot) else {
        return Err(EvalError::UndefinedVariable { name: name.clone() });
    };
    let text = value.to_param_string();
    let trimmed = text.trim_start();
    let (negative, digits) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let digits_end = digits
        .find(|character: char| !character.is_ascii_digit())
        .unwrap_or(digits.len());
    let units: i64 = digits[..digits_end].parse().unwrap_or(0);
    if units == 0 && !text.starts_with(|character: char| character.is_ascii_digit()) {
        return Err(EvalError::SleepTime {
            name: name.clone(),
            value: text,
        });
    }
    Ok(if negative { -units } else { units })
}

/// The command line of a `\shell`: the words joined with spaces, variables substituted.
fn shell_command_line(words: &[ShellWord], vars: &Vars) -> Result<String, EvalError> {
    let mut command = String::new();
    for word in words {
        if !command.is_empty() {
            command.push(' ');
        }
        match word {
            ShellWord::Text(text) => command.push_str(text),
            ShellWord::Variable { slot, name } => match vars.get(*slot) {
                Some(value) => value.write_param(&mut command),
                None => {
                    return Err(EvalError::Shell(format!("undefined variable \":{name}\"")));
                }
            },
        }
        if command.len() >= SHELL_COMMAND_MAX_BYTES {
            return Err(EvalError::Shell("shell command is too long".to_string()));
        }
    }
    Ok(command)
}
