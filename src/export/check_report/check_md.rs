//! `check.md`, the report a pull request shows: the verdict line first, then
//! one section per migration with its statements (locks, what they block,
//! rewrites, scans, how long each ran and held its locks), the holds at the
//! production sizes, the fixes, and the measured row of each strategy. The
//! same text goes to the GitHub step summary.

use std::fmt::Write as _;

use super::CheckReport;
use super::replica_cells::ReplicaCell;
use crate::choices::Measure;
use crate::engine::postgres::check_verdict::checked::{CheckedMigration, Outcome, Unordered};
use crate::engine::postgres::check_verdict::holds::transaction_holds;
use crate::engine::postgres::check_verdict::verdict::{Judged, MigrationVerdict};
use crate::export::format::{format_bytes, format_ms, format_thousands, trim_number};
use crate::export::markdown::{render_table, table_cell};
use crate::export::table::{Align, Table};
use crate::metrics::lock_trace::{
    Blocks, LockMode, RelationKind, TracedLock, TracedStatement, held_before,
};
use crate::results::{CHECK_MD, DDL_LOCKS_CSV, OutputFile, TIMELINE_PNG};

/// The longest statement text a table cell shows; the rest is in ddl_locks.csv.
const STATEMENT_CHARS: usize = 90;

/// `check.md`.
pub fn check_md(report: &CheckReport) -> OutputFile {
    OutputFile {
        name: CHECK_MD.to_string(),
        bytes: check_text(report).into_bytes(),
    }
}

/// The whole text of `check.md`.
pub fn check_text(report: &CheckReport) -> String {
    let mut text = format!("{}\n\n", report.verdict_line());
    text.push_str(&intro(report));
    if let Some(unordered) = &report.unordered {
        text.push_str(&unordered_section(unordered));
    }
    for (checked, judged) in &report.migrations {
        text.push_str(&migration_section(report, checked, judged));
    }
    text
}

/// The section of migrations the tool would not apply after the others.
pub(super) fn unordered_section(unordered: &Unordered) -> String {
    format!(
        "## {}: **FAIL**\n\nNot applied as the tool would deploy it: {}.\n\n",
        table_cell(&unordered.migrations.join(", ")),
        table_cell(&unordered.reason)
    )
}

/// The heading and what was done to every migration, before the sections.
pub(super) fn intro(report: &CheckReport) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# stallbench check: {}\n",
        table_cell(&report.dir.display().to_string())
    );
    if report.unordered.is_some() {
        let _ = writeln!(
            text,
            "Nothing was run: the check applies the earlier migrations, then the new ones, as \
             the tool deploys them, and the tool would not apply the new ones so.\n"
        );
        for note in &report.notes {
            let _ = writeln!(text, "- {}", table_cell(note));
        }
        if !report.notes.is_empty() {
            text.push('\n');
        }
        return text;
    }
    let runs = match report.measure {
        Measure::None => "traced and judged from its trace alone (--trace-only)".to_string(),
        measure => format!(
            "traced, then {}run under {} clients behind a long transaction held {} s, deployed \
             with `{}` and with `{}` beside it",
            match measure {
                Measure::Flagged => "if its trace flagged it (--measure flagged), ",
                _ => "",
            },
            report.clients,
            trim_number(report.hold_s, 1),
            report.deploy,
            report.recommend,
        ),
    };
    let _ = writeln!(
        text,
        "Each new migration was {runs}, on the schema of {} earlier migrations and {} \
         (PostgreSQL {}). Budget, as deployed: {}.\n",
        report.earlier,
        report.data,
        report.server_version,
        report.budgets_words()
    );
    if report.replica && report.measure != Measure::None {
        let _ = writeln!(
            text,
            "With `--replica`, each measured migration ran once more per strategy with the \
             report on the throwaway server's hot standby and the readers on both servers: the \
             standby replays the migration's ACCESS EXCLUSIVE lock behind the report there, \
             which a lock_timeout on the primary cannot see.\n"
        );
    }
    for unfilled in &report.unfilled {
        let _ = writeln!(text, "- not filled: {}", table_cell(unfilled));
    }
    for fewer in &report.fewer_rows {
        let _ = writeln!(text, "- fewer rows: {}", table_cell(fewer));
    }
    if !report.left_empty.is_empty() {
        let _ = writeln!(
            text,
            "- left empty, as no new migration locks or names them (--fill all fills them): {}",
            table_cell(&report.left_empty.join(", "))
        );
    }
    if !report.key_tables.is_empty() {
        let _ = writeln!(
            text,
            "- fewer rows, as no new migration locks or names them and the filled tables' \
             foreign keys only refer to their keys: {}",
            table_cell(&report.key_tables.join(", "))
        );
    }
    for note in &report.notes {
        let _ = writeln!(text, "- {}", table_cell(note));
    }
    let listed = [
        &report.unfilled,
        &report.fewer_rows,
        &report.left_empty,
        &report.key_tables,
        &report.notes,
    ];
    if listed.iter().any(|list| !list.is_empty()) {
        text.push('\n');
    }
    text
}

