//! Production sizes: the rows each table holds where the
//! migration will really run, and what a statement that reads or rewrites a
//! whole table under a lock that blocks traffic would hold there.
//!
//! The check measures on generated rows (100,000 per table by default), so a
//! rewrite that holds ACCESS EXCLUSIVE for 140 ms here holds it for minutes on
//! a table of 50 million rows, and `retry` does not shorten a hold: it only
//! gives up waiting for the lock. The sizes come from `--table-rows
//! TABLE=N`, or from a production or staging server's statistics with
//! `--sizes-from URL` (read-only: `pg_class.reltuples` and the table's size,
//! never a row); the flag wins over the server for the tables it names.
//!
//! The estimate scales the statement's time on the generated rows by the
//! rows (a rewrite or a scan reads every row once), and by rows times their
//! logarithm for an index build, which sorts them. The statement's fixed
//! cost is scaled with it. Measured on this machine (PostgreSQL 15, a table
//! of 5,000,000 rows against the check's 100,000): `ALTER COLUMN ... TYPE
//! bigint` took 8.97 s, estimated 10.5 s; `CREATE INDEX` 2.78 s, estimated
//! 2.9 s (2.2 s scaled by rows alone). It is written as an estimate, with
//! the rate it came from.

use serde::Serialize;
use tokio_postgres::Client;

use crate::config::CheckConfig;
use crate::engine::postgres::conninfo::{ConnSettings, Tls};
use crate::engine::postgres::database::{error_text, redact_url};
use crate::error::Error;
use crate::export::format::{format_latency, format_thousands};
use crate::metrics::lock_trace::{Blocks, LockMode, RelationKind, TracedStatement, held_before};
use crate::strategy::statements::statement_words;

/// Where a table's production size came from. In check.json as
/// `table_rows` or `sizes_from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeSource {
    /// `--table-rows TABLE=N`.
    TableRows,
    /// `--sizes-from URL`: the server's `pg_class.reltuples`.
    SizesFrom,
}

impl SizeSource {
    /// The flag that gave it: `--table-rows`.
    pub fn flag(self) -> &'static str {
        match self {
            SizeSource::TableRows => "--table-rows",
            SizeSource::SizesFrom => "--sizes-from",
        }
    }
}

/// One table's size in production.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSize {
    /// As given (`orders`) or as the server names it (`public.orders`).
    pub table: String,
    pub rows: u64,
    pub source: SizeSource,
}

/// The production size of every table given one, the flag's before the server's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProductionSizes {
    pub tables: Vec<TableSize>,
}

impl ProductionSizes {
    /// `--table-rows` (each `TABLE=N`) over what `--sizes-from` read.
    pub fn new(table_rows: &[(String, u64)], from_server: Vec<TableSize>) -> ProductionSizes {
        let mut tables: Vec<TableSize> = table_rows
            .iter()
            .map(|(table, rows)| TableSize {
                table: table.clone(),
                rows: *rows,
                source: SizeSource::TableRows,
            })
            .collect();
        tables.extend(from_server);
        ProductionSizes { tables }
    }

    /// Whether no size was given.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// The size of `relation` (as the trace names it): the first one given
    /// whose name is the same, or whose bare name is when either leaves its
    /// schema out.
    pub fn of(&self, relation: &str) -> Option<&TableSize> {
        self.tables
            .iter()
            .find(|size| same_table(&size.table, relation))
    }
}

/// Whether `a` and `b` name the same table: equal, or equal without the
/// schema when one of them has none (`orders` and `public.orders`).
pub fn same_table(a: &str, b: &str) -> bool {
    let unquoted = |name: &str| name.replace('"', "");
    let (a, b) = (unquoted(a), unquoted(b));
    if a == b {
        return true;
    }
    let bare = |name: &str| name.rsplit('.').next().unwrap_or_default().to_string();
    (!a.contains('.') || !b.contains('.')) && bare(&a) == bare(&b)
}

/// What `--sizes-from` read: a size per table, and the tables the server
/// has no statistics for (never vacuumed or analyzed there).
#[derive(Debug, Clone, Default)]
pub struct ServerSizes {
    pub tables: Vec<TableSize>,
    pub without_statistics: Vec<String>,
}

