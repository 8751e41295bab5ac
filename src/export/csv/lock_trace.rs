//! `ddl_locks.csv`: the lock trace of each strategy's migration, one row per
//! lock a statement holds on a relation (a statement that locks nothing, like
//! `SET lock_timeout`, has one row with the relation empty), read back into
//! the same [`TracedStatement`]s.

use serde::{Deserialize, Serialize};

use super::cells;
use super::csv_file;
use crate::export::Exporter;
use crate::metrics::RunReport;
use crate::metrics::lock_trace::{Blocks, LockMode, RelationKind, TracedLock, TracedStatement};
use crate::results::{DDL_LOCKS_CSV, OutputFile};

/// One row of `ddl_locks.csv`: one lock of one traced statement of one strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockTraceRecord {
    pub strategy: String,
    /// The 1-based DDL step: one transaction, or one statement outside a transaction.
    pub step: u32,
    /// The 1-based statement, counted across the migration.
    pub statement: u32,
    /// The relation; empty for a statement that locks nothing.
    pub relation: String,
    pub kind: Option<RelationKind>,
    pub mode: Option<LockMode>,
    /// What the lock stops the application doing, from `mode`.
    pub blocks: Option<Blocks>,
    /// Taken by this statement (`0`: held since an earlier statement of its transaction).
    #[serde(with = "cells::zero_or_one")]
    pub taken: bool,
    /// The statement rewrote the relation (its `relfilenode` changed).
    #[serde(with = "cells::zero_or_one")]
    pub rewritten: bool,
    /// The statement read the whole table; empty where the trace cannot tell.
    #[serde(with = "cells::optional_zero_or_one")]
    pub scanned: Option<bool>,
    /// How long the statement ran in the trace, with no traffic.
    #[serde(serialize_with = "cells::three_decimals")]
    pub statement_ms: f64,
    /// How long its locks stay held: from its start until its transaction ends.
    #[serde(serialize_with = "cells::three_decimals")]
    pub held_ms: f64,
    pub sql: String,
    /// The WAL the server wrote while the statement ran in the trace, in
    /// bytes (the same on each of its rows); empty when unknown.
    pub wal_bytes: Option<u64>,
}

impl LockTraceRecord {
    /// The rows of `statement` of `strategy`: one per lock, or one without a relation.
    pub fn of_statement(strategy: &str, statement: &TracedStatement) -> Vec<LockTraceRecord> {
        let row = |lock: Option<&TracedLock>| LockTraceRecord {
            strategy: strategy.to_string(),
            step: statement.step,
            statement: statement.statement,
            relation: lock.map_or(String::new(), |lock| lock.relation.clone()),
            kind: lock.map(|lock| lock.kind),
            mode: lock.map(|lock| lock.mode),
            blocks: lock.map(TracedLock::blocks),
            taken: lock.is_some_and(|lock| lock.taken),
            rewritten: lock.is_some_and(|lock| lock.rewritten),
            scanned: lock.and_then(|lock| lock.scanned),
            statement_ms: statement.duration_ms,
            held_ms: statement.held_ms,
            sql: statement.sql.clone(),
            wal_bytes: statement.wal_bytes,
        };
        match statement.locks.is_empty() {
            true => vec![row(None)],
            false => statement.locks.iter().map(Some).map(row).collect(),
        }
    }

    /// The lock of this row; `None` for the row of a statement that locks nothing.
    fn lock(&self) -> Option<TracedLock> {
        Some(TracedLock {
            relation: self.relation.clone(),
            kind: self.kind?,
            mode: self.mode?,
            taken: self.taken,
            rewritten: self.rewritten,
            scanned: self.scanned,
        })
    }
}

