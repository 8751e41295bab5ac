//! From a migration's lock trace to the `Config` of its measured run: the
//! same `Config` a `compare` builds from a workload file, so the run goes
//! through the same scenario code.
//!
//! - The load touches every table the trace locked that existed before the
//!   migration: primary-key reads, and, where the migration blocks writes (or
//!   `--load read-write`), single-row updates and inserts. A table keyed by
//!   one integer column is read and written at a random key; any other table
//!   at one of its first rows (`OFFSET` a random count up to 1,000). An
//!   insert copies an existing row (a new key where the key has no default)
//!   `ON CONFLICT DO NOTHING`, so a unique column never makes it fail. The
//!   statements name their columns, so a column the migration adds does not
//!   change their result.
//! - The blocker is the long transaction that conflicts with the strongest
//!   lock found: a report (`SELECT count(*)`, ACCESS SHARE) for a lock that
//!   blocks reads, and also for one that blocks nothing (production's usual
//!   long transaction, which `CREATE INDEX CONCURRENTLY` still waits for); a
//!   writer (ROW EXCLUSIVE, one row updated) for one that blocks writes. The
//!   writer's row is the table's lowest key, which the load never updates.

use tokio_postgres::Client;

use super::migrations::Migration;
use crate::choices::{LoadOn, Side};
use crate::config::Expectation;
use crate::config::ReplicaConfig;
use crate::config::{
    self, BLOCKER_AT, BlockerChoice, BlockerConfig, BlockerKind, CheckConfig, Config, DDL_AT,
    DdlConfig, LoadChoice, LoadConfig, Objects, WeightedScript, WorkloadLoad,
};
use crate::engine::postgres::database::error_text;
use crate::engine::postgres::scenario::ddl::trace::NAME;
use crate::error::Error;
use crate::expect::bounds::Bound;
use crate::metrics::lock_trace::{Blocks, LockMode, TracedStatement, strongest_table_locks};
use crate::script;
use crate::workload::ReplicaFile;

/// How many of a table's first rows a table without an integer key is read and written at.
const OFFSET_ROWS: i64 = 1000;

/// What the catalogs say about a table the load touches.
#[derive(Debug, Clone, PartialEq)]
pub struct TableFacts {
    /// The name as the trace shows it.
    pub name: String,
    /// `schema.table`, quoted.
    pub sql_name: String,
    /// The columns an insert copies (not generated ones), quoted, in order.
    pub columns: Vec<String>,
    /// The single integer primary-key column, with its range.
    pub key: Option<IntegerKey>,
    /// The column an update sets to itself, quoted: the first one outside the key.
    pub update_column: Option<String>,
}

/// A primary key of one integer column.
#[derive(Debug, Clone, PartialEq)]
pub struct IntegerKey {
    /// Quoted.
    pub column: String,
    /// `bigint`, `integer` or `smallint`.
    pub type_name: String,
    /// Whether it fills itself (a default, an identity).
    pub has_default: bool,
    /// The lowest and highest key; 1 and 1 for an empty table.
    pub min: i64,
    pub max: i64,
}

