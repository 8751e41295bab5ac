//! What keeps a table's fill at the cost of writing its rows rather than
//! of keeping each row's indexes and foreign keys up to date (a profile of
//! a 20-table schema put three quarters of the fill there):
//!
//! - its indexes that nothing depends on (no foreign key refers to them, no
//!   comment, statistics target or CLUSTER mark to lose), its unique ones,
//!   its unique constraints and its primary key among them, are dropped in the fill's
//!   transaction and made again once the rows are in, from their own
//!   definition (`pg_get_indexdef`, `pg_get_constraintdef`): one sorted
//!   build each instead of an insert per row in the order the rows come,
//!   and the table ends with the indexes and constraints the migrations
//!   made, under the same names. A duplicate is refused by the build, and
//!   the table rolled back, as the insert refused it before;
//! - its foreign keys' per-row checks (the server's internal triggers, a
//!   query and a row lock on the parent per row) are turned off for the
//!   insert and on again, and the rows are checked against each key in one
//!   query instead. Only a superuser may turn them off; anyone else keeps
//!   the per-row checks.
//!
//! A table no foreign key refers to is also emptied by `TRUNCATE` in the
//! fill's transaction (it holds no rows: the fill leaves a table with rows
//! as it is), so that its rows go in by `COPY ... FREEZE`, frozen and
//! all-visible as they are written, as `pgbench -i` writes its own: the
//! VACUUM after them has no page to visit. Only a superuser's fill does it
//! (TRUNCATE is a privilege of its own).
//!
//! Exclusion constraints and the keys foreign keys refer to stay in place
//! (a parent's primary key among them), unless [`super::detach`] dropped
//! those foreign keys for the parent's step: then the parent is filled as a
//! table nothing refers to. A primary key kept during a COPY
//! took half its time (one index insert and one WAL record per row; 1.2 s
//! against 0.55 s and a 0.15 s build after, 200,000 rows, psql). It all
//! happens in the table's own transaction, so a table whose rows are
//! refused is rolled back to the indexes, constraints and triggers it had.

use tokio_postgres::Client;

use super::catalog::{CatalogTable, ForeignKey};
use super::sql_text::quote_ident;

/// What a table's fill set aside, to put back once its rows are in.
#[derive(Debug, Default)]
pub(super) struct SetAside {
    /// The indexes dropped: (qualified name, `CREATE INDEX ...`).
    indexes: Vec<(String, String)>,
    /// The primary key and unique constraints dropped, the primary key
    /// first: (name, `PRIMARY KEY (...)` or `UNIQUE (...)`).
    constraints: Vec<(String, String)>,
    /// The foreign key check triggers turned off.
    triggers: Vec<String>,
    /// Emptied by `TRUNCATE` in this transaction: `COPY ... FREEZE` may fill it.
    pub truncated: bool,
}

/// A table's indexes that no constraint owns, as [`SetAside::indexes`]
/// holds them: only an ordinary table's (a partitioned table's indexes have
/// partitions of their own), valid, in the default tablespace, with no
/// comment, statistics target, CLUSTER mark or dependent object (a foreign
/// key refers to a unique index) to lose.
const INDEXES: &str = "
SELECT format('%I.%I', n.nspname, ic.relname), pg_get_indexdef(i.indexrelid)
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_namespace n ON n.oid = ic.relnamespace
JOIN pg_class t ON t.oid = i.indrelid
WHERE i.indrelid = $1 AND t.relkind = 'r'
  AND NOT i.indisprimary AND NOT i.indisexclusion
  AND NOT EXISTS (SELECT FROM pg_constraint c
                  WHERE c.conindid = i.indexrelid AND c.contype IN ('p', 'u', 'x'))
  AND i.indisvalid AND i.indisready AND i.indislive
  AND NOT i.indisclustered AND NOT i.indisreplident AND ic.reltablespace = 0
  AND NOT EXISTS (SELECT FROM pg_description d
                  WHERE d.objoid = i.indexrelid AND d.classoid = 'pg_class'::regclass)
  AND NOT EXISTS (SELECT FROM pg_attribute a
                  WHERE a.attrelid = i.indexrelid AND a.attstattarget > 0)
  AND NOT EXISTS (SELECT FROM pg_depend d
                  WHERE d.refobjid = i.indexrelid AND d.refclassid = 'pg_class'::regclass)
