//! What the catalogs say about the tables and columns a captured statement
//! names: which relation a name is (and whether it is a system one), a
//! column's type, and the range of values a parameter compared with it is
//! drawn from.
//!
//! The range comes from `pg_stats` (the ends of `histogram_bounds` and of
//! `most_common_vals`), else from `SELECT min(col), max(col)` of that one
//! column. No other value of a user table is read, and only the two ends go
//! into the workload file.
//!
//! The skew rule: a column whose most common value covers at least
//! [`SKEW_FACTOR`] times the share a value would have if all were equally
//! common (`1 / n_distinct`) gets `random_zipfian(LO, HI, 1.1)` instead of
//! `random(LO, HI)`. pgbench's Zipfian favours LO, not the column's real hot
//! values: it reproduces that some keys are hot, not which.

use tokio_postgres::Client;

use crate::engine::postgres::sql_scan::ColumnName;
use crate::error::Error;

/// A most common value this many times above the uniform share makes a column skewed.
pub const SKEW_FACTOR: f64 = 10.0;
/// The Zipfian parameter for a skewed column.
pub const ZIPF_PARAMETER: f64 = 1.1;
/// The marker in capture's own queries, so a later capture leaves them out.
pub const MARKER: &str = "/* stallbench capture */";

/// A relation the statement names, as the catalogs resolved it.
#[derive(Debug, Clone)]
pub struct KnownRelation {
    /// The name as written in the statement (`orders`, `app.orders`).
    pub written: String,
    pub oid: u32,
    pub schema: String,
    pub name: String,
}

impl KnownRelation {
    /// `schema.name`, each part quoted only where needed.
    pub fn qualified(&self) -> String {
        format!(
            "{}.{}",
            quote_if_needed(&self.schema),
            quote_if_needed(&self.name)
        )
    }

    /// True for pg_catalog, information_schema and the other `pg_` schemas.
    pub fn is_system(&self) -> bool {
        self.schema == "information_schema" || self.schema.starts_with("pg_")
    }
}

/// How a parameter's values are made in the script.
#[derive(Debug, Clone, PartialEq)]
pub enum Generator {
    /// `random(lo, hi)`, or `random_zipfian(lo, hi, 1.1)` when `skewed`.
    Range {
        column: String,
        type_name: String,
        lo: i64,
        hi: i64,
        from: RangeSource,
        skewed: bool,
    },
    /// `random(0, 1)`, sent as `0`/`1`, which a boolean reads.
    Boolean { column: String },
    /// A random string of `width` digits (`random(10^(width-1), 10^width - 1)`),
    /// which a text column reads from a prepared statement's parameter:
    /// `width` is the column's `avg_width` in pg_stats, at most its declared
    /// length and [`MAX_DIGITS`].
    Digits { column: String, width: u32 },
    /// A fixed value, and why.
    Constant { value: i64, why: String },
    /// Not resolved: `\set pN 1` and a FIXME saying what it is compared with.
    Fixme { what: String },
}

/// Where a range's ends come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeSource {
    Statistics,
    MinMax,
}

/// Resolves each of `names` (as written in statements) to a relation on the
/// server, by the capture session's `search_path`; names that are no relation are left out.
pub async fn relations(client: &Client, names: &[String]) -> Result<Vec<KnownRelation>, Error> {
    let quoted: Vec<String> = names.iter().map(|name| quote_name(name)).collect();
    let rows = client
        .query(
            "SELECT w.i::int4, c.oid, n.nspname::text, c.relname::text \
             FROM unnest($1::text[]) WITH ORDINALITY AS w(name, i) \
             JOIN pg_class c ON c.oid = to_regclass(w.name) \
             JOIN pg_namespace n ON n.oid = c.relnamespace",
            &[&quoted],
        )
        .await
        .map_err(|err| catalog_error("resolving the statements' tables", &err))?;
    Ok(rows
        .iter()
        .map(|row| KnownRelation {
            written: names[row.get::<_, i32>(0) as usize - 1].clone(),
            oid: row.get(1),
            schema: row.get(2),
            name: row.get(3),
        })
        .collect())
}

/// A column of one of `tables` (tried in order), as the catalogs know it.
#[derive(Debug, Clone)]
pub struct KnownColumn {
    pub relation: KnownRelation,
    pub name: String,
    /// `format_type`'s name, e.g. `integer`, `numeric(10,2)`.
    pub type_name: String,
    /// `pg_type.typcategory`: `N` numeric, `B` boolean, `S` string, ...
    pub category: String,
}

