//! Whether a migration broke the application it ran under: the check's
//! traffic is the application as it ran before the migration, so a kind of
//! failure that starts with the migration (a renamed or dropped column or
//! table, 42703 or 42P01; a changed type under prepared statements, 0A000; a
//! new constraint the old code violates, class 23) is the migration breaking
//! the application, whatever lock it took and however short. Lock waits,
//! timeouts, cancellations and lost connections are the stall's doing and are
//! judged by the stall budgets instead.

use crate::engine::ErrorClass;

use crate::export::format::format_thousands;
use crate::metrics::StrategyReport;
use crate::metrics::failures::{FailureKind, failure_kinds};
use crate::metrics::lock_trace::TracedStatement;

/// The failures a migration caused in one strategy's run.
#[derive(Debug, Clone, PartialEq)]
pub struct Breakage {
    /// Failed transactions of the kinds that started with the migration.
    pub failed: u64,
    /// Transactions attempted in the whole run (completed plus failed).
    pub attempted: u64,
    /// The most frequent of those kinds: `42703 column "qty" does not exist`.
    pub main_failure: String,
}

impl Breakage {
    /// `46,105 of 50,085 transactions failed after it (42703 column "qty" does not exist)`.
    pub fn words(&self) -> String {
        format!(
            "the application broke: {} of {} transactions failed after it ({})",
            format_thousands(self.failed),
            format_thousands(self.attempted),
            self.main_failure
        )
    }
}

/// The failures of `run` whose kind first failed at or after its first DDL
/// try and never before it, and is not a lock's, a timeout's or a lost
/// connection's; `None` when there are none.
pub fn breakage(run: &StrategyReport) -> Option<Breakage> {
    let first_try_s = run.attempts.first()?.started_s;
    let first_try_second = first_try_s.max(0.0).floor() as u32;
    let caused: Vec<_> = failure_kinds(&run.failures)
        .into_iter()
        .filter(|total| breaks_the_application(&total.kind))
        .filter(|total| {
            let before = run.failures.iter().any(|failure| {
                failure.kind == total.kind
                    && failure.message == total.message
                    && failure.second < first_try_second
            });
            !before
        })
        .collect();
    let main = caused.first()?;
    Some(Breakage {
        failed: caused.iter().map(|total| total.count).sum(),
        attempted: run.summary.transactions + run.summary.failed,
        main_failure: format!("{} {}", main.kind, main.message),
    })
}

/// Why the load of `run` is not the application: its own statements failed
/// before the migration's first try (a foreign key its inserts violate,
/// 23503; a column it names that does not exist), so the stall measured is
/// that of a broken traffic, and the run has no result. `None` when the load
/// ran clean until the migration (waits and lost connections aside).
pub fn broken_load(run: &StrategyReport) -> Option<String> {
    let first_try_s = run.attempts.first().map_or(f64::INFINITY, |a| a.started_s);
    let first_try_second = first_try_s.max(0.0).floor();
    let before: Vec<_> = failure_kinds(&run.failures)
        .into_iter()
        .filter(|total| breaks_the_application(&total.kind))
        .filter(|total| {
            run.failures.iter().any(|failure| {
                failure.kind == total.kind
                    && failure.message == total.message
                    && f64::from(failure.second) < first_try_second
            })
        })
        .collect();
    let main = before.first()?;
    let failed: u64 = before.iter().map(|total| total.count).sum();
    Some(format!(
        "the load's own statements failed before the migration started ({} failed, {} {}), \
         so the traffic measured is not the application's; give it with --load FILE (or \
         --seed FILE for rows it can use)",
        format_thousands(failed),
        main.kind,
        main.message
    ))
}

/// Whether a failure of this kind is the application's code meeting the new
/// schema, not a wait, a timeout or a lost connection.
fn breaks_the_application(kind: &FailureKind) -> bool {
    kind.server_code()
        .is_some_and(|code| code.class() == ErrorClass::Other)
}

/// The fix for a migration that broke the application: the statement that
/// caused the failure (see [`blamed_statement`]; `blamed`, when the check
/// found it by replaying the application's statements, wins), and the
/// expand/contract way to make that change.
pub fn breakage_fix(
    statements: &[TracedStatement],
    breakage: &Breakage,
    blamed: Option<u32>,
) -> String {
    let statement = match blamed {
        Some(number) => statements.iter().find(|s| s.statement == number),
        None => blamed_statement(statements, &breakage.main_failure),
    };
    let what = statement.map_or_else(
        || "the migration".to_string(),
        |statement| format!("`{}`", statement.sql.trim()),
    );
    let how = match breakage.main_failure.starts_with("23") {
        // A constraint the application's writes as they are do not meet.
        true => {
            "the application as it runs writes rows the new constraint refuses: give a new \
             NOT NULL column a DEFAULT (so inserts that do not name it still meet it), or add \
             the constraint in a later release, once the application writes what it requires"
        }
        false => {
            "change it the expand/contract way: add the new name (or column, or type) beside \
             the old one, write both, move the reads, and drop the old one in a later release"
        }
    };
    format!(
        "{what} breaks the application's statements ({}): {how}; retry and lock_timeout \
         shorten a wait, not a break",
        breakage.main_failure
    )
}