/// Reads the facts of table `name` (as the trace names it); `None` when no
/// such table exists (the migration creates it).
pub async fn table_facts(client: &Client, name: &str) -> Result<Option<TableFacts>, Error> {
    let failed = |err: tokio_postgres::Error| {
        Error::runtime(format!(
            "reading the columns of {name}: {}",
            error_text(&err)
        ))
    };
    let Some(table) = client
        .query_opt(
            &format!(
                "SELECT c.oid::int8, format('%I.%I', n.nspname, c.relname), \
                 (SELECT conkey::int2[] FROM pg_constraint p WHERE p.conrelid = c.oid AND p.contype = 'p') \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE {NAME} = $1 AND c.relkind IN ('r', 'p')"
            ),
            &[&name],
        )
        .await
        .map_err(failed)?
    else {
        return Ok(None);
    };
    let oid: i64 = table.get(0);
    let sql_name: String = table.get(1);
    let primary_key: Vec<i16> = table.get::<_, Option<Vec<i16>>>(2).unwrap_or_default();
    let columns = client
        .query(
            "SELECT quote_ident(attname), attnum, format_type(atttypid, NULL), \
             atthasdef OR attidentity <> '', attgenerated <> '' \
             FROM pg_attribute WHERE attrelid = $1::int8::oid AND attnum > 0 AND NOT attisdropped \
             ORDER BY attnum",
            &[&oid],
        )
        .await
        .map_err(failed)?;
    let insertable: Vec<String> = columns
        .iter()
        .filter(|row| !row.get::<_, bool>(4))
        .map(|row| row.get(0))
        .collect();
    let update_column = columns
        .iter()
        .find(|row| !primary_key.contains(&row.get(1)) && !row.get::<_, bool>(4))
        .or_else(|| columns.iter().find(|row| !row.get::<_, bool>(4)))
        .map(|row| row.get(0));
    let key_row = match primary_key.as_slice() {
        [only] => columns.iter().find(|row| row.get::<_, i16>(1) == *only),
        _ => None,
    };
    let key = match key_row {
        Some(row) if ["bigint", "integer", "smallint"].contains(&row.get::<_, &str>(2)) => {
            let column: String = row.get(0);
            let range = client
                .query_one(
                    &format!("SELECT min({column})::int8, max({column})::int8 FROM {sql_name}"),
                    &[],
                )
                .await
                .map_err(failed)?;
            Some(IntegerKey {
                type_name: row.get(2),
                has_default: row.get(3),
                min: range.get::<_, Option<i64>>(0).unwrap_or(1),
                max: range.get::<_, Option<i64>>(1).unwrap_or(1),
                column,
            })
        }
        _ => None,
    };
    Ok(Some(TableFacts {
        name: name.to_string(),
        sql_name,
        columns: insertable,
        key,
        update_column,
    }))
}

/// The tables a migration's load touches: every table its trace locked, in
/// the order it first locked them, with the strongest lock on each.
pub fn locked_tables(statements: &[TracedStatement]) -> Vec<(String, LockMode)> {
    strongest_table_locks(statements)
        .into_iter()
        .map(|(_, lock)| (lock.relation.clone(), lock.mode))
        .collect()
}

/// A migration's measured run, designed from its trace.
#[derive(Debug, Clone)]
pub struct RunDesign {
    /// The config of the run, for `scenario::run_strategy` and the exporters.
    pub config: Config,
    /// What the strongest lock on a table the load touches blocks.
    pub blocks: Blocks,
    /// The load in words: `4 clients: primary-key reads, updates and inserts on orders`.
    pub load: String,
    /// The blocker in words: `a writer holding ROW EXCLUSIVE on orders for 3 s`.
    pub blocker: String,
    /// `--replica`: the runs with the report on the standby (see
    /// [`replica_runs`]); `None` without `--replica`.
    pub replica: Option<ReplicaDesign>,
}

/// A migration's runs with the report on the hot standby (`--replica`).
#[derive(Debug, Clone)]
pub struct ReplicaDesign {
    /// The config of the runs, for `scenario::run_strategy` and the exporters.
    pub config: Config,
    /// The blocker in words: `a report holding ACCESS SHARE on orders for 10 s on the hot standby`.
    pub blocker: String,
}

