//! A second size for an estimate that would otherwise be extrapolated from
//! too few rows: the table is filled again with [`CALIBRATION_ROWS`]
//! generated rows on a copy of the work database, and the statement's part
//! that grows with the rows is timed there.
//!
//! On a table of 1,000 rows a statement's time is mostly fixed cost and
//! caches: its part that grows with the rows is a fraction of a millisecond,
//! too little to scale 20,000 times (`CREATE INDEX` came out at 166.78 s
//! scaled whole from 1,000 rows and 21.02 s from 100,000; with the fixed
//! part taken out, under 1 s from 1,000 rows). Timed at 100,000 rows, the
//! per-row cost is the one the default rows give, whatever `--rows` says.

use tokio_postgres::Client;

use super::course::user_schemas;
use super::rows::fill_tables;
use super::runs::{back_to_work_database, copy_work_database};
use crate::config::{CheckConfig, Data, RowCounts};
use crate::engine::postgres::check_verdict::per_row::fit_rows;
use crate::engine::postgres::check_verdict::sizes::{SizeEstimate, generated_rows};
use crate::engine::postgres::database::Database;
use crate::error::Error;
use crate::metrics::lock_trace::TracedStatement;
use crate::role::Role;

/// The rows a table is filled with to time a statement whose estimate is a
/// lower-confidence one (see [`SizeEstimate::low_confidence`]).
pub const CALIBRATION_ROWS: u64 = 100_000;

/// `estimates` with each lower-confidence one timed again on its table
/// filled with [`CALIBRATION_ROWS`] generated rows, on a copy of the work
/// database (dropped after); `tables` name each measured table as the trace
/// shows it and as SQL does. Only for generated rows (`--seed` data is the
/// user's); an estimate that cannot be timed so stays as it was.
pub async fn refit_from_more_rows(
    config: &CheckConfig,
    target: &mut Database,
    statements: &[TracedStatement],
    tables: &[(String, String)],
    estimates: Vec<SizeEstimate>,
) -> Result<Vec<SizeEstimate>, Error> {
    let Data::Rows(rows) = &config.data else {
        return Ok(estimates);
    };
    if !estimates.iter().any(|estimate| estimate.low_confidence) {
        return Ok(estimates);
    }
    copy_work_database(config, target).await?;
    let refitted = async {
        let client = target.connect(Role::Setup).await?;
        let mut refitted = Vec::with_capacity(estimates.len());
        for estimate in estimates {
            let table = tables.iter().find(|(name, _)| *name == estimate.relation);
            match (estimate.low_confidence, table) {
                (true, Some(table)) => {
                    let more = refit(config, rows, &client, target, statements, table, &estimate);
                    let fitted = more.await?;
                    refitted.push(fitted.unwrap_or(estimate));
                }
                _ => refitted.push(estimate),
            }
        }
        Ok::<_, Error>(refitted)
    }
    .await;
    back_to_work_database(target).await?;
    refitted
}

/// `estimate` timed on `table` (its name in the trace and in SQL) refilled
/// with [`CALIBRATION_ROWS`] rows; `None` when the generator gave it no more
/// rows than it had or the statement cannot be timed there.
async fn refit(
    config: &CheckConfig,
    rows: &RowCounts,
    client: &Client,
    target: &Database,
    statements: &[TracedStatement],
    (name, sql_name): &(String, String),
    estimate: &SizeEstimate,
) -> Result<Option<SizeEstimate>, Error> {
    let empty = format!("TRUNCATE {sql_name} CASCADE");
    client
        .batch_execute(&empty)
        .await
        .map_err(|err| Error::runtime(format!("{empty}: {err}")))?;
    let counts = RowCounts {
        every_table: 0,
        tables: vec![(name.clone(), CALIBRATION_ROWS.max(rows.every_table))],
    };
    let schemas = user_schemas(client).await?;
    let schemas: Vec<&str> = schemas.iter().map(String::as_str).collect();
    fill_tables(&[client], &schemas, &counts, config.seed, &mut |_, _, _| {}).await?;
    let filled = generated_rows(client, &[(name.clone(), sql_name.clone())]).await?;
    let filled_rows = filled.first().map_or(0, |(_, rows)| *rows);
    if filled_rows <= estimate.measured_rows {
        return Ok(None);
    }
    let before: Vec<String> = (statements.iter())
        .filter(|statement| statement.statement < estimate.statement)
        .map(|statement| statement.sql.clone())
        .collect();
    let statement = (before.as_slice(), estimate.sql.as_str());
    let fit = fit_rows(
        client,
        target.server_version_num,
        statement,
        sql_name,
        (0.0, 0.0),
    )
    .await;
    Ok(fit.map(|fit| estimate.clone().with_fit_at(filled_rows, fit)))
}
