//! What PostgreSQL allows inside `BEGIN ... ROLLBACK`, read from a DDL step's
//! text. An `--in-place` run rolls every step back, so a step that cannot run
//! in a transaction block, or that ends the transaction itself, must be found
//! before the run starts ([`check_rollback`], which the target calls once it
//! knows the server's version). Only the leading keywords of each statement
//! matter, so this reads words and skips what is quoted or commented; it is no
//! parser. The DDL injector (`scenario/ddl/`) asks the same words whether a
//! step must run outside a transaction and whether it rewrites its table.

use super::NamedStrategy;
use crate::error::Error;

/// A statement that cannot run inside `BEGIN ... ROLLBACK`, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unrollable {
    /// PostgreSQL refuses it in a transaction block (`CREATE INDEX CONCURRENTLY`, `VACUUM`, ...).
    OutsideTransaction(&'static str),
    /// It begins or ends a transaction itself (`BEGIN`, `COMMIT`, ...).
    OwnTransaction(&'static str),
}

/// The first statement of `step` that cannot be rolled back on a server of
/// `server_version_num` (e.g. 150004), if any.
pub fn first_unrollable(step: &str, server_version_num: u32) -> Option<Unrollable> {
    statement_words(step)
        .iter()
        .find_map(|words| unrollable(words, server_version_num))
}

/// Whether a statement of `step` rewrites a whole table, by its text:
/// `ALTER TABLE ... ALTER COLUMN ... TYPE`, `VACUUM FULL`, `CLUSTER`. (A type
/// change PostgreSQL finds binary-coercible skips the rewrite; the text cannot tell.)
pub fn rewrites_table(step: &str) -> bool {
    statement_words(step).iter().any(|words| {
        let word = |index: usize| words.get(index).map_or("", String::as_str);
        let has = |wanted: &str| words.iter().any(|w| w == wanted);
        match (word(0), word(1)) {
            ("ALTER", "TABLE") => (2..words.len()).any(|index| {
                if word(index) != "ALTER" {
                    return false;
                }
                // ALTER [COLUMN] name [SET DATA] TYPE; a quoted name is not among the words.
                let name = index + 1 + usize::from(word(index + 1) == "COLUMN");
                [name, name + 1]
                    .into_iter()
                    .any(|at| word(at) == "TYPE" || (word(at) == "SET" && word(at + 1) == "DATA"))
            }),
            ("VACUUM", _) => has("FULL"),
            ("CLUSTER", _) => true,
            _ => false,
        }
    })
}

/// The columns whose type a statement of `step` changes (`ALTER TABLE [IF
/// EXISTS] [ONLY] t ALTER [COLUMN] c [SET DATA] TYPE ...`), as (table,
/// column): the last part of each name, upper-cased as [`statement_words`]
/// gives them. A quoted name is not among the words, so it is not found.
pub fn column_type_changes(step: &str) -> Vec<(String, String)> {
    let mut changes = Vec::new();
    for words in statement_words(step) {
        let word = |index: usize| words.get(index).map_or("", String::as_str);
        if (word(0), word(1)) != ("ALTER", "TABLE") {
            continue;
        }
        let mut at = 2;
        if (word(at), word(at + 1)) == ("IF", "EXISTS") {
            at += 2;
        }
        if word(at) == "ONLY" {
            at += 1;
        }
        let table = last_part(word(at));
        for index in at + 1..words.len() {
            if word(index) != "ALTER" {
                continue;
            }
            let column = index + 1 + usize::from(word(index + 1) == "COLUMN");
            let changes_type = word(column + 1) == "TYPE"
                || (word(column + 1), word(column + 2), word(column + 3))
                    == ("SET", "DATA", "TYPE");
            if changes_type && !word(column).is_empty() {
                changes.push((table.to_string(), word(column).to_string()));
            }
        }
    }
    changes
}

/// `orders` of `public.orders`.
pub fn last_part(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// Whether a statement of `step` builds an index concurrently (`CREATE
/// [UNIQUE] INDEX CONCURRENTLY`, `REINDEX ... CONCURRENTLY`), which leaves an
/// INVALID index behind when it fails.
pub fn builds_index_concurrently(step: &str) -> bool {
    statement_words(step).iter().any(|words| {
        let word = |index: usize| words.get(index).map_or("", String::as_str);
        let concurrently = words.iter().any(|w| w == "CONCURRENTLY");
        concurrently
            && matches!(
                (word(0), word(1)),
                ("CREATE", "INDEX" | "UNIQUE") | ("REINDEX", _)
            )
    })
}

/// A statement that PostgreSQL refuses inside a transaction block (`CREATE INDEX
/// CONCURRENTLY`, `REINDEX ... CONCURRENTLY`, `VACUUM`, ...): a `set_local`
/// strategy runs it with a session-level `SET` instead of wrapping it.
pub fn must_run_outside_transaction(sql: &str) -> bool {
    matches!(
        first_unrollable(sql, u32::MAX),
        Some(Unrollable::OutsideTransaction(_))
    )
}

/// Refuses, before an `--in-place` run that rolls its DDL back starts, what
/// `BEGIN ... ROLLBACK` cannot hold: a step PostgreSQL runs only outside a
/// transaction block or one with its own `BEGIN`/`COMMIT` (on a server of
/// `server_version_num`), and a strategy whose own recipe is several steps,
/// each of which needs the one before committed. `migration` is the
/// workload's `[ddl]` steps, which a strategy without its own runs.
pub fn check_rollback(
    migration: &[String],
    strategies: &[NamedStrategy],
    server_version_num: u32,
) -> Result<(), Error> {
    const FIX: &str = "add --apply to run it for real (to compare several strategies, \
                       with reset SQL in the workload that undoes it)";
    for strategy in strategies {
        let name = &strategy.name;
        if let Some(recipe) = strategy.ddl_steps.as_ref().filter(|steps| steps.len() > 1) {
            return Err(Error::bad_input(format!(
                "--in-place rolls each DDL step back, and strategy {name} is a recipe of {} \
                 steps, each needing the one before committed ({}); {FIX}, \
                 or leave {name} out of --strategies",
                recipe.len(),
                recipe.join("; ")
            )));
        }
        let steps = strategy.ddl_steps.as_deref().unwrap_or(migration);
        for step in steps {
            let whose = match &strategy.ddl_steps {
                Some(_) => format!("strategy {name}'s DDL step"),
                None => "DDL step".to_string(),
            };
            let problem = match first_unrollable(step, server_version_num) {
                None => continue,
                Some(Unrollable::OutsideTransaction(what)) => {
                    format!("cannot run inside a transaction block ({what}); {FIX}")
                }
                Some(Unrollable::OwnTransaction(what)) => format!(
                    "has its own {what}, which would end the transaction before the rollback; \
                     drop it (each step already runs in a transaction), or {FIX}"
                ),
            };
            return Err(Error::bad_input(format!(
                "--in-place rolls each DDL step back, and {whose} \"{}\" {problem}",
                step.trim()
            )));
        }
    }
    Ok(())
}

fn unrollable(words: &[String], server_version_num: u32) -> Option<Unrollable> {
    let word = |index: usize| words.get(index).map_or("", String::as_str);
    let has = |wanted: &str| words.iter().any(|w| w == wanted);
    let outside = |what| Some(Unrollable::OutsideTransaction(what));
    let own = |what| Some(Unrollable::OwnTransaction(what));
    match (word(0), word(1)) {
        ("VACUUM", _) => outside("VACUUM"),
        ("CREATE", "INDEX" | "UNIQUE") if has("CONCURRENTLY") => {
            outside("CREATE INDEX CONCURRENTLY")
        }
        ("DROP", "INDEX") if has("CONCURRENTLY") => outside("DROP INDEX CONCURRENTLY"),
        ("REINDEX", _) if has("CONCURRENTLY") => outside("REINDEX ... CONCURRENTLY"),
        ("REINDEX", "DATABASE" | "SYSTEM") => outside("REINDEX DATABASE or SYSTEM"),
        ("ALTER", "TABLE") if has("DETACH") && has("CONCURRENTLY") => {
            outside("ALTER TABLE ... DETACH PARTITION ... CONCURRENTLY")
        }
        ("ALTER", "TYPE") if has("ADD") && has("VALUE") && server_version_num < 120000 => {
            outside("ALTER TYPE ... ADD VALUE before PostgreSQL 12")
        }
        ("ALTER", "DATABASE") if has("TABLESPACE") => outside("ALTER DATABASE ... SET TABLESPACE"),
        ("ALTER", "SYSTEM") => outside("ALTER SYSTEM"),
        ("CREATE" | "DROP", "DATABASE") => outside("CREATE or DROP DATABASE"),
        ("CREATE" | "DROP", "TABLESPACE") => outside("CREATE or DROP TABLESPACE"),
        ("CREATE" | "DROP", "SUBSCRIPTION") => outside("CREATE or DROP SUBSCRIPTION"),
        ("CLUSTER", "" | "VERBOSE") => outside("CLUSTER of every table"),
        ("BEGIN" | "START", _) => own("BEGIN"),
        ("COMMIT" | "END", _) => own("COMMIT"),
        ("PREPARE", "TRANSACTION") => own("PREPARE TRANSACTION"),
        // ROLLBACK TO SAVEPOINT stays inside the transaction.
        ("ROLLBACK" | "ABORT", _) if !has("TO") => own("ROLLBACK"),
        _ => None,
    }
}

/// The words of each statement of `sql`, upper-cased, a qualified name
/// (`public.orders`) as one word; strings, quoted identifiers, dollar-quoted
/// bodies, comments and punctuation are left out. The load scripts' statements
/// are read with it too (`role::statement_effect`).
pub(crate) fn statement_words(sql: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = sql.chars().collect();
    let mut statements = vec![Vec::new()];
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        let next = chars.get(index + 1).copied();
        index = match (c, next) {
            (';', _) => {
                statements.push(Vec::new());
                index + 1
            }
            ('-', Some('-')) => skip_past(&chars, index, &['\n']),
            ('/', Some('*')) => skip_past(&chars, index + 2, &['*', '/']),
            ('\'', _) | ('"', _) => skip_quoted(&chars, index, c),
            ('$', _) => skip_dollar_quoted(&chars, index),
            (c, _) if c.is_alphabetic() || c == '_' => {
                let start = index;
                let in_word = |at: usize| {
                    chars
                        .get(at)
                        .is_some_and(|c| c.is_alphanumeric() || *c == '_')
                };
                while in_word(index)
                    || (chars.get(index) == Some(&'.')
                        && chars
                            .get(index + 1)
                            .is_some_and(|c| c.is_alphabetic() || *c == '_'))
                {
                    index += 1;
                }
                let word: String = chars[start..index].iter().collect();
                statements
                    .last_mut()
                    .expect("never empty")
                    .push(word.to_ascii_uppercase());
                index
            }
            _ => index + 1,
        };
    }
    statements.retain(|words| !words.is_empty());
    statements
}

/// The index just after the first occurrence of `end` at or after `from`, else the end.
fn skip_past(chars: &[char], from: usize, end: &[char]) -> usize {
    (from..chars.len())
        .find(|&at| chars[at..].starts_with(end))
        .map_or(chars.len(), |at| at + end.len())
}

/// Skips `'...'` or `"..."` starting at `from`; a doubled quote stays inside.
fn skip_quoted(chars: &[char], from: usize, quote: char) -> usize {
    let mut index = from + 1;
    while index < chars.len() {
        if chars[index] == quote {
            if chars.get(index + 1) == Some(&quote) {
                index += 2;
                continue;
            }
            return index + 1;
        }
        index += 1;
    }
    chars.len()
}

/// Skips `$tag$ ... $tag$` starting at `from`; a `$` that opens no tag (`$1`) is one character.
fn skip_dollar_quoted(chars: &[char], from: usize) -> usize {
    let tag_end = (from + 1..chars.len())
        .find(|&at| !(chars[at].is_alphanumeric() || chars[at] == '_'))
        .unwrap_or(chars.len());
    let opens_tag = chars.get(tag_end) == Some(&'$')
        && !chars.get(from + 1).is_some_and(|c| c.is_ascii_digit());
    if !opens_tag {
        return from + 1;
    }
    let tag: Vec<char> = chars[from..=tag_end].to_vec();
    skip_past(chars, tag_end + 1, &tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PG15: u32 = 150004;

    #[test]
    fn column_type_changes_are_read_from_the_text() {
        assert_eq!(
            column_type_changes(
                "ALTER TABLE public.accounts ALTER COLUMN balance TYPE numeric(20,2)"
            ),
            [("ACCOUNTS".to_string(), "BALANCE".to_string())]
        );
        assert_eq!(
            column_type_changes(
                "alter table if exists only t alter a set data type bigint, alter column b type text; \
                 ALTER TABLE u ADD COLUMN c int"
            ),
            [
                ("T".to_string(), "A".to_string()),
                ("T".to_string(), "B".to_string())
            ]
        );
        assert!(column_type_changes("ALTER TABLE t ALTER COLUMN c SET NOT NULL").is_empty());
        assert!(column_type_changes("ALTER TABLE t ADD COLUMN c int").is_empty());
    }

    #[test]
    fn a_rewrite_is_read_from_the_text() {
        assert!(rewrites_table(
            "ALTER TABLE orders ALTER COLUMN qty TYPE bigint"
        ));
        assert!(rewrites_table(
            "alter table orders alter qty set data type bigint;"
        ));
        assert!(rewrites_table("VACUUM FULL orders"));
        assert!(rewrites_table("CLUSTER orders USING orders_pkey"));
        assert!(!rewrites_table("ALTER TABLE orders ADD COLUMN note text"));
        assert!(rewrites_table(
            "ALTER TABLE orders ALTER \"Qty\" TYPE bigint"
        ));
        assert!(!rewrites_table("ALTER TABLE orders ADD COLUMN type text"));
        assert!(!rewrites_table(
            "ALTER TABLE orders ALTER COLUMN note SET NOT NULL"
        ));
        assert!(!rewrites_table("VACUUM orders"));
        assert!(!rewrites_table("CREATE INDEX ON orders (total)"));
    }

    #[test]
    fn a_concurrent_index_build_is_read_from_the_text() {
        assert!(builds_index_concurrently(
            "CREATE INDEX CONCURRENTLY orders_note_idx ON orders (note)"
        ));
        assert!(builds_index_concurrently(
            "create unique index concurrently if not exists \"Orders_Idx\" on \"Orders\" (id)"
        ));
        assert!(builds_index_concurrently(
            "REINDEX INDEX CONCURRENTLY orders_note_idx"
        ));
        assert!(!builds_index_concurrently(
            "CREATE INDEX orders_note_idx ON orders (note)"
        ));
        assert!(!builds_index_concurrently(
            "DROP INDEX CONCURRENTLY orders_note_idx"
        ));
    }

    fn outside(step: &str) -> Option<&'static str> {
        match first_unrollable(step, PG15) {
            Some(Unrollable::OutsideTransaction(what)) => Some(what),
            _ => None,
        }
    }

    #[test]
    fn statements_refused_in_a_transaction_block_are_found() {
        let cases = [
            (
                "CREATE INDEX CONCURRENTLY orders_note_idx ON orders (note)",
                "CREATE INDEX CONCURRENTLY",
            ),
            (
                "create unique index concurrently i on t (a)",
                "CREATE INDEX CONCURRENTLY",
            ),
            ("DROP INDEX CONCURRENTLY i", "DROP INDEX CONCURRENTLY"),
            (
                "REINDEX (VERBOSE) INDEX CONCURRENTLY i",
                "REINDEX ... CONCURRENTLY",
            ),
            ("  vacuum (analyze) orders", "VACUUM"),
            ("CREATE DATABASE copy", "CREATE or DROP DATABASE"),
            (
                "ALTER TABLE m DETACH PARTITION p CONCURRENTLY",
                "ALTER TABLE ... DETACH PARTITION ... CONCURRENTLY",
            ),
            (
                "SET lock_timeout = '1s'; CREATE INDEX CONCURRENTLY i ON t (a)",
                "CREATE INDEX CONCURRENTLY",
            ),
        ];
        for (step, what) in cases {
            assert_eq!(outside(step), Some(what), "{step}");
        }
    }

    #[test]
    fn ordinary_ddl_and_quoted_keywords_are_rollable() {
        for step in [
            "ALTER TABLE orders ADD COLUMN note text",
            "CREATE INDEX orders_note_idx ON orders (note)",
            "ALTER TABLE orders ADD COLUMN concurrently text DEFAULT 'VACUUM'",
            "COMMENT ON TABLE orders IS 'run VACUUM; then COMMIT'",
            "-- VACUUM later\nALTER TABLE orders ADD COLUMN a int",
            "/* BEGIN */ ALTER TABLE orders ADD COLUMN a int",
            "DO $$ BEGIN PERFORM 1; COMMIT; END $$",
            "DO $body$ BEGIN RAISE NOTICE 'x'; END $body$",
            "SAVEPOINT s; ALTER TABLE t ADD COLUMN a int; ROLLBACK TO SAVEPOINT s",
            "ALTER TYPE mood ADD VALUE 'meh'",
        ] {
            assert_eq!(first_unrollable(step, PG15), None, "{step}");
        }
    }

    #[test]
    fn own_transactions_and_old_enum_additions_are_unrollable() {
        assert_eq!(
            first_unrollable(
                "BEGIN; LOCK TABLE customers IN ACCESS EXCLUSIVE MODE; COMMIT",
                PG15
            ),
            Some(Unrollable::OwnTransaction("BEGIN"))
        );
        assert_eq!(
            first_unrollable("ALTER TABLE t ADD COLUMN a int; COMMIT", PG15),
            Some(Unrollable::OwnTransaction("COMMIT"))
        );
        assert_eq!(
            first_unrollable("ALTER TYPE mood ADD VALUE 'meh'", 110022),
            Some(Unrollable::OutsideTransaction(
                "ALTER TYPE ... ADD VALUE before PostgreSQL 12"
            ))
        );
    }

    #[test]
    fn concurrent_builds_and_vacuum_run_outside_a_transaction() {
        assert!(must_run_outside_transaction(
            "CREATE INDEX CONCURRENTLY orders_note_idx ON orders (note)"
        ));
        assert!(must_run_outside_transaction("reindex index concurrently i"));
        assert!(must_run_outside_transaction("  VACUUM orders"));
        assert!(!must_run_outside_transaction(
            "ALTER TABLE orders ADD COLUMN note text"
        ));
    }

    fn strategy(name: &str, ddl_steps: Option<&[&str]>) -> NamedStrategy {
        let mut strategy = crate::strategy::preset("naive").unwrap();
        strategy.name = name.to_string();
        strategy.ddl_steps = ddl_steps.map(|steps| steps.iter().map(|s| s.to_string()).collect());
        strategy
    }

    #[test]
    fn a_rolled_back_run_refuses_what_a_transaction_cannot_hold() {
        let migration = vec!["ALTER TABLE orders ADD COLUMN note text".to_string()];
        let naive = strategy("naive", None);
        check_rollback(&migration, std::slice::from_ref(&naive), PG15).unwrap();

        let concurrent = vec!["CREATE INDEX CONCURRENTLY orders_note_idx ON orders (note)".into()];
        let message = check_rollback(&concurrent, std::slice::from_ref(&naive), PG15)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains(
                "DDL step \"CREATE INDEX CONCURRENTLY orders_note_idx ON orders (note)\" cannot \
                 run inside a transaction block (CREATE INDEX CONCURRENTLY); add --apply"
            ),
            "{message}"
        );

        let recipe = strategy(
            "not-valid",
            Some(&[
                "ALTER TABLE o ADD CONSTRAINT c CHECK (a > 0) NOT VALID",
                "ALTER TABLE o VALIDATE CONSTRAINT c",
            ]),
        );
        let err = check_rollback(&migration, &[naive.clone(), recipe], PG15).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let message = err.to_string();
        assert!(
            message.contains("strategy not-valid is a recipe of 2 steps"),
            "{message}"
        );
        assert!(
            message.contains("leave not-valid out of --strategies"),
            "{message}"
        );

        let own = strategy(
            "lock-first",
            Some(&["BEGIN; LOCK TABLE c; ALTER TABLE c ADD COLUMN e text; COMMIT"]),
        );
        let message = check_rollback(&migration, &[own], PG15)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("strategy lock-first's DDL step"),
            "{message}"
        );
        assert!(message.contains("has its own BEGIN"), "{message}");
    }
}
