//! pgbench's script language (the `pgbench -f file` format, pgbench 18):
//! parsed once, run cheaply, with pgbench's meaning.
//!
//! A script is parsed once with [`parse`] into a [`Script`]: [`ScriptCommand`]s whose
//! variable references are resolved to slots and whose `\if` branches know
//! where they jump. A client then runs one transaction by calling
//! [`Script::step`] until it says [`Step::Done`]: `step` runs the commands that
//! need nothing from outside (`\set`, `\if`, ...) itself and hands back the
//! ones that do (SQL, `\sleep`, `\shell`, pipelines), so the load workers and
//! the application pool share one interpreter and each keeps only its I/O.
//!
//! The work is split by job: `scanner` splits the text into SQL and
//! meta-commands, `builder` and `meta` turn them into commands, `parser` reads
//! expressions into `expression`'s tree, `eval` and `functions` evaluate them
//! (`prng` is PostgreSQL's generator), `value` holds variables, `step` steps
//! through a transaction, `result_sets` stores `\gset`/`\aset` rows, `shell` runs
//! `\shell`, and `builtin` holds pgbench's built-in scripts.
//!
//! What is supported and how it differs from pgbench is in `docs/scripts.md`.

mod builder;
pub mod builtin;
mod eval;
mod expression;
mod functions;
mod meta;
mod parser;
mod prng;
mod result_sets;
mod scanner;
pub mod shell;
mod step;
mod value;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_expressions;

use std::collections::HashMap;

use thiserror::Error;

use builder::ScriptBuilder;
pub use eval::{EvalError, Evaluator};
pub use expression::{Expr, Function};
pub use prng::{Prng, RandomSeeds};
pub use result_sets::ResultSet;
pub use step::{Cursor, ScriptFailure, Step};
pub use value::{Scalar, Value, Vars};

/// A problem found while parsing a script. Displays as
/// `source line N[ column C]: problem`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{script} line {line}{}: {problem}", column.map(|column| format!(" column {column}")).unwrap_or_default())]
pub struct ScriptError {
    /// The script's name: its file path or an inline name.
    pub script: String,
    /// 1-based line number of the problem.
    pub line: usize,
    /// 1-based column, when the problem has a precise place.
    pub column: Option<usize>,
    /// What is wrong, and how to fix it where there is a fix.
    pub problem: String,
}

/// Parses a script. `source` names it in errors (file path or "inline script N of workload
/// W"). A variable is an error only when a command that reads it runs before anything set
/// it, as in pgbench: `\gset` makes variables from column names the parser cannot know.
pub fn parse(source: &str, text: &str) -> Result<Script, ScriptError> {
    let mut builder = ScriptBuilder::new(source, text);
    scanner::scan(text, &mut builder)?;
    builder.finish()
}

/// The predefined variables, in slot order: `client_id`, `scale`,
/// `default_seed`, `random_seed`.
pub const PREDEFINED: [&str; 4] = ["client_id", "scale", "default_seed", "random_seed"];

/// A parsed script, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The source name given to [`parse`] (file path or inline name).
    pub name: String,
    /// The commands, in script order.
    pub commands: Vec<ScriptCommand>,
    /// Variable name of each slot.
    variable_names: Vec<String>,
    /// The slot of each variable name.
    slot_by_name: HashMap<String, usize>,
    /// The script's lines, for runtime errors that quote the command.
    lines: Vec<String>,
}

/// The values of the automatic variables of one client (`:scale` is 1
/// unless given from outside, as `--set scale=N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Automatic {
    pub client_id: u32,
    pub default_seed: i64,
    pub random_seed: i64,
}

