//! A column's generated value as an SQL expression of the row number `g.i`
//! (1, 2, ...), computed by the server in `INSERT ... SELECT ... FROM
//! generate_series`. A value that must be distinct is an injective function
//! of the row number (`email-42`, `2000-01-01 + 42 s`); any other is drawn
//! from `hashint8extended(g.i, seed)`, so the same seed gives the same rows.
//! Dates and timestamps of one row share their draw and step by the column's
//! place, so a later column is later (`ends_at > starts_at`).

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

/// Where a value comes from: the row number and the draws of its row.
#[derive(Debug, Clone)]
pub(super) struct Source<'a> {
    /// The row number (`g.i`, or another index expression such as a parent's).
    pub index: &'a str,
    /// The column's own seed for its draws.
    pub seed: i64,
    /// The row's seed for dates and times (shared by the row's columns).
    pub row_seed: i64,
    /// The column's place among the row's date and time columns.
    pub time_place: u32,
    /// A prefix for distinct text (`email` -> `email-42`).
    pub name: &'a str,
    /// The number of rows, so distinct text keeps within its length.
    pub rows: u64,
}

impl Source<'_> {
    /// A draw for this column: a non-negative bigint.
    fn draw(&self) -> String {
        draw(self.index, self.seed)
    }
}

/// `hashint8extended(index, seed)` without its sign bit.
pub(super) fn draw(index: &str, seed: i64) -> String {
    format!("(hashint8extended(({index})::int8, {seed}) & 9223372036854775807)")
}

/// The SQL expression of a value of `value_type`, distinct per row when `distinct`.
pub(super) fn value_sql(value_type: &ValueKind, source: &Source<'_>, distinct: bool) -> String {
    let i = source.index;
    let place = source.time_place;
    let draw = source.draw();
    let row_draw = draw_of_row(source);
    match value_type {
        ValueKind::Int { .. } if distinct => format!("({i})"),
        ValueKind::Int { bits: 16 } => format!("1 + {draw} % 1000"),
        ValueKind::Int { bits: 32 } => format!("1 + {draw} % 1000000"),
        ValueKind::Int { .. } => format!("1 + {draw} % 1000000000"),
        ValueKind::Numeric {
            integer_digits,
            scale,
        } => {
            let unit = 10u64.pow(*scale);
            let span = 10u64.pow(integer_digits + scale);
            let whole = if distinct {
                format!("({i})")
            } else {
                // At least one unit: positive, as CHECKs (price > 0) often ask.
                format!("1 + {draw} % {}", span - 1)
            };
            format!("({whole})::numeric / {unit}")
        }
        ValueKind::Float if distinct => format!("({i})::float8"),
        ValueKind::Float => format!("(1 + {draw} % 1000000)::float8 / 100"),
        ValueKind::Text { max_chars } if distinct => distinct_text(*max_chars, source),
        ValueKind::Text { max_chars } => {
            let chars = max_chars.unwrap_or(16).min(16);
            format!("substr(md5(({draw})::text), 1, {chars})")
        }
        ValueKind::Bool if distinct => format!("({i}) % 2 = 0"),
        ValueKind::Bool => format!("{draw} % 2 = 0"),
        ValueKind::Date if distinct => format!("DATE '2000-01-01' + ({i})::int + {place}"),
        ValueKind::Date => format!("DATE '2020-01-01' + ({row_draw} % 1826)::int + {place}"),
        ValueKind::Timestamp if distinct => format!(
            "TIMESTAMP '2000-01-01' + ({i}) * INTERVAL '1 second' + {place} * INTERVAL '1 hour'"
        ),
        ValueKind::Timestamp => format!(
            "TIMESTAMP '2020-01-01' + ({row_draw} % 157680000) * INTERVAL '1 second' \
             + {place} * INTERVAL '1 hour'"
        ),
        ValueKind::Time if distinct => format!("TIME '00:00' + ({i}) * INTERVAL '1 second'"),
        ValueKind::Time => format!("TIME '00:00' + ({draw} % 86400) * INTERVAL '1 second'"),
        ValueKind::Interval if distinct => format!("({i}) * INTERVAL '1 minute'"),
        ValueKind::Interval => format!("({draw} % 10000) * INTERVAL '1 minute'"),
        ValueKind::Uuid => format!("md5('{}/' || ({i}))::uuid", source.seed),
        ValueKind::Json => format!("jsonb_build_object('n', {i}, 'v', {draw} % 1000)"),
        ValueKind::Bytea => format!("decode(md5('{}/' || ({i})), 'hex')", source.seed),
        ValueKind::Inet if distinct => format!("INET '10.0.0.0' + ({i})"),
        ValueKind::Inet => format!("INET '10.0.0.0' + {draw} % 16777216"),
        ValueKind::OneOf(values) => {
            let list = values
                .iter()
                .map(|value| literal(value))
                .collect::<Vec<_>>();
            let pick = if distinct { format!("({i}) - 1") } else { draw };
            format!(
                "(ARRAY[{}])[1 + ({pick}) % {}]",
                list.join(", "),
                values.len()
            )
        }
        ValueKind::IntRange { low, .. } if distinct => format!("{low} + (({i}) - 1)"),
        ValueKind::IntRange { low, high } => {
            format!("{low} + {draw} % {}", range_span(*low, *high))
        }
        ValueKind::Array(element) => format!("ARRAY[{}]", value_sql(element, source, distinct)),
    }
}