/// One migration's section: its verdict, what breaks, the fixes, its
/// statements, the holds at production sizes and its measured rows.
pub(super) fn migration_section(
    report: &CheckReport,
    checked: &CheckedMigration,
    judged: &Judged,
) -> String {
    let mut text = format!(
        "## {}: {}\n\n",
        table_cell(&checked.migration.name),
        match judged.verdict {
            MigrationVerdict::Fail => "**FAIL**",
            MigrationVerdict::Invalid => "**INVALID**",
            other => other.words(),
        }
    );
    match (&judged.invalid, &checked.outcome) {
        (Some(reason), Outcome::NoResult(_)) => {
            let _ = writeln!(text, "No result: {}.\n", table_cell(reason));
        }
        (Some(reason), _) => {
            let _ = writeln!(
                text,
                "No result: as deployed ({}) the run did not happen as written: {}.\n",
                report.deploy,
                table_cell(reason)
            );
        }
        (None, _) => {}
    }
    if !judged.broken.is_empty() {
        let _ = writeln!(
            text,
            "As deployed ({}): {}.\n",
            report.deploy,
            table_cell(&judged.broken.join("; "))
        );
    }
    match judged.fixes.len() {
        0 | 1 => {
            let advice: Vec<&str> = (judged.fixes.iter().map(String::as_str))
                .chain(judged.recommended.as_deref())
                .collect();
            if !advice.is_empty() {
                let _ = writeln!(text, "{}.\n", table_cell(&advice.join("; ")));
            }
        }
        _ => {
            text.push_str("Fixes, one per statement that blocked traffic:\n\n");
            for fix in &judged.fixes {
                let _ = writeln!(text, "- {}.", table_cell(fix));
            }
            text.push('\n');
            if let Some(recommended) = &judged.recommended {
                let _ = writeln!(text, "{}.\n", table_cell(recommended));
            }
        }
    }
    text.push_str(&render_table(&statements_table(checked)));
    text.push('\n');
    for estimate in &checked.estimates {
        let size = match estimate.production_rows {
            Some(_) => String::new(),
            None => format!(
                "; the hold grows with the table: give its production size (--table-rows \
                 {}=N, or --sizes-from URL) to judge it there",
                estimate.relation
            ),
        };
        let _ = writeln!(
            text,
            "- Statement {} {}: {}{size}.",
            estimate.statement,
            estimate.what(),
            estimate.figures()
        );
    }
    for hold in transaction_holds(&checked.statements, &checked.estimates) {
        let _ = writeln!(text, "- Step {}: {}.", hold.step, hold.words());
    }
    if !checked.estimates.is_empty() {
        text.push('\n');
    }
    match &checked.outcome {
        Outcome::NoResult(_) => {}
        Outcome::Traced(flags) => {
            // The reason says it was not run (judged from its trace alone): once.
            let _ = writeln!(
                text,
                "{}.\n",
                capitalized(
                    judged
                        .not_measured
                        .as_deref()
                        .unwrap_or("not run under traffic")
                )
            );
            for flag in flags {
                let _ = writeln!(text, "- Flagged: {}.", table_cell(flag));
            }
            if !flags.is_empty() {
                text.push('\n');
            }
        }
        Outcome::NotMeasured => {
            let _ = writeln!(
                text,
                "Not measured: {}.\n",
                judged.not_measured.as_deref().unwrap_or_default()
            );
        }
        Outcome::Measured(run) => {
            let _ = writeln!(
                text,
                "Measured under {}, with {}:\n",
                table_cell(&run.load),
                table_cell(&run.blocker)
            );
            text.push_str(&render_table(&strategies_table(report, checked)));
            let _ = writeln!(
                text,
                "\nResults: `{}` ({TIMELINE_PNG}, {DDL_LOCKS_CSV}, ...).\n",
                run.folder.display()
            );
            if let Some(replica) = &run.replica {
                let _ = writeln!(
                    text,
                    "On the replica, with {} and the readers on both servers:\n",
                    table_cell(&replica.blocker)
                );
                text.push_str(&render_table(&replica_table(report, checked)));
                let _ = writeln!(text, "\nResults: `{}`.\n", replica.folder.display());
            }
        }
    }
    text
}

