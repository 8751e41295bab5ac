//! A generated value as the text PostgreSQL's input functions read, and
//! that text as a field of `COPY ... FROM STDIN`'s text format. Written by
//! hand: the values follow this generator's own rules (distinct where a
//! unique key needs it, within the bounds a CHECK sets, one of an enum's
//! labels), which no fake-data crate knows, and the COPY form is four
//! escapes.
//!
//! A value that must be distinct is an injective function of its index (the
//! row number, or a digit of a unique key's mixed radix: `email-000042`,
//! `2000-01-01 00:00:42`), and sorts as its index does (numbers zero-padded
//! to the rows' digits, a UUID whose last half is the index), so the rows
//! reach a key's index in its own order. Any other value is drawn from a
//! hash of the row number and the column's seed ([`draw`]), so the same seed
//! gives the same rows. Dates and timestamps of one row share their draw and
//! step by the column's place, so a later column is later
//! (`ends_at > starts_at`).

use std::fmt::Write;

use super::values::{ValueKind, range_span};

/// A field that is NULL in COPY's text format.
pub(super) const NULL: &str = "\\N";

/// Days from 1970-01-01 to 2000-01-01, where distinct dates start.
pub(super) const DAY_2000: i64 = 10_957;
/// Days from 1970-01-01 to 2020-01-01, where drawn dates start.
const DAY_2020: i64 = 18_262;

