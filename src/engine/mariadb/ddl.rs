//! The DDL injector on MariaDB: the strategies that run the migration while
//! the load runs, each try timed on the run clock as a neutral
//! [`DdlAttempt`].
//!
//! - `naive`: the ALTER as written; it waits for its exclusive metadata lock
//!   as long as `lock_wait_timeout` allows (a day by default), and every
//!   statement on the table queues behind it.
//! - `retry`: `SET SESSION lock_wait_timeout = 1` before the ALTER (the
//!   variable takes whole seconds only), on a lock wait timeout (1205) a
//!   pause of min(try, 5) s, at most 10 tries: PostgreSQL's `lock_timeout`
//!   recipe translated.
//! - `wait-retry`: MariaDB's own `ALTER TABLE t WAIT 1 ...` (10.3 and
//!   later), which bounds the wait of this statement alone, retried the same way.
//! - `nowait-retry`: `ALTER TABLE t NOWAIT ...`, which fails at once when the
//!   lock is not free, retried every 0.5 s (at most 40 tries).
//! - `kill-blockers`: tries bounded by `lock_wait_timeout = 1`; after each
//!   timeout, a second session (`killer`) ends every session that holds a
//!   metadata lock on the table with a statement or an idle transaction
//!   older than 1 s (`KILL CONNECTION`), then the ALTER tries again at once,
//!   at most 5 tries: spirit's cut-over recipe, which ends the report.
//! - `online`: the ALTER with `, ALGORITHM=INPLACE, LOCK=NONE` appended, run
//!   once as naive is: "online" DDL still waits for its exclusive metadata
//!   lock, and the readers still queue behind it.
//! - `pt-osc` and `pt-osc-1s`: pt-online-schema-change runs the migration
//!   (its triggers, chunked copy and `RENAME TABLE` swap) with its own
//!   defaults, or with `--set-vars lock_wait_timeout=1`; see [`super::ptosc`].

use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;

use super::errors::{failure_kind, server_error};
use super::ptosc;
use super::session::SessionRoles;
use crate::engine::DdlDialect;
use crate::metrics::{AttemptOutcome, DdlAttempt, TerminatedSession};
use crate::scenario::RunClock;

/// A DDL strategy on MariaDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Naive,
    Retry,
    WaitRetry,
    NowaitRetry,
    Online,
    KillBlockers,
    /// pt-online-schema-change runs the migration.
    PtOsc(ptosc::Settings),
    /// No migration and no report: the load alone (`run --load-only`),
    /// named `load` as PostgreSQL's is; not one of [`STRATEGIES`].
    LoadOnly,
}

/// Every strategy with its name, in the order `compare` runs them.
pub const STRATEGIES: [(Strategy, &str); 8] = [
    (Strategy::Naive, "naive"),
    (Strategy::Retry, "retry"),
    (Strategy::WaitRetry, "wait-retry"),
    (Strategy::NowaitRetry, "nowait-retry"),
    (Strategy::Online, "online"),
    (Strategy::KillBlockers, "kill-blockers"),
    (
        Strategy::PtOsc(ptosc::Settings {
            lock_wait_timeout_s: None,
        }),
        "pt-osc",
    ),
    (
        Strategy::PtOsc(ptosc::Settings {
            lock_wait_timeout_s: Some(1),
        }),
        "pt-osc-1s",
    ),
];

