//! pgbench-style custom scripts (the `pgbench -f file` format): parsing once, running cheaply.
//!
//! A script is parsed once with [`parse`] into a [`Script`], a list of [`Command`]s whose
//! variable references are already resolved to slot indexes. Load workers then run the
//! commands millions of times without hashing names or allocating, except for rendering
//! parameter text.
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
//!     pub fn sql_commands(&self) -> impl Iterator<Item = &str>;
//!     pub fn sleep_us(&self, command: &Command, vars: &Vars) -> Result<u64, EvalError>;
//!     pub fn variable_slot(&self, name: &str) -> Option<usize>;
//!     pub fn variable_name(&self, slot: usize) -> &str;
//! }
//! impl Command { pub fn line(&self) -> usize; }
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

use std::collections::HashMap;
use std::fmt::Write as _;

use rand::RngExt;
use thiserror::Error;

/// Slot of the predefined `client_id` variable (0-based client number).
pub const CLIENT_ID_SLOT: usize = 0;
/// Slot of the predefined `scale` variable.
pub const SCALE_SLOT: usize = 1;
/// Smallest parameter `random_gaussian` accepts, as in pgbench.
pub const MIN_GAUSSIAN_PARAMETER: f64 = 2.0;

const MICROSECONDS_PER_MILLISECOND: u64 = 1_000;
const MICROSECONDS_PER_SECOND: u64 = 1_000_000;
/// Significant digits pgbench uses when it prints a double (`%.15g`, `DBL_DIG`).
const DOUBLE_SIGNIFICANT_DIGITS: i32 = 15;

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

/// A problem found while running a command (evaluating a `\set` or a `\sleep`).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum EvalError {
    /// Integer or double division, or modulo, by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// An integer result does not fit in 64 bits.
    #[error("integer out of range in {operation}")]
    IntegerOutOfRange {
        /// The operator or function that overflowed.
        operation: &'static str,
    },
    /// A double was converted to an integer but is NaN or out of the 64-bit range.
    #[error("double value {value} does not fit in a 64-bit integer")]
    DoubleOutOfIntegerRange {
        /// The double that did not fit.
        value: f64,
    },
    /// A variable used in arithmetic holds text that is not a number.
    #[error("variable :{name} holds \"{value}\", which is not a number")]
    NotANumber {
        /// Name of the variable.
        name: String,
        /// Its text value.
        value: String,
    },
    /// A random function got a lower bound above its upper bound.
    #[error("{function}: empty range, lower bound {lb} is greater than upper bound {ub}")]
    EmptyRange {
        /// The function called.
        function: &'static str,
        /// Lower bound given.
        lb: i64,
        /// Upper bound given.
        ub: i64,
    },
    /// A random function got a range with more than `i64::MAX` values.
    #[error("{function}: range [{lb}, {ub}] is too large")]
    RangeTooLarge {
        /// The function called.
        function: &'static str,
        /// Lower bound given.
        lb: i64,
        /// Upper bound given.
        ub: i64,
    },
    /// A distribution parameter outside its documented limit.
    #[error("{function}: parameter {parameter} is invalid, it must be {requirement}")]
    BadParameter {
        /// The function called.
        function: &'static str,
        /// The parameter given.
        parameter: f64,
        /// The limit, in words.
        requirement: &'static str,
    },
    /// A `\sleep :var` whose variable does not hold an integer.
    #[error("\\sleep: variable :{name} holds \"{value}\", not an integer")]
    SleepNotInteger {
        /// Name of the variable.
        name: String,
        /// Its value as text.
        value: String,
    },
    /// A `\sleep :var` whose variable holds a negative integer.
    #[error("\\sleep: negative duration {amount}")]
    NegativeSleep {
        /// The negative amount.
        amount: i64,
    },
    /// A `\sleep` whose duration in microseconds does not fit in 64 bits.
    #[error("\\sleep: duration {amount} x {unit_us} us is too long")]
    SleepTooLong {
        /// The amount, in units.
        amount: u64,
        /// Microseconds per unit.
        unit_us: u64,
    },
}

/// The value of a script variable.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Double(f64),
    /// Text (only from outside variables that are not numbers).
    Text(String),
}

impl Value {
    /// Classifies an outside `name=value` value as pgbench does: an integer if it parses as
    /// one, else a double if it has a `.` or an exponent and parses as a finite double, else
    /// text.
    pub fn from_outside_text(text: &str) -> Value {
        let trimmed = text.trim();
        if let Ok(integer) = trimmed.parse::<i64>() {
            return Value::Int(integer);
        }
        let looks_like_double = trimmed.contains(['.', 'e', 'E']);
        if looks_like_double
            && let Ok(double) = trimmed.parse::<f64>()
            && double.is_finite()
        {
            return Value::Double(double);
        }
        Value::Text(text.to_string())
    }

    /// Appends the text pgbench would substitute for this value: integers plain, doubles as
    /// C's `%.15g` (`0.1`, `1e+20`, `nan`, `inf`), text unchanged.
    pub fn write_param(&self, out: &mut String) {
        match self {
            Value::Int(integer) => {
                let _ = write!(out, "{integer}");
            }
            Value::Double(double) => write_double(*double, out),
            Value::Text(text) => out.push_str(text),
        }
    }

    fn to_param_string(&self) -> String {
        let mut text = String::new();
        self.write_param(&mut text);
        text
    }
}

/// Appends `value` formatted like C's `printf("%.15g", value)`.
fn write_double(value: f64, out: &mut String) {
    if value.is_nan() {
        out.push_str("nan");
        return;
    }
    if value.is_infinite() {
        out.push_str(if value > 0.0 { "inf" } else { "-inf" });
        return;
    }
    let start = out.len();
    // The scientific form, rounded to 15 significant digits, gives the decimal exponent
    // that %g uses to choose between fixed and scientific notation.
    let mantissa_decimals = (DOUBLE_SIGNIFICANT_DIGITS - 1) as usize;
    let _ = write!(out, "{value:.mantissa_decimals$e}");
    let exponent_position = match out[start..].find('e') {
        Some(offset) => start + offset,
        None => return,
    };
    let exponent: i32 = out[exponent_position + 1..].parse().unwrap_or(0);
    if (-4..DOUBLE_SIGNIFICANT_DIGITS).contains(&exponent) {
        out.truncate(start);
        let decimals = (DOUBLE_SIGNIFICANT_DIGITS - 1 - exponent) as usize;
        let _ = write!(out, "{value:.decimals$}");
        strip_trailing_fraction_zeros(out, start);
    } else {
        out.truncate(exponent_position);
        strip_trailing_fraction_zeros(out, start);
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exponent.abs());
    }
}

/// Removes trailing zeros after a decimal point, and the point itself if nothing follows.
fn strip_trailing_fraction_zeros(out: &mut String, start: usize) {
    if !out[start..].contains('.') {
        return;
    }
    while out.ends_with('0') {
        out.pop();
    }
    if out.ends_with('.') {
        out.pop();
    }
}

/// One client's variable values, one per slot of its [`Script`].
#[derive(Debug, Clone, PartialEq)]
pub struct Vars {
    values: Vec<Value>,
}

impl Vars {
    /// The value in `slot`. Panics if the slot is not from this script.
    pub fn get(&self, slot: usize) -> &Value {
        &self.values[slot]
    }

