//! Which tables the check fills (`--fill locked`, the default): a new
//! migration's locks, its stall and its verdict depend on the rows of the
//! tables it locks, not on the rest of the schema's, so a project of 70
//! tables whose new migration alters one need not wait for 7,000,000 rows.
//!
//! Before any row is generated, the new migrations are applied in order to
//! a copy of the work database (its tables as the earlier migrations left
//! them), and each transaction, before its `COMMIT`, lists the relations its
//! session holds locks on: the tables, and the tables of the indexes. A
//! statement outside a transaction (`CREATE INDEX CONCURRENTLY`) keeps no
//! lock to list, so each step's text also names tables: every existing
//! table or index whose name is a word of it. The copy is dropped.
//!
//! The fill then adds what those tables' rows need: their foreign keys'
//! parents. Empty tables fire no row trigger and cascade no delete: when a
//! new migration deletes rows (`DELETE`, `TRUNCATE`, `MERGE`), the tables
//! whose foreign keys point at the found ones are filled too, and when it
//! changes rows in any way (`UPDATE`, `INSERT` too), a found table with a
//! trigger of its own means every table is (a trigger may write anywhere).
//! So does a new migration that fails on the empty tables. What this still
//! misses (an `UPDATE` of a key that cascades, a `DO` block whose branch
//! depends on the rows) shows in the trace on the filled tables: a
//! migration that locks a table left empty gets no verdict, and says
//! `--fill all`.

use std::collections::BTreeSet;

use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

use super::course::{WORK_DATABASE, set_search_path};
use super::migrations::Migration;
use crate::config::CheckConfig;
use crate::engine::postgres::database::{Database, error_text};
use crate::error::Error;
use crate::role::Role;

/// The copy the new migrations are first tried on, dropped after.
const SCOPE_DATABASE: &str = "stallbench_check_scope";

/// The tables the fill fills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FillScope {
    /// Every table, and why (`--fill all`, a trigger, a migration that failed).
    Every(String),
    /// These tables (pg_class oids, the same in every copy of the work
    /// database) and their foreign keys' parents; `with_children`: the
    /// tables whose foreign keys point at them too.
    Tables {
        oids: BTreeSet<u32>,
        with_children: bool,
    },
}

/// The fill's scope for the `new` migrations (`--fill locked`) on the work
/// database of `target` (which is as the earlier migrations left it,
/// without rows).
pub(super) async fn fill_scope(
    config: &CheckConfig,
    target: &mut Database,
    new: &[Migration],
) -> Result<FillScope, Error> {
    target.clear_sessions().await?;
    target
        .run_on_home_database(&format!("DROP DATABASE IF EXISTS {SCOPE_DATABASE}"))
        .await?;
    target
        .run_on_home_database(&format!(
            "CREATE DATABASE {SCOPE_DATABASE} TEMPLATE {WORK_DATABASE}"
        ))
        .await?;
    set_search_path(config, target, SCOPE_DATABASE).await?;
    target.use_database(SCOPE_DATABASE);
    let found = match target.connect(Role::Setup).await {
        Ok(client) => tables_touched(&client, new).await,
        Err(error) => Err(error),
    };
    target.clear_sessions().await?;
    target.use_database(WORK_DATABASE);
    target
        .run_on_home_database(&format!("DROP DATABASE IF EXISTS {SCOPE_DATABASE}"))
        .await?;
    found
}

/// Applies the `new` migrations in order on `client`'s database and
/// returns the tables they lock or name.
async fn tables_touched(client: &Client, new: &[Migration]) -> Result<FillScope, Error> {
    let mut oids = BTreeSet::new();
    let mut changes_rows = false;
    let mut deletes_rows = false;
    for migration in new {
        for step in &migration.steps {
            let text: Vec<&str> = step.statements.iter().map(|s| s.sql.as_str()).collect();
            let text = text.join(";\n");
            changes_rows |= has_word(&text, &["update", "insert", "delete", "merge", "truncate"]);
            deletes_rows |= has_word(&text, &["delete", "merge", "truncate"]);
            oids.extend(query_oids(client, NAMED_SQL, &[&text]).await?);
            if step.in_transaction {
                run(client, "BEGIN").await?;
            }
            for statement in &step.statements {
                if let Err(err) = client.batch_execute(&statement.sql).await {
                    let _ = client.batch_execute("ROLLBACK").await;
                    return Ok(FillScope::Every(format!(
                        "{} failed on the empty tables ({}), so every table is filled",
                        migration.name,
                        error_text(&err)
                    )));
                }
            }
            if step.in_transaction {
                oids.extend(query_oids(client, LOCKED_SQL, &[]).await?);
                run(client, "COMMIT").await?;
            }
        }
    }
    if changes_rows {
        let oid_list: Vec<String> = oids.iter().map(u32::to_string).collect();
        let triggered = query_oids(client, TRIGGERED_SQL, &[&oid_list.join(",")]).await?;
        if let Some(oid) = triggered.first() {
            let name = query_name(client, *oid).await?;
            return Ok(FillScope::Every(format!(
                "a new migration changes rows and table {name} has a trigger, which may write \
                 to any table, so every table is filled"
            )));
        }
    }
    Ok(FillScope::Tables {
        oids,
        with_children: deletes_rows,
    })
}

