//! Script variable values, pgbench's truth and coercion rules, and how a value
//! becomes SQL parameter text.
//!
//! A variable holds either a typed value (from `\set`) or text (from outside,
//! `--set name=value`, or from a query, `\gset`). Text is substituted into SQL
//! as it is, and read as a number, a boolean or NULL only when an expression
//! uses it, as pgbench does: `--set flag=t` is the text `t` in SQL and `true`
//! in `\if :flag`.

use std::fmt::Write as _;

use super::eval::EvalError;

/// Significant digits pgbench uses when it prints a double (`%.15g`, `DBL_DIG`).
const DOUBLE_SIGNIFICANT_DIGITS: i32 = 15;

/// A typed value: what expressions compute.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
}

impl Scalar {
    /// pgbench's type name, for errors.
    pub fn type_name(self) -> &'static str {
        match self {
            Scalar::Null => "null",
            Scalar::Bool(_) => "boolean",
            Scalar::Int(_) => "int",
            Scalar::Double(_) => "double",
        }
    }

    /// Truth for `\if` and `CASE WHEN`: non-zero numbers and `true` are true;
    /// zero, `false` and NULL are false.
    pub fn truth(self) -> bool {
        match self {
            Scalar::Null => false,
            Scalar::Bool(value) => value,
            Scalar::Int(value) => value != 0,
            Scalar::Double(value) => value != 0.0,
        }
    }

    /// The value as a boolean; only booleans are (pgbench does not coerce numbers).
    pub fn to_bool(self) -> Result<bool, EvalError> {
        match self {
            Scalar::Bool(value) => Ok(value),
            other => Err(EvalError::cannot_coerce(other, "boolean")),
        }
    }

    /// The value as an integer; a double is rounded to the nearest (ties to
    /// even, C's `rint`) and must fit in 64 bits.
    pub fn to_int(self) -> Result<i64, EvalError> {
        match self {
            Scalar::Int(value) => Ok(value),
            Scalar::Double(value) => {
                let rounded = value.round_ties_even();
                let two_to_the_63 = -(i64::MIN as f64);
                if rounded >= -two_to_the_63 && rounded < two_to_the_63 {
                    Ok(rounded as i64)
                } else {
                    Err(EvalError::DoubleToIntOverflow { value: rounded })
                }
            }
            other => Err(EvalError::cannot_coerce(other, "int")),
        }
    }

    /// The value as a double.
    pub fn to_double(self) -> Result<f64, EvalError> {
        match self {
            Scalar::Int(value) => Ok(value as f64),
            Scalar::Double(value) => Ok(value),
            other => Err(EvalError::cannot_coerce(other, "double")),
        }
    }

    /// Appends the text pgbench substitutes: `NULL`, `true`/`false`, the
    /// integer, the double as C's `%.15g`.
    pub fn write_text(self, out: &mut String) {
        match self {
            Scalar::Null => out.push_str("NULL"),
            Scalar::Bool(value) => out.push_str(if value { "true" } else { "false" }),
            Scalar::Int(value) => {
                let _ = write!(out, "{value}");
            }
            Scalar::Double(value) => write_double(value, out),
        }
    }
}

/// The value of a script variable.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A typed value, from `\set` or a predefined variable.
    Scalar(Scalar),
    /// Text from outside (`--set`), a query (`\gset`, `\aset`): typed when an
    /// expression reads it.
    Text(String),
}

impl Value {
    /// An integer value.
    pub fn int(value: i64) -> Value {
        Value::Scalar(Scalar::Int(value))
    }

    /// Appends the text pgbench would substitute for this value (text as it is).
    pub fn write_param(&self, out: &mut String) {
        match self {
            Value::Scalar(scalar) => scalar.write_text(out),
            Value::Text(text) => out.push_str(text),
        }
    }

    /// The text [`Value::write_param`] appends, as a new string.
    pub fn to_param_string(&self) -> String {
        let mut text = String::new();
        self.write_param(&mut text);
        text
    }

    /// The typed value; text is read as pgbench reads a variable's text.
    pub fn to_scalar(&self, name: &str) -> Result<Scalar, EvalError> {
        match self {
            Value::Scalar(scalar) => Ok(*scalar),
            Value::Text(text) => scalar_from_text(name, text),
        }
    }
}