/// The design of `migration`'s run: `tables` are the facts of the tables the
/// trace locked that existed before it, each with its strongest lock
/// (at least one table).
pub fn design_run(
    check: &CheckConfig,
    migration: &Migration,
    tables: &[(TableFacts, LockMode)],
) -> Result<RunDesign, Error> {
    let strongest = tables
        .iter()
        .max_by_key(|(_, mode)| (mode.blocks(), *mode))
        .expect("a design has a table");
    let blocks = strongest.1.blocks();
    let writes = match &check.load {
        LoadChoice::Auto => blocks >= Blocks::Writes,
        LoadChoice::ReadWrite => true,
        LoadChoice::Read | LoadChoice::Script(_) | LoadChoice::Workload(_) => false,
    };
    let (scripts, load) = match &check.load {
        LoadChoice::Script(script) => (vec![script.clone()], script.script.name.clone()),
        LoadChoice::Workload(workload) => (workload.scripts.clone(), workload_words(workload)),
        _ => load_scripts(tables, writes)?,
    };
    let rate_tps = match &check.load {
        LoadChoice::Workload(workload) => workload.rate_tps,
        _ => None,
    };
    let load = format!("{} clients: {load}", check.clients);
    let blocker = blocker_of(check, &strongest.0, blocks);
    let blocker_words = match &blocker {
        None => "no blocker".to_string(),
        Some(blocker) => format!(
            "{} holding {} on {} for {} s",
            match blocker.kind {
                BlockerKind::Writer => "a writer",
                _ => "a report",
            },
            match blocker.kind {
                BlockerKind::Writer => "ROW EXCLUSIVE",
                _ => "ACCESS SHARE",
            },
            strongest.0.name,
            crate::export::format::trim_number(blocker.hold.as_secs_f64(), 1)
        ),
    };
    let strategies = check.strategies();
    let expectations = budget_expectations(check, &strategies);
    let config = Config {
        workload_name: migration.name.clone(),
        description: format!("stallbench check: {}", migration.path.display()),
        setup_sql: String::new(),
        reset_sql: String::new(),
        load: LoadConfig {
            clients: check.clients,
            duration: check.duration,
            scripts,
            variables: Vec::new(),
            rate_tps,
            latency_limit: None,
            client_timeout: None,
            pool: None,
            protocol: Default::default(),
            max_tries: 1,
            retry_lock_timeouts: false,
        },
        blocker,
        ddl: Some(DdlConfig {
            at: DDL_AT,
            steps: ddl_steps(migration),
            source: format!("migration {}", migration.name),
        }),
        strategies,
        database: config::DatabaseSpec::Throwaway {
            server: check.server.clone(),
        },
        objects: Objects::OwnDatabase,
        out_dir: check.out_dir.join(results_folder_name(migration)),
        replaced_files: Vec::new(),
        quiet: check.quiet,
        progress: check.progress,
        ci: check.ci,
        expectations,
        observe_locks: true,
        seed: check.seed,
        repeat: 1,
        sweep: None,
        replica: None,
        variants: Vec::new(),
        invariants: Vec::new(),
    };
    let replica = check
        .replica
        .then(|| replica_runs(&config, &strongest.0, check));
    Ok(RunDesign {
        config,
        blocks,
        load,
        blocker: blocker_words,
        replica,
    })
}

/// The standby of a check with `--replica`: the load's clients on both
/// servers (the standby's run the scripts that only read), the blocker on
/// `blocker_on`, and `hot_standby_feedback = on`. Without the feedback, the
/// primary's writes prune rows the report on the standby still sees, and
/// the standby's replay stops behind the report for that snapshot conflict
/// before it reaches the migration's lock: the lag shows, the lock's stall
/// of the readers depends on which comes first. With it, what replay waits
/// for is the lock, the check's subject, every time.
fn check_standby(blocker_on: Side) -> ReplicaConfig {
    let file = ReplicaFile {
        hot_standby_feedback: Some(true),
        ..Default::default()
    };
    ReplicaConfig {
        load_on: LoadOn::Both,
        blocker_on,
        standby_settings: vec!["hot_standby_feedback=on".to_string()],
        file,
        url: None,
    }
}

