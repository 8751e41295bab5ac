//! The fixes of a failed migration's statements: one per statement that
//! blocks traffic on a table that existed before it, in a form that fits
//! the statement (NOT VALID only for `ALTER TABLE ... ADD`, CONCURRENTLY in
//! a migration its tool runs outside a transaction, a backfill in batches
//! outside the transaction whose lock it runs under), and never lock_timeout
//! for a statement that queues for nothing.

use crate::choices::Layout;
use crate::export::format::trim_number;
use crate::metrics::StrategyReport;
use crate::metrics::lock_trace::{Blocks, RelationKind, TracedLock, TracedStatement, held_before};
use crate::strategy::statements::statement_words;

/// One fix per statement that blocks traffic on a table that existed
/// before the migration (`existing_tables`), the one that blocks the most
/// first (the longest held among equals), with how long the deployed
/// migration ran (its lock wait included); statements with the same fix are
/// one sentence naming their tables: `CREATE INDEX blocks writes on orders
/// for 1.8 s: use CREATE INDEX CONCURRENTLY, ...`.
pub fn lock_fixes(
    statements: &[TracedStatement],
    existing_tables: &[String],
    deployed: &StrategyReport,
    layout: Layout,
) -> Vec<String> {
    let mut risky: Vec<(&TracedStatement, TracedLock, Option<u32>)> = statements
        .iter()
        .enumerate()
        .filter_map(|(index, statement)| {
            // A lock the transaction already holds as strongly neither queues
            // nor blocks anyone new: the earlier statement's fix covers it,
            // unless this one reads or rewrites the table under it: then the
            // hold it extends is charged to it, at the mode held.
            let under = |lock: &TracedLock| {
                held_before(&statements[..index], statement, &lock.relation)
                    .filter(|(held, _)| lock.mode.covered_by(*held))
            };
            let works_under = |lock: &TracedLock| lock.scanned == Some(true) || lock.rewritten;
            let lock = (statement.locks.iter())
                .filter(|lock| lock.kind == RelationKind::Table)
                .filter(|lock| existing_tables.contains(&lock.relation))
                .filter_map(|lock| match under(lock) {
                    None => Some((lock.clone(), None)),
                    Some((held, by)) if works_under(lock) => Some((
                        TracedLock {
                            mode: held.max(lock.mode),
                            ..lock.clone()
                        },
                        Some(by),
                    )),
                    Some(_) => None,
                })
                .filter(|(lock, _)| lock.blocks() != Blocks::Nothing)
                .max_by_key(|(lock, _)| (lock.blocks(), lock.mode))?;
            Some((statement, lock.0, lock.1))
        })
        .collect();
    risky.sort_by(|(a, x, _), (b, y, _)| {
        (y.blocks(), y.mode)
            .cmp(&(x.blocks(), x.mode))
            .then(b.held_ms.total_cmp(&a.held_ms))
    });
    // (what, what it blocks, fix) with the tables, in the order found.
    let mut sentences: Vec<(String, Blocks, String, Vec<&str>)> = Vec::new();
    for (statement, lock, under) in &risky {
        let (what, fix) = advice(statement, lock, layout, *under);
        let lock = &lock;
        match sentences
            .iter_mut()
            .find(|(w, b, f, _)| *w == what && *b == lock.blocks() && *f == fix)
        {
            Some((_, _, _, tables)) if !tables.contains(&lock.relation.as_str()) => {
                tables.push(&lock.relation)
            }
            Some(_) => {}
            None => sentences.push((what, lock.blocks(), fix, vec![&lock.relation])),
        }
    }
    let seconds = trim_number(deployed.summary.ddl_total_ms / 1000.0, 1);
    sentences
        .into_iter()
        .enumerate()
        .map(|(index, (what, blocks, fix, tables))| {
            let how_long = match index {
                0 => format!(" for {seconds} s"),
                _ => String::new(),
            };
            format!(
                "{what} blocks {} on {}{how_long}: {fix}",
                blocks.words(),
                tables.join(", ")
            )
        })
        .collect()
}

