//! The check's course on one throwaway server, started once:
//!
//! 1. a database of its own (`stallbench_check`) gets the earlier
//!    migrations, then the rows (`--seed`, then `VACUUM ANALYZE`; or
//!    generated, each table VACUUMed and ANALYZEd once its rows are in,
//!    then `VACUUM` for the catalogs);
//! 2. for each new migration, in order: its lock trace (in a transaction
//!    rolled back when it is one transaction; otherwise, as deployed, on a
//!    copy of the database that is dropped after); its run design (load, blocker)
//!    from the trace; each strategy's run on a fresh copy of the database
//!    (`CREATE DATABASE ... TEMPLATE`), so every strategy meets the schema and
//!    rows the earlier migrations left and no run's migration reaches the
//!    next (unless `--measure` leaves it to its trace); then the migration
//!    is applied for real, for the next one.
//!
//! Each measured migration gets a results folder of its own, the files of a
//! `compare` (timeline, attempts, `ddl_locks.csv`, summary, charts): its runs
//! and their database copies are in [`super::runs`]; the rows, in
//! [`super::fill`].

use std::time::Instant;

use tokio_postgres::Client;

use super::apply::{apply, apply_on};
use super::design::{self, TableFacts};
use super::fill::{fill_generated, scope_of};
use super::migrations::{Layout, Migration, Split, read_folder_with, split_new};
use super::runs::{back_to_work_database, copy_work_database, measure};
use super::scope::FillScope;
use crate::choices::Measure;
use crate::config::{CheckConfig, Data, LoadChoice};
use crate::engine::postgres::check_verdict::checked::{CheckRun, CheckedMigration, Outcome};
use crate::engine::postgres::check_verdict::phases::{CheckPhases, MigrationPhases, seconds};
use crate::engine::postgres::check_verdict::sizes::{self, ProductionSizes};
use crate::engine::postgres::database::{Database, error_text};
use crate::engine::postgres::scenario::ddl::trace::{
    TraceEnd, TraceError, TraceStep, rolls_back, trace_steps,
};
use crate::error::Error;
use crate::metrics::lock_trace::{LockMode, TracedStatement};
use crate::results;
use crate::role::Role;
use crate::scenario::Interrupt;

/// The database the earlier migrations build and each new one is applied to.
pub(super) const WORK_DATABASE: &str = "stallbench_check";
/// The copy a strategy's run (or a committed trace) uses, dropped after.
pub(super) const RUN_DATABASE: &str = "stallbench_check_run";

/// The table diesel keeps its applied versions in, as diesel makes it.
const DIESEL_TABLE: &str = "CREATE TABLE IF NOT EXISTS __diesel_schema_migrations (\
     version VARCHAR(50) PRIMARY KEY NOT NULL, \
     run_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)";