    /// Stores `value` in `slot`. Panics if the slot is not from this script.
    pub fn set(&mut self, slot: usize, value: Value) {
        self.values[slot] = value;
    }
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
        let mut vars = Vars {
            values: vec![Value::Text(String::new()); self.variable_names.len()],
        };
        vars.set(SCALE_SLOT, Value::Int(scale));
        for (name, text) in outside {
            if let Some(slot) = self.variable_slot(name) {
                vars.set(slot, Value::from_outside_text(text));
            }
        }
        vars.set(CLIENT_ID_SLOT, Value::Int(i64::from(client_id)));
        vars
    }

    /// The SQL texts (with `$n` placeholders), in script order, to prepare once per
    /// connection.
    pub fn sql_commands(&self) -> impl Iterator<Item = &str> {
        self.commands.iter().filter_map(|command| match command {
            Command::Sql { sql, .. } => Some(sql.as_str()),
            _ => None,
        })
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

    /// The slot of the variable called `name`, if the script has one.
    pub fn variable_slot(&self, name: &str) -> Option<usize> {
        self.variable_names.iter().position(|known| known == name)
    }

    /// The name of the variable in `slot`. Panics if the slot is not from this script.
    pub fn variable_name(&self, slot: usize) -> &str {
        &self.variable_names[slot]
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

impl Command {
    /// 1-based script line of the command.
    pub fn line(&self) -> usize {
        match self {
            Command::Set { line, .. } | Command::Sleep { line, .. } | Command::Sql { line, .. } => {
                *line
            }
        }
    }
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

/// Runs one `\sleep`'s duration in microseconds: `duration` units of `unit_us`.
pub fn sleep_duration_us(
    duration: &SleepAmount,
    unit_us: u64,
    vars: &Vars,
) -> Result<u64, EvalError> {
    let amount = match duration {
        SleepAmount::Fixed(amount) => *amount,
        SleepAmount::Variable { slot, name } => match vars.get(*slot) {
            Value::Int(amount) => match u64::try_from(*amount) {
                Ok(amount) => amount,
                Err(_) => return Err(EvalError::NegativeSleep { amount: *amount }),
            },
            other => {
                return Err(EvalError::SleepNotInteger {
                    name: name.clone(),
                    value: other.to_param_string(),
                });
            }
        },
    };
    amount
        .checked_mul(unit_us)
        .ok_or(EvalError::SleepTooLong { amount, unit_us })
}

/// A `\set` expression, with variables resolved to slots.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Integer literal.
    Int(i64),
    /// Double literal.
    Double(f64),
    /// `:name` reference.
    Variable {
        /// Slot of the variable.
        slot: usize,
        /// Name of the variable, for errors.
        name: String,
    },
    /// Unary minus.
    Negate(Box<Expr>),
    /// Binary arithmetic.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left operand.
        left: Box<Expr>,
        /// Right operand.
        right: Box<Expr>,
    },
    /// Function call; the argument count was checked by [`parse`].
    Call {
        /// The function.
        function: Function,
        /// Its arguments.
        args: Vec<Expr>,
    },
}

/// A binary arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Subtract,
    /// `*`
    Multiply,
    /// `/` (integer division truncates toward zero)
    Divide,
    /// `%` (on integers)
    Modulo,
}

impl BinaryOp {
    fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Subtract => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Modulo => "%",
        }
    }
}

/// A function usable in `\set` expressions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// `random(lb, ub)`: uniform integer in `[lb, ub]`.
    Random,
    /// `random_exponential(lb, ub, parameter)`: integer in `[lb, ub]`, skewed to `lb`.
    RandomExponential,
    /// `random_gaussian(lb, ub, parameter)`: integer in `[lb, ub]`, bell around the middle.
    RandomGaussian,
    /// `abs(x)`, same type as `x`.
    Abs,
    /// `least(a, ...)`: double if any argument is a double.
    Least,
    /// `greatest(a, ...)`: double if any argument is a double.
    Greatest,
    /// `int(x)`: truncates a double toward zero.
    Int,
    /// `double(x)`.
    Double,
    /// `sqrt(x)`, a double.
    Sqrt,
    /// `exp(x)`, a double.
    Exp,
    /// `ln(x)`, a double.
    Ln,
    /// `pow(x, y)` or `power(x, y)`, a double.
    Pow,
    /// `pi()`.
    Pi,
    /// `mod(i, j)`, same as `i % j`.
    Mod,
}

const ALL_FUNCTIONS: [Function; 14] = [
    Function::Random,
    Function::RandomExponential,
    Function::RandomGaussian,
    Function::Abs,
    Function::Least,
    Function::Greatest,
    Function::Int,
    Function::Double,
    Function::Sqrt,
    Function::Exp,
    Function::Ln,
    Function::Pow,
    Function::Pi,
    Function::Mod,
];

impl Function {
    /// The name scripts use for the function.
    pub fn name(self) -> &'static str {
        match self {
            Function::Random => "random",
            Function::RandomExponential => "random_exponential",
            Function::RandomGaussian => "random_gaussian",
            Function::Abs => "abs",
            Function::Least => "least",
            Function::Greatest => "greatest",
            Function::Int => "int",
            Function::Double => "double",
            Function::Sqrt => "sqrt",
            Function::Exp => "exp",
            Function::Ln => "ln",
            Function::Pow => "pow",
            Function::Pi => "pi",
            Function::Mod => "mod",
        }
    }

    /// Looks a function up by name, ignoring case as pgbench does.
    fn from_name(name: &str) -> Option<Function> {
        if name.eq_ignore_ascii_case("power") {
            return Some(Function::Pow);
        }
        ALL_FUNCTIONS
            .iter()
            .copied()
            .find(|function| function.name().eq_ignore_ascii_case(name))
    }

    /// Smallest and largest argument count (`None`: no largest).
    fn argument_count(self) -> (usize, Option<usize>) {
        match self {
            Function::Pi => (0, Some(0)),
            Function::Abs
            | Function::Int
            | Function::Double
            | Function::Sqrt
            | Function::Exp
            | Function::Ln => (1, Some(1)),
            Function::Random | Function::Pow | Function::Mod => (2, Some(2)),
            Function::RandomExponential | Function::RandomGaussian => (3, Some(3)),
            Function::Least | Function::Greatest => (1, None),
        }
    }
}

/// The supported function names, comma separated, for error messages.
fn supported_function_names() -> String {
    let mut names = String::new();
    for function in ALL_FUNCTIONS {
        if !names.is_empty() {
            names.push_str(", ");
        }
        names.push_str(function.name());
        if function == Function::Pow {
            names.push_str(", power");
        }
    }
    names
}

// ---------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------

/// A number during evaluation.
#[derive(Debug, Clone, Copy)]
enum Number {
    Int(i64),
    Double(f64),
}

impl Number {
    fn to_double(self) -> f64 {
        match self {
            Number::Int(integer) => integer as f64,
            Number::Double(double) => double,
        }
    }

    /// Integer value; doubles truncate toward zero and must fit in 64 bits.
    fn to_int(self) -> Result<i64, EvalError> {
        match self {
            Number::Int(integer) => Ok(integer),
            Number::Double(double) => {
                let two_to_the_63 = -(i64::MIN as f64);
                if double >= -two_to_the_63 && double < two_to_the_63 {
                    Ok(double as i64)
                } else {
                    Err(EvalError::DoubleOutOfIntegerRange { value: double })
                }
            }
        }
    }
}

/// Evaluates an expression against the client's variables. The result is an `Int` or a
/// `Double`, never `Text`.
pub fn eval<R: rand::Rng + ?Sized>(
    expr: &Expr,
    vars: &Vars,
    rng: &mut R,
) -> Result<Value, EvalError> {
    match eval_number(expr, vars, rng)? {
        Number::Int(integer) => Ok(Value::Int(integer)),
        Number::Double(double) => Ok(Value::Double(double)),
    }
}

fn eval_number<R: rand::Rng + ?Sized>(
    expr: &Expr,
    vars: &Vars,
    rng: &mut R,
) -> Result<Number, EvalError> {
    match expr {
        Expr::Int(integer) => Ok(Number::Int(*integer)),
        Expr::Double(double) => Ok(Number::Double(*double)),
        Expr::Variable { slot, name } => match vars.get(*slot) {
            Value::Int(integer) => Ok(Number::Int(*integer)),
            Value::Double(double) => Ok(Number::Double(*double)),
            Value::Text(text) => Err(EvalError::NotANumber {
                name: name.clone(),
                value: text.clone(),
            }),
        },
        Expr::Negate(inner) => match eval_number(inner, vars, rng)? {
            Number::Int(integer) => integer
                .checked_neg()
                .map(Number::Int)
                .ok_or(EvalError::IntegerOutOfRange { operation: "-" }),
            Number::Double(double) => Ok(Number::Double(-double)),
        },
        Expr::Binary { op, left, right } => {
            let left = eval_number(left, vars, rng)?;
            let right = eval_number(right, vars, rng)?;
            apply_binary(*op, left, right)
        }
        Expr::Call { function, args } => call_function(*function, args, vars, rng),
    }
}

fn apply_binary(op: BinaryOp, left: Number, right: Number) -> Result<Number, EvalError> {
    match op {
        BinaryOp::Add => integer_or_double(op, left, right, i64::checked_add, |a, b| a + b),
        BinaryOp::Subtract => integer_or_double(op, left, right, i64::checked_sub, |a, b| a - b),
        BinaryOp::Multiply => integer_or_double(op, left, right, i64::checked_mul, |a, b| a * b),
        BinaryOp::Divide => divide(left, right),
        BinaryOp::Modulo => integer_modulo(left.to_int()?, right.to_int()?).map(Number::Int),
    }
}

/// Integer arithmetic (checked) when both sides are integers, else double arithmetic.
fn integer_or_double(
    op: BinaryOp,
    left: Number,
    right: Number,
    integer_op: fn(i64, i64) -> Option<i64>,
    double_op: fn(f64, f64) -> f64,
) -> Result<Number, EvalError> {
    match (left, right) {
        (Number::Int(a), Number::Int(b)) => {
            integer_op(a, b)
                .map(Number::Int)
                .ok_or(EvalError::IntegerOutOfRange {
                    operation: op.symbol(),
                })
        }
        _ => Ok(Number::Double(double_op(
            left.to_double(),
            right.to_double(),
        ))),
    }
}