/// The statement whose effect `failure` (`23502 null value in column "x"
/// of relation "spaces" ...`) names: by its SQLSTATE, the statement that
/// makes a column NOT NULL (23502), adds the constraint the message names or
/// one of its kind on its table (class 23), renames or drops the column or
/// table (42703, 42P01), changes a type (0A000); `None` when the message
/// names nothing a statement made (then [`replay_needed`] says to replay).
pub fn named_statement<'a>(
    statements: &'a [TracedStatement],
    failure: &str,
) -> Option<&'a TracedStatement> {
    let (code, message) = failure.split_once(' ').unwrap_or((failure, ""));
    let names = quoted_names(message);
    let first = names.first().map(String::as_str).unwrap_or_default();
    let last = names.last().map(String::as_str).unwrap_or_default();
    let find = |test: &dyn Fn(&Words) -> bool| {
        statements
            .iter()
            .find(|statement| test(&Words::of(&statement.sql)))
    };
    match code {
        // null value in column "x" of relation "t" violates not-null constraint
        "23502" => find(&|w| w.has(first) && w.has("not") && w.has("null") && !w.has("drop")),
        // ... violates check / unique / foreign key / exclusion constraint "c"
        "23514" | "23505" | "23503" | "23P01" => find(&|w| w.has(last)).or_else(|| {
            let table = names
                .iter()
                .rev()
                .nth(1)
                .map(String::as_str)
                .unwrap_or(first);
            let kind: &[&str] = match code {
                "23514" => &["check"],
                "23505" => &["unique", "primary"],
                "23503" => &["references", "foreign"],
                _ => &["exclude"],
            };
            find(&|w| w.has(table) && kind.iter().any(|word| w.has(word)))
        }),
        // column "x" (of relation "t") does not exist; relation "t" does not exist
        "42703" | "42P01" | "42883" => {
            find(&|w| w.has(first) && (w.has("rename") || w.has("drop")))
        }
        // cached plan must not change result type
        "0A000" => find(&|w| w.has("type") && w.has("alter")),
        _ => None,
    }
}

/// The statement [`named_statement`] finds, else (the message names none)
/// the first that renames, drops or retypes something, else the first.
pub fn blamed_statement<'a>(
    statements: &'a [TracedStatement],
    failure: &str,
) -> Option<&'a TracedStatement> {
    named_statement(statements, failure).or_else(|| {
        statements
            .iter()
            .find(|statement| {
                let words = Words::of(&statement.sql);
                words.has("rename") || words.has("drop") || words.has("type")
            })
            .or_else(|| statements.first())
    })
}

/// Whether the statement to blame for `failure` cannot be read from its
/// message, so the check replays the application's statements after each
/// of the migration's, one prefix at a time, on the quiet server.
pub fn replay_needed(statements: &[TracedStatement], failure: &str) -> bool {
    statements.len() > 1 && named_statement(statements, failure).is_none()
}

/// The names a server message quotes (`"x"`), lower-cased.
fn quoted_names(message: &str) -> Vec<String> {
    message
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_lowercase)
        .collect()
}

/// A statement's identifiers and keywords, lower-cased and unquoted, a
/// qualified name as its parts (`public.spaces`: `public`, `spaces`).
struct Words(Vec<String>);

impl Words {
    fn of(sql: &str) -> Words {
        let code: String = (sql.lines())
            .map(|line| line.split("--").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        Words(
            code.to_lowercase()
                .replace('"', "")
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|word| !word.is_empty())
                .map(str::to_string)
                .collect(),
        )
    }

