//! Tests of `export::check_report`: the verdict line, the exit code and the files, from
//! hand-made checks (`two_migrations`), which `check_md` and `check_page`'s tests use too.

use std::path::PathBuf;

use super::*;
use crate::engine::postgres::check_verdict::checked::MeasuredRun;
use crate::engine::postgres::check_verdict::checked::{
    Migration, MigrationStatement, MigrationStep,
};
use crate::expect::{Bound, Expectation, evaluate};
use crate::metrics::lock_trace::{LockMode, RelationKind, TracedLock, TracedStatement};
use crate::testing::reference_report;

fn migration(name: &str, sql: &str) -> Migration {
    Migration {
        name: name.to_string(),
        path: PathBuf::from(format!("migrations/{name}.sql")),
        version: name[..4].to_string(),
        steps: vec![MigrationStep {
            statements: vec![MigrationStatement {
                sql: sql.to_string(),
                line: 1,
            }],
            in_transaction: true,
        }],
    }
}

/// How the tests' checks are judged: `naive` against `retry`, a 1 s stall budget.
pub(crate) fn judging() -> Judging<'static> {
    Judging {
        deploy: "naive",
        recommend: "retry",
        max_stall_s: 1,
        layout: crate::choices::Layout::Numbered,
    }
}

fn traced(sql: &str, mode: LockMode) -> Vec<TracedStatement> {
    vec![TracedStatement {
        step: 1,
        statement: 1,
        sql: sql.to_string(),
        duration_ms: 0.5,
        held_ms: 0.5,
        locks: vec![TracedLock {
            relation: "orders".into(),
            kind: RelationKind::Table,
            mode,
            taken: true,
            rewritten: false,
            scanned: Some(false),
        }],
        wal_bytes: Some(640),
    }]
}

/// A check of two migrations: the reference add-column run (naive stalls,
/// retry does not) and a new table that locks nothing that existed.
pub(crate) fn two_migrations() -> CheckReport {
    let report = reference_report();
    let expectations: Vec<Expectation> = ["naive", "retry"]
        .into_iter()
        .map(|strategy| Expectation {
            strategy: strategy.to_string(),
            bound: Bound::MaxLongestStallS(1),
            source: "check --max-stall".to_string(),
        })
        .collect();
    let add = "ALTER TABLE orders ADD COLUMN note text";
    let measured = CheckedMigration {
        migration: migration("0002_add_note", add),
        statements: traced(add, LockMode::AccessExclusive),
        trace_ms: 3.0,
        existing_tables: vec!["orders".to_string()],
        estimates: Vec::new(),
        outcome: Outcome::Measured(Box::new(MeasuredRun {
            load: "4 clients: primary-key reads on orders".to_string(),
            blocker: "a report holding ACCESS SHARE on orders for 12 s".to_string(),
            blocks: Blocks::ReadsAndWrites,
            results: evaluate(&expectations, &report),
            report,
            folder: PathBuf::from("results/check/0002_add_note"),
            replica: None,
            extended: Vec::new(),
            blamed_by_replay: None,
        })),
    };
    let create = "CREATE TABLE notes (id int)";
    let not_measured = CheckedMigration {
        migration: migration("0003_notes", create),
        statements: Vec::new(),
        trace_ms: 1.0,
        existing_tables: Vec::new(),
        estimates: Vec::new(),
        outcome: Outcome::NotMeasured,
    };
    let migrations = [measured, not_measured]
        .into_iter()
        .map(|checked| {
            let judged = judge(&checked, &judging());
            (checked, judged)
        })
        .collect();
    CheckReport {
        dir: PathBuf::from("migrations"),
        out_dir: PathBuf::from("results/check"),
        deploy: "naive".to_string(),
        recommend: "retry".to_string(),
        budgets: Budgets {
            max_stall_s: 1,
            max_p99_ms: None,
            max_failed: None,
        },
        hold_s: 12.0,
        clients: 4,
        data: "100,000 generated rows per table".to_string(),
        server_version: "15.8".to_string(),
        earlier: 1,
        unfilled: Vec::new(),
        left_empty: Vec::new(),
        key_tables: Vec::new(),
        fewer_rows: Vec::new(),
        notes: Vec::new(),
        unordered: None,
        measure: crate::choices::Measure::All,
        replica: false,
        migrations,
        phases: Default::default(),
    }
}

