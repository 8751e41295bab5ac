//! The rows of check's work database, the end of the first step of
//! check's course: which tables get generated rows (the new migrations
//! tried on the empty tables first, [`super::scope`]), the fill on several
//! connections with fsync off, and what the console and the report say of
//! it (the tables filled, left empty, or given fewer rows).

use std::time::Instant;

use tokio_postgres::Client;

use super::course::{Progress, say, user_schemas};
use super::migrations::Migration;
use super::rows::{TableFill, fill_tables_in};
use super::scope::{FillScope, fill_scope};
use crate::choices::Fill;
use crate::config::{CheckConfig, Data, RowCounts};
use crate::engine::postgres::check_verdict::checked::CheckRun;
use crate::engine::postgres::check_verdict::sizes::same_table;
use crate::engine::postgres::database::Database;
use crate::error::Error;
use crate::role::Role;

/// Turns the throwaway server's `fsync` off for the fill, or back on: the
/// rows then go in without waiting for the disk at each table's commit and
/// checkpoint (5 to 10% of the bench-check folder's fill,
/// docs/benchmark.md), as `initdb --no-sync` writes its files. The server
/// is thrown away after the check, so a crash would lose nothing. The
/// traces and the measured runs come after, with fsync on as the server
/// started. Returns once this session has the new value.
async fn set_fsync(client: &Client, on: bool) -> Result<(), tokio_postgres::Error> {
    let sql = match on {
        true => "ALTER SYSTEM RESET fsync",
        false => "ALTER SYSTEM SET fsync = off",
    };
    client.batch_execute(sql).await?;
    client.batch_execute("SELECT pg_reload_conf()").await?;
    let wanted = if on { "on" } else { "off" };
    for _ in 0..100 {
        let row = client
            .query_one("SELECT current_setting('fsync')", &[])
            .await?;
        if row.get::<_, String>(0) == wanted {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Fills the tables of `scope` with generated `rows` on `client` and as
/// many more connections as the fill uses, and notes in `run` what it did.
pub(super) async fn fill_generated(
    config: &CheckConfig,
    target: &Database,
    client: &Client,
    (rows, scope): (&RowCounts, &FillScope),
    run: &mut CheckRun,
) -> Result<(), Error> {
    let schemas = user_schemas(client).await?;
    let schemas: Vec<&str> = schemas.iter().map(String::as_str).collect();
    let mut progress = Progress::new(config);
    let mut on_filled = |fill: &TableFill, done: usize, all: usize| {
        progress.tick(|elapsed_s| {
            let left_s = elapsed_s / done as f64 * (all - done) as f64;
            format!(
                "rows: {done} of {all} tables filled in {elapsed_s:.0} s (last: {}, \
                 {} rows), about {left_s:.0} s left",
                fill.table, fill.rows
            )
        })
    };
    let mut more = Vec::new();
    for _ in 1..fill_connections() {
        more.push(target.connect(Role::Setup).await?);
    }
    let clients: Vec<&Client> = std::iter::once(client).chain(&more).collect();
    // Without the right to change it (not a superuser) the fill keeps fsync.
    let fsync_off = set_fsync(client, false).await.is_ok();
    let filled = fill_tables_in(&clients, &schemas, rows, config.seed, scope, &mut on_filled).await;
    // A failed fill ends the check, and the server with it.
    if fsync_off && filled.is_ok() {
        (set_fsync(client, true).await)
            .map_err(|err| Error::runtime(format!("turning fsync on after the fill: {err}")))?;
    }
    let filled = filled?;
    drop(more);
    let fills = filled.fills;
    let count = crate::export::format::format_thousands;
    // A table the generator could not fill is named as such, not here.
    let key_fills: Vec<&TableFill> = (fills.iter())
        .filter(|fill| fill.for_keys && fill.skipped.is_none())
        .collect();
    say(
        config,
        fill_scope_line(scope, fills.len(), &key_fills, &filled.left_empty),
    );
    run.key_tables = (key_fills.iter())
        .map(|fill| format!("{} ({} rows)", fill.table, count(fill.asked)))
        .collect();
    run.phases.fill_key_tables = key_fills.len();
    if let FillScope::Every(why) = scope
        && config.fill == Fill::Locked
    {
        run.notes.push(format!("every table got rows: {why}"));
    }
    run.phases.fill_tables = fills.len();
    run.phases.tables_left_empty = filled.left_empty.len();
    run.left_empty = filled.left_empty;
    run.phases.fill_rows = fills.iter().map(|fill| fill.rows).sum();
    for (given, _) in &rows.tables {
        // A migrator's own table (--tool-table) may be one it makes itself.
        let known = config.is_tool_table(given)
            || fills.iter().any(|fill| same_table(given, &fill.table))
            || (run.left_empty.iter()).any(|table| same_table(given, table));
        if !known {
            stderrln!(
                "warning: --rows {given}=N: no table {given} among the tables the \
                 earlier migrations made; name one of them, e.g. orders or public.orders"
            );
        }
    }
    for fill in fills {
        if let Some(reason) = &fill.skipped {
            stderrln!("warning: table {} not filled: {reason}", fill.table);
            run.unfilled.push(format!("{}: {reason}", fill.table));
        }
        if let Some(fewer) = fewer_rows(&fill, fill.asked) {
            say(config, format!("table {fewer}"));
            run.fewer_rows.push(fewer);
        }
    }
    Ok(())
}

/// Which tables the generated rows go in (`None` with `--seed`); with
/// `--fill locked`, the new migrations are tried on the empty tables first
/// (since `filling`), and the console says what they touched.
pub(super) async fn scope_of(
    config: &CheckConfig,
    target: &mut Database,
    new: &[Migration],
    filling: Instant,
) -> Result<Option<FillScope>, Error> {
    if !matches!(config.data, Data::Rows(_)) {
        return Ok(None);
    }
    if config.fill == Fill::All {
        return Ok(Some(FillScope::Every("--fill all".to_string())));
    }
    let scope = fill_scope(config, target, new).await?;
    if let FillScope::Tables { oids, .. } = &scope {
        say(
            config,
            format!(
                "rows: the new migrations, tried on the empty tables in {:.1} s, lock or name \
                 {} of them",
                filling.elapsed().as_secs_f64(),
                oids.len()
            ),
        );
    }
    Ok(Some(scope))
}

/// The console's line on which tables the fill filled: `rows: 5 tables
/// filled (those the new migrations lock or name, the tables their foreign
/// keys need: 3 of these for their keys only, 1,000 rows each); 65 left
/// empty (--fill all fills them)`.
fn fill_scope_line(
    scope: &FillScope,
    filled: usize,
    key_fills: &[&TableFill],
    left_empty: &[String],
) -> String {
    let tables = |count: usize| match count {
        1 => "1 table".to_string(),
        count => format!("{count} tables"),
    };
    let count = crate::export::format::format_thousands;
    let fewest = key_fills.iter().map(|fill| fill.asked).min();
    let most = key_fills.iter().map(|fill| fill.asked).max();
    let keys = match (fewest, most) {
        (Some(fewest), Some(most)) if fewest == most => format!(
            ": {} of these for their keys only, {} rows each",
            key_fills.len(),
            count(fewest)
        ),
        (Some(fewest), Some(most)) => format!(
            ": {} of these for their keys only, {} to {} rows",
            key_fills.len(),
            count(fewest),
            count(most)
        ),
        _ => String::new(),
    };
    match scope {
        FillScope::Every(_) => format!("rows: {} filled (every table)", tables(filled)),
        FillScope::Tables { with_children, .. } => format!(
            "rows: {} filled (those the new migrations lock or name, the tables their foreign \
             keys need{}{keys}); {}",
            tables(filled),
            match with_children {
                true =>
                    ", and the tables whose foreign keys point at them, since a new \
                         migration deletes rows",
                false => "",
            },
            match left_empty.len() {
                0 => "none left empty".to_string(),
                left => format!("{left} left empty (--fill all fills them)"),
            }
        ),
    }
}

/// `statuses: 2 rows, not 100,000: ...`: a table that got fewer rows than
/// `asked`, its count and why; `None` when it got them all (or none, which
/// `skipped` says).
fn fewer_rows(fill: &TableFill, asked: u64) -> Option<String> {
    let count = crate::export::format::format_thousands;
    let why = match (fill.kept, &fill.note) {
        (0, None) => return None,
        (0, Some(note)) => note.clone(),
        (_, _) => "those the earlier migrations inserted (a table that holds rows is kept as \
                   it is, not filled)"
            .to_string(),
    };
    let got = fill.rows + fill.kept;
    (got < asked).then(|| {
        format!(
            "{}: {} row{}, not {}, {why}",
            fill.table,
            count(got),
            if got == 1 { "" } else { "s" },
            count(asked)
        )
    })
}

/// The connections the rows are filled on: one per core, at most 4 (the
/// tables of one step of the fill order go in at once, one on each).
fn fill_connections() -> usize {
    std::thread::available_parallelism().map_or(1, |cores| cores.get().min(4))
}
