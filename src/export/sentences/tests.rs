use super::*;
use crate::metrics::DdlOutcome;
use crate::metrics::rank_strategies;
use crate::metrics::ranking::rank_rows;
use crate::testing::{neutral_row as row, reference_report};

fn sorted(rows: Vec<RankingRow>) -> Vec<Place> {
    rank_rows(rows)
}

fn alone(row: RankingRow) -> Vec<Place> {
    vec![Place {
        row,
        decided_by: None,
    }]
}

#[test]
fn the_sample_headline() {
    let ranked = rank_strategies(&reference_report());
    assert_eq!(
        headline(&ranked),
        "retry kept 57% of its baseline in its worst second (naive: 0%) \
         and finished the migration 2.3 s later than naive."
    );
}

#[test]
fn the_headline_says_when_the_baseline_did_not_finish() {
    let mut baseline = row("naive", 0);
    baseline.runs[0].longest_stall_s = 4;
    baseline.runs[0].worst_second_tps = 0;
    baseline.runs[0].migration_done_at_s = None;
    baseline.runs[0].ddl_outcome = DdlOutcome::Error;
    let mut best = row("retry", 1);
    best.runs[0].worst_second_tps = 600;
    best.runs[0].migration_done_at_s = Some(14.04);
    let ranked = sorted(vec![baseline, best]);
    assert_eq!(
        headline(&ranked),
        "retry kept 60% of its baseline in its worst second (naive: 0%) and finished the \
         migration at 14.0 s; naive did not finish the migration."
    );
}

#[test]
fn the_headline_says_when_the_best_did_not_finish() {
    let mut baseline = row("naive", 0);
    baseline.runs[0].longest_stall_s = 4;
    baseline.runs[0].worst_second_tps = 0;
    let mut best = row("retry", 1);
    best.runs[0].migration_done_at_s = None;
    best.runs[0].ddl_outcome = DdlOutcome::GaveUp;
    // A migration that completed ranks first however long it stalled.
    let ranked = sorted(vec![baseline.clone(), best.clone()]);
    assert_eq!(
        headline(&ranked),
        "naive ranked first: it kept 0% of its baseline in its worst second and finished \
         the migration at 6.0 s."
    );
    baseline.runs[0].migration_done_at_s = None;
    baseline.runs[0].ddl_outcome = DdlOutcome::Error;
    let ranked = sorted(vec![baseline, best]);
    assert_eq!(
        headline(&ranked),
        "retry kept 100% of its baseline in its worst second (naive: 0%) but did not \
         finish the migration; naive did not finish the migration."
    );
}

#[test]
fn the_headline_says_when_every_criterion_tied() {
    let mut retry = row("retry", 1);
    retry.runs[0].worst_second_tps = 520;
    retry.runs[0].steady_shares = (0.93, 1.05);
    let mut retry_b = row("retry-b", 2);
    retry_b.runs[0].worst_second_tps = 560;
    retry_b.runs[0].steady_shares = (0.97, 1.02);
    let mut naive = row("naive", 0);
    naive.runs[0].longest_stall_s = 9;
    naive.runs[0].worst_second_tps = 0;
    let ranked = sorted(vec![naive, retry_b, retry]);
    assert_eq!(
        headline(&ranked),
        "retry and retry-b tie: worst second 52% [45-57%] / 56% [51-61%] of baseline, \
         within the run's noise (naive: 0%)."
    );
    let ranked = sorted(vec![row("retry", 1), row("naive", 0)]);
    assert_eq!(
        headline(&ranked),
        "naive and retry tie: worst second 100% [95-105%] / 100% [95-105%] of baseline, within \
         the run's noise."
    );
}

#[test]
fn decided_by_names_the_criterion_and_both_figures() {
    let cell = |above: &RankingRow, place: &RankingRow| {
        let ranked = sorted(vec![above.clone(), place.clone()]);
        assert_eq!(ranked[1].row.strategy, place.strategy, "{ranked:?}");
        decided_by_cell(&ranked[1], &ranked[0].row)
    };
    let retry = row("retry", 0);
    let mut naive = row("naive", 1);
    assert_eq!(cell(&retry, &naive), "tie");
    naive.runs[0].ddl_outcome = DdlOutcome::GaveUp;
    assert_eq!(cell(&retry, &naive), "completed");
    naive.runs[0].ddl_outcome = DdlOutcome::Ok;
    naive.runs[0].longest_stall_s = 9;
    assert_eq!(cell(&retry, &naive), "longest stall 9 s vs 0 s");
    naive.runs[0].longest_stall_s = 0;
    naive.runs[0].worst_second_tps = 17;
    assert_eq!(cell(&retry, &naive), "worst second 2% vs 100% of baseline");
    naive.runs[0].worst_second_tps = 950;
    naive.runs[0].steady_shares = (0.95, 1.05);
    naive.runs[0].failed_transactions = 213_396;
    assert_eq!(cell(&retry, &naive), "failed 68% of transactions vs 0%");
    naive.runs[0].failed_transactions = 500;
    assert_eq!(cell(&retry, &naive), "failures 500 vs 0");
    naive.runs[0].failed_transactions = 0;
    naive.runs[0].worst_second_p99_ms = 10.9;
    assert_eq!(cell(&retry, &naive), "tie", "under 10%");
    naive.runs[0].worst_second_p99_ms = 12.0;
    assert_eq!(cell(&retry, &naive), "worst-second latency 12.0 vs 10.0 ms");
    // The first place reads the same decision from its side.
    let ranked = sorted(vec![naive, retry]);
    assert_eq!(
        decided_by_cell(&ranked[0], &ranked[1].row),
        "worst-second latency 10.0 vs 12.0 ms"
    );
}