/// Runs the check `config` describes; `interrupt` ends it early.
pub async fn run_check(config: &CheckConfig, interrupt: &Interrupt) -> Result<CheckRun, Error> {
    let folder = read_folder_with(&config.dir, &config.folder_rules())?;
    let layout = folder.layout;
    let Split {
        earlier,
        new,
        notes,
        unordered,
    } = split_new(folder, &config.selection)?;
    for note in &notes {
        say(config, format!("note: {note}"));
    }
    say(
        config,
        format!(
            "stallbench check {} ({layout}): {} earlier migrations, new: {}; results in {}",
            config.dir.display(),
            earlier.len(),
            names(&new),
            config.out_dir.display()
        ),
    );
    let mut run = CheckRun {
        layout,
        migrations: Vec::new(),
        earlier: earlier.len(),
        server_start_s: None,
        server_version: String::new(),
        unfilled: Vec::new(),
        left_empty: Vec::new(),
        key_tables: Vec::new(),
        fewer_rows: Vec::new(),
        notes,
        unordered,
        phases: CheckPhases::default(),
    };
    if new.is_empty() || run.unordered.is_some() {
        return Ok(run);
    }
    let sizes = sizes::production_sizes(config).await?;
    let base = design::base_config(config);
    let started = Instant::now();
    let mut target = Database::open(&base).await?;
    run.phases.server_start_s = seconds(started.elapsed());
    run.server_start_s = target.server_start_s;
    run.server_version = target.server_version.clone();
    say(
        config,
        format!(
            "target: {}, PostgreSQL {} (ready in {:.1} s)",
            target.description,
            target.server_version,
            started.elapsed().as_secs_f64()
        ),
    );
    results::create_folder(&config.out_dir)?;
    // Applying and filling can take minutes: a stop drops them mid-way.
    let preparing = prepare_database(
        config,
        &mut target,
        (layout, &earlier, &new),
        &mut run,
        interrupt,
    );
    interrupt.unless_fired(preparing).await?;
    // A table an earlier new migration makes is new when they deploy together:
    // empty, and no traffic uses it yet.
    let client = target.connect(Role::Check).await?;
    let deployed_tables = user_tables(&client).await?;
    if let LoadChoice::Workload(workload) = &config.load {
        super::load_tables::check_workload_tables(&client, workload).await?;
    }
    drop(client);
    // Why a table holds no rows: the generator could not fill it, or the
    // fill's scope left it out (a migration locking it gets no verdict).
    let mut empty_reasons = run.unfilled.clone();
    empty_reasons.extend(run.left_empty.iter().map(|table| {
        format!(
            "{table}: not filled: no new migration locked or named it when they were tried \
             on the empty tables; rerun with --fill all"
        )
    }));
    // New migrations that could not run, so were not applied: a later one
    // that cannot run may miss what they would have made.
    let mut not_applied: Vec<String> = Vec::new();
    for migration in new {
        if let Some(reason) = interrupt.reason() {
            return Err(Error::runtime(reason.to_string()));
        }
        let mut phases = MigrationPhases {
            name: migration.name.clone(),
            ..MigrationPhases::default()
        };
        let mut checked = check_migration(
            config,
            &mut target,
            migration,
            (&empty_reasons, &sizes, &deployed_tables),
            (interrupt, &mut phases),
        )
        .await?;
        let applying = Instant::now();
        match &mut checked.outcome {
            Outcome::NoResult(reason) if checked.statements.is_empty() => {
                if names_something_missing(reason) {
                    reason.push_str(&after_not_applied(&not_applied));
                }
                say(
                    config,
                    format!(
                        "{}: not applied (it could not run), so the next migrations meet the \
                         schema without it",
                        checked.migration.name
                    ),
                );
                not_applied.push(checked.migration.name.clone());
            }
            _ => {
                interrupt
                    .unless_fired(apply(&target, &checked.migration))
                    .await?
            }
        }
        phases.apply_s = seconds(applying.elapsed());
        phases.trace_s = checked.trace_ms / 1000.0;
        run.phases.migrations.push(phases);
        run.migrations.push(checked);
    }
    target.clear_sessions().await?;
    Ok(run)
}

/// The work database: created, the earlier migrations applied, rows in, vacuumed.
async fn prepare_database(
    config: &CheckConfig,
    target: &mut Database,
    (layout, earlier, new): (Layout, &[Migration], &[Migration]),
    run: &mut CheckRun,
    interrupt: &Interrupt,
) -> Result<(), Error> {
    let started = Instant::now();
    target
        .run_on_home_database(&format!("CREATE DATABASE {WORK_DATABASE}"))
        .await?;
    target.use_database(WORK_DATABASE);
    set_search_path(config, target, WORK_DATABASE).await?;
    if layout == Layout::Diesel {
        // diesel makes its table before the first migration; a migration may name it.
        let client = target.connect(Role::Setup).await?;
        client
            .batch_execute(DIESEL_TABLE)
            .await
            .map_err(|err| Error::runtime(format!("{DIESEL_TABLE}: {}", error_text(&err))))?;
    }
    let mut progress = Progress::new(config);
    let client = target.connect(Role::Setup).await?;
    for (index, migration) in earlier.iter().enumerate() {
        if let Some(reason) = interrupt.reason() {
            return Err(Error::runtime(reason.to_string()));
        }
        apply_on(&client, target, migration).await?;
        progress.tick(|elapsed_s| {
            format!(
                "earlier migrations: {} of {} applied in {elapsed_s:.0} s",
                index + 1,
                earlier.len()
            )
        });
    }
    run.phases.earlier_migrations_s = seconds(started.elapsed());
    let filling = Instant::now();
    let scope = scope_of(config, target, new, filling).await?;
    let client = target.connect(Role::Setup).await?;
    match &config.data {
        Data::Seed { path, sql } => client.batch_execute(sql).await.map_err(|err| {
            Error::bad_input(format!(
                "--seed {}: {}; fix the SQL (it runs once the earlier migrations ran)",
                path.display(),
                error_text(&err)
            ))
        })?,
        Data::Rows(rows) => {
            let scope = scope.unwrap_or(FillScope::Every(String::new()));
            fill_generated(config, target, &client, (rows, &scope), run).await?
        }
    }
    // Generated rows were VACUUMed and ANALYZEd as the fill ended, table by
    // table on several connections (a second ANALYZE of every table took
    // 12 s of a 100 s fill on a 50-table project); this VACUUM finds their
    // pages all-visible and skips them, and vacuums the catalogs the
    // migrations wrote (unvacuumed, a traced CREATE TYPE wrote 38 kB of WAL
    // instead of 7 kB).
    let vacuum = match config.data {
        Data::Rows(_) => "VACUUM",
        Data::Seed { .. } => "VACUUM ANALYZE",
    };
    client
        .batch_execute(vacuum)
        .await
        .map_err(|err| Error::runtime(format!("{vacuum}: {}", error_text(&err))))?;
    let fill_s = filling.elapsed().as_secs_f64();
    run.phases.fill_s = seconds(filling.elapsed());
    run.phases.fill_rows_per_s = (run.phases.fill_rows > 0 && fill_s > 0.0)
        .then(|| (run.phases.fill_rows as f64 / fill_s).round());
    say(
        config,
        format!(
            "schema and rows: {} earlier migrations applied and the tables filled in {:.1} s",
            earlier.len(),
            started.elapsed().as_secs_f64()
        ),
    );
    Ok(())
}

