//! A migration file's statements, and the transactions its tool runs them in.
//!
//! First the part of the file the tool applies: dbmate's `-- migrate:up`
//! section, goose's `-- +goose Up` section (a `StatementBegin` ...
//! `StatementEnd` block is one statement), or the whole file. Then each
//! statement with its line, and the steps:
//!
//! - the file's own `BEGIN` ... `COMMIT` (Django's `sqlmigrate` output) is
//!   one transaction, in every mode, so it never nests in the tool's; a
//!   `COMMIT` without `BEGIN` ends the tool's transaction (the trick some
//!   files use before a `CONCURRENTLY` statement), and a `BEGIN` left open
//!   at the end is closed there, as the tool's own `COMMIT` would;
//! - the statements outside such blocks run by the mode: one transaction
//!   (per file, the default), one each (per statement), or none;
//! - a file its tool marks non-transactional runs each statement alone
//!   outside a transaction: `-- no-transaction` as its first line (sqlx),
//!   dbmate's `-- migrate:up transaction:false`, goose's
//!   `-- +goose NO TRANSACTION`, Flyway's `executeInTransaction=false` in
//!   the file's `.sql.conf`, diesel's `run_in_transaction = false` in the
//!   folder's `metadata.toml`; golang-migrate and Prisma have no such mark;
//! - a statement PostgreSQL refuses in a transaction block (`CREATE INDEX
//!   CONCURRENTLY`, `VACUUM`, ...) runs alone outside, splitting the file's
//!   transaction around it (the tools would fail on such a file, Flyway runs
//!   it all outside; the gate measures each statement as it can run). Inside
//!   the file's own `BEGIN` it is refused, as PostgreSQL would.
//!
//! `ALTER TYPE ... ADD VALUE` runs in a transaction on PostgreSQL 12 and
//! later, every major the harness supports, so it stays in its transaction.

use super::folder_layout::{Layout, dbmate_marker, goose_annotation};
use super::{MigrationStatement, MigrationStep, TransactionMode};
use crate::error::Error;
use crate::sql_split::{split_located, split_statements};
use crate::strategy::statements::{Unrollable, first_unrollable};

/// The steps of a migration file of `layout` whose text is `text`; `conf` is
/// a Flyway script configuration's or a diesel `metadata.toml`'s text;
/// `file` names it in messages.
pub(super) fn file_steps(
    file: &str,
    layout: Layout,
    text: &str,
    conf: Option<&str>,
    mode: TransactionMode,
) -> Result<Vec<MigrationStep>, Error> {
    let section = applied_section(layout, text, conf)
        .map_err(|problem| Error::bad_input(format!("{file}: {problem}")))?;
    let statements = section
        .chunks
        .iter()
        .flat_map(chunk_statements)
        .collect::<Vec<_>>();
    let mode = if section.no_transaction {
        TransactionMode::None
    } else {
        mode
    };
    group_steps(file, statements, mode)
}

/// The SQL a tool applies from a file, and whether it marks the file non-transactional.
struct Section<'a> {
    chunks: Vec<Chunk<'a>>,
    no_transaction: bool,
}

/// A piece of the file's SQL and the line it starts on; a `whole` chunk is
/// one statement, however many `;` it holds.
struct Chunk<'a> {
    text: &'a str,
    first_line: usize,
    whole: bool,
}

fn applied_section<'a>(
    layout: Layout,
    text: &'a str,
    conf: Option<&str>,
) -> Result<Section<'a>, String> {
    let whole_file = |no_transaction| Section {
        chunks: vec![Chunk {
            text,
            first_line: 1,
            whole: false,
        }],
        no_transaction,
    };
    match layout {
        Layout::Dbmate => dbmate_up(text),
        Layout::Goose => goose_up(text),
        Layout::Flyway => Ok(whole_file(conf.is_some_and(flyway_non_transactional))),
        Layout::Prisma => Ok(whole_file(false)),
        Layout::Diesel => Ok(whole_file(conf.is_some_and(diesel_non_transactional))),
        Layout::Sqitch => Ok(whole_file(false)),
        Layout::Numbered | Layout::UpDown | Layout::PlainSql => Ok(whole_file(
            text.trim_start_matches('\u{feff}')
                .starts_with("-- no-transaction"),
        )),
    }
}