/// `--table-rows` over what `--sizes-from` reads, said on stderr (unless `--quiet`).
pub async fn production_sizes(config: &CheckConfig) -> Result<ProductionSizes, Error> {
    let from_server = match &config.sizes_from {
        None => Vec::new(),
        Some(url) => {
            let read = read_sizes(url).await?;
            if !config.quiet {
                stderrln!(
                    "production sizes: {} tables from --sizes-from {}",
                    read.tables.len(),
                    redact_url(url)
                );
            }
            if !read.without_statistics.is_empty() {
                stderrln!(
                    "warning: --sizes-from: no statistics for {} (never vacuumed or analyzed \
                     there); give their sizes with --table-rows TABLE=N",
                    read.without_statistics.join(", ")
                );
            }
            read.tables
        }
    };
    Ok(ProductionSizes::new(&config.table_rows, from_server))
}

/// The rows of every user table of the server at `url`, from its statistics
/// (a partitioned table: the sum of its partitions'), in a read-only
/// session that reads no row.
pub async fn read_sizes(url: &str) -> Result<ServerSizes, Error> {
    let shown = redact_url(url);
    let bad = |problem: String| {
        Error::bad_input(format!(
            "--sizes-from {shown}: {problem}; give a connection string to a production or \
             staging server (it only reads pg_class), or give the sizes with --table-rows TABLE=N"
        ))
    };
    let resolved = ConnSettings::resolve(url, &|name| std::env::var(name).ok()).map_err(&bad)?;
    let tls = Tls::new(&resolved.settings.ssl).map_err(&bad)?;
    let client = tls
        .connect(&resolved.settings.tokio_config())
        .await
        .map_err(|err| bad(format!("cannot connect: {}", error_text(&err))))?;
    read_statistics(&client)
        .await
        .map_err(|err| bad(error_text(&err)))
}

/// The statistics query of [`read_sizes`], on its connection.
async fn read_statistics(client: &Client) -> Result<ServerSizes, tokio_postgres::Error> {
    client
        .batch_execute(
            "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY; SET statement_timeout = '30s'",
        )
        .await?;
    // reltuples is -1 (from 14) or 0 with pages (before) until the first VACUUM or ANALYZE.
    let rows = client
        .query(
            "SELECT n.nspname::text || '.' || c.relname::text, \
             CASE WHEN c.relkind = 'p' THEN \
               (SELECT sum(GREATEST(p.reltuples, 0))::float8 FROM pg_partition_tree(c.oid) t \
                JOIN pg_class p ON p.oid = t.relid WHERE t.isleaf) \
             WHEN c.reltuples < 0 OR (c.reltuples = 0 AND c.relpages > 0) THEN NULL \
             ELSE c.reltuples::float8 END \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition \
             AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' \
             ORDER BY 1",
            &[],
        )
        .await?;
    let mut sizes = ServerSizes::default();
    for row in rows {
        let table: String = row.get(0);
        match row.get::<_, Option<f64>>(1) {
            Some(rows) => sizes.tables.push(TableSize {
                table,
                rows: rows.round() as u64,
                source: SizeSource::SizesFrom,
            }),
            None => sizes.without_statistics.push(table),
        }
    }
    Ok(sizes)
}

/// The rows each of `tables` (`schema.table`, quoted, with the name the trace
/// shows) holds on the check's server, from its statistics (the check runs
/// `VACUUM ANALYZE` once the rows are in).
pub async fn generated_rows(
    client: &Client,
    tables: &[(String, String)],
) -> Result<Vec<(String, u64)>, Error> {
    let mut rows = Vec::new();
    for (name, sql_name) in tables {
        let count: f64 = client
            .query_one(
                "SELECT GREATEST(reltuples, 0)::float8 FROM pg_class WHERE oid = $1::text::regclass",
                &[sql_name],
            )
            .await
            .map_err(|err| {
                Error::runtime(format!("reading the rows of {name}: {}", error_text(&err)))
            })?
            .get(0);
        rows.push((name.clone(), count.round() as u64));
    }
    Ok(rows)
}

