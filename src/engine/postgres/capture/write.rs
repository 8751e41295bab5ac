//! The workload file capture writes: a header comment saying where the
//! statements came from and what is not known, `[load]`, one
//! `[[load.scripts]]` entry per statement with a comment of its figures, and
//! the two strategies `compare` runs by default. Pure: [`render`] returns the
//! text; `mod.rs` writes it.

use serde::Serialize;

use super::catalog::{Generator, RangeSource, ZIPF_PARAMETER};
use crate::engine::postgres::sql_scan::{variable, with_variables};
use crate::workload::ScriptFile;

/// The `LIMIT` a script uses for `LIMIT $n` (the real values are not in pg_stat_statements).
pub const LIMIT_CONSTANT: i64 = 10;
/// The fewest load clients a written file has.
const MIN_CLIENTS: u32 = 4;
/// Load clients per client connection seen on the database (see [`clients`]).
const CLIENTS_PER_BACKEND: u32 = 2;
/// The written file's load duration.
const DURATION: &str = "60s";

/// One captured statement, ready to write.
#[derive(Debug, Clone)]
pub struct CapturedStatement {
    pub queryid: i64,
    pub query: String,
    pub calls: i64,
    pub rows: i64,
    /// Its share of the calls of all the users' statements seen (0..1).
    pub share: f64,
    /// With `--window`.
    pub calls_per_s: Option<f64>,
    /// INSERT, UPDATE, DELETE or MERGE.
    pub writes: bool,
    /// Each `$n` and how its values are made, by number.
    pub parameters: Vec<(u32, Generator)>,
}

/// Where and how the statements were captured, for the header.
#[derive(Debug, Clone)]
pub struct CaptureSource {
    /// The target as output names it (no password).
    pub target: String,
    pub database: String,
    /// UTC, RFC 3339, seconds.
    pub captured_at: String,
    /// `--window`, in seconds, and the calls per second of all users' statements over it.
    pub window: Option<Window>,
    /// Users' statements seen (after `--tables`), and their calls.
    pub statements_seen: usize,
    /// `--top N`, else the 95% rule.
    pub top: Option<usize>,
    pub tables: Vec<String>,
    /// The other client connections on the database when the statements were read.
    pub backends: u32,
}

/// What `--window` measured.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub seconds: f64,
}

/// The workload file's text.
pub fn render(source: &CaptureSource, statements: &[CapturedStatement]) -> String {
    let mut out = header(source, statements);
    out.push_str(&top_keys(source));
    out.push_str(&load_section(source, statements));
    let kept_calls: i64 = statements.iter().map(|s| s.calls).sum();
    for (index, statement) in statements.iter().enumerate() {
        out.push('\n');
        out.push_str(&entry(index + 1, statement, kept_calls));
    }
    out.push_str(STRATEGIES);
    out
}

/// `[load] clients`: twice the client connections seen on the database, at
/// least [`MIN_CLIENTS`]. The replay runs each statement as a transaction of
/// its own, a commit (and a WAL flush for a write) each where the
/// application committed once per transaction, so a connection does less
/// per second than the application's did; the open loop keeps the rate
/// whatever the clients, and spare clients let it catch up after a pause.
pub fn clients(backends: u32) -> u32 {
    backends
        .saturating_mul(CLIENTS_PER_BACKEND)
        .clamp(MIN_CLIENTS, crate::config::MAX_CLIENTS)
}

/// The number of parameters written as FIXME.
pub fn fixme_count(statements: &[CapturedStatement]) -> usize {
    statements
        .iter()
        .flat_map(|s| &s.parameters)
        .filter(|(_, generator)| matches!(generator, Generator::Fixme { .. }))
        .count()
}

/// The total calls per second of `statements`, when the window measured them.
pub fn total_rate(statements: &[CapturedStatement]) -> Option<f64> {
    statements.iter().map(|s| s.calls_per_s).sum()
}

