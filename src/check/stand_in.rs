//! A STAND-IN for `migrations` and `rows` (issue 27, items 1 and 2, built on
//! the `check-input` branch): the same interface, doing only what the gate's
//! own tests need, so the gate can be built and tested before that branch
//! lands. Plain numbered `.sql` files; `--new N` only; rows for the column
//! types of the example. DELETE THIS FILE when `check-input` is merged, and
//! point the `use super::stand_in::...` lines at `migrations` and `rows`.

use std::path::{Path, PathBuf};

use tokio_postgres::Client;

use crate::config::split_statements;
use crate::error::Error;
use crate::strategy::statements::must_run_outside_transaction;

/// The layout of a migrations folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Numbered,
    UpDown,
    Dbmate,
    Flyway,
    Prisma,
    PlainSql,
}

/// Which migrations are new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    LastN(usize),
    Since(PathBuf),
    GitBase(String),
}

/// How the tool runs a migration's statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionMode {
    PerFile,
    PerStatement,
    None,
}

/// One migration file.
#[derive(Debug, Clone, PartialEq)]
pub struct Migration {
    pub name: String,
    pub path: PathBuf,
    pub version: String,
    pub steps: Vec<Step>,
}

/// Statements run in one transaction, or one statement outside a transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub statements: Vec<Statement>,
    pub in_transaction: bool,
}

/// One statement and the line of the file it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub sql: String,
    pub line: usize,
}

/// A migrations folder read in order.
#[derive(Debug, Clone, PartialEq)]
pub struct MigrationFolder {
    pub layout: Layout,
    pub migrations: Vec<Migration>,
}

/// Reads `dir`: every `*.sql` file but `*.down.sql`, in name order.
pub fn read_folder(
    dir: &Path,
    _layout: Option<Layout>,
    mode: TransactionMode,
) -> Result<MigrationFolder, Error> {
    let entries = std::fs::read_dir(dir).map_err(|err| {
        Error::bad_input(format!("{}: cannot read the folder: {err}", dir.display()))
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.ends_with(".sql") && !name.ends_with(".down.sql")
        })
        .collect();
    paths.sort();
    let mut migrations = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|err| {
            Error::bad_input(format!("{}: cannot read it: {err}", path.display()))
        })?;
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .trim_end_matches(".up.sql")
            .trim_end_matches(".sql")
            .to_string();
        let version = name.split('_').next().unwrap_or_default().to_string();
        migrations.push(Migration {
            steps: steps_of(&text, mode),
            name,
            path,
            version,
        });
    }
    Ok(MigrationFolder {
        layout: Layout::Numbered,
        migrations,
    })
}

/// The steps of one file: `-- no-transaction` on a line of its own makes
/// every statement a step outside a transaction; a `CONCURRENTLY` statement
/// is one anyway.
fn steps_of(text: &str, mode: TransactionMode) -> Vec<Step> {
    let no_transaction = text.lines().any(|line| line.trim() == "-- no-transaction");
    let mut steps: Vec<Step> = Vec::new();
    let mut searched = 0;
    for sql in split_statements(text) {
        let at = text[searched..]
            .find(&sql)
            .map_or(searched, |at| searched + at);
        searched = at + sql.len();
        let statement = Statement {
            line: text[..at].lines().count() + 1,
            sql: sql.clone(),
        };
        let alone =
            no_transaction || mode == TransactionMode::None || must_run_outside_transaction(&sql);
        let joins_last = mode == TransactionMode::PerFile
            && !alone
            && steps.last().is_some_and(|last| last.in_transaction);
        match (alone, joins_last) {
            (_, true) => steps
                .last_mut()
                .expect("checked")
                .statements
                .push(statement),
            (true, _) => steps.push(Step {
                statements: vec![statement],
                in_transaction: false,
            }),
            (false, false) => steps.push(Step {
                statements: vec![statement],
                in_transaction: true,
            }),
        }
    }
    steps
}

