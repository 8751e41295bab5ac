//! Rows for the schemas the earlier migrations built, generated from the
//! catalogs: made on the client and sent with `COPY ... FROM STDIN`, one
//! table at a time per connection, parents first, so the server only parses
//! and writes them (as `pgbench -i` does). The tables whose parents are all
//! filled go in at once, one per connection, and each table's indexes that
//! nothing depends on and foreign key checks are set aside while its rows
//! go in ([`upkeep`]). The generator is written here rather than taken from
//! a crate: the rows must meet the schema the migrations made (unique keys,
//! foreign keys to the parents' existing rows, the CHECKs it reads, each
//! type's range), which no fake-data crate reads.
//!
//! - [`catalog`]: the schema's tables, columns, types, keys and CHECKs;
//! - [`order`]: parents before children, cycles broken or named;
//! - [`recipe`]: what each column gets, and how many rows fit;
//! - [`values`]: the kind of value each column type takes;
//! - [`text`]: a value of each kind as text, and COPY's escapes;
//! - [`generate`]: a table's rows as COPY text;
//! - [`parents`]: the parents' keys, read once each;
//! - [`send`]: the rows streamed by COPY;
//! - [`checks`]: the CHECKs of one column it can satisfy (`IN` lists, bounds);
//! - [`upkeep`]: indexes built after the rows, foreign keys checked once;
//! - [`detach`]: a parent's incoming keys dropped while its children are empty.
//!
//! A table the generator cannot fill (a CHECK its values break, a type it
//! does not know, a cycle of NOT NULL foreign keys) is skipped with the
//! reason and the fix, in one transaction of its own, and the others go on.
//! A table that already holds rows (inserted by a migration) keeps them and
//! gets no more. A migration tool's own table ([`TOOL_TABLES`]) gets none.
//! Every table is VACUUMed and ANALYZEd at the end, several at once; a
//! connection whose step has no table left for it ANALYZEs the tables
//! filled before while the others finish theirs.

mod binary;
mod catalog;
mod checks;
mod detach;
mod generate;
mod order;
mod parents;
mod recipe;
mod send;
mod sql_text;
mod text;
mod upkeep;
mod values;
mod wanted;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use serde::Serialize;
use tokio_postgres::Client;

use crate::config::RowCounts;
use crate::engine::postgres::check::scope::FillScope;
use crate::error::Error;
use catalog::{Catalog, CatalogTable};
use generate::ParentKeys;
use parents::ParentCache;
use recipe::{RecipeInput, TableRecipe};
use wanted::Want;

/// What the generator did with one table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableFill {
    /// The table's name in the schema.
    pub table: String,
    /// Rows the generator inserted.
    pub rows: u64,
    /// Rows the table held before (from the migrations), kept as they are.
    pub kept: u64,
    /// Why the table got no rows, and the fix (`--seed FILE`).
    pub skipped: Option<String>,
    /// Why it got fewer rows than asked for (a unique key with too few values).
    pub note: Option<String>,
    /// The rows it was asked for: `--rows`, or fewer for a parent only its
    /// children's foreign keys need ([`wanted::KEY_ROWS`]).
    pub asked: u64,
    /// Filled only for its children's foreign keys, with fewer rows than
    /// `--rows` asks (`asked` is then that fewer).
    pub for_keys: bool,
}

/// Tables a migration tool keeps its applied versions in (diesel's, which
/// the check makes as diesel does, and the ones a tool's generated SQL
/// writes to, such as Alembic's `UPDATE alembic_version`): never filled
/// and never in the load, since they hold no data the traffic reads (and a
/// project may forbid writes to them by trigger).
pub const TOOL_TABLES: [&str; 11] = [
    "__diesel_schema_migrations",
    "_sqlx_migrations",
    "_prisma_migrations",
    "alembic_version",
    "django_migrations",
    "schema_migrations",
    "ar_internal_metadata",
    "knex_migrations",
    "knex_migrations_lock",
    "flyway_schema_history",
    "goose_db_version",
];

/// Whether `name` (bare or `schema.table`, as the trace names it) is a
/// migration tool's own table.
pub fn is_tool_table(name: &str) -> bool {
    let bare = name.rsplit('.').next().unwrap_or(name).trim_matches('"');
    TOOL_TABLES.contains(&bare)
}

/// The fix a skipped table's reason ends with.
const SEED_FIX: &str = "give its rows with --seed FILE (your own SQL)";