/// A statement that reads or rewrites a whole table under a lock that
/// blocks traffic, with its hold at the table's production size when one
/// was given. Built once, rendered by every format.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeEstimate {
    /// The statement's number in the migration.
    pub statement: u32,
    /// Its text.
    pub sql: String,
    pub relation: String,
    pub mode: LockMode,
    /// It rewrote the table (else it scanned it).
    pub rewritten: bool,
    /// It builds an index, which sorts the rows: its time grows as rows times their logarithm.
    pub sorts: bool,
    /// Its time on the generated rows, in ms.
    pub measured_ms: f64,
    /// How long its lock stayed held in the trace (until its transaction ended), in ms.
    pub held_ms: f64,
    /// The rows the table held when it was measured.
    pub measured_rows: u64,
    /// The table's rows in production, when given.
    pub production_rows: Option<u64>,
    pub source: Option<SizeSource>,
    /// The hold at the production size, in ms: the trace's hold plus what
    /// the statement's part that grows with the rows adds at that size
    /// (never below the trace's hold).
    pub estimated_hold_ms: Option<f64>,
    /// The statement's time on the table emptied, in ms: its fixed part,
    /// which does not grow with the rows (see [`per_row`](super::per_row));
    /// `None` when it could not be timed so, and the whole time is scaled.
    pub fixed_ms: Option<f64>,
    /// Its time on `fit_rows` rows in the same timing as `fixed_ms`, in ms.
    pub rows_ms: Option<f64>,
    /// The rows `rows_ms` was timed at: `measured_rows`, or, when those were
    /// too few to scale, the table filled again with more (see
    /// `check::calibrate`); `None` when the whole time is scaled.
    pub fit_rows: Option<u64>,
    /// The production size is more than [`LOW_CONFIDENCE_FACTOR`] times
    /// rows it was measured at, and those were fewer than
    /// [`LOW_CONFIDENCE_ROWS`]: the figure is a lower-confidence one.
    pub low_confidence: bool,
}

/// An estimate from fewer rows than this ...
pub const LOW_CONFIDENCE_ROWS: u64 = 10_000;

/// ... extrapolated more than this many times is a lower-confidence one: on
/// a small table the rows' cost is a small part of the time measured, and
/// what a sort or the cache does at millions of rows is far from it.
pub const LOW_CONFIDENCE_FACTOR: f64 = 10_000.0;

/// Whether an estimate at `production` rows from a cost timed at `rows` is
/// a lower-confidence one.
fn low_confidence(rows: u64, production: u64) -> bool {
    rows < LOW_CONFIDENCE_ROWS && production as f64 > LOW_CONFIDENCE_FACTOR * rows as f64
}

/// What a statement's time grows with, at `rows`: the rows, or for an index
/// build, which sorts them, the rows times their logarithm.
fn units(rows: f64, sorts: bool) -> f64 {
    match sorts && rows > 1.0 {
        true => rows * rows.ln(),
        false => rows,
    }
}

impl SizeEstimate {
    /// What it does: `rewrites orders under ACCESS EXCLUSIVE`.
    pub fn what(&self) -> String {
        format!(
            "{} {} under {}",
            match self.rewritten {
                true => "rewrites",
                false => "reads the whole of",
            },
            self.relation,
            self.mode.sql_name()
        )
    }

    /// The measurement and the estimate: `140 ms for 100,000 rows (0.40 ms
    /// of it fixed), so about 70 s at 50,000,000 rows (--table-rows; an
    /// estimate, the part that grows with the rows scaled by rows)`, with a
    /// warning when it is a lower-confidence one; the measurement alone when
    /// no size was given.
    pub fn figures(&self) -> String {
        let fixed = match (self.fixed_ms, self.fit_rows) {
            (Some(fixed_ms), Some(rows)) if rows != self.measured_rows => format!(
                " ({} fixed; its cost per row timed again at {} rows)",
                format_latency(fixed_ms),
                format_thousands(rows)
            ),
            (Some(fixed_ms), _) => format!(" ({} of it fixed)", format_latency(fixed_ms)),
            (None, _) => String::new(),
        };
        let measured = format!(
            "{} for {} rows{fixed}",
            format_latency(self.measured_ms),
            format_thousands(self.measured_rows)
        );
        let (Some(hold_ms), Some(rows), Some(source)) =
            (self.estimated_hold_ms, self.production_rows, self.source)
        else {
            return measured;
        };
        let scaled = match self.fixed_ms {
            Some(_) => "the part that grows with the rows scaled by",
            None => "scaled by",
        };
        let timed_rows = self.fit_rows.unwrap_or(self.measured_rows);
        let low_confidence = match self.low_confidence {
            true => format!(
                "; lower confidence: {} times the {} rows it was measured at, give --rows {} \
                 or more",
                format_thousands((rows as f64 / timed_rows as f64).round() as u64),
                format_thousands(timed_rows),
                format_thousands(LOW_CONFIDENCE_ROWS)
            ),
            false => String::new(),
        };
        format!(
            "{measured}, so about {} at {} rows ({}; an estimate, {scaled} {}{low_confidence})",
            format_latency(hold_ms),
            format_thousands(rows),
            source.flag(),
            match self.sorts {
                true => "rows x log rows: an index build sorts",
                false => "rows",
            }
        )
    }

