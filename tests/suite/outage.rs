//! The lock-queue outage reproduces on a real throwaway server, the results
//! folder holds every file of the contract, and the report names the worst
//! moment and the deciding criterion honestly: the lock chain printed is the
//! moment the queue behind the DDL was longest and oldest (not the first
//! sample of the stall), and the ranking says what decided each place. The
//! tests of the reference outage share one run of it.

use std::fs::File;
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::workload;
use crate::common::*;
use stallbench::config::Mode;
use stallbench::export::csv::LockTraceRecord;
use stallbench::metrics::lock_trace::{Blocks, LockMode};
use stallbench::metrics::locks::LockSample;
use stallbench::metrics::{AttemptOutcome, RunReport, StrategyReport};
use stallbench::workload::BlockerFile;

/// The reference outage (naive, then retry), run once on a throwaway server
/// (the server log's facts are read only there) by the first test that asks.
fn reference_run() -> &'static (ShortRun, RunReport) {
    static RUN: OnceLock<(ShortRun, RunReport)> = OnceLock::new();
    RUN.get_or_init(|| {
        let _cpus = cpus_shared();
        let run = ShortRun::throwaway(&reference());
        let report = run.execute(compare_all());
        (run, report)
    })
}

fn longest_zero_run(report: &StrategyReport) -> u32 {
    let (mut longest, mut current) = (0, 0);
    for row in &report.seconds {
        current = if row.tps == 0 { current + 1 } else { 0 };
        longest = longest.max(current);
    }
    longest
}

