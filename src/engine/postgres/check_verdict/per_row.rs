//! A statement's time on the generated rows split into a fixed part and a
//! part that grows with the rows, so that an estimate at production size
//! scales only the second.
//!
//! A statement on a small table is mostly fixed cost (planning, catalog
//! work, creating the index's files, the round trip): `CREATE INDEX` on
//! 1,000 rows took 1.15 ms here, 0.43 ms of it on the same table emptied.
//! Scaled whole to 20,000,000 rows, a real project's index came out at
//! 166.78 s from 1,000 rows and 21.02 s from 100,000. So the statement is
//! timed again on the quiet server, each time in a transaction that is
//! rolled back, after the statements of the migration before it (which it
//! may need): on the table as generated and on the table emptied by
//! `TRUNCATE`, each the fastest of [`RUNS`] tries; the difference is what
//! the rows cost. Too few rows to scale that far are `check::calibrate`'s.

use std::time::Instant;

use tokio_postgres::Client;

use super::sizes::SizeEstimate;
use crate::metrics::lock_trace::TracedStatement;
use crate::strategy::statements::{Unrollable, first_unrollable};

/// How many times each size is timed; the fastest counts (the machine's
/// noise only ever adds time).
pub const RUNS: usize = 5;

/// A statement that ran longer than this on the generated rows in the trace
/// (with the statements before it, which each try runs again) is not timed
/// again at that size: its fixed part is small beside it, and the trace's
/// time stands.
const RETIME_UNDER_MS: f64 = 2_000.0;

/// The statement's time on the table as generated and emptied, in ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowFit {
    /// On the table emptied: its fixed part.
    pub fixed_ms: f64,
    /// On the table as generated (the fastest try, or the trace's time for a
    /// long statement).
    pub rows_ms: f64,
}

/// The statement `sql` timed on `table` (as SQL names it) as generated and
/// emptied, after `before` (the migration's statements before it), in
/// transactions rolled back; `traced_ms` is its time in the trace and
/// `before_ms` theirs (0 when unknown: it is timed again). `None`
/// when it cannot be timed so (a statement that must run outside a
/// transaction, or one that fails on the emptied table): the estimate then
/// scales its whole time.
pub async fn fit_rows(
    client: &Client,
    server_version_num: u32,
    (before, sql): (&[String], &str),
    table: &str,
    (traced_ms, before_ms): (f64, f64),
) -> Option<RowFit> {
    let outside = |sql: &String| {
        matches!(
            first_unrollable(sql, server_version_num),
            Some(Unrollable::OutsideTransaction(_))
        )
    };
    if before.iter().chain([&sql.to_string()]).any(outside) {
        return None;
    }
    let retime = traced_ms + before_ms < RETIME_UNDER_MS;
    let mut fixed_ms = f64::INFINITY;
    let mut rows_ms = match retime {
        true => f64::INFINITY,
        false => traced_ms,
    };
    for _ in 0..RUNS {
        let empty = format!("TRUNCATE {table} CASCADE");
        fixed_ms = fixed_ms.min(timed(client, Some(&empty), before, sql).await?);
        if retime {
            rows_ms = rows_ms.min(timed(client, None, before, sql).await?);
        }
    }
    Some(RowFit { fixed_ms, rows_ms })
}

/// `sql`'s time in ms in a transaction that first runs `first` and `before`,
/// rolled back; `None` when any of them fails.
async fn timed(client: &Client, first: Option<&str>, before: &[String], sql: &str) -> Option<f64> {
    let run = async {
        client
            .batch_execute("BEGIN; SET LOCAL statement_timeout = '120s'")
            .await?;
        if let Some(first) = first {
            client.batch_execute(first).await?;
        }
        for statement in before {
            client.batch_execute(statement).await?;
        }
        let started = Instant::now();
        client.batch_execute(sql).await?;
        Ok::<f64, tokio_postgres::Error>(started.elapsed().as_secs_f64() * 1000.0)
    };
    let result = run.await;
    client.batch_execute("ROLLBACK").await.ok()?;
    result.ok()
}

/// `estimates` with each one given a production size refitted by
/// [`fit_rows`] on `client` (the work database, as before the migration):
/// `statements` are the migration's traced statements, `tables` each
/// measured table's name as the trace shows it and as SQL names it.
pub async fn fit_estimates(
    client: &Client,
    server_version_num: u32,
    statements: &[TracedStatement],
    tables: &[(String, String)],
    estimates: Vec<SizeEstimate>,
) -> Vec<SizeEstimate> {
    let mut fitted = Vec::with_capacity(estimates.len());
    for estimate in estimates {
        let table = tables.iter().find(|(name, _)| *name == estimate.relation);
        let (Some((_, table_sql)), Some(_)) = (table, estimate.production_rows) else {
            fitted.push(estimate);
            continue;
        };
        let earlier: Vec<&TracedStatement> = (statements.iter())
            .filter(|statement| statement.statement < estimate.statement)
            .collect();
        let before: Vec<String> = earlier.iter().map(|s| s.sql.clone()).collect();
        let before_ms: f64 = earlier.iter().map(|s| s.duration_ms).sum();
        let statement = (before.as_slice(), estimate.sql.as_str());
        let times = (estimate.measured_ms, before_ms);
        let fit = fit_rows(client, server_version_num, statement, table_sql, times).await;
        fitted.push(estimate.with_fit(fit));
    }
    fitted
}
