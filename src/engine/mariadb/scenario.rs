//! One strategy on MariaDB on one clock: the load, the report that holds
//! the table's shared metadata lock, the DDL injector and the lock observer
//! run side by side, and what they measured becomes the same
//! `StrategyReport` a PostgreSQL run produces (`scenario::assemble_report`),
//! so every file, ranking and verdict downstream is made the same way.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use mysql_async::prelude::Queryable;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::ddl::{Killer, Strategy, run_ddl};
use super::load::open_load;
use super::observer::observe;
use super::ptosc;
use super::script::LoadScript;
use super::session::{SessionRoles, connect, run_all};
use crate::choices::BlockerKind;
use crate::metrics::{BlockerWindow, DdlAttempt, StrategyReport};
use crate::role::Role;
use crate::scenario::blocker::BlockerResult;
use crate::scenario::{Measured, RunClock, ServerNotes, assemble_report};

/// The database the harness creates and drops on the server.
pub const DATABASE: &str = "stallbench";

/// The outage on MariaDB, as data.
#[derive(Debug, Clone)]
pub struct Outage {
    /// Statements that create and fill the tables, run before each strategy.
    pub setup: Vec<String>,
    /// The scripts each load client runs, one drawn by weight per transaction.
    pub load: Vec<LoadScript>,
    pub clients: usize,
    pub duration: Duration,
    /// The report: its statement, when it starts and how long it holds its transaction open.
    pub report_sql: String,
    pub report_at: Duration,
    pub report_hold: Duration,
    /// The migration and when it starts.
    pub ddl: String,
    pub ddl_at: Duration,
}

impl Outage {
    /// The bundled `mariadb-add-column` (workloads/mariadb-add-column.toml):
    /// the reference experiment translated, 4 readers, a report holding
    /// `orders` for 12 s from 4 s, `ALTER TABLE orders ADD COLUMN note text` at 6 s.
    pub fn add_column() -> Outage {
        super::workload::bundled("mariadb-add-column")
            .expect("mariadb-add-column is bundled")
            .outage
    }
}

/// Options for the harness's sessions on the server at `server_opts`, in its database.
pub fn in_database(server_opts: &mysql_async::Opts) -> mysql_async::Opts {
    mysql_async::OptsBuilder::from_opts(server_opts.clone())
        .db_name(Some(DATABASE))
        .into()
}

/// The comment of the database the harness creates: its mark of ownership
/// (on an existing server it refuses a `stallbench` database without it).
pub const DATABASE_MARK: &str = "made by stallbench; dropped at the end of its run";

/// Creates the harness's database (again) on the server at `server_opts`,
/// marked as the harness's.
pub async fn create_database(server_opts: &mysql_async::Opts) -> anyhow::Result<()> {
    let mut conn = mysql_async::Conn::new(server_opts.clone())
        .await
        .context("connecting to MariaDB")?;
    conn.query_drop(format!("DROP DATABASE IF EXISTS {DATABASE}"))
        .await?;
    conn.query_drop(format!(
        "CREATE DATABASE {DATABASE} COMMENT '{DATABASE_MARK}'"
    ))
    .await?;
    conn.disconnect().await?;
    Ok(())
}

/// Runs `strategy` of `outage` on the server at `server_opts` (its tables
/// set up first) and returns its report as repeat `repeat`; the load alone
/// (no report, no DDL) for [`Strategy::LoadOnly`].
pub async fn run_strategy(
    server_opts: &mysql_async::Opts,
    outage: &Outage,
    strategy: Strategy,
    repeat: u32,
) -> anyhow::Result<StrategyReport> {
    let opts = in_database(server_opts);
    let roles = SessionRoles::default();
    let mut setup = connect(&opts, Role::Setup, &roles).await?;
    run_all(&mut setup, &outage.setup)
        .await
        .context("setting up the MariaDB tables")?;
    setup.disconnect().await?;
    let observer_conn = connect(&opts, Role::Observer, &roles).await?;
    let sessions = match strategy {
        Strategy::LoadOnly => None,
        _ => Some(Sessions::open(&opts, outage, strategy, &roles).await?),
    };
    let tool = tool_of(strategy, server_opts, &outage.ddl)?;
    let load = open_load(&opts, &roles, outage.clients, &outage.load).await?;

    let clock = RunClock::start(outage.duration);
    let (stop_tx, stop_rx) = watch::channel(false);
    let observer = tokio::spawn(observe(
        observer_conn,
        DATABASE.to_string(),
        roles.clone(),
        clock,
        stop_rx,
    ));
    let tasks = sessions.map(|sessions| sessions.spawn(outage, strategy, tool, &roles, clock));
    let (recorder, lost_connections) = load.run(clock).await?;
    let _ = stop_tx.send(true);
    let (blocker, attempts) = match tasks {
        Some((blocker, ddl)) => (Some(blocker.await?), ddl.await?),
        None => (None, Vec::new()),
    };
    let observed = observer.await?;
    let measured = Measured {
        duration_s: clock.duration_s(),
        started_unix_s: clock.started_unix_s(),
        recorder,
        replica_recorder: None,
        lock_waiters: observed.lock_waiters,
        behind_schedule: Vec::new(),
        lost_connections,
        blocker,
        attempts,
        ddl_polls: None,
        lock_per_second: observed.per_second,
        lock_samples: observed.samples,
        lock_worst: observed.worst,
        observer_gaps: Vec::new(),
        replica_samples: None,
        interrupted: None,
        interrupted_at_s: None,
        unfinished_ages_us: Vec::new(),
        pool: None,
        rows_written: None,
    };
    Ok(assemble_report(
        strategy.name(),
        repeat,
        measured,
        ServerNotes::default(),
    ))
}