#[test]
fn the_headline_says_which_strategies_failed_massively_and_with_what() {
    let mut naive = row("naive", 0);
    naive.runs[0].longest_stall_s = 9;
    naive.runs[0].worst_second_tps = 0;
    naive.runs[0].migration_done_at_s = Some(15.7);
    naive.runs[0].failed_transactions = 300;
    let mut retry = row("retry", 1);
    retry.runs[0].transactions = 62_000;
    retry.runs[0].failed_transactions = 38_000;
    retry.runs[0].main_failure = Some("0A000 cached plan must not change result type".to_string());
    let ranked = sorted(vec![naive.clone(), retry.clone()]);
    assert_eq!(
        headline(&ranked),
        "naive ranked first: it kept 0% of its baseline in its worst second and finished \
         the migration at 15.7 s. retry failed 38% of its transactions \
         (0A000 cached plan must not change result type)."
    );
    assert_eq!(
        decided_by_cell(&ranked[1], &ranked[0].row),
        "failed 38% of transactions vs <1%"
    );
    // Both failed massively: both are named, in rank order.
    naive.runs[0].failed_transactions = 100_000;
    retry.runs[0].main_failure = None;
    let ranked = sorted(vec![naive, retry]);
    assert!(
        headline(&ranked).ends_with(
            " retry failed 38% of its transactions. naive failed 50% of its transactions."
        ),
        "{}",
        headline(&ranked)
    );
}

#[test]
fn the_headline_says_which_strategy_lost_data_and_how_much() {
    let check = |expected: &str, actual: &str| {
        crate::metrics::invariants::InvariantCheck::new(
            "counter equals committed increments",
            "lost updates",
            expected,
            actual,
        )
    };
    let mut lossy = row("read-committed", 0);
    lossy.runs[0].anomalies = 312;
    lossy.runs[0].invariants = vec![check("1510", "1198")];
    let mut locked = row("for-update", 1);
    locked.runs[0].invariants = vec![check("900", "900")];
    let ranked = sorted(vec![lossy, locked]);
    assert!(
        headline(&ranked).ends_with(
            " read-committed lost data: 312 lost updates (counter equals committed \
             increments: expected 1510, found 1198); it ranks below every strategy that \
             lost none."
        ),
        "{}",
        headline(&ranked)
    );
    assert_eq!(
        invariant_words(&ranked[0].row.runs[0].invariants[0]),
        "counter equals committed increments held (900)"
    );
}

#[test]
fn the_headline_says_earlier_and_same_time() {
    let mut baseline = row("naive", 0);
    baseline.runs[0].longest_stall_s = 4;
    baseline.runs[0].migration_done_at_s = Some(20.0);
    let mut best = row("gitlab", 1);
    best.runs[0].migration_done_at_s = Some(11.6);
    let ranked = sorted(vec![baseline.clone(), best.clone()]);
    assert!(
        headline(&ranked).ends_with("finished the migration 8.4 s earlier than naive."),
        "{}",
        headline(&ranked)
    );
    best.runs[0].migration_done_at_s = Some(20.01);
    let ranked = sorted(vec![baseline, best]);
    assert!(
        headline(&ranked).ends_with("finished the migration at the same time as naive."),
        "{}",
        headline(&ranked)
    );
}

#[test]
fn the_headline_is_simpler_when_the_baseline_ranks_first_or_runs_alone() {
    let baseline = row("naive", 0);
    let mut other = row("retry", 1);
    other.runs[0].longest_stall_s = 2;
    let ranked = sorted(vec![baseline.clone(), other]);
    assert_eq!(
        headline(&ranked),
        "naive ranked first: it kept 100% of its baseline in its worst second and \
         finished the migration at 6.0 s."
    );
    assert_eq!(
        headline(&alone(baseline)),
        "naive kept 100% of its baseline in its worst second and finished the migration \
         at 6.0 s."
    );
    assert_eq!(headline(&[]), "No strategy ran.");
}