fn divide(left: Number, right: Number) -> Result<Number, EvalError> {
    match (left, right) {
        (Number::Int(_), Number::Int(0)) => Err(EvalError::DivisionByZero),
        (Number::Int(a), Number::Int(b)) => a
            .checked_div(b)
            .map(Number::Int)
            .ok_or(EvalError::IntegerOutOfRange { operation: "/" }),
        _ => {
            let divisor = right.to_double();
            if divisor == 0.0 {
                Err(EvalError::DivisionByZero)
            } else {
                Ok(Number::Double(left.to_double() / divisor))
            }
        }
    }
}

/// `a % b` with C semantics (sign of `a`); `x % -1` is 0 even for `i64::MIN`, as in pgbench.
fn integer_modulo(a: i64, b: i64) -> Result<i64, EvalError> {
    match b {
        0 => Err(EvalError::DivisionByZero),
        -1 => Ok(0),
        _ => Ok(a % b),
    }
}

fn call_function<R: rand::Rng + ?Sized>(
    function: Function,
    args: &[Expr],
    vars: &Vars,
    rng: &mut R,
) -> Result<Number, EvalError> {
    match function {
        Function::Random => {
            let (lb, ub) = random_bounds(function, args, vars, rng)?;
            Ok(Number::Int(rng.random_range(lb..=ub)))
        }
        Function::RandomExponential => {
            let (lb, ub) = random_bounds(function, args, vars, rng)?;
            let parameter = eval_number(&args[2], vars, rng)?.to_double();
            if !(parameter > 0.0 && parameter.is_finite()) {
                return Err(EvalError::BadParameter {
                    function: function.name(),
                    parameter,
                    requirement: "a finite number greater than 0",
                });
            }
            Ok(Number::Int(draw_exponential(rng, lb, ub, parameter)))
        }
        Function::RandomGaussian => {
            let (lb, ub) = random_bounds(function, args, vars, rng)?;
            let parameter = eval_number(&args[2], vars, rng)?.to_double();
            if !(parameter >= MIN_GAUSSIAN_PARAMETER && parameter.is_finite()) {
                return Err(EvalError::BadParameter {
                    function: function.name(),
                    parameter,
                    requirement: "a finite number of at least 2.0",
                });
            }
            Ok(Number::Int(draw_gaussian(rng, lb, ub, parameter)))
        }
        Function::Abs => match eval_number(&args[0], vars, rng)? {
            Number::Int(integer) => integer
                .checked_abs()
                .map(Number::Int)
                .ok_or(EvalError::IntegerOutOfRange { operation: "abs" }),
            Number::Double(double) => Ok(Number::Double(double.abs())),
        },
        Function::Least => least_or_greatest(true, args, vars, rng),
        Function::Greatest => least_or_greatest(false, args, vars, rng),
        Function::Int => Ok(Number::Int(eval_number(&args[0], vars, rng)?.to_int()?)),
        Function::Double => Ok(Number::Double(
            eval_number(&args[0], vars, rng)?.to_double(),
        )),
        Function::Sqrt => Ok(Number::Double(
            eval_number(&args[0], vars, rng)?.to_double().sqrt(),
        )),
        Function::Exp => Ok(Number::Double(
            eval_number(&args[0], vars, rng)?.to_double().exp(),
        )),
        Function::Ln => Ok(Number::Double(
            eval_number(&args[0], vars, rng)?.to_double().ln(),
        )),
        Function::Pow => {
            let base = eval_number(&args[0], vars, rng)?.to_double();
            let exponent = eval_number(&args[1], vars, rng)?.to_double();
            Ok(Number::Double(base.powf(exponent)))
        }
        Function::Pi => Ok(Number::Double(std::f64::consts::PI)),
        Function::Mod => {
            let dividend = eval_number(&args[0], vars, rng)?.to_int()?;
            let divisor = eval_number(&args[1], vars, rng)?.to_int()?;
            integer_modulo(dividend, divisor).map(Number::Int)
        }
    }
}

/// Evaluates and checks the `lb, ub` arguments of a random function.
fn random_bounds<R: rand::Rng + ?Sized>(
    function: Function,
    args: &[Expr],
    vars: &Vars,
    rng: &mut R,
) -> Result<(i64, i64), EvalError> {
    let lb = eval_number(&args[0], vars, rng)?.to_int()?;
    let ub = eval_number(&args[1], vars, rng)?.to_int()?;
    if lb > ub {
        return Err(EvalError::EmptyRange {
            function: function.name(),
            lb,
            ub,
        });
    }
    // As pgbench: the number of values, ub - lb + 1, must fit in an i64.
    if ub
        .checked_sub(lb)
        .and_then(|width| width.checked_add(1))
        .is_none()
    {
        return Err(EvalError::RangeTooLarge {
            function: function.name(),
            lb,
            ub,
        });
    }
    Ok((lb, ub))
}

/// pgbench's exponential draw: density proportional to `exp(-parameter * (x - lb) / (ub - lb + 1))`
/// over `[lb, ub + 1)`, truncated to an integer.
fn draw_exponential<R: rand::Rng + ?Sized>(rng: &mut R, lb: i64, ub: i64, parameter: f64) -> i64 {
    let uniform: f64 = rng.random(); // [0, 1)
    let cut = (-parameter).exp();
    // Inverse of the truncated exponential's distribution function: a fraction in [0, 1).
    let fraction = -(1.0 - uniform * (1.0 - cut)).ln() / parameter;
    lb + offset_in_range(fraction, ub - lb)
}

/// pgbench's gaussian draw: a standard normal truncated to `[-parameter, parameter)` mapped
/// linearly onto `[lb, ub + 1)`, truncated to an integer.
fn draw_gaussian<R: rand::Rng + ?Sized>(rng: &mut R, lb: i64, ub: i64, parameter: f64) -> i64 {
    let normal = loop {
        let candidate = standard_normal(rng);
        if candidate >= -parameter && candidate < parameter {
            break candidate;
        }
    };
    let fraction = (normal + parameter) / (2.0 * parameter);
    lb + offset_in_range(fraction, ub - lb)
}

/// A standard normal draw (Box-Muller).
fn standard_normal<R: rand::Rng + ?Sized>(rng: &mut R) -> f64 {
    let radius_uniform = 1.0 - rng.random::<f64>(); // (0, 1], so ln is finite
    let angle_uniform: f64 = rng.random();
    (-2.0 * radius_uniform.ln()).sqrt() * (std::f64::consts::TAU * angle_uniform).cos()
}

/// Maps a fraction in `[0, 1)` onto `0..=width`; rounding that lands on 1.0 gives `width`.
fn offset_in_range(fraction: f64, width: i64) -> i64 {
    let offset = (fraction * (width as f64 + 1.0)) as i64;
    offset.clamp(0, width)
}

fn least_or_greatest<R: rand::Rng + ?Sized>(
    want_least: bool,
    args: &[Expr],
    vars: &Vars,
    rng: &mut R,
) -> Result<Number, EvalError> {
    let mut best = eval_number(&args[0], vars, rng)?;
    let mut any_double = matches!(best, Number::Double(_));
    for arg in &args[1..] {
        let candidate = eval_number(arg, vars, rng)?;
        any_double |= matches!(candidate, Number::Double(_));
        let candidate_is_better = match (best, candidate) {
            (Number::Int(current), Number::Int(new)) => {
                if want_least {
                    new < current
                } else {
                    new > current
                }
            }
            _ => {
                if want_least {
                    candidate.to_double() < best.to_double()
                } else {
                    candidate.to_double() > best.to_double()
                }
            }
        };
        if candidate_is_better {
            best = candidate;
        }
    }
    if any_double {
        Ok(Number::Double(best.to_double()))
    } else {
        Ok(best)
    }
}

// ---------------------------------------------------------------------------------------
// Script parsing
// ---------------------------------------------------------------------------------------