    /// The estimate again with the statement's time split by
    /// [`per_row::fit_rows`](super::per_row::fit_rows): only the part that
    /// grows with the rows is scaled. `None` leaves it as it is (the whole
    /// time scaled).
    pub fn with_fit(self, fit: Option<super::per_row::RowFit>) -> SizeEstimate {
        match fit {
            Some(fit) => {
                let rows = self.measured_rows;
                self.with_fit_at(rows, fit)
            }
            None => self,
        }
    }

    /// The estimate again from `fit`, timed on the table at `fit_rows` rows:
    /// the cost per row (per row times its logarithm for an index build)
    /// there, times what the production size adds to the rows measured.
    pub fn with_fit_at(self, fit_rows: u64, fit: super::per_row::RowFit) -> SizeEstimate {
        let Some(production) = self.production_rows else {
            return self;
        };
        let per_unit_ms =
            (fit.rows_ms - fit.fixed_ms).max(0.0) / units(fit_rows as f64, self.sorts).max(1.0);
        let added =
            units(production as f64, self.sorts) - units(self.measured_rows as f64, self.sorts);
        SizeEstimate {
            estimated_hold_ms: Some(self.held_ms + (per_unit_ms * added).max(0.0)),
            fixed_ms: Some(fit.fixed_ms),
            rows_ms: Some(fit.rows_ms),
            fit_rows: Some(fit_rows),
            low_confidence: low_confidence(fit_rows, production),
            ..self
        }
    }

    /// Whether the estimated hold is over a stall budget of `max_stall_s`.
    pub fn over(&self, max_stall_s: u32) -> bool {
        self.estimated_hold_ms
            .is_some_and(|hold_ms| hold_ms > f64::from(max_stall_s) * 1000.0)
    }
}

/// Every statement of `statements` that rewrote or scanned one of `measured`
/// (tables that existed before the migration, each with the rows it held)
/// under a lock that blocks reads or writes (its own, or a stronger one an
/// earlier statement of its transaction holds), once per statement and
/// table, with its estimate at the size `sizes` gives the table.
pub fn estimates(
    statements: &[TracedStatement],
    measured: &[(String, u64)],
    sizes: &ProductionSizes,
) -> Vec<SizeEstimate> {
    let mut found: Vec<SizeEstimate> = Vec::new();
    for (index, statement) in statements.iter().enumerate() {
        for lock in &statement.locks {
            let held = held_before(&statements[..index], statement, &lock.relation);
            let mode = held.map_or(lock.mode, |(held, _)| held.max(lock.mode));
            let whole_table = lock.rewritten || lock.scanned == Some(true);
            if lock.kind != RelationKind::Table || mode.blocks() == Blocks::Nothing || !whole_table
            {
                continue;
            }
            let Some((_, rows)) = measured.iter().find(|(name, _)| *name == lock.relation) else {
                continue;
            };
            if *rows == 0
                || found.iter().any(|seen| {
                    seen.statement == statement.statement && seen.relation == lock.relation
                })
            {
                continue;
            }
            let size = sizes.of(&lock.relation);
            let sorts = builds_an_index(&statement.sql);
            let scale =
                |production: u64| units(production as f64, sorts) / units(*rows as f64, sorts);
            found.push(SizeEstimate {
                statement: statement.statement,
                sql: statement.sql.clone(),
                relation: lock.relation.clone(),
                mode,
                rewritten: lock.rewritten,
                sorts,
                measured_ms: statement.duration_ms,
                held_ms: statement.held_ms,
                measured_rows: *rows,
                production_rows: size.map(|size| size.rows),
                source: size.map(|size| size.source),
                estimated_hold_ms: size.map(|size| {
                    let extra = statement.duration_ms * (scale(size.rows) - 1.0).max(0.0);
                    statement.held_ms + extra
                }),
                fixed_ms: None,
                rows_ms: None,
                fit_rows: None,
                low_confidence: size.is_some_and(|size| low_confidence(*rows, size.rows)),
            });
        }
    }
    found
}

