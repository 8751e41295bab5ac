//! `replica-aware`: before each try, look at the replica. The migration's
//! lock is granted on the primary at once when nothing there holds the
//! table, and a primary-side `lock_timeout` never fires; the standby replays
//! the lock behind its own long transaction on the table, and every reader
//! there queues behind the replay. So before each try this waits, within a
//! bound, while a transaction older than `older_than` on the replica holds a
//! lock on a table the migration names; then the try runs as `retry`'s.

use std::time::{Duration, Instant};

use super::{DdlInjector, POLL_EVERY, terminate};

/// Waits, at most `wait_at_most`, while a transaction older than
/// `older_than` on the replica holds a lock on a table `sql` names; false if
/// the run ended first. No replica, no table, or a look that fails: no wait
/// (the try goes on as `retry`'s would).
pub(super) async fn wait_for_replica(
    injector: &mut DdlInjector,
    sql: &str,
    older_than: Duration,
    wait_at_most: Duration,
    try_number: u32,
) -> bool {
    // The tables as the primary names them; the standby has the same catalogs.
    let tables = match terminate::lock_tables(&injector.session.client, sql).await {
        Ok(tables) if !tables.is_empty() => tables,
        _ => return true,
    };
    let Some(replica) = &injector.replica_watch else {
        return true;
    };
    let started = Instant::now();
    loop {
        let row = replica
            .client
            .query_one(OLD_HOLDERS_SQL, &[&tables, &older_than.as_secs_f64()])
            .await;
        let Ok(row) = row else {
            injector.say(format!(
                "the replica did not answer before try {try_number}: trying anyway"
            ));
            return true;
        };
        let holders: i32 = row.get(0);
        if holders == 0 {
            return true;
        }
        if started.elapsed() >= wait_at_most {
            injector.say(format!(
                "waited {} for the replica before try {try_number}: trying anyway",
                humantime::format_duration(wait_at_most)
            ));
            return true;
        }
        let oldest_s: f64 = row.get(1);
        injector.say(format!(
            "waiting for the replica before try {try_number}: {holders} old transactions hold \
             the table, oldest {oldest_s:.1} s"
        ));
        tokio::select! {
            _ = tokio::time::sleep(POLL_EVERY) => {}
            _ = injector.run_over.wait_for(|over| *over) => return false,
        }
    }
}

/// On the replica: how many sessions whose transaction is older than `$2`
/// seconds hold a lock on one of the tables `$1`, and the oldest's age. The
/// startup process (replaying) has no transaction and does not count.
const OLD_HOLDERS_SQL: &str = "\
    SELECT count(DISTINCT a.pid)::int4,
           coalesce(max(extract(epoch FROM now() - a.xact_start)), 0)::float8
    FROM pg_locks l
    JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'relation' AND l.granted
      AND l.relation IN (SELECT to_regclass(t)::oid FROM unnest($1::text[]) AS t)
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND a.pid <> pg_backend_pid()
      AND a.xact_start < now() - make_interval(secs => $2)";