/// The schemas the migrations made or use (`public` among them), not the
/// server's own (`pg_catalog`, `information_schema`, `pg_toast`, ...).
pub(super) async fn user_schemas(client: &Client) -> Result<Vec<String>, Error> {
    let rows = client
        .query(
            "SELECT nspname::text FROM pg_namespace \
             WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' ORDER BY 1",
            &[],
        )
        .await
        .map_err(|err| Error::runtime(format!("listing the schemas: {}", error_text(&err))))?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

/// The tables and partitioned tables of the user's schemas, as
/// `format('%I.%I')` names them (as [`TableFacts::sql_name`] does).
async fn user_tables(client: &Client) -> Result<Vec<String>, Error> {
    let rows = client
        .query(
            "SELECT format('%I.%I', n.nspname, c.relname) \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind IN ('r', 'p') AND n.nspname NOT LIKE 'pg\\_%' \
             AND n.nspname <> 'information_schema'",
            &[],
        )
        .await
        .map_err(|err| Error::runtime(format!("listing the tables: {}", error_text(&err))))?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

/// `--search-path`: the database's own `search_path`, as a project sets it
/// (a database setting is not copied with the database, so each copy gets it).
pub(super) async fn set_search_path(
    config: &CheckConfig,
    target: &Database,
    database: &str,
) -> Result<(), Error> {
    let Some(search_path) = &config.search_path else {
        return Ok(());
    };
    target
        .run_on_home_database(&format!(
            "ALTER DATABASE {database} SET search_path TO {search_path}"
        ))
        .await
        .map_err(|err| {
            Error::bad_input(format!(
                "--search-path {search_path}: the server refused it: {err}; give schema names \
                 separated by commas, as SET search_path takes them"
            ))
        })
}

/// Whether a migration's error is the server's "does not exist" (a table,
/// column, type, function or schema missing, by SQLSTATE), the error of a
/// migration that comes after one that did not apply.
fn names_something_missing(reason: &str) -> bool {
    ["42P01", "42703", "42704", "42883", "3F000"]
        .iter()
        .any(|code| reason.contains(&format!("(SQLSTATE {code})")))
}

/// What a migration that could not run follows: ` (after 0002_x.sql, which
/// could not run either and was not applied: what it makes is missing)`.
fn after_not_applied(not_applied: &[String]) -> String {
    match not_applied {
        [] => String::new(),
        [one] => format!(
            " (after {one}, which could not run either and was not applied: what it makes \
             is missing, so fix {one} first)"
        ),
        [first, ..] => format!(
            " (after {} new migrations that could not run and were not applied, the first \
             {first}: what they make is missing, so fix {first} first)",
            not_applied.len()
        ),
    }
}

/// Traces, plans and measures one migration; the work database is as
/// before. `unfilled` names the tables the generator left empty, `sizes` the
/// production sizes given, `deployed` the tables that exist before the new
/// migrations deploy (as [`user_tables`] names them).
async fn check_migration(
    config: &CheckConfig,
    target: &mut Database,
    migration: Migration,
    (unfilled, sizes, deployed): (&[String], &ProductionSizes, &[String]),
    (interrupt, phases): (&Interrupt, &mut MigrationPhases),
) -> Result<CheckedMigration, Error> {
    let started = Instant::now();
    let no_result = |migration, statements, reason| CheckedMigration {
        migration,
        statements,
        trace_ms: started.elapsed().as_secs_f64() * 1000.0,
        existing_tables: Vec::new(),
        estimates: Vec::new(),
        outcome: Outcome::NoResult(reason),
    };
    let statements = match trace_migration(config, target, &migration).await {
        Ok(statements) => statements,
        Err(Error::BadInput(error)) => {
            let reason = format!("it could not run: {error}");
            return Ok(no_result(migration, Vec::new(), reason));
        }
        Err(error) => return Err(error),
    };
    let trace_ms = started.elapsed().as_secs_f64() * 1000.0;
    say(
        config,
        format!(
            "== {}: {} traced in {:.0} ms",
            migration.name,
            match statements.len() {
                1 => "1 statement".to_string(),
                count => format!("{count} statements"),
            },
            trace_ms
        ),
    );
    let client = target.connect(Role::Check).await?;
    let mut tables: Vec<(TableFacts, LockMode)> = Vec::new();
    for (name, mode) in design::locked_tables(&statements) {
        if super::rows::is_tool_table(&name) || config.is_tool_table(&name) {
            continue;
        }
        if let Some(facts) = design::table_facts(&client, &name).await?
            && deployed.contains(&facts.sql_name)
        {
            tables.push((facts, mode));
        }
    }
    let existing_tables: Vec<String> = tables.iter().map(|(facts, _)| facts.name.clone()).collect();
    if let Some(reason) = empty_table(config, &client, &tables, unfilled).await? {
        return Ok(CheckedMigration {
            existing_tables,
            ..no_result(migration, statements, reason)
        });
    }
    let names: Vec<(String, String)> = tables
        .iter()
        .map(|(facts, _)| (facts.name.clone(), facts.sql_name.clone()))
        .collect();
    let measured_rows = sizes::generated_rows(&client, &names).await?;
    let estimates = sizes::estimates(&statements, &measured_rows, sizes);
    let estimates = crate::engine::postgres::check_verdict::per_row::fit_estimates(
        &client,
        target.server_version_num,
        &statements,
        &names,
        estimates,
    )
    .await;
    drop(client);
    let estimates =
        super::calibrate::refit_from_more_rows(config, target, &statements, &names, estimates)
            .await?;
    let flags =
        crate::engine::postgres::check_verdict::verdict::trace_flags(&statements, &existing_tables);
    let runs = match config.measure {
        Measure::All => true,
        Measure::Flagged => !flags.is_empty(),
        Measure::None => false,
    };
    let outcome = match (tables.is_empty(), runs) {
        (true, _) => Outcome::NotMeasured,
        (false, false) => Outcome::Traced(flags),
        (false, true) => {
            let design = match design::design_run(config, &migration, &tables) {
                Ok(design) => design,
                Err(Error::BadInput(error)) => {
                    let reason = format!("it could not be measured: {error}");
                    return Ok(CheckedMigration {
                        existing_tables,
                        estimates,
                        ..no_result(migration, statements, reason)
                    });
                }
                Err(error) => return Err(error),
            };
            Outcome::Measured(Box::new(
                measure(config, target, design, &statements, (interrupt, phases)).await?,
            ))
        }
    };
    Ok(CheckedMigration {
        migration,
        statements,
        trace_ms,
        existing_tables,
        estimates,
        outcome,
    })
}

/// Why a table the migration locks holds no rows, for generated rows (with
/// `--seed` an empty table is the user's choice): a stall measured on an
/// empty table says nothing of the table in production.
async fn empty_table(
    config: &CheckConfig,
    client: &Client,
    tables: &[(TableFacts, LockMode)],
    unfilled: &[String],
) -> Result<Option<String>, Error> {
    if !matches!(config.data, Data::Rows(_)) {
        return Ok(None);
    }
    for (table, _) in tables {
        let sql = format!("SELECT EXISTS (SELECT FROM {})", table.sql_name);
        let has_rows: bool = client
            .query_one(&sql, &[])
            .await
            .map_err(|err| Error::runtime(format!("{sql}: {}", error_text(&err))))?
            .get(0);
        if has_rows {
            continue;
        }
        let bare = table.name.rsplit('.').next().unwrap_or(&table.name);
        let why = unfilled
            .iter()
            .find_map(|entry| entry.strip_prefix(&format!("{bare}: ")))
            .unwrap_or("the generator left it empty; give its rows with --seed FILE");
        return Ok(Some(format!(
            "table {} holds no rows ({why}), so a stall measured on it says nothing of the \
             table in production",
            table.name
        )));
    }
    Ok(None)
}

/// The lock trace of `migration` on the work database: rolled back when it
/// is one transaction, else as deployed on a copy.
async fn trace_migration(
    config: &CheckConfig,
    target: &mut Database,
    migration: &Migration,
) -> Result<Vec<TracedStatement>, Error> {
    let steps: Vec<TraceStep> = migration
        .steps
        .iter()
        .map(|step| TraceStep {
            statements: step.statements.iter().map(|s| s.sql.clone()).collect(),
            in_transaction: step.in_transaction,
        })
        .collect();
    let one_transaction = steps.len() == 1 && rolls_back(&steps, target.server_version_num);
    if !one_transaction {
        copy_work_database(config, target).await?;
    }
    let traced = async {
        let session = target.connect(Role::Trace).await?;
        let watcher = target.connect(Role::TraceWatcher).await?;
        let end = match one_transaction {
            true => TraceEnd::RolledBack,
            false => TraceEnd::Committed,
        };
        match trace_steps(&session, &watcher, &steps, target.server_version_num, end).await {
            Ok(traced) => Ok(traced.statements),
            Err(TraceError::Session(error)) => Err(error),
            Err(TraceError::Statement { sql, message, .. }) => Err(
                super::apply::meta_command_error(migration, &message).unwrap_or_else(|| {
                    Error::bad_input(format!(
                        "{}{}: {message}; the statement cannot run on the schema the earlier \
                         migrations and the rows leave; fix it, or check the earlier \
                         migrations (and --seed)",
                        migration.path.display(),
                        line_of(migration, &sql)
                    ))
                }),
            ),
        }
    }
    .await;
    if !one_transaction {
        back_to_work_database(target).await?;
    }
    traced
}

/// ` line N` of the statement `sql` in `migration`'s file, if found.
fn line_of(migration: &Migration, sql: &str) -> String {
    migration
        .steps
        .iter()
        .flat_map(|step| &step.statements)
        .find(|statement| statement.sql == sql)
        .map_or(String::new(), |statement| {
            format!(" line {}", statement.line)
        })
}

fn names(migrations: &[Migration]) -> String {
    match migrations.is_empty() {
        true => "none".to_string(),
        false => migrations
            .iter()
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Progress lines of a long phase (the earlier migrations, the rows): one
/// every [`Progress::EVERY_S`] at most, so a project of hundreds of
/// migrations says where it is without a line per migration.
pub(super) struct Progress<'a> {
    config: &'a CheckConfig,
    started: Instant,
    last_s: f64,
}

impl<'a> Progress<'a> {
    const EVERY_S: f64 = 5.0;

    pub(super) fn new(config: &'a CheckConfig) -> Progress<'a> {
        Progress {
            config,
            started: Instant::now(),
            last_s: 0.0,
        }
    }

    /// Prints `line(elapsed_s)` if the last line is [`Progress::EVERY_S`] old.
    pub(super) fn tick(&mut self, line: impl FnOnce(f64) -> String) {
        let elapsed_s = self.started.elapsed().as_secs_f64();
        if elapsed_s - self.last_s >= Self::EVERY_S {
            self.last_s = elapsed_s;
            say(self.config, line(elapsed_s));
        }
    }
}

/// A progress line on stderr, unless `--quiet`.
pub(super) fn say(config: &CheckConfig, line: String) {
    if !config.quiet {
        stderrln!("{line}");
    }
}
