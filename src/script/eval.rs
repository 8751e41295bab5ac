//! Evaluating expressions with pgbench's semantics: integer arithmetic is
//! checked, a double anywhere makes the operation double, NULL in makes NULL
//! out, `AND`/`OR`/`CASE` evaluate lazily, doubles become integers by
//! rounding, and booleans never become numbers (nor numbers booleans).

use thiserror::Error;

use super::expression::{Expr, Function};
use super::functions;
use super::prng::Prng;
use super::value::{Scalar, Vars};

/// Most arguments of one call, as in pgbench.
const MAX_ARGUMENTS: usize = 16;

/// A problem found while running a command; the messages follow pgbench's.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum EvalError {
    #[error("division by zero")]
    DivisionByZero,
    /// An integer result does not fit in 64 bits.
    #[error("bigint {operation} out of range")]
    IntegerOutOfRange { operation: &'static str },
    #[error("double to int overflow for {value}")]
    DoubleToIntOverflow { value: f64 },
    #[error("cannot coerce {from} to {to}")]
    CannotCoerce {
        from: &'static str,
        to: &'static str,
    },
    #[error("undefined variable \"{name}\"")]
    UndefinedVariable { name: String },
    #[error("malformed variable \"{name}\" value: \"{value}\"")]
    MalformedVariable { name: String, value: String },
    #[error("variable \"{name}\" is empty")]
    EmptyVariable { name: String },
    #[error("value \"{value}\" is out of range for type bigint")]
    BigintOutOfRange { value: String },
    #[error("too many function arguments, maximum is {MAX_ARGUMENTS}")]
    TooManyArguments,
    #[error("empty range given to random")]
    EmptyRange,
    #[error("random range is too large")]
    RangeTooLarge,
    #[error("gaussian parameter must be at least 2.0 (not {parameter})")]
    GaussianParameter { parameter: f64 },
    #[error("exponential parameter must be greater than zero (not {parameter})")]
    ExponentialParameter { parameter: f64 },
    #[error("zipfian parameter must be in range [1.001, 1000] (not {parameter})")]
    ZipfianParameter { parameter: f64 },
    #[error("permute size parameter must be greater than zero")]
    PermuteSize,
    /// A `\sleep :var` whose variable does not start with a number.
    #[error("invalid sleep time \"{value}\" for variable \"{name}\"")]
    SleepTime { name: String, value: String },
    /// A `\gset` query that did not return exactly one row.
    #[error("expected one row, got {rows}")]
    GsetRows { rows: usize },
    /// A `\gset`/`\aset` column whose name is not a variable name.
    #[error("error storing into variable {name}")]
    BadColumnName { name: String },
    /// `\shell`/`\setshell` failed.
    #[error("{0}")]
    Shell(String),
}

impl EvalError {
    /// `cannot coerce <type> to <wanted>`.
    pub fn cannot_coerce(value: Scalar, to: &'static str) -> EvalError {
        EvalError::CannotCoerce {
            from: value.type_name(),
            to,
        }
    }
}

/// What an evaluation needs besides the expression: the client's variables,
/// its random generator, and where `debug()` says it was called from.
pub struct Evaluator<'a> {
    pub vars: &'a Vars,
    pub prng: &'a mut Prng,
    /// `script=...,command=N` for `debug()`'s line on stderr.
    pub debug_place: &'a dyn Fn() -> String,
}

impl Evaluator<'_> {
    /// The value of `expr`.
    pub fn eval(&mut self, expr: &Expr) -> Result<Scalar, EvalError> {
        match expr {
            Expr::Const(value) => Ok(*value),
            Expr::Variable { slot, name } => match self.vars.get(*slot) {
                Some(value) => value.to_scalar(name),
                None => Err(EvalError::UndefinedVariable { name: name.clone() }),
            },
            Expr::Defined { slot } => Ok(Scalar::Bool(self.vars.get(*slot).is_some())),
            Expr::And(left, right) => match self.eval(left)? {
                Scalar::Null => Ok(Scalar::Null),
                first if !first.to_bool()? => Ok(Scalar::Bool(false)),
                _ => self.eval_bool_or_null(right),
            },
            Expr::Or(left, right) => match self.eval(left)? {
                Scalar::Null => Ok(Scalar::Null),
                first if first.to_bool()? => Ok(Scalar::Bool(true)),
                _ => self.eval_bool_or_null(right),
            },
            Expr::Case {
                branches,
                otherwise,
            } => {
                for (condition, value) in branches {
                    if self.eval(condition)?.truth() {
                        return self.eval(value);
                    }
                }
                self.eval(otherwise)
            }
            Expr::Call { function, args } => self.call(*function, args),
        }
    }

    /// The second operand of `AND`/`OR`: NULL or a boolean.
    fn eval_bool_or_null(&mut self, expr: &Expr) -> Result<Scalar, EvalError> {
        match self.eval(expr)? {
            Scalar::Null => Ok(Scalar::Null),
            other => Ok(Scalar::Bool(other.to_bool()?)),
        }
    }

    fn call(&mut self, function: Function, args: &[Expr]) -> Result<Scalar, EvalError> {
        let mut values = [Scalar::Null; MAX_ARGUMENTS];
        let mut has_null = false;
        for (index, arg) in args.iter().enumerate() {
            if index == MAX_ARGUMENTS {
                return Err(EvalError::TooManyArguments);
            }
            values[index] = self.eval(arg)?;
            has_null |= values[index] == Scalar::Null;
        }
        let values = &values[..args.len()];
        if has_null && !matches!(function, Function::Is | Function::Debug) {
            return Ok(Scalar::Null);
        }
        if function == Function::Debug {
            eprintln!("debug({}): {}", (self.debug_place)(), describe(values[0]));
            return Ok(values[0]);
        }
        functions::apply(function, values, self.prng)
    }
}

/// How `debug()` prints a value, as pgbench does.
fn describe(value: Scalar) -> String {
    match value {
        Scalar::Null => "null".to_string(),
        Scalar::Bool(value) => format!("boolean {value}"),
        Scalar::Int(value) => format!("int {value}"),
        Scalar::Double(value) => {
            let mut text = String::from("double ");
            Scalar::Double(value).write_text(&mut text);
            text
        }
    }
}
