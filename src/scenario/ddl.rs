//! The DDL injector: at `at`, runs the migration with the chosen strategy
//! and records every attempt on the run clock.

use std::time::Duration;

use rand::SeedableRng;
use tokio::sync::watch;
use tokio_postgres::Client;

use super::RunClock;
use crate::config::DdlConfig;
use crate::metrics::{AttemptOutcome, DdlAttempt};
use crate::strategy::Strategy;

/// SQLSTATE of "canceling statement due to lock timeout".
pub const LOCK_NOT_AVAILABLE: &str = "55P03";

/// Runs the migration; returns every attempt. `status` carries a short text for
/// the progress line; once `run_over` turns true no new try starts.
pub async fn run_ddl(
    client: Client,
    clock: RunClock,
    ddl: DdlConfig,
    strategy: Strategy,
    seed: u64,
    status: watch::Sender<String>,
    mut run_over: watch::Receiver<bool>,
) -> Vec<DdlAttempt> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut attempts = Vec::new();
    let settings = match &strategy {
        Strategy::Plain => "SET lock_timeout = 0; SET statement_timeout = 0".to_string(),
        Strategy::LockTimeoutRetry(policy) => format!(
            "SET lock_timeout = '{}ms'; SET statement_timeout = '{}ms'",
            policy.lock_timeout.as_millis(),
            policy
                .statement_timeout
                .map_or(0, |timeout| timeout.as_millis())
        ),
    };
    let max_tries = match &strategy {
        Strategy::Plain => 1,
        Strategy::LockTimeoutRetry(policy) => policy.max_tries,
    };

    clock.sleep_until(ddl.at).await;
    if let Err(err) = client.batch_execute(&settings).await {
        let now_s = clock.now_s();
        attempts.push(failed_attempt(1, now_s, now_s, &err, AttemptOutcome::Error));
        status.send_replace("failed before the first try".into());
        return attempts;
    }
    for try_number in 1..=max_tries {
        status.send_replace(format!("try {try_number} waiting"));
        let started_s = clock.now_s();
        let result = client.batch_execute(&ddl.sql).await;
        let ended_s = clock.now_s();
        let err = match result {
            Ok(()) => {
                attempts.push(DdlAttempt {
                    attempt: try_number,
                    started_s,
                    ended_s,
                    waited_ms: (ended_s - started_s) * 1000.0,
                    outcome: AttemptOutcome::Ok,
                    sqlstate: String::new(),
                    message: String::new(),
                });
                status.send_replace(format!("done after {}", tries(try_number)));
                return attempts;
            }
            Err(err) => err,
        };
        let is_lock_timeout = err.code().map(|code| code.code()) == Some(LOCK_NOT_AVAILABLE);
        let outcome = match (is_lock_timeout, try_number == max_tries) {
            (false, _) => AttemptOutcome::Error,
            (true, true) => AttemptOutcome::GaveUp,
            (true, false) => AttemptOutcome::LockTimeout,
        };
        attempts.push(failed_attempt(
            try_number, started_s, ended_s, &err, outcome,
        ));
        if outcome != AttemptOutcome::LockTimeout {
            status.send_replace(format!("failed at try {try_number}"));
            return attempts;
        }
        let Strategy::LockTimeoutRetry(policy) = &strategy else {
            return attempts;
        };
        let sleep = policy.backoff.sleep_after(try_number, &mut rng);
        status.send_replace(format!(
            "try {try_number} timed out, next in {:.1} s",
            sleep.as_secs_f64()
        ));
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = run_over.wait_for(|over| *over) => {
                status.send_replace(format!("stopped after {}: the run ended", tries(try_number)));
                return attempts;
            }
        }
    }
    attempts
}

/// "1 try", "4 tries".
fn tries(count: u32) -> String {
    if count == 1 {
        "1 try".to_string()
    } else {
        format!("{count} tries")
    }
}

fn failed_attempt(
    attempt: u32,
    started_s: f64,
    ended_s: f64,
    err: &tokio_postgres::Error,
    outcome: AttemptOutcome,
) -> DdlAttempt {
    let (sqlstate, message) = match err.as_db_error() {
        Some(db) => (db.code().code().to_string(), db.message().to_string()),
        None => (String::new(), err.to_string()),
    };
    DdlAttempt {
        attempt,
        started_s,
        ended_s,
        waited_ms: (ended_s - started_s) * 1000.0,
        outcome,
        sqlstate,
        message,
    }
}

/// How long a running attempt may go on after the load ended before it is cancelled.
pub const GRACE_AFTER_RUN: Duration = Duration::from_secs(5);