fn header(source: &CaptureSource, statements: &[CapturedStatement]) -> String {
    let covered: f64 = statements.iter().map(|s| s.share).sum();
    let cut = match source.top {
        Some(top) => format!("--top {top}"),
        None => "the most called, up to 95% of the calls".to_string(),
    };
    let tables = match source.tables.is_empty() {
        true => String::new(),
        false => format!(" touching {}", source.tables.join(", ")),
    };
    let mut lines = vec![
        format!(
            "Captured by `stallbench capture` from database {} on {} at {}.",
            source.database, source.target, source.captured_at
        ),
        format!(
            "CaptureSource: pg_stat_statements. Of {} statements of users' work{tables}, {} are kept \
             ({cut}), covering {:.1}% of their calls; each is one script, weighted by its \
             share of the calls kept (per mille).",
            source.statements_seen,
            statements.len(),
            covered * 100.0
        ),
    ];
    match (source.window, total_rate(statements)) {
        (Some(window), Some(rate)) => lines.push(format!(
            "Rate: measured over a {:.0} s window: {rate:.1} calls/s of these statements; \
             [load] rate replays it open loop (each call one transaction).",
            window.seconds
        )),
        _ => lines.push(
            "Rate: unknown. The counts are cumulative since the statistics' last reset: they \
             give the mix, not the rate. Capture again with --window 60s to measure it, or \
             run with --rate."
                .to_string(),
        ),
    }
    lines.push(format!(
        "Clients: {}: twice the {} client connections seen on database {} (at least \
         {MIN_CLIENTS}): each statement runs as a transaction of its own, a commit each, so a \
         connection does less per second than the application's did; --clients overrides it.",
        clients(source.backends),
        source.backends,
        source.database
    ));
    lines.push(
        "Privacy: no value of a user table is in this file except the ends of ranges (the \
         ends of a column's pg_stats histogram and most common values, or its min and max), \
         in the \\set lines."
            .to_string(),
    );
    if statements.iter().any(|s| s.writes) {
        lines.push(
            "Writes: the entries marked \"-- write\" insert, update, delete or merge rows; \
             running this workload --in-place on a server needs --allow-writes, and the rows \
             they write stay."
                .to_string(),
        );
    }
    let fixmes = fixme_count(statements);
    if fixmes > 0 {
        lines.push(format!(
            "Unresolved parameters: {fixmes}, each set to 1; search this file for FIXME and \
             give them values."
        ));
    }
    lines.push(
        "Run: stallbench run FILE --load-only --db-url URL --in-place [--allow-writes]; \
         stallbench compare FILE --db-url URL --in-place --ddl \"ALTER TABLE ...\"."
            .to_string(),
    );
    let mut text = String::new();
    for line in lines {
        for wrapped in wrap(&line, 78) {
            text.push_str(&format!("# {wrapped}\n"));
        }
        text.push_str("#\n");
    }
    // The last paragraph's "#" line becomes the blank line before the keys.
    text.pop();
    text.pop();
    text.push('\n');
    text
}

/// `line` broken at spaces into lines of at most `width` characters (a longer word stays whole).
fn wrap(line: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in line.split_whitespace() {
        if !current.is_empty() && current.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    lines.push(current);
    lines
}

/// `name`, `description` and `setup` (empty: the tables are the server's, `--in-place`).
fn top_keys(source: &CaptureSource) -> String {
    #[derive(Serialize)]
    struct Top<'a> {
        name: String,
        description: String,
        setup: &'a str,
    }
    let top = Top {
        name: format!("captured-{}", source.database),
        description: format!(
            "the statements of database {} from pg_stat_statements, captured at {}",
            source.database, source.captured_at
        ),
        setup: "",
    };
    toml::to_string(&top).expect("plain strings serialize") + "\n"
}

fn load_section(source: &CaptureSource, statements: &[CapturedStatement]) -> String {
    let mut text = format!(
        "[load]\nclients = {}\nduration = \"{DURATION}\"\n",
        clients(source.backends)
    );
    match total_rate(statements) {
        Some(rate) => text.push_str(&format!("rate = {:.1}\n", rate.max(0.1))),
        None => text.push_str("# rate: unknown (see the header)\n"),
    }
    text
}

/// One `[[load.scripts]]` entry with its comment.
fn entry(rank: usize, statement: &CapturedStatement, kept_calls: i64) -> String {
    let mut figures = vec![
        format!("{:.1}% of calls", statement.share * 100.0),
        format!(
            "{:.1} rows per call",
            statement.rows as f64 / statement.calls.max(1) as f64
        ),
    ];
    if let Some(rate) = statement.calls_per_s {
        figures.push(format!("{rate:.1} calls/s"));
    }
    let write = if statement.writes { " -- write" } else { "" };
    let script = ScriptFile {
        name: Some(script_name(rank, &statement.query)),
        sql: Some(script_text(statement)),
        file: None,
        builtin: None,
        weight: weight(statement.calls, kept_calls),
    };
    let body = toml::to_string(&script).expect("a script entry serializes");
    format!(
        "# {}{write}\n# queryid {}\n[[load.scripts]]\n{body}",
        figures.join(", "),
        statement.queryid
    )
}

/// The share of `calls` in `total`, per mille, at least 1.
pub fn weight(calls: i64, total: i64) -> u32 {
    ((calls as f64 * 1000.0 / total.max(1) as f64).round() as u32).max(1)
}

/// `03-select-orders`: the rank, the first word and the first table-like word after it.
fn script_name(rank: usize, query: &str) -> String {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let verb = words.first().cloned().unwrap_or_else(|| "statement".into());
    let table = words
        .windows(2)
        .find(|pair| matches!(pair[0].as_str(), "from" | "into" | "update" | "join"))
        .map(|pair| format!("-{}", pair[1]))
        .unwrap_or_default();
    format!("{rank:02}-{verb}{table}")
}