/// Reads a variable's text as pgbench does: `null`; a prefix of `true` or
/// `yes`, or `on`; a prefix of `false` or `no`, or `off`/`of`; an integer
/// (which must fit in 64 bits); else a double.
pub fn scalar_from_text(name: &str, text: &str) -> Result<Scalar, EvalError> {
    if text.is_empty() {
        return Err(EvalError::EmptyVariable {
            name: name.to_string(),
        });
    }
    let is_prefix_of =
        |word: &str| text.len() <= word.len() && word[..text.len()].eq_ignore_ascii_case(text);
    if text.eq_ignore_ascii_case("null") {
        return Ok(Scalar::Null);
    }
    if is_prefix_of("true") || is_prefix_of("yes") || text.eq_ignore_ascii_case("on") {
        return Ok(Scalar::Bool(true));
    }
    if is_prefix_of("false")
        || is_prefix_of("no")
        || text.eq_ignore_ascii_case("off")
        || text.eq_ignore_ascii_case("of")
    {
        return Ok(Scalar::Bool(false));
    }
    let malformed = || EvalError::MalformedVariable {
        name: name.to_string(),
        value: text.to_string(),
    };
    if looks_like_integer(text) {
        return text
            .trim_start()
            .parse::<i64>()
            .map(Scalar::Int)
            .map_err(|_| EvalError::BigintOutOfRange {
                value: text.to_string(),
            });
    }
    parse_c_double(text)
        .map(Scalar::Double)
        .ok_or_else(malformed)
}

/// Whether `text` is `^\s*[-+]?[0-9]+$`, pgbench's test for an integer.
fn looks_like_integer(text: &str) -> bool {
    let digits = text
        .trim_start()
        .strip_prefix(['+', '-'])
        .unwrap_or(text.trim_start());
    !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit())
}

/// A double as C's `strtod` reads a whole string, refusing out-of-range values.
pub fn parse_c_double(text: &str) -> Option<f64> {
    let trimmed = text.trim_start();
    let value: f64 = trimmed.trim_end().parse().ok()?;
    let says_infinite = trimmed.to_ascii_lowercase().contains("inf");
    match value.is_infinite() && !says_infinite {
        true => None,
        false => Some(value),
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

/// One client's variables, one per slot of its [`Script`](super::Script);
/// a slot nothing has set yet is empty (an undefined variable).
#[derive(Debug, Clone, PartialEq)]
pub struct Vars {
    values: Vec<Option<Value>>,
}

impl Vars {
    /// The value in `slot`, `None` while undefined. Panics if the slot is not from this script.
    pub fn get(&self, slot: usize) -> Option<&Value> {
        self.values[slot].as_ref()
    }

    /// Stores `value` in `slot`. Panics if the slot is not from this script.
    pub fn set(&mut self, slot: usize, value: Value) {
        self.values[slot] = Some(value);
    }

    /// Stores text in `slot`, reusing the slot's string when it holds text.
    pub fn set_text(&mut self, slot: usize, text: &str) {
        match &mut self.values[slot] {
            Some(Value::Text(existing)) => {
                existing.clear();
                existing.push_str(text);
            }
            other => *other = Some(Value::Text(text.to_string())),
        }
    }

    /// Makes these variables what `other`'s are (the same script's), reusing
    /// the strings already held: a retried transaction's rewind.
    pub fn copy_from(&mut self, other: &Vars) {
        debug_assert_eq!(self.values.len(), other.values.len());
        for (mine, theirs) in self.values.iter_mut().zip(&other.values) {
            match (mine, theirs) {
                (Some(Value::Text(mine)), Some(Value::Text(theirs))) => {
                    mine.clear();
                    mine.push_str(theirs);
                }
                (mine, theirs) => mine.clone_from(theirs),
            }
        }
    }

    /// Variables for `slot_count` slots, all undefined.
    pub(super) fn empty(slot_count: usize) -> Vars {
        Vars {
            values: vec![None; slot_count],
        }
    }
}