#[test]
fn the_headline_names_a_whole_run_figure() {
    let mut load = row("load", 0);
    load.runs[0].window = None;
    load.runs[0].migration_done_at_s = None;
    load.runs[0].ddl_tries = 0;
    load.runs[0].ddl_outcome = DdlOutcome::None;
    load.runs[0].worst_second_tps = 400;
    assert_eq!(
        headline(&alone(load)),
        "load kept 40% of its baseline in its worst second of the whole run and ran no \
         migration."
    );
}

#[test]
fn the_chain_reads_root_first() {
    let links = crate::metrics::locks::chain(&crate::metrics::locks::reference_moment());
    assert_eq!(
        describe_chain(&links),
        "report (pid 100) holds AccessShareLock on orders \
         <- ddl (pid 108) waits for AccessExclusiveLock on orders, blocked by report \
         <- reader-1..4 wait for AccessShareLock on orders, blocked by ddl"
    );
}

#[test]
fn row_waits_name_the_row_s_table_and_how_many_wait() {
    use crate::metrics::locks::{chain, sample};
    // A writer holds the oldest jobs FOR UPDATE: the first waiter of the
    // row waits for the writer's transaction id (its tuple lock names
    // the table), the next ones for that tuple lock; one waiter's tuple
    // lock was not seen.
    let row = |pid: u32, role: &str, event: &str, mode: &str, relation: &str, by: &[&str]| {
        let mut waiter = sample(pid, role, mode, false, by);
        waiter.wait_event = event.into();
        waiter.relation = relation.into();
        waiter
    };
    let moment = [
        sample(100, "writer", "RowShareLock", true, &[]),
        row(
            1,
            "client-1",
            "transactionid",
            "ShareLock",
            "jobs",
            &["writer"],
        ),
        row(
            2,
            "client-2",
            "tuple",
            "AccessExclusiveLock",
            "jobs",
            &["client-1"],
        ),
        row(
            3,
            "client-3",
            "tuple",
            "AccessExclusiveLock",
            "jobs",
            &["client-1"],
        ),
    ];
    let mut jobs = moment.to_vec();
    jobs[0].relation = "jobs".into();
    assert_eq!(
        describe_chain(&chain(&jobs)),
        "writer (pid 100) holds RowShareLock on jobs \
         <- client-1 (pid 1) waits for a row lock on jobs, blocked by writer \
         <- client-2..3 wait for a row lock on jobs (2 sessions), blocked by client-1"
    );
    let unseen = [
        jobs[0].clone(),
        row(
            4,
            "client-4",
            "transactionid",
            "ShareLock",
            "transactionid",
            &["writer"],
        ),
    ];
    assert!(
        describe_chain(&chain(&unseen))
            .ends_with("<- client-4 (pid 4) waits for a row lock, blocked by writer"),
        "{}",
        describe_chain(&chain(&unseen))
    );
}

#[test]
fn a_waiter_blocked_by_no_one_is_being_granted_its_lock() {
    use crate::metrics::locks::{chain, sample};
    let links = chain(&[
        sample(108, "ddl", "AccessExclusiveLock", false, &[]),
        sample(90, "reader-1", "AccessShareLock", false, &["ddl"]),
    ]);
    assert_eq!(
        describe_chain(&links),
        "ddl (pid 108) waits for AccessExclusiveLock on orders, blocked by no one \
         (being granted) <- reader-1 (pid 90) waits for AccessShareLock on orders, \
         blocked by ddl"
    );
}

#[test]
fn the_chain_on_the_replica_names_the_server_and_the_replay() {
    use crate::metrics::locks::{chain, replica_moment};
    assert_eq!(
        describe_chain(&chain(&replica_moment())),
        "report (replica, pid 3026) holds AccessShareLock on orders \
         <- startup (replica, pid 2950) replays AccessExclusiveLock on orders from ddl \
         (primary), blocked by report \
         <- reader-1..4 (replica) wait for AccessShareLock on orders, blocked by startup"
    );
    // Replay's blocker neither sampled nor logged: not "being granted".
    let mut unnamed = replica_moment();
    unnamed.retain(|s| s.role != "report");
    unnamed[1].blocked_by.clear();
    assert!(
        describe_chain(&chain(&unnamed)).starts_with(
            "startup (replica, pid 2950) replays AccessExclusiveLock on orders from ddl \
             (primary), blocked by a session not seen <- "
        ),
        "{}",
        describe_chain(&chain(&unnamed))
    );
}

#[test]
fn reader_ranges_compact_only_when_consecutive() {
    let roles = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        compact_roles(&roles(&["reader-2", "reader-1", "reader-3"])),
        "reader-1..3"
    );
    assert_eq!(
        compact_roles(&roles(&["reader-1", "reader-3"])),
        "reader-1, reader-3"
    );
    assert_eq!(
        compact_roles(&roles(&["ddl", "external:7"])),
        "ddl, external:7"
    );
}