#[test]
fn naive_stalls_every_reader_and_retry_keeps_them_flowing() {
    let (run, report) = reference_run();
    let out = &run.out;
    let tps = |s: &StrategyReport| s.seconds.iter().map(|r| r.tps).collect::<Vec<_>>();

    // naive: the ALTER queues behind the report, every reader queues behind the ALTER.
    let naive = strategy_named(report, "naive");
    assert_eq!(naive.seconds.len(), 6);
    assert!(
        longest_zero_run(naive) >= 3,
        "naive should have at least 3 consecutive zero-tps seconds: {:?}",
        tps(naive)
    );
    assert_eq!(naive.attempts.len(), 1, "{:?}", naive.attempts);
    let alter = &naive.attempts[0];
    assert_eq!(alter.outcome, AttemptOutcome::Ok);
    assert!(
        alter.waited_ms >= 3000.0,
        "the naive ALTER should wait for the report (about 3.5 s): {alter:?}"
    );
    // ADD COLUMN is a catalog change: the time is the queue, the hold is short.
    let lock = alter.lock.expect("the observer timed the lock");
    assert!(
        lock.wait_ms >= 3000.0 && lock.held_ms < 300.0 && lock.granted_s.is_some(),
        "the ALTER waits for the lock and holds it briefly: {alter:?}"
    );
    // A closed loop hides the damage: only the 4 stalled transactions are slow,
    // so the run's p99 stays far below the stall (the open-loop test shows the other side).
    assert!(
        naive.summary.lat_p99_ms < 0.2 * alter.waited_ms,
        "closed loop: p99 {} ms for a {} ms stall",
        naive.summary.lat_p99_ms,
        alter.waited_ms
    );
    // The lock queue as the observer saw it: empty before the report, every client in it during the stall.
    for row in &naive.seconds[..1] {
        assert_eq!(
            row.lock_waiters, 0,
            "no one waits before the blocker: {row:?}"
        );
    }
    let stalled: Vec<_> = naive.seconds.iter().filter(|r| r.tps == 0).collect();
    for row in &stalled {
        assert!(
            row.lock_waiters >= 4,
            "all 4 clients wait on locks during the stall: {row:?}"
        );
        assert!(
            row.blocker_active,
            "the stall is inside the report window: {row:?}"
        );
    }

    // The chain at its worst, from the server's own view: report at the root,
    // the ALTER behind it, every reader behind the ALTER (not behind the report).
    let worst = &naive.locks.worst;
    let role = |name: &str| {
        worst
            .iter()
            .find(|s| s.role == name)
            .unwrap_or_else(|| panic!("no {name} in the worst moment: {worst:#?}"))
    };
    let report_session = role("report");
    assert!(report_session.granted);
    assert_eq!(report_session.lock_mode, "AccessShareLock");
    let ddl = role("ddl");
    assert!(!ddl.granted);
    assert_eq!(ddl.lock_mode, "AccessExclusiveLock");
    assert_eq!(ddl.blocked_by, ["report"]);
    let readers: Vec<_> = worst
        .iter()
        .filter(|s| s.role.starts_with("reader-"))
        .collect();
    assert_eq!(readers.len(), 4, "{worst:#?}");
    for reader in readers {
        assert!(!reader.granted);
        assert_eq!(reader.lock_mode, "AccessShareLock");
        assert_eq!(
            reader.blocked_by,
            ["ddl"],
            "readers queue behind the DDL: {reader:?}"
        );
    }
    let links = stallbench::metrics::locks::chain(worst);
    assert_eq!(links[0].roles, ["report"], "the root is named first");
    let busiest = naive
        .locks
        .per_second
        .iter()
        .map(|s| s.waiting_behind_ddl)
        .max();
    assert_eq!(busiest, Some(4));
    assert!(
        naive
            .locks
            .server_log
            .iter()
            .any(|s| s.contains("lock waits longer than deadlock_timeout")),
        "{:?}",
        naive.locks.server_log
    );

    // retry: short dips, never a zero second; tries time out with 55P03, then one succeeds.
    let retry = strategy_named(report, "retry");
    assert_eq!(retry.summary.zero_tps_seconds, 0, "{:?}", tps(retry));
    let timeouts: Vec<_> = retry
        .attempts
        .iter()
        .filter(|a| a.outcome == AttemptOutcome::LockTimeout)
        .collect();
    assert!(timeouts.len() >= 2, "{:?}", retry.attempts);
    for attempt in &timeouts {
        assert_eq!(attempt.sqlstate_cell(), "55P03");
        assert!(
            attempt.waited_ms >= 450.0 && attempt.waited_ms < 1500.0,
            "a try waits about lock_timeout: {attempt:?}"
        );
        let lock = attempt.lock.expect("the observer timed the lock");
        assert_eq!(lock.granted_s, None, "a timed-out try never got the lock");
        assert_eq!(lock.wait_ms, attempt.waited_ms);
        assert_eq!(lock.held_ms, 0.0);
    }
    // No reader waits longer than lock_timeout (500 ms) plus 300 ms.
    for sample in retry
        .locks
        .samples
        .iter()
        .filter(|s| s.role.starts_with("reader-"))
    {
        assert!(
            sample.wait_ms <= 800.0,
            "a reader waited too long: {sample:?}"
        );
    }
    let last = retry.attempts.last().unwrap();
    assert_eq!(last.outcome, AttemptOutcome::Ok, "{:?}", retry.attempts);
    assert_eq!(retry.summary.ddl_outcome, "ok");
    assert!(naive.summary.longest_stall_s > retry.summary.longest_stall_s);

    // The lock trace, taken before each run: the ALTER takes ACCESS EXCLUSIVE
    // on orders (reads and writes wait), no rewrite, held until its commit.
    let trace: Vec<LockTraceRecord> = read_records(&out.join("ddl_locks.csv"));
    for strategy in ["naive", "retry"] {
        let alter = trace
            .iter()
            .find(|row| row.strategy == strategy && row.relation == "orders")
            .unwrap_or_else(|| panic!("no lock of {strategy} on orders: {trace:?}"));
        assert_eq!(alter.mode, Some(LockMode::AccessExclusive), "{alter:?}");
        assert_eq!(alter.blocks, Some(Blocks::ReadsAndWrites), "{alter:?}");
        assert!(alter.taken && !alter.rewritten, "{alter:?}");
        assert_eq!(alter.scanned, Some(false), "{alter:?}");
        assert!(
            alter.held_ms > 0.0 && alter.held_ms >= alter.statement_ms,
            "{alter:?}"
        );
        assert_eq!(alter.sql, "ALTER TABLE orders ADD COLUMN note text");
    }
    assert_eq!(naive.lock_trace.len(), 1, "{:?}", naive.lock_trace);

    check_results_folder(out, report);
    assert_run_stopped_its_server(out);
}

fn waiting(strategy: &StrategyReport) -> Vec<&LockSample> {
    strategy.locks.worst.iter().filter(|s| !s.granted).collect()
}