impl Strategy {
    /// The strategy named `name`.
    pub fn from_name(name: &str) -> Option<Strategy> {
        STRATEGIES
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(strategy, _)| *strategy)
    }

    /// The strategy's name.
    pub fn name(self) -> &'static str {
        if self == Strategy::LoadOnly {
            return crate::config::LOAD_ONLY_STRATEGY;
        }
        STRATEGIES
            .iter()
            .find(|(strategy, _)| *strategy == self)
            .map(|(_, name)| *name)
            .expect("every strategy is listed")
    }

    /// How many tries it makes at most.
    fn max_tries(self) -> u32 {
        match self {
            Strategy::Naive | Strategy::Online | Strategy::PtOsc(_) | Strategy::LoadOnly => 1,
            Strategy::Retry | Strategy::WaitRetry => 10,
            Strategy::NowaitRetry => 40,
            Strategy::KillBlockers => 5,
        }
    }

    /// The pause after failed try `attempt` (from 1).
    fn pause_after(self, attempt: u32) -> Duration {
        match self {
            Strategy::NowaitRetry => Duration::from_millis(500),
            Strategy::KillBlockers | Strategy::PtOsc(_) | Strategy::LoadOnly => Duration::ZERO,
            _ => Duration::from_secs(u64::from(attempt.min(5))),
        }
    }

    /// The statements of one try of `ddl` (pt-osc's is the tool's own run).
    pub fn statements(self, ddl: &str) -> Vec<String> {
        let dialect = MariadbDialect;
        match self {
            Strategy::Naive | Strategy::PtOsc(_) | Strategy::LoadOnly => vec![ddl.to_string()],
            Strategy::Retry | Strategy::KillBlockers => {
                dialect.bounded_try(ddl, Some(Duration::from_secs(1)))
            }
            Strategy::WaitRetry => vec![with_wait_clause(ddl, "WAIT 1")],
            Strategy::NowaitRetry => vec![with_wait_clause(ddl, "NOWAIT")],
            Strategy::Online => vec![format!("{ddl}, ALGORITHM=INPLACE, LOCK=NONE")],
        }
    }
}

/// MariaDB's statements for the DDL strategies.
#[derive(Debug, Clone, Copy, Default)]
pub struct MariadbDialect;

impl DdlDialect for MariadbDialect {
    fn bounded_try(&self, ddl: &str, lock_timeout: Option<Duration>) -> Vec<String> {
        let mut statements = Vec::new();
        if let Some(timeout) = lock_timeout {
            // Whole seconds only (the variable is an integer); at least 1 s.
            let seconds = timeout.as_secs_f64().ceil().max(1.0) as u64;
            statements.push(format!("SET SESSION lock_wait_timeout = {seconds}"));
        }
        statements.push(ddl.to_string());
        statements
    }

    fn end_session(&self, session_id: u64) -> String {
        format!("KILL CONNECTION {session_id}")
    }
}

/// `ALTER TABLE t ...` with `clause` (`WAIT n` or `NOWAIT`) after the table's
/// name, where MariaDB's grammar puts it; any other statement unchanged.
pub fn with_wait_clause(ddl: &str, clause: &str) -> String {
    let words: Vec<&str> = ddl.split_whitespace().collect();
    let is_alter_table = words.len() > 3
        && words[0].eq_ignore_ascii_case("ALTER")
        && words[1].eq_ignore_ascii_case("TABLE");
    if !is_alter_table {
        return ddl.to_string();
    }
    let mut rewritten: Vec<&str> = words[..3].to_vec();
    rewritten.push(clause);
    rewritten.extend(&words[3..]);
    rewritten.join(" ")
}

/// Runs `ddl` with `strategy` on `conn` from now until it succeeds, fails
/// for another reason than its lock, runs out of tries, or the clock ends
/// (a try still waiting then is cut off); returns every try.
pub async fn run_ddl(
    conn: &mut mysql_async::Conn,
    killer: Option<Killer>,
    strategy: Strategy,
    ddl: &str,
    clock: RunClock,
) -> Vec<DdlAttempt> {
    let mut killer = killer;
    let mut attempts = Vec::new();
    let dialect = MariadbDialect;
    for attempt in 1..=strategy.max_tries() {
        let started_s = clock.now_s();
        let started = Instant::now();
        let result = tokio::time::timeout_at(
            clock.end().into(),
            run_statements(conn, &strategy.statements(ddl)),
        )
        .await;
        let ended_s = clock.now_s();
        let waited_ms = started.elapsed().as_secs_f64() * 1000.0;
        let (outcome, sqlstate, message) = match result {
            Err(_) => (
                AttemptOutcome::CutOff,
                None,
                "still waiting when the run ended".to_string(),
            ),
            Ok(Ok(())) => (AttemptOutcome::Ok, None, String::new()),
            Ok(Err(err)) => {
                let error = server_error(&err);
                let outcome = match (
                    dialect.is_lock_timeout(&error),
                    attempt == strategy.max_tries(),
                ) {
                    (true, false) => AttemptOutcome::LockTimeout,
                    (true, true) => AttemptOutcome::GaveUp,
                    (false, _) => AttemptOutcome::Error,
                };
                (outcome, Some(failure_kind(&error)), error.to_string())
            }
        };
        let terminated = match (&mut killer, outcome) {
            (Some(killer), AttemptOutcome::LockTimeout) => killer.end_blockers(conn.id()).await,
            _ => Vec::new(),
        };
        attempts.push(DdlAttempt {
            attempt,
            started_s,
            ended_s,
            waited_ms,
            outcome,
            sqlstate,
            message,
            lock: None,
            idle_wait_ms: 0.0,
            terminated,
            wal_bytes: None,
        });
        if outcome != AttemptOutcome::LockTimeout {
            break;
        }
        let pause_until = Instant::now() + strategy.pause_after(attempt);
        if pause_until >= clock.end() {
            break;
        }
        tokio::time::sleep_until(pause_until.into()).await;
    }
    attempts
}

