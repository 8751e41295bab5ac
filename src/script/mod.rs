//! pgbench-style custom scripts (the `pgbench -f file` format): parsing once, running cheaply.
//!
//! A script is parsed once with [`parse`] into a [`Script`], a list of [`Command`]s whose
//! variable references are already resolved to slot indexes. Load workers then run the
//! commands millions of times without hashing names or allocating, except for rendering
//! parameter text.
//!
//! The work is split by job: `scanner` splits the text into statements and meta-commands,
//! `builder` turns them into commands with resolved slots, `expression` parses `\set`
//! expressions, `eval` runs commands, and `value` holds variable values.
//!
//! # API
//!
//! ```text
//! pub fn parse(source: &str, text: &str, outside_variables: &[String]) -> Result<Script, ScriptError>;
//! pub fn eval<R: rand::Rng + ?Sized>(expr: &Expr, vars: &Vars, rng: &mut R) -> Result<Value, EvalError>;
//! pub fn sleep_duration_us(duration: &SleepAmount, unit_us: u64, vars: &Vars) -> Result<u64, EvalError>;
//!
//! impl Script {
//!     pub fn new_vars(&self, client_id: u32, scale: i64, outside: &[(String, String)]) -> Vars;
//!     pub fn sleep_us(&self, command: &Command, vars: &Vars) -> Result<u64, EvalError>;
//!     pub fn variable_slot(&self, name: &str) -> Option<usize>;
//! }
//! impl Vars { pub fn get(&self, slot: usize) -> &Value; pub fn set(&mut self, slot: usize, value: Value); }
//! impl Value {
//!     pub fn from_outside_text(text: &str) -> Value;
//!     pub fn write_param(&self, out: &mut String);
//! }
//! ```
//!
//! One transaction of one client looks like this:
//!
//! ```text
//! for command in &script.commands {
//!     match command {
//!         Command::Set { slot, expr, .. } => vars.set(*slot, eval(expr, &vars, &mut rng)?),
//!         Command::Sleep { .. } => sleep_for_us(script.sleep_us(command, &vars)?),
//!         Command::Sql { sql, params, .. } => {
//!             // `sql` was prepared once per connection; `params[n]` is the slot feeding `$(n + 1)`.
//!             for slot in params { vars.get(*slot).write_param(&mut text_of_this_param) }
//!         }
//!     }
//! }
//! ```
//!
//! # Supported
//!
//! - `\set name expression`: integer (i64) and double arithmetic `+ - * / %`, unary `-` and
//!   `+`, parentheses, integer and double literals, `:var` references, and the functions
//!   `random`, `random_exponential`, `random_gaussian`, `abs`, `least`, `greatest`, `int`,
//!   `double`, `sqrt`, `exp`, `ln`, `pow` (alias `power`), `pi`, `mod`. Integer arithmetic is
//!   checked (overflow is a runtime error), integer division truncates toward zero, `%`
//!   works on integers (doubles are truncated first), division or modulo by zero is a
//!   runtime error.
//! - `\sleep n [us|ms|s]`, `n` a non-negative integer or `:var`; default unit seconds.
//! - SQL statements ending at a `;` outside single quotes, double quotes, dollar quotes and
//!   `/* */` comments, spanning any number of lines; a final statement may lack the `;`.
//!   `--` comments are stripped (also after meta-commands). `:name` outside quotes and
//!   comments becomes `$1`, `$2`, ... in order of first appearance; `::` casts are left alone.
//! - Predefined variables `client_id` and `scale`, plus outside variables (like
//!   `pgbench -D name=value`) whose names are given to [`parse`].
//! - A meta-command may continue on the next line when its line ends with a backslash.
//!
//! # Differences from pgbench
//!
//! - A variable used before any `\set` assigns it, and not predefined or given from the
//!   outside, is a parse error (pgbench fails at run time).
//! - `random_exponential`/`random_gaussian` parameters and empty `random*` ranges given as
//!   literals are checked at parse time.
//! - A negative `\sleep` is a runtime error; pgbench does not sleep.
//! - Not supported: other meta-commands (`\gset`, `\aset`, `\if`, `\shell`, `\setshell`,
//!   `\startpipeline`, ...), booleans, `NULL`, comparison/logical/bit operators, `CASE`,
//!   `random_zipfian`, `hash*`, `permute`, `debug`, and the `$1` style positional
//!   parameters in SQL text (write `:name` instead).

mod builder;
mod eval;
mod expression;
mod scanner;
mod value;

#[cfg(test)]
mod tests;

use thiserror::Error;

