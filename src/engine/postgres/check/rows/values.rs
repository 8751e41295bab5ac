//! What each column's type lets the generator make: a column's type,
//! followed through its domains to a kind of value ([`ValueKind`]), how many
//! distinct values that kind has, and the whole numbers a numeric type
//! holds. The values themselves are made in `text`.

use super::catalog::{Catalog, CatalogColumn};

/// The kinds of value the generator can produce, after domains are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ValueKind {
    Int {
        bits: u32,
    },
    Numeric {
        integer_digits: u32,
        scale: u32,
    },
    Float,
    Text {
        max_chars: Option<u32>,
    },
    Bool,
    Date,
    Timestamp,
    Time,
    Interval,
    Uuid,
    Json,
    Bytea,
    Inet,
    /// An enum's labels, or the values a CHECK's `IN (...)` allows.
    OneOf(Vec<String>),
    /// Whole numbers a CHECK bounds (`rating BETWEEN 1 AND 5`), for a numeric column.
    IntRange {
        low: i64,
        high: i64,
    },
    Array(Box<ValueKind>),
}

/// What a column needs beyond its type, from its domain chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ResolvedType {
    pub value: Option<ValueKind>,
    /// The base type's name, for a message when it is unknown.
    pub base_name: String,
    /// The base type (domains followed).
    pub base_oid: u32,
    pub domain_not_null: bool,
    pub domain_default: bool,
}

/// The value type of `column`, following domains to their base type; `None`
/// in `value` when the generator does not know the type.
pub(super) fn resolve(catalog: &Catalog, column: &CatalogColumn) -> ResolvedType {
    let mut oid = column.type_oid;
    let mut typmod = column.typmod;
    let mut domain_not_null = false;
    let mut domain_default = false;
    // Domains over domains: a few levels at most.
    for _ in 0..16 {
        match catalog.types.get(&oid) {
            Some(info) if info.kind == 'd' => {
                domain_not_null |= info.not_null;
                domain_default |= info.has_default;
                oid = info.base;
                typmod = info.base_typmod;
            }
            _ => break,
        }
    }
    ResolvedType {
        value: value_type(catalog, oid, typmod),
        base_name: catalog
            .types
            .get(&oid)
            .map_or_else(|| format!("type {oid}"), |info| info.name.clone()),
        base_oid: oid,
        domain_not_null,
        domain_default,
    }
}

fn value_type(catalog: &Catalog, oid: u32, typmod: i32) -> Option<ValueKind> {
    let info = catalog.types.get(&oid)?;
    if info.kind == 'e' {
        return catalog.enum_labels.get(&oid).cloned().map(ValueKind::OneOf);
    }
    if info.category == 'A' && info.element != 0 {
        let element = catalog.types.get(&info.element)?;
        let element_oid = if element.kind == 'd' {
            element.base
        } else {
            info.element
        };
        return value_type(catalog, element_oid, -1)
            .map(|element| ValueKind::Array(Box::new(element)));
    }
    let modifier = (typmod >= 0).then_some(typmod);
    Some(match info.name.as_str() {
        "int2" => ValueKind::Int { bits: 16 },
        "int4" => ValueKind::Int { bits: 32 },
        "int8" => ValueKind::Int { bits: 64 },
        "numeric" => numeric(modifier),
        "float4" | "float8" => ValueKind::Float,
        // varchar(n) and char(n) store n + 4 in the typmod.
        "varchar" | "bpchar" => ValueKind::Text {
            max_chars: modifier.map(|m| (m - 4).max(1) as u32),
        },
        "name" => ValueKind::Text {
            max_chars: Some(63),
        },
        "bool" => ValueKind::Bool,
        "date" => ValueKind::Date,
        "timestamp" | "timestamptz" => ValueKind::Timestamp,
        "time" | "timetz" => ValueKind::Time,
        "interval" => ValueKind::Interval,
        "uuid" => ValueKind::Uuid,
        "json" | "jsonb" => ValueKind::Json,
        "bytea" => ValueKind::Bytea,
        "inet" | "cidr" => ValueKind::Inet,
        // text, citext and other string types.
        _ if info.category == 'S' => ValueKind::Text { max_chars: None },
        _ => return None,
    })
}

