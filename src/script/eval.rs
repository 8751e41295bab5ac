//! Running a parsed script's commands: `\set` expressions and `\sleep` durations.
//!
//! This runs millions of times per run, so it works on slots and plain numbers only: no
//! name lookups, no allocation except in errors. Arithmetic follows pgbench (checked
//! integers, C division and modulo) and so do the random draws.

use rand::RngExt;
use thiserror::Error;

use super::SleepAmount;
use super::expression::{BinaryOp, Expr, Function, MIN_GAUSSIAN_PARAMETER};
use super::value::{Value, Vars};

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
