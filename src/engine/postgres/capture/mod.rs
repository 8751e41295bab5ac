//! `stallbench capture`: the traffic a server already sees, from
//! `pg_stat_statements`, written as a workload file that `run` and `compare`
//! take unchanged.
//!
//! Everything is read in `BEGIN TRANSACTION READ ONLY` (capture never
//! writes; with `--window` the first snapshot in a transaction of its own,
//! so none stays open across the window): the statements of the connected
//! database ([`stat_statements`]), with `--window` a second snapshot W later and
//! the difference, and the database's client backends (for `[load] clients`); each kept
//! statement's `$n` resolved to a column ([`parameters`]) and a range from
//! the catalogs ([`catalog`]); then the file ([`write`]), written once at
//! the end. `--out` is checked before anything is read, so a long window
//! never ends on a path it cannot write.

pub mod catalog;
pub mod stat_statements;
pub mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio_postgres::Client;

use crate::cli::CaptureArgs;
use crate::engine::postgres::conninfo::{ConnSettings, Tls};
use crate::engine::postgres::database::{error_text, redact_url};
use crate::engine::postgres::sql_scan::{self as parameters, ParameterTarget, ScannedStatement};
use crate::error::{Error, exit_code};
use crate::role::{StatementEffect, statement_effect};
use catalog::{Generator, KnownRelation};
use stat_statements::StatementStats;
use write::{CaptureSource, CapturedStatement, LIMIT_CONSTANT, Window};

/// The share of calls the kept statements cover without `--top`.
pub const COVERED_SHARE: f64 = 0.95;
/// How often the window's progress line is printed.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// `capture`'s settings, checked once from its flags.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    pub db_url: String,
    pub out: PathBuf,
    pub top: Option<usize>,
    pub tables: Vec<String>,
    pub window: Option<Duration>,
}

impl CaptureOptions {
    /// Checks the flags and that `--out` can be written.
    pub fn new(args: &CaptureArgs) -> Result<CaptureOptions, Error> {
        if args.top == Some(0) {
            return Err(Error::bad_input(
                "--top 0 keeps no statement; give a count, e.g. --top 20, or leave it out \
                 (the statements that make 95% of the calls)",
            ));
        }
        if args
            .window
            .is_some_and(|window| window < Duration::from_secs(1))
        {
            return Err(Error::bad_input(
                "--window is shorter than 1 s; give a window of seconds, e.g. --window 60s",
            ));
        }
        check_writable(&args.out)?;
        Ok(CaptureOptions {
            db_url: args.db_url.clone(),
            out: args.out.clone(),
            top: args.top,
            tables: args
                .tables
                .iter()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect(),
            window: args.window,
        })
    }
}

/// Runs `capture`: exit 0 with the file written, or an error.
pub fn capture(args: &CaptureArgs) -> Result<i32, Error> {
    let options = CaptureOptions::new(args)?;
    let (text, captured) = crate::stop::on_runtime(read_workload(&options))??;
    std::fs::write(&options.out, text).map_err(|err| {
        Error::bad_input(format!(
            "--out {}: cannot write it: {err}; choose a writable path",
            options.out.display()
        ))
    })?;
    report(&captured, &options.out);
    Ok(exit_code::SUCCESS)
}

/// `--out` must be a file path in an existing folder that can be written:
/// a file is created there (and removed) to be sure.
fn check_writable(out: &Path) -> Result<(), Error> {
    let bad = |problem: String| {
        Error::bad_input(format!(
            "--out {}: {problem}; choose a writable file path, e.g. --out workload.toml",
            out.display()
        ))
    };
    if out.is_dir() {
        return Err(bad("is a folder".into()));
    }
    let folder = match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        return Err(bad(format!("folder {} does not exist", folder.display())));
    }
    let existed = out.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(out)
        .map_err(|err| bad(format!("cannot write it: {err}")))?;
    if !existed {
        let _ = std::fs::remove_file(out);
    }
    Ok(())
}