#[test]
fn a_deployed_run_that_did_not_happen_is_no_result_and_exit_4() {
    let mut report = two_migrations();
    let (checked, judged) = &mut report.migrations[0];
    let Outcome::Measured(run) = &mut checked.outcome else {
        panic!("the first migration is measured");
    };
    run.report.strategies[0].summary.invalid =
        "the report failed at 6.1 s, 2.1 s into its 12 s hold".to_string();
    *judged = judge(checked, &judging());
    assert_eq!(judged.verdict, MigrationVerdict::Invalid);
    assert_eq!(report.exit_code(), 4);
    assert_eq!(
        report.verdict_line(),
        "**INVALID**: 1 of 2 new migrations did not run as written, so the check has no \
         result for them: 0002_add_note (the report failed at 6.1 s, 2.1 s into its 12 s hold)."
    );
    let files = report.files().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&files[1].bytes).unwrap();
    assert_eq!(json["verdict"], "invalid");
    assert_eq!(json["migrations"][0]["verdict"], "invalid");
    let junit = String::from_utf8(files[2].bytes.clone()).unwrap();
    assert!(junit.contains("failures=\"0\" errors=\"1\""), "{junit}");
    assert!(
        junit.contains("<error message=\"no result\">the report failed at 6.1 s"),
        "{junit}"
    );
}

#[test]
fn a_migration_with_no_result_keeps_the_others_failures_in_the_headline() {
    let mut report = two_migrations();
    let (checked, judged) = &mut report.migrations[1];
    checked.outcome = Outcome::NoResult("table notes holds no rows (...)".to_string());
    *judged = judge(checked, &judging());
    assert_eq!(judged.verdict, MigrationVerdict::Invalid);
    assert_eq!(report.exit_code(), 4);
    assert_eq!(
        report.verdict_line(),
        "**INVALID**: 1 of 2 new migrations did not run as written, so the check has no \
         result for them: 0003_notes (table notes holds no rows (...)). Besides, 1 of 2 \
         breaks the budget as deployed (naive): 0002_add_note."
    );
    // When no migration has a result, nothing was checked: bad input.
    let (checked, judged) = &mut report.migrations[0];
    checked.outcome = Outcome::NoResult("it could not run: ...".to_string());
    *judged = judge(checked, &judging());
    assert_eq!(report.exit_code(), 2);
}

#[test]
fn the_verdict_names_the_failed_migration_and_what_retry_does() {
    let report = two_migrations();
    assert_eq!(report.exit_code(), 3);
    let naive_stall = reference_report().strategies[0].summary.longest_stall_s;
    assert_eq!(
        report.verdict_line(),
        "**FAIL**: 1 of 2 new migrations breaks the budget as deployed (naive; longest stall \
         <= 1 s): 0002_add_note; retry keeps it within the budget."
    );
    let (_, judged) = &report.migrations[0];
    assert_eq!(
        judged.broken,
        [format!("longest stall {naive_stall} s (budget 1 s)")]
    );
    assert_eq!(
        judged.recommended.as_deref(),
        Some("fixed by retry: longest stall 0 s")
    );
    assert!(
        judged.fixes[0].starts_with("ALTER TABLE blocks reads and writes on orders for"),
        "{judged:?}"
    );
    assert_eq!(
        report.migrations[1].1.verdict,
        MigrationVerdict::NotMeasured
    );
}