/// The pgbench script: a comment and a `\set` per parameter, then the statement.
pub fn script_text(statement: &CapturedStatement) -> String {
    let mut text = String::new();
    for (number, generator) in &statement.parameters {
        let name = variable(*number);
        let (comment, value) = match generator {
            Generator::Range {
                column,
                type_name,
                lo,
                hi,
                from,
                skewed,
            } => {
                let from = match from {
                    RangeSource::Statistics => "range from pg_stats",
                    RangeSource::MinMax => "range from min and max",
                };
                match skewed {
                    true => (
                        format!("${number}: {column} ({type_name}), {from}, skewed"),
                        format!("random_zipfian({lo}, {hi}, {ZIPF_PARAMETER})"),
                    ),
                    false => (
                        format!("${number}: {column} ({type_name}), {from}"),
                        format!("random({lo}, {hi})"),
                    ),
                }
            }
            Generator::Boolean { column } => (
                format!("${number}: {column} (boolean)"),
                "random(0, 1)".to_string(),
            ),
            Generator::Digits { column, width } => (
                format!(
                    "${number}: {column} (text), a random string of {width} digits (its average \
                     width), sent as text by --protocol prepared or extended"
                ),
                format!(
                    "random({}, {})",
                    10u64.pow(width - 1),
                    10u64.pow(*width) - 1
                ),
            ),
            Generator::Constant { value, why } => (format!("${number}: {why}"), value.to_string()),
            Generator::Fixme { what } => (
                format!("FIXME: queryid {}: ${number} {what}", statement.queryid),
                "1".to_string(),
            ),
        };
        text.push_str(&format!(
            "-- {}\n\\set {name} {value}\n",
            one_line(&comment)
        ));
    }
    let sql = with_variables(statement.query.trim());
    text.push_str(sql.trim_end_matches(';').trim_end());
    text.push_str(";\n");
    text
}

/// `text` on one line (a comment in a script ends at the line's end).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The strategies `compare` runs when none is named: the presets.
const STRATEGIES: &str = "
# The strategies `compare` runs by default (presets); the migration comes from
# --ddl or --ddl-file.
[[strategies]]
name = \"naive\"

[[strategies]]
name = \"retry\"
";

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(parameters: Vec<(u32, Generator)>) -> CapturedStatement {
        CapturedStatement {
            queryid: -42,
            query: "SELECT total FROM orders WHERE customer_id = $1 LIMIT $2".into(),
            calls: 300,
            rows: 3000,
            share: 0.6,
            calls_per_s: Some(30.0),
            writes: false,
            parameters,
        }
    }

    #[test]
    fn a_script_sets_each_parameter_then_runs_the_statement() {
        let text = script_text(&statement(vec![
            (
                1,
                Generator::Range {
                    column: "public.orders.customer_id".into(),
                    type_name: "integer".into(),
                    lo: 1,
                    hi: 1000,
                    from: RangeSource::Statistics,
                    skewed: true,
                },
            ),
            (
                2,
                Generator::Constant {
                    value: LIMIT_CONSTANT,
                    why: "LIMIT, a constant".into(),
                },
            ),
        ]));
        assert_eq!(
            text,
            "-- $1: public.orders.customer_id (integer), range from pg_stats, skewed\n\
             \\set p1 random_zipfian(1, 1000, 1.1)\n\
             -- $2: LIMIT, a constant\n\
             \\set p2 10\n\
             SELECT total FROM orders WHERE customer_id = :p1 LIMIT :p2;\n"
        );
        crate::script::parse("test", &text).unwrap();
    }

    #[test]
    fn a_text_parameter_is_a_random_string_of_its_columns_width() {
        let text = script_text(&statement(vec![(
            1,
            Generator::Digits {
                column: "public.orders.status".into(),
                width: 3,
            },
        )]));
        assert!(
            text.starts_with(
                "-- $1: public.orders.status (text), a random string of 3 digits (its average \
                 width), sent as text by --protocol prepared or extended\n\\set p1 random(100, \
                 999)\n"
            ),
            "{text}"
        );
        crate::script::parse("test", &text).unwrap();
    }

    #[test]
    fn a_fixme_names_the_statement_and_parses() {
        let text = script_text(&statement(vec![(
            1,
            Generator::Fixme {
                what: "compared with\nname (text)".into(),
            },
        )]));
        assert!(
            text.starts_with("-- FIXME: queryid -42: $1 compared with name (text)\n\\set p1 1\n"),
            "{text}"
        );
        crate::script::parse("test", &text).unwrap();
    }

    #[test]
    fn clients_are_twice_the_connections_seen_and_at_least_four() {
        assert_eq!(clients(0), 4);
        assert_eq!(clients(1), 4);
        assert_eq!(clients(4), 8);
        assert_eq!(clients(30), 60);
        assert_eq!(clients(u32::MAX), crate::config::MAX_CLIENTS);
    }

    #[test]
    fn weights_are_per_mille_and_at_least_one() {
        assert_eq!(weight(600, 1000), 600);
        assert_eq!(weight(1, 100_000), 1);
        assert_eq!(weight(2, 3), 667);
    }

    #[test]
    fn names_have_the_rank_the_verb_and_the_table() {
        assert_eq!(
            script_name(3, "SELECT a FROM orders WHERE b = $1"),
            "03-select-orders"
        );
        assert_eq!(
            script_name(12, "INSERT INTO h (a) VALUES ($1)"),
            "12-insert-h"
        );
        assert_eq!(script_name(1, "SELECT $1"), "01-select");
    }
}
