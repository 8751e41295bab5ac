//! The blocker on PostgreSQL: a session that opens a transaction, touches
//! the table (a report reads it, a writer writes rows) and keeps the
//! transaction open for `hold`, active or idle.

use std::time::Duration;

use tokio_postgres::Client;

use crate::config::{BlockerConfig, BlockerKind};
use crate::engine::postgres::database::error_text;
use crate::metrics::BlockerWindow;
use crate::scenario::RunClock;
use crate::scenario::blocker::BlockerResult;

/// Waits until `at`, then holds a transaction open for `hold`: a report or a
/// writer runs `BEGIN; <sql>; SELECT pg_sleep(<hold>); COMMIT`; an idle blocker
/// runs `BEGIN; <sql>`, stays idle in transaction, then commits (unless the
/// server ends the session first, e.g. `idle_in_transaction_session_timeout`).
pub async fn run_blocker(client: Client, clock: RunClock, blocker: BlockerConfig) -> BlockerResult {
    clock.sleep_until(blocker.at).await;
    let started_s = clock.now_s();
    let sql = blocker.sql.trim().trim_end_matches(';');
    let result = match blocker.kind {
        BlockerKind::Report | BlockerKind::Writer => {
            let batch = format!(
                "BEGIN; {sql}; SELECT pg_sleep({:.3}); COMMIT",
                blocker.hold.as_secs_f64()
            );
            client.batch_execute(&batch).await
        }
        BlockerKind::Idle => match client.batch_execute(&format!("BEGIN; {sql}")).await {
            Err(err) => Err(err),
            Ok(()) => {
                let until = tokio::time::Instant::now() + blocker.hold;
                // Idle in transaction; notice at once if the server closes the session.
                while tokio::time::Instant::now() < until && !client.is_closed() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                if client.is_closed() {
                    let ended_s = clock.now_s();
                    return BlockerResult {
                        window: BlockerWindow { started_s, ended_s },
                        error: Some(
                            "the server closed the session while it was idle in transaction \
                             (idle_in_transaction_session_timeout or a terminate)"
                                .to_string(),
                        ),
                    };
                }
                client.batch_execute("COMMIT").await
            }
        },
    };
    let ended_s = clock.now_s();
    BlockerResult {
        window: BlockerWindow { started_s, ended_s },
        error: result.err().map(|err| error_text(&err)),
    }
}
