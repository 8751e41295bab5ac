//! The lock observer: samples `pg_stat_activity` on its own connection and
//! keeps, per second, the most sessions seen waiting on a heavyweight lock.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::Client;

use super::RunClock;
use crate::metrics::LiveCounters;

/// How often the observer samples: 5 times a second.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(200);

const WAITERS_SQL: &str = "SELECT count(*)::int4 FROM pg_stat_activity \
     WHERE wait_event_type = 'Lock' AND datname = current_database()";

/// Samples until `stop` turns true; records into `live`. Returns the first error, if any.
pub async fn observe(
    client: Client,
    clock: RunClock,
    live: Arc<LiveCounters>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let statement = client
        .prepare(WAITERS_SQL)
        .await
        .map_err(|err| format!("lock observer: {err}"))?;
    let mut ticker = tokio::time::interval(SAMPLE_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.wait_for(|stopped| *stopped) => return Ok(()),
        }
        let row = client
            .query_one(&statement, &[])
            .await
            .map_err(|err| format!("lock observer: {err}"))?;
        let waiters: i32 = row.get(0);
        live.record_lock_waiters(clock.second_now(), waiters.max(0) as u32);
    }
}