/// A line of a file: where it starts, where the next one starts, its
/// 1-based number, and its text without the line break.
struct Line<'a> {
    start: usize,
    next: usize,
    number: usize,
    text: &'a str,
}

fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    text.split_inclusive('\n')
        .scan(0, |offset, line| {
            let start = *offset;
            *offset += line.len();
            Some((start, *offset, line.trim_end_matches(['\n', '\r'])))
        })
        .enumerate()
        .map(|(index, (start, next, text))| Line {
            start,
            next,
            number: index + 1,
            text,
        })
}

/// dbmate's up section: from the line after `-- migrate:up` to the
/// `-- migrate:down` line (or the end).
fn dbmate_up(text: &str) -> Result<Section<'_>, String> {
    let mut up: Option<(usize, usize, bool)> = None;
    let mut end = text.len();
    for line in lines(text) {
        match up {
            None => {
                if let Some(options) = dbmate_marker(line.text, "migrate:up") {
                    let no_transaction = options
                        .split_whitespace()
                        .any(|option| option == "transaction:false");
                    up = Some((line.next, line.number + 1, no_transaction));
                }
            }
            Some(_) if dbmate_marker(line.text, "migrate:down").is_some() => {
                end = line.start;
                break;
            }
            Some(_) => {}
        }
    }
    let (from, first_line, no_transaction) = up.ok_or(
        "no -- migrate:up line, which dbmate needs before the statements it applies; \
         add it, or give the folder's layout with --layout",
    )?;
    Ok(Section {
        chunks: vec![Chunk {
            text: &text[from..end],
            first_line,
            whole: false,
        }],
        no_transaction,
    })
}

/// goose's up section: the lines between `-- +goose Up` and `-- +goose
/// Down`, each `StatementBegin` ... `StatementEnd` block one statement.
fn goose_up(text: &str) -> Result<Section<'_>, String> {
    let mut chunks = Vec::new();
    let mut no_transaction = false;
    let mut in_up = false;
    let mut seen_up = false;
    // Where the current chunk starts (byte, line), and whether it is a block.
    let mut open: Option<(usize, usize, bool)> = None;
    for line in lines(text) {
        let Some(annotation) = goose_annotation(line.text) else {
            continue;
        };
        if let Some((from, first_line, whole)) = open.take() {
            chunks.push(Chunk {
                text: &text[from..line.start],
                first_line,
                whole,
            });
        }
        let upper = annotation.to_ascii_uppercase();
        match upper.as_str() {
            "NO TRANSACTION" => no_transaction = true,
            "UP" => {
                in_up = true;
                seen_up = true;
            }
            "DOWN" => in_up = false,
            _ => {}
        }
        if in_up {
            let whole = upper == "STATEMENTBEGIN";
            open = Some((line.next, line.number + 1, whole));
        }
    }
    if let Some((from, first_line, whole)) = open {
        chunks.push(Chunk {
            text: &text[from..],
            first_line,
            whole,
        });
    }
    if !seen_up {
        return Err(
            "no -- +goose Up line, which goose needs before the statements it \
                    applies; add it, or give the folder's layout with --layout"
                .to_string(),
        );
    }
    Ok(Section {
        chunks,
        no_transaction,
    })
}

/// Whether a diesel migration's `metadata.toml` says `run_in_transaction = false`.
fn diesel_non_transactional(metadata: &str) -> bool {
    let parsed: Result<toml::Table, _> = metadata.parse();
    parsed.is_ok_and(|table| table.get("run_in_transaction") == Some(&toml::Value::Boolean(false)))
}

/// Whether a Flyway script configuration says `executeInTransaction=false`.
fn flyway_non_transactional(conf: &str) -> bool {
    conf.lines().any(|line| {
        line.split_once('=').is_some_and(|(key, value)| {
            key.trim() == "executeInTransaction" && value.trim().eq_ignore_ascii_case("false")
        })
    })
}

