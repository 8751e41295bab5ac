//! The DDL injector: at `at`, runs the migration with the chosen strategy
//! and records every attempt on the run clock.
//!
//! In an `--in-place` run without `--apply` every try is wrapped as
//! `BEGIN; [SET LOCAL ...;] <ddl>; ROLLBACK`: the lock queue, the waits and the
//! time the statement holds its lock are real, and the user's schema is the
//! same afterwards. [`try_text`] builds that text, and
//! `strategy::statements::check_rollback` refuses, before the run, what such a
//! transaction cannot hold.
//!
//! A strategy that tries more than once goes on after its session is lost
//! (a restart, a terminated backend), as a deploy script running its tool anew
//! would: the try counts as failed with the loss, the session is opened again
//! and the schedule goes on. A strategy of one try fails with its one try.

pub mod abort;
pub mod blocker_first;
mod invalid_index;
mod replica_wait;
mod terminate;
pub mod trace;
mod wal;

use std::time::Duration;

use rand::SeedableRng;
use tokio::sync::watch;
use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use super::reopen::{HeldSession, SharedCancel, is_connection_lost};
use crate::engine::postgres::errors;
use crate::metrics::failures::FailureKind;
use crate::metrics::{AttemptOutcome, DdlActivity, DdlAttempt};
use crate::scenario::RunClock;
use crate::scenario::progress::DdlStatus;
use crate::strategy::statements::{
    builds_index_concurrently, must_run_outside_transaction, rewrites_table,
};
use crate::strategy::{RetryPolicy, Strategy};
use wal::{wal_position, wal_since};

/// How long a running attempt may go on after the load ended before it is cancelled.
pub const GRACE_AFTER_RUN: Duration = Duration::from_secs(5);

/// How often `wait-for-idle` and `replica-aware` look for old transactions.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// Everything the injector needs; it owns its connections.
pub struct DdlInjector {
    /// The DDL's session, opened again after a loss by the strategies that retry.
    pub session: HeldSession,
    /// Cancels the statement of the current DDL session (the end of the run does).
    pub cancel: SharedCancel,
    /// A second connection, for `kill-blockers` (terminates the DDL's blockers while the DDL waits).
    pub killer: Option<HeldSession>,
    /// A session on the replica, for `replica-aware` (looks there before each try).
    pub replica_watch: Option<HeldSession>,
    pub clock: RunClock,
    /// When the migration starts, on the run clock.
    pub at: Duration,
    /// The migration's statements, run one after another, each with the strategy.
    pub steps: Vec<String>,
    pub strategy: Strategy,
    pub seed: u64,
    /// This run's `application_name` prefix, to name terminated sessions by role.
    pub session_prefix: String,
    /// What the injector is doing, for the progress line.
    pub status: watch::Sender<DdlStatus>,
    /// Turns true when the load ends: no new try starts after that.
    pub run_over: watch::Receiver<bool>,
    /// Roll each try's transaction back once the statement finished (`--in-place` without `--apply`).
    pub rollback: bool,
    /// The lock observer's watch on the DDL session; `None` without an observer.
    pub observed: Option<ObservedTries>,
    /// For a step that builds an index concurrently, the invalid indexes
    /// there were before its first try (`run_ddl` reads them; start with
    /// `None`): a later try drops the others first ([`invalid_index`]).
    pub invalid_indexes_before: Option<Vec<i64>>,
    /// The blocker scheduled before the migration, which its first try
    /// waits for ([`blocker_first`]); `None` when no blocker comes first on
    /// its server.
    pub blocker_first: Option<blocker_first::BlockerFirst>,
}

/// The DDL injector's side of the lock observer's polls of its session.
pub struct ObservedTries {
    /// What the observer last saw the DDL session do.
    pub activity: watch::Receiver<DdlActivity>,
    /// True while a try runs: the observer polls the session only then.
    pub try_running: watch::Sender<bool>,
}

impl DdlInjector {
    /// Shows `text` on the progress line.
    fn say(&self, text: impl Into<String>) {
        self.status.send_replace(DdlStatus::says(text));
    }
    /// Opens the DDL session again after a loss, before try `next_try`; false
    /// if the run ended first.
    async fn reopen(&mut self, next_try: u32) -> bool {
        self.say(format!("reconnecting before try {next_try}"));
        let mut run_over = self.run_over.clone();
        let back = self.session.reopen(&mut run_over).await;
        if back {
            self.cancel.replace(&self.session.client);
        }
        back
    }
}

