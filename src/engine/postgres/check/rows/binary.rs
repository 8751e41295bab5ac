//! A generated value in `COPY ... FROM STDIN (FORMAT binary)`'s form: each
//! field its length and the bytes the type's receive function reads. The
//! server then parses no text: a COPY of 200,000 rows of the bench-check
//! table took 180 to 250 ms binary against 340 to 530 ms as text (psql,
//! `COPY FROM` a file, five runs each), most of it in reading timestamps and
//! numerics. Written by hand: the values are this generator's own
//! ([`Value`]), and `tokio_postgres::binary_copy` would take a boxed
//! `ToSql` per field and has no `numeric`.
//!
//! Only the types listed in [`encoding`] are written in binary; a table
//! with a column of any other type goes as text.

use super::catalog::TypeInfo;
use super::text::{DAY_2000, Value};
use super::values::ValueKind;

/// What COPY's binary format starts with: its signature, no flags, no
/// header extension.
pub(super) const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
/// What it ends with: a row of -1 fields.
pub(super) const TRAILER: &[u8] = &[0xff, 0xff];

/// Seconds from 1970-01-01 to 2000-01-01, where PostgreSQL's dates and
/// timestamps count from.
const SECOND_2000: i64 = DAY_2000 * 86_400;

/// How a sent column's values are written in binary, after its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Int2,
    Int4,
    Int8,
    Numeric,
    Float4,
    Float8,
    /// The value's text as it is: `text`, `varchar`, `bpchar`, `name`,
    /// an enum's label, `json`.
    Bytes,
    Jsonb,
    Bool,
    Date,
    /// `timestamp` and `timestamptz`: microseconds after 2000-01-01.
    Timestamp,
    Time,
    Interval,
    Uuid,
    Bytea,
    Inet,
    Cidr,
    /// NULL in every row.
    Null,
}

/// The binary encoding of `kind`'s values for a column whose base type
/// (domains followed) is `base`; `None` when this module does not write
/// that pair in binary.
pub(super) fn encoding(kind: &ValueKind, base: &TypeInfo) -> Option<Encoding> {
    let name = base.name.as_str();
    let text_like = matches!(name, "text" | "varchar" | "bpchar" | "name") || base.kind == 'e';
    Some(match (kind, name) {
        (ValueKind::Int { .. } | ValueKind::IntRange { .. }, "int2") => Encoding::Int2,
        (ValueKind::Int { .. } | ValueKind::IntRange { .. }, "int4") => Encoding::Int4,
        (ValueKind::Int { .. } | ValueKind::IntRange { .. }, "int8") => Encoding::Int8,
        (ValueKind::Numeric { .. } | ValueKind::IntRange { .. }, "numeric") => Encoding::Numeric,
        (ValueKind::Float | ValueKind::IntRange { .. }, "float4") => Encoding::Float4,
        (ValueKind::Float | ValueKind::IntRange { .. }, "float8") => Encoding::Float8,
        (ValueKind::Text { .. } | ValueKind::OneOf(_), _) if text_like => Encoding::Bytes,
        (ValueKind::Bool, "bool") => Encoding::Bool,
        (ValueKind::Date, "date") => Encoding::Date,
        (ValueKind::Timestamp, "timestamp" | "timestamptz") => Encoding::Timestamp,
        (ValueKind::Time, "time") => Encoding::Time,
        (ValueKind::Interval, "interval") => Encoding::Interval,
        (ValueKind::Uuid, "uuid") => Encoding::Uuid,
        (ValueKind::Json, "json") => Encoding::Bytes,
        (ValueKind::Json, "jsonb") => Encoding::Jsonb,
        (ValueKind::Bytea, "bytea") => Encoding::Bytea,
        (ValueKind::Inet, "inet") => Encoding::Inet,
        (ValueKind::Inet, "cidr") => Encoding::Cidr,
        _ => return None,
    })
}

/// The binary encoding of a foreign key column of base type `base`, whose
/// values are the parent's keys as `COPY ... TO STDOUT` wrote them in
/// text ([`write_key`]): integers, UUIDs and text-like keys only.
pub(super) fn key_encoding(base: &TypeInfo) -> Option<Encoding> {
    match base.name.as_str() {
        "int2" => Some(Encoding::Int2),
        "int4" => Some(Encoding::Int4),
        "int8" => Some(Encoding::Int8),
        "uuid" => Some(Encoding::Uuid),
        "text" | "varchar" | "bpchar" | "name" => Some(Encoding::Bytes),
        _ if base.kind == 'e' => Some(Encoding::Bytes),
        _ => None,
    }
}

