//! The report names the worst moment and the deciding criterion honestly: the
//! lock chain printed is the moment the queue behind the DDL was longest and
//! oldest (not the first sample of the stall), and the ranking says what
//! decided each place.

mod common;

use common::*;
use stallbench::config::Mode;
use stallbench::metrics::StrategyReport;
use stallbench::metrics::locks::LockSample;

fn waiting(strategy: &StrategyReport) -> Vec<&LockSample> {
    strategy.locks.worst.iter().filter(|s| !s.granted).collect()
}

#[test]
fn the_chain_printed_is_the_worst_moment_and_the_ranking_says_why() {
    require_postgres();
    let _serial = one_database_run_at_a_time();
    let run = short_add_column();
    let report = run_in_process(
        &run.workload,
        Mode::Compare {
            strategies: Vec::new(),
        },
        &run.args,
    );
    let naive = &report.strategies[0];
    let retry = &report.strategies[1];
    assert_eq!(
        (naive.strategy.as_str(), retry.strategy.as_str()),
        ("naive", "retry")
    );

    // naive: the ALTER waited about 4 s for the report; at the worst moment
    // the ALTER and every reader behind it had waited for seconds, not the
    // few milliseconds of the stall's first sample.
    let alter_waited_ms = naive.attempts[0].waited_ms;
    assert!(alter_waited_ms >= 3500.0, "{:?}", naive.attempts);
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
    assert_no_leftover_server();
}