/// Whether `sql` builds an index: `CREATE [UNIQUE] INDEX`, or a primary key
/// or unique constraint added to a table.
fn builds_an_index(sql: &str) -> bool {
    let words = statement_words(sql).into_iter().next().unwrap_or_default();
    let has = |word: &str| words.iter().any(|w| w == word);
    let creates_index =
        words.first().is_some_and(|w| w == "CREATE") && words.iter().take(4).any(|w| w == "INDEX");
    creates_index || (has("ADD") && (has("UNIQUE") || (has("PRIMARY") && has("KEY"))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::lock_trace::TracedLock;

    /// Statement `number`, in a transaction of its own (step `number`).
    fn statement(number: u32, sql: &str, locks: Vec<TracedLock>) -> TracedStatement {
        TracedStatement {
            step: number,
            statement: number,
            sql: sql.into(),
            duration_ms: 140.0,
            held_ms: 150.0,
            locks,
            wal_bytes: None,
        }
    }

    fn lock(relation: &str, mode: LockMode, rewritten: bool, scanned: bool) -> TracedLock {
        TracedLock {
            relation: relation.into(),
            kind: RelationKind::Table,
            mode,
            taken: true,
            rewritten,
            scanned: Some(scanned),
        }
    }

    #[test]
    fn only_the_part_that_grows_with_the_rows_is_scaled() {
        // CREATE INDEX on 1,000 rows: 1.15 ms, 0.43 ms of it on the table
        // emptied. Scaled whole to 20 million rows it is mostly fixed cost.
        let index = [statement(
            1,
            "CREATE INDEX envelope_sender ON envelope (sender)",
            vec![lock("envelope", LockMode::Share, false, true)],
        )];
        let index = [TracedStatement {
            duration_ms: 1.15,
            held_ms: 1.2,
            ..index[0].clone()
        }];
        let measured = [("envelope".to_string(), 1000)];
        let sizes = ProductionSizes::new(&[("envelope".to_string(), 20_000_000)], Vec::new());
        let whole = estimates(&index, &measured, &sizes).remove(0);
        let fitted_whole = whole.clone();
        let units_ratio = 20e6 * 20e6f64.ln() / (1e3 * 1e3f64.ln());
        assert!(
            (whole.estimated_hold_ms.unwrap() - (1.2 + 1.15 * (units_ratio - 1.0))).abs() < 1e-6
        );
        assert!(whole.low_confidence, "20,000 times 1,000 rows");
        let fitted = fitted_whole.with_fit(Some(super::super::per_row::RowFit {
            fixed_ms: 0.43,
            rows_ms: 1.15,
        }));
        let hold_ms = fitted.estimated_hold_ms.unwrap();
        assert!(
            (hold_ms - (1.2 + 0.72 * (units_ratio - 1.0))).abs() < 1e-6,
            "{hold_ms}"
        );
        assert_eq!(
            fitted.figures(),
            "1.15 ms for 1,000 rows (0.43 ms of it fixed), so about 35.05 s at 20,000,000 rows \
             (--table-rows; an estimate, the part that grows with the rows scaled by rows x log \
             rows: an index build sorts; lower confidence: 20,000 times the 1,000 rows it was \
             measured at, give --rows 10,000 or more)"
        );
        // Its cost per row timed again on the table filled with 100,000 rows
        // (180 ms, 0.43 ms of it fixed): no longer a lower-confidence figure.
        let refilled = whole.clone().with_fit_at(
            100_000,
            super::super::per_row::RowFit {
                fixed_ms: 0.43,
                rows_ms: 180.0,
            },
        );
        assert!(!refilled.low_confidence);
        let per_unit_ms = (180.0 - 0.43) / (1e5 * 1e5f64.ln());
        let added = 20e6 * 20e6f64.ln() - 1e3 * 1e3f64.ln();
        assert!((refilled.estimated_hold_ms.unwrap() - (1.2 + per_unit_ms * added)).abs() < 1e-6);
        assert!(
            refilled
                .figures()
                .starts_with("1.15 ms for 1,000 rows (0.43 ms fixed; its cost per row timed again at 100,000 rows), so about 52.44 s"),
            "{}",
            refilled.figures()
        );
        // From 100,000 rows, 2,000 times: not a lower-confidence figure.
        let measured = [("envelope".to_string(), 100_000)];
        assert!(!estimates(&index, &measured, &sizes)[0].low_confidence);
        // No fit: the whole time stays scaled.
        assert_eq!(
            estimates(&index, &measured, &sizes)
                .remove(0)
                .with_fit(None),
            estimates(&index, &measured, &sizes).remove(0)
        );
    }

    #[test]
    fn names_match_with_or_without_the_schema() {
        assert!(same_table("orders", "public.orders"));
        assert!(same_table("public.orders", "orders"));
        assert!(same_table("\"Orders\"", "Orders"));
        assert!(!same_table("app.orders", "public.orders"));
        assert!(!same_table("orders", "orders_archive"));
        let sizes = ProductionSizes::new(
            &[("orders".to_string(), 50)],
            vec![TableSize {
                table: "public.orders".to_string(),
                rows: 7,
                source: SizeSource::SizesFrom,
            }],
        );
        assert_eq!(sizes.of("public.orders").unwrap().rows, 50, "the flag wins");
        assert_eq!(sizes.of("customers"), None);
    }

    #[test]
    fn a_rewrite_is_scaled_by_rows_and_a_lock_alone_is_not_estimated() {
        let statements = [
            statement(
                1,
                "ALTER TABLE orders ALTER COLUMN amount TYPE bigint",
                vec![lock("orders", LockMode::AccessExclusive, true, true)],
            ),
            // Locks only: the lock queue's business, measured under traffic.
            statement(
                2,
                "ALTER TABLE orders ADD COLUMN note text",
                vec![lock("orders", LockMode::AccessExclusive, false, false)],
            ),
            // A scan under a lock that blocks nothing: no stall at any size.
            statement(
                3,
                "ALTER TABLE orders VALIDATE CONSTRAINT c",
                vec![lock("orders", LockMode::ShareUpdateExclusive, false, true)],
            ),
            // A table the migration made: not measured.
            statement(
                4,
                "CREATE INDEX ON notes (id)",
                vec![lock("notes", LockMode::Share, false, true)],
            ),
        ];
        let measured = [("orders".to_string(), 100_000)];
        let sizes = ProductionSizes::new(&[("orders".to_string(), 50_000_000)], Vec::new());
        let found = estimates(&statements, &measured, &sizes);
        assert_eq!(found.len(), 1, "{found:?}");
        let rewrite = &found[0];
        assert_eq!(rewrite.statement, 1);
        // 150 ms held, plus 140 ms x (500 - 1) more rows' worth.
        assert_eq!(rewrite.estimated_hold_ms, Some(150.0 + 140.0 * 499.0));
        assert_eq!(rewrite.what(), "rewrites orders under ACCESS EXCLUSIVE");
        assert_eq!(
            rewrite.figures(),
            "140 ms for 100,000 rows, so about 70.01 s at 50,000,000 rows (--table-rows; an \
             estimate, scaled by rows)"
        );
        assert!(rewrite.over(1) && !rewrite.over(100));

        // No size given: the measurement alone, never over a budget.
        let without_sizes = estimates(&statements, &measured, &ProductionSizes::default());
        assert_eq!(without_sizes[0].figures(), "140 ms for 100,000 rows");
        assert!(!without_sizes[0].over(0));
        // An index built after an ALTER TABLE of the same transaction builds
        // under its ACCESS EXCLUSIVE: reads wait too.
        let index_after_alter = [
            statements[1].clone(),
            TracedStatement {
                step: statements[1].step,
                ..statement(
                    5,
                    "CREATE INDEX ON orders (note)",
                    vec![lock("orders", LockMode::Share, false, true)],
                )
            },
        ];
        let under = estimates(&index_after_alter, &measured, &sizes);
        assert_eq!(under.len(), 1, "{under:?}");
        assert_eq!(under[0].mode, LockMode::AccessExclusive);
        // Sorted: 500 times the rows, 1.54 times their logarithm.
        let factor = 50e6 * 50e6f64.ln() / (1e5 * 1e5f64.ln());
        let hold_ms = under[0].estimated_hold_ms.unwrap();
        assert!(
            (hold_ms - (150.0 + 140.0 * (factor - 1.0))).abs() < 1e-6,
            "{hold_ms}"
        );
        assert!(
            under[0]
                .figures()
                .ends_with("scaled by rows x log rows: an index build sorts)")
        );
        assert_eq!(
            under[0].what(),
            "reads the whole of orders under ACCESS EXCLUSIVE"
        );
        // A production table smaller than the generated one keeps the trace's hold.
        let small = ProductionSizes::new(&[("orders".to_string(), 10)], Vec::new());
        assert_eq!(
            estimates(&statements, &measured, &small)[0].estimated_hold_ms,
            Some(150.0)
        );
    }
}