/// The tables (their oids) that hold locks of this session's transaction:
/// each locked table, partition (as its root) and index (as its table).
const LOCKED_SQL: &str = "\
SELECT DISTINCT COALESCE(root.oid, t.oid)::oid::int8 FROM pg_locks l \
JOIN pg_class c ON c.oid = l.relation \
LEFT JOIN pg_index i ON i.indexrelid = c.oid \
JOIN pg_class t ON t.oid = COALESCE(i.indrelid, c.oid) \
LEFT JOIN pg_class root ON t.relispartition AND root.oid = pg_partition_root(t.oid) \
WHERE l.locktype = 'relation' AND l.pid = pg_backend_pid() AND t.oid >= 16384 \
AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
AND COALESCE(root.relkind, t.relkind) IN ('r', 'p')";

/// The tables of the user's schemas (or the tables of indexes) whose name
/// is a word of the text `$1`, any case.
const NAMED_SQL: &str = "\
SELECT DISTINCT COALESCE(root.oid, t.oid)::oid::int8 FROM pg_class c \
JOIN pg_namespace n ON n.oid = c.relnamespace \
LEFT JOIN pg_index i ON i.indexrelid = c.oid \
JOIN pg_class t ON t.oid = COALESCE(i.indrelid, c.oid) \
LEFT JOIN pg_class root ON t.relispartition AND root.oid = pg_partition_root(t.oid) \
WHERE c.relkind IN ('r', 'p', 'i', 'I') AND n.nspname NOT LIKE 'pg\\_%' \
AND n.nspname <> 'information_schema' \
AND COALESCE(root.relkind, t.relkind) IN ('r', 'p') \
AND $1 ~* ('(^|[^[:alnum:]_$])' || regexp_replace(c.relname, '([^[:alnum:]_])', '\\\\\\1', 'g') || '($|[^[:alnum:]_$])')";

/// Of the tables whose oids `$1` lists (comma-separated), those with a
/// trigger of their own (not a foreign key's).
const TRIGGERED_SQL: &str = "\
SELECT DISTINCT tgrelid::oid::int8 FROM pg_trigger \
WHERE NOT tgisinternal AND tgrelid = ANY (string_to_array(NULLIF($1, ''), ',')::oid[])";

/// The oids the query `sql` returns (one `int8` column) with `params`.
async fn query_oids(
    client: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<u32>, Error> {
    let rows = client.query(sql, params).await.map_err(|err| {
        Error::runtime(format!(
            "finding the tables the new migrations touch: {}",
            error_text(&err)
        ))
    })?;
    Ok(rows.iter().map(|row| row.get::<_, i64>(0) as u32).collect())
}

/// The table `oid` as SQL names it.
async fn query_name(client: &Client, oid: u32) -> Result<String, Error> {
    let row = client
        .query_one("SELECT $1::int8::oid::regclass::text", &[&i64::from(oid)])
        .await
        .map_err(|err| Error::runtime(format!("naming table {oid}: {}", error_text(&err))))?;
    Ok(row.get(0))
}

/// Runs `sql`, an error being the server's.
async fn run(client: &Client, sql: &str) -> Result<(), Error> {
    client
        .batch_execute(sql)
        .await
        .map_err(|err| Error::runtime(format!("{sql}: {}", error_text(&err))))
}

/// Whether one of `verbs` is a word of SQL `text`, any case, other than
/// after `ON` or `FOR` (a foreign key's `ON DELETE CASCADE`, a `SELECT ...
/// FOR UPDATE`); a column named `update` makes it say yes, which fills
/// more, never less.
fn has_word(text: &str, verbs: &[&str]) -> bool {
    let words = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty());
    let mut previous = "";
    for word in words {
        let clause = previous.eq_ignore_ascii_case("on") || previous.eq_ignore_ascii_case("for");
        if !clause && verbs.iter().any(|verb| word.eq_ignore_ascii_case(verb)) {
            return true;
        }
        previous = word;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::has_word;

    #[test]
    fn a_statement_is_found_by_its_verb_as_a_word() {
        let deletes = ["delete", "merge", "truncate"];
        assert!(has_word(
            "alter table a add b int;\nDELETE from c",
            &deletes
        ));
        assert!(has_word("truncate t", &deletes));
        assert!(!has_word("UPDATE orders SET note = ''", &deletes));
        assert!(!has_word(
            "CREATE INDEX CONCURRENTLY deleted_idx ON t (deleted_at)",
            &deletes
        ));
        assert!(!has_word(
            "ALTER TABLE o ADD FOREIGN KEY (c) REFERENCES c ON DELETE CASCADE",
            &deletes
        ));
        assert!(!has_word("SELECT * FROM t FOR UPDATE", &["update"]));
        assert!(has_word("INSERT INTO t VALUES (1)", &["insert"]));
        assert!(!has_word(
            "ALTER TABLE orders ADD COLUMN updated_at timestamptz",
            &["update"]
        ));
    }
}