/// A rewrite of a table given 50 million rows in production: its hold
/// there, estimated from the trace, breaks the stall budget for every
/// strategy (retry shortens the wait, not the hold), and the fix is the
/// statement's own; with a budget the estimate keeps, it is no failure.
#[test]
fn a_hold_estimated_over_the_budget_fails_every_strategy() {
    use crate::engine::postgres::check_verdict::sizes::{SizeEstimate, SizeSource};
    let mut report = two_migrations();
    let (checked, judged) = &mut report.migrations[0];
    let retype = "ALTER TABLE orders ALTER COLUMN amount TYPE bigint";
    checked.statements[0].sql = retype.to_string();
    checked.statements[0].locks[0].rewritten = true;
    checked.estimates = vec![SizeEstimate {
        statement: 1,
        sql: retype.to_string(),
        relation: "orders".to_string(),
        mode: LockMode::AccessExclusive,
        rewritten: true,
        sorts: false,
        measured_ms: 140.0,
        held_ms: 150.0,
        measured_rows: 100_000,
        production_rows: Some(50_000_000),
        source: Some(SizeSource::TableRows),
        estimated_hold_ms: Some(70_010.0),
        fixed_ms: None,
        rows_ms: None,
        fit_rows: None,
        low_confidence: false,
    }];
    *judged = judge(checked, &judging());
    assert_eq!(judged.verdict, MigrationVerdict::Fail);
    assert_eq!(
        judged.broken[0],
        "rewrites orders under ACCESS EXCLUSIVE for about 70.01 s at 50,000,000 rows \
         (--table-rows; an estimate; budget 1 s)"
    );
    assert_eq!(judged.fixed_by_recommended, Some(false));
    assert_eq!(
        judged.recommended.as_deref(),
        Some(
            "retry does not fix it: it shortens the wait for the lock, not the hold, \
             about 70.01 s at the production size"
        )
    );
    assert_eq!(
        judged.fixes,
        [format!(
            "`{retype}` rewrites orders under ACCESS EXCLUSIVE: 140 ms for 100,000 rows, so \
             about 70.01 s at 50,000,000 rows (--table-rows; an estimate, scaled by rows); \
             lock_timeout and retry do not shorten a hold: add a column of the new type, \
             backfill it in batches, and swap (or change to a binary-coercible type, which \
             skips the rewrite)"
        )]
    );
    assert!(
        report
            .verdict_line()
            .ends_with("0002_add_note; retry does not keep it within the budget."),
        "{}",
        report.verdict_line()
    );
    let json: serde_json::Value =
        serde_json::from_slice(&report.files().unwrap()[1].bytes).unwrap();
    let estimate = &json["migrations"][0]["estimates"][0];
    assert_eq!(estimate["production_rows"], 50_000_000);
    assert_eq!(estimate["source"], "table_rows");

    // A budget of 100 s keeps the hold: the measured stall alone is judged.
    let (checked, _) = &report.migrations[0];
    let judged = judge(
        checked,
        &Judging {
            max_stall_s: 100,
            ..judging()
        },
    );
    assert!(
        !judged.broken.iter().any(|b| b.contains("estimate")),
        "{judged:?}"
    );
    // Kept, but a fix must be followed by the budget plus 2 s of traffic,
    // 102 s, which the run did not have: not shown.
    assert_eq!(judged.fixed_by_recommended, None);
}

#[test]
fn check_csv_is_one_record_per_migration_and_strategy() {
    let files = two_migrations().files().unwrap();
    let csv = String::from_utf8(files[0].bytes.clone()).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "migration,verdict,strategy,role,blocks,within_budget,longest_stall_s,\
         zero_tps_seconds,worst_second_tps,lat_p99_ms,lat_max_ms,failed,ddl_tries,\
         ddl_outcome,done_after_s,broken,fix"
    );
    assert!(lines[1].starts_with("0002_add_note,fail,naive,deployed,reads_and_writes,false,"));
    assert!(lines[2].starts_with("0002_add_note,fail,retry,recommended,reads_and_writes,true,0,"));
    assert_eq!(lines[3], "0003_notes,not_measured,,,,,,,,,,,,,,,");
    let records: Vec<CheckRecord> = ::csv::Reader::from_reader(csv.as_bytes())
        .deserialize()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(records, two_migrations().records());
}