    fn has(&self, word: &str) -> bool {
        !word.is_empty() && self.0.iter().any(|w| w == word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::failures::FailureCount;
    use crate::testing::reference_report;

    fn failure(second: u32, code: &str, message: &str, count: u64) -> FailureCount {
        FailureCount {
            second,
            kind: FailureKind::from_cell(code),
            message: message.into(),
            count,
        }
    }

    #[test]
    fn failures_that_start_with_the_migration_break_the_application() {
        let mut run = reference_report().strategies[1].clone();
        let first_try_second = run.attempts[0].started_s.floor() as u32;
        run.summary.transactions = 4_000;
        run.summary.failed = 46_105 + 7;
        run.failures = vec![
            // A lock timeout of the load and a lost connection: the stall's doing.
            failure(
                first_try_second,
                "55P03",
                "canceling statement due to lock timeout",
                3,
            ),
            failure(first_try_second + 1, "57P01", "terminating connection", 4),
            failure(
                first_try_second + 1,
                "42703",
                "column \"qty\" does not exist",
                46_000,
            ),
            failure(
                first_try_second + 2,
                "42703",
                "column \"qty\" does not exist",
                105,
            ),
        ];
        let broke = breakage(&run).unwrap();
        assert_eq!(broke.failed, 46_105);
        assert_eq!(
            broke.words(),
            "the application broke: 46,105 of 50,112 transactions failed after it \
             (42703 column \"qty\" does not exist)"
        );
        assert_eq!(broken_load(&run), None);
        // The same kind failing before the migration is the load's own: no
        // breakage, and the load itself is broken.
        run.failures
            .push(failure(0, "42703", "column \"qty\" does not exist", 1));
        assert_eq!(breakage(&run), None);
        let reason = broken_load(&run).unwrap();
        assert!(
            reason.starts_with(
                "the load's own statements failed before the migration started (46,106 failed, \
                 42703 column \"qty\" does not exist)"
            ),
            "{reason}"
        );
    }

    #[test]
    fn the_fix_names_the_renaming_statement_and_the_expand_contract_way() {
        let statement = |sql: &str| TracedStatement {
            step: 1,
            statement: 1,
            sql: sql.into(),
            duration_ms: 1.0,
            held_ms: 1.0,
            locks: Vec::new(),
            wal_bytes: None,
        };
        let broke = Breakage {
            failed: 10,
            attempted: 20,
            main_failure: "42703 column \"qty\" does not exist".into(),
        };
        let fix = breakage_fix(
            &[
                statement("SET lock_timeout = '1s'"),
                statement("ALTER TABLE orders RENAME COLUMN qty TO quantity"),
            ],
            &broke,
            None,
        );
        assert!(
            fix.starts_with(
                "`ALTER TABLE orders RENAME COLUMN qty TO quantity` breaks the application's \
                 statements (42703 column \"qty\" does not exist): change it the expand/contract way"
            ),
            "{fix}"
        );
    }

    /// A column added nullable, filled, made NOT NULL, then an index
    /// dropped: the application's inserts (which do not write the column)
    /// fail 23502, and the blame goes to SET NOT NULL, not to the DROP
    /// INDEX nor to the nullable ADD COLUMN.
    #[test]
    fn the_blame_goes_to_the_statement_the_message_names() {
        let numbered = |number: u32, sql: &str| TracedStatement {
            step: 1,
            statement: number,
            sql: sql.into(),
            duration_ms: 1.0,
            held_ms: 1.0,
            locks: Vec::new(),
            wal_bytes: None,
        };
        let statements = [
            numbered(1, "ALTER TABLE spaces ADD COLUMN depth INTEGER"),
            numbered(2, "UPDATE spaces SET depth = 0"),
            numbered(3, "ALTER TABLE \"spaces\" ALTER COLUMN depth SET NOT NULL"),
            numbered(4, "DROP INDEX spaces_root_id"),
        ];
        let blamed = |failure: &str| blamed_statement(&statements, failure).map(|s| s.statement);
        assert_eq!(
            blamed(
                "23502 null value in column \"depth\" of relation \"spaces\" violates \
                 not-null constraint"
            ),
            Some(3)
        );
        assert!(!replay_needed(
            &statements,
            "23502 null value in column \"depth\" of relation \"spaces\""
        ));
        // A message naming nothing the migration made: replayed to find it.
        assert!(replay_needed(
            &statements,
            "0A000 cached plan must not change result type"
        ));
        let renamed = [
            numbered(1, "ALTER TABLE orders ADD COLUMN qty_new int"),
            numbered(2, "ALTER TABLE orders RENAME COLUMN qty TO quantity"),
        ];
        assert_eq!(
            named_statement(&renamed, "42703 column \"qty\" does not exist").map(|s| s.statement),
            Some(2)
        );
        let checked = [
            numbered(1, "ALTER TABLE orders ADD COLUMN kind text"),
            numbered(
                2,
                "ALTER TABLE orders ADD CONSTRAINT kind_known CHECK (kind IS NOT NULL)",
            ),
        ];
        assert_eq!(
            named_statement(
                &checked,
                "23514 new row for relation \"orders\" violates check constraint \"kind_known\""
            )
            .map(|s| s.statement),
            Some(2)
        );
    }
}
