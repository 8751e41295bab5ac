//! The INVALID index a failed concurrent build leaves behind. A `CREATE
//! INDEX CONCURRENTLY` that times out while it waits for older transactions
//! (or is cancelled, or loses its session) keeps its half-built index, marked
//! invalid; the next try of the same statement then fails with 42P07
//! (`relation "orders_note_idx" already exists`), and with `IF NOT EXISTS`
//! it "succeeds" while leaving an index no query uses. Deploy tools drop
//! the leftover before they try again, and so do the strategies that retry:
//! before each try after the first, the invalid indexes that were not there
//! before the step's first try, and that no one is building now, are dropped
//! with `DROP INDEX CONCURRENTLY IF EXISTS` under the try's own timeouts. A
//! drop that times out is the try's lock timeout.

use tokio_postgres::Client;

/// The OIDs of this database's invalid indexes, taken before a concurrent
/// build's first try: they are not the build's to drop.
pub async fn invalid_indexes(client: &Client) -> Result<Vec<i64>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT indexrelid::int8 FROM pg_index WHERE NOT indisvalid",
            &[],
        )
        .await?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

/// Drops the invalid indexes that are not in `before` and not being built
/// by anyone, one statement each; returns their names.
pub async fn drop_left_behind(
    client: &Client,
    before: &[i64],
) -> Result<Vec<String>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT format('%I.%I', n.nspname, c.relname) \
             FROM pg_index i \
             JOIN pg_class c ON c.oid = i.indexrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE NOT i.indisvalid AND NOT (i.indexrelid::int8 = ANY ($1::int8[])) \
               AND i.indexrelid NOT IN (SELECT index_relid FROM pg_stat_progress_create_index \
                                        WHERE index_relid IS NOT NULL)",
            &[&before],
        )
        .await?;
    let mut dropped = Vec::new();
    for row in rows {
        let name: String = row.get(0);
        client
            .batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"))
            .await?;
        dropped.push(name);
    }
    Ok(dropped)
}