impl KnownColumn {
    /// `table.column` as the file names it.
    pub fn label(&self) -> String {
        format!(
            "{}.{}",
            self.relation.qualified(),
            quote_if_needed(&self.name)
        )
    }
}

/// The first of `tables` that has `column`.
pub async fn column(
    client: &Client,
    tables: &[&KnownRelation],
    column: &ColumnName,
) -> Result<Option<KnownColumn>, Error> {
    for relation in tables {
        let (filter, name, position) = match column {
            ColumnName::Named(name) => ("a.attname = $2", name.clone(), 0_i64),
            ColumnName::Position(position) => ("$2 = ''", String::new(), *position as i64 - 1),
        };
        let sql = format!(
            "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), t.typcategory::text \
             FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
             WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND {filter} \
             ORDER BY a.attnum OFFSET $3 LIMIT 1"
        );
        let row = client
            .query_opt(&sql, &[&relation.oid, &name, &position])
            .await
            .map_err(|err| catalog_error("reading a column's type", &err))?;
        if let Some(row) = row {
            return Ok(Some(KnownColumn {
                relation: (*relation).clone(),
                name: row.get(0),
                type_name: row.get(1),
                category: row.get(2),
            }));
        }
    }
    Ok(None)
}

/// How a parameter compared with `column` gets its values.
pub async fn generator(client: &Client, column: &KnownColumn) -> Result<Generator, Error> {
    match column.category.as_str() {
        "N" => range(client, column).await,
        "B" => Ok(Generator::Boolean {
            column: column.label(),
        }),
        "S" => Ok(Generator::Digits {
            column: column.label(),
            width: digits_width(
                statistics(client, column).await?.avg_width,
                &column.type_name,
            ),
        }),
        _ => Ok(Generator::Fixme {
            what: format!(
                "{} ({}): a script's \\set makes numbers only",
                column.label(),
                column.type_name
            ),
        }),
    }
}

/// The statistics of one column that the range and the skew rule read.
#[derive(Debug, Default)]
struct ColumnStats {
    histogram_ends: Option<(String, String)>,
    common_values: Vec<String>,
    top_frequency: Option<f32>,
    /// `n_distinct` made a count (a negative one is a fraction of the rows).
    distinct: Option<f64>,
    /// The average width of its values, in bytes.
    avg_width: Option<i32>,
}

/// The most digits a text parameter gets: `\set` computes in 64-bit integers.
pub const MAX_DIGITS: u32 = 18;

/// How many digits a text column's random string gets: its values' average
/// width (8 without statistics), at most its declared length
/// (`character varying(20)`) and [`MAX_DIGITS`], at least 1.
fn digits_width(avg_width: Option<i32>, type_name: &str) -> u32 {
    let declared = type_name
        .split_once('(')
        .and_then(|(_, rest)| rest.trim_end_matches(')').parse::<u32>().ok())
        .unwrap_or(MAX_DIGITS);
    let average = avg_width.map_or(8, |width| width.max(1) as u32);
    average.min(declared).clamp(1, MAX_DIGITS)
}

/// `Generator::Range` of a numeric column, from its statistics, else its min and max.
async fn range(client: &Client, column: &KnownColumn) -> Result<Generator, Error> {
    let stats = statistics(client, column).await?;
    let mut ends: Vec<f64> = stats
        .common_values
        .iter()
        .chain(stats.histogram_ends.iter().flat_map(|(lo, hi)| [lo, hi]))
        .filter_map(|value| value.parse::<f64>().ok())
        .collect();
    let mut from = RangeSource::Statistics;
    if ends.is_empty() {
        from = RangeSource::MinMax;
        ends = min_max(client, column).await?;
    }
    let lo = ends.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return Ok(Generator::Fixme {
            what: format!(
                "{} ({}): no statistics and no rows to take a range from",
                column.label(),
                column.type_name
            ),
        });
    }
    Ok(Generator::Range {
        column: column.label(),
        type_name: column.type_name.clone(),
        lo: lo.floor() as i64,
        hi: hi.ceil() as i64,
        from,
        skewed: is_skewed(stats.top_frequency, stats.distinct),
    })
}