impl Script {
    /// Fresh variables for one client: the automatic ones, then the outside
    /// `name=value` pairs as text (an outside value overrides an automatic
    /// one, as `pgbench -D` does). Pairs whose name the script never uses are
    /// dropped.
    pub fn new_vars(&self, automatic: Automatic, outside: &[(String, String)]) -> Vars {
        let mut vars = Vars::empty(self.variable_names.len());
        vars.set(0, Value::int(i64::from(automatic.client_id)));
        vars.set(1, Value::int(1));
        vars.set(2, Value::int(automatic.default_seed));
        vars.set(3, Value::int(automatic.random_seed));
        for (name, text) in outside {
            if let Some(slot) = self.variable_slot(name) {
                vars.set(slot, Value::Text(text.clone()));
            }
        }
        vars
    }

    /// Whether the script opens its own transaction (a statement starting with
    /// BEGIN or START), so that a failure in it leaves one to roll back.
    pub fn opens_transaction(&self) -> bool {
        self.sql_commands().any(|sql| {
            let first_word = sql.sql.split_whitespace().next().unwrap_or("");
            first_word.eq_ignore_ascii_case("BEGIN") || first_word.eq_ignore_ascii_case("START")
        })
    }

    /// The slot of the variable called `name`, if the script has one.
    pub fn variable_slot(&self, name: &str) -> Option<usize> {
        self.slot_by_name.get(name).copied()
    }

    /// The SQL commands, in script order.
    pub fn sql_commands(&self) -> impl Iterator<Item = &SqlCommand> {
        self.commands.iter().filter_map(|command| match command {
            ScriptCommand::Sql(sql) => Some(sql),
            _ => None,
        })
    }

    /// Whether any SQL command stores results (`\gset`, `\aset`).
    pub fn stores_results(&self) -> bool {
        self.sql_commands().any(|sql| sql.results.is_some())
    }

    /// The first `\shell`/`\setshell`, by line, if the script has one.
    pub fn first_shell_line(&self) -> Option<usize> {
        self.commands.iter().find_map(|command| match command {
            ScriptCommand::Shell { line, .. } => Some(*line),
            _ => None,
        })
    }

    /// The first pipeline command, by line, if the script has one.
    pub fn first_pipeline_line(&self) -> Option<usize> {
        self.commands.iter().find_map(|command| match command {
            ScriptCommand::StartPipeline { line } => Some(*line),
            _ => None,
        })
    }

    /// Line `line` of the script (1-based), trimmed; empty past the end.
    pub fn line_text(&self, line: usize) -> &str {
        self.lines
            .get(line.wrapping_sub(1))
            .map_or("", |text| text.trim())
    }
}

/// One script command.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptCommand {
    /// `\set name expr`.
    Set {
        slot: usize,
        expr: Expr,
        line: usize,
    },
    /// `\sleep n [us|ms|s]`.
    Sleep {
        duration: SleepAmount,
        /// Microseconds per unit (1, 1000 or 1000000).
        unit_us: u64,
        line: usize,
    },
    /// An SQL statement (or a compound of several, joined with `\;`).
    Sql(SqlCommand),
    /// `\if expr`: false jumps to `next_branch` (an `\elif`, `\else` or `\endif`).
    If {
        expr: Expr,
        next_branch: usize,
        line: usize,
    },
    /// `\elif expr`: reached after a true branch, jumps past `end`; reached by
    /// a jump, false jumps to `next_branch`.
    Elif {
        expr: Expr,
        next_branch: usize,
        end: usize,
        line: usize,
    },
    /// `\else`: reached after a true branch, jumps past `end`.
    Else { end: usize, line: usize },
    /// `\endif`.
    Endif { line: usize },
    /// `\shell words...` or `\setshell name words...` (`assign`: the slot set).
    Shell {
        assign: Option<usize>,
        words: Vec<ShellWord>,
        line: usize,
    },
    /// `\startpipeline`.
    StartPipeline { line: usize },
    /// `\syncpipeline`.
    SyncPipeline { line: usize },
    /// `\endpipeline`.
    EndPipeline { line: usize },
}

