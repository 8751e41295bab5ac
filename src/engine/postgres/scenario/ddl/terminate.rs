//! The strategies that terminate other sessions to get the DDL its lock, and
//! so cost those sessions their work: `kill-blockers` terminates the DDL's
//! blockers while it waits (stallbench's own preset, and django-pgmigrate's
//! recipe with other parameters); `kill-lock-holders` (pg-osc's
//! `--kill-backends`) waits up to a lock_timeout, then terminates every
//! session with a lock on the table, readers included, and tries again.
//! Each names the sessions it terminated in the attempt's record.
//!
//! `kill-lock-holders` tries again after a try that lost its session, on the
//! session opened again; `kill-blockers` has one try, which the loss fails.
//! The killer's own session is opened again when it is lost.

use std::time::Duration;

use tokio_postgres::Client;

use super::wal::{wal_position, wal_since};
use super::{DdlInjector, final_status, finish_attempt, goes_on, run_try, setup_failed, tries};
use crate::engine::postgres::scenario::reopen::is_connection_lost;
use crate::metrics::{AttemptOutcome, DdlAttempt, TerminatedSession};
use crate::role::Role;

/// No timeout; from `grace` after the DDL's start, every `every`, terminates
/// the sessions that block the DDL and whose transaction is older than
/// `older_than` (zero: any age). The DDL is never given up.
pub(super) async fn kill_blockers(
    injector: &mut DdlInjector,
    sql: &str,
    grace: Duration,
    older_than: Duration,
    every: Duration,
) -> Vec<DdlAttempt> {
    let mut killer = injector.killer.take();
    let injector = &*injector;
    let clock = injector.clock;
    let client = &injector.session.client;
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
    injector.say("try 1 waiting");
    let wal_before = wal_position(client).await;
    let started_s = clock.now_s();
    let mut terminated: Vec<TerminatedSession> = Vec::new();
    let result = {
        let ddl = run_try(injector, 1, sql, None);
        tokio::pin!(ddl);
        let killer = async {
            tokio::time::sleep(grace).await;
            let Some(killer) = &mut killer else {
                return std::future::pending::<()>().await;
            };
            let mut run_over = injector.run_over.clone();
            loop {
                // Once the run is over, nobody is terminated for the DDL any more.
                if *run_over.borrow() {
                    return std::future::pending::<()>().await;
                }
                let round = terminate_blockers(
                    injector,
                    &killer.client,
                    ddl_pid,
                    older_than,
                    &mut terminated,
                )
                .await;
                if round.as_ref().is_err_and(is_connection_lost)
                    && !killer.reopen(&mut run_over).await
                {
                    return std::future::pending::<()>().await;
                }
                tokio::time::sleep(every).await;
            }
        };
        tokio::select! {
            result = &mut ddl => result,
            _ = killer => unreachable!("the killer loop never ends"),
        }
    };
    let ended_s = clock.now_s();
    let mut attempt = finish_attempt(1, started_s, ended_s, result, true);
    attempt.terminated = terminated;
    attempt.wal_bytes = wal_since(client, wal_before).await;
    injector.say(final_status(&attempt));
    vec![attempt]
}

/// One round of [`kill_blockers`]: names the DDL's blockers old enough, adds
/// them to `terminated`, then terminates them. An error ends the round (the
/// next round tries again).
async fn terminate_blockers(
    injector: &DdlInjector,
    killer: &Client,
    ddl_pid: i32,
    older_than: Duration,
    terminated: &mut Vec<TerminatedSession>,
) -> Result<(), tokio_postgres::Error> {
    const BLOCKERS_SQL: &str = "\
        SELECT b, coalesce(a.application_name, '')
        FROM unnest(pg_blocking_pids($1)) b
        JOIN pg_stat_activity a ON a.pid = b
        WHERE $2::float8 <= 0 OR a.xact_start < now() - make_interval(secs => $2)";
    // The blockers are named before they are terminated: once one is gone the
    // DDL may finish at once, and the caller then drops this future, possibly
    // before it read the answer to the kill.
    let rows = killer
        .query(BLOCKERS_SQL, &[&ddl_pid, &older_than.as_secs_f64()])
        .await?;
    let mut pids = Vec::new();
    for row in rows {
        let pid = row.get::<_, i32>(0);
        pids.push(pid);
        if terminated.iter().any(|session| session.pid == pid as u32) {
            continue;
        }
        let role = Role::of_session(&injector.session_prefix, row.get(1), pid as u32).to_string();
        injector.say(format!("try 1 waiting; terminated {role}"));
        terminated.push(TerminatedSession {
            role,
            pid: pid as u32,
        });
    }
    if !pids.is_empty() {
        killer
            .execute(
                "SELECT pg_terminate_backend(b) FROM unnest($1::int4[]) b",
                &[&pids],
            )
            .await?;
    }
    Ok(())
}

