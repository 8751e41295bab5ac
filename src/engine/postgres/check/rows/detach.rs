//! A parent's incoming foreign keys, dropped before its step of the fill
//! and made again after it, while the children that hold them are still
//! empty.
//!
//! A table a foreign key refers to cannot be emptied by `TRUNCATE` (so its
//! rows cannot go in by `COPY ... FREEZE`) and keeps its primary key while
//! its rows go in, since the key depends on it ([`super::upkeep`]). That was
//! the gap between check's fill and `pgbench -i` on a schema that is a tree
//! of foreign keys: the bench-check folder filled in 9.7 s with its keys and
//! in 7.5 s with none (docs/benchmark.md). A key whose child has no row yet
//! constrains nothing, and adding it back to an empty child checks nothing:
//! so, one superuser transaction before the step drops the keys that refer
//! to the step's tables from children still empty (none of the step's own
//! tables), and one after it adds each back under its name and definition
//! (`pg_get_constraintdef`, `NOT VALID` and `DEFERRABLE` included). The
//! children are filled in later steps, with the keys in place and checked as
//! before. A parent with a key that cannot be dropped this way (a child that
//! holds rows, a key on itself, a partitioned table's, a key with a comment
//! or something depending on it) keeps all of them, and its fill is as
//! before.

use std::collections::{BTreeMap, HashSet};

use tokio_postgres::Client;

use super::sql_text::quote_ident;

/// A foreign key dropped before a step, to add back after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DetachedKey {
    /// The child table, `"schema"."name"`.
    pub child_sql: String,
    /// The constraint's name.
    pub name: String,
    /// `FOREIGN KEY (...) REFERENCES ...`, as `pg_get_constraintdef` writes it.
    pub definition: String,
}

/// Every foreign key that refers to one of `parents` (their oids), with
/// whether it may be dropped and made again: both tables ordinary, not the
/// parent itself, not inherited from a partitioned table's key, the child
/// none of `step` (the tables filled with the parents), no comment on it
/// and nothing but its own triggers depending on it.
const INCOMING_KEYS: &str = "
SELECT c.confrelid, c.conrelid, format('%I.%I', n.nspname, t.relname), c.conname::text,
       pg_get_constraintdef(c.oid),
       t.relkind = 'r' AND p.relkind = 'r' AND c.conrelid <> c.confrelid
         AND c.conparentid = 0 AND NOT (c.conrelid = ANY($2))
         AND NOT EXISTS (SELECT FROM pg_description d
                         WHERE d.objoid = c.oid AND d.classoid = 'pg_constraint'::regclass)
         AND NOT EXISTS (SELECT FROM pg_depend d
                         WHERE d.refobjid = c.oid AND d.refclassid = 'pg_constraint'::regclass
                           AND d.deptype <> 'i')
FROM pg_constraint c
JOIN pg_class t ON t.oid = c.conrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
JOIN pg_class p ON p.oid = c.confrelid
WHERE c.contype = 'f' AND c.confrelid = ANY($1)
ORDER BY c.conrelid, c.oid";

/// One row of [`INCOMING_KEYS`].
struct IncomingKey {
    parent_oid: u32,
    child_oid: u32,
    key: DetachedKey,
    droppable: bool,
}

/// Drops, in a transaction of its own on `client`, the foreign keys that
/// refer to the tables of `step` (their oids) from children still empty,
/// for each parent all of whose incoming keys may go; returns them, for
/// [`reattach`] once the step is filled.
pub(super) async fn detach(
    client: &Client,
    step: &[u32],
) -> Result<Vec<DetachedKey>, tokio_postgres::Error> {
    let mut incoming = Vec::new();
    for row in client.query(INCOMING_KEYS, &[&step, &step]).await? {
        incoming.push(IncomingKey {
            parent_oid: row.get(0),
            child_oid: row.get(1),
            key: DetachedKey {
                child_sql: row.get(2),
                name: row.get(3),
                definition: row.get(4),
            },
            droppable: row.get(5),
        });
    }
    let mut with_rows = HashSet::new();
    for (child_oid, child_sql) in (incoming.iter())
        .filter(|key| key.droppable)
        .map(|key| (key.child_oid, &key.key.child_sql))
        .collect::<BTreeMap<_, _>>()
    {
        let sql = format!("SELECT EXISTS (SELECT FROM {child_sql})");
        if client.query_one(&sql, &[]).await?.get(0) {
            with_rows.insert(child_oid);
        }
    }
    let keys = detachable(&incoming, &with_rows);
    if keys.is_empty() {
        return Ok(keys);
    }
    let drops: Vec<String> = (keys.iter())
        .map(|key| {
            format!(
                "ALTER TABLE {} DROP CONSTRAINT {};",
                key.child_sql,
                quote_ident(&key.name)
            )
        })
        .collect();
    client
        .batch_execute(&format!("BEGIN; {} COMMIT", drops.join(" ")))
        .await?;
    Ok(keys)
}

/// The keys to drop: every key of each parent whose incoming keys may all
/// be dropped and whose children (`with_rows` those that hold rows) are
/// all empty.
fn detachable(incoming: &[IncomingKey], with_rows: &HashSet<u32>) -> Vec<DetachedKey> {
    let kept_parents: HashSet<u32> = (incoming.iter())
        .filter(|key| !key.droppable || with_rows.contains(&key.child_oid))
        .map(|key| key.parent_oid)
        .collect();
    (incoming.iter())
        .filter(|key| !kept_parents.contains(&key.parent_oid))
        .map(|key| key.key.clone())
        .collect()
}

/// Adds `keys` back, in one transaction on `client`, in the order they
/// were dropped.
pub(super) async fn reattach(
    client: &Client,
    keys: &[DetachedKey],
) -> Result<(), tokio_postgres::Error> {
    if keys.is_empty() {
        return Ok(());
    }
    let adds: Vec<String> = (keys.iter())
        .map(|key| {
            format!(
                "ALTER TABLE {} ADD CONSTRAINT {} {};",
                key.child_sql,
                quote_ident(&key.name),
                key.definition
            )
        })
        .collect();
    client
        .batch_execute(&format!("BEGIN; {} COMMIT", adds.join(" ")))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incoming(parent_oid: u32, child_oid: u32, name: &str, droppable: bool) -> IncomingKey {
        IncomingKey {
            parent_oid,
            child_oid,
            key: DetachedKey {
                child_sql: format!("public.t{child_oid}"),
                name: name.into(),
                definition: format!("FOREIGN KEY (p) REFERENCES t{parent_oid}(id)"),
            },
            droppable,
        }
    }

    #[test]
    fn a_parent_loses_its_keys_only_when_every_one_may_go() {
        let keys = [
            incoming(1, 10, "a", true),
            incoming(1, 11, "b", true),
            incoming(2, 10, "c", true),
            incoming(2, 12, "d", false),
            incoming(3, 13, "e", true),
        ];
        let names = |with_rows: &[u32]| -> Vec<String> {
            detachable(&keys, &with_rows.iter().copied().collect())
                .into_iter()
                .map(|key| key.name)
                .collect()
        };
        // Parent 2 has a key that may not go: it keeps both of its keys.
        assert_eq!(names(&[]), ["a", "b", "e"]);
        // A child with rows keeps its parent's keys in place.
        assert_eq!(names(&[11]), ["e"]);
        assert_eq!(names(&[13]), ["a", "b"]);
    }
}