#[test]
fn the_chain_printed_is_the_worst_moment_and_the_ranking_says_why() {
    let (run, report) = reference_run();
    let naive = &report.strategies[0];
    let retry = &report.strategies[1];
    assert_eq!(
        (naive.strategy.as_str(), retry.strategy.as_str()),
        ("naive", "retry")
    );

    // naive: the ALTER waited about 3.5 s for the report; at the worst moment
    // the ALTER and every reader behind it had waited for seconds, not the
    // few milliseconds of the stall's first sample.
    let alter_waited_ms = naive.attempts[0].waited_ms;
    assert!(alter_waited_ms >= 3000.0, "{:?}", naive.attempts);
    let naive_waiting = waiting(naive);
    let behind_ddl: Vec<&&LockSample> = naive_waiting
        .iter()
        .filter(|s| s.blocked_by == ["ddl"])
        .collect();
    assert_eq!(behind_ddl.len(), 4, "{:#?}", naive.locks.worst);
    for sample in naive_waiting {
        assert!(
            sample.wait_ms >= 2500.0 && sample.wait_ms <= alter_waited_ms + 300.0,
            "at the worst moment every session had waited seconds (the ALTER: {alter_waited_ms} ms): {sample:?}"
        );
    }

    // retry: no wait at its worst moment is longer than lock_timeout (500 ms) plus 300 ms.
    let retry_waiting = waiting(retry);
    assert!(
        retry_waiting.iter().any(|s| s.role == "ddl"),
        "{:#?}",
        retry.locks.worst
    );
    for sample in retry_waiting {
        assert!(
            sample.wait_ms <= 800.0,
            "retry's worst wait stays within its lock_timeout: {sample:?}"
        );
    }

    // summary.md prints that moment: its time and the waits in its table.
    let summary_md = std::fs::read_to_string(run.out.join("summary.md")).unwrap();
    let worst_s = naive.locks.worst[0].t_s;
    assert!(
        summary_md.contains(&format!(
            "## naive: the lock queue at its worst ({worst_s:.1} s)"
        )),
        "{summary_md}"
    );
    let reader_rows: Vec<&str> = summary_md
        .lines()
        .skip_while(|line| !line.starts_with("## naive: the lock queue"))
        .take_while(|line| !line.starts_with("## retry"))
        .filter(|line| line.starts_with("| reader-"))
        .collect();
    assert_eq!(reader_rows.len(), 4, "{summary_md}");
    for line in reader_rows {
        let waiting_ms: f64 = line.split('|').nth(6).unwrap().trim().parse().unwrap();
        assert!(waiting_ms >= 2500.0, "{line}");
    }

    // The ranking: both migrations completed, the stall decided.
    let (naive_stall_s, retry_stall_s) =
        (naive.summary.longest_stall_s, retry.summary.longest_stall_s);
    assert!(naive_stall_s > retry_stall_s);
    assert!(
        summary_md.contains(&format!(
            "| 1 | retry | longest stall {retry_stall_s} s vs {naive_stall_s} s |"
        )),
        "{summary_md}"
    );
    assert!(
        summary_md.contains(&format!(
            "| 2 | naive | longest stall {naive_stall_s} s vs {retry_stall_s} s |"
        )),
        "{summary_md}"
    );
}