#[test]
fn check_json_and_junit_hold_every_migration() {
    let files = two_migrations().files().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&files[1].bytes).unwrap();
    assert_eq!(json["verdict"], "fail");
    let first = &json["migrations"][0];
    assert_eq!(
        first["statements"][0]["locks"][0]["blocks"],
        "reads_and_writes"
    );
    assert_eq!(first["statements"][0]["wal_bytes"], 640);
    assert_eq!(first["strategies"].as_array().unwrap().len(), 2);
    assert_eq!(json["migrations"][1]["verdict"], "not_measured");
    let junit = String::from_utf8(files[2].bytes.clone()).unwrap();
    assert!(junit.contains("tests=\"2\" failures=\"1\""), "{junit}");
    assert!(
        junit.contains("<testcase classname=\"stallbench.check\" name=\"0003_notes\"/>"),
        "{junit}"
    );
    assert!(
        junit.contains("<failure message=\"naive: longest stall"),
        "{junit}"
    );
}

/// `--trace-only`: a migration whose trace shows a lock that blocks traffic
/// is flagged, not failed (exit 0, check.json `flagged`, a skipped test
/// case); one with nothing that blocks passes from its trace.
#[test]
fn a_traced_migration_is_flagged_for_a_measured_run() {
    let mut report = two_migrations();
    report.measure = crate::choices::Measure::None;
    let (checked, judged) = &mut report.migrations[0];
    let flags = crate::engine::postgres::check_verdict::verdict::trace_flags(
        &checked.statements,
        &checked.existing_tables,
    );
    assert_eq!(
        flags,
        [
            "statement 1 (ALTER TABLE) takes ACCESS EXCLUSIVE on orders, which blocks reads and \
          writes while it waits for the lock and runs"
        ]
    );
    checked.outcome = Outcome::Traced(flags);
    *judged = judge(checked, &judging());
    assert_eq!(judged.verdict, MigrationVerdict::Flagged);
    assert_eq!(report.exit_code(), 0);
    assert_eq!(
        report.verdict_line(),
        "**flagged**: 1 of 2 judged from the trace alone shows a lock that blocks traffic or a \
         rename, which only a measured run can judge (--measure flagged): 0002_add_note. \
         None ran under traffic (--trace-only, or they lock no table that existed before them), \
         so no stall was measured: the trace found 1 that locks no table that existed before \
         it, 1 whose strongest lock on a table that existed before it is ACCESS EXCLUSIVE \
         (blocks reads and writes); no rewrite, no whole-table scan of such a table."
    );
    let files = report.files().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&files[1].bytes).unwrap();
    assert_eq!(json["verdict"], "flagged");
    assert_eq!(json["migrations"][0]["verdict"], "flagged");
    let junit = String::from_utf8(files[2].bytes.clone()).unwrap();
    assert!(
        junit.contains("<skipped message=\"flagged, not measured: statement 1 (ALTER TABLE)"),
        "{junit}"
    );
    let text = crate::export::check_report::check_md::check_text(&report);
    assert!(
        text.contains("was traced and judged from its trace alone (--trace-only)")
            && text.contains("- Flagged: statement 1 (ALTER TABLE) takes ACCESS EXCLUSIVE"),
        "{text}"
    );

    // A rename is flagged as one, whatever its lock.
    let (checked, _) = &mut report.migrations[0];
    let rename = TracedStatement {
        sql: "ALTER TABLE orders RENAME COLUMN total TO amount".to_string(),
        ..checked.statements[0].clone()
    };
    let flags = crate::engine::postgres::check_verdict::verdict::trace_flags(
        &[rename],
        &checked.existing_tables,
    );
    assert!(
        flags[0].contains("renames, drops or retypes what orders holds"),
        "{flags:?}"
    );
    // Nothing on a table that existed before: a pass from the trace.
    assert!(
        crate::engine::postgres::check_verdict::verdict::trace_flags(&checked.statements, &[])
            .is_empty()
    );
    checked.outcome = Outcome::Traced(Vec::new());
    assert_eq!(judge(checked, &judging()).verdict, MigrationVerdict::Pass);
}