/// What the statement is, in a few words, and how to do it without the
/// stall, in a form that fits it: NOT VALID only for `ALTER TABLE ... ADD`,
/// CONCURRENTLY in a migration its tool runs outside a transaction (`layout`).
///
/// `under`: the earlier statement of its transaction whose lock it works
/// under; such a statement queues for nothing, so its fix is never
/// lock_timeout, and a backfill's is batches outside that transaction.
pub(super) fn advice(
    statement: &TracedStatement,
    lock: &TracedLock,
    layout: Layout,
    under: Option<u32>,
) -> (String, String) {
    let words = statement_words(&statement.sql)
        .into_iter()
        .next()
        .unwrap_or_default();
    let has = |word: &str| words.iter().any(|w| w == word);
    let not_valid = words
        .windows(2)
        .any(|pair| pair[0] == "NOT" && pair[1] == "VALID");
    let first = |count: usize| {
        words
            .iter()
            .take(count)
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let scanned = lock.scanned == Some(true);
    let alters = first(2) == "ALTER TABLE";
    let backfill = ["UPDATE", "DELETE"].contains(&first(1).as_str())
        || (first(2) == "INSERT INTO" && has("SELECT"));
    if backfill {
        let outside = match under {
            Some(by) => format!(
                "outside the transaction of statement {by} (whose lock it runs under, so the \
                 traffic waits while it runs)"
            ),
            None => "outside any transaction that holds a lock on the table".to_string(),
        };
        return (
            format!("{} (a backfill)", first(1)),
            format!(
                "run the backfill {outside}, in batches of a bounded number of rows (say \
                 10,000, by key), each its own short transaction, in a migration of its own {}",
                layout.outside_a_transaction()
            ),
        );
    }
    let (what, fix) = match (first(2).as_str(), first(3).as_str()) {
        ("CREATE INDEX", _) | (_, "CREATE UNIQUE INDEX") if !has("CONCURRENTLY") => {
            return (
                first(2).replace("CREATE UNIQUE", "CREATE UNIQUE INDEX"),
                format!(
                    "use CREATE INDEX CONCURRENTLY, which cannot run in a transaction: in a \
                     migration of its own {}",
                    layout.outside_a_transaction()
                ),
            );
        }
        _ if (has("FOREIGN") || has("REFERENCES")) && alters && !not_valid && scanned => (
            "ADD FOREIGN KEY".to_string(),
            "add it NOT VALID, then VALIDATE CONSTRAINT in a migration of its own",
        ),
        _ if has("CHECK") && has("ADD") && alters && !not_valid && scanned => (
            "ADD CHECK".to_string(),
            "add it NOT VALID, then VALIDATE CONSTRAINT in a migration of its own",
        ),
        _ if has("SET") && has("NOT") && has("NULL") && scanned => (
            "SET NOT NULL".to_string(),
            "add CHECK (column IS NOT NULL) NOT VALID, VALIDATE it in a migration of its own, \
             then SET NOT NULL, which then skips the scan",
        ),
        _ if lock.rewritten && has("ADD") && has("DEFAULT") => (
            "ADD COLUMN with a volatile DEFAULT (a rewrite)".to_string(),
            "add the column without the default, then SET DEFAULT (new rows only) and fill \
             the old rows in batches",
        ),
        _ if lock.rewritten && has("TYPE") => (
            "ALTER COLUMN ... TYPE (a rewrite)".to_string(),
            "add a column of the new type, backfill it in batches, and swap (or change to a \
             binary-coercible type, which skips the rewrite)",
        ),
        _ if lock.rewritten => (
            format!("{} (a rewrite)", first(2)),
            "avoid rewriting the table under ACCESS EXCLUSIVE",
        ),
        _ if under.is_some() => (
            first(2),
            "it queues for nothing (an earlier statement of its transaction holds the lock) \
             but reads the whole table under it: move it out of that transaction, to a \
             migration of its own",
        ),
        _ => (
            first(2),
            "its lock queued behind the long transaction, and the traffic behind it: set \
             lock_timeout and retry (as --recommend retry does)",
        ),
    };
    (what, fix.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::lock_trace::{LockMode, RelationKind};
    use crate::testing::reference_report;

    fn statement(sql: &str, mode: LockMode, rewritten: bool, scanned: bool) -> TracedStatement {
        TracedStatement {
            step: 1,
            statement: 1,
            sql: sql.into(),
            duration_ms: 40.0,
            held_ms: 40.0,
            locks: vec![TracedLock {
                relation: "orders".into(),
                kind: RelationKind::Table,
                mode,
                taken: true,
                rewritten,
                scanned: Some(scanned),
            }],
            wal_bytes: None,
        }
    }

    #[test]
    fn the_fix_names_the_statement_what_it_blocks_and_for_how_long() {
        let report = reference_report();
        let naive = &report.strategies[0];
        let seconds = trim_number(naive.summary.ddl_total_ms / 1000.0, 1);
        let orders = ["orders".to_string()];
        let fix = |sql: &str, mode, rewritten, scanned| {
            let statement = statement(sql, mode, rewritten, scanned);
            let mut fixes = lock_fixes(&[statement], &orders, naive, Layout::Goose);
            assert_eq!(fixes.len(), 1, "{fixes:?}");
            fixes.remove(0)
        };
        assert_eq!(
            fix(
                "CREATE INDEX orders_created_at_idx ON orders (created_at)",
                LockMode::Share,
                false,
                true
            ),
            format!(
                "CREATE INDEX blocks writes on orders for {seconds} s: use CREATE INDEX \
                 CONCURRENTLY, which cannot run in a transaction: in a migration of its own \
                 marked `-- +goose NO TRANSACTION`"
            )
        );
        assert!(
            fix(
                "ALTER TABLE orders ADD CONSTRAINT f FOREIGN KEY (customer_id) REFERENCES customers (id)",
                LockMode::ShareRowExclusive,
                false,
                true
            )
            .starts_with("ADD FOREIGN KEY blocks writes on orders for")
        );
        assert!(
            fix(
                "ALTER TABLE orders ADD COLUMN token uuid DEFAULT gen_random_uuid()",
                LockMode::AccessExclusive,
                true,
                true
            )
            .starts_with("ADD COLUMN with a volatile DEFAULT (a rewrite) blocks reads and writes")
        );
        assert!(
            fix(
                "ALTER TABLE orders ADD COLUMN note text",
                LockMode::AccessExclusive,
                false,
                false
            )
            .ends_with("set lock_timeout and retry (as --recommend retry does)")
        );
        let harmless = statement(
            "CREATE INDEX CONCURRENTLY i ON orders (total)",
            LockMode::ShareUpdateExclusive,
            false,
            false,
        );
        assert!(lock_fixes(&[harmless], &orders, naive, Layout::Goose).is_empty());
    }

    /// Django's "alter field" on a foreign key: DROP CONSTRAINT (ACCESS
    /// EXCLUSIVE), SET NOT NULL (scans under it), ADD CONSTRAINT ... FOREIGN
    /// KEY, whose SHARE ROW EXCLUSIVE the transaction already holds as ACCESS
    /// EXCLUSIVE: it cannot queue, so it gets no "queued" fix of its own.
    #[test]
    fn a_lock_the_transaction_already_holds_gets_no_fix_of_its_own() {
        let report = reference_report();
        let naive = &report.strategies[0];
        let drop = statement(
            "ALTER TABLE orders DROP CONSTRAINT orders_user_fk",
            LockMode::AccessExclusive,
            false,
            false,
        );
        let add = TracedStatement {
            statement: 2,
            ..statement(
                "ALTER TABLE orders ADD CONSTRAINT orders_user_fk FOREIGN KEY \
                 (user_id) REFERENCES users (id) DEFERRABLE INITIALLY DEFERRED",
                LockMode::ShareRowExclusive,
                false,
                false,
            )
        };
        let fixes = lock_fixes(
            &[drop, add],
            &["orders".to_string()],
            naive,
            Layout::Numbered,
        );
        assert_eq!(fixes.len(), 1, "{fixes:#?}");
        assert!(
            fixes[0].starts_with("ALTER TABLE blocks reads and writes on orders"),
            "{fixes:#?}"
        );
    }

    /// The migration of the issue: a new table with a foreign key, columns
    /// added to two existing tables, a plain index. The new table blocks no
    /// one and gets no fix (no NOT VALID inside CREATE TABLE); each risk on an
    /// existing table gets one, the same fix once for both tables.
    #[test]
    fn fixes_fit_the_statements_on_existing_tables_only() {
        let report = reference_report();
        let naive = &report.strategies[0];
        let on = |relation: &str, mode, scanned| TracedLock {
            relation: relation.into(),
            kind: RelationKind::Table,
            mode,
            taken: true,
            rewritten: false,
            scanned: Some(scanned),
        };
        let numbered = |number: u32, sql: &str, locks: Vec<TracedLock>| TracedStatement {
            statement: number,
            locks,
            ..statement(sql, LockMode::AccessShare, false, false)
        };
        let statements = [
            numbered(
                1,
                "CREATE TABLE invites (id bigint PRIMARY KEY, user_id bigint NOT NULL \
                 REFERENCES users (id))",
                vec![
                    on("invites", LockMode::AccessExclusive, false),
                    on("users", LockMode::ShareRowExclusive, false),
                ],
            ),
            numbered(
                2,
                "ALTER TABLE orders ADD COLUMN note text",
                vec![on("orders", LockMode::AccessExclusive, false)],
            ),
            numbered(
                3,
                "ALTER TABLE users ADD COLUMN invited boolean",
                vec![on("users", LockMode::AccessExclusive, false)],
            ),
            numbered(
                4,
                "CREATE INDEX orders_note ON orders (note)",
                vec![on("orders", LockMode::Share, true)],
            ),
        ];
        let existing = ["orders".to_string(), "users".to_string()];
        let fixes = lock_fixes(&statements, &existing, naive, Layout::Diesel);
        let seconds = trim_number(naive.summary.ddl_total_ms / 1000.0, 1);
        assert_eq!(fixes.len(), 3, "{fixes:#?}");
        assert!(
            fixes[0].starts_with(&format!(
                "ALTER TABLE blocks reads and writes on orders, users for {seconds} s: its \
                 lock queued"
            )),
            "{fixes:#?}"
        );
        // The index builds under the ACCESS EXCLUSIVE statement 2 holds:
        // the hold it extends blocks reads and writes, charged to it.
        assert!(
            fixes[1].starts_with(
                "CREATE INDEX blocks reads and writes on orders: use CREATE INDEX \
                 CONCURRENTLY"
            ) && fixes[1].ends_with("with `run_in_transaction = false` in its `metadata.toml`"),
            "{fixes:#?}"
        );
        assert!(
            fixes[2].starts_with("CREATE TABLE blocks writes on users: its lock queued"),
            "{fixes:#?}"
        );
        let text = fixes.join(" ");
        assert!(
            !text.contains("invites") && !text.contains("NOT VALID"),
            "{text}"
        );
    }

    /// An UPDATE backfill in the ALTER's transaction queues for nothing (the
    /// ALTER holds ACCESS EXCLUSIVE already) and scans the table under it:
    /// the hold it extends is charged to it, and its fix is batches outside
    /// that transaction, never lock_timeout.
    #[test]
    fn a_backfill_under_an_alter_gets_batches_and_no_lock_timeout() {
        let report = reference_report();
        let naive = &report.strategies[0];
        let alter = statement(
            "ALTER TABLE orders ADD COLUMN depth integer",
            LockMode::AccessExclusive,
            false,
            false,
        );
        let update = TracedStatement {
            statement: 2,
            ..statement(
                "UPDATE orders SET depth = 0",
                LockMode::RowExclusive,
                false,
                true,
            )
        };
        let fixes = lock_fixes(
            &[alter, update],
            &["orders".to_string()],
            naive,
            Layout::Goose,
        );
        assert_eq!(fixes.len(), 2, "{fixes:#?}");
        assert!(
            fixes[1].starts_with(
                "UPDATE (a backfill) blocks reads and writes on orders: run the backfill \
                 outside the transaction of statement 1 (whose lock it runs under"
            ) && fixes[1].contains("in batches of a bounded number of rows")
                && !fixes[1].contains("lock_timeout"),
            "{fixes:#?}"
        );
    }
}
