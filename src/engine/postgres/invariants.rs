//! The workload's `[[invariants]]` run on its data: once after the setup,
//! before any load (a query that fails, or returns other than one row of one
//! value, is exit 2 then), and after each run, on its data once every session
//! of the run has ended.

use tokio_postgres::SimpleQueryMessage;

use crate::config::{Expected, Invariant};
use crate::engine::postgres::database::{self, Database};
use crate::error::Error;
use crate::metrics::invariants::InvariantCheck;
use crate::role::Role;

/// Each invariant of `invariants` checked on `target`'s data, the run's
/// figures (`transactions` completed) standing in for what `expect` names.
pub async fn check_invariants(
    target: &Database,
    invariants: &[Invariant],
    transactions: u64,
) -> Result<Vec<InvariantCheck>, Error> {
    if invariants.is_empty() {
        return Ok(Vec::new());
    }
    let client = target.connect(Role::Check).await?;
    let mut checks = Vec::with_capacity(invariants.len());
    for invariant in invariants {
        let messages = client.simple_query(&invariant.sql).await.map_err(|err| {
            Error::bad_input(format!(
                "{}: sql failed: {}; fix sql = \"...\" so that it returns one value",
                invariant.source,
                database::error_text(&err)
            ))
        })?;
        let actual = one_value(invariant, &messages)?;
        let expected = match &invariant.expected {
            Expected::Literal(text) => text.clone(),
            Expected::Transactions => transactions.to_string(),
        };
        checks.push(InvariantCheck::new(
            &invariant.name,
            &invariant.counts,
            &expected,
            &actual,
        ));
    }
    Ok(checks)
}

/// The one value of the one row the query returned, `NULL` for SQL NULL.
fn one_value(invariant: &Invariant, messages: &[SimpleQueryMessage]) -> Result<String, Error> {
    let rows: Vec<_> = messages
        .iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => Some(row),
            _ => None,
        })
        .collect();
    let problem = match rows.as_slice() {
        [row] if row.len() == 1 => return Ok(row.get(0).unwrap_or("NULL").to_string()),
        [row] => format!("its row has {} columns", row.len()),
        [] => "it returned no row".to_string(),
        more => format!("it returned {} rows", more.len()),
    };
    Err(Error::bad_input(format!(
        "{}: sql must return one row with one value and {problem}; \
         fix sql = \"...\", e.g. SELECT sum(balance) FROM accounts",
        invariant.source
    )))
}