/// Connects, reads everything in one read-only transaction, and returns the
/// file's text and the statements in it.
async fn read_workload(
    options: &CaptureOptions,
) -> Result<(String, Vec<CapturedStatement>), Error> {
    let shown = redact_url(&options.db_url);
    let client = connect(&options.db_url, &shown).await?;
    let session = stat_statements::check_extension(&client, &shown).await?;
    let (seen, window) = read_calls(&client, options, &shown, &session).await?;
    let backends = stat_statements::client_backends(&client, &shown).await?;
    let work = users_work(&client, seen, &options.tables).await?;
    let statements_seen = work.len();
    let total_calls: i64 = work.iter().map(|(stats, _, _)| stats.calls).sum();
    let kept_ids: Vec<i64> = stat_statements::most_called(
        work.iter().map(|(stats, _, _)| stats.clone()).collect(),
        options.top,
        COVERED_SHARE,
    )
    .iter()
    .map(|stats| stats.queryid)
    .collect();
    if kept_ids.is_empty() {
        return Err(nothing_captured(&shown, &session, options));
    }
    let mut captured = Vec::new();
    let mut cache = BTreeMap::new();
    for id in &kept_ids {
        let (stats, resolved, relations) = work
            .iter()
            .find(|(stats, _, _)| stats.queryid == *id)
            .expect("a kept statement is among the work");
        let parameters = generators(&client, resolved, relations, &mut cache).await?;
        captured.push(CapturedStatement {
            queryid: stats.queryid,
            query: stats.query.clone(),
            calls: stats.calls,
            rows: stats.rows,
            share: stats.calls as f64 / total_calls.max(1) as f64,
            calls_per_s: window.map(|w| stats.calls as f64 / w.seconds),
            writes: statement_effect(&stats.query) == StatementEffect::Writes,
            parameters,
        });
    }
    execute(&client, &shown, "COMMIT").await?;
    let source = CaptureSource {
        target: shown,
        database: session.database.clone(),
        captured_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        window,
        statements_seen,
        top: options.top,
        tables: options.tables.clone(),
        backends,
    };
    Ok((write::render(&source, &captured), captured))
}

/// Opens the one connection, as `--db-url` is read everywhere (libpq's rules, TLS).
async fn connect(url: &str, shown: &str) -> Result<Client, Error> {
    let resolved = ConnSettings::resolve(url, &|name| std::env::var(name).ok())
        .map_err(|err| Error::bad_input(format!("--db-url {shown}: {err}")))?;
    for warning in &resolved.warnings {
        stderrln!("warning: {warning}");
    }
    let tls = Tls::new(&resolved.settings.ssl)
        .map_err(|err| Error::bad_input(format!("--db-url {shown}: {err}")))?;
    let mut config = resolved.settings.tokio_config();
    config.application_name("stallbench-capture");
    tls.connect(&config)
        .await
        .map_err(|err| Error::runtime(format!("cannot connect to {shown}: {}", error_text(&err))))
}

/// Runs `sql` (`BEGIN ...`, `COMMIT`) on capture's connection.
async fn execute(client: &Client, shown: &str, sql: &str) -> Result<(), Error> {
    client
        .batch_execute(sql)
        .await
        .map_err(|err| Error::runtime(format!("capture: {shown}: {}", error_text(&err))))
}

/// The statements' calls: cumulative, or over `--window` (two snapshots).
/// Returns inside the read-only transaction the rest is read in. The
/// window's first snapshot is a transaction of its own: a transaction left
/// open across the window would hold back the server's xmin horizon, so
/// that the traffic's updates could not prune their dead row versions and
/// could slow down while capture measured them (docs/capture.md, What it reads).
async fn read_calls(
    client: &Client,
    options: &CaptureOptions,
    shown: &str,
    session: &stat_statements::CaptureSession,
) -> Result<(Vec<StatementStats>, Option<Window>), Error> {
    execute(client, shown, "BEGIN TRANSACTION READ ONLY").await?;
    let before = stat_statements::snapshot(client, shown, session).await?;
    let Some(window) = options.window else {
        return Ok((before, None));
    };
    execute(client, shown, "COMMIT").await?;
    let started = Instant::now();
    let total_s = window.as_secs();
    while started.elapsed() < window {
        let left = window.saturating_sub(started.elapsed());
        tokio::time::sleep(left.min(PROGRESS_EVERY)).await;
        let done_s = started.elapsed().as_secs().min(total_s);
        stderrln!("capture: {done_s} of {total_s} s");
    }
    execute(client, shown, "BEGIN TRANSACTION READ ONLY").await?;
    let after = stat_statements::snapshot(client, shown, session).await?;
    let seconds = started.elapsed().as_secs_f64();
    let calls = stat_statements::difference(&before, &after).ok_or_else(|| {
        Error::bad_input(format!(
            "--db-url {shown}: pg_stat_statements was reset (or statements evicted) during \
             the --window; capture again, without resetting it meanwhile"
        ))
    })?;
    Ok((calls, Some(Window { seconds })))
}

/// The users' statements among `seen` (see [`stat_statements::is_users_work`]),
/// without those that name only system relations, and with `--tables` only
/// those that touch one of them; each with its parameters and its relations.
async fn users_work(
    client: &Client,
    seen: Vec<StatementStats>,
    tables: &[String],
) -> Result<Vec<(StatementStats, ScannedStatement, Vec<KnownRelation>)>, Error> {
    let candidates: Vec<(StatementStats, ScannedStatement)> = seen
        .into_iter()
        .filter(|stats| stats.calls > 0 && stat_statements::is_users_work(&stats.query))
        .map(|stats| {
            let resolved = parameters::resolve(&stats.query);
            (stats, resolved)
        })
        .collect();
    let mut names: Vec<String> = candidates
        .iter()
        .flat_map(|(_, resolved)| resolved.tables.iter().map(|t| t.name.clone()))
        .collect();
    names.sort();
    names.dedup();
    let known = catalog::relations(client, &names).await?;
    let mut work = Vec::new();
    for (stats, resolved) in candidates {
        let relations: Vec<KnownRelation> = resolved
            .tables
            .iter()
            .filter_map(|t| known.iter().find(|r| r.written == t.name).cloned())
            .collect();
        if !relations.is_empty() && relations.iter().all(KnownRelation::is_system) {
            continue;
        }
        if !tables.is_empty() && !touches(&resolved, &relations, tables) {
            continue;
        }
        work.push((stats, resolved, relations));
    }
    Ok(work)
}