/// `--replica`: one row per strategy's run with the report on the standby:
/// what its readers there felt, how long replay waited, the lag, the
/// queries cancelled, its readers' failures and the WAL its DDL wrote.
fn replica_table(report: &CheckReport, checked: &CheckedMigration) -> Table {
    let mut table = Table::new(&[
        ("strategy", Align::Left),
        ("budget", Align::Left),
        ("replica stall s", Align::Right),
        ("replica zero-tps s", Align::Right),
        ("replay waited s", Align::Right),
        ("max replay lag s", Align::Right),
        ("cancelled", Align::Right),
        ("replica failed", Align::Right),
        ("DDL WAL", Align::Right),
    ]);
    let seconds = |value: &ReplicaCell<u32>| value.cell_text();
    let cell = |value: &ReplicaCell<u64>| value.cell_text();
    let records = report.records();
    for record in records
        .iter()
        .filter(|record| record.migration == checked.migration.name && record.on_replica())
    {
        let lag = match record.replica_max_lag_s {
            ReplicaCell::Present(Some(lag)) => trim_number(lag, 1),
            _ => String::new(),
        };
        table.push(vec![
            format!("{} ({})", record.strategy, record.role),
            match record.within_budget {
                Some(false) => "**over**".to_string(),
                _ => "within".to_string(),
            },
            seconds(&record.replica_longest_stall_s),
            seconds(&record.replica_zero_tps_seconds),
            seconds(&record.replica_replay_waiting_s),
            lag,
            cell(&record.replica_cancelled),
            cell(&record.replica_failed),
            match record.wal_bytes {
                ReplicaCell::Present(Some(bytes)) => format_bytes(bytes as f64),
                _ => String::new(),
            },
        ]);
    }
    table
}

