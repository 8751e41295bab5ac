//! The blocker: a long report that opens a transaction, reads the table
//! (taking a weak lock) and keeps the transaction open for `hold`.

use tokio_postgres::Client;

use super::RunClock;
use crate::config::BlockerConfig;
use crate::metrics::BlockerWindow;
use crate::target::error_text;

/// How the blocker's run went.
#[derive(Debug, Clone)]
pub struct BlockerResult {
    pub window: BlockerWindow,
    /// The server's error if the report failed (cancelled at the end of the run, terminated, ...).
    pub error: Option<String>,
}

/// Waits until `at`, then runs `BEGIN; <sql>; SELECT pg_sleep(<hold>); COMMIT`.
pub async fn run_blocker(client: Client, clock: RunClock, blocker: BlockerConfig) -> BlockerResult {
    clock.sleep_until(blocker.at).await;
    let started_s = clock.now_s();
    let sql = format!(
        "BEGIN; {}; SELECT pg_sleep({:.3}); COMMIT",
        blocker.sql.trim().trim_end_matches(';'),
        blocker.hold.as_secs_f64()
    );
    let result = client.batch_execute(&sql).await;
    let ended_s = clock.now_s();
    BlockerResult {
        window: BlockerWindow { started_s, ended_s },
        error: result.err().map(|err| error_text(&err)),
    }
}