/// Parses a script. `source` names it in errors (file path or "inline script N of workload
/// W"); `outside_variables` are the names that will be given values from the outside (like
/// `pgbench -D name=value`).
pub fn parse(
    source: &str,
    text: &str,
    outside_variables: &[String],
) -> Result<Script, ScriptError> {
    let mut builder = ScriptBuilder::new(source, outside_variables);
    let bytes = text.as_bytes();
    let mut mode = ScanMode::Sql;
    let mut mode_line = 0; // line where the open quote or comment started
    let mut line = 1;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        let next = bytes.get(index + 1).copied();
        if byte == b'\n' {
            if !matches!(mode, ScanMode::BlockComment { .. }) {
                builder.push_sql("\n", line);
            }
            line += 1;
            index += 1;
            continue;
        }
        match mode {
            ScanMode::Sql => {
                if byte == b'-' && next == Some(b'-') {
                    index = end_of_line(bytes, index);
                } else if byte == b'/' && next == Some(b'*') {
                    mode = ScanMode::BlockComment { depth: 1 };
                    mode_line = line;
                    index += 2;
                } else if byte == b'\\' {
                    // A backslash outside quotes ends the SQL statement, as in pgbench, and
                    // starts a meta-command that runs to the end of the line.
                    builder.finish_statement();
                    let (command_text, end, continuation_lines) =
                        meta_command_text(text, index + 1);
                    builder.meta_command(&command_text, line)?;
                    line += continuation_lines;
                    index = end;
                } else if byte == b';' {
                    builder.finish_statement();
                    index += 1;
                } else if byte == b'\'' {
                    let backslash_escapes = is_escape_string_prefix(bytes, index);
                    builder.push_sql("'", line);
                    mode = ScanMode::SingleQuote { backslash_escapes };
                    mode_line = line;
                    index += 1;
                } else if byte == b'"' {
                    builder.push_sql("\"", line);
                    mode = ScanMode::DoubleQuote;
                    mode_line = line;
                    index += 1;
                } else if byte == b'$' && !(index > 0 && is_identifier_byte(bytes[index - 1])) {
                    if let Some(tag_length) = dollar_tag_length(bytes, index) {
                        builder.push_sql(&text[index..index + tag_length], line);
                        mode = ScanMode::DollarQuote {
                            tag_start: index,
                            tag_length,
                        };
                        mode_line = line;
                        index += tag_length;
                    } else if next.is_some_and(|digit| digit.is_ascii_digit()) {
                        return Err(builder.error(
                            line,
                            "SQL uses a positional parameter like $1; write :name variables \
                             instead, stallbench numbers the parameters itself",
                        ));
                    } else {
                        builder.push_sql("$", line);
                        index += 1;
                    }
                } else if byte == b':' {
                    index = builder.sql_colon(text, index, line)?;
                } else {
                    index = builder.push_char(text, index, line);
                }
            }
            ScanMode::SingleQuote { backslash_escapes } => {
                if backslash_escapes
                    && byte == b'\\'
                    && next.is_some_and(|escaped| escaped != b'\n')
                {
                    builder.push_sql("\\", line);
                    index = builder.push_char(text, index + 1, line);
                } else if byte == b'\'' && next == Some(b'\'') {
                    builder.push_sql("''", line);
                    index += 2;
                } else if byte == b'\'' {
                    builder.push_sql("'", line);
                    mode = ScanMode::Sql;
                    index += 1;
                } else {
                    index = builder.push_char(text, index, line);
                }
            }
            ScanMode::DoubleQuote => {
                if byte == b'"' && next == Some(b'"') {
                    builder.push_sql("\"\"", line);
                    index += 2;
                } else if byte == b'"' {
                    builder.push_sql("\"", line);
                    mode = ScanMode::Sql;
                    index += 1;
                } else {
                    index = builder.push_char(text, index, line);
                }
            }
            ScanMode::DollarQuote {
                tag_start,
                tag_length,
            } => {
                let tag = &text[tag_start..tag_start + tag_length];
                if text[index..].starts_with(tag) {
                    builder.push_sql(tag, line);
                    mode = ScanMode::Sql;
                    index += tag_length;
                } else {
                    index = builder.push_char(text, index, line);
                }
            }
            ScanMode::BlockComment { depth } => {
                if byte == b'/' && next == Some(b'*') {
                    mode = ScanMode::BlockComment { depth: depth + 1 };
                    index += 2;
                } else if byte == b'*' && next == Some(b'/') {
                    if depth == 1 {
                        mode = ScanMode::Sql;
                        builder.push_sql(" ", line);
                    } else {
                        mode = ScanMode::BlockComment { depth: depth - 1 };
                    }
                    index += 2;
                } else {
                    index += char_length(text, index);
                }
            }
        }
    }
    match mode {
        ScanMode::Sql => {}
        ScanMode::SingleQuote { .. } => {
            return Err(builder.error(
                mode_line,
                "unterminated quoted string: the ' opened on this line is never closed; \
                 close it with a matching '",
            ));
        }
        ScanMode::DoubleQuote => {
            return Err(builder.error(
                mode_line,
                "unterminated quoted identifier: the \" opened on this line is never closed; \
                 close it with a matching \"",
            ));
        }
        ScanMode::DollarQuote {
            tag_start,
            tag_length,
        } => {
            let tag = &text[tag_start..tag_start + tag_length];
            return Err(builder.error(
                mode_line,
                format!(
                    "unterminated dollar-quoted string: the {tag} opened on this line is never \
                     closed; close it with a matching {tag}"
                ),
            ));
        }
        ScanMode::BlockComment { .. } => {
            return Err(builder.error(
                mode_line,
                "unterminated /* comment opened on this line; close it with */",
            ));
        }
    }
    builder.finish_statement();
    builder.finish()
}

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

/// End of a variable name (`[A-Za-z_][A-Za-z0-9_]*`) starting at `start`; `start` if none.
fn variable_name_end(bytes: &[u8], start: usize) -> usize {
    match bytes.get(start) {
        Some(first) if first.is_ascii_alphabetic() || *first == b'_' => {}
        _ => return start,
    }
    let mut end = start + 1;
    while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
        end += 1;
    }
    end
}