/// `two_migrations` checked with `--replica`: the add-column migration's
/// runs with the report on the standby stall the replica's readers 9 s
/// under naive and under retry (retry's lock_timeout cannot see the report).
fn two_migrations_on_a_replica() -> CheckReport {
    let mut report = two_migrations();
    report.replica = true;
    let (checked, judged) = &mut report.migrations[0];
    let Outcome::Measured(run) = &mut checked.outcome else {
        panic!("the first migration is measured");
    };
    let mut on_replica = reference_report();
    on_replica.load_on = crate::choices::LoadOn::Both;
    for strategy in &mut on_replica.strategies {
        let summary = &mut strategy.summary;
        summary.replica_longest_stall_s = Some(9);
        summary.replica_zero_tps_seconds = Some(8);
        summary.replica_replay_waiting_s = Some(11);
        summary.replica_max_lag_s = Some(9.8);
        summary.replica_cancelled = Some(0);
        summary.replica_failed = Some(0);
        summary.wal_bytes = Some(640);
    }
    run.replica = Some(
        crate::engine::postgres::check_verdict::checked::ReplicaRuns {
            blocker: "a report holding ACCESS SHARE on orders for 12 s on the hot standby"
                .to_string(),
            report: on_replica,
            folder: PathBuf::from("results/check/0002_add_note/replica"),
        },
    );
    *judged = judge(checked, &judging());
    report
}

#[test]
fn a_replica_stall_over_the_budget_fails_and_retry_does_not_fix_it() {
    let report = two_migrations_on_a_replica();
    let (_, judged) = &report.migrations[0];
    assert_eq!(judged.verdict, MigrationVerdict::Fail);
    let replica_words = "stalls the replica's readers 9 s (budget 1 s): the standby's replay of \
                         its lock waited 11 s behind the report there, which lock_timeout on the \
                         primary cannot see";
    assert_eq!(judged.broken.last().unwrap(), replica_words, "{judged:#?}");
    assert!(
        judged
            .fixes
            .last()
            .unwrap()
            .contains("deploy with `replica-aware`"),
        "{judged:#?}"
    );
    assert_eq!(judged.fixed_by_recommended, Some(false));
    assert_eq!(
        judged.recommended.as_deref(),
        Some(format!("retry does not fix it: {replica_words}").as_str())
    );
    assert_eq!(
        report.verdict_line(),
        "**FAIL**: 1 of 2 new migrations breaks the budget as deployed (naive; longest stall \
         <= 1 s (the replica's readers too)): 0002_add_note; retry does not keep it within the \
         budget."
    );

    // A deployed run that keeps the primary flowing fails on the replica alone.
    let (checked, _) = &report.migrations[0];
    let judged = judge(
        checked,
        &Judging {
            deploy: "retry",
            recommend: "retry",
            ..judging()
        },
    );
    assert_eq!(judged.verdict, MigrationVerdict::Fail);
    assert_eq!(judged.broken, [replica_words]);
    assert_eq!(judged.fixed_by_recommended, None);

    // Within the budget on the replica: the primary's verdict alone.
    let mut report = two_migrations_on_a_replica();
    let (checked, _) = &mut report.migrations[0];
    let Outcome::Measured(run) = &mut checked.outcome else {
        panic!("the first migration is measured");
    };
    for strategy in &mut run.replica.as_mut().unwrap().report.strategies {
        strategy.summary.replica_longest_stall_s = Some(1);
    }
    let judged = judge(checked, &judging());
    assert_eq!(judged, judge_without_replica(checked), "{judged:#?}");
}

/// `checked` judged as if the check had run without `--replica`, but for
/// the recommended sentence, which names the replica's readers' stall.
fn judge_without_replica(checked: &CheckedMigration) -> Judged {
    let mut checked = checked.clone();
    let Outcome::Measured(run) = &mut checked.outcome else {
        panic!("measured");
    };
    run.replica = None;
    let mut judged = judge(&checked, &judging());
    judged.recommended = judged
        .recommended
        .map(|sentence| format!("{sentence}; the replica's readers 1 s"));
    judged
}