/// Fills every table of `schemas` with generated rows: [`fill_tables_in`]
/// with every table in its scope, and what it did with each.
pub async fn fill_tables(
    clients: &[&Client],
    schemas: &[&str],
    counts: &RowCounts,
    seed: u64,
    on_filled: &mut dyn FnMut(&TableFill, usize, usize),
) -> Result<Vec<TableFill>, Error> {
    let every = FillScope::Every("every table".to_string());
    let filled = fill_tables_in(clients, schemas, counts, seed, &every, on_filled).await?;
    Ok(filled.fills)
}

/// What a fill did: each table's outcome in the fill order, and the tables
/// its scope left empty.
#[derive(Debug, Clone, Default)]
pub struct Filled {
    pub fills: Vec<TableFill>,
    /// The tables outside the scope (their names in the schema), not
    /// filled, in the catalog's order.
    pub left_empty: Vec<String>,
}

/// Fills the tables of `schemas` that `scope` asks for (with the parents
/// their foreign keys need: [`wanted`]) with generated rows, as many as
/// `counts` gives each (parents first; fewer in a parent only the keys
/// need, [`wanted::planned_rows`]), the same rows for the same `seed`;
/// returns each table's outcome in the fill order, and gives each to
/// `on_filled` as it is done with how many are done and how many there are
/// (for progress lines). The tables of one step of the order (whose parents
/// are all filled) are filled at once, one on each of `clients`
/// (connections to the same database). Fails only when the server does
/// (runtime).
pub async fn fill_tables_in(
    clients: &[&Client],
    schemas: &[&str],
    counts: &RowCounts,
    seed: u64,
    scope: &FillScope,
    on_filled: &mut dyn FnMut(&TableFill, usize, usize),
) -> Result<Filled, Error> {
    let first = clients
        .first()
        .ok_or_else(|| Error::runtime("filling the tables: no connection to fill them on"))?;
    let catalog = catalog::read_catalog(first, schemas).await.map_err(|err| {
        runtime(
            &format!("reading the catalogs of schemas {}", schemas.join(", ")),
            err,
        )
    })?;
    let superuser = upkeep::is_superuser(first)
        .await
        .map_err(|err| runtime("asking whether the session is a superuser's", err))?;
    let order = order::fill_order(&catalog);
    let wanted = wanted::wanted_tables(&catalog, scope, counts);
    let asked: Vec<u64> = (catalog.tables.iter())
        .map(|table| rows_of(counts, table))
        .collect();
    let planned = wanted::planned_rows(&catalog, &wanted, &asked, |at, rows| {
        rows_fitting(&catalog, &order, seed, at, rows)
    });
    let left_empty = (catalog.tables.iter().zip(&wanted))
        .filter(|(table, wanted)| **wanted == Want::Empty && !is_tool_table(&table.name))
        .map(|(table, _)| table.name.clone())
        .collect();
    let jobs: Vec<TableJob> = (order.tables.iter().zip(&order.steps))
        .filter(|(at, _)| wanted[**at] != Want::Empty)
        .filter(|(at, _)| !is_tool_table(&catalog.tables[**at].name))
        .map(|(&at, &step)| TableJob {
            at,
            step,
            cycle: (order.cycles.iter())
                .find(|(table, _)| *table == at)
                .map(|(_, cycle)| cycle.clone()),
            nulled: (0..catalog.tables[at].foreign_keys.len())
                .map(|key| order.nulled.contains(&(at, key)))
                .collect(),
            rows: planned[at],
            for_keys: wanted[at] == Want::Keys && planned[at] < asked[at],
        })
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    let filling = Filling {
        catalog: &catalog,
        seed,
        superuser,
        begin_sql: begin_sql(clients.len(), cores),
        parents: ParentCache::new(jobs.iter().map(|job| &catalog.tables[job.at])),
        filling_now: Cell::new(0),
        to_analyze: RefCell::default(),
        analyzed: RefCell::new(vec![false; catalog.tables.len()]),
    };
    let mut fills = Vec::new();
    for step in jobs.chunk_by(|a, b| a.step == b.step) {
        let oids: Vec<u32> = step.iter().map(|job| catalog.tables[job.at].oid).collect();
        let detached = match superuser {
            true => (detach::detach(first, &oids).await)
                .map_err(|err| runtime("dropping foreign keys of empty tables", err))?,
            false => Vec::new(),
        };
        let queue = RefCell::new(step.iter().enumerate());
        let workers = (clients.iter()).map(|client| filling.work_through(client, &queue));
        let mut done: Vec<(usize, TableFill)> = futures_util::future::try_join_all(workers)
            .await?
            .into_iter()
            .flatten()
            .collect();
        (detach::reattach(first, &detached).await)
            .map_err(|err| runtime("adding back the foreign keys dropped for the fill", err))?;
        done.sort_by_key(|(at, _)| *at);
        for (_, fill) in done {
            on_filled(&fill, fills.len() + 1, jobs.len());
            fills.push(fill);
        }
    }
    let analyzed = filling.analyzed.take();
    vacuum_analyze(clients, &catalog.tables, &analyzed).await?;
    Ok(Filled { fills, left_empty })
}

