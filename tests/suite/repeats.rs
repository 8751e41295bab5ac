//! Rank on signal, not on noise: two identical copies of one
//! retry strategy tie with repeats (their ranges overlap), while naive, which
//! stalls, ranks last and ties nothing, with repeats and without; a sweep of retry's lock_timeout writes a folder per value,
//! sweep.csv and sweep.png, and a lock_timeout longer than the report's hold
//! stalls as naive does; `plot DIR` redraws a repeat folder and a sweep folder.
//!
//! The clock is short: a 6 s load, the report holding its lock from 3 s to
//! 5.3 s (seconds 0-2 are the baseline), the migration at 3.2 s: naive's
//! readers wait from 3.2 s to 5.3 s, second 4 has none. retry's tries of
//! 400 ms start a second apart (3.2, 4.2: timed out; 5.2: done at 5.3 s).
//! The tries are 400 ms long because one run's worst-second p99 ties only
//! within 10%: after a try the queued requests drain with some 25 ms of
//! jitter (identical copies with 200 ms tries had p99s of 195 and 220 ms on
//! an idle machine, and were ranked), 6% of a 400 ms wait.
//! The load is an open loop of 500 transactions a second, as an application's
//! requests arrive: its seconds hold about 500 whatever else the machine
//! does, so the copies' figures differ by the run's noise, not by the CPU
//! their neighbours left them (a closed loop's TPS moved tenfold between
//! seconds on this shared 2-core machine).

use crate::common::workload::{ADD_NOTE, ddl, plain, report, retry};
use crate::common::*;
use stallbench::cli::{CommonArgs, SweepArg};
use stallbench::export::csv::TimelineRecord;
use stallbench::export::sweep::SweepRecord;
use stallbench::metrics::ranking::{Criterion, rank_strategies, ranks};
use stallbench::metrics::{RunReport, Summary};
use stallbench::plan::Plan;
use stallbench::workload::WorkloadFile;

/// [`small_reference`] (20,000 orders) on the 6 s clock above: naive and
/// two identical copies of retry (`retry`, `retry-b`) of 400 ms
/// tries a second apart.
fn two_copies() -> WorkloadFile {
    let mut workload = small_reference();
    workload.load.rate = Some(500.0);
    workload.blocker = Some(report("3s", "2.3s"));
    workload.ddl = Some(ddl("3.2s", ADD_NOTE));
    workload.strategies = vec![plain("naive")];
    for name in ["retry", "retry-b"] {
        workload
            .strategies
            .push(retry(name, "400ms", "600ms", "600ms"));
    }
    workload
}

/// Runs the plan of `args` (a `compare` of the workload's strategies) in-process.
fn run_plan(run: &ShortRun, args: &CommonArgs) -> Vec<RunReport> {
    let plan = Plan::new(Some(run.workload.to_str().unwrap()), compare_all(), args).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(stallbench::execute_plan(&plan)).unwrap()
}