/// A draw for row `row` of the column seeded `seed`: a non-negative 63-bit
/// number (splitmix64's mix, a bijection of its input).
pub(super) fn draw(row: u64, seed: i64) -> u64 {
    mix(row ^ (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 1
}

fn mix(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What a column's values depend on besides the row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Source {
    /// The column's own seed for its draws.
    pub seed: i64,
    /// The row's seed for dates and times (shared by the row's columns).
    pub row_seed: i64,
    /// The column's place among the row's date and time columns.
    pub time_place: u32,
    /// Distinct text starts `prefix-` (empty: no prefix, it does not fit).
    pub prefix: String,
    /// Distinct text's number is zero-padded to this many digits.
    pub width: usize,
}

impl Source {
    /// The source of a column named `name` of `rows` rows: distinct text is
    /// `name-000042` when the name (its first 12 letters, digits and `_`)
    /// and the rows' digits fit the type's length, else `000042`.
    pub fn new(seed: i64, row_seed: i64, time_place: u32, name: &str, rows: u64) -> Self {
        Source {
            seed,
            row_seed,
            time_place,
            prefix: name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(12)
                .collect(),
            width: (rows.max(1).ilog10() + 1) as usize,
        }
    }

    /// The source fitted to a text type of at most `max_chars` characters.
    pub fn fitted(mut self, max_chars: Option<u32>) -> Self {
        let Some(chars) = max_chars.map(|chars| chars as usize) else {
            return self;
        };
        if self.prefix.len() + 1 + self.width > chars {
            self.prefix.clear();
        }
        self.width = self.width.min(chars);
        self
    }
}

/// A generated value before it is written: numbers as numbers, so that
/// COPY's text form (here) and its binary form (`binary`) are both made
/// from them; a text-like value (text, a label, JSON, an array) is written
/// as text straight away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Value {
    /// Already written to the caller's string, as the type reads it.
    Text,
    Whole(i128),
    /// `whole` units of `10^-scale`.
    Decimal {
        whole: u64,
        scale: u32,
    },
    /// A drawn float, in hundredths.
    Hundredths(u64),
    Bool(bool),
    /// Days after 1970-01-01.
    Date(i64),
    /// Seconds after 1970-01-01 00:00.
    Timestamp(i64),
    /// Seconds after midnight.
    Time(u64),
    Minutes(u64),
    /// A UUID's 16 bytes, as two halves.
    Uuid {
        high: u64,
        low: u64,
    },
    /// 16 bytes, as two halves.
    Bytea {
        high: u64,
        low: u64,
    },
    /// An IPv4 address.
    Inet(u32),
}

/// Writes the value of `kind` for row `row` (from 1) to `out`, as the type's
/// input function reads it: distinct over rows when `distinct` gives its
/// index (from 1).
pub(super) fn write_value(
    kind: &ValueKind,
    source: &Source,
    row: u64,
    distinct: Option<u64>,
    out: &mut String,
) {
    let value = value(kind, source, row, distinct, out);
    write_text(value, out);
}

/// The value of `kind` for row `row` (from 1), distinct over rows when
/// `distinct` gives its index (from 1); a [`Value::Text`] is appended to
/// `text`.
pub(super) fn value(
    kind: &ValueKind,
    source: &Source,
    row: u64,
    distinct: Option<u64>,
    text: &mut String,
) -> Value {
    let draw = draw(row, source.seed);
    let index = distinct.unwrap_or(row);
    match (kind, distinct) {
        (ValueKind::Int { .. }, Some(i)) => Value::Whole(i.into()),
        (ValueKind::Int { bits: 16 }, None) => Value::Whole((1 + draw % 1000).into()),
        (ValueKind::Int { bits: 32 }, None) => Value::Whole((1 + draw % 1_000_000).into()),
        (ValueKind::Int { .. }, None) => Value::Whole((1 + draw % 1_000_000_000).into()),
        (
            ValueKind::Numeric {
                integer_digits,
                scale,
            },
            _,
        ) => {
            // At least one unit when drawn: positive, as CHECKs (price > 0) often ask.
            let span = 10u64.pow(integer_digits + scale);
            let whole = distinct.unwrap_or_else(|| 1 + draw % (span - 1));
            Value::Decimal {
                whole,
                scale: *scale,
            }
        }
        (ValueKind::Float, Some(i)) => Value::Whole(i.into()),
        (ValueKind::Float, None) => Value::Hundredths(1 + draw % 1_000_000),
        (ValueKind::Text { .. }, Some(i)) => {
            if !source.prefix.is_empty() {
                text.push_str(&source.prefix);
                text.push('-');
            }
            push_digits(i, source.width, text);
            Value::Text
        }
        (ValueKind::Text { max_chars }, None) => {
            let chars = max_chars.unwrap_or(16).min(16);
            // The first `chars` of the 16 hex digits of the mixed draw.
            let hex = mix(draw);
            for place in 0..chars {
                let digit = (hex >> (60 - 4 * place)) & 0xf;
                text.push(char::from_digit(digit as u32, 16).unwrap_or('0'));
            }
            Value::Text
        }
        (ValueKind::Bool, _) => Value::Bool(distinct.unwrap_or(draw).is_multiple_of(2)),
        (ValueKind::Date | ValueKind::Timestamp | ValueKind::Time, _) => {
            when(kind, source, row, distinct)
        }
        (ValueKind::Interval, _) => Value::Minutes(distinct.unwrap_or(draw % 10_000)),
        (ValueKind::Uuid, _) => Value::Uuid {
            high: mix(source.seed as u64),
            low: index,
        },
        (ValueKind::Json, _) => {
            // Writing to a String cannot fail.
            let _ = write!(text, "{{\"n\": {index}, \"v\": {}}}", draw % 1000);
            Value::Text
        }
        (ValueKind::Bytea, _) => Value::Bytea {
            high: mix(source.seed as u64),
            low: index,
        },
        (ValueKind::Inet, _) => {
            // 10.0.0.0 on; past 2^32 addresses they wrap, as IPv4 does.
            Value::Inet((0x0A00_0000u64 + distinct.unwrap_or(draw % 16_777_216)) as u32)
        }
        (ValueKind::OneOf(values), _) => {
            let pick = distinct.map_or(draw, |i| i - 1);
            text.push_str(&values[(pick % values.len() as u64) as usize]);
            Value::Text
        }
        (ValueKind::IntRange { low, .. }, Some(i)) => {
            Value::Whole(i128::from(*low) + i128::from(i) - 1)
        }
        (ValueKind::IntRange { low, high }, None) => {
            Value::Whole(i128::from(*low) + i128::from(draw % range_span(*low, *high)))
        }
        (ValueKind::Array(element), _) => {
            let mut value = String::new();
            write_value(element, source, row, distinct, &mut value);
            text.push('{');
            quote_element(&value, text);
            text.push('}');
            Value::Text
        }
    }
}

/// Appends `value` to `out` as its type's input function reads it (a
/// [`Value::Text`] is there already).
fn write_text(value: Value, out: &mut String) {
    // Writing to a String cannot fail.
    let _ = match value {
        Value::Text => Ok(()),
        Value::Whole(whole) => match u64::try_from(whole) {
            Ok(whole) => {
                push_digits(whole, 1, out);
                Ok(())
            }
            Err(_) => write!(out, "{whole}"),
        },
        Value::Decimal { whole, scale } => {
            write_decimal(whole, scale, out);
            Ok(())
        }
        Value::Hundredths(hundredths) => {
            write!(out, "{}.{:02}", hundredths / 100, hundredths % 100)
        }
        Value::Bool(even) => {
            out.push(if even { 't' } else { 'f' });
            Ok(())
        }
        Value::Date(days) => write_date(days, out),
        Value::Timestamp(seconds) => write_timestamp(seconds, out),
        Value::Time(second) => write!(
            out,
            "{:02}:{:02}:{:02}",
            second / 3600,
            second / 60 % 60,
            second % 60
        ),
        Value::Minutes(minutes) => write!(out, "{minutes} minutes"),
        Value::Uuid { high, low } => write!(
            out,
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            high >> 32,
            (high >> 16) & 0xffff,
            high & 0xffff,
            low >> 48,
            low & 0xffff_ffff_ffff
        ),
        Value::Bytea { high, low } => write!(out, "\\x{high:016x}{low:016x}"),
        Value::Inet(address) => {
            let octet = |shift: u32| (address >> shift) & 0xff;
            write!(out, "{}.{}.{}.{}", octet(24), octet(16), octet(8), octet(0))
        }
    };
}

/// A date, timestamp or time: distinct ones step from 2000-01-01 (or
/// midnight) by their index, drawn ones lie in 2020 to 2024 by the row's
/// shared draw; each date and timestamp column a day or an hour after the
/// one before it in the row.
fn when(kind: &ValueKind, source: &Source, row: u64, distinct: Option<u64>) -> Value {
    let draw = draw(row, source.seed);
    let place = i64::from(source.time_place);
    let row_draw = || self::draw(row, source.row_seed);
    match (kind, distinct) {
        (ValueKind::Date, Some(i)) => Value::Date(DAY_2000 + i as i64 + place),
        (ValueKind::Date, None) => Value::Date(DAY_2020 + (row_draw() % 1826) as i64 + place),
        (ValueKind::Timestamp, Some(i)) => {
            Value::Timestamp(DAY_2000 * 86_400 + i as i64 + place * 3600)
        }
        (ValueKind::Timestamp, None) => {
            let second = (row_draw() % 157_680_000) as i64;
            Value::Timestamp(DAY_2020 * 86_400 + second + place * 3600)
        }
        _ => Value::Time(distinct.unwrap_or(draw) % 86_400),
    }
}

/// Appends `value` in decimal, zero-padded to at least `width` digits (as
/// `{value:0width$}` writes it, without `fmt`'s machinery: the rows' hot
/// path writes several numbers per row).
fn push_digits(mut value: u64, width: usize, out: &mut String) {
    let mut digits = [b'0'; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    for _ in (digits.len() - start)..width {
        out.push('0');
    }
    // ASCII digits.
    out.push_str(std::str::from_utf8(&digits[start..]).unwrap_or_default());
}

/// `whole` units of `10^-scale`: `1234` at scale 2 is `12.34`.
fn write_decimal(whole: u64, scale: u32, out: &mut String) {
    if scale == 0 {
        return push_digits(whole, 1, out);
    }
    let unit = 10u64.pow(scale);
    push_digits(whole / unit, 1, out);
    out.push('.');
    push_digits(whole % unit, scale as usize, out)
}

/// The date `days` after 1970-01-01, as `YYYY-MM-DD`.
fn write_date(days: i64, out: &mut String) -> std::fmt::Result {
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        return write!(out, "{year:04}-{month:02}-{day:02}");
    }
    push_digits(year as u64, 4, out);
    out.push('-');
    push_digits(u64::from(month), 2, out);
    out.push('-');
    push_digits(u64::from(day), 2, out);
    Ok(())
}

/// The time `seconds` after 1970-01-01 00:00, as `YYYY-MM-DD HH:MM:SS`
/// (read in the session's time zone for a `timestamptz`: the fill's is UTC).
fn write_timestamp(seconds: i64, out: &mut String) -> std::fmt::Result {
    write_date(seconds.div_euclid(86_400), out)?;
    let second = seconds.rem_euclid(86_400) as u64;
    out.push(' ');
    push_digits(second / 3600, 2, out);
    out.push(':');
    push_digits(second / 60 % 60, 2, out);
    out.push(':');
    push_digits(second % 60, 2, out);
    Ok(())
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_place = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_place + 2) / 5 + 1) as u32;
    let month = if month_place < 10 {
        month_place + 3
    } else {
        month_place - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `value` as a quoted element of an array's text form (`"a \"b\""`).
fn quote_element(value: &str, out: &mut String) {
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// Appends `value` to `out` as a field of COPY's text format: backslash,
/// tab, newline and carriage return escaped (so no value reads as `\N`).
pub(super) fn push_field(value: &str, out: &mut Vec<u8>) {
    let bytes = value.as_bytes();
    if !bytes
        .iter()
        .any(|b| matches!(b, b'\\' | b'\t' | b'\n' | b'\r'))
    {
        out.extend_from_slice(bytes);
        return;
    }
    for &byte in bytes {
        match byte {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            byte => out.push(byte),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn source(name: &str, rows: u64) -> Source {
        Source::new(7, 8, 1, name, rows)
    }

    fn value(kind: &ValueKind, source: &Source, row: u64, distinct: Option<u64>) -> String {
        let mut out = String::new();
        write_value(kind, source, row, distinct, &mut out);
        out
    }

    #[test]
    fn distinct_text_is_the_name_and_the_padded_index_when_it_fits() {
        let text = ValueKind::Text { max_chars: None };
        assert_eq!(
            value(&text, &source("e-mail", 100_000), 5, Some(42)),
            "email-000042"
        );
        let short = source("email", 100_000).fitted(Some(8));
        assert_eq!(value(&text, &short, 5, Some(42)), "000042");
        let tiny = source("email", 100_000).fitted(Some(3));
        assert_eq!(value(&text, &tiny, 5, Some(42)), "042");
        // Zero-padded: the values sort as the rows do.
        let rows: Vec<String> = (1..=1000)
            .map(|i| value(&text, &source("code", 1000), i, Some(i)))
            .collect();
        assert!(rows.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn each_kind_writes_text_its_type_reads() {
        let s = source("c", 100);
        let int = ValueKind::Int { bits: 16 };
        let drawn: u64 = value(&int, &s, 3, None).parse().unwrap();
        assert!((1..=1000).contains(&drawn));
        assert_eq!(value(&int, &s, 3, Some(9)), "9");
        let money = ValueKind::Numeric {
            integer_digits: 3,
            scale: 2,
        };
        assert_eq!(value(&money, &s, 1, Some(1234)), "12.34");
        assert_eq!(value(&money, &s, 1, Some(5)), "0.05");
        let price: f64 = value(&money, &s, 4, None).parse().unwrap();
        assert!(price > 0.0 && price < 1000.0);
        assert_eq!(value(&ValueKind::Bool, &s, 1, Some(2)), "t");
        assert_eq!(value(&ValueKind::Date, &s, 1, Some(1)), "2000-01-03");
        assert_eq!(
            value(&ValueKind::Timestamp, &s, 1, Some(61)),
            "2000-01-01 01:01:01"
        );
        assert_eq!(value(&ValueKind::Time, &s, 1, Some(3661)), "01:01:01");
        assert_eq!(value(&ValueKind::Interval, &s, 1, Some(5)), "5 minutes");
        let uuid = value(&ValueKind::Uuid, &s, 1, Some(42));
        assert_eq!(uuid.len(), 36);
        assert!(uuid.ends_with("-0000-00000000002a"), "{uuid}");
        assert!(value(&ValueKind::Json, &s, 7, None).starts_with("{\"n\": 7, \"v\": "));
        assert_eq!(value(&ValueKind::Bytea, &s, 1, Some(1)).len(), 2 + 32);
        assert_eq!(value(&ValueKind::Inet, &s, 1, Some(258)), "10.0.1.2");
        let range = ValueKind::IntRange { low: -2, high: 2 };
        assert_eq!(value(&range, &s, 1, Some(1)), "-2");
        let drawn: i64 = value(&range, &s, 9, None).parse().unwrap();
        assert!((-2..=2).contains(&drawn));
        let mood = ValueKind::OneOf(vec!["sad".into(), "it's \"ok\"".into()]);
        assert_eq!(value(&mood, &s, 1, Some(1)), "sad");
        let moods = ValueKind::Array(Box::new(mood));
        assert_eq!(value(&moods, &s, 1, Some(2)), "{\"it's \\\"ok\\\"\"}");
    }

    #[test]
    fn dates_and_timestamps_of_a_row_step_by_their_place() {
        let first = Source::new(7, 8, 0, "starts_at", 100);
        let second = Source::new(9, 8, 1, "ends_at", 100);
        for row in 1..50 {
            let starts = value(&ValueKind::Timestamp, &first, row, None);
            let ends = value(&ValueKind::Timestamp, &second, row, None);
            assert!(starts < ends, "{starts} {ends}");
            assert!(starts.as_str() >= "2020-01-01" && ends.as_str() < "2025-01-02");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(DAY_2020 + 59), (2020, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn distinct_indexes_give_distinct_values_of_every_kind() {
        let s = source("k", 5000);
        let kinds = [
            ValueKind::Int { bits: 64 },
            ValueKind::Text { max_chars: None },
            ValueKind::Date,
            ValueKind::Timestamp,
            ValueKind::Uuid,
            ValueKind::Bytea,
            ValueKind::Inet,
            ValueKind::Numeric {
                integer_digits: 6,
                scale: 2,
            },
        ];
        for kind in &kinds {
            let values: HashSet<String> = (1..=5000).map(|i| value(kind, &s, 1, Some(i))).collect();
            assert_eq!(values.len(), 5000, "{kind:?}");
        }
        // Drawn UUIDs differ too (the row is the index).
        let drawn: HashSet<String> = (1..=5000)
            .map(|row| value(&ValueKind::Uuid, &s, row, None))
            .collect();
        assert_eq!(drawn.len(), 5000);
    }

    #[test]
    fn digits_are_written_as_fmt_writes_them() {
        let values = [0, 1, 9, 10, 42, 99_999, 1_000_000, u64::MAX];
        for value in values {
            for width in [0, 1, 2, 4, 6, 25] {
                let mut out = String::from("x");
                push_digits(value, width, &mut out);
                assert_eq!(out, format!("x{value:0width$}"));
            }
        }
        let mut out = String::new();
        write_decimal(1_000_005, 3, &mut out);
        assert_eq!(out, "1000.005");
        for days in [-800_000, -1, 0, DAY_2020 + 59, 2_932_896, 2_932_897] {
            let mut out = String::new();
            write_date(days, &mut out).unwrap();
            let (year, month, day) = civil_from_days(days);
            assert_eq!(out, format!("{year:04}-{month:02}-{day:02}"));
        }
        let text = ValueKind::Text {
            max_chars: Some(10),
        };
        let s = source("c", 9);
        let hex = value(&text, &s, 3, None);
        assert_eq!(hex, format!("{:016x}", mix(draw(3, s.seed)))[..10]);
    }

    #[test]
    fn copy_fields_escape_backslashes_tabs_and_newlines() {
        let mut out = Vec::new();
        push_field("plain", &mut out);
        out.push(b'\t');
        push_field("a\tb\nc\rd\\e", &mut out);
        out.push(b'\t');
        push_field("\\N", &mut out);
        out.push(b'\t');
        out.extend_from_slice(NULL.as_bytes());
        assert_eq!(out, b"plain\ta\\tb\\nc\\rd\\\\e\t\\\\N\t\\N".to_vec());
        let mut bytea = Vec::new();
        push_field(
            &value(&ValueKind::Bytea, &source("b", 9), 1, Some(1)),
            &mut bytea,
        );
        assert!(bytea.starts_with(b"\\\\x"));
    }
}