/// numeric(p, s): the typmod is ((p << 16) | s) + 4; unconstrained: 6 digits and 2 decimals.
fn numeric(modifier: Option<i32>) -> ValueKind {
    let Some(modifier) = modifier else {
        return ValueKind::Numeric {
            integer_digits: 6,
            scale: 2,
        };
    };
    let precision = ((modifier - 4) >> 16) & 0xffff;
    // The scale is signed since PostgreSQL 15 (numeric(2, -3)); a negative one rounds to tens.
    let scale = (modifier - 4) & 0xffff;
    let scale = if scale > 0x7ff { 0 } else { scale };
    ValueKind::Numeric {
        integer_digits: (precision - scale).clamp(0, 9) as u32,
        scale: scale.clamp(0, 4) as u32,
    }
}

impl ValueKind {
    /// How many distinct values it can take (`u64::MAX`: more than any fill).
    pub fn distinct_values(&self) -> u64 {
        match self {
            ValueKind::Int { bits: 16 } => i16::MAX as u64,
            ValueKind::Int { bits: 32 } => i32::MAX as u64,
            ValueKind::Numeric {
                integer_digits,
                scale,
            } => 10u64.pow(integer_digits + scale) - 1,
            ValueKind::Text {
                max_chars: Some(chars),
            } if *chars < 19 => 10u64.pow(*chars) - 1,
            ValueKind::Bool => 2,
            ValueKind::Time => 86_399,
            ValueKind::OneOf(values) => values.len() as u64,
            ValueKind::IntRange { low, high } => range_span(*low, *high),
            ValueKind::Array(element) => element.distinct_values(),
            _ => u64::MAX,
        }
    }
}

/// How many whole numbers lie from `low` to `high` (at most `i64::MAX`).
pub(super) fn range_span(low: i64, high: i64) -> u64 {
    let span = i128::from(high) - i128::from(low) + 1;
    span.clamp(0, i128::from(i64::MAX)) as u64
}

impl ValueKind {
    /// The whole numbers this numeric type holds, for bounds a CHECK leaves open.
    pub fn whole_range(&self) -> Option<(i64, i64)> {
        match self {
            ValueKind::Int { bits: 16 } => Some((i16::MIN.into(), i16::MAX.into())),
            ValueKind::Int { bits: 32 } => Some((i32::MIN.into(), i32::MAX.into())),
            ValueKind::Int { .. } => Some((i64::MIN, i64::MAX)),
            ValueKind::Numeric { integer_digits, .. } => {
                let most = 10i64.pow(*integer_digits) - 1;
                Some((-most, most))
            }
            ValueKind::Float => Some((-1_000_000_000_000_000, 1_000_000_000_000_000)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_typmods_bound_the_values() {
        // numeric(10, 2)
        assert_eq!(
            numeric(Some(((10 << 16) | 2) + 4)),
            ValueKind::Numeric {
                integer_digits: 8,
                scale: 2
            }
        );
        assert_eq!(
            numeric(Some(((4 << 16) | 4) + 4)),
            ValueKind::Numeric {
                integer_digits: 0,
                scale: 4
            }
        );
        let money = ValueKind::Numeric {
            integer_digits: 3,
            scale: 2,
        };
        assert_eq!(money.distinct_values(), 99_999);
        let short = ValueKind::Text { max_chars: Some(8) };
        assert_eq!(short.distinct_values(), 99_999_999);
        let mood = ValueKind::OneOf(vec!["sad".into(), "it's ok".into()]);
        assert_eq!(mood.distinct_values(), 2);
    }
}
