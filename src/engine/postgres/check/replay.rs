//! Which statement of a migration breaks the application, when the
//! failure's message names nothing a statement made (`0A000 cached plan
//! must not change result type`): on the quiet server, in a transaction
//! that is rolled back, the migration's statements run one at a time, and
//! after each the load's scripts run once (in a savepoint); the first
//! statement after which one fails with the failure's SQLSTATE is the one
//! to blame.
//!
//! A script's `\set NAME random(A, B)` gives `:NAME` the value A; other
//! meta-commands are left out. A migration with a statement that runs
//! outside a transaction (`CONCURRENTLY`) is not replayed.

use tokio_postgres::Client;

use crate::config::WeightedScript;
use crate::engine::postgres::database::Database;
use crate::error::Error;
use crate::metrics::lock_trace::TracedStatement;
use crate::role::Role;

/// The number of the statement after which a script first fails with
/// `sqlstate`; `None` when none does (or the migration cannot be replayed).
pub async fn blame_by_replay(
    target: &Database,
    statements: &[TracedStatement],
    scripts: &[WeightedScript],
    sqlstate: &str,
) -> Result<Option<u32>, Error> {
    let client = target.connect(Role::Check).await?;
    let scripts: Vec<String> = scripts.iter().map(|s| replay_sql(&s.text)).collect();
    let blamed = async {
        client.batch_execute("BEGIN").await?;
        for statement in statements {
            client.batch_execute(&statement.sql).await?;
            if fails_with(&client, &scripts, sqlstate).await? {
                return Ok(Some(statement.statement));
            }
        }
        Ok::<_, tokio_postgres::Error>(None)
    }
    .await;
    let _ = client.batch_execute("ROLLBACK").await;
    Ok(blamed.unwrap_or(None))
}

/// Whether one of `scripts`, run once in a savepoint, fails with `sqlstate`.
async fn fails_with(
    client: &Client,
    scripts: &[String],
    sqlstate: &str,
) -> Result<bool, tokio_postgres::Error> {
    for script in scripts {
        client.batch_execute("SAVEPOINT replay").await?;
        let failed = client.batch_execute(script).await.err();
        client.batch_execute("ROLLBACK TO SAVEPOINT replay").await?;
        let code = failed.as_ref().and_then(|err| err.code()).map(|c| c.code());
        if code == Some(sqlstate) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A load script as plain SQL: `:NAME` replaced by the low end of its
/// `\set NAME random(A, B)`, every meta-command line left out.
fn replay_sql(text: &str) -> String {
    let mut values: Vec<(String, String)> = Vec::new();
    let mut sql = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(set) = trimmed.strip_prefix("\\set ") {
            let (name, expression) = set.trim().split_once(' ').unwrap_or((set, ""));
            let low = (expression.trim().strip_prefix("random("))
                .and_then(|rest| rest.split(',').next())
                .map(|low| low.trim().to_string());
            if let Some(low) = low {
                values.push((name.to_string(), low));
            }
        } else if !trimmed.starts_with('\\') {
            sql.push(line.to_string());
        }
    }
    // Longest names first, so that `:kk` is not read as `:k` and a `k`.
    values.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    let mut sql = sql.join("\n");
    for (name, value) in values {
        sql = sql.replace(&format!(":{name}"), &value);
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_is_replayed_at_the_low_end_of_its_random_values() {
        assert_eq!(
            replay_sql(
                "\\set k random(2, 1000)\n\\sleep 1 ms\nINSERT INTO spaces (id, name) \
                 SELECT :k + 1000, name FROM spaces WHERE id = :k;\n"
            ),
            "INSERT INTO spaces (id, name) SELECT 2 + 1000, name FROM spaces WHERE id = 2;"
        );
    }
}