/// One row per statement: what it locked and what that blocks, rewrites,
/// scans, how long it ran and held its locks, and the WAL it wrote (what
/// every standby receives and replays; `?` when unknown). A table the migration created
/// blocks no one; a lock an earlier statement of the same transaction took
/// is `already held (statement N)`, and what the statement does under it
/// still blocks.
fn statements_table(checked: &CheckedMigration) -> Table {
    let mut table = Table::new(&[
        ("#", Align::Right),
        ("statement", Align::Left),
        ("locks", Align::Left),
        ("blocks", Align::Left),
        ("rewrite", Align::Left),
        ("scan", Align::Left),
        ("ms", Align::Right),
        ("held ms", Align::Right),
        ("WAL", Align::Right),
    ]);
    let statements = &checked.statements;
    let is_new = |lock: &TracedLock| {
        lock.kind == RelationKind::Table && !checked.existing_tables.contains(&lock.relation)
    };
    for (index, statement) in statements.iter().enumerate() {
        // Tables and sequences, each with its strongest lock; an index goes with its table.
        let mut shown: Vec<&TracedLock> = Vec::new();
        for lock in statement
            .locks
            .iter()
            .filter(|lock| lock.taken && lock.kind != RelationKind::Index)
        {
            if !shown.iter().any(|seen| seen.relation == lock.relation) {
                shown.push(lock);
            }
        }
        let mut locks: Vec<String> = shown
            .iter()
            .map(|lock| format!("{} on {}", lock.mode.sql_name(), lock.relation))
            .collect();
        let mut blocks: Vec<String> = shown
            .iter()
            .filter(|lock| lock.blocks() != Blocks::Nothing)
            .map(|lock| match is_new(lock) {
                true => format!("no one ({} is new)", lock.relation),
                false => format!("{} on {}", lock.blocks().words(), lock.relation),
            })
            .collect();
        for (relation, mode, by) in already_held(&statements[..index], statement) {
            locks.push(format!(
                "{} on {relation}, already held (statement {by})",
                mode.sql_name()
            ));
            if mode.blocks() != Blocks::Nothing && checked.existing_tables.contains(&relation) {
                blocks.push(format!(
                    "{} on {relation} (held since statement {by})",
                    mode.blocks().words()
                ));
            }
        }
        let tables = || {
            statement
                .locks
                .iter()
                .filter(|lock| lock.kind == RelationKind::Table)
        };
        let rewritten = distinct(tables().filter(|lock| lock.rewritten));
        let scan = match tables().any(|lock| lock.scanned.is_none()) {
            true => "?".to_string(),
            false => listed(distinct(tables().filter(|lock| lock.scanned == Some(true)))),
        };
        table.push(vec![
            statement.statement.to_string(),
            shortened(&statement.sql),
            or_none(locks.join("; ")),
            or_nothing(blocks.join("; ")),
            listed(rewritten),
            scan,
            format_ms(statement.duration_ms),
            format_ms(statement.held_ms),
            statement
                .wal_bytes
                .map_or("?".to_string(), |bytes| format_bytes(bytes as f64)),
        ]);
    }
    table
}

/// The table locks that `statement` works under but an earlier statement of
/// its transaction took (in `earlier`): on a table it locked, a stronger
/// mode than its own (or the mode, for a table it rewrote or scanned
/// without taking a lock), and, when it took none, on the tables its text
/// names. Each with the mode held and the statement that took it.
fn already_held(
    earlier: &[TracedStatement],
    statement: &TracedStatement,
) -> Vec<(String, LockMode, u32)> {
    let taken_before = |relation: &str| {
        held_before(earlier, statement, relation).map(|(mode, by)| (relation.to_string(), mode, by))
    };
    let mut held: Vec<(String, LockMode, u32)> = Vec::new();
    for lock in statement
        .locks
        .iter()
        .filter(|l| l.kind == RelationKind::Table)
    {
        let stronger =
            taken_before(&lock.relation).filter(|(_, mode, _)| !lock.taken || *mode > lock.mode);
        if let Some(entry) = stronger
            && !held.iter().any(|(seen, _, _)| *seen == entry.0)
        {
            held.push(entry);
        }
    }
    if statement.locks.iter().all(|lock| !lock.taken) {
        let words: Vec<String> = statement
            .sql
            .to_lowercase()
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .map(str::to_string)
            .collect();
        let named = |relation: &str| {
            let relation = relation.to_lowercase();
            let bare = relation.rsplit('.').next().unwrap_or(&relation);
            words.iter().any(|word| {
                *word == relation || word == bare || word.ends_with(&format!(".{bare}"))
            })
        };
        for before in earlier
            .iter()
            .filter(|before| before.step == statement.step)
        {
            for lock in &before.locks {
                let relation = &lock.relation;
                if lock.kind == RelationKind::Table
                    && named(relation)
                    && !held.iter().any(|(seen, _, _)| seen == relation)
                {
                    held.extend(taken_before(relation));
                }
            }
        }
    }
    held
}