/// The second session `kill-blockers` ends the DDL's blockers from.
pub struct Killer {
    pub conn: mysql_async::Conn,
    /// The table the DDL alters, in the run's database.
    pub table: String,
    /// The roles of the run's sessions, to name the ended ones.
    pub roles: SessionRoles,
}

/// The sessions (but the DDL's, `?` second, and the killer's) that hold a
/// granted metadata lock on the table (`?` first) of this database while a
/// statement or an idle transaction of theirs is older than 1 s.
const BLOCKERS_SQL: &str = "\
SELECT DISTINCT t.PROCESSLIST_ID
FROM performance_schema.metadata_locks m
JOIN performance_schema.threads t ON t.THREAD_ID = m.OWNER_THREAD_ID
JOIN information_schema.PROCESSLIST p ON p.ID = t.PROCESSLIST_ID
WHERE m.OBJECT_TYPE = 'TABLE' AND m.OBJECT_SCHEMA = DATABASE() AND m.OBJECT_NAME = ?
  AND m.LOCK_STATUS = 'GRANTED' AND p.TIME_MS >= 1000
  AND t.PROCESSLIST_ID <> ? AND t.PROCESSLIST_ID <> CONNECTION_ID()";

impl Killer {
    /// Ends every blocker of the DDL's session `ddl_id`; returns those it ended.
    async fn end_blockers(&mut self, ddl_id: u32) -> Vec<TerminatedSession> {
        let ids: Vec<u64> = self
            .conn
            .exec(BLOCKERS_SQL, (self.table.as_str(), ddl_id))
            .await
            .unwrap_or_default();
        let mut ended = Vec::new();
        for id in ids {
            if self
                .conn
                .query_drop(MariadbDialect.end_session(id))
                .await
                .is_ok()
            {
                ended.push(TerminatedSession {
                    role: self.roles.of(id).to_string(),
                    pid: id as u32,
                });
            }
        }
        ended
    }
}

async fn run_statements(
    conn: &mut mysql_async::Conn,
    statements: &[String],
) -> Result<(), mysql_async::Error> {
    for statement in statements {
        conn.query_drop(statement).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_clause_goes_after_the_table_name() {
        assert_eq!(
            with_wait_clause("ALTER TABLE orders ADD COLUMN note text", "WAIT 1"),
            "ALTER TABLE orders WAIT 1 ADD COLUMN note text"
        );
        assert_eq!(
            with_wait_clause("alter table orders add column note text", "NOWAIT"),
            "alter table orders NOWAIT add column note text"
        );
        assert_eq!(with_wait_clause("DROP TABLE t", "NOWAIT"), "DROP TABLE t");
    }

    #[test]
    fn retry_bounds_each_try_in_whole_seconds() {
        assert_eq!(
            Strategy::Retry.statements("ALTER TABLE t ADD COLUMN c int"),
            [
                "SET SESSION lock_wait_timeout = 1",
                "ALTER TABLE t ADD COLUMN c int"
            ]
        );
        assert_eq!(
            MariadbDialect.bounded_try("X", Some(Duration::from_millis(1500))),
            ["SET SESSION lock_wait_timeout = 2", "X"]
        );
        assert_eq!(Strategy::Retry.pause_after(7), Duration::from_secs(5));
        assert_eq!(Strategy::from_name("wait-retry"), Some(Strategy::WaitRetry));
        assert_eq!(
            Strategy::Online.statements("ALTER TABLE t ADD COLUMN c int"),
            ["ALTER TABLE t ADD COLUMN c int, ALGORITHM=INPLACE, LOCK=NONE"]
        );
    }
}