/// The sessions of the report and the DDL (and `kill-blockers`' killer),
/// opened before the clock starts.
struct Sessions {
    blocker: mysql_async::Conn,
    ddl: mysql_async::Conn,
    killer: Option<Killer>,
}

/// The report's task and the DDL injector's, which returns its attempts.
type Tasks = (JoinHandle<BlockerResult>, JoinHandle<Vec<DdlAttempt>>);

impl Sessions {
    async fn open(
        opts: &mysql_async::Opts,
        outage: &Outage,
        strategy: Strategy,
        roles: &SessionRoles,
    ) -> anyhow::Result<Sessions> {
        let blocker = connect(opts, Role::Blocker(BlockerKind::Report), roles).await?;
        let ddl = connect(opts, Role::Ddl, roles).await?;
        let killer = match strategy {
            Strategy::KillBlockers => Some(Killer {
                conn: connect(opts, Role::Killer, roles).await?,
                table: table_of(&outage.ddl),
                roles: roles.clone(),
            }),
            _ => None,
        };
        Ok(Sessions {
            blocker,
            ddl,
            killer,
        })
    }

    /// Starts the report and, at the DDL's time, `strategy` (or `tool`,
    /// pt-online-schema-change with its arguments).
    fn spawn(
        self,
        outage: &Outage,
        strategy: Strategy,
        tool: Option<(PathBuf, Vec<String>)>,
        roles: &SessionRoles,
        clock: RunClock,
    ) -> Tasks {
        let Sessions {
            blocker,
            mut ddl,
            killer,
        } = self;
        let report = tokio::spawn(run_report(blocker, outage.clone(), clock));
        let ddl_sql = outage.ddl.clone();
        let ddl_at = clock.started_at() + outage.ddl_at;
        let roles = roles.clone();
        let injector = tokio::spawn(async move {
            tokio::time::sleep_until(ddl_at.into()).await;
            let attempts = match tool {
                Some((program, args)) => {
                    let table = ptosc::table_of(&ddl_sql);
                    let run = ptosc::run(&program, &args, table, &mut ddl, &roles, clock);
                    vec![run.await]
                }
                None => run_ddl(&mut ddl, killer, strategy, &ddl_sql, clock).await,
            };
            let _ = ddl.disconnect().await;
            attempts
        });
        (report, injector)
    }
}

/// pt-online-schema-change and its arguments for a `pt-osc` strategy, on
/// the run's server (its socket, else its host and port); `None` for the
/// other strategies.
fn tool_of(
    strategy: Strategy,
    server_opts: &mysql_async::Opts,
    ddl: &str,
) -> anyhow::Result<Option<(PathBuf, Vec<String>)>> {
    let Strategy::PtOsc(settings) = strategy else {
        return Ok(None);
    };
    let program = ptosc::find_program(strategy.name())?;
    if server_opts.pass().is_some() {
        anyhow::bail!(
            "{}: a --db-url with a password is not passed to {} yet (it would show on its \
             command line); use a user without one on the server's socket",
            strategy.name(),
            ptosc::PROGRAM
        );
    }
    let args = ptosc::arguments(ddl, server_opts, DATABASE, settings).ok_or_else(|| {
        anyhow::anyhow!(
            "{}: {ddl:?} is not an ALTER TABLE of one table, which is all {} runs",
            strategy.name(),
            ptosc::PROGRAM
        )
    })?;
    Ok(Some((program, args)))
}

/// The table of `ALTER TABLE <table> ...` (empty for another statement).
fn table_of(ddl: &str) -> String {
    let words: Vec<&str> = ddl.split_whitespace().collect();
    match words.as_slice() {
        [alter, table, name, ..]
            if alter.eq_ignore_ascii_case("ALTER") && table.eq_ignore_ascii_case("TABLE") =>
        {
            name.trim_matches('`').to_string()
        }
        _ => String::new(),
    }
}

/// Waits until the report's start, then `BEGIN; <sql>; SELECT SLEEP(hold);
/// COMMIT`: the shared metadata lock on the table is held until the commit.
async fn run_report(mut conn: mysql_async::Conn, outage: Outage, clock: RunClock) -> BlockerResult {
    tokio::time::sleep_until((clock.started_at() + outage.report_at).into()).await;
    let started_s = clock.now_s();
    let began = Instant::now();
    let statements = [
        "BEGIN".to_string(),
        outage.report_sql.clone(),
        format!("SELECT SLEEP({})", outage.report_hold.as_secs_f64()),
        "COMMIT".to_string(),
    ];
    let error = run_all(&mut conn, &statements)
        .await
        .err()
        .map(|err| format!("the report failed: {err}"));
    let ended_s = started_s + began.elapsed().as_secs_f64();
    let _ = conn.disconnect().await;
    BlockerResult {
        window: BlockerWindow { started_s, ended_s },
        error,
    }
}