/// The config of a migration's runs with the report on the hot standby
/// (`--replica`): `primary`'s strategies and load, the readers on both
/// servers, and a report on `table` held as long on the standby (a standby
/// is read-only, and only ACCESS EXCLUSIVE is replayed there, which a report
/// conflicts with), unless the check has no blocker; the migration starts
/// [`REPORT_AGE`] after the report (at most half its hold). No budgets as
/// expectations: the gate judges the replica's stall (`check_verdict::replica`). Its
/// folder is `replica` in the migration's.
pub fn replica_runs(primary: &Config, table: &TableFacts, check: &CheckConfig) -> ReplicaDesign {
    let blocker = primary.blocker.as_ref().map(|_| BlockerConfig {
        kind: BlockerKind::Report,
        at: BLOCKER_AT,
        hold: check.hold,
        sql: format!("SELECT count(*) FROM {}", table.sql_name),
        source: "check's report on the standby".to_string(),
    });
    let words = match &blocker {
        None => "no blocker".to_string(),
        Some(blocker) => format!(
            "a report holding ACCESS SHARE on {} for {} s on the hot standby",
            table.name,
            crate::export::format::trim_number(blocker.hold.as_secs_f64(), 1)
        ),
    };
    // The migration starts once the report is older than `replica-aware`'s
    // `older_than` (1 s), as production's long report is, and before it ends.
    let ddl = primary.ddl.clone().map(|ddl| DdlConfig {
        at: BLOCKER_AT + (check.hold / 2).min(REPORT_AGE),
        ..ddl
    });
    let config = Config {
        blocker,
        ddl,
        expectations: Vec::new(),
        out_dir: primary.out_dir.join(REPLICA_FOLDER),
        replica: Some(check_standby(Side::Replica)),
        ..primary.clone()
    };
    ReplicaDesign {
        config,
        blocker: words,
    }
}

/// The folder of a migration's runs with the report on the standby, in the migration's.
pub const REPLICA_FOLDER: &str = "replica";

/// How old the report on the standby is when the migration starts (at most
/// half its hold).
const REPORT_AGE: std::time::Duration = std::time::Duration::from_millis(1500);

/// A workload file's load in words: `--load w.toml: 01-read (weight 800),
/// 02-update (weight 200), 450 transactions/s`.
fn workload_words(workload: &WorkloadLoad) -> String {
    let scripts: Vec<String> = workload
        .scripts
        .iter()
        .map(|weighted| format!("{} (weight {})", weighted.script.name, weighted.weight))
        .collect();
    let pace = match workload.rate_tps {
        Some(rate) => format!(
            "{} transactions/s",
            crate::export::format::trim_number(rate, 1)
        ),
        None => "closed loop".to_string(),
    };
    format!("{}: {}, {pace}", workload.source, scripts.join(", "))
}

/// The name of a migration's results folder: its name without `.sql`
/// (`0003_orders_index_created_at`).
pub fn results_folder_name(migration: &Migration) -> String {
    let name = migration
        .name
        .strip_suffix(".sql")
        .unwrap_or(&migration.name);
    name.replace(['/', '\\'], "_")
}

/// The config `Database::open` sizes the throwaway server from: a run as large
/// as any migration's (its load, a blocker, the DDL, both strategies).
pub fn base_config(check: &CheckConfig) -> Config {
    let table = TableFacts {
        name: "t".into(),
        sql_name: "t".into(),
        columns: Vec::new(),
        key: None,
        update_column: None,
    };
    let migration = Migration {
        name: "check".into(),
        path: check.dir.clone(),
        version: String::new(),
        steps: Vec::new(),
    };
    let config = design_run(check, &migration, &[(table, LockMode::AccessExclusive)])
        .expect("the base design builds")
        .config;
    // With `--replica` the server starts with a standby, sized for clients on
    // both; not for a check that runs nothing under traffic (`--trace-only`).
    let standby = check.replica && check.measure != crate::choices::Measure::None;
    Config {
        replica: standby.then(|| check_standby(Side::Primary)),
        ..config
    }
}