#[test]
fn check_csv_and_json_get_the_replica_columns_with_replica_only() {
    let files = two_migrations_on_a_replica().files().unwrap();
    let csv = String::from_utf8(files[0].bytes.clone()).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "migration,verdict,strategy,role,blocks,within_budget,longest_stall_s,\
         zero_tps_seconds,worst_second_tps,lat_p99_ms,lat_max_ms,failed,ddl_tries,\
         ddl_outcome,done_after_s,broken,fix,replica_zero_tps_seconds,replica_longest_stall_s,\
         replica_failed,replica_replay_waiting_s,replica_max_lag_s,replica_cancelled,wal_bytes"
    );
    assert_eq!(lines.len(), 6, "{csv}");
    assert!(
        lines[1].starts_with("0002_add_note,fail,naive,deployed,"),
        "{csv}"
    );
    assert!(lines[1].ends_with(",,,,,,,"), "{csv}");
    assert!(
        lines[3].starts_with("0002_add_note,fail,naive,deployed-replica,reads_and_writes,false,"),
        "{csv}"
    );
    assert!(lines[3].ends_with(",8,9,0,11,9.8,0,640"), "{csv}");
    assert!(
        lines[4]
            .starts_with("0002_add_note,fail,retry,recommended-replica,reads_and_writes,false,"),
        "{csv}"
    );
    assert_eq!(lines[5], "0003_notes,not_measured,,,,,,,,,,,,,,,,,,,,,,");
    let records: Vec<CheckRecord> = ::csv::Reader::from_reader(csv.as_bytes())
        .deserialize()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(records, two_migrations_on_a_replica().records());

    let json: serde_json::Value = serde_json::from_slice(&files[1].bytes).unwrap();
    let first = &json["migrations"][0];
    assert_eq!(
        first["replica_results"],
        "results/check/0002_add_note/replica"
    );
    assert_eq!(first["strategies"].as_array().unwrap().len(), 4);
    assert_eq!(first["strategies"][2]["replica_longest_stall_s"], 9);
    assert_eq!(
        first["strategies"][0]["replica_longest_stall_s"],
        serde_json::Value::Null
    );
    // Without --replica the keys are not there at all.
    let files = two_migrations().files().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&files[1].bytes).unwrap();
    let first = &json["migrations"][0];
    assert!(first.get("replica_results").is_none(), "{first}");
    assert!(
        first["strategies"][0]
            .get("replica_longest_stall_s")
            .is_none()
    );
}

#[test]
fn check_md_has_a_replica_table_below_the_runs_on_the_primary() {
    let report = two_migrations_on_a_replica();
    let text = check_md::check_text(&report);
    assert!(
        text.contains(
            "On the replica, with a report holding ACCESS SHARE on orders for 12 s on the hot \
             standby and the readers on both servers:"
        ),
        "{text}"
    );
    assert!(
        text.contains("| naive (deployed-replica) | **over** | 9 | 8 | 11 | 9.8 | 0 | 0 |"),
        "{text}"
    );
    assert!(
        text.contains("Results: `results/check/0002_add_note/replica`."),
        "{text}"
    );
    // The main table keeps the runs with the report on the primary only.
    assert_eq!(text.matches("(deployed-replica)").count(), 1, "{text}");
    assert!(
        !check_md::check_text(&two_migrations()).contains("replica"),
        "without --replica check.md never says replica"
    );
}

