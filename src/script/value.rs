//! Script variable values and how they become SQL parameter text.
//!
//! pgbench substitutes a variable into SQL as text; a double must print exactly as C's
//! `%.15g` would, or the server sees different numbers than under pgbench.

use std::fmt::Write as _;

/// Significant digits pgbench uses when it prints a double (`%.15g`, `DBL_DIG`).
const DOUBLE_SIGNIFICANT_DIGITS: i32 = 15;

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

    /// The text [`Value::write_param`] appends, as a new string (for error messages).
    pub(super) fn to_param_string(&self) -> String {
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

/// One client's variable values, one per slot of its [`Script`](super::Script).
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

    /// Variables for `slot_count` slots, each empty text until set.
    pub(super) fn empty(slot_count: usize) -> Vars {
        Vars {
            values: vec![Value::Text(String::new()); slot_count],
        }
    }
}