/// Runs the migration, step by step; returns every attempt, numbered across
/// steps. A step that fails for good ends the migration.
pub async fn run_ddl(mut injector: DdlInjector) -> Vec<DdlAttempt> {
    let mut run_over = injector.run_over.clone();
    tokio::select! {
        _ = injector.clock.sleep_until(injector.at) => {}
        _ = run_over.wait_for(|over| *over) => return Vec::new(),
    }
    if let Some(blocker) = injector.blocker_first.take() {
        injector.say("waiting for the blocker to take its lock");
        let client = &injector.session.client;
        if !blocker_first::wait_for_blocker(client, &blocker, &mut run_over).await {
            return Vec::new();
        }
    }
    let mut attempts: Vec<DdlAttempt> = Vec::new();
    for (index, sql) in injector.steps.clone().into_iter().enumerate() {
        if *injector.run_over.borrow() {
            break;
        }
        injector.invalid_indexes_before = match builds_index_concurrently(&sql) {
            true => invalid_index::invalid_indexes(&injector.session.client)
                .await
                .ok(),
            false => None,
        };
        let step_attempts = match injector.strategy.clone() {
            Strategy::Plain => plain(&injector, &sql, index == 0).await,
            Strategy::LockTimeoutRetry(policy) => {
                retry(&mut injector, &sql, &policy, BeforeTry::Nothing).await
            }
            Strategy::WaitForIdle {
                older_than,
                retry: policy,
            } => retry(&mut injector, &sql, &policy, BeforeTry::Idle { older_than }).await,
            Strategy::ReplicaAware {
                older_than,
                wait_at_most,
                retry: policy,
            } => {
                let before = BeforeTry::IdleReplica {
                    older_than,
                    wait_at_most,
                };
                retry(&mut injector, &sql, &policy, before).await
            }
            Strategy::KillBlockers {
                grace,
                older_than,
                every,
            } => terminate::kill_blockers(&mut injector, &sql, grace, older_than, every).await,
            Strategy::KillLockHolders {
                lock_timeout,
                max_tries,
            } => terminate::kill_lock_holders(&mut injector, &sql, lock_timeout, max_tries).await,
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

/// The statement alone, no timeouts: they are cleared before the first
/// step, so a `SET lock_timeout` of a step holds for the steps after it, as
/// when the migration's file runs as written.
async fn plain(injector: &DdlInjector, sql: &str, first_step: bool) -> Vec<DdlAttempt> {
    let clock = injector.clock;
    if first_step
        && let Err(err) = injector
            .session
            .client
            .batch_execute("SET lock_timeout = 0; SET statement_timeout = 0")
            .await
    {
        return vec![setup_failed(clock, &err)];
    }
    injector.say("try 1 waiting");
    let client = &injector.session.client;
    let wal_before = wal_position(client).await;
    let started_s = clock.now_s();
    let result = run_try(injector, 1, sql, None).await;
    let ended_s = clock.now_s();
    // Its one try is its last: a lock timeout (the step's own SET) gives up.
    let attempt = DdlAttempt {
        wal_bytes: wal_since(client, wal_before).await,
        ..finish_attempt(1, started_s, ended_s, result, true)
    };
    injector.say(final_status(&attempt));
    vec![attempt]
}

/// What a retrying strategy waits for before each try.
#[derive(Debug, Clone, Copy)]
enum BeforeTry {
    /// Nothing: `retry`.
    Nothing,
    /// No transaction older than `older_than` holds a workload table (`wait-for-idle`).
    Idle { older_than: Duration },
    /// No transaction older than `older_than` on the replica holds a table
    /// the migration names, for at most `wait_at_most` (`replica-aware`).
    IdleReplica {
        older_than: Duration,
        wait_at_most: Duration,
    },
}

/// Tries with a lock_timeout, sleeping between tries, each try after what
/// `before` waits for. A try that lost the session counts as failed; the
/// next opens it again.
async fn retry(
    injector: &mut DdlInjector,
    sql: &str,
    policy: &RetryPolicy,
    before: BeforeTry,
) -> Vec<DdlAttempt> {
    let clock = injector.clock;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(injector.seed);
    let mut attempts = Vec::new();
    let max_tries = policy.max_tries();
    let mut try_number = 1;
    let mut lost = false;
    loop {
        if lost && !injector.reopen(try_number).await {
            injector.say(format!("stopped before try {try_number}: the run ended"));
            return attempts;
        }
        let idle_wait_started_s = clock.now_s();
        let waited = match before {
            BeforeTry::Nothing => true,
            BeforeTry::Idle { older_than } => {
                wait_until_idle(injector, older_than, try_number).await
            }
            BeforeTry::IdleReplica {
                older_than,
                wait_at_most,
            } => {
                replica_wait::wait_for_replica(injector, sql, older_than, wait_at_most, try_number)
                    .await
            }
        };
        if !waited {
            injector.say(format!("stopped before try {try_number}: the run ended"));
            return attempts;
        }
        let idle_wait_ms = match before {
            BeforeTry::Nothing => 0.0,
            _ => (clock.now_s() - idle_wait_started_s) * 1000.0,
        };
        // No try starts once the run is over (a stop cancels the one running).
        if *injector.run_over.borrow() {
            injector.say(format!("stopped before try {try_number}: the run ended"));
            return attempts;
        }
        injector.say(format!("try {try_number} waiting"));
        let mut started_s = clock.now_s();
        let mut wal_before = None;
        let result = match try_settings(&injector.session.client, sql, policy, try_number).await {
            Ok(local_settings) => {
                // Read before the try's clock starts: the round trip is not in `waited_ms`.
                wal_before = wal_position(&injector.session.client).await;
                started_s = clock.now_s();
                run_try(injector, try_number, sql, local_settings.as_deref()).await
            }
            Err(err) => Err(err),
        };
        let ended_s = clock.now_s();
        lost = result.as_ref().is_err_and(is_connection_lost);
        let is_last = try_number >= max_tries;
        let attempt = DdlAttempt {
            idle_wait_ms,
            wal_bytes: wal_since(&injector.session.client, wal_before).await,
            ..finish_attempt(try_number, started_s, ended_s, result, is_last)
        };
        let timed_out = attempt.outcome == AttemptOutcome::LockTimeout;
        attempts.push(attempt);
        if !goes_on(timed_out, lost, is_last) {
            injector.say(final_status(attempts.last().expect("just pushed")));
            return attempts;
        }
        let sleep = policy.sleep_after(try_number, &mut rng);
        let what = if lost {
            "lost its connection"
        } else {
            "timed out"
        };
        injector.status.send_replace(DdlStatus {
            text: format!("try {try_number} {what}"),
            next_try_at_s: Some(clock.now_s() + sleep.as_secs_f64()),
        });
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = injector.run_over.wait_for(|over| *over) => {
                injector.status.send_replace(DdlStatus::says(format!(
                    "stopped after {}: the run ended",
                    tries(try_number)
                )));
                return attempts;
            }
        }
        try_number += 1;
    }
}

/// Whether a retrying strategy tries again after a try that `timed_out` (a
/// lock timeout) or `lost` its session; not after its last try.
fn goes_on(timed_out: bool, lost: bool, is_last: bool) -> bool {
    (timed_out || lost) && !is_last
}

/// Sets try `try_number`'s timeouts of `policy` on the session, or returns
/// them to be set locally in the try's transaction (`set_local`, for a
/// statement that may run in one).
async fn try_settings(
    client: &Client,
    sql: &str,
    policy: &RetryPolicy,
    try_number: u32,
) -> Result<Option<String>, tokio_postgres::Error> {
    let lock_timeout_ms = policy.lock_timeout(try_number).as_millis();
    let statement_timeout_ms = policy.statement_timeout.map_or(0, |t| t.as_millis());
    if policy.set_local && !must_run_outside_transaction(sql) {
        return Ok(Some(format!(
            "SET LOCAL lock_timeout = '{lock_timeout_ms}ms'; \
             SET LOCAL statement_timeout = '{statement_timeout_ms}ms'"
        )));
    }
    client
        .batch_execute(&format!(
            "SET lock_timeout = '{lock_timeout_ms}ms'; SET statement_timeout = '{statement_timeout_ms}ms'"
        ))
        .await?;
    Ok(None)
}

/// Polls until no transaction older than `older_than` holds a lock on a workload
/// table (of this database: another one's table may have the same OID); false
/// if the run ended first.
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
        WHERE n.nspname = ANY (current_schemas(false)) AND c.relkind IN ('r', 'p') AND l.granted
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND a.pid <> pg_backend_pid()
          AND a.xact_start < now() - make_interval(secs => $1)";
    loop {
        let row = injector
            .session
            .client
            .query_one(OLD_TRANSACTIONS_SQL, &[&older_than.as_secs_f64()])
            .await;
        match row {
            Ok(row) if row.get::<_, i32>(0) == 0 => return true,
            Err(err) if is_connection_lost(&err) => {
                if !injector.reopen(try_number).await {
                    return false;
                }
                continue;
            }
            Ok(row) => {
                let oldest_s: f64 = row.get(1);
                injector.say(format!(
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

/// The attempt record of a finished try. A lock timeout on the last allowed
/// try is `gave_up`.
fn finish_attempt(
    attempt: u32,
    started_s: f64,
    ended_s: f64,
    result: Result<(), tokio_postgres::Error>,
    is_last: bool,
) -> DdlAttempt {
    match result {
        Ok(()) => DdlAttempt {
            attempt,
            started_s,
            ended_s,
            waited_ms: (ended_s - started_s) * 1000.0,
            outcome: AttemptOutcome::Ok,
            sqlstate: None,
            message: String::new(),
            lock: None,
            idle_wait_ms: 0.0,
            terminated: Vec::new(),
            wal_bytes: None,
        },
        Err(err) => {
            let is_lock_timeout = err.code() == Some(&SqlState::LOCK_NOT_AVAILABLE);
            let outcome = match (is_lock_timeout, is_last) {
                (false, _) => AttemptOutcome::Error,
                (true, true) => AttemptOutcome::GaveUp,
                (true, false) => AttemptOutcome::LockTimeout,
            };
            failed_attempt(attempt, started_s, ended_s, &err, outcome)
        }
    }
}

/// The text of one try: the statement alone, or in a transaction that sets the
/// strategy's timeouts locally (`local_settings`) or is rolled back
/// (`rollback`): `BEGIN; [SET LOCAL ...;] <ddl>; COMMIT` or `...; ROLLBACK`.
fn try_text(sql: &str, local_settings: Option<&str>, rollback: bool) -> String {
    if local_settings.is_none() && !rollback {
        return sql.to_string();
    }
    let settings = local_settings.map_or(String::new(), |settings| format!("{settings}; "));
    let end = if rollback { "ROLLBACK" } else { "COMMIT" };
    format!(
        "BEGIN; {settings}{}; {end}",
        sql.trim().trim_end_matches(';')
    )
}

/// Runs try `try_number` as [`try_text`] wraps it, saying on the progress
/// line once the lock observer sees it hold its lock; a try that fails
/// inside the transaction rolls it back, so the session is ready for the next one.
async fn run_try(
    injector: &DdlInjector,
    try_number: u32,
    sql: &str,
    local_settings: Option<&str>,
) -> Result<(), tokio_postgres::Error> {
    let client = &injector.session.client;
    if try_number > 1
        && let Some(before) = &injector.invalid_indexes_before
    {
        let dropped = invalid_index::drop_left_behind(client, before).await?;
        if !dropped.is_empty() {
            injector.say(format!(
                "try {try_number}: dropped the invalid index {} an earlier try left",
                dropped.join(", ")
            ));
        }
    }
    let wrapped = local_settings.is_some() || injector.rollback;
    let statement = async {
        let result = client
            .batch_execute(&try_text(sql, local_settings, injector.rollback))
            .await;
        if result.is_err() && wrapped {
            let _ = client.batch_execute("ROLLBACK").await;
        }
        result
    };
    let Some(observed) = &injector.observed else {
        return statement.await;
    };
    let mut activity = observed.activity.clone();
    // What the observer saw before this try is not this try.
    activity.mark_unchanged();
    observed.try_running.send_replace(true);
    tokio::pin!(statement);
    let result = loop {
        tokio::select! {
            result = &mut statement => break result,
            changed = activity.changed() => {
                if changed.is_err() {
                    // The observer stopped: the statement goes on unwatched.
                    break statement.await;
                }
                let seen = *activity.borrow_and_update();
                if let Some(text) = lock_status(try_number, sql, seen) {
                    injector.say(text);
                }
            }
        }
    };
    observed.try_running.send_replace(false);
    result
}

/// The progress text once the observer sees try `try_number` (of `sql`) do
/// `seen`: `try 1 waiting` for a lock, `try 1 holds the lock (rewriting)`
/// (or without `(rewriting)`) while it runs; `None` between statements.
fn lock_status(try_number: u32, sql: &str, seen: DdlActivity) -> Option<String> {
    match seen {
        DdlActivity::WaitingForLock => Some(format!("try {try_number} waiting")),
        DdlActivity::Running if rewrites_table(sql) => {
            Some(format!("try {try_number} holds the lock (rewriting)"))
        }
        DdlActivity::Running => Some(format!("try {try_number} holds the lock")),
        DdlActivity::Idle => None,
    }
}

/// The progress text once the strategy is over.
fn final_status(last: &DdlAttempt) -> String {
    match last.outcome {
        AttemptOutcome::Ok => format!("done after {}", tries(last.attempt)),
        AttemptOutcome::GaveUp => format!("gave up after {}", tries(last.attempt)),
        AttemptOutcome::Error | AttemptOutcome::LockTimeout => {
            format!("failed at try {}", last.attempt)
        }
        AttemptOutcome::CutOff => format!("try {} cut off by the run's end", last.attempt),
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
        Some(db) => (
            Some(errors::failure_kind(db.code())),
            db.message().to_string(),
        ),
        None if is_connection_lost(err) => (Some(FailureKind::ConnectionLost), err.to_string()),
        None => (None, err.to_string()),
    };
    DdlAttempt {
        attempt,
        started_s,
        ended_s,
        waited_ms: (ended_s - started_s) * 1000.0,
        outcome,
        sqlstate,
        message,
        lock: None,
        idle_wait_ms: 0.0,
        terminated: Vec::new(),
        wal_bytes: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_try_counts_down() {
        let sleeping = DdlStatus {
            text: "try 1 timed out".into(),
            next_try_at_s: Some(5.2),
        };
        let lines: Vec<String> = [3.0, 4.0, 5.0, 6.0]
            .iter()
            .map(|now_s| sleeping.render(*now_s))
            .collect();
        assert_eq!(
            lines,
            [
                "try 1 timed out, next in 2.2 s",
                "try 1 timed out, next in 1.2 s",
                "try 1 timed out, next in 0.2 s",
                "try 1 timed out, next in 0.0 s",
            ]
        );
        assert_eq!(
            DdlStatus::says("try 2 waiting").render(6.0),
            "try 2 waiting"
        );
    }

    #[test]
    fn a_try_is_wrapped_only_to_set_local_or_to_roll_back() {
        let sql = "ALTER TABLE orders ADD COLUMN note text;";
        assert_eq!(try_text(sql, None, false), sql);
        assert_eq!(
            try_text(sql, None, true),
            "BEGIN; ALTER TABLE orders ADD COLUMN note text; ROLLBACK"
        );
        assert_eq!(
            try_text(sql, Some("SET LOCAL lock_timeout = '100ms'"), true),
            "BEGIN; SET LOCAL lock_timeout = '100ms'; ALTER TABLE orders ADD COLUMN note text; ROLLBACK"
        );
        assert_eq!(
            try_text(sql, Some("SET LOCAL lock_timeout = '100ms'"), false),
            "BEGIN; SET LOCAL lock_timeout = '100ms'; ALTER TABLE orders ADD COLUMN note text; COMMIT"
        );
    }

    #[test]
    fn the_progress_line_says_when_a_try_holds_its_lock() {
        let rewrite = "ALTER TABLE orders ALTER COLUMN qty TYPE bigint";
        let add = "ALTER TABLE orders ADD COLUMN note text";
        let running = DdlActivity::Running;
        let waiting = DdlActivity::WaitingForLock;
        assert_eq!(lock_status(2, rewrite, waiting).unwrap(), "try 2 waiting");
        assert_eq!(
            lock_status(1, rewrite, running).unwrap(),
            "try 1 holds the lock (rewriting)"
        );
        assert_eq!(
            lock_status(3, add, running).unwrap(),
            "try 3 holds the lock"
        );
        assert_eq!(lock_status(1, add, DdlActivity::Idle), None);
    }

    #[test]
    fn a_retrying_strategy_goes_on_after_a_timeout_or_a_lost_session_but_not_its_last_try() {
        assert!(goes_on(true, false, false));
        assert!(goes_on(false, true, false));
        assert!(!goes_on(false, false, false), "an error or success ends it");
        assert!(!goes_on(true, false, true));
        assert!(!goes_on(false, true, true));
    }

    #[test]
    fn tries_are_counted_in_words() {
        assert_eq!(tries(1), "1 try");
        assert_eq!(tries(4), "4 tries");
    }
}
