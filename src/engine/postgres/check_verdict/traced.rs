//! What the traces of migrations that did not run under traffic found, in
//! words, for a verdict that must not claim a stall it never measured: how
//! many lock only tables they create, how many take each lock on a table
//! that existed before them (with what it blocks), and how many rewrite or
//! read such a table whole.

use super::checked::CheckedMigration;
use crate::metrics::lock_trace::{LockMode, RelationKind, TracedLock};

/// `the trace found 2 that lock only tables they create, 1 whose strongest
/// lock on a table that existed before it is SHARE UPDATE EXCLUSIVE (blocks
/// nothing); no rewrite, no whole-table scan`.
pub fn trace_findings(migrations: &[&CheckedMigration]) -> String {
    let mut own_tables_only = 0;
    let mut by_mode: Vec<(LockMode, usize)> = Vec::new();
    let (mut rewrites, mut scans) = (0, 0);
    for checked in migrations {
        let on_existing: Vec<&TracedLock> = (checked.statements.iter())
            .flat_map(|statement| &statement.locks)
            .filter(|lock| lock.kind == RelationKind::Table)
            .filter(|lock| checked.existing_tables.contains(&lock.relation))
            .collect();
        let Some(strongest) = on_existing.iter().map(|lock| lock.mode).max() else {
            own_tables_only += 1;
            continue;
        };
        match by_mode.iter_mut().find(|(mode, _)| *mode == strongest) {
            Some((_, count)) => *count += 1,
            None => by_mode.push((strongest, 1)),
        }
        rewrites += usize::from(on_existing.iter().any(|lock| lock.rewritten));
        scans += usize::from(on_existing.iter().any(|lock| lock.scanned == Some(true)));
    }
    by_mode.sort_by_key(|(mode, _)| std::cmp::Reverse(*mode));
    let mut found: Vec<String> = Vec::new();
    if own_tables_only > 0 {
        found.push(format!(
            "{own_tables_only} that {} no table that existed before {}",
            if own_tables_only == 1 {
                "locks"
            } else {
                "lock"
            },
            if own_tables_only == 1 { "it" } else { "them" },
        ));
    }
    for (mode, count) in by_mode {
        found.push(format!(
            "{count} whose strongest lock on a table that existed before {} is {} (blocks {})",
            if count == 1 { "it" } else { "them" },
            mode.sql_name(),
            mode.blocks().words()
        ));
    }
    let count_of = |count: usize, what: &str| match count {
        0 => format!("no {what}"),
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    };
    format!(
        "the trace found {}; {}, {} of such a table",
        found.join(", "),
        count_of(rewrites, "rewrite"),
        count_of(scans, "whole-table scan")
    )
}