use builder::ScriptBuilder;
pub use eval::{EvalError, eval, sleep_duration_us};
pub use expression::{BinaryOp, Expr, Function, MIN_GAUSSIAN_PARAMETER};
pub use value::{Value, Vars};

/// Slot of the predefined `client_id` variable (0-based client number).
pub const CLIENT_ID_SLOT: usize = 0;
/// Slot of the predefined `scale` variable.
pub const SCALE_SLOT: usize = 1;

/// A problem found while parsing a script. Displays as `source line N: problem`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{script} line {line}: {problem}")]
pub struct ScriptError {
    /// The script's name: its file path or an inline name.
    pub script: String,
    /// 1-based line number of the problem.
    pub line: usize,
    /// What is wrong, and how to fix it where there is a fix.
    pub problem: String,
}

/// Parses a script. `source` names it in errors (file path or "inline script N of workload
/// W"); `outside_variables` are the names that will be given values from the outside (like
/// `pgbench -D name=value`).
pub fn parse(
    source: &str,
    text: &str,
    outside_variables: &[String],
) -> Result<Script, ScriptError> {
    let mut builder = ScriptBuilder::new(source, outside_variables);
    scanner::scan(text, &mut builder)?;
    builder.finish()
}

/// A parsed script, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The source name given to [`parse`] (file path or inline name).
    pub name: String,
    /// The commands, in script order.
    pub commands: Vec<Command>,
    /// Variable name of each slot.
    variable_names: Vec<String>,
}

impl Script {
    /// Fresh variables for one client: `client_id`, `scale`, and the outside `name=value`
    /// pairs (classified by [`Value::from_outside_text`]). An outside `scale` overrides the
    /// `scale` argument; `client_id` is always the client's number. Pairs whose name was not
    /// given to [`parse`] are ignored; outside names given to [`parse`] but missing here stay
    /// empty text.
    pub fn new_vars(&self, client_id: u32, scale: i64, outside: &[(String, String)]) -> Vars {
        let mut vars = Vars::empty(self.variable_names.len());
        vars.set(SCALE_SLOT, Value::Int(scale));
        for (name, text) in outside {
            if let Some(slot) = self.variable_slot(name) {
                vars.set(slot, Value::from_outside_text(text));
            }
        }
        vars.set(CLIENT_ID_SLOT, Value::Int(i64::from(client_id)));
        vars
    }

    /// Runs one `\sleep`'s duration in microseconds; 0 for a command that is not a
    /// `\sleep`.
    pub fn sleep_us(&self, command: &Command, vars: &Vars) -> Result<u64, EvalError> {
        match command {
            Command::Sleep {
                duration, unit_us, ..
            } => sleep_duration_us(duration, *unit_us, vars),
            Command::Set { .. } | Command::Sql { .. } => Ok(0),
        }
    }

    /// Whether the script opens its own transaction (a statement starting with
    /// BEGIN or START), so that a failure in it leaves one to roll back.
    pub fn opens_transaction(&self) -> bool {
        self.commands.iter().any(|command| match command {
            Command::Sql { sql, .. } => {
                let first_word = sql.split_whitespace().next().unwrap_or("");
                first_word.eq_ignore_ascii_case("BEGIN") || first_word.eq_ignore_ascii_case("START")
            }
            Command::Set { .. } | Command::Sleep { .. } => false,
        })
    }

    /// The slot of the variable called `name`, if the script has one.
    pub fn variable_slot(&self, name: &str) -> Option<usize> {
        self.variable_names.iter().position(|known| known == name)
    }
}

/// One script command.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `\set name expr`: evaluate `expr` and store it in `slot`.
    Set {
        /// Slot of the variable assigned.
        slot: usize,
        /// The expression.
        expr: Expr,
        /// 1-based script line.
        line: usize,
    },
    /// `\sleep n unit`: pause this client.
    Sleep {
        /// How many units to sleep.
        duration: SleepAmount,
        /// Microseconds per unit (1, 1000 or 1000000).
        unit_us: u64,
        /// 1-based script line.
        line: usize,
    },
    /// A SQL statement.
    Sql {
        /// Statement text without the final `;`, with `$1`, `$2`, ... for variables.
        sql: String,
        /// Slot feeding each parameter: `params[0]` feeds `$1`.
        params: Vec<usize>,
        /// 1-based script line where the statement starts.
        line: usize,
    },
}

/// The amount of a `\sleep`, in units of the command's `unit_us`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SleepAmount {
    /// A literal number of units.
    Fixed(u64),
    /// A `:var` holding the number of units.
    Variable {
        /// Slot of the variable.
        slot: usize,
        /// Name of the variable, for errors.
        name: String,
    },
}