/// The measured row of each strategy.
fn strategies_table(report: &CheckReport, checked: &CheckedMigration) -> Table {
    let mut table = Table::new(&[
        ("strategy", Align::Left),
        ("budget", Align::Left),
        ("stall s", Align::Right),
        ("zero-tps s", Align::Right),
        ("worst tps", Align::Right),
        ("p99 ms", Align::Right),
        ("max ms", Align::Right),
        ("failed", Align::Right),
        ("tries", Align::Right),
        ("migration", Align::Left),
    ]);
    let records = report.records();
    for record in records.iter().filter(|record| {
        record.migration == checked.migration.name
            && !record.strategy.is_empty()
            && !record.on_replica()
    }) {
        let number = |value: Option<f64>| value.map_or(String::new(), format_ms);
        let done = match (record.ddl_outcome, record.done_after_s) {
            (_, Some(seconds)) => format!("done after {} s", trim_number(seconds, 1)),
            (Some(outcome), None) => serde_json::to_value(outcome)
                .ok()
                .and_then(|value| value.as_str().map(|s| s.replace('_', " ")))
                .unwrap_or_default(),
            (None, None) => String::new(),
        };
        table.push(vec![
            format!("{} ({})", record.strategy, record.role),
            match record.within_budget {
                Some(false) => "**over**".to_string(),
                _ => "within".to_string(),
            },
            record
                .longest_stall_s
                .map_or(String::new(), |v| v.to_string()),
            record
                .zero_tps_seconds
                .map_or(String::new(), |v| v.to_string()),
            record
                .worst_second_tps
                .map_or(String::new(), format_thousands),
            number(record.lat_p99_ms),
            number(record.lat_max_ms),
            record.failed.map_or(String::new(), |v| v.to_string()),
            record.ddl_tries.map_or(String::new(), |v| v.to_string()),
            done,
        ]);
    }
    table
}

/// The relation names of `locks`, each once, in order.
fn distinct<'a>(locks: impl Iterator<Item = &'a TracedLock>) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for lock in locks {
        if !names.contains(&lock.relation.as_str()) {
            names.push(&lock.relation);
        }
    }
    names
}

/// The statement on one line without the comments before it, cut at
/// [`STATEMENT_CHARS`] characters.
fn shortened(sql: &str) -> String {
    let code: Vec<&str> = sql
        .lines()
        .skip_while(|line| line.trim().is_empty() || line.trim_start().starts_with("--"))
        .collect();
    let one_line = code
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match one_line.chars().count() > STATEMENT_CHARS {
        true => format!(
            "{}...",
            one_line.chars().take(STATEMENT_CHARS).collect::<String>()
        ),
        false => one_line,
    }
}

/// `text` with its first letter in capitals.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or(String::new(), |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

fn listed(names: Vec<&str>) -> String {
    match names.is_empty() {
        true => "no".to_string(),
        false => names.join(", "),
    }
}

fn or_none(text: String) -> String {
    match text.is_empty() {
        true => "none".to_string(),
        false => text,
    }
}

