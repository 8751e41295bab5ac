//! The DDL injector: at `at`, runs the migration with the chosen strategy
//! and records every attempt on the run clock.

use std::time::Duration;

use rand::SeedableRng;
use tokio::sync::watch;
use tokio_postgres::Client;

use super::RunClock;
use super::observer::role_of;
use crate::metrics::{AttemptOutcome, DdlAttempt};
use crate::strategy::{RetryPolicy, Strategy};
use crate::target::SCHEMA;

/// SQLSTATE of "canceling statement due to lock timeout".
pub const LOCK_NOT_AVAILABLE: &str = "55P03";

/// How long a running attempt may go on after the load ended before it is cancelled.
pub const GRACE_AFTER_RUN: Duration = Duration::from_secs(5);

/// How often `wait-for-idle` looks for old transactions and `kill-blockers` for blockers.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// Everything the injector needs; it owns its connections.
pub struct DdlInjector {
    pub client: Client,
    /// A second connection, for `kill-blockers` (terminates the DDL's blockers while the DDL waits).
    pub killer: Option<Client>,
    pub clock: RunClock,
    /// When the migration starts, on the run clock.
    pub at: Duration,
    /// The migration's statements, run one after another, each with the strategy.
    pub steps: Vec<String>,
    pub strategy: Strategy,
    pub seed: u64,
    /// This run's `application_name` prefix, to name terminated sessions by role.
    pub session_prefix: String,
    /// A short text for the progress line.
    pub status: watch::Sender<String>,
    /// Turns true when the load ends: no new try starts after that.
    pub run_over: watch::Receiver<bool>,
}

/// Runs the migration, step by step; returns every attempt, numbered across
/// steps. A step that fails for good ends the migration.
pub async fn run_ddl(mut injector: DdlInjector) -> Vec<DdlAttempt> {
    injector.clock.sleep_until(injector.at).await;
    let mut attempts: Vec<DdlAttempt> = Vec::new();
    for sql in injector.steps.clone() {
        let step_attempts = match injector.strategy.clone() {
            Strategy::Plain => plain(&injector, &sql).await,
            Strategy::LockTimeoutRetry(policy) => retry(&mut injector, &sql, &policy, None).await,
            Strategy::WaitForIdle {
                older_than,
                retry: policy,
            } => retry(&mut injector, &sql, &policy, Some(older_than)).await,
            Strategy::KillBlockers { grace } => kill_blockers(&injector, &sql, grace).await,
        };
        let step_done = step_attempts
            .last()
            .is_some_and(|attempt| attempt.outcome == AttemptOutcome::Ok);
        for mut attempt in step_attempts {
            attempt.attempt = attempts.len() as u32 + 1;
            attempts.push(attempt);
        }
        if !step_done {
            break;
        }
    }
    attempts
}

/// The statement alone, no timeouts.
async fn plain(injector: &DdlInjector, sql: &str) -> Vec<DdlAttempt> {
    let clock = injector.clock;
    if let Err(err) = injector
        .client
        .batch_execute("SET lock_timeout = 0; SET statement_timeout = 0")
        .await
    {
        return vec![setup_failed(clock, &err)];
    }
    injector.status.send_replace("try 1 waiting".into());
    let started_s = clock.now_s();
    let result = injector.client.batch_execute(sql).await;
    let attempt = finish_attempt(1, started_s, clock.now_s(), result, false, String::new());
    injector.status.send_replace(final_status(&attempt));
    vec![attempt]
}

