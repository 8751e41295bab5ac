//! The target's dealings with the run's sessions and what they leave: ending
//! them (the DDL's first), leaving the server clean after a stop, and reading
//! the row counters that tell what a load wrote.

use std::time::Duration;

use anyhow::Context;
use tokio_postgres::Client;

use super::Database;
use crate::error::Error;
use crate::metrics::writes::{RowCounters, WriteCounts};
use crate::role::Role;
use crate::stop::{SchemaFate, ServerFate};

impl Database {
    /// Ends every session of this run still open (a worker stuck in a lock
    /// queue when the load ended) and waits until none remains, up to 10 s.
    /// The DDL's sessions go first, and are gone before any other is ended: a
    /// DDL queued behind the report would get its lock once the report ends,
    /// and commit.
    pub async fn clear_sessions(&self) -> Result<(), Error> {
        let admin = self.connect_without_schema(Role::Cleanup).await?;
        let ddl_sessions = vec![
            self.application_name(Role::Ddl),
            self.application_name(Role::Killer),
        ];
        self.end_sessions(&admin, "application_name = ANY ($1::text[])", &ddl_sessions)
            .await?;
        let pattern = format!("{}-%", self.session_prefix);
        self.end_sessions(&admin, "application_name LIKE $1", &pattern)
            .await
    }

    /// Terminates this run's sessions that `filter` (a condition on
    /// `pg_stat_activity` with `$1` bound to `value`) selects, but never the
    /// schema's lock, and waits until none remains, up to 10 s.
    async fn end_sessions(
        &self,
        admin: &Client,
        filter: &str,
        value: &(dyn tokio_postgres::types::ToSql + Sync),
    ) -> Result<(), Error> {
        let lock_pid = self.schema_lock.as_ref().map_or(0, |(_, pid)| *pid);
        let sql = format!(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE {filter} AND pid <> pg_backend_pid() AND pid <> $2) ended"
        );
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let row = admin
                .query_one(&sql, &[value, &lock_pid])
                .await
                .context("ending the sessions of the previous strategy")?;
            let remaining: i64 = row.get(0);
            if remaining == 0 {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::runtime(format!(
                    "{remaining} sessions of the previous strategy are still open after 10 s; \
                     look at pg_stat_activity where application_name LIKE '{}-%'",
                    self.session_prefix
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// After a stop or a failure, leaves nothing of the run behind (best
    /// effort, up to 10 s each): ends its sessions, the DDL's first, and drops
    /// its schema; says what became of the server.
    pub async fn leave_after_stop(&self) -> ServerFate {
        const LIMIT: Duration = Duration::from_secs(10);
        let timed_out = || {
            Err(Error::runtime(format!(
                "no answer within {} s",
                LIMIT.as_secs()
            )))
        };
        let cleared = tokio::time::timeout(LIMIT, self.clear_sessions())
            .await
            .unwrap_or_else(|_| timed_out());
        let dropped = tokio::time::timeout(LIMIT, self.drop_schema())
            .await
            .unwrap_or_else(|_| timed_out());
        if self.server.is_some() {
            return ServerFate::ThrowawayStopped;
        }
        let schema = match (self.objects.own_schema(), dropped) {
            (false, _) => SchemaFate::NoneMade,
            (true, Ok(())) => SchemaFate::Dropped,
            (true, Err(error)) => SchemaFate::Left(error.to_string()),
        };
        ServerFate::LeftRunning {
            address: self.address.clone(),
            schema,
            open_sessions: cleared.err().map(|_| {
                format!(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE application_name LIKE '{}-%'",
                    self.session_prefix
                )
            }),
        }
    }

    /// The server's row counters of every user table (`pg_stat_user_tables`),
    /// once they have settled: the statistics of a backend reach them
    /// asynchronously (on 13 and 14 through the statistics collector, whose
    /// file a reader may take up to 500 ms old), so they are read again after
    /// a pause until two reads agree, up to 10 s. The run's sessions should
    /// be gone first ([`Database::clear_sessions`]): a backend flushes its last
    /// counts as it exits.
    pub async fn row_counters(&self) -> Result<RowCounters, Error> {
        const COUNTERS_SQL: &str = "SELECT format('%I.%I', schemaname, relname), \
             n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables";
        let pause = match self.server_version_num >= 150000 {
            // Shared-memory statistics: flushed by the time a backend has exited.
            true => Duration::from_millis(200),
            false => Duration::from_millis(700),
        };
        let client = self.connect_without_schema(Role::Check).await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut last: Option<RowCounters> = None;
        loop {
            // A new snapshot: within one transaction the statistics would not change.
            client
                .batch_execute("SELECT pg_stat_clear_snapshot()")
                .await
                .context("clearing the statistics snapshot")?;
            let rows = client
                .query(COUNTERS_SQL, &[])
                .await
                .context("reading the tables' row counters")?;
            let counters: RowCounters = rows
                .iter()
                .map(|row| {
                    let rows = WriteCounts {
                        inserted: row.get(1),
                        updated: row.get(2),
                        deleted: row.get(3),
                    };
                    (row.get(0), rows)
                })
                .collect();
            if last.as_ref() == Some(&counters) || tokio::time::Instant::now() > deadline {
                return Ok(counters);
            }
            last = Some(counters);
            tokio::time::sleep(pause).await;
        }
    }
}