/// The traced statements of each strategy from the rows of `ddl_locks.csv`,
/// in the order of the file, as (strategy, statements).
pub fn statements_from_records(
    records: Vec<LockTraceRecord>,
) -> Vec<(String, Vec<TracedStatement>)> {
    let mut strategies: Vec<(String, Vec<TracedStatement>)> = Vec::new();
    for record in records {
        if strategies
            .last()
            .is_none_or(|(name, _)| *name != record.strategy)
        {
            strategies.push((record.strategy.clone(), Vec::new()));
        }
        let statements = &mut strategies.last_mut().expect("just pushed").1;
        let same = statements
            .last()
            .is_some_and(|last| last.step == record.step && last.statement == record.statement);
        if !same {
            statements.push(TracedStatement {
                step: record.step,
                statement: record.statement,
                sql: record.sql.clone(),
                duration_ms: record.statement_ms,
                held_ms: record.held_ms,
                locks: Vec::new(),
                wal_bytes: record.wal_bytes,
            });
        }
        if let Some(lock) = record.lock() {
            statements.last_mut().expect("just pushed").locks.push(lock);
        }
    }
    strategies
}

/// Writes `ddl_locks.csv`: every strategy's lock trace (only the header when
/// no strategy had one).
pub struct LockTraceCsv;

impl Exporter for LockTraceCsv {
    fn name(&self) -> &'static str {
        DDL_LOCKS_CSV
    }

    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>> {
        // Repeats of a strategy share its trace: it is written once, with the first.
        let first_runs = report.strategies.iter().filter(|s| s.repeat() == 1);
        let records = first_runs.flat_map(|strategy| {
            strategy
                .lock_trace
                .iter()
                .flat_map(|statement| LockTraceRecord::of_statement(&strategy.strategy, statement))
        });
        Ok(vec![csv_file::<LockTraceRecord>(DDL_LOCKS_CSV, records)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::reference_report;

    fn traced() -> Vec<TracedStatement> {
        vec![
            TracedStatement {
                step: 1,
                statement: 1,
                sql: "SET lock_timeout = '1s'".into(),
                duration_ms: 0.05,
                held_ms: 3.25,
                locks: Vec::new(),
                wal_bytes: None,
            },
            TracedStatement {
                step: 1,
                statement: 2,
                sql: "ALTER TABLE orders ADD COLUMN token uuid DEFAULT gen_random_uuid()".into(),
                duration_ms: 3.2,
                held_ms: 3.2,
                locks: vec![
                    TracedLock {
                        relation: "orders".into(),
                        kind: RelationKind::Table,
                        mode: LockMode::AccessExclusive,
                        taken: true,
                        rewritten: true,
                        scanned: Some(true),
                    },
                    TracedLock {
                        relation: "orders_pkey".into(),
                        kind: RelationKind::Index,
                        mode: LockMode::AccessExclusive,
                        taken: true,
                        rewritten: true,
                        scanned: None,
                    },
                ],
                wal_bytes: Some(25_996_288),
            },
        ]
    }

    #[test]
    fn the_trace_has_its_exact_header_and_reads_back() {
        let mut report = reference_report();
        report.strategies[0].lock_trace = traced();
        let files = LockTraceCsv.render(&report).unwrap();
        let text = String::from_utf8(files[0].bytes.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "strategy,step,statement,relation,kind,mode,blocks,taken,rewritten,scanned,\
             statement_ms,held_ms,sql,wal_bytes"
        );
        assert_eq!(
            lines[1],
            "naive,1,1,,,,,0,0,,0.050,3.250,SET lock_timeout = '1s',"
        );
        assert_eq!(
            lines[2],
            "naive,1,2,orders,table,AccessExclusiveLock,reads_and_writes,1,1,1,3.200,3.200,\
             ALTER TABLE orders ADD COLUMN token uuid DEFAULT gen_random_uuid(),25996288"
        );
        assert!(
            lines[3].ends_with(",25996288"),
            "each lock's row: {}",
            lines[3]
        );
        assert_eq!(lines.len(), 4);
        let records: Vec<LockTraceRecord> = ::csv::Reader::from_reader(text.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap();
        let back = statements_from_records(records);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].0, "naive");
        // What the file keeps: milliseconds to 3 decimals.
        assert_eq!(back[0].1, traced());
    }
}