/// The migration's steps as DDL steps: a transaction's statements joined in
/// one step (run as one multi-statement query, one implicit transaction);
/// each statement outside a transaction a step of its own.
pub fn ddl_steps(migration: &Migration) -> Vec<String> {
    let mut steps = Vec::new();
    for step in &migration.steps {
        let statements = step
            .statements
            .iter()
            .map(|statement| statement.sql.clone());
        match step.in_transaction {
            true => steps.push(statements.collect::<Vec<_>>().join(";\n")),
            false => steps.extend(statements),
        }
    }
    steps
}

/// The budgets as expectations on each strategy (the deploy strategy's decide the verdict).
fn budget_expectations(
    check: &CheckConfig,
    strategies: &[crate::strategy::NamedStrategy],
) -> Vec<Expectation> {
    let budgets = &check.budgets;
    let bounds: Vec<(Bound, &str)> = [
        Some((Bound::MaxLongestStallS(budgets.max_stall_s), "--max-stall")),
        budgets
            .max_p99_ms
            .map(|ms| (Bound::MaxP99Ms(ms), "--max-p99")),
        budgets
            .max_failed
            .map(|n| (Bound::MaxFailed(n), "--max-failed")),
    ]
    .into_iter()
    .flatten()
    .collect();
    strategies
        .iter()
        .flat_map(|strategy| {
            bounds.iter().map(|(bound, flag)| Expectation {
                strategy: strategy.name.clone(),
                bound: bound.clone(),
                source: format!("check {flag}"),
            })
        })
        .collect()
}

/// The load's scripts over `tables` (reads; updates and inserts with
/// `writes`), one each per table, with the load in words.
fn load_scripts(
    tables: &[(TableFacts, LockMode)],
    writes: bool,
) -> Result<(Vec<WeightedScript>, String), Error> {
    let mut scripts = Vec::new();
    for (table, _) in tables {
        scripts.push(script_of(
            &format!("read {}", table.name),
            &read_sql(table),
        )?);
        if writes {
            if let Some(sql) = update_sql(table) {
                scripts.push(script_of(&format!("update {}", table.name), &sql)?);
            }
            scripts.push(script_of(
                &format!("insert {}", table.name),
                &insert_sql(table),
            )?);
        }
    }
    let names: Vec<&str> = tables
        .iter()
        .map(|(table, _)| table.name.as_str())
        .collect();
    let what = match writes {
        true => "primary-key reads, single-row updates and inserts",
        false => "primary-key reads",
    };
    Ok((scripts, format!("{what} on {}", names.join(", "))))
}

fn script_of(name: &str, text: &str) -> Result<WeightedScript, Error> {
    let mut script = script::parse(name, text).map_err(|err| {
        Error::runtime(format!(
            "the load script {name} does not parse: {err}\n{text}"
        ))
    })?;
    script.name = name.to_string();
    Ok(WeightedScript {
        script,
        weight: 1,
        text: text.to_string(),
        source: format!("the load script {name}"),
    })
}

/// `\set` lines choosing a row, and the condition that picks it; the writer's
/// row (the lowest key) is left out when the table has more than one.
fn row_choice(table: &TableFacts) -> (String, String) {
    match &table.key {
        Some(key) => {
            let low = if key.max > key.min {
                key.min + 1
            } else {
                key.min
            };
            (
                format!("\\set k random({low}, {})\n", key.max),
                format!("{} = :k", key.column),
            )
        }
        None => (
            format!("\\set o random(0, {})\n", OFFSET_ROWS - 1),
            format!(
                "ctid = (SELECT ctid FROM {} OFFSET :o LIMIT 1)",
                table.sql_name
            ),
        ),
    }
}

fn column_list(table: &TableFacts) -> String {
    match table.columns.is_empty() {
        true => "1".to_string(),
        false => table.columns.join(", "),
    }
}

fn read_sql(table: &TableFacts) -> String {
    let (set, condition) = row_choice(table);
    format!(
        "{set}SELECT {} FROM {} WHERE {condition};\n",
        column_list(table),
        table.sql_name
    )
}