fn or_nothing(text: String) -> String {
    match text.is_empty() {
        true => "nothing".to_string(),
        false => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::check_report::tests::two_migrations;

    #[test]
    fn long_statements_are_cut_on_one_line() {
        assert_eq!(
            shortened("-- why\n\nALTER TABLE orders\n    ADD COLUMN a int"),
            "ALTER TABLE orders ADD COLUMN a int"
        );
        let long = "x".repeat(100);
        assert_eq!(shortened(&long).len(), STATEMENT_CHARS + 3);
    }

    /// Statement 2 alters a table statement 1 already locked (the trace sees
    /// no new lock), statement 3 scans it under that lock, statement 4
    /// creates a table, statement 5 builds an index under the lock: none of
    /// them reads as safe or as a risk it is not.
    #[test]
    fn a_lock_already_held_is_named_and_a_new_table_blocks_no_one() {
        let mut report = two_migrations();
        let (checked, _) = &mut report.migrations[0];
        let first = checked.statements[0].clone();
        let numbered = |number: u32, sql: &str, locks: Vec<TracedLock>| TracedStatement {
            statement: number,
            sql: sql.to_string(),
            locks,
            ..first.clone()
        };
        let lock = |relation: &str, taken: bool, scanned: bool| TracedLock {
            relation: relation.to_string(),
            taken,
            scanned: Some(scanned),
            ..first.locks[0].clone()
        };
        checked.statements.extend([
            numbered(
                2,
                "ALTER TABLE public.orders ALTER COLUMN note SET DEFAULT ''",
                Vec::new(),
            ),
            numbered(
                3,
                "ALTER TABLE orders ADD CONSTRAINT known CHECK (total IS NOT NULL)",
                vec![lock("orders", false, true)],
            ),
            numbered(
                4,
                "CREATE TABLE notes (id int)",
                vec![lock("notes", true, false)],
            ),
            numbered(
                5,
                "CREATE INDEX ON orders (note)",
                vec![TracedLock {
                    mode: LockMode::Share,
                    ..lock("orders", true, true)
                }],
            ),
        ]);
        let table = render_table(&statements_table(checked));
        for row in [
            "| 2 | ALTER TABLE public.orders ALTER COLUMN note SET DEFAULT '' | ACCESS EXCLUSIVE on \
             orders, already held (statement 1) | reads and writes on orders (held since statement \
             1) | no | no |",
            "| 3 | ALTER TABLE orders ADD CONSTRAINT known CHECK (total IS NOT NULL) | ACCESS EXCLUSIVE \
             on orders, already held (statement 1) | reads and writes on orders (held since \
             statement 1) | no | orders |",
            "| 4 | CREATE TABLE notes (id int) | ACCESS EXCLUSIVE on notes | no one (notes is new) |",
            // Its own SHARE, under statement 1's ACCESS EXCLUSIVE: reads wait too.
            "| 5 | CREATE INDEX ON orders (note) | SHARE on orders; ACCESS EXCLUSIVE on orders, \
             already held (statement 1) | writes on orders; reads and writes on orders (held \
             since statement 1) | no | orders |",
        ] {
            assert!(table.contains(row), "{row}\n{table}");
        }
    }

    /// A migration judged from its trace alone says it was not run once.
    #[test]
    fn a_traced_migration_says_once_that_it_was_not_run() {
        let mut report = two_migrations();
        report.measure = Measure::Flagged;
        let (checked, judged) = &mut report.migrations[0];
        checked.outcome = Outcome::Traced(vec!["statement 1 takes a lock".to_string()]);
        *judged = crate::engine::postgres::check_verdict::verdict::judge(
            checked,
            &super::super::tests::judging(),
        );
        let text = check_text(&report).to_lowercase();
        assert_eq!(text.matches("run under traffic").count(), 1, "{text}");
    }

    #[test]
    fn check_md_starts_with_the_verdict_then_a_section_per_migration() {
        let report = two_migrations();
        let text = check_text(&report);
        assert!(text.starts_with(&format!(
            "{}\n\n# stallbench check: migrations\n",
            report.verdict_line()
        )));
        let failed = &text[text.find("## 0002_add_note: **FAIL**").unwrap()..];
        assert!(failed.contains(
            "| 1 | ALTER TABLE orders ADD COLUMN note text | ACCESS EXCLUSIVE on orders | reads and \
             writes on orders | no | no | 0.50 | 0.50 | 640 bytes |"
        ), "{failed}");
        assert!(
            failed.contains("| naive (deployed) | **over** |"),
            "{failed}"
        );
        assert!(
            failed.contains("| retry (recommended) | within | 0 |"),
            "{failed}"
        );
        assert!(text.contains("## 0003_notes: not measured\n"), "{text}");
        let comment =
            String::from_utf8(crate::export::check_report::pr_comment::pr_comment(&report).bytes)
                .unwrap();
        assert_eq!(
            comment,
            format!(
                "<!-- stallbench:check/migrations -->\n{text}Open `results/check/report.html` in \
                 this job's artifacts: this report with each measured migration's runs, second \
                 by second.\n"
            )
        );
    }
}