/// Tries with a lock_timeout, sleeping between tries; with `wait_for_idle`,
/// first waits until no transaction older than that holds a workload table.
async fn retry(
    injector: &mut DdlInjector,
    sql: &str,
    policy: &RetryPolicy,
    wait_for_idle: Option<Duration>,
) -> Vec<DdlAttempt> {
    let clock = injector.clock;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(injector.seed);
    let mut attempts = Vec::new();
    let statement_timeout_ms = policy.statement_timeout.map_or(0, |t| t.as_millis());
    let max_tries = policy.max_tries();
    let mut try_number = 1;
    loop {
        if let Some(older_than) = wait_for_idle
            && !wait_until_idle(injector, older_than, try_number).await
        {
            injector
                .status
                .send_replace(format!("stopped before try {try_number}: the run ended"));
            return attempts;
        }
        let lock_timeout_ms = policy.lock_timeout(try_number).as_millis();
        injector
            .status
            .send_replace(format!("try {try_number} waiting"));
        let client = &injector.client;
        let (started_s, result) = if policy.set_local && !must_run_outside_transaction(sql) {
            let sql = format!(
                "BEGIN; SET LOCAL lock_timeout = '{lock_timeout_ms}ms'; \
                 SET LOCAL statement_timeout = '{statement_timeout_ms}ms'; {}; COMMIT",
                sql.trim().trim_end_matches(';')
            );
            let started_s = clock.now_s();
            let result = client.batch_execute(&sql).await;
            if result.is_err() {
                let _ = client.batch_execute("ROLLBACK").await;
            }
            (started_s, result)
        } else {
            let settings = format!(
                "SET lock_timeout = '{lock_timeout_ms}ms'; SET statement_timeout = '{statement_timeout_ms}ms'"
            );
            if let Err(err) = client.batch_execute(&settings).await {
                let now_s = clock.now_s();
                attempts.push(failed_attempt(
                    try_number,
                    now_s,
                    now_s,
                    &err,
                    AttemptOutcome::Error,
                ));
                return attempts;
            }
            let started_s = clock.now_s();
            (started_s, client.batch_execute(sql).await)
        };
        let is_last = try_number >= max_tries;
        let attempt = finish_attempt(
            try_number,
            started_s,
            clock.now_s(),
            result,
            is_last,
            String::new(),
        );
        let outcome = attempt.outcome;
        attempts.push(attempt);
        if outcome != AttemptOutcome::LockTimeout {
            injector
                .status
                .send_replace(final_status(attempts.last().expect("just pushed")));
            return attempts;
        }
        let sleep = policy.sleep_after(try_number, &mut rng);
        injector.status.send_replace(format!(
            "try {try_number} timed out, next in {:.1} s",
            sleep.as_secs_f64()
        ));
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = injector.run_over.wait_for(|over| *over) => {
                injector.status.send_replace(format!(
                    "stopped after {}: the run ended",
                    tries(try_number)
                ));
                return attempts;
            }
        }
        try_number += 1;
    }
}

/// Polls until no transaction older than `older_than` holds a lock on a workload
/// table; false if the run ended first.
async fn wait_until_idle(
    injector: &mut DdlInjector,
    older_than: Duration,
    try_number: u32,
) -> bool {
    const OLD_TRANSACTIONS_SQL: &str = "\
        SELECT count(DISTINCT a.pid)::int4,
               coalesce(max(extract(epoch FROM now() - a.xact_start)), 0)::float8
        FROM pg_locks l
        JOIN pg_stat_activity a ON a.pid = l.pid
        JOIN pg_class c ON c.oid = l.relation
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND l.granted
          AND a.pid <> pg_backend_pid()
          AND a.xact_start < now() - make_interval(secs => $2)";
    loop {
        let row = injector
            .client
            .query_one(OLD_TRANSACTIONS_SQL, &[&SCHEMA, &older_than.as_secs_f64()])
            .await;
        match row {
            Ok(row) if row.get::<_, i32>(0) == 0 => return true,
            Ok(row) => {
                let oldest_s: f64 = row.get(1);
                injector.status.send_replace(format!(
                    "waiting for idle before try {try_number}: {} old transactions, oldest {oldest_s:.1} s",
                    row.get::<_, i32>(0)
                ));
            }
            // The poll failing is no reason to stop the migration: try anyway.
            Err(_) => return true,
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL_EVERY) => {}
            _ = injector.run_over.wait_for(|over| *over) => return false,
        }
    }
}