/// The skew rule (see the module's comment).
pub fn is_skewed(top_frequency: Option<f32>, distinct: Option<f64>) -> bool {
    match (top_frequency, distinct) {
        (Some(top), Some(distinct)) if distinct >= 2.0 => f64::from(top) >= SKEW_FACTOR / distinct,
        _ => false,
    }
}

/// The column's row of `pg_stats` (the table's own, not its inheritance tree's).
async fn statistics(client: &Client, column: &KnownColumn) -> Result<ColumnStats, Error> {
    let row = client
        .query_opt(
            "SELECT (s.histogram_bounds::text::text[])[1], \
             (s.histogram_bounds::text::text[])[cardinality(s.histogram_bounds::text::text[])], \
             s.most_common_vals::text::text[], s.most_common_freqs[1], \
             CASE WHEN s.n_distinct >= 0 THEN s.n_distinct::float8 \
                  ELSE -s.n_distinct * greatest(c.reltuples, 0)::float8 END, \
             s.avg_width \
             FROM pg_stats s JOIN pg_class c ON c.oid = $4 \
             WHERE s.schemaname = $1 AND s.tablename = $2 AND s.attname = $3 \
             ORDER BY s.inherited LIMIT 1",
            &[
                &column.relation.schema,
                &column.relation.name,
                &column.name,
                &column.relation.oid,
            ],
        )
        .await
        .map_err(|err| catalog_error("reading pg_stats", &err))?;
    let Some(row) = row else {
        return Ok(ColumnStats::default());
    };
    let lo: Option<String> = row.get(0);
    let hi: Option<String> = row.get(1);
    Ok(ColumnStats {
        histogram_ends: lo.zip(hi),
        common_values: row.get::<_, Option<Vec<String>>>(2).unwrap_or_default(),
        top_frequency: row.get(3),
        distinct: row.get::<_, Option<f64>>(4).filter(|d| *d > 0.0),
        avg_width: row.get(5),
    })
}

/// `SELECT min(col), max(col)` of the column: the only read of a user table.
async fn min_max(client: &Client, column: &KnownColumn) -> Result<Vec<f64>, Error> {
    let name = quote_name(&column.name);
    let sql = format!(
        "{MARKER} SELECT min({name})::float8, max({name})::float8 FROM {}",
        column.relation.qualified()
    );
    let row = client.query_one(&sql, &[]).await.map_err(|err| {
        catalog_error(&format!("reading min and max of {}", column.label()), &err)
    })?;
    Ok([row.get::<_, Option<f64>>(0), row.get(1)]
        .into_iter()
        .flatten()
        .collect())
}

/// A dotted name with each part double-quoted (`app.orders` -> `"app"."orders"`).
fn quote_name(name: &str) -> String {
    name.split('.')
        .map(|part| format!("\"{}\"", part.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(".")
}

/// A name quoted only when it is not a plain lower-case identifier.
fn quote_if_needed(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match plain {
        true => name.to_string(),
        false => format!("\"{}\"", name.replace('"', "\"\"")),
    }
}

fn catalog_error(what: &str, err: &tokio_postgres::Error) -> Error {
    Error::runtime(format!(
        "capture: {what}: {}",
        crate::engine::postgres::database::error_text(err)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skew_rule() {
        // 1,000 keys, the top one in 30% of the rows: skewed.
        assert!(is_skewed(Some(0.3), Some(1000.0)));
        // 1,000 keys, the top one in 0.2%: about uniform.
        assert!(!is_skewed(Some(0.002), Some(1000.0)));
        // No most common value, or a single value: not skewed.
        assert!(!is_skewed(None, Some(1000.0)));
        assert!(!is_skewed(Some(1.0), Some(1.0)));
    }

    #[test]
    fn names_are_quoted_for_sql_and_for_the_file() {
        assert_eq!(quote_name("app.Orders"), "\"app\".\"Orders\"");
        assert_eq!(quote_if_needed("orders"), "orders");
        assert_eq!(quote_if_needed("createdAt"), "\"createdAt\"");
    }

    #[test]
    fn a_text_parameter_is_as_wide_as_the_columns_values_within_bounds() {
        assert_eq!(digits_width(Some(5), "text"), 5);
        assert_eq!(digits_width(None, "text"), 8);
        assert_eq!(digits_width(Some(40), "character varying(12)"), 12);
        assert_eq!(digits_width(Some(40), "text"), MAX_DIGITS);
        assert_eq!(digits_width(Some(0), "character(1)"), 1);
    }
}