ORDER BY i.indexrelid";

/// A table's primary key and unique constraints whose index nothing
/// depends on (a foreign key refers to a parent's), not inherited from a
/// partitioned table's, as [`SetAside::constraints`] holds them, on the
/// terms of [`INDEXES`].
const UNIQUE_CONSTRAINTS: &str = "
SELECT c.conname::text, pg_get_constraintdef(c.oid)
FROM pg_constraint c
JOIN pg_class t ON t.oid = c.conrelid
JOIN pg_class ic ON ic.oid = c.conindid
JOIN pg_index i ON i.indexrelid = c.conindid
WHERE c.conrelid = $1 AND c.contype IN ('p', 'u') AND c.conparentid = 0
  AND t.relkind = 'r' AND ic.reltablespace = 0
  AND i.indisvalid AND NOT i.indisclustered AND NOT i.indisreplident
  AND NOT EXISTS (SELECT FROM pg_description d WHERE d.objoid IN (c.oid, c.conindid))
  AND NOT EXISTS (SELECT FROM pg_attribute a
                  WHERE a.attrelid = c.conindid AND a.attstattarget > 0)
  AND NOT EXISTS (SELECT FROM pg_depend d
                  WHERE d.refobjid = c.conindid AND d.refclassid = 'pg_class'::regclass)
  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.refobjid = c.oid
                  AND d.refclassid = 'pg_constraint'::regclass AND d.objid <> c.conindid)
ORDER BY c.contype <> 'p', c.oid";

/// An ordinary table's enabled foreign key checks on insert and update.
const CHECK_TRIGGERS: &str = "
SELECT tg.tgname::text
FROM pg_trigger tg JOIN pg_class t ON t.oid = tg.tgrelid
WHERE tg.tgrelid = $1 AND t.relkind = 'r' AND tg.tgisinternal AND tg.tgenabled = 'O'
  AND tg.tgfoid IN ('\"RI_FKey_check_ins\"'::regproc, '\"RI_FKey_check_upd\"'::regproc)
ORDER BY tg.oid";

/// Whether an ordinary table may be emptied by `TRUNCATE ONLY`: no foreign
/// key refers to it (the server would refuse) and no trigger fires on a
/// TRUNCATE.
const TRUNCATABLE: &str = "
SELECT t.relkind = 'r'
  AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.confrelid = t.oid AND c.contype = 'f')
  AND NOT EXISTS (SELECT FROM pg_trigger tg
                  WHERE tg.tgrelid = t.oid AND NOT tg.tgisinternal AND (tg.tgtype & 32) <> 0)
FROM pg_class t WHERE t.oid = $1";

/// Whether the fill's sessions may turn off foreign key checks.
pub(super) async fn is_superuser(client: &Client) -> Result<bool, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user",
            &[],
        )
        .await?;
    Ok(row.get(0))
}

/// Drops `table`'s indexes, primary key and unique constraints that
/// nothing depends on, and turns off its foreign key checks (with
/// `superuser`), in the transaction the caller opened.
pub(super) async fn set_aside(
    client: &Client,
    table: &CatalogTable,
    superuser: bool,
) -> Result<SetAside, tokio_postgres::Error> {
    let indexes: Vec<(String, String)> = client
        .query(INDEXES, &[&table.oid])
        .await?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let constraints: Vec<(String, String)> = client
        .query(UNIQUE_CONSTRAINTS, &[&table.oid])
        .await?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let triggers: Vec<String> = match superuser && !table.foreign_keys.is_empty() {
        true => client
            .query(CHECK_TRIGGERS, &[&table.oid])
            .await?
            .iter()
            .map(|row| row.get(0))
            .collect(),
        false => Vec::new(),
    };
    if !constraints.is_empty() {
        let drops: Vec<String> = (constraints.iter())
            .map(|(name, _)| format!("DROP CONSTRAINT {}", quote_ident(name)))
            .collect();
        client
            .batch_execute(&format!(
                "ALTER TABLE {} {}",
                table.sql_name,
                drops.join(", ")
            ))
            .await?;
    }
    if !indexes.is_empty() {
        let names: Vec<&str> = indexes.iter().map(|(name, _)| name.as_str()).collect();
        client
            .batch_execute(&format!("DROP INDEX {}", names.join(", ")))
            .await?;
    }
    if !triggers.is_empty() {
        client
            .batch_execute(&alter_triggers(table, &triggers, "DISABLE"))
            .await?;
    }
    let truncated = superuser && client.query_one(TRUNCATABLE, &[&table.oid]).await?.get(0);
    if truncated {
        client
            .batch_execute(&format!("TRUNCATE ONLY {}", table.sql_name))
            .await?;
    }
    Ok(SetAside {
        indexes,
        constraints,
        triggers,
        truncated,
    })
}