/// retry kept the budget, but its migration committed half a second before
/// the run ended: nothing was measured after it, so it is not called a fix,
/// and every format says "not shown" instead.
#[test]
fn a_fix_without_traffic_after_its_commit_is_not_shown() {
    let mut report = two_migrations();
    let (checked, judged) = &mut report.migrations[0];
    let Outcome::Measured(run) = &mut checked.outcome else {
        panic!("the first migration is measured");
    };
    let retry = &mut run.report.strategies[1];
    let run_s = retry.seconds.len() as f64;
    retry.attempts.last_mut().unwrap().ended_s = run_s - 0.5;
    *judged = judge(checked, &judging());
    assert_eq!(judged.verdict, MigrationVerdict::Fail);
    assert_eq!(judged.fixed_by_recommended, None);
    let recommended = judged.recommended.clone().unwrap();
    assert!(
        recommended.starts_with("not shown: retry's migration committed at ")
            && recommended.ends_with("lengthen --duration"),
        "{recommended}"
    );
    assert!(
        report.verdict_line().ends_with(
            "0002_add_note; not shown whether retry keeps 0002_add_note within it: its \
             migration committed as its run ended (lengthen --duration)."
        ),
        "{}",
        report.verdict_line()
    );
    let text = crate::export::check_report::check_md::check_text(&report);
    assert!(
        text.contains(&recommended) && !text.contains("fixed by retry"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&report.files().unwrap()[1].bytes).unwrap();
    assert_eq!(
        json["migrations"][0]["fixed_by_recommended"],
        serde_json::Value::Null
    );
    assert_eq!(json["migrations"][0]["recommended"], recommended.as_str());
}

/// A deployed run whose migration gave up fails, whatever its stall; a
/// check whose migrations all lock no table that existed measured nothing,
/// and its verdict never says "within budget".
#[test]
fn a_failed_deploy_fails_and_nothing_measured_is_never_within_budget() {
    let mut report = two_migrations();
    let (checked, judged) = &mut report.migrations[0];
    let Outcome::Measured(run) = &mut checked.outcome else {
        panic!("the first migration is measured");
    };
    let naive = &mut run.report.strategies[0];
    naive.summary.ddl_outcome = crate::metrics::DdlOutcome::GaveUp;
    run.results
        .retain(|result| result.expectation.strategy != "naive");
    *judged = judge(checked, &judging());
    assert_eq!(judged.verdict, MigrationVerdict::Fail, "{judged:?}");
    assert!(
        judged.broken[0].starts_with("the migration did not apply: it gave up waiting"),
        "{judged:?}"
    );
    assert!(
        judged.fixes[0].starts_with("it gave up waiting for its lock")
            && judged.fixes[0].contains("what would apply it: retry around your migration tool"),
        "{judged:?}"
    );
    assert_eq!(report.exit_code(), 3);
    assert!(
        report
            .verdict_line()
            .contains("0002_add_note (0002_add_note did not apply as deployed: a failed deploy)"),
        "{}",
        report.verdict_line()
    );

    report.migrations.remove(0);
    let line = report.verdict_line();
    assert_eq!(
        line,
        "**pass**: 1 new migration traced, none over a budget by the trace. None ran under \
         traffic (they lock no table that existed before them), so no stall was measured: the \
         trace found 1 that locks no table that existed before it; no rewrite, no whole-table \
         scan of such a table."
    );
    let json: serde_json::Value =
        serde_json::from_slice(&report.files().unwrap()[1].bytes).unwrap();
    assert_eq!(json["measured"], 0);
}

#[test]
fn check_md_names_the_tables_the_fill_left_empty() {
    let mut report = two_migrations();
    let text = |report: &CheckReport| String::from_utf8(check_md::check_md(report).bytes).unwrap();
    assert!(!text(&report).contains("left empty"));
    report.left_empty = vec!["audit".to_string(), "notes".to_string()];
    assert!(
        text(&report).contains(
            "\n- left empty, as no new migration locks or names them (--fill all fills them): \
             audit, notes\n\n"
        ),
        "{}",
        text(&report)
    );
    report.key_tables = vec!["customers (1,000 rows)".to_string()];
    assert!(
        text(&report).contains(
            "\n- fewer rows, as no new migration locks or names them and the filled tables' \
             foreign keys only refer to their keys: customers (1,000 rows)\n\n"
        ),
        "{}",
        text(&report)
    );
}