impl ScriptCommand {
    /// The 1-based script line of the command.
    pub fn line(&self) -> usize {
        match self {
            ScriptCommand::Set { line, .. }
            | ScriptCommand::Sleep { line, .. }
            | ScriptCommand::If { line, .. }
            | ScriptCommand::Elif { line, .. }
            | ScriptCommand::Else { line, .. }
            | ScriptCommand::Endif { line }
            | ScriptCommand::Shell { line, .. }
            | ScriptCommand::StartPipeline { line }
            | ScriptCommand::SyncPipeline { line }
            | ScriptCommand::EndPipeline { line } => *line,
            ScriptCommand::Sql(sql) => sql.line,
        }
    }
}

/// An SQL command: the text to prepare with its parameters, and the pieces to
/// substitute into for the simple query protocol.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlCommand {
    /// The statement without its final `;`, with `$1`, `$2`, ... for variables.
    pub sql: String,
    /// What feeds each parameter: `params[0]` feeds `$1`.
    pub params: Vec<Param>,
    /// The statement as written, cut at its variables (simple protocol).
    pub pieces: Vec<SqlPiece>,
    /// Several statements joined with `\;`: always sent as one simple query.
    pub compound: bool,
    /// `\gset`/`\aset`: where the query's columns go.
    pub results: Option<ResultTarget>,
    /// 1-based line where the statement starts.
    pub line: usize,
    /// 0-based position among the script's SQL commands (a client's prepared
    /// statements are kept in this order).
    pub number: usize,
}

impl SqlCommand {
    /// The statement for the simple query protocol: variables substituted
    /// as text, as pgbench does (an undefined variable stays `:name`).
    pub fn render_simple(&self, vars: &Vars, out: &mut String) {
        out.clear();
        for piece in &self.pieces {
            match piece {
                SqlPiece::Text(text) => out.push_str(text),
                SqlPiece::Variable { slot, name, .. } => match vars.get(*slot) {
                    Some(value) => value.write_param(out),
                    None => {
                        out.push(':');
                        out.push_str(name);
                    }
                },
                SqlPiece::Defined {
                    name, quoted: true, ..
                } => {
                    out.push_str(":{?");
                    out.push_str(name);
                    out.push('}');
                }
                SqlPiece::Defined { slot, .. } => out.push_str(if vars.get(*slot).is_some() {
                    "TRUE"
                } else {
                    "FALSE"
                }),
            }
        }
    }

    /// Parameter `index`'s text, `None` for SQL NULL (an undefined variable,
    /// as pgbench sends it).
    pub fn write_param(&self, index: usize, vars: &Vars, out: &mut String) -> bool {
        out.clear();
        match self.params[index] {
            Param::Value { slot } => match vars.get(slot) {
                Some(value) => {
                    value.write_param(out);
                    true
                }
                None => false,
            },
            Param::Defined { slot } => {
                out.push_str(if vars.get(slot).is_some() {
                    "true"
                } else {
                    "false"
                });
                true
            }
        }
    }
}

/// What feeds a parameter of an SQL command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// `:name`.
    Value { slot: usize },
    /// `:{?name}`: `true` when the variable is defined.
    Defined { slot: usize },
}

/// A piece of an SQL statement as written.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlPiece {
    Text(String),
    /// `:name`; `quoted` inside a quoted literal (substituted by the simple
    /// protocol only, as pgbench does there).
    Variable {
        slot: usize,
        name: String,
        quoted: bool,
    },
    /// `:{?name}` (left as it is inside a quoted literal).
    Defined {
        slot: usize,
        name: String,
        quoted: bool,
    },
}

/// `\gset [prefix]` or `\aset [prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultTarget {
    /// `\aset`: every query of the compound; `\gset`: the last, exactly one row.
    pub all_queries: bool,
    /// Prefix of the variable names.
    pub prefix: String,
}

/// The amount of a `\sleep`, in units of the command's `unit_us`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SleepAmount {
    /// A literal number of units (negative: no sleep).
    Fixed(i64),
    /// A `:var` holding the number of units.
    Variable { slot: usize, name: String },
}

/// A word of a `\shell` command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellWord {
    Text(String),
    /// `:name`: the variable's value.
    Variable {
        slot: usize,
        name: String,
    },
}