/// How many rows table `at` of `catalog` gets when each table is asked
/// `rows`, by its recipe (its unique keys' values and its parents' rows);
/// all it is asked when the recipe cannot fill it (the fill says why).
fn rows_fitting(
    catalog: &Catalog,
    order: &order::FillOrder,
    seed: u64,
    at: usize,
    rows: &[u64],
) -> u64 {
    let table = &catalog.tables[at];
    let parent_rows = (table.foreign_keys.iter())
        .map(|key| {
            (catalog.tables.iter())
                .position(|parent| parent.oid == key.parent_oid)
                .map_or(0, |parent| rows[parent])
        })
        .collect();
    let input = RecipeInput {
        catalog,
        table,
        nulled: (0..table.foreign_keys.len())
            .map(|key| order.nulled.contains(&(at, key)))
            .collect(),
        parent_rows,
        rows: rows[at],
        seed,
    };
    recipe::table_recipe(&input).map_or(rows[at], |recipe| recipe.rows)
}

/// One table to fill, as the fill order places it.
struct TableJob {
    /// Its index in the catalog's tables.
    at: usize,
    /// Its step of the order.
    step: usize,
    /// The cycle of NOT NULL foreign keys it is on, if any.
    cycle: Option<String>,
    /// Per foreign key: whether it is left NULL to break a cycle.
    nulled: Vec<bool>,
    rows: u64,
    /// Filled only for its children's foreign keys ([`Want::Keys`]), with
    /// fewer rows than `--rows` asks.
    for_keys: bool,
}

/// What every table's fill shares.
struct Filling<'a> {
    catalog: &'a Catalog,
    seed: u64,
    /// Whether foreign key checks may be turned off for the insert (see `upkeep`).
    superuser: bool,
    /// What opens each table's transaction ([`begin_sql`]).
    begin_sql: String,
    /// The parents' keys, read once each.
    parents: ParentCache,
    /// Connections filling a table right now.
    filling_now: Cell<usize>,
    /// Tables whose fill is over and that are not analyzed yet (their
    /// places in the catalog's tables).
    to_analyze: RefCell<VecDeque<usize>>,
    /// Per table of the catalog: analyzed while the fill went on.
    analyzed: RefCell<Vec<bool>>,
}

impl Filling<'_> {
    /// Fills tables of `queue` on `client` until it is empty; returns each
    /// with its place in the queue. Once the queue is empty, and while
    /// another connection still fills a table of it, ANALYZEs the tables
    /// filled before instead of waiting (the step's last table left one
    /// of two connections idle for a second or two, profiled).
    async fn work_through<'j>(
        &self,
        client: &Client,
        queue: &RefCell<impl Iterator<Item = (usize, &'j TableJob)>>,
    ) -> Result<Vec<(usize, TableFill)>, Error> {
        let mut done = Vec::new();
        loop {
            let next = queue.borrow_mut().next();
            if let Some((place, job)) = next {
                self.filling_now.set(self.filling_now.get() + 1);
                let fill = self.fill_table(client, job).await;
                self.filling_now.set(self.filling_now.get() - 1);
                self.parents.done_with(&self.catalog.tables[job.at]);
                done.push((place, fill?));
                self.to_analyze.borrow_mut().push_back(job.at);
                continue;
            }
            if self.filling_now.get() == 0 {
                return Ok(done);
            }
            let Some(at) = self.to_analyze.borrow_mut().pop_front() else {
                return Ok(done);
            };
            let table = &self.catalog.tables[at].sql_name;
            (client.batch_execute(&format!("ANALYZE {table}")).await)
                .map_err(|err| runtime(&format!("ANALYZE {table}"), err))?;
            self.analyzed.borrow_mut()[at] = true;
        }
    }
}