/// Appends `value` (a [`Value::Text`] is `text`) as a field of `encoding`:
/// its length, then its bytes.
pub(super) fn write_field(value: Value, text: &str, encoding: Encoding, out: &mut Vec<u8>) {
    match (encoding, value) {
        (Encoding::Null, _) => out.extend_from_slice(&(-1i32).to_be_bytes()),
        (Encoding::Int2, Value::Whole(n)) => {
            field(out, &(clamp(n, i16::MIN, i16::MAX) as i16).to_be_bytes())
        }
        (Encoding::Int4, Value::Whole(n)) => {
            field(out, &(clamp(n, i32::MIN, i32::MAX) as i32).to_be_bytes())
        }
        (Encoding::Int8, Value::Whole(n)) => {
            field(out, &clamp(n, i64::MIN, i64::MAX).to_be_bytes())
        }
        (Encoding::Numeric, Value::Whole(n)) => write_numeric(n, 0, out),
        (Encoding::Numeric, Value::Decimal { whole, scale }) => {
            write_numeric(whole.into(), scale, out)
        }
        (Encoding::Float4, Value::Whole(n)) => field(out, &(n as f32).to_be_bytes()),
        (Encoding::Float8, Value::Whole(n)) => field(out, &(n as f64).to_be_bytes()),
        // Hundredths are below 2^24: exact as either float, and one correctly
        // rounded division gives the float the text `1234.56` reads as.
        (Encoding::Float4, Value::Hundredths(h)) => field(out, &(h as f32 / 100.0).to_be_bytes()),
        (Encoding::Float8, Value::Hundredths(h)) => field(out, &(h as f64 / 100.0).to_be_bytes()),
        (Encoding::Bool, Value::Bool(yes)) => field(out, &[u8::from(yes)]),
        (Encoding::Date, Value::Date(days)) => {
            field(out, &((days - DAY_2000) as i32).to_be_bytes())
        }
        (Encoding::Timestamp, Value::Timestamp(seconds)) => {
            field(out, &((seconds - SECOND_2000) * 1_000_000).to_be_bytes())
        }
        (Encoding::Time, Value::Time(seconds)) => {
            field(out, &(seconds as i64 * 1_000_000).to_be_bytes())
        }
        (Encoding::Interval, Value::Minutes(minutes)) => {
            // Microseconds, then days and months.
            let mut bytes = [0u8; 16];
            bytes[..8].copy_from_slice(&(minutes as i64 * 60_000_000).to_be_bytes());
            field(out, &bytes)
        }
        (
            Encoding::Uuid | Encoding::Bytea,
            Value::Uuid { high, low } | Value::Bytea { high, low },
        ) => {
            let mut bytes = [0u8; 16];
            bytes[..8].copy_from_slice(&high.to_be_bytes());
            bytes[8..].copy_from_slice(&low.to_be_bytes());
            field(out, &bytes)
        }
        (Encoding::Inet | Encoding::Cidr, Value::Inet(address)) => {
            // Family (PGSQL_AF_INET), mask bits, is cidr, address bytes, address.
            let cidr = u8::from(encoding == Encoding::Cidr);
            let mut bytes = [2, 32, cidr, 4, 0, 0, 0, 0];
            bytes[4..].copy_from_slice(&address.to_be_bytes());
            field(out, &bytes)
        }
        (Encoding::Jsonb, _) => {
            // jsonb's version, then the JSON text.
            out.extend_from_slice(&(text.len() as i32 + 1).to_be_bytes());
            out.push(1);
            out.extend_from_slice(text.as_bytes());
        }
        // Encoding::Bytes, and a pair `encoding` never gives.
        _ => field(out, text.as_bytes()),
    }
}

/// Appends a parent's key (`text`, one field of `COPY ... TO STDOUT`'s text
/// form) as a field of `encoding`, one of [`key_encoding`]'s.
pub(super) fn write_key(text: &[u8], encoding: Encoding, out: &mut Vec<u8>) {
    match encoding {
        Encoding::Int2 | Encoding::Int4 | Encoding::Int8 => {
            let (negative, digits) = match text.split_first() {
                Some((b'-', digits)) => (true, digits),
                _ => (false, text),
            };
            let magnitude = (digits.iter()).fold(0i128, |n, digit| {
                n * 10 + i128::from(digit.wrapping_sub(b'0'))
            });
            let n = if negative { -magnitude } else { magnitude };
            write_field(Value::Whole(n), "", encoding, out)
        }
        Encoding::Uuid => {
            let digits = text.iter().filter(|byte| **byte != b'-');
            let n = digits.fold(0u128, |n, digit| {
                n << 4 | u128::from((*digit as char).to_digit(16).unwrap_or(0))
            });
            field(out, &n.to_be_bytes())
        }
        _ => field(out, &unescape(text)),
    }
}