/// No timeout; after `grace`, terminates every session that blocks the DDL and
/// whose transaction is older than `grace` (so a reader's millisecond query is spared).
async fn kill_blockers(injector: &DdlInjector, sql: &str, grace: Duration) -> Vec<DdlAttempt> {
    let clock = injector.clock;
    let client = &injector.client;
    let prepared = async {
        client
            .batch_execute("SET lock_timeout = 0; SET statement_timeout = 0")
            .await?;
        let row = client.query_one("SELECT pg_backend_pid()", &[]).await?;
        Ok::<i32, tokio_postgres::Error>(row.get(0))
    }
    .await;
    let ddl_pid = match prepared {
        Ok(pid) => pid,
        Err(err) => return vec![setup_failed(clock, &err)],
    };
    injector.status.send_replace("try 1 waiting".into());
    let started_s = clock.now_s();
    let mut terminated: Vec<String> = Vec::new();
    let result = {
        let ddl = client.batch_execute(sql);
        tokio::pin!(ddl);
        let killer = async {
            tokio::time::sleep(grace).await;
            let Some(killer) = &injector.killer else {
                return std::future::pending::<()>().await;
            };
            loop {
                let rows = killer
                    .query(
                        "SELECT b, coalesce(a.application_name, ''), pg_terminate_backend(b) \
                         FROM unnest(pg_blocking_pids($1)) b \
                         JOIN pg_stat_activity a ON a.pid = b \
                         WHERE a.xact_start < now() - make_interval(secs => $2)",
                        &[&ddl_pid, &grace.as_secs_f64()],
                    )
                    .await
                    .unwrap_or_default();
                for row in rows {
                    let pid = row.get::<_, i32>(0) as u32;
                    let role = role_of(&injector.session_prefix, row.get(1), pid);
                    injector
                        .status
                        .send_replace(format!("try 1 waiting; terminated {role}"));
                    terminated.push(format!("{role} (pid {pid})"));
                }
                tokio::time::sleep(POLL_EVERY).await;
            }
        };
        tokio::select! {
            result = &mut ddl => result,
            _ = killer => unreachable!("the killer loop never ends"),
        }
    };
    let note = if terminated.is_empty() {
        String::new()
    } else {
        format!("terminated {}", terminated.join(", "))
    };
    let attempt = finish_attempt(1, started_s, clock.now_s(), result, true, note);
    injector.status.send_replace(final_status(&attempt));
    vec![attempt]
}

/// The attempt record of a finished try. A lock timeout on the last allowed
/// try is `gave_up`; `note` goes into the message of a successful try.
fn finish_attempt(
    attempt: u32,
    started_s: f64,
    ended_s: f64,
    result: Result<(), tokio_postgres::Error>,
    is_last: bool,
    note: String,
) -> DdlAttempt {
    match result {
        Ok(()) => DdlAttempt {
            attempt,
            started_s,
            ended_s,
            waited_ms: (ended_s - started_s) * 1000.0,
            outcome: AttemptOutcome::Ok,
            sqlstate: String::new(),
            message: note,
        },
        Err(err) => {
            let is_lock_timeout = err.code().map(|code| code.code()) == Some(LOCK_NOT_AVAILABLE);
            let outcome = match (is_lock_timeout, is_last) {
                (false, _) => AttemptOutcome::Error,
                (true, true) => AttemptOutcome::GaveUp,
                (true, false) => AttemptOutcome::LockTimeout,
            };
            failed_attempt(attempt, started_s, ended_s, &err, outcome)
        }
    }
}

/// A statement that PostgreSQL refuses inside a transaction block (`CREATE INDEX
/// CONCURRENTLY`, `REINDEX ... CONCURRENTLY`, `VACUUM`, ...): a `set_local`
/// strategy runs it with a session-level `SET` instead of wrapping it.
pub fn must_run_outside_transaction(sql: &str) -> bool {
    let upper = sql.to_ascii_uppercase();
    upper.contains(" CONCURRENTLY") || upper.trim_start().starts_with("VACUUM")
}

/// The progress text once the strategy is over.
fn final_status(last: &DdlAttempt) -> String {
    match last.outcome {
        AttemptOutcome::Ok => format!("done after {}", tries(last.attempt)),
        AttemptOutcome::GaveUp => format!("gave up after {}", tries(last.attempt)),
        AttemptOutcome::Error | AttemptOutcome::LockTimeout => {
            format!("failed at try {}", last.attempt)
        }
    }
}

/// "1 try", "4 tries".
fn tries(count: u32) -> String {
    if count == 1 {
        "1 try".to_string()
    } else {
        format!("{count} tries")
    }
}

/// The record of a try that could not start: setting the session up failed.
fn setup_failed(clock: RunClock, err: &tokio_postgres::Error) -> DdlAttempt {
    let now_s = clock.now_s();
    failed_attempt(1, now_s, now_s, err, AttemptOutcome::Error)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_builds_and_vacuum_run_outside_a_transaction() {
        assert!(must_run_outside_transaction(
            "CREATE INDEX CONCURRENTLY orders_note_idx ON orders (note)"
        ));
        assert!(must_run_outside_transaction("reindex index concurrently i"));
        assert!(must_run_outside_transaction("  VACUUM orders"));
        assert!(!must_run_outside_transaction(
            "ALTER TABLE orders ADD COLUMN note text"
        ));
    }

    #[test]
    fn tries_are_counted_in_words() {
        assert_eq!(tries(1), "1 try");
        assert_eq!(tries(4), "4 tries");
    }
}