/// (earlier, new): `--new N` takes the last N.
pub fn split_new(
    folder: MigrationFolder,
    selection: &Selection,
) -> Result<(Vec<Migration>, Vec<Migration>), Error> {
    let Selection::LastN(count) = selection else {
        return Err(Error::bad_input(
            "--since and --git-base come with the check-input branch; use --new N",
        ));
    };
    let mut earlier = folder.migrations;
    let new = earlier.split_off(earlier.len().saturating_sub(*count));
    Ok((earlier, new))
}

/// One table's generated rows.
#[derive(Debug, Clone, PartialEq)]
pub struct TableFill {
    pub table: String,
    pub rows: u64,
    pub skipped: Option<String>,
}

/// Fills every table of `schema` with `rows_per_table` rows, parents first:
/// integer keys 1..N, foreign keys into 1..N of the parent, columns with a
/// default left to it.
pub async fn fill_tables(
    client: &Client,
    schema: &str,
    rows_per_table: u64,
    _seed: u64,
) -> Result<Vec<TableFill>, Error> {
    let tables = client
        .query(
            "SELECT c.oid::int8, c.relname::text FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind = 'r' \
             ORDER BY (SELECT count(*) FROM pg_constraint f WHERE f.conrelid = c.oid AND f.contype = 'f'), c.relname",
            &[&schema],
        )
        .await
        .map_err(|err| Error::runtime(format!("listing tables: {err}")))?;
    let mut fills = Vec::new();
    for table in tables {
        let oid: i64 = table.get(0);
        let name: String = table.get(1);
        let columns = client
            .query(
                "SELECT quote_ident(a.attname), format_type(a.atttypid, a.atttypmod), \
                 EXISTS (SELECT 1 FROM pg_constraint f WHERE f.conrelid = a.attrelid \
                         AND f.contype = 'f' AND a.attnum = ANY (f.conkey)) \
                 FROM pg_attribute a WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 \
                 AND NOT a.attisdropped AND a.attgenerated = '' AND a.attidentity = '' \
                 AND NOT a.atthasdef ORDER BY a.attnum",
                &[&oid],
            )
            .await
            .map_err(|err| Error::runtime(format!("reading columns of {name}: {err}")))?;
        let (names, values): (Vec<String>, Vec<String>) = columns
            .iter()
            .map(|row| {
                let column: String = row.get(0);
                let value = value_of(row.get(1), row.get(2), rows_per_table);
                (column, value)
            })
            .unzip();
        let sql = format!(
            "INSERT INTO {schema}.{} ({}) SELECT {} FROM generate_series(1, {rows_per_table}) g",
            quote(&name),
            names.join(", "),
            values.join(", ")
        );
        let sql = if names.is_empty() {
            format!(
                "INSERT INTO {schema}.{} SELECT FROM generate_series(1, {rows_per_table}) g",
                quote(&name)
            )
        } else {
            sql
        };
        let skipped = client.batch_execute(&sql).await.err().map(|err| {
            format!(
                "{}; give your own rows with --seed FILE",
                crate::target::error_text(&err)
            )
        });
        fills.push(TableFill {
            table: name,
            rows: if skipped.is_some() { 0 } else { rows_per_table },
            skipped,
        });
    }
    Ok(fills)
}

fn value_of(type_name: &str, references: bool, rows: u64) -> String {
    match type_name {
        "bigint" | "integer" | "smallint" if references => format!("1 + g % {rows}"),
        "bigint" | "integer" => "g".to_string(),
        "smallint" => "g % 30000".to_string(),
        "uuid" => "gen_random_uuid()".to_string(),
        "boolean" => "g % 2 = 0".to_string(),
        "date" => "current_date - (g % 1000)::int".to_string(),
        name if name.starts_with("numeric") => "(g % 1000) + 0.5".to_string(),
        name if name.starts_with("timestamp") => "now() - g * interval '1 second'".to_string(),
        _ => "'v' || g".to_string(),
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