/// How many whole numbers lie from `low` to `high` (at most `i64::MAX`).
fn range_span(low: i64, high: i64) -> u64 {
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

/// The row's shared draw for its dates and times.
fn draw_of_row(source: &Source<'_>) -> String {
    draw(source.index, source.row_seed)
}

/// `name-42`, or `42` when the name does not fit the length; the caller
/// keeps the rows within [`ValueKind::distinct_values`].
fn distinct_text(max_chars: Option<u32>, source: &Source<'_>) -> String {
    let i = source.index;
    let digits = source.rows.max(1).ilog10() + 1;
    let prefix: String = source
        .name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(12)
        .collect();
    let fits = max_chars.is_none_or(|chars| chars as usize >= prefix.len() + 1 + digits as usize);
    if fits && !prefix.is_empty() {
        format!("'{prefix}-' || ({i})")
    } else {
        format!("({i})::text")
    }
}

/// `value` as an SQL string literal.
pub(super) fn literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(name: &str) -> Source<'_> {
        Source {
            index: "g.i",
            seed: 7,
            row_seed: 8,
            time_place: 1,
            name,
            rows: 100_000,
        }
    }

    #[test]
    fn distinct_values_come_from_the_row_number() {
        let text = ValueKind::Text { max_chars: None };
        assert_eq!(
            value_sql(&text, &source("email"), true),
            "'email-' || (g.i)"
        );
        let short = ValueKind::Text { max_chars: Some(8) };
        assert_eq!(value_sql(&short, &source("email"), true), "(g.i)::text");
        assert_eq!(short.distinct_values(), 99_999_999);
        let int = ValueKind::Int { bits: 32 };
        assert_eq!(value_sql(&int, &source("id"), true), "(g.i)");
        assert_eq!(
            value_sql(&int, &source("qty"), false),
            "1 + (hashint8extended((g.i)::int8, 7) & 9223372036854775807) % 1000000"
        );
        let mood = ValueKind::OneOf(vec!["sad".into(), "it's ok".into()]);
        assert_eq!(
            value_sql(&mood, &source("mood"), true),
            "(ARRAY['sad', 'it''s ok'])[1 + ((g.i) - 1) % 2]"
        );
        assert_eq!(mood.distinct_values(), 2);
    }

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
        let price = value_sql(&money, &source("price"), false);
        assert!(price.ends_with("% 99999)::numeric / 100"), "{price}");
    }
}