fn chunk_statements(chunk: &Chunk<'_>) -> Vec<MigrationStatement> {
    let line_of = |offset: usize| chunk.first_line + chunk.text[..offset].matches('\n').count();
    if chunk.whole {
        let start = chunk.text.len() - chunk.text.trim_start().len();
        let sql = chunk.text.trim();
        let sql = sql.strip_suffix(';').unwrap_or(sql).trim_end();
        if sql.is_empty() {
            return Vec::new();
        }
        return vec![MigrationStatement {
            sql: sql.to_string(),
            line: line_of(start),
        }];
    }
    split_located(chunk.text)
        .into_iter()
        .map(|located| MigrationStatement {
            line: line_of(located.offset),
            sql: located.sql,
        })
        .collect()
}

/// What a statement means for the transactions around it.
enum Kind {
    Begin,
    Commit,
    Outside,
    Plain,
}

fn kind(file: &str, statement: &MigrationStatement) -> Result<Kind, Error> {
    // Only the statement's own leading words: a block goose runs as one
    // statement may hold more (`BEGIN ATOMIC ...; END`).
    let leading = split_statements(&statement.sql);
    let first = leading.first().map_or("", String::as_str);
    match first_unrollable(first, u32::MAX) {
        None => Ok(Kind::Plain),
        Some(Unrollable::OutsideTransaction(_)) => Ok(Kind::Outside),
        Some(Unrollable::OwnTransaction("BEGIN")) => Ok(Kind::Begin),
        Some(Unrollable::OwnTransaction("COMMIT")) => Ok(Kind::Commit),
        Some(Unrollable::OwnTransaction(what)) => Err(Error::bad_input(format!(
            "{file}:{}: {what} in a migration undoes or parks its own work, so there is \
             nothing to check; remove it from the file",
            statement.line
        ))),
    }
}

/// The steps of a file's statements under `mode` (see the module comment).
fn group_steps(
    file: &str,
    statements: Vec<MigrationStatement>,
    mode: TransactionMode,
) -> Result<Vec<MigrationStep>, Error> {
    let mut steps = Vec::new();
    // The file's own BEGIN (its line) and the statements since.
    let mut block: Option<(usize, Vec<MigrationStatement>)> = None;
    // Statements of the current per-file transaction.
    let mut pending: Vec<MigrationStatement> = Vec::new();
    for statement in statements {
        let kind = kind(file, &statement)?;
        match (kind, &mut block) {
            (Kind::Begin, Some((began, _))) => {
                return Err(Error::bad_input(format!(
                    "{file}:{}: BEGIN inside the transaction the file began at line {began}; \
                     end that one with COMMIT first",
                    statement.line
                )));
            }
            (Kind::Begin, None) => {
                close_pending(&mut steps, &mut pending);
                block = Some((statement.line, Vec::new()));
            }
            (Kind::Commit, Some(_)) => {
                let (_, statements) = block.take().expect("matched Some");
                push_step(&mut steps, statements, true);
            }
            (Kind::Commit, None) => close_pending(&mut steps, &mut pending),
            (Kind::Outside, Some((began, _))) => {
                return Err(Error::bad_input(format!(
                    "{file}:{}: \"{}\" cannot run inside a transaction block, and the file \
                     began one at line {began}; move it after that transaction's COMMIT",
                    statement.line,
                    first_line(&statement.sql)
                )));
            }
            (Kind::Outside, None) => {
                close_pending(&mut steps, &mut pending);
                push_step(&mut steps, vec![statement], false);
            }
            (Kind::Plain, Some((_, statements))) => statements.push(statement),
            (Kind::Plain, None) => match mode {
                TransactionMode::PerFile => pending.push(statement),
                TransactionMode::PerStatement => push_step(&mut steps, vec![statement], true),
                TransactionMode::None => push_step(&mut steps, vec![statement], false),
            },
        }
    }
    if let Some((_, statements)) = block {
        push_step(&mut steps, statements, true);
    }
    close_pending(&mut steps, &mut pending);
    Ok(steps)
}