/// Whether the statement names one of `tables` (`orders` or `app.orders`).
fn touches(resolved: &ScannedStatement, relations: &[KnownRelation], tables: &[String]) -> bool {
    tables.iter().any(|wanted| {
        relations
            .iter()
            .any(|r| *wanted == r.name || *wanted == format!("{}.{}", r.schema, r.name))
            || resolved.tables.iter().any(|t| t.name == *wanted)
    })
}

/// How each parameter of a statement gets its values; `cache` keeps the
/// generators of the columns already looked up (a column is read once).
async fn generators(
    client: &Client,
    resolved: &ScannedStatement,
    relations: &[KnownRelation],
    cache: &mut BTreeMap<(u32, String), Generator>,
) -> Result<Vec<(u32, Generator)>, Error> {
    let mut out = Vec::new();
    for (number, target) in &resolved.parameters {
        let generator = match target {
            ParameterTarget::Limit => Generator::Constant {
                value: LIMIT_CONSTANT,
                why: "LIMIT: a constant (the real values are not in pg_stat_statements)".into(),
            },
            ParameterTarget::Offset => Generator::Constant {
                value: 0,
                why: "OFFSET: a constant (the real values are not in pg_stat_statements)".into(),
            },
            ParameterTarget::Unknown(context) => Generator::Fixme {
                what: format!("in `{context}`: not compared with a column"),
            },
            ParameterTarget::KnownColumn { tables, column } => {
                let candidates: Vec<&KnownRelation> = tables
                    .iter()
                    .filter_map(|name| relations.iter().find(|r| r.written == *name))
                    .collect();
                match catalog::column(client, &candidates, column).await? {
                    Some(found) => {
                        let key = (found.relation.oid, found.name.clone());
                        match cache.get(&key) {
                            Some(generator) => generator.clone(),
                            None => {
                                let generator = catalog::generator(client, &found).await?;
                                cache.insert(key, generator.clone());
                                generator
                            }
                        }
                    }
                    None => Generator::Fixme {
                        what: format!(
                            "compared with {}, a column of none of the tables found ({})",
                            describe_column(column),
                            tables.join(", ")
                        ),
                    },
                }
            }
        };
        out.push((*number, generator));
    }
    Ok(out)
}

fn describe_column(column: &parameters::ColumnName) -> String {
    match column {
        parameters::ColumnName::Named(name) => name.clone(),
        parameters::ColumnName::Position(position) => format!("column {position}"),
    }
}

/// No statement with calls: the statistics were just reset, nothing ran
/// in the window, or `--tables` left nothing.
fn nothing_captured(
    shown: &str,
    session: &stat_statements::CaptureSession,
    options: &CaptureOptions,
) -> Error {
    let database = &session.database;
    let fix = match (&options.window, options.tables.is_empty()) {
        (_, false) => format!(
            "check the names in --tables {} or leave it out",
            options.tables.join(",")
        ),
        (Some(_), true) => "run capture while the traffic runs, or with a longer --window".into(),
        (None, true) => "let the traffic run (the statistics may have just been reset), or \
                         capture while it runs with --window 60s"
            .into(),
    };
    Error::bad_input(format!(
        "--db-url {shown}: pg_stat_statements shows no statement of users' work with calls in \
         database {database}; {fix}"
    ))
}

/// The lines on stderr once the statements are read.
fn report(captured: &[CapturedStatement], out: &Path) {
    let covered: f64 = captured.iter().map(|s| s.share).sum();
    stderrln!(
        "capture: {} statements ({:.1}% of the calls) written to {}",
        captured.len(),
        covered * 100.0,
        out.display()
    );
    let fixmes = write::fixme_count(captured);
    if fixmes > 0 {
        stderrln!(
            "capture: unresolved parameters: {fixmes}; search {} for FIXME and give them values",
            out.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_must_be_a_writable_file_path_and_the_check_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("w.toml");
        check_writable(&new).unwrap();
        assert!(!new.exists());
        let message = check_writable(dir.path()).unwrap_err().to_string();
        assert!(message.contains("is a folder"), "{message}");
        let message = check_writable(&dir.path().join("no/w.toml"))
            .unwrap_err()
            .to_string();
        assert!(message.contains("does not exist"), "{message}");
    }
}