/// The rows `counts` gives `table`: its own count (named `orders` or
/// `public.orders`), else the count for every table.
fn rows_of(counts: &RowCounts, table: &CatalogTable) -> u64 {
    counts.of(&table.sql_name.replace('"', ""))
}

impl Filling<'_> {
    async fn fill_table(&self, client: &Client, job: &TableJob) -> Result<TableFill, Error> {
        let catalog = self.catalog;
        // Asked no rows (`--rows T=0`, `--tool-table T`): left alone, as it is.
        if job.rows == 0 {
            return Ok(TableFill {
                table: catalog.tables[job.at].name.clone(),
                rows: 0,
                kept: 0,
                skipped: None,
                note: None,
                asked: 0,
                for_keys: job.for_keys,
            });
        }
        let at = job.at;
        let cycle = job.cycle.as_deref();
        let nulled = job.nulled.clone();
        let (rows, seed) = (job.rows, self.seed);
        let table = &catalog.tables[at];
        let outcome = |rows, kept, skipped: Option<String>, note| TableFill {
            table: table.name.clone(),
            rows,
            kept,
            skipped: skipped.map(|reason| format!("{reason}; {SEED_FIX}")),
            note,
            asked: job.rows,
            for_keys: job.for_keys,
        };
        if let Some(cycle) = cycle {
            let reason = format!(
                "its NOT NULL foreign keys form a cycle ({cycle}), so no row can come first"
            );
            return Ok(outcome(0, 0, Some(reason), None));
        }
        let kept = count(client, &format!("SELECT count(*) FROM {}", table.sql_name)).await?;
        if kept > 0 {
            return Ok(outcome(0, kept, None, None));
        }
        let mut keys = Vec::new();
        // A key left NULL to break a cycle may point at a table not filled yet: not read.
        for (key, &nulled) in table.foreign_keys.iter().zip(&job.nulled) {
            keys.push(match key.parent_oid == table.oid || nulled {
                true => Default::default(),
                false => (self.parents.keys(client, key).await).map_err(|err| {
                    runtime(&format!("reading the keys of {}", key.parent_sql), err)
                })?,
            });
        }
        let input = RecipeInput {
            catalog,
            table,
            nulled,
            parent_rows: keys.iter().map(|keys| keys.rows()).collect(),
            rows,
            seed,
        };
        let plan = match recipe::table_recipe(&input) {
            Ok(plan) => plan,
            Err(reason) => return Ok(outcome(0, 0, Some(reason), None)),
        };
        let parents: Vec<&ParentKeys> =
            (plan.parents.iter()).map(|pick| &*keys[pick.key]).collect();
        match run_plan(client, table, &plan, &parents, self).await? {
            None => Ok(outcome(plan.rows, 0, None, plan.note)),
            Some(reason) => Ok(outcome(0, 0, Some(reason), None)),
        }
    }
}

/// Runs a table's plan in a transaction of its own, its indexes and
/// foreign key checks set aside while the rows go in (see `upkeep`), the
/// keys of each of its parents in `parents`, opened by `filling`'s
/// [`begin_sql`]: `None` when it committed, else
/// why the server refused the rows (rolled back).
async fn run_plan(
    client: &Client,
    table: &CatalogTable,
    plan: &TableRecipe,
    parents: &[&ParentKeys],
    filling: &Filling<'_>,
) -> Result<Option<String>, Error> {
    let context = format!("filling table {}", table.sql_name);
    client
        .batch_execute(&filling.begin_sql)
        .await
        .map_err(|err| runtime(&context, err))?;
    let result = async {
        let aside = upkeep::set_aside(client, table, filling.superuser).await?;
        send::send_rows(client, plan, parents, aside.truncated).await?;
        for statement in &plan.after_sql {
            client.execute(statement.as_str(), &[]).await?;
        }
        let mut proven = vec![false; table.foreign_keys.len()];
        for pick in plan.parents.iter().filter(|pick| pick.proven) {
            proven[pick.key] = true;
        }
        upkeep::put_back(client, table, aside, &proven).await
    }
    .await;
    let reason = match result {
        Ok(None) => {
            client
                .batch_execute("COMMIT")
                .await
                .map_err(|err| runtime(&context, err))?;
            return Ok(None);
        }
        Ok(Some(reason)) => reason,
        Err(err) => match err.as_db_error() {
            Some(db_error) => refusal(table, db_error),
            None => return Err(runtime(&context, err)),
        },
    };
    client
        .batch_execute("ROLLBACK")
        .await
        .map_err(|err| runtime(&context, err))?;
    Ok(Some(reason))
}