/// The strategies' names in rank order, their ranks, what decided each, and
/// for messages each one's stall, worst second and band.
fn ranked(report: &RunReport) -> (Vec<String>, Vec<usize>, Vec<Option<Criterion>>, String) {
    let places = rank_strategies(report);
    let names = places.iter().map(|p| p.row.strategy.clone()).collect();
    let decided = places.iter().map(|p| p.decided_by).collect();
    let figures = places
        .iter()
        .map(|p| {
            format!(
                "{}: stall {:?}, worst second {:?} in {:?}, worst second's p99 {:?} ms, decided by {:?}",
                p.row.strategy,
                p.row.longest_stall_s(),
                p.row.worst_second_share(),
                p.row.share_band(),
                p.row.worst_second_p99_ms().median,
                p.decided_by
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    (names, ranks(&places), decided, figures)
}

#[test]
fn two_copies_of_retry_tie_with_repeats_and_without_and_naive_ranks_last() {
    require_postgres();
    // Beside other tests: the open loop's seconds hold about 500 whatever they do.
    let _cpus = cpus_shared();
    let run = ShortRun::throwaway(&two_copies());

    // --repeat 3: each strategy three times, interleaved.
    let args = CommonArgs {
        repeat: Some(3),
        ..run.args.clone()
    };
    let report = run_plan(&run, &args).remove(0);
    let order: Vec<(String, u32)> = report
        .strategies
        .iter()
        .map(|s| (s.strategy.clone(), s.repeat()))
        .collect();
    assert_eq!(order.len(), 9);
    assert_eq!(order[3], ("naive".to_string(), 2), "{order:?}");
    assert_eq!(order[8], ("retry-b".to_string(), 3), "{order:?}");
    let (names, ranks, decided, figures) = ranked(&report);
    assert_eq!(names, ["retry", "retry-b", "naive"], "{figures}");
    assert_eq!(ranks, [1, 1, 3], "{figures}");
    assert_eq!(decided[..2], [None, None]);
    assert!(decided[2].is_some());

    // The files: a repeat column, a row per run; the ranking says they tie.
    let timeline: Vec<TimelineRecord> = read_records(&run.out.join("timeline.csv"));
    assert_eq!(timeline.iter().filter(|row| row.repeat == 3).count(), 3 * 6);
    let summaries: Vec<Summary> = read_records(&run.out.join("summary.csv"));
    assert_eq!(summaries.len(), 9);
    let summary_md = std::fs::read_to_string(run.out.join("summary.md")).unwrap();
    assert!(
        summary_md.contains("retry and retry-b tie: worst second "),
        "{summary_md}"
    );
    for name in ["retry", "retry-b"] {
        assert!(
            summary_md.contains(&format!("| 1 | {name} | tie |")),
            "{summary_md}"
        );
    }
    assert!(summary_md.contains("| 3 | naive | "), "{summary_md}");

    // Without repeats (each strategy's first run alone), naive still ranks
    // last on its stall. Whether the copies tie is left to one run's noise:
    // a single run's worst second moves with where the queued requests land
    // against a second's boundary, and in one of ten idle runs (flaky.sh on
    // 58d1a12) two copies' worst seconds were 0.93 and 1.06 of the median,
    // outside each other's band. The band rule itself is the unit tests'
    // (metrics::ranking), on figures that make it certain; the tie of
    // identical copies is asserted above, on three repeats' ranges.
    let first_runs = RunReport {
        workload: report.workload.clone(),
        strategies: report
            .strategies
            .iter()
            .filter(|s| s.repeat() == 1)
            .cloned()
            .collect(),
        interruption: None,
        load_on: report.load_on,
        load_loop: report.load_loop,
    };
    let (names, ranks, decided, figures) = ranked(&first_runs);
    assert_eq!(names[2], "naive", "{figures}");
    assert_eq!(ranks[2], 3, "{figures}");
    assert_eq!(decided[2], Some(Criterion::LongestStall), "{figures}");
    let mut copies = names[..2].to_vec();
    copies.sort();
    assert_eq!(copies, ["retry", "retry-b"], "{figures}");
    let run_json = std::fs::read_to_string(run.out.join("run.json")).unwrap();
    assert!(run_json.contains("\"repeat\": 3"), "{run_json}");
    let workload_toml = std::fs::read_to_string(run.out.join("workload.toml")).unwrap();
    assert!(workload_toml.contains("repeat = 3"), "{workload_toml}");

    // plot DIR redraws the repeat folder.
    std::fs::remove_file(run.out.join("timeline.png")).unwrap();
    stallbench_command()
        .args(["plot", run.out.to_str().unwrap()])
        .assert()
        .success();
    assert!(run.out.join("timeline.png").is_file());
}

#[test]
fn a_lock_timeout_sweep_writes_a_folder_per_value_and_the_longest_stalls_like_naive() {
    require_postgres();
    // Beside the load-only test: an open loop of 500/s does not need the CPUs to itself.
    let _cpus = cpus_shared();
    let mut workload = two_copies();
    workload.strategies.truncate(2);
    let run = ShortRun::throwaway(&workload);
    // 2.5 s outlasts the report's wait of 2.1 s: the ALTER waits as naive's
    // does. Two values are enough for a folder each, their order in
    // sweep.csv and the sentence comparing them (a third, 300ms, ran naive
    // and retry once more, 2 of the test's 6 runs, to assert nothing new).
    let args = CommonArgs {
        sweep: Some(SweepArg::parse("retry.lock_timeout=100ms,2500ms").unwrap()),
        ..run.args.clone()
    };
    let reports = run_plan(&run, &args);
    assert_eq!(reports.len(), 2);

    let records: Vec<SweepRecord> = read_records(&run.out.join("sweep.csv"));
    for strategy in ["naive", "retry"] {
        let values: Vec<&str> = records
            .iter()
            .filter(|record| record.strategy == strategy)
            .map(|record| record.value.as_str())
            .collect();
        assert_eq!(values, ["100ms", "2500ms"], "{strategy}");
    }
    assert!(
        records
            .iter()
            .all(|record| record.setting == "retry.lock_timeout")
    );
    let stall = |strategy: &str, value: &str| {
        records
            .iter()
            .find(|r| r.strategy == strategy && r.value == value)
            .unwrap()
            .longest_stall_s
    };
    assert!(stall("naive", "2500ms") >= 1.0, "{records:#?}");
    assert!(
        (stall("retry", "2500ms") - stall("naive", "2500ms")).abs() <= 1.0,
        "{records:#?}"
    );
    assert_eq!(stall("retry", "100ms"), 0.0, "{records:#?}");
    // Every row has its throughput; the workload checks no invariants.
    assert!(
        records.iter().all(|r| r.mean_tps > 0.0
            && r.mean_tps_min == r.mean_tps
            && r.mean_tps_max == r.mean_tps
            && r.anomalies.is_none()),
        "{records:#?}"
    );
    assert!(run.out.join("sweep.png").is_file());
    for folder in ["lock_timeout=100ms", "lock_timeout=2500ms"] {
        let summaries: Vec<Summary> = read_records(&run.out.join(folder).join("summary.csv"));
        assert_eq!(summaries.len(), 2, "{folder}");
    }
    let summary_md = std::fs::read_to_string(run.out.join("summary.md")).unwrap();
    // 100ms keeps every second; 2500ms waits as naive does.
    assert!(
        summary_md.contains("retry: lock_timeout 100ms kept every second above "),
        "{summary_md}"
    );
    assert!(summary_md.contains("; 2500ms stalled "), "{summary_md}");
    // The sweep's page: its sentences, its table, sweep.png inline, a link
    // to each value's page; no script.
    let page = std::fs::read_to_string(run.out.join("report.html")).unwrap();
    assert!(page.contains("; 2500ms stalled "), "{page}");
    assert!(page.contains("<td>2500ms</td>"), "{page}");
    assert!(page.contains("src=\"data:image/png;base64,iVBOR"), "{page}");
    for folder in ["lock_timeout=100ms", "lock_timeout=2500ms"] {
        assert!(
            page.contains(&format!("<a href=\"{folder}/report.html\">")),
            "{page}"
        );
        assert!(run.out.join(folder).join("report.html").is_file());
    }
    assert!(!page.contains("<script"), "{page}");

    // plot DIR redraws sweep.png, its page and every value's charts.
    std::fs::remove_file(run.out.join("sweep.png")).unwrap();
    std::fs::remove_file(run.out.join("report.html")).unwrap();
    std::fs::remove_file(run.out.join("lock_timeout=100ms").join("timeline.png")).unwrap();
    stallbench_command()
        .args(["plot", run.out.to_str().unwrap()])
        .assert()
        .success();
    assert!(run.out.join("sweep.png").is_file());
    // The same heading and links (the figures come from sweep.csv's
    // rounded ones now, so a cell may round the other way).
    let redrawn = std::fs::read_to_string(run.out.join("report.html")).unwrap();
    let heading = |page: &str| page[..page.find("</h1>").unwrap()].to_string();
    let links = |page: &str| page[page.find("<section id=\"values\">").unwrap()..].to_string();
    assert_eq!(heading(&redrawn), heading(&page));
    assert_eq!(links(&redrawn), links(&page));
    assert!(
        run.out
            .join("lock_timeout=100ms")
            .join("timeline.png")
            .is_file()
    );
}

#[test]
fn a_bad_sweep_value_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let assert = stallbench_command()
        .args(["compare", "--sweep", "retry.lock_timeout=1s,0s", "--out"])
        .arg(&out)
        .assert()
        .code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("lock_timeout = 0 waits forever"),
        "{stderr}"
    );
    assert!(!out.exists());
}

#[test]
fn a_repeated_run_says_where_it_is_and_what_is_left_and_prints_medians() {
    require_postgres();
    let _cpus = cpus_shared();
    let run = ShortRun::throwaway(&two_copies());
    let assert = stallbench_command()
        .args(["run", run.workload.to_str().unwrap(), "--load-only"])
        .args(["--duration", "2s", "--repeat", "2", "--out"])
        .arg(&run.out)
        .assert()
        .success();
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    let steps: Vec<&str> = stderr.lines().filter(|l| l.starts_with("== ")).collect();
    assert_eq!(steps.len(), 2, "{stderr}");
    assert!(
        steps[0].starts_with("== run 1/2: load, repeat 1/2 (") && steps[0].ends_with(" s left =="),
        "{stderr}"
    );
    assert!(
        steps[1].starts_with("== run 2/2: load, repeat 2/2 ("),
        "{stderr}"
    );
    assert!(
        stderr.contains(", each 2 times, "),
        "the first line names the repeats: {stderr}"
    );
    // One row per repeat in the files, one per strategy with its range on stdout.
    let summaries: Vec<Summary> = read_records(&run.out.join("summary.csv"));
    let repeats: Vec<u32> = summaries.iter().map(|s| s.repeat).collect();
    assert_eq!(repeats, [1, 2]);
    let stdout = stdout_of(&assert);
    let row = stdout.lines().nth(1).unwrap();
    assert!(row.starts_with("load "), "{stdout}");
    assert!(row.contains(" ["), "a median with its range: {stdout}");
}