/// Puts back what [`set_aside`] took: the foreign key checks on, after one
/// query per key finds no row pointing at no parent row (else why, and the
/// caller rolls back), then the indexes, primary key and unique
/// constraints made again.
/// A key `proven` says the rows meet by construction (per key: its values
/// are the parent rows' own keys) needs no query.
pub(super) async fn put_back(
    client: &Client,
    table: &CatalogTable,
    aside: SetAside,
    proven: &[bool],
) -> Result<Option<String>, tokio_postgres::Error> {
    if !aside.triggers.is_empty() {
        let keys = (table.foreign_keys.iter().enumerate())
            .filter(|(at, _)| !proven.get(*at).copied().unwrap_or(false))
            .map(|(_, key)| key);
        for key in keys {
            let row = client.query_one(&orphan_sql(table, key), &[]).await?;
            if row.get::<_, bool>(0) {
                return Ok(Some(format!(
                    "its foreign key {} would point at rows {} does not have",
                    key.name, key.parent_sql
                )));
            }
        }
        client
            .batch_execute(&alter_triggers(table, &aside.triggers, "ENABLE"))
            .await?;
    }
    // The primary key, the unique constraints, then the other indexes: the
    // order a CREATE TABLE and the CREATE INDEXes after it made them in.
    for (name, definition) in &aside.constraints {
        let sql = format!(
            "ALTER TABLE {} ADD CONSTRAINT {} {definition}",
            table.sql_name,
            quote_ident(name)
        );
        client.batch_execute(&sql).await?;
    }
    for (_, definition) in &aside.indexes {
        client.batch_execute(definition).await?;
    }
    Ok(None)
}

/// `ALTER TABLE t DISABLE TRIGGER a, DISABLE TRIGGER b` (or ENABLE).
fn alter_triggers(table: &CatalogTable, triggers: &[String], action: &str) -> String {
    let actions: Vec<String> = triggers
        .iter()
        .map(|name| format!("{action} TRIGGER {}", quote_ident(name)))
        .collect();
    format!("ALTER TABLE {} {}", table.sql_name, actions.join(", "))
}

/// Whether some row of `table` sets every column of `key` and finds no
/// parent row with those values (the check the triggers would have made).
fn orphan_sql(table: &CatalogTable, key: &ForeignKey) -> String {
    let columns: Vec<String> = key
        .columns
        .iter()
        .filter_map(|attnum| table.columns.iter().find(|c| c.attnum == *attnum))
        .map(|column| quote_ident(&column.name))
        .collect();
    let set: Vec<String> = columns
        .iter()
        .map(|column| format!("c.{column} IS NOT NULL"))
        .collect();
    let matches: Vec<String> = columns
        .iter()
        .zip(&key.parent_columns)
        .map(|(column, parent)| format!("p.{} = c.{column}", quote_ident(parent)))
        .collect();
    format!(
        "SELECT EXISTS (SELECT FROM {} AS c WHERE {} AND NOT EXISTS \
         (SELECT FROM {} AS p WHERE {}))",
        table.sql_name,
        set.join(" AND "),
        key.parent_sql,
        matches.join(" AND ")
    )
}