/// What opens a table's transaction, on one of `connections` filling
/// tables at once on a machine of `cores`: room to build an index and to
/// check a foreign key's rows in memory rather than on disk; no JIT for
/// those checks' one-off queries; UTC, so that a `timestamptz` sent as
/// text reads as the same instant as one sent in binary; and, when every core already fills a
/// table of its own, no parallel workers for the index builds (under
/// load they waited for each other: fill 40 to 49 s without them against
/// 54 s with them, the bench-check folder at load 14).
fn begin_sql(connections: usize, cores: usize) -> String {
    let mut sql = String::from(
        "BEGIN; SET LOCAL work_mem = '64MB'; SET LOCAL maintenance_work_mem = '256MB'; \
         SET LOCAL jit = off; SET LOCAL TimeZone = 'UTC'",
    );
    if connections >= cores {
        sql.push_str("; SET LOCAL max_parallel_maintenance_workers = 0");
    }
    sql
}

/// Why the server refused a table's generated rows, naming a CHECK (with its
/// definition when that is short: a real project's can run to pages).
fn refusal(table: &CatalogTable, error: &tokio_postgres::error::DbError) -> String {
    const SHORT: usize = 80;
    let check = error
        .constraint()
        .and_then(|name| table.checks.iter().find(|check| check.name == name));
    match check {
        Some(check) if check.definition.chars().count() <= SHORT => format!(
            "its constraint {} {} rejects the generated rows",
            check.name, check.definition
        ),
        Some(check) => format!("its constraint {} rejects the generated rows", check.name),
        None => format!(
            "the server refused the generated rows: {} (SQLSTATE {})",
            error.message(),
            error.code().code()
        ),
    }
}

async fn count(client: &Client, sql: &str) -> Result<u64, Error> {
    let row = client
        .query_one(sql, &[])
        .await
        .map_err(|err| runtime("counting rows", err))?;
    Ok(row.get::<_, i64>(0).max(0) as u64)
}

/// `VACUUM (ANALYZE)` of each of the schema's tables (a `VACUUM` of those
/// `analyzed` says were analyzed while the fill went on), so plans see the
/// new rows and index-only scans find their pages all-visible: one pass
/// over each table, the tables shared out over `clients` (an ANALYZE of
/// every table on one connection, then a VACUUM of the database, took 11 s
/// of a Prisma project's 64 s fill). Run once every fill's transaction
/// ended, so that VACUUM finds the rows visible to all.
async fn vacuum_analyze(
    clients: &[&Client],
    tables: &[CatalogTable],
    analyzed: &[bool],
) -> Result<(), Error> {
    let queue = RefCell::new(tables.iter().zip(analyzed));
    let workers = clients.iter().take(tables.len()).map(|client| async {
        loop {
            let next = queue.borrow_mut().next();
            let Some((table, &analyzed)) = next else {
                return Ok::<(), Error>(());
            };
            let sql = match analyzed {
                true => format!("VACUUM {}", table.sql_name),
                false => format!("VACUUM (ANALYZE) {}", table.sql_name),
            };
            (client.batch_execute(&sql).await).map_err(|err| runtime(&sql, err))?;
        }
    });
    futures_util::future::try_join_all(workers).await?;
    Ok(())
}

fn runtime(context: &str, err: tokio_postgres::Error) -> Error {
    Error::Runtime(anyhow::Error::new(err).context(context.to_string()))
}

#[cfg(test)]
mod tests {
    use super::{begin_sql, is_tool_table};

    #[test]
    fn index_builds_run_without_workers_when_every_core_fills_a_table() {
        let serial = "SET LOCAL max_parallel_maintenance_workers = 0";
        assert!(begin_sql(2, 2).ends_with(serial));
        assert!(begin_sql(4, 2).contains(serial));
        assert!(!begin_sql(4, 8).contains(serial));
        assert!(begin_sql(4, 8).starts_with("BEGIN; SET LOCAL work_mem"));
    }

    #[test]
    fn a_tools_own_table_is_known_bare_qualified_or_quoted() {
        assert!(is_tool_table("alembic_version"));
        assert!(is_tool_table("public.schema_migrations"));
        assert!(is_tool_table("app.\"django_migrations\""));
        assert!(!is_tool_table("orders"));
        assert!(!is_tool_table("alembic_version_history"));
    }
}