fn update_sql(table: &TableFacts) -> Option<String> {
    let column = table.update_column.as_ref()?;
    let (set, condition) = row_choice(table);
    Some(format!(
        "{set}UPDATE {} SET {column} = {column} WHERE {condition};\n",
        table.sql_name
    ))
}

/// A copy of a chosen row: the key left to its default, or a new one above the highest.
fn insert_sql(table: &TableFacts) -> String {
    let (set, condition) = row_choice(table);
    let Some(key) = &table.key else {
        return format!(
            "{set}INSERT INTO {0} ({1}) SELECT {1} FROM {0} WHERE {condition} ON CONFLICT DO NOTHING;\n",
            table.sql_name,
            table.columns.join(", ")
        );
    };
    let others: Vec<&String> = table.columns.iter().filter(|c| **c != key.column).collect();
    let others = others
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if key.has_default {
        return format!(
            "{set}INSERT INTO {0} ({others}) SELECT {others} FROM {0} WHERE {condition} \
             ON CONFLICT DO NOTHING;\n",
            table.sql_name
        );
    }
    let separator = if others.is_empty() { "" } else { ", " };
    format!(
        "{set}\\set n random({low}, {high})\n\
         INSERT INTO {table} ({key}{separator}{others}) SELECT CAST(:n AS {key_type}){separator}{others} \
         FROM {table} WHERE {condition} ON CONFLICT DO NOTHING;\n",
        table = table.sql_name,
        key = key.column,
        key_type = key.type_name,
        low = key.max.saturating_add(1),
        high = key.max.saturating_add(1_000_000_000),
    )
}