/// pg-osc's `--kill-backends`: each try is `BEGIN; SET LOCAL lock_timeout;
/// LOCK TABLE <tables> IN ACCESS EXCLUSIVE MODE; <ddl>; COMMIT` (or
/// `ROLLBACK`); after a lock timeout that is not the last try, terminates
/// every other session with a lock on those tables and tries again at once.
/// The tables are the workload tables the DDL names ([`lock_tables`]).
pub(super) async fn kill_lock_holders(
    injector: &mut DdlInjector,
    sql: &str,
    lock_timeout: Duration,
    max_tries: u32,
) -> Vec<DdlAttempt> {
    let clock = injector.clock;
    let prepared = async {
        let client = &injector.session.client;
        client
            .batch_execute("SET lock_timeout = 0; SET statement_timeout = 0")
            .await?;
        lock_tables(client, sql).await
    }
    .await;
    let tables = match prepared {
        Ok(tables) if tables.is_empty() => return vec![names_no_table(injector, sql)],
        Ok(tables) => tables,
        Err(err) => return vec![setup_failed(clock, &err)],
    };
    let lock = format!(
        "SET LOCAL lock_timeout = '{}ms'; LOCK TABLE {} IN ACCESS EXCLUSIVE MODE",
        lock_timeout.as_millis(),
        tables.join(", ")
    );
    let mut attempts = Vec::new();
    let mut lost = false;
    for try_number in 1..=max_tries {
        if lost && !reopen_for_try(injector, try_number).await {
            injector.say(format!("stopped before try {try_number}: the run ended"));
            return attempts;
        }
        injector.say(format!("try {try_number} waiting"));
        let wal_before = wal_position(&injector.session.client).await;
        let started_s = clock.now_s();
        let result = run_try(injector, try_number, sql, Some(&lock)).await;
        let ended_s = clock.now_s();
        lost = result.as_ref().is_err_and(is_connection_lost);
        let is_last = try_number >= max_tries;
        let mut attempt = finish_attempt(try_number, started_s, ended_s, result, is_last);
        attempt.wal_bytes = wal_since(&injector.session.client, wal_before).await;
        let timed_out = attempt.outcome == AttemptOutcome::LockTimeout;
        if !goes_on(timed_out, lost, is_last) {
            injector.say(final_status(&attempt));
            attempts.push(attempt);
            return attempts;
        }
        if timed_out && !*injector.run_over.borrow() {
            attempt.terminated = terminate_lock_holders(injector, &tables).await;
            injector.say(format!(
                "try {try_number} timed out; terminated {} sessions",
                attempt.terminated.len()
            ));
        }
        attempts.push(attempt);
        if *injector.run_over.borrow() {
            injector.say(format!(
                "stopped after {}: the run ended",
                tries(try_number)
            ));
            return attempts;
        }
    }
    attempts
}

/// Opens the DDL session again before try `try_number` and sets it up as
/// [`kill_lock_holders`] did at its start; false if the run ended first.
async fn reopen_for_try(injector: &mut DdlInjector, try_number: u32) -> bool {
    loop {
        if !injector.reopen(try_number).await {
            return false;
        }
        let setup = injector
            .session
            .client
            .batch_execute("SET lock_timeout = 0; SET statement_timeout = 0")
            .await;
        match setup {
            Ok(()) => return true,
            Err(err) if is_connection_lost(&err) => continue,
            // Anything else shows in the try itself.
            Err(_) => return true,
        }
    }
}