/// Every file of the contract, with exact headers, one row per strategy and second.
fn check_results_folder(out: &std::path::Path, report: &RunReport) {
    for name in [
        "timeline.csv",
        "ddl_attempts.csv",
        "ddl_locks.csv",
        "summary.csv",
        "summary.json",
        "summary.md",
        "latency-naive.hgrm",
        "latency-retry.hgrm",
        "latency-naive.hlog",
        "latency-retry.hlog",
        "timeline.png",
        "latency.png",
        "latency-timeline.png",
        "locks.csv",
        "run.json",
        "server.log",
    ] {
        assert!(
            out.join(name).is_file(),
            "missing {name} in {}",
            out.display()
        );
    }
    let first_line = |name: &str| {
        std::fs::read_to_string(out.join(name))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        first_line("timeline.csv"),
        "strategy,second,tps,failed,lat_mean_ms,lat_p50_ms,lat_p99_ms,lat_max_ms,lock_waiters,blocker_active,ddl_state,waiting_behind_ddl,oldest_wait_ms,timeouts,skipped,lag_ms,behind_schedule,conn_lost,reconnects,pool_wait_p99_ms,db_p99_ms,pool_timeouts,pool_rejected,in_flight,pool_in_use,replica_lag_s,replica_lag_bytes,replica_replay_waiting,replica_lock_waiters,replica_cancelled,replica_tps,replica_failed,replica_lat_mean_ms,replica_lat_p50_ms,replica_lat_p99_ms,replica_lat_max_ms,repeat,retried,retries,failed_serialization,failed_deadlock,failed_lock_timeout"
    );
    assert_eq!(
        first_line("locks.csv"),
        "strategy,t_s,pid,role,state,wait_event_type,wait_event,lock_mode,granted,blocked_by,wait_ms,repeat,server,row_of"
    );
    let summary_md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary_md.contains("report (pid "), "{summary_md}");
    assert_eq!(
        first_line("ddl_attempts.csv"),
        "strategy,attempt,started_s,ended_s,waited_ms,outcome,sqlstate,message,\
         lock_granted_s,lock_wait_ms,lock_held_ms,held_waiting_ms,idle_wait_ms,terminated,\
         wal_bytes,repeat"
    );
    let timeline = std::fs::read_to_string(out.join("timeline.csv")).unwrap();
    for strategy in ["naive", "retry"] {
        let seconds: Vec<u32> = timeline
            .lines()
            .skip(1)
            .filter(|line| line.starts_with(&format!("{strategy},")))
            .map(|line| line.split(',').nth(1).unwrap().parse().unwrap())
            .collect();
        assert_eq!(seconds, (0..6).collect::<Vec<u32>>(), "{strategy} rows");
    }
    let attempts = std::fs::read_to_string(out.join("ddl_attempts.csv")).unwrap();
    let attempt_rows: usize = report.strategies.iter().map(|s| s.attempts.len()).sum();
    assert_eq!(attempts.lines().count(), 1 + attempt_rows);
    assert!(attempts.contains("55P03"));

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["strategies"].as_array().unwrap().len(), 2);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert!(
        run["server_version"]
            .as_str()
            .unwrap()
            .starts_with(char::is_numeric)
    );
    let log = std::fs::read_to_string(out.join("server.log")).unwrap();
    assert!(
        log.contains("still waiting for AccessExclusiveLock"),
        "log_lock_waits should log the waiting ALTER"
    );

    for (name, strategies) in [("timeline.png", 2), ("latency.png", 0)] {
        let decoder = png::Decoder::new(File::open(out.join(name)).unwrap());
        let reader = decoder.read_info().unwrap();
        let info = reader.info();
        let expected = if strategies > 0 {
            stallbench::plot::timeline_size(strategies)
        } else {
            stallbench::plot::LATENCY_SIZE_PX
        };
        assert_eq!((info.width, info.height), expected, "{name} size");
    }
}

#[test]
fn load_only_is_a_pgbench_with_histograms() {
    let _cpus = cpus_shared();
    let mut run = ShortRun::on_shared_server(&reference());
    run.args.duration = Some(Duration::from_secs(3));
    run.args.clients = Some(2);
    let report = run.execute(Mode::LoadOnly);
    assert_eq!(report.strategies.len(), 1);
    let load = &report.strategies[0];
    assert_eq!(load.strategy, "load");
    assert_eq!(load.seconds.len(), 3);
    assert!(load.attempts.is_empty());
    assert!(load.blocker.is_none());
    assert!(
        load.seconds.iter().all(|row| row.tps > 0),
        "every second has transactions: {:?}",
        load.seconds
    );
    assert_eq!(load.summary.ddl_outcome, "none");
    assert!(run.out.join("latency-load.hgrm").is_file());
}

/// A blocker that takes its lock late (here its statement sleeps before it
/// reads the table, as a busy machine can delay it) still meets the
/// migration scheduled after it: the DDL waits for the blocker's lock, then
/// queues behind it, instead of slipping in first and meeting no long
/// transaction.
#[test]
fn a_migration_waits_for_a_late_blocker_to_take_its_lock() {
    let _cpus = cpus_shared();
    let mut workload = reference();
    // At 1 s the report starts; PL/pgSQL plans the read, and locks orders,
    // only when it reaches it, at about 2.5 s.
    let late = "DO $$ BEGIN PERFORM pg_sleep(1.5); PERFORM count(*) FROM orders; END $$";
    workload.blocker = Some(BlockerFile {
        sql: late.into(),
        ..workload::report("1s", "3s")
    });
    let mut run = ShortRun::on_shared_server(&workload);
    run.args.duration = Some(Duration::from_secs(7));
    let report = run.execute(Mode::Run {
        strategy: "naive".to_string(),
    });
    let alter = &report.strategies[0].attempts[0];
    assert_eq!(alter.outcome, AttemptOutcome::Ok, "{alter:?}");
    // Scheduled at 1.5 s, started once the report held its lock (2.5 s),
    // then queued until the report's end (5.5 s).
    assert!(alter.started_s >= 2.4, "{alter:?}");
    assert!(alter.waited_ms >= 2000.0, "{alter:?}");
}