fn is_valid_variable_name(name: &str) -> bool {
    !name.is_empty() && variable_name_end(name.as_bytes(), 0) == name.len()
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

/// Builds a [`Script`] while the scanner walks the text.
struct ScriptBuilder {
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
    fn new(source: &str, outside_variables: &[String]) -> ScriptBuilder {
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

    fn error(&self, line: usize, problem: impl Into<String>) -> ScriptError {
        ScriptError {
            script: self.source.clone(),
            line,
            problem: problem.into(),
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
    fn push_sql(&mut self, piece: &str, line: usize) {
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

    /// Appends the character at `index` and returns the index after it.
    fn push_char(&mut self, text: &str, index: usize, line: usize) -> usize {
        let length = char_length(text, index);
        self.push_sql(&text[index..index + length], line);
        index + length
    }

    /// Handles a `:` in plain SQL at `index`; returns the index after what it consumed.
    fn sql_colon(&mut self, text: &str, index: usize, line: usize) -> Result<usize, ScriptError> {
        let bytes = text.as_bytes();
        if bytes.get(index + 1) == Some(&b':') {
            // A cast like `::int`: copy the whole run of colons so none starts a variable.
            let mut end = index;
            while end < bytes.len() && bytes[end] == b':' {
                end += 1;
            }
            self.push_sql(&text[index..end], line);
            return Ok(end);
        }
        let name_end = variable_name_end(bytes, index + 1);
        if name_end == index + 1 {
            self.push_sql(":", line);
            return Ok(index + 1);
        }
        let name = &text[index + 1..name_end];
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
        Ok(name_end)
    }

    /// Ends the current SQL statement, if it has any text.
    fn finish_statement(&mut self) {
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
    fn meta_command(&mut self, text: &str, line: usize) -> Result<(), ScriptError> {
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

    fn finish(self) -> Result<Script, ScriptError> {
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

// ---------------------------------------------------------------------------------------
// Expression parsing
// ---------------------------------------------------------------------------------------

/// A token of a `\set` expression.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i64),
    Double(f64),
    Variable(String),
    Word(String),
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    LeftParen,
    RightParen,
    Comma,
}

impl Token {
    /// How the token reads in an error message.
    fn describe(&self) -> String {
        match self {
            Token::Int(integer) => format!("number {integer}"),
            Token::Double(double) => format!("number {double}"),
            Token::Variable(name) => format!("variable :{name}"),
            Token::Word(word) => format!("word \"{word}\""),
            Token::Plus => "'+'".to_string(),
            Token::Minus => "'-'".to_string(),
            Token::Star => "'*'".to_string(),
            Token::Slash => "'/'".to_string(),
            Token::Percent => "'%'".to_string(),
            Token::LeftParen => "'('".to_string(),
            Token::RightParen => "')'".to_string(),
            Token::Comma => "','".to_string(),
        }
    }
}

/// Parses a `\set` expression; errors are complete problem texts.
fn parse_expression(text: &str, slot_by_name: &HashMap<String, usize>) -> Result<Expr, String> {
    let tokens = tokenize(text)?;
    let mut parser = ExpressionParser {
        text,
        tokens,
        position: 0,
        slot_by_name,
    };
    let expr = parser.parse_sum()?;
    if let Some(token) = parser.tokens.get(parser.position) {
        return Err(parser.syntax_error(&format!(
            "unexpected {} after a complete expression",
            token.describe()
        )));
    }
    Ok(expr)
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        let single = match byte {
            b'+' => Some(Token::Plus),
            b'-' => Some(Token::Minus),
            b'*' => Some(Token::Star),
            b'/' => Some(Token::Slash),
            b'%' => Some(Token::Percent),
            b'(' => Some(Token::LeftParen),
            b')' => Some(Token::RightParen),
            b',' => Some(Token::Comma),
            _ => None,
        };
        if let Some(token) = single {
            tokens.push(token);
            index += 1;
        } else if byte.is_ascii_whitespace() {
            index += 1;
        } else if byte.is_ascii_digit() || byte == b'.' {
            let end = number_end(bytes, index);
            tokens.push(number_token(&text[index..end], text)?);
            index = end;
        } else if byte == b':' {
            let end = variable_name_end(bytes, index + 1);
            if end == index + 1 {
                return Err(format!(
                    "bad \\set syntax: ':' must be followed by a variable name in \"{text}\""
                ));
            }
            tokens.push(Token::Variable(text[index + 1..end].to_string()));
            index = end;
        } else if byte.is_ascii_alphabetic() || byte == b'_' {
            let end = variable_name_end(bytes, index);
            tokens.push(Token::Word(text[index..end].to_string()));
            index = end;
        } else {
            let character = text[index..].chars().next().unwrap_or('?');
            return Err(format!(
                "bad \\set syntax: unexpected character '{character}' in \"{text}\"; \
                 expressions use numbers, :variables, + - * / %, parentheses and functions"
            ));
        }
    }
    Ok(tokens)
}

/// End of a numeric literal: digits, an optional fraction, an optional exponent.
fn number_end(bytes: &[u8], start: usize) -> usize {
    let skip_digits = |mut index: usize| {
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
        }
        index
    };
    let mut end = skip_digits(start);
    if bytes.get(end) == Some(&b'.') {
        end = skip_digits(end + 1);
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let mut exponent_start = end + 1;
        if matches!(bytes.get(exponent_start), Some(b'+' | b'-')) {
            exponent_start += 1;
        }
        if bytes.get(exponent_start).is_some_and(u8::is_ascii_digit) {
            end = skip_digits(exponent_start);
        }
    }
    end
}

fn number_token(literal: &str, text: &str) -> Result<Token, String> {
    if literal.contains(['.', 'e', 'E']) {
        match literal.parse::<f64>() {
            Ok(double) if literal != "." => Ok(Token::Double(double)),
            _ => Err(format!(
                "bad \\set syntax: invalid number \"{literal}\" in \"{text}\""
            )),
        }
    } else {
        literal.parse::<i64>().map(Token::Int).map_err(|_| {
            format!("bad \\set syntax: integer {literal} is out of the 64-bit range in \"{text}\"")
        })
    }
}

/// Recursive-descent parser: sum := product (('+'|'-') product)*,
/// product := unary (('*'|'/'|'%') unary)*, unary := ('-'|'+') unary | primary.
struct ExpressionParser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    position: usize,
    slot_by_name: &'a HashMap<String, usize>,
}

impl ExpressionParser<'_> {
    fn syntax_error(&self, detail: &str) -> String {
        format!("bad \\set syntax: {detail} in \"{}\"", self.text)
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.position)
    }

    fn next_token(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.position).cloned();
        if token.is_some() {
            self.position += 1;
        }
        token
    }

    fn parse_sum(&mut self) -> Result<Expr, String> {
        let mut left = self.parse_product()?;
        loop {
            let op = match self.peek() {
                Some(Token::Plus) => BinaryOp::Add,
                Some(Token::Minus) => BinaryOp::Subtract,
                _ => return Ok(left),
            };
            self.position += 1;
            let right = self.parse_product()?;
            left = Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
    }

    fn parse_product(&mut self) -> Result<Expr, String> {
        let mut left = self.parse_unary()?;
        loop {
            let op = match self.peek() {
                Some(Token::Star) => BinaryOp::Multiply,
                Some(Token::Slash) => BinaryOp::Divide,
                Some(Token::Percent) => BinaryOp::Modulo,
                _ => return Ok(left),
            };
            self.position += 1;
            let right = self.parse_unary()?;
            left = Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
    }

    fn parse_unary(&mut self) -> Result<Expr, String> {
        match self.peek() {
            Some(Token::Minus) => {
                self.position += 1;
                let inner = self.parse_unary()?;
                // Fold negative literals so `-5` is a literal for the parse-time checks.
                Ok(match inner {
                    Expr::Int(integer) => match integer.checked_neg() {
                        Some(negated) => Expr::Int(negated),
                        None => Expr::Negate(Box::new(Expr::Int(integer))),
                    },
                    Expr::Double(double) => Expr::Double(-double),
                    other => Expr::Negate(Box::new(other)),
                })
            }
            Some(Token::Plus) => {
                self.position += 1;
                self.parse_unary()
            }
            _ => self.parse_primary(),
        }
    }

    fn parse_primary(&mut self) -> Result<Expr, String> {
        match self.next_token() {
            Some(Token::Int(integer)) => Ok(Expr::Int(integer)),
            Some(Token::Double(double)) => Ok(Expr::Double(double)),
            Some(Token::Variable(name)) => match self.slot_by_name.get(&name) {
                Some(slot) => Ok(Expr::Variable { slot: *slot, name }),
                None => Err(format!(
                    "undefined variable :{name} in \\set; assign it with \\set earlier in the \
                     script or define it outside the script (like pgbench -D {name}=value); \
                     predefined are client_id and scale"
                )),
            },
            Some(Token::LeftParen) => {
                let inner = self.parse_sum()?;
                match self.next_token() {
                    Some(Token::RightParen) => Ok(inner),
                    Some(other) => {
                        Err(self
                            .syntax_error(&format!("expected ')' but found {}", other.describe())))
                    }
                    None => Err(self.syntax_error("missing ')'")),
                }
            }
            Some(Token::Word(name)) => self.parse_call(name),
            Some(other) => Err(self.syntax_error(&format!("unexpected {}", other.describe()))),
            None => Err(self.syntax_error("the expression ends where a value is expected")),
        }
    }

    fn parse_call(&mut self, name: String) -> Result<Expr, String> {
        if self.peek() != Some(&Token::LeftParen) {
            return Err(self.syntax_error(&format!(
                "unexpected word \"{name}\"; variables are written :{name}, functions as \
                 {name}(...)"
            )));
        }
        self.position += 1;
        let function = match Function::from_name(&name) {
            Some(function) => function,
            None => {
                return Err(format!(
                    "unknown function {name} in \\set; supported: {}",
                    supported_function_names()
                ));
            }
        };
        let mut args = Vec::new();
        if self.peek() == Some(&Token::RightParen) {
            self.position += 1;
        } else {
            loop {
                args.push(self.parse_sum()?);
                match self.next_token() {
                    Some(Token::Comma) => {}
                    Some(Token::RightParen) => break,
                    Some(other) => {
                        return Err(self.syntax_error(&format!(
                            "expected ',' or ')' in the arguments of {} but found {}",
                            function.name(),
                            other.describe()
                        )));
                    }
                    None => {
                        return Err(self.syntax_error(&format!(
                            "missing ')' after the arguments of {}",
                            function.name()
                        )));
                    }
                }
            }
        }
        let (fewest, most) = function.argument_count();
        let wanted = match most {
            Some(most) if most == fewest => format!("{fewest}"),
            Some(most) => format!("{fewest} to {most}"),
            None => format!("at least {fewest}"),
        };
        if args.len() < fewest || most.is_some_and(|most| args.len() > most) {
            return Err(format!(
                "function {} takes {wanted} argument(s) but got {} in \"{}\"",
                function.name(),
                args.len(),
                self.text
            ));
        }
        check_literal_arguments(function, &args)?;
        Ok(Expr::Call { function, args })
    }
}

/// Checks limits that literal arguments already break, so the error comes at parse time.
fn check_literal_arguments(function: Function, args: &[Expr]) -> Result<(), String> {
    let is_random = matches!(
        function,
        Function::Random | Function::RandomExponential | Function::RandomGaussian
    );
    if !is_random {
        return Ok(());
    }
    if let (Expr::Int(lb), Expr::Int(ub)) = (&args[0], &args[1])
        && lb > ub
    {
        return Err(format!(
            "empty range in {}({lb}, {ub}, ...): the lower bound is greater than the upper \
                 bound; swap them",
            function.name()
        ));
    }
    let parameter = match args.get(2) {
        Some(Expr::Int(integer)) => *integer as f64,
        Some(Expr::Double(double)) => *double,
        _ => return Ok(()),
    };
    if function == Function::RandomExponential && !(parameter > 0.0 && parameter.is_finite()) {
        return Err(format!(
            "random_exponential parameter must be greater than 0, got {parameter}"
        ));
    }
    if function == Function::RandomGaussian
        && !(parameter >= MIN_GAUSSIAN_PARAMETER && parameter.is_finite())
    {
        return Err(format!(
            "random_gaussian parameter must be at least {MIN_GAUSSIAN_PARAMETER:.1}, got \
             {parameter}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    fn parse_ok(text: &str) -> Script {
        parse("test.sql", text, &[]).unwrap_or_else(|error| panic!("{error}"))
    }

    fn parse_error(text: &str) -> String {
        match parse("workloads/x.sql", text, &[]) {
            Ok(script) => panic!("expected an error, parsed {script:?}"),
            Err(error) => error.to_string(),
        }
    }

    fn sql_at(script: &Script, index: usize) -> (&str, &[usize]) {
        match &script.commands[index] {
            Command::Sql { sql, params, .. } => (sql.as_str(), params.as_slice()),
            other => panic!("command {index} is not SQL: {other:?}"),
        }
    }

    fn expr_at(script: &Script, index: usize) -> &Expr {
        match &script.commands[index] {
            Command::Set { expr, .. } => expr,
            other => panic!("command {index} is not \\set: {other:?}"),
        }
    }

    /// Evaluates `expression` with outside variable `x` = 10 and `t` = "abc".
    fn eval_expression(expression: &str) -> Result<Value, EvalError> {
        let outside = vec![
            ("x".to_string(), "10".to_string()),
            ("t".to_string(), "abc".to_string()),
        ];
        let names: Vec<String> = outside.iter().map(|(name, _)| name.clone()).collect();
        let script = parse("test.sql", &format!("\\set result {expression}"), &names)
            .unwrap_or_else(|error| panic!("{error}"));
        let vars = script.new_vars(3, 7, &outside);
        let mut rng = SmallRng::seed_from_u64(1);
        eval(expr_at(&script, 0), &vars, &mut rng)
    }

    fn draws(expression: &str, count: usize) -> Vec<i64> {
        let script = parse_ok(&format!("\\set r {expression}"));
        let vars = script.new_vars(0, 1, &[]);
        let mut rng = SmallRng::seed_from_u64(42);
        (0..count)
            .map(|_| match eval(expr_at(&script, 0), &vars, &mut rng) {
                Ok(Value::Int(value)) => value,
                other => panic!("{expression} gave {other:?}"),
            })
            .collect()
    }

    fn mean(values: &[i64]) -> f64 {
        values.iter().map(|&value| value as f64).sum::<f64>() / values.len() as f64
    }

    fn param_text(value: Value) -> String {
        let mut out = String::from("prefix:");
        value.write_param(&mut out);
        out.strip_prefix("prefix:").unwrap().to_string()
    }

    #[test]
    fn reference_script_parses() {
        let script = parse_ok(
            "\\set c random(1, 1000)\nSELECT count(*), sum(total) FROM orders WHERE customer_id = :c;",
        );
        assert_eq!(script.commands.len(), 2);
        let c_slot = script.variable_slot("c").unwrap();
        match &script.commands[0] {
            Command::Set { slot, expr, line } => {
                assert_eq!(*slot, c_slot);
                assert_eq!(*line, 1);
                assert!(matches!(
                    expr,
                    Expr::Call {
                        function: Function::Random,
                        ..
                    }
                ));
            }
            other => panic!("{other:?}"),
        }
        let (sql, params) = sql_at(&script, 1);
        assert_eq!(
            sql,
            "SELECT count(*), sum(total) FROM orders WHERE customer_id = $1"
        );
        assert_eq!(params, &[c_slot]);
        assert_eq!(script.commands[1].line(), 2);
        assert_eq!(script.name, "test.sql");
    }

    #[test]
    fn pgbench_tpcb_like_script_parses() {
        let text = "\
\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
";
        let script = parse_ok(text);
        assert_eq!(script.commands.len(), 11);
        let slot = |name: &str| script.variable_slot(name).unwrap();
        let sql: Vec<&str> = script.sql_commands().collect();
        assert_eq!(sql.len(), 7);
        assert_eq!(sql[0], "BEGIN");
        assert_eq!(
            sql_at(&script, 5),
            (
                "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
                &[slot("delta"), slot("aid")][..]
            )
        );
        assert_eq!(
            sql_at(&script, 9),
            (
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
                &[slot("tid"), slot("bid"), slot("aid"), slot("delta")][..]
            )
        );
        assert_eq!(sql[6], "END");
        assert_eq!(script.commands[10].line(), 11);

        // Running it: aid stays within 1..=100000 * scale.
        let mut vars = script.new_vars(0, 2, &[]);
        let mut rng = SmallRng::seed_from_u64(9);
        for _ in 0..1000 {
            for command in &script.commands {
                if let Command::Set { slot, expr, .. } = command {
                    let value = eval(expr, &vars, &mut rng).unwrap();
                    vars.set(*slot, value);
                }
            }
            match vars.get(slot("aid")) {
                Value::Int(aid) => assert!((1..=200_000).contains(aid)),
                other => panic!("{other:?}"),
            }
            match vars.get(slot("delta")) {
                Value::Int(delta) => assert!((-5000..=5000).contains(delta)),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn arithmetic_and_precedence() {
        assert_eq!(eval_expression("1 + 2 * 3"), Ok(Value::Int(7)));
        assert_eq!(eval_expression("(1 + 2) * 3"), Ok(Value::Int(9)));
        assert_eq!(eval_expression("10 - 4 - 3"), Ok(Value::Int(3)));
        assert_eq!(eval_expression("100 / 10 / 5"), Ok(Value::Int(2)));
        assert_eq!(eval_expression("2 * :x + :scale"), Ok(Value::Int(27)));
        assert_eq!(eval_expression(":client_id"), Ok(Value::Int(3)));
        assert_eq!(eval_expression("-3 + 5"), Ok(Value::Int(2)));
        assert_eq!(eval_expression("- :x * 2"), Ok(Value::Int(-20)));
        assert_eq!(eval_expression("-(2 + 3)"), Ok(Value::Int(-5)));
        assert_eq!(eval_expression("+4"), Ok(Value::Int(4)));
        assert_eq!(eval_expression("- -4"), Ok(Value::Int(4)));
    }

    #[test]
    fn integer_division_truncates_and_modulo_follows_c() {
        assert_eq!(eval_expression("7 / 2"), Ok(Value::Int(3)));
        assert_eq!(eval_expression("-7 / 2"), Ok(Value::Int(-3)));
        assert_eq!(eval_expression("7 / -2"), Ok(Value::Int(-3)));
        assert_eq!(eval_expression("7 % 3"), Ok(Value::Int(1)));
        assert_eq!(eval_expression("-7 % 3"), Ok(Value::Int(-1)));
        assert_eq!(eval_expression("7 % -3"), Ok(Value::Int(1)));
        assert_eq!(eval_expression("mod(-7, 3)"), Ok(Value::Int(-1)));
        assert_eq!(eval_expression("7.9 % 3"), Ok(Value::Int(1)));
        assert_eq!(
            eval_expression("(-9223372036854775807 - 1) % -1"),
            Ok(Value::Int(0))
        );
    }

    #[test]
    fn doubles() {
        assert_eq!(eval_expression("1.5 * 2"), Ok(Value::Double(3.0)));
        assert_eq!(eval_expression("7 / 2.0"), Ok(Value::Double(3.5)));
        assert_eq!(eval_expression(".5 + 1e1"), Ok(Value::Double(10.5)));
        assert_eq!(eval_expression("2.5E-1"), Ok(Value::Double(0.25)));
        assert_eq!(eval_expression("-1.5"), Ok(Value::Double(-1.5)));
        assert_eq!(eval_expression("int(3.9)"), Ok(Value::Int(3)));
        assert_eq!(eval_expression("int(-3.9)"), Ok(Value::Int(-3)));
        assert_eq!(eval_expression("double(3)"), Ok(Value::Double(3.0)));
        assert_eq!(eval_expression("sqrt(16)"), Ok(Value::Double(4.0)));
        assert_eq!(eval_expression("pow(2, 10)"), Ok(Value::Double(1024.0)));
        assert_eq!(eval_expression("POWER(2, 3)"), Ok(Value::Double(8.0)));
        assert_eq!(eval_expression("ln(exp(2))"), Ok(Value::Double(2.0)));
        assert_eq!(
            eval_expression("pi()"),
            Ok(Value::Double(std::f64::consts::PI))
        );
        assert_eq!(eval_expression("abs(-5)"), Ok(Value::Int(5)));
        assert_eq!(eval_expression("abs(-2.5)"), Ok(Value::Double(2.5)));
        assert_eq!(eval_expression("least(3, 1.5, 2)"), Ok(Value::Double(1.5)));
        assert_eq!(eval_expression("least(3, 1, 2)"), Ok(Value::Int(1)));
        assert_eq!(eval_expression("greatest(1, 5, 3)"), Ok(Value::Int(5)));
        assert_eq!(
            eval_expression("greatest(1, 5, 3.0)"),
            Ok(Value::Double(5.0))
        );
    }

    #[test]
    fn runtime_errors() {
        assert_eq!(eval_expression("1 / 0"), Err(EvalError::DivisionByZero));
        assert_eq!(eval_expression("1 % 0"), Err(EvalError::DivisionByZero));
        assert_eq!(eval_expression("1.0 / 0"), Err(EvalError::DivisionByZero));
        assert_eq!(eval_expression("mod(5, 0)"), Err(EvalError::DivisionByZero));
        assert_eq!(
            eval_expression(":x / (:x - 10)"),
            Err(EvalError::DivisionByZero)
        );
        assert_eq!(
            eval_expression("9223372036854775807 + 1"),
            Err(EvalError::IntegerOutOfRange { operation: "+" })
        );
        assert_eq!(
            eval_expression("(-9223372036854775807 - 1) / -1"),
            Err(EvalError::IntegerOutOfRange { operation: "/" })
        );
        assert!(matches!(
            eval_expression("int(1e30)"),
            Err(EvalError::DoubleOutOfIntegerRange { .. })
        ));
        let error = eval_expression(":t + 1").unwrap_err();
        assert_eq!(
            error.to_string(),
            "variable :t holds \"abc\", which is not a number"
        );
        assert!(matches!(
            eval_expression("random(5, 1 * :x - 9)"),
            Err(EvalError::EmptyRange { lb: 5, ub: 1, .. })
        ));
        assert!(matches!(
            eval_expression("random_gaussian(1, 10, :x / 10)"),
            Err(EvalError::BadParameter { .. })
        ));
        assert!(matches!(
            eval_expression("random_exponential(1, 10, :x - 10)"),
            Err(EvalError::BadParameter { .. })
        ));
        assert!(matches!(
            eval_expression("random(-9223372036854775807 - 1, 9223372036854775807)"),
            Err(EvalError::RangeTooLarge { .. })
        ));
    }

    #[test]
    fn random_stays_in_range_and_hits_both_ends() {
        let values = draws("random(1, 6)", 10_000);
        assert!(values.iter().all(|value| (1..=6).contains(value)));
        for face in 1..=6 {
            assert!(values.contains(&face), "never drew {face}");
        }
        let values = draws("random(-3, -3)", 100);
        assert!(values.iter().all(|&value| value == -3));
        let values = draws("random(1, 1000)", 100_000);
        assert!(
            (mean(&values) - 500.5).abs() < 5.0,
            "mean {}",
            mean(&values)
        );
    }

    #[test]
    fn random_exponential_is_in_range_and_skewed_to_lb() {
        let values = draws("random_exponential(1, 1000, 5.0)", 100_000);
        assert!(values.iter().all(|value| (1..=1000).contains(value)));
        // Truncated exponential: mean offset 1000 * (1/5 - e^-5 / (1 - e^-5)) - 0.5 ~ 192.7.
        let mean = mean(&values);
        assert!((mean - 193.7).abs() < 8.0, "mean {mean}");
        // Share in the first 10%: (1 - e^-0.5) / (1 - e^-5) ~ 0.396.
        let first_tenth = values.iter().filter(|&&value| value <= 100).count() as f64;
        let share = first_tenth / values.len() as f64;
        assert!((share - 0.396).abs() < 0.02, "share {share}");
        let small = draws("random_exponential(1, 3, 0.5)", 5_000);
        assert!(small.iter().all(|value| (1..=3).contains(value)));
        assert!(small.contains(&1) && small.contains(&3));
    }

    #[test]
    fn random_gaussian_is_in_range_and_centred() {
        let values = draws("random_gaussian(1, 1000, 2.5)", 100_000);
        assert!(values.iter().all(|value| (1..=1000).contains(value)));
        let mean = mean(&values);
        assert!((mean - 500.5).abs() < 10.0, "mean {mean}");
        // pgbench: about 67% of values fall in the middle 1.0 / parameter of the range.
        let values = draws("random_gaussian(1, 1000, 4)", 100_000);
        let middle = values
            .iter()
            .filter(|&&value| (376..=625).contains(&value))
            .count() as f64;
        let share = middle / values.len() as f64;
        assert!((share - 0.683).abs() < 0.02, "share {share}");
        let small = draws("random_gaussian(1, 3, 2)", 5_000);
        assert!(small.iter().all(|value| (1..=3).contains(value)));
        assert!(small.contains(&1) && small.contains(&3));
    }

    #[test]
    fn sql_variables_casts_and_quotes() {
        let script = parse_ok(
            "\\set id 5\nSELECT :id::int, ':id', E'\\':id', \"a:id\", $$ :id $$, x::text, :id + :id;",
        );
        let id = script.variable_slot("id").unwrap();
        assert_eq!(
            sql_at(&script, 1),
            (
                "SELECT $1::int, ':id', E'\\':id', \"a:id\", $$ :id $$, x::text, $1 + $1",
                &[id][..]
            )
        );
        let script = parse_ok("SELECT a[1 : 2], ':' || 'it''s :x';");
        assert_eq!(
            sql_at(&script, 0),
            ("SELECT a[1 : 2], ':' || 'it''s :x'", &[][..])
        );
    }

    #[test]
    fn multi_line_statements_comments_and_semicolons_in_quotes() {
        let text = "\
-- a full-line comment

\\set a 1 -- trailing comment on a meta-command
\\set b 2
SELECT :a, -- trailing comment; with a semicolon
       ';' AS semi, \"x;y\", $body$ ; $$ ; $body$, /* ; /* nested ; */ */ :b
  FROM t;
INSERT INTO t VALUES (:b)
";
        let script = parse_ok(text);
        assert_eq!(script.commands.len(), 4);
        let a = script.variable_slot("a").unwrap();
        let b = script.variable_slot("b").unwrap();
        let (sql, params) = sql_at(&script, 2);
        assert_eq!(
            sql,
            "SELECT $1, \n       ';' AS semi, \"x;y\", $body$ ; $$ ; $body$,   $2\n  FROM t"
        );
        assert_eq!(params, &[a, b]);
        assert_eq!(script.commands[2].line(), 5);
        // A final statement without ';' is still a statement.
        assert_eq!(sql_at(&script, 3), ("INSERT INTO t VALUES ($1)", &[b][..]));
        assert_eq!(script.commands[3].line(), 8);
    }

    #[test]
    fn multi_line_string_keeps_line_numbers() {
        let script = parse_ok("SELECT 'a\nb';\n\n  SELECT 2;\n\\sleep 1");
        assert_eq!(sql_at(&script, 0).0, "SELECT 'a\nb'");
        assert_eq!(script.commands[1].line(), 4);
        assert_eq!(script.commands[2].line(), 5);
    }

    #[test]
    fn meta_command_continues_after_trailing_backslash() {
        let script = parse_ok("\\set a 1 + \\\n  2\nSELECT :a;");
        assert_eq!(script.commands[1].line(), 3);
        let vars = script.new_vars(0, 1, &[]);
        let mut rng = SmallRng::seed_from_u64(0);
        assert_eq!(
            eval(expr_at(&script, 0), &vars, &mut rng),
            Ok(Value::Int(3))
        );
    }

    #[test]
    fn sleep_units_and_variables() {
        let outside = vec![("pause".to_string(), "250".to_string())];
        let script = parse(
            "sleep.sql",
            "\\sleep 10 ms\n\\sleep 2\n\\sleep :pause us\n\\SLEEP 3 S",
            &["pause".to_string()],
        )
        .unwrap();
        let vars = script.new_vars(0, 1, &outside);
        let durations: Vec<u64> = script
            .commands
            .iter()
            .map(|command| match command {
                Command::Sleep { .. } => script.sleep_us(command, &vars).unwrap(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(durations, vec![10_000, 2_000_000, 250, 3_000_000]);

        let script = parse("sleep.sql", "\\set d -1\n\\sleep :d ms", &[]).unwrap();
        let mut vars = script.new_vars(0, 1, &[]);
        let mut rng = SmallRng::seed_from_u64(0);
        let value = eval(expr_at(&script, 0), &vars, &mut rng).unwrap();
        vars.set(script.variable_slot("d").unwrap(), value);
        let Command::Sleep {
            duration, unit_us, ..
        } = &script.commands[1]
        else {
            panic!("not a sleep: {:?}", script.commands[1]);
        };
        assert_eq!(
            sleep_duration_us(duration, *unit_us, &vars),
            Err(EvalError::NegativeSleep { amount: -1 })
        );
        vars.set(script.variable_slot("d").unwrap(), Value::Double(1.5));
        assert!(matches!(
            sleep_duration_us(duration, *unit_us, &vars),
            Err(EvalError::SleepNotInteger { .. })
        ));
    }

    #[test]
    fn new_vars_sets_predefined_and_outside_values() {
        let names = vec![
            "count".to_string(),
            "ratio".to_string(),
            "label".to_string(),
            "scale".to_string(),
        ];
        let script = parse(
            "vars.sql",
            "SELECT :count, :ratio, :label, :client_id, :scale;",
            &names,
        )
        .unwrap();
        let outside = vec![
            ("count".to_string(), "42".to_string()),
            ("ratio".to_string(), "2.5".to_string()),
            ("label".to_string(), "abc".to_string()),
            ("unused".to_string(), "1".to_string()),
        ];
        let vars = script.new_vars(7, 3, &outside);
        let value = |name: &str| vars.get(script.variable_slot(name).unwrap()).clone();
        assert_eq!(value("count"), Value::Int(42));
        assert_eq!(value("ratio"), Value::Double(2.5));
        assert_eq!(value("label"), Value::Text("abc".to_string()));
        assert_eq!(value("client_id"), Value::Int(7));
        assert_eq!(value("scale"), Value::Int(3));
        assert_eq!(script.variable_name(CLIENT_ID_SLOT), "client_id");
        assert_eq!(script.variable_name(SCALE_SLOT), "scale");

        let overridden = script.new_vars(0, 3, &[("scale".to_string(), "10".to_string())]);
        assert_eq!(overridden.get(SCALE_SLOT), &Value::Int(10));
        assert_eq!(
            Value::from_outside_text("12345678901234567890"),
            Value::Text("12345678901234567890".to_string())
        );
        assert_eq!(
            Value::from_outside_text("Infinity"),
            Value::Text("Infinity".to_string())
        );
    }

    #[test]
    fn params_render_like_pgbench() {
        assert_eq!(param_text(Value::Int(-42)), "-42");
        assert_eq!(param_text(Value::Double(1.5)), "1.5");
        assert_eq!(param_text(Value::Double(0.1)), "0.1");
        assert_eq!(param_text(Value::Double(1.0)), "1");
        assert_eq!(param_text(Value::Double(-0.0)), "-0");
        assert_eq!(param_text(Value::Double(100000.0)), "100000");
        assert_eq!(param_text(Value::Double(1e15)), "1e+15");
        assert_eq!(param_text(Value::Double(1e20)), "1e+20");
        assert_eq!(param_text(Value::Double(1e-5)), "1e-05");
        assert_eq!(param_text(Value::Double(0.0001)), "0.0001");
        assert_eq!(param_text(Value::Double(1.0 / 3.0)), "0.333333333333333");
        assert_eq!(
            param_text(Value::Double(std::f64::consts::PI)),
            "3.14159265358979"
        );
        assert_eq!(
            param_text(Value::Double(123456789012345678.0)),
            "1.23456789012346e+17"
        );
        assert_eq!(param_text(Value::Double(1.5e-300)), "1.5e-300");
        assert_eq!(param_text(Value::Double(f64::NAN)), "nan");
        assert_eq!(param_text(Value::Double(f64::NEG_INFINITY)), "-inf");
        assert_eq!(param_text(Value::Text("it's".to_string())), "it's");
    }

    #[test]
    fn error_unknown_function() {
        let message = parse_error("SELECT 1;\n\n\\set x random_zipf(1, 10, 1.5)");
        assert!(
            message.starts_with(
                "workloads/x.sql line 3: unknown function random_zipf in \\set; supported: \
                 random, random_exponential, random_gaussian, abs,"
            ),
            "{message}"
        );
        for function in ALL_FUNCTIONS {
            assert_eq!(Function::from_name(function.name()), Some(function));
            assert!(message.contains(function.name()));
        }
    }

    #[test]
    fn error_unsupported_meta_commands() {
        let message = parse_error("SELECT 1;\nSELECT 2 AS x \\gset");
        assert_eq!(
            message,
            "workloads/x.sql line 2: unsupported meta-command \\gset; stallbench supports \\set and \\sleep"
        );
        for command in [
            "\\if true",
            "\\shell ls",
            "\\setshell x ls",
            "\\startpipeline",
        ] {
            let message = parse_error(&format!("\\set a 1\n  {command}\nSELECT 1;"));
            let word = command.split_whitespace().next().unwrap();
            assert!(
                message.starts_with(&format!(
                    "workloads/x.sql line 2: unsupported meta-command {word};"
                )),
                "{message}"
            );
        }
        assert!(parse_error("\\setrandom a 1 10").contains("\\set name random(lb, ub)"));
    }

    #[test]
    fn error_undefined_variable() {
        let message = parse_error("\\set a 1\nSELECT :a,\n  :b;");
        assert!(
            message.starts_with("workloads/x.sql line 3: undefined variable :b in SQL;"),
            "{message}"
        );
        let message = parse_error("\\set a :a + 1");
        assert!(
            message.starts_with("workloads/x.sql line 1: undefined variable :a in \\set;"),
            "{message}"
        );
        let message = parse_error("SELECT 1;\n\\sleep :pause ms");
        assert!(
            message.starts_with("workloads/x.sql line 2: undefined variable :pause in \\sleep;"),
            "{message}"
        );
        // Defined from the outside, it is fine.
        assert!(parse("x.sql", "SELECT :b;", &["b".to_string()]).is_ok());
    }

    #[test]
    fn error_unterminated_quotes_and_comments() {
        let message = parse_error("SELECT 1;\nSELECT 'abc;\nSELECT 2;");
        assert!(
            message.starts_with("workloads/x.sql line 2: unterminated quoted string"),
            "{message}"
        );
        let message = parse_error("\n\nSELECT \"abc;");
        assert!(message.starts_with("workloads/x.sql line 3: unterminated quoted identifier"));
        let message = parse_error("DO $fn$ BEGIN NULL; END $$;");
        assert!(
            message
                .starts_with("workloads/x.sql line 1: unterminated dollar-quoted string: the $fn$"),
            "{message}"
        );
        let message = parse_error("SELECT 1 /* oops;\n");
        assert!(message.starts_with("workloads/x.sql line 1: unterminated /* comment"));
    }

    #[test]
    fn error_bad_set_syntax() {
        let cases = [
            ("\\set", "missing variable name"),
            ("\\set x", "missing expression"),
            ("\\set x 1 +", "bad \\set syntax: the expression ends"),
            ("\\set x (1 + 2", "missing ')'"),
            (
                "\\set x 1 2",
                "unexpected number 2 after a complete expression",
            ),
            (
                "\\set x foo + 1",
                "unexpected word \"foo\"; variables are written :foo",
            ),
            ("\\set 1x 5", "invalid variable name \"1x\""),
            ("\\set :x 5", "without the colon"),
            ("\\set x 5 & 3", "unexpected character '&'"),
            (
                "\\set x random(1)",
                "function random takes 2 argument(s) but got 1",
            ),
            ("\\set x least()", "takes at least 1 argument(s)"),
            ("\\set x 99999999999999999999", "out of the 64-bit range"),
            (
                "\\set x random_gaussian(1, 10, 1.5)",
                "random_gaussian parameter must be at least 2.0, got 1.5",
            ),
            (
                "\\set x random_exponential(1, 10, 0)",
                "random_exponential parameter must be greater than 0, got 0",
            ),
            ("\\set x random(10, -1)", "empty range in random(10, -1"),
        ];
        for (text, expected) in cases {
            let message = parse_error(&format!("SELECT 1;\n{text}\nSELECT 2;"));
            assert!(
                message.starts_with("workloads/x.sql line 2: ") && message.contains(expected),
                "{text}: {message}"
            );
        }
    }

    #[test]
    fn error_bad_sleep_syntax_and_other_sql_problems() {
        let cases = [
            ("\\sleep", "missing duration"),
            (
                "\\sleep 10ms",
                "duration \"10ms\" is not a non-negative integer",
            ),
            ("\\sleep 1.5 s", "for fractions use a smaller unit"),
            ("\\sleep 10 min", "unknown unit \"min\"; use us, ms or s"),
            ("\\sleep 1 s extra", "too many arguments"),
            ("SELECT $1;", "positional parameter"),
        ];
        for (text, expected) in cases {
            let message = parse_error(&format!("\n{text}"));
            assert!(
                message.starts_with("workloads/x.sql line 2: ") && message.contains(expected),
                "{text}: {message}"
            );
        }
        assert!(parse_error("-- nothing\n\n").contains("script has no commands"));
    }

    #[test]
    fn sql_commands_lists_statements_in_order() {
        let script = parse_ok("\\set a 1\nSELECT 1;;\n\\sleep 1 ms\nSELECT :a;");
        let sql: Vec<&str> = script.sql_commands().collect();
        assert_eq!(sql, vec!["SELECT 1", "SELECT $1"]);
    }
}