/// The blocker for a run whose strongest lock blocks `blocks`, on `table`.
fn blocker_of(check: &CheckConfig, table: &TableFacts, blocks: Blocks) -> Option<BlockerConfig> {
    let kind = match (check.blocker, blocks) {
        (BlockerChoice::None, _) => return None,
        (BlockerChoice::Report, _) => BlockerKind::Report,
        (BlockerChoice::Writer, _) => BlockerKind::Writer,
        (BlockerChoice::Auto, Blocks::Writes) => BlockerKind::Writer,
        (BlockerChoice::Auto, Blocks::ReadsAndWrites | Blocks::Nothing) => BlockerKind::Report,
    };
    let sql = match (kind, &table.key, &table.update_column) {
        (BlockerKind::Writer, Some(key), Some(column)) => format!(
            "UPDATE {} SET {column} = {column} WHERE {} = {}",
            table.sql_name, key.column, key.min
        ),
        (BlockerKind::Writer, _, _) => {
            format!("LOCK TABLE {} IN ROW EXCLUSIVE MODE", table.sql_name)
        }
        _ => format!("SELECT count(*) FROM {}", table.sql_name),
    };
    Some(BlockerConfig {
        kind,
        at: BLOCKER_AT,
        hold: check.hold,
        sql,
        source: "check's report".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn orders(has_default: bool) -> TableFacts {
        TableFacts {
            name: "orders".into(),
            sql_name: "stallbench.orders".into(),
            columns: vec!["id".into(), "customer_id".into(), "total".into()],
            key: Some(IntegerKey {
                column: "id".into(),
                type_name: "bigint".into(),
                has_default,
                min: 1,
                max: 100,
            }),
            update_column: Some("customer_id".into()),
        }
    }

    #[test]
    fn the_load_reads_and_writes_by_key_and_never_touches_the_writers_row() {
        assert_eq!(
            read_sql(&orders(true)),
            "\\set k random(2, 100)\nSELECT id, customer_id, total FROM stallbench.orders WHERE id = :k;\n"
        );
        assert_eq!(
            update_sql(&orders(true)).unwrap(),
            "\\set k random(2, 100)\nUPDATE stallbench.orders SET customer_id = customer_id WHERE id = :k;\n"
        );
        assert_eq!(
            insert_sql(&orders(true)),
            "\\set k random(2, 100)\nINSERT INTO stallbench.orders (customer_id, total) SELECT \
             customer_id, total FROM stallbench.orders WHERE id = :k ON CONFLICT DO NOTHING;\n"
        );
        assert_eq!(
            insert_sql(&orders(false)),
            "\\set k random(2, 100)\n\\set n random(101, 1000000100)\nINSERT INTO stallbench.orders \
             (id, customer_id, total) SELECT CAST(:n AS bigint), customer_id, total FROM \
             stallbench.orders WHERE id = :k ON CONFLICT DO NOTHING;\n"
        );
        let (scripts, words) = load_scripts(&[(orders(true), LockMode::Share)], true).unwrap();
        assert_eq!(scripts.len(), 3);
        assert_eq!(
            words,
            "primary-key reads, single-row updates and inserts on orders"
        );
    }

    /// `--replica`: the runs on the standby hold a report there (a writer
    /// cannot run on a standby) that is 1.5 s old when the migration starts,
    /// load both servers, judge no expectation, and write to `replica/`.
    #[test]
    fn the_replica_runs_hold_a_report_on_the_standby_and_load_both_servers() {
        let dir = tempfile::tempdir().unwrap();
        let args = crate::cli::CheckArgs {
            replica: true,
            out: Some(dir.path().join("out")),
            ..Default::default()
        };
        let check = CheckConfig::new(dir.path(), &args).unwrap();
        let migration = Migration {
            name: "0002_index.sql".into(),
            path: dir.path().join("0002_index.sql"),
            version: "0002".into(),
            steps: Vec::new(),
        };
        let design = design_run(&check, &migration, &[(orders(true), LockMode::Share)]).unwrap();
        assert_eq!(design.config.replica, None, "the primary's runs as before");
        assert_eq!(
            design.config.blocker.as_ref().unwrap().kind,
            BlockerKind::Writer
        );
        let replica = design.replica.unwrap();
        let config = &replica.config;
        let blocker = config.blocker.as_ref().unwrap();
        assert_eq!(blocker.kind, BlockerKind::Report);
        assert_eq!(blocker.sql, "SELECT count(*) FROM stallbench.orders");
        assert_eq!(
            config.ddl.as_ref().unwrap().at,
            std::time::Duration::from_millis(2500)
        );
        let standby = config.replica.as_ref().unwrap();
        assert_eq!(
            (standby.load_on, standby.blocker_on),
            (LoadOn::Both, Side::Replica)
        );
        assert_eq!(standby.standby_settings, ["hot_standby_feedback=on"]);
        assert!(config.expectations.is_empty());
        assert!(!design.config.expectations.is_empty());
        assert_eq!(config.out_dir, design.config.out_dir.join("replica"));
        assert_eq!(
            replica.blocker,
            "a report holding ACCESS SHARE on orders for 4 s on the hot standby"
        );
        let base = base_config(&check);
        assert_eq!(base.replica.as_ref().map(|r| r.load_on), Some(LoadOn::Both));
        let trace_only = CheckConfig {
            measure: crate::choices::Measure::None,
            ..check.clone()
        };
        assert_eq!(
            base_config(&trace_only).replica,
            None,
            "no standby to trace"
        );
        let without = CheckConfig {
            replica: false,
            ..check
        };
        assert!(
            design_run(&without, &migration, &[(orders(true), LockMode::Share)])
                .unwrap()
                .replica
                .is_none()
        );
        assert_eq!(base_config(&without).replica, None);
    }

    #[test]
    fn a_table_without_an_integer_key_is_read_at_one_of_its_first_rows() {
        let table = TableFacts {
            key: None,
            ..orders(true)
        };
        assert_eq!(
            read_sql(&table),
            "\\set o random(0, 999)\nSELECT id, customer_id, total FROM stallbench.orders WHERE \
             ctid = (SELECT ctid FROM stallbench.orders OFFSET :o LIMIT 1);\n"
        );
    }
}
