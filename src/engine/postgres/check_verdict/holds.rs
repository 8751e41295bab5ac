//! Holds per transaction at production size: a migration's transaction
//! holds its strongest lock on a table from the statement that first takes
//! it until COMMIT, so the hold the traffic sees is every statement's time
//! from that one on, each statement that reads or rewrites the whole table
//! at its estimate for the production size ([`SizeEstimate`]). The budget is
//! judged on that hold, not on each statement's alone.

use serde::Serialize;

use super::sizes::{SizeEstimate, SizeSource};
use crate::export::format::{format_latency, format_thousands};
use crate::metrics::lock_trace::{LockMode, RelationKind, TracedStatement};

/// One transaction's hold of its strongest lock on one table, at the
/// table's production size; only where it is more than one statement's
/// estimate (the lock taken before the statement that scans, or several
/// that scan). In check.json as `transaction_holds`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransactionHold {
    /// The migration's step (transaction), from 1.
    pub step: u32,
    pub relation: String,
    pub mode: LockMode,
    /// The statement that first takes that lock.
    pub from_statement: u32,
    /// The statements that hold it, from that one to the transaction's end.
    pub statements: Vec<u32>,
    /// Those that read or rewrite the whole table, each with its own time
    /// at the production size, in ms.
    pub estimated: Vec<(u32, f64)>,
    /// From the first statement's start to COMMIT at the production size, in ms.
    pub estimated_hold_ms: f64,
    pub production_rows: u64,
    pub source: SizeSource,
}

impl TransactionHold {
    /// Whether the hold is over a stall budget of `max_stall_s`.
    pub fn over(&self, max_stall_s: u32) -> bool {
        self.estimated_hold_ms > f64::from(max_stall_s) * 1000.0
    }

    /// Whether it counts statement `number`'s estimate on its table.
    pub fn covers(&self, estimate: &SizeEstimate) -> bool {
        estimate.relation == self.relation
            && self
                .estimated
                .iter()
                .any(|(number, _)| *number == estimate.statement)
    }

    /// `its transaction holds ACCESS EXCLUSIVE on spaces for about 12.3 s at
    /// 20,000,000 rows, from statement 1 to COMMIT (statements 1-4; statement
    /// 2 about 8.1 s, statement 3 about 4.2 s) (--table-rows; an estimate)`.
    pub fn words(&self) -> String {
        let numbers = match (self.statements.first(), self.statements.last()) {
            (Some(first), Some(last)) if first != last => format!("statements {first}-{last}"),
            _ => format!("statement {}", self.from_statement),
        };
        let parts: Vec<String> = (self.estimated.iter())
            .map(|(number, ms)| format!("statement {number} about {}", format_latency(*ms)))
            .collect();
        format!(
            "its transaction holds {} on {} for about {} at {} rows, from statement {} to \
             COMMIT ({numbers}; {}) ({}; an estimate)",
            self.mode.sql_name(),
            self.relation,
            format_latency(self.estimated_hold_ms),
            format_thousands(self.production_rows),
            self.from_statement,
            parts.join(", "),
            self.source.flag()
        )
    }
}

/// The transaction holds of `statements` whose `estimates` have a
/// production size (see [`TransactionHold`]).
pub fn transaction_holds(
    statements: &[TracedStatement],
    estimates: &[SizeEstimate],
) -> Vec<TransactionHold> {
    let mut holds: Vec<TransactionHold> = Vec::new();
    let step_of = |number: u32| {
        (statements.iter())
            .find(|s| s.statement == number)
            .map(|s| s.step)
    };
    for estimate in estimates {
        let (Some(step), Some(rows), Some(source), Some(hold_ms)) = (
            step_of(estimate.statement),
            estimate.production_rows,
            estimate.source,
            estimate.estimated_hold_ms,
        ) else {
            continue;
        };
        if holds
            .iter()
            .any(|hold| hold.step == step && hold.relation == estimate.relation)
        {
            continue;
        }
        let in_step: Vec<&TracedStatement> = statements.iter().filter(|s| s.step == step).collect();
        let taken = |s: &&TracedStatement| {
            (s.locks.iter())
                .filter(|l| l.taken && l.kind == RelationKind::Table)
                .filter(|l| l.relation == estimate.relation)
                .map(|l| l.mode)
                .max()
        };
        let Some(mode) = in_step.iter().filter_map(taken).max() else {
            continue;
        };
        let Some(first) = in_step.iter().find(|s| taken(s) == Some(mode)) else {
            continue;
        };
        let scanned: Vec<&SizeEstimate> = (estimates.iter())
            .filter(|e| e.relation == estimate.relation && e.estimated_hold_ms.is_some())
            .filter(|e| step_of(e.statement) == Some(step) && e.statement >= first.statement)
            .collect();
        if scanned.len() < 2
            && scanned
                .first()
                .is_some_and(|e| e.statement == first.statement)
        {
            continue;
        }
        // Each scan's own time at the production size, beyond its time here.
        let extra_ms: f64 = (scanned.iter())
            .map(|e| e.estimated_hold_ms.unwrap_or_default() - e.held_ms)
            .sum();
        holds.push(TransactionHold {
            step,
            relation: estimate.relation.clone(),
            mode: mode.max(estimate.mode),
            from_statement: first.statement,
            statements: (in_step.iter())
                .map(|s| s.statement)
                .filter(|number| *number >= first.statement)
                .collect(),
            estimated: (scanned.iter())
                .map(|e| {
                    let own_ms = e.estimated_hold_ms.unwrap_or_default() - e.held_ms;
                    (e.statement, own_ms + e.measured_ms)
                })
                .collect(),
            estimated_hold_ms: (first.held_ms + extra_ms).max(hold_ms),
            production_rows: rows,
            source,
        });
    }
    holds
}
