//! The WAL a DDL try (or a traced statement) wrote: the server's WAL
//! position read in the DDL's own session just before and just after it.
//!
//! The position is `pg_current_wal_insert_lsn()`, where the next WAL record
//! goes, not `pg_current_wal_lsn()`, how far WAL has been written out of the
//! server's buffers: a statement in an open transaction (the lock trace, a
//! `BEGIN; SET LOCAL ...; <ddl>; ...` try) may leave its records in the
//! buffers until the commit, and the write position would miss them.
//!
//! The position is the server's, not the session's: every session's WAL
//! between the two reads counts, a writing load's included. On a quiet
//! server (the lock trace) it is the statement's own. The reads are taken
//! outside the try's clock (before `started_s`, after `ended_s`), so they
//! add a round trip each to the DDL session but nothing to `waited_ms`.

use tokio_postgres::Client;

/// The server's WAL insert position in bytes since the start of its WAL;
/// `None` when it cannot be read (a lost session, a server that does not
/// expose it, a standby).
pub(super) async fn wal_position(client: &Client) -> Option<u64> {
    const POSITION_SQL: &str = "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::int8";
    let row = client.query_one(POSITION_SQL, &[]).await.ok()?;
    u64::try_from(row.get::<_, i64>(0)).ok()
}

/// The WAL written since `before` (a [`wal_position`]), read now on
/// `client`; `None` when either position is unknown.
pub(super) async fn wal_since(client: &Client, before: Option<u64>) -> Option<u64> {
    let before = before?;
    let after = wal_position(client).await?;
    Some(after.saturating_sub(before))
}