fn close_pending(steps: &mut Vec<MigrationStep>, pending: &mut Vec<MigrationStatement>) {
    push_step(steps, std::mem::take(pending), true);
}

fn push_step(
    steps: &mut Vec<MigrationStep>,
    statements: Vec<MigrationStatement>,
    in_transaction: bool,
) {
    if !statements.is_empty() {
        steps.push(MigrationStep {
            statements,
            in_transaction,
        });
    }
}

fn first_line(sql: &str) -> &str {
    sql.lines().next().unwrap_or(sql)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each step as (in a transaction, [(line, sql)]).
    fn steps(
        layout: Layout,
        text: &str,
        mode: TransactionMode,
    ) -> Vec<(bool, Vec<(usize, String)>)> {
        file_steps("m.sql", layout, text, None, mode)
            .unwrap()
            .into_iter()
            .map(|step| {
                let statements = step
                    .statements
                    .into_iter()
                    .map(|statement| (statement.line, statement.sql))
                    .collect();
                (step.in_transaction, statements)
            })
            .collect()
    }

    fn s(line: usize, sql: &str) -> (usize, String) {
        (line, sql.to_string())
    }

    const THREE: &str = "CREATE TABLE a (id int);\n\
                         CREATE INDEX CONCURRENTLY a_id ON a (id);\n\
                         ALTER TABLE a ADD b int;\n";

    #[test]
    fn a_file_is_one_transaction_split_around_a_concurrent_statement() {
        assert_eq!(
            steps(Layout::Numbered, THREE, TransactionMode::PerFile),
            [
                (true, vec![s(1, "CREATE TABLE a (id int)")]),
                (
                    false,
                    vec![s(2, "CREATE INDEX CONCURRENTLY a_id ON a (id)")]
                ),
                (true, vec![s(3, "ALTER TABLE a ADD b int")]),
            ]
        );
        let text = "ALTER TABLE a ADD b int;\n-- why\nALTER TABLE a ADD c int;\n";
        assert_eq!(
            steps(Layout::Numbered, text, TransactionMode::PerFile),
            [(
                true,
                vec![
                    s(1, "ALTER TABLE a ADD b int"),
                    s(3, "ALTER TABLE a ADD c int")
                ]
            )]
        );
    }

    #[test]
    fn per_statement_and_none_modes() {
        assert_eq!(
            steps(Layout::Numbered, THREE, TransactionMode::PerStatement),
            [
                (true, vec![s(1, "CREATE TABLE a (id int)")]),
                (
                    false,
                    vec![s(2, "CREATE INDEX CONCURRENTLY a_id ON a (id)")]
                ),
                (true, vec![s(3, "ALTER TABLE a ADD b int")]),
            ]
        );
        let none = steps(Layout::Numbered, THREE, TransactionMode::None);
        assert_eq!(none.len(), 3);
        assert!(none.iter().all(|(in_transaction, _)| !in_transaction));
    }

    #[test]
    fn the_tools_marks_make_a_file_non_transactional() {
        let sqlx = format!("-- no-transaction\n{THREE}");
        let dbmate =
            format!("-- migrate:up transaction:false\n{THREE}-- migrate:down\nDROP TABLE a;\n");
        let goose = format!(
            "-- +goose NO TRANSACTION\n-- +goose Up\n{THREE}-- +goose Down\nDROP TABLE a;\n"
        );
        for (layout, text) in [
            (Layout::Numbered, sqlx.as_str()),
            (Layout::Dbmate, dbmate.as_str()),
            (Layout::Goose, goose.as_str()),
        ] {
            let found = steps(layout, text, TransactionMode::PerFile);
            assert_eq!(found.len(), 3, "{layout}: {found:?}");
            assert!(
                found.iter().all(|(in_transaction, _)| !in_transaction),
                "{layout}: {found:?}"
            );
        }
        let conf = "flyway.x=1\nexecuteInTransaction = false\n";
        let flyway = file_steps(
            "V1__a.sql",
            Layout::Flyway,
            THREE,
            Some(conf),
            TransactionMode::PerFile,
        )
        .unwrap();
        assert!(flyway.iter().all(|step| !step.in_transaction));
        // Elsewhere than the first line, sqlx's mark is a comment.
        let late = format!("SELECT 1;\n-- no-transaction\n{THREE}");
        assert!(steps(Layout::Numbered, &late, TransactionMode::PerFile)[0].0);
    }

    #[test]
    fn the_files_own_begin_and_commit_are_its_transaction_and_never_nest() {
        let django = "BEGIN;\n--\n-- Create model Author\n--\nCREATE TABLE author (id int);\n\
                      CREATE INDEX author_id ON author (id);\nCOMMIT;\n";
        assert_eq!(
            steps(Layout::Numbered, django, TransactionMode::PerFile),
            [(
                true,
                vec![
                    s(5, "CREATE TABLE author (id int)"),
                    s(6, "CREATE INDEX author_id ON author (id)")
                ]
            )]
        );
        assert_eq!(
            steps(Layout::Numbered, django, TransactionMode::None),
            steps(Layout::Numbered, django, TransactionMode::PerFile)
        );
        let commit_trick = "ALTER TABLE a ADD b int;\nCOMMIT;\nCREATE INDEX CONCURRENTLY i ON a (b);\nBEGIN;\nALTER TABLE a ADD c int;\n";
        assert_eq!(
            steps(Layout::Numbered, commit_trick, TransactionMode::PerFile),
            [
                (true, vec![s(1, "ALTER TABLE a ADD b int")]),
                (false, vec![s(3, "CREATE INDEX CONCURRENTLY i ON a (b)")]),
                (true, vec![s(5, "ALTER TABLE a ADD c int")]),
            ]
        );
    }

    #[test]
    fn impossible_transactions_are_refused_with_the_line() {
        let refused = |text: &str| {
            file_steps(
                "m.sql",
                Layout::Numbered,
                text,
                None,
                TransactionMode::PerFile,
            )
            .unwrap_err()
            .to_string()
        };
        let nested = refused("BEGIN;\nSELECT 1;\nBEGIN;\nCOMMIT;\n");
        assert!(
            nested.starts_with("m.sql:3: BEGIN inside the transaction the file began at line 1"),
            "{nested}"
        );
        let concurrent = refused("BEGIN;\nCREATE INDEX CONCURRENTLY i ON a (b);\nCOMMIT;\n");
        assert!(
            concurrent
                .starts_with("m.sql:2: \"CREATE INDEX CONCURRENTLY i ON a (b)\" cannot run inside"),
            "{concurrent}"
        );
        let rollback = refused("ALTER TABLE a ADD b int;\nROLLBACK;\n");
        assert!(
            rollback.starts_with("m.sql:2: ROLLBACK in a migration"),
            "{rollback}"
        );
    }

    #[test]
    fn dbmate_applies_its_up_section_only() {
        let text = "-- a comment\n-- migrate:up\nCREATE TABLE a (id int);\n\nALTER TABLE a ADD b int;\n\
                    -- migrate:down\nDROP TABLE a;\n";
        assert_eq!(
            steps(Layout::Dbmate, text, TransactionMode::PerFile),
            [(
                true,
                vec![
                    s(3, "CREATE TABLE a (id int)"),
                    s(5, "ALTER TABLE a ADD b int")
                ]
            )]
        );
    }

    #[test]
    fn goose_applies_its_up_section_with_its_statement_blocks() {
        let text = "-- +goose Up\nCREATE TABLE a (id int);\n-- +goose StatementBegin\n\
                    CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END;\n\
                    -- +goose StatementEnd\nALTER TABLE a ADD b int;\n-- +goose Down\nDROP TABLE a;\n";
        assert_eq!(
            steps(Layout::Goose, text, TransactionMode::PerStatement),
            [
                (true, vec![s(2, "CREATE TABLE a (id int)")]),
                (
                    true,
                    vec![s(
                        4,
                        "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END"
                    )]
                ),
                (true, vec![s(6, "ALTER TABLE a ADD b int")]),
            ]
        );
    }
}