/// A field of COPY's text form as the bytes it stands for.
fn unescape(text: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut escaped = false;
    for &byte in text {
        if escaped {
            bytes.push(match byte {
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'v' => 0x0b,
                other => other,
            });
            escaped = false;
        } else if byte == b'\\' {
            escaped = true;
        } else {
            bytes.push(byte);
        }
    }
    bytes
}

fn field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// `n` from `low` to `high` (the generator's values are within their
/// type's range already).
fn clamp(n: i128, low: impl Into<i64>, high: impl Into<i64>) -> i64 {
    n.clamp(i128::from(low.into()), i128::from(high.into())) as i64
}

/// `units` of `10^-scale` (a scale of at most 4) as a `numeric`: its
/// digits in base 10,000 from the most significant, the weight of the
/// first, the sign and the scale to display.
fn write_numeric(units: i128, scale: u32, out: &mut Vec<u8>) {
    let magnitude = units.unsigned_abs();
    let unit = 10u128.pow(scale);
    let (mut whole, fraction) = (magnitude / unit, magnitude % unit);
    let mut digits: Vec<u16> = Vec::new();
    while whole > 0 {
        digits.insert(0, (whole % 10_000) as u16);
        whole /= 10_000;
    }
    let mut weight = digits.len() as i16 - 1;
    if fraction > 0 {
        // One base-10,000 digit holds the fraction: scale is at most 4.
        digits.push((fraction * 10u128.pow(4 - scale)) as u16);
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    while digits.first() == Some(&0) {
        digits.remove(0);
        weight -= 1;
    }
    if digits.is_empty() {
        weight = 0;
    }
    let sign: u16 = if units < 0 { 0x4000 } else { 0 };
    out.extend_from_slice(&(8 + 2 * digits.len() as i32).to_be_bytes());
    out.extend_from_slice(&(digits.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&(scale as i16).to_be_bytes());
    for digit in digits {
        out.extend_from_slice(&digit.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(units: i128, scale: u32) -> Vec<u8> {
        let mut out = Vec::new();
        write_numeric(units, scale, &mut out);
        out
    }

    /// The numeric's header and digits, without the field's length.
    fn words(bytes: &[u8]) -> Vec<i16> {
        (bytes[4..].chunks(2))
            .map(|pair| i16::from_be_bytes([pair[0], pair[1]]))
            .collect()
    }

    #[test]
    fn numerics_are_base_ten_thousand_digits_with_a_weight() {
        // 12.34: one digit before the point (12), one after (3400).
        assert_eq!(words(&numeric(1234, 2)), [2, 0, 0, 2, 12, 3400]);
        // 123456789: 1 | 2345 | 6789, weight 2.
        assert_eq!(words(&numeric(123_456_789, 0)), [3, 2, 0, 0, 1, 2345, 6789]);
        // 0.05: the first digit is after the point.
        assert_eq!(words(&numeric(5, 2)), [1, -1, 0, 2, 500]);
        // -20000: trailing zero digits dropped, the weight kept.
        assert_eq!(words(&numeric(-20_000, 0)), [1, 1, 0x4000, 0, 2]);
        assert_eq!(words(&numeric(0, 2)), [0, 0, 0, 2]);
        assert_eq!(numeric(1234, 2)[..4], 12i32.to_be_bytes());
    }

    #[test]
    fn keys_read_from_copy_text_become_binary_fields() {
        let mut out = Vec::new();
        write_key(b"-42", Encoding::Int4, &mut out);
        assert_eq!(out, [0, 0, 0, 4, 0xff, 0xff, 0xff, 0xd6]);
        out.clear();
        write_key(
            b"00000000-0000-0000-0000-00000000002a",
            Encoding::Uuid,
            &mut out,
        );
        assert_eq!(out[..4], 16i32.to_be_bytes());
        assert_eq!(out[4..19], [0; 15]);
        assert_eq!(out[19], 0x2a);
        out.clear();
        write_key(b"a\\tb\\\\c", Encoding::Bytes, &mut out);
        assert_eq!(out, b"\0\0\0\x05a\tb\\c");
    }

    #[test]
    fn dates_and_timestamps_count_from_2000() {
        let mut out = Vec::new();
        write_field(Value::Date(DAY_2000 + 1), "", Encoding::Date, &mut out);
        assert_eq!(out, [0, 0, 0, 4, 0, 0, 0, 1]);
        out.clear();
        write_field(
            Value::Timestamp(SECOND_2000 - 1),
            "",
            Encoding::Timestamp,
            &mut out,
        );
        assert_eq!(out[4..], (-1_000_000i64).to_be_bytes());
        out.clear();
        write_field(Value::Text, "{}", Encoding::Jsonb, &mut out);
        assert_eq!(out, b"\0\0\0\x03\x01{}");
        out.clear();
        write_field(Value::Whole(70_000), "", Encoding::Int2, &mut out);
        assert_eq!(out[4..], i16::MAX.to_be_bytes());
    }
}