/// The workload tables (ordinary or partitioned, visible on the search path)
/// that `sql` names, schema-qualified and quoted for `LOCK TABLE`. A DDL such as
/// `ALTER TABLE orders ADD CONSTRAINT ... REFERENCES customers` names both.
pub(super) async fn lock_tables(
    client: &Client,
    sql: &str,
) -> Result<Vec<String>, tokio_postgres::Error> {
    const TABLES_SQL: &str = "\
        SELECT format('%I.%I', n.nspname, c.relname)
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND c.relname = ANY ($1)
          AND n.nspname = ANY (current_schemas(false)) AND pg_table_is_visible(c.oid)
        ORDER BY c.relname";
    let rows = client.query(TABLES_SQL, &[&identifiers(sql)]).await?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

/// Terminates every other session that holds or awaits a lock on `tables`,
/// as pg-osc's `kill_backends` does (no age filter), in this database only (a
/// table of another database may have the same OID, e.g. in a copy made from
/// the same template); returns those terminated.
async fn terminate_lock_holders(
    injector: &DdlInjector,
    tables: &[String],
) -> Vec<TerminatedSession> {
    const KILL_SQL: &str = "\
        WITH holders AS (
            SELECT DISTINCT l.pid
            FROM pg_locks l
            WHERE l.locktype = 'relation' AND l.relation = ANY ($1::text[]::regclass[])
              AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND l.pid <> pg_backend_pid()
        )
        SELECT h.pid, coalesce(a.application_name, ''), pg_terminate_backend(h.pid)
        FROM holders h
        LEFT JOIN pg_stat_activity a ON a.pid = h.pid
        ORDER BY h.pid";
    let rows = injector
        .session
        .client
        .query(KILL_SQL, &[&tables])
        .await
        .unwrap_or_default();
    rows.iter()
        .filter(|row| row.get::<_, bool>(2))
        .map(|row| {
            let pid = row.get::<_, i32>(0) as u32;
            TerminatedSession {
                role: Role::of_session(&injector.session_prefix, row.get(1), pid).to_string(),
                pid,
            }
        })
        .collect()
}

/// The record of a `kill-lock-holders` run whose DDL names no workload table to lock.
fn names_no_table(injector: &DdlInjector, sql: &str) -> DdlAttempt {
    let now_s = injector.clock.now_s();
    DdlAttempt {
        attempt: 1,
        started_s: now_s,
        ended_s: now_s,
        waited_ms: 0.0,
        outcome: AttemptOutcome::Error,
        sqlstate: None,
        message: format!(
            "kill-lock-holders: the DDL step \"{}\" names no table of the workload's schema to \
             LOCK; name the table in the step, or use another strategy",
            sql.trim()
        ),
        lock: None,
        idle_wait_ms: 0.0,
        terminated: Vec::new(),
        wal_bytes: None,
    }
}

/// The identifiers of `sql` as PostgreSQL folds them: unquoted words in lower
/// case, `"Quoted"` ones as written; string literals are skipped.
fn identifiers(sql: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => words.push(chars.by_ref().take_while(|&c| c != '"').collect()),
            '\'' => chars.by_ref().take_while(|&c| c != '\'').for_each(drop),
            c if c.is_alphabetic() || c == '_' => {
                let mut word = c.to_lowercase().to_string();
                while let Some(&next) = chars.peek() {
                    if !(next.is_alphanumeric() || next == '_' || next == '$') {
                        break;
                    }
                    word.extend(next.to_lowercase());
                    chars.next();
                }
                words.push(word);
            }
            _ => {}
        }
    }
    words.sort();
    words.dedup();
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_fold_case_keep_quotes_and_skip_strings() {
        assert_eq!(
            identifiers("ALTER TABLE app.Orders ADD COLUMN note text DEFAULT 'customers'"),
            [
                "add", "alter", "app", "column", "default", "note", "orders", "table", "text"
            ]
        );
        assert_eq!(
            identifiers("ALTER TABLE \"Line Items\" ADD CONSTRAINT fk REFERENCES customers (id)"),
            [
                "Line Items",
                "add",
                "alter",
                "constraint",
                "customers",
                "fk",
                "id",
                "references",
                "table"
            ]
        );
        // An index name that starts with the table's name is not the table.
        assert!(
            !identifiers("CREATE INDEX orders_note_idx ON t (note)").contains(&"orders".into())
        );
    }
}
