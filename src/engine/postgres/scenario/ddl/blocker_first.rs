//! The migration's wait for the blocker scheduled before it. On a busy
//! machine the blocker's statement can start late (in a suite run, the
//! ALTER of 1.5 s got its lock at 2.44 s with nothing to queue behind), and
//! a migration that slips in first meets no long transaction: the run then
//! shows nothing of what it was written for. So at its time the migration
//! also waits until the blocker's session holds a lock (any but its own
//! transaction's) or sits idle in its transaction, as the server's
//! `pg_locks` and `pg_stat_activity` show; a blocker whose statement runs
//! long is waited for only until that statement has its lock, not to its
//! end.

use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::Client;

/// How often the server is asked.
const POLL: Duration = Duration::from_millis(10);

/// Whether a session named `$1` is seen at all (through a pooler that drops
/// `application_name` it is not, and the migration does not wait), and
/// whether it holds a lock other than its own transaction's (a system
/// catalog's, taken while a statement is planned, does not count) or is
/// idle in its transaction.
const HOLDS_SQL: &str = "SELECT
    EXISTS (SELECT FROM pg_stat_activity WHERE application_name = $1),
    EXISTS (
        SELECT FROM pg_stat_activity a
        WHERE a.application_name = $1
          AND (a.state LIKE 'idle in transaction%'
               OR EXISTS (SELECT FROM pg_locks l
                          WHERE l.pid = a.pid AND l.granted
                            AND l.locktype NOT IN ('virtualxid', 'transactionid')
                            AND (l.locktype <> 'relation' OR l.relation >= 16384))))";

/// The blocker the migration waits for.
pub struct BlockerFirst {
    /// The blocker session's `application_name`, on the migration's server.
    pub application_name: String,
    /// Closed when the blocker's task ends (its sender is dropped).
    pub running: watch::Receiver<()>,
}

/// Waits, asking on `client`, until the blocker holds its lock, or is over,
/// or cannot be seen, or the server cannot be asked; false when `run_over`
/// turned true first.
pub async fn wait_for_blocker(
    client: &Client,
    blocker: &BlockerFirst,
    run_over: &mut watch::Receiver<bool>,
) -> bool {
    loop {
        if *run_over.borrow() {
            return false;
        }
        if blocker.running.has_changed().is_err() {
            return true;
        }
        match client
            .query_one(HOLDS_SQL, &[&blocker.application_name])
            .await
        {
            Ok(row) if !row.get::<_, bool>(0) || row.get::<_, bool>(1) => return true,
            Ok(_) => {}
            // The tries will meet the same server and say what is wrong.
            Err(_) => return true,
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = run_over.wait_for(|over| *over) => return false,
        }
    }
}
