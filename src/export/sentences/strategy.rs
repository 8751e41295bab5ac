//! The plain sentences about one strategy's run that stdout and `summary.md`
//! both print: what its DDL did, what failed and when, why a run is invalid.

use std::fmt::Write as _;

use crate::metrics::failures::failure_kinds;
use crate::metrics::{DdlOutcome, StrategyReport, Summary};

use super::super::format::format_thousands;
use super::{losses, wait_and_hold};

/// The sentence before the one about a run whose scenario did not run as
/// written: `naive is invalid: the report failed at 1.0 s, ...; so nothing
/// is concluded from it.`
pub fn invalid_sentence(summary: &Summary) -> String {
    format!(
        "{} is invalid: {}; so nothing is concluded from it.",
        summary.strategy, summary.invalid
    )
}

/// One plain sentence about a strategy, e.g. "naive: 9 s at 0 tps; the DDL
/// finished ok after 9.7 s; it waited 9.4 s for the lock and held it 0.3 s."
/// or "retry: 0 s at 0 tps; 5 tries, ok after 12.0 s; they waited 2.0 s for
/// the lock and held it 0.0 s."
pub fn strategy_sentence(strategy: &StrategyReport) -> String {
    let s = &strategy.summary;
    // With the load on both servers the opening figure is the primary's.
    let on_primary = match s.replica_zero_tps_seconds {
        Some(_) => " on the primary",
        None => "",
    };
    let mut sentence = format!(
        "{}: {} s at 0 tps{on_primary}; ",
        s.strategy, s.zero_tps_seconds
    );
    let detail = match strategy.attempts.last() {
        Some(last) if s.ddl_outcome != DdlOutcome::Ok && !last.message.is_empty() => {
            format!(" ({}: {})", last.sqlstate_cell(), last.message)
        }
        _ => String::new(),
    };
    match s.ddl_attempts {
        0 => sentence.push_str("no DDL ran"),
        1 => {
            let _ = write!(
                sentence,
                "the DDL {} after {:.1} s{}",
                match s.ddl_outcome {
                    DdlOutcome::Ok => "finished ok",
                    other => outcome_words(other),
                },
                s.ddl_last_wait_ms / 1000.0,
                detail
            );
        }
        tries => {
            let _ = write!(
                sentence,
                "{} tries, {} after {:.1} s{}",
                tries,
                outcome_words(s.ddl_outcome),
                s.ddl_total_ms / 1000.0,
                detail
            );
        }
    }
    if let Some(split) = wait_and_hold(&strategy.attempts) {
        let who = if s.ddl_attempts == 1 { "it" } else { "they" };
        let _ = write!(sentence, "; {who} {split}");
    }
    append_losses(&mut sentence, strategy);
    sentence.push('.');
    if let Some(replica) = replica_clause(s) {
        let _ = write!(sentence, " On the replica: {replica}.");
    }
    sentence
}

/// What the standby went through: "replay waited for a lock in 10 s, lag up
/// to 10.1 s, 2 queries cancelled", after what its clients felt when the
/// load ran on both servers ("its clients 9 s at 0 tps, longest stall 10 s,
/// "); `None` for a run without a standby.
fn replica_clause(summary: &Summary) -> Option<String> {
    let max_lag_s = summary.replica_max_lag_s?;
    let clients = match summary.replica_zero_tps_seconds {
        Some(zero_tps_s) => format!(
            "its clients {zero_tps_s} s at 0 tps, longest stall {} s, ",
            summary.replica_longest_stall_s.unwrap_or(0)
        ),
        None => String::new(),
    };
    let waiting_s = summary.replica_replay_waiting_s.unwrap_or(0);
    let waited = match waiting_s {
        0 => "replay never waited for a lock".to_string(),
        seconds => format!("replay waited for a lock in {seconds} s"),
    };
    let cancelled = match summary.replica_cancelled.unwrap_or(0) {
        0 => "no query cancelled".to_string(),
        1 => "1 query cancelled (recovery conflict)".to_string(),
        count => format!("{count} queries cancelled (recovery conflict)"),
    };
    Some(format!(
        "{clients}{waited}, lag up to {max_lag_s:.1} s, {cancelled}"
    ))
}

/// How many kinds of failure [`failures_sentence`] names, most frequent first.
const FAILURE_KINDS_SHOWN: usize = 3;

/// What failed and when, for stdout and `summary.md`; `None` if nothing failed, e.g.
/// "naive: 213,396 failed: 0A000 cached plan must not change result type (100%) from 13 s to the end".
pub fn failures_sentence(strategy: &StrategyReport) -> Option<String> {
    let total = strategy.summary.failed;
    let kinds = failure_kinds(&strategy.failures);
    if total == 0 || kinds.is_empty() {
        return None;
    }
    let last_second = (strategy.seconds.len() as u32).saturating_sub(1);
    let described: Vec<String> = kinds
        .iter()
        .take(FAILURE_KINDS_SHOWN)
        .map(|kind| {
            let share = kind.count as f64 * 100.0 / total as f64;
            let share = match share < 1.0 {
                true => "<1%".to_string(),
                false => format!("{share:.0}%"),
            };
            let until = match kind.last_second >= last_second {
                true => "the end".to_string(),
                false => format!("{} s", kind.last_second + 1),
            };
            format!(
                "{} {} ({share}) from {} s to {until}",
                kind.kind, kind.message, kind.first_second
            )
        })
        .collect();
    let mut sentence = format!(
        "{}: {} failed: {}",
        strategy.strategy,
        format_thousands(total),
        described.join("; ")
    );
    if kinds.len() > FAILURE_KINDS_SHOWN {
        let _ = write!(
            sentence,
            "; {} more kinds",
            kinds.len() - FAILURE_KINDS_SHOWN
        );
    }
    Some(sentence)
}

/// What the retries (`--max-tries`) did, for stdout and `summary.md`;
/// `None` if no transaction was retried, e.g. "naive: 312 transactions
/// retried (1,024 retries, 0.31 per transaction); 3 failed after their last
/// try: 40001 2, 40P01 1".
pub fn retries_sentence(summary: &Summary) -> Option<String> {
    if summary.retried == 0 {
        return None;
    }
    let ended = (summary.transactions + summary.failed).max(1);
    let mut sentence = format!(
        "{}: {} transactions retried ({} retries, {:.2} per transaction)",
        summary.strategy,
        format_thousands(summary.retried),
        format_thousands(summary.retries),
        summary.retries as f64 / ended as f64
    );
    let kinds: Vec<String> = [
        ("serialization", summary.failed_serialization),
        ("deadlock", summary.failed_deadlock),
        ("lock timeout", summary.failed_lock_timeout),
    ]
    .iter()
    .filter(|(_, count)| *count > 0)
    .map(|(code, count)| format!("{code} {}", format_thousands(*count)))
    .collect();
    if !kinds.is_empty() {
        let failed =
            summary.failed_serialization + summary.failed_deadlock + summary.failed_lock_timeout;
        let _ = write!(
            sentence,
            "; {} failed after their last try: {}",
            format_thousands(failed),
            kinds.join(", ")
        );
    }
    Some(sentence)
}

/// The ranking's note on a strategy whose runs (`runs`, its repeats) retried
/// or failed with a kind a retry is about: the failures it is ranked by are
/// those that failed after their last try, e.g. "naive: 312 transactions
/// retried (1,024 retries); ranked by those that failed after their last
/// try: 40001 2, 40P01 1.", or "naive: failed serialization 38, with no retry
/// (--max-tries 1)."; over several runs, their totals. `None` without either.
pub fn retry_note(runs: &[&StrategyReport]) -> Option<String> {
    let total = |figure: fn(&Summary) -> u64| runs.iter().map(|run| figure(&run.summary)).sum();
    let retried: u64 = total(|s| s.retried);
    let retries: u64 = total(|s| s.retries);
    let kinds: Vec<String> = [
        ("serialization", total(|s| s.failed_serialization)),
        ("deadlock", total(|s| s.failed_deadlock)),
        ("lock timeout", total(|s| s.failed_lock_timeout)),
    ]
    .iter()
    .filter(|(_, count)| *count > 0)
    .map(|(code, count)| format!("{code} {}", format_thousands(*count)))
    .collect();
    if retried == 0 && kinds.is_empty() {
        return None;
    }
    let strategy = &runs.first()?.strategy;
    let over = match runs.len() {
        1 => String::new(),
        count => format!(" over its {count} runs"),
    };
    Some(match (retried, kinds.is_empty()) {
        (0, _) => format!(
            "{strategy}: failed {}{over}, with no retry (--max-tries 1).",
            kinds.join(", ")
        ),
        (_, true) => format!(
            "{strategy}: {} transactions retried ({} retries){over}; none failed after its last try.",
            format_thousands(retried),
            format_thousands(retries)
        ),
        (_, false) => format!(
            "{strategy}: {} transactions retried ({} retries){over}; ranked by those that failed \
             after their last try: {}.",
            format_thousands(retried),
            format_thousands(retries),
            kinds.join(", ")
        ),
    })
}

/// `ddl_outcome` in words: `ok`, `gave up`, `failed with an error`, `none`.
fn outcome_words(outcome: DdlOutcome) -> &'static str {
    match outcome {
        DdlOutcome::GaveUp => "gave up",
        DdlOutcome::CutOff => "cut off by the end of the run",
        DdlOutcome::Error => "failed with an error",
        DdlOutcome::Ok | DdlOutcome::None => outcome.as_str(),
    }
}

fn append_losses(sentence: &mut String, strategy: &StrategyReport) {
    for phrase in losses(strategy) {
        sentence.push_str("; ");
        sentence.push_str(&phrase);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::markdown::summary_markdown;
    use crate::metrics::failures::test_failure as failure;
    use crate::testing::reference_report;

    #[test]
    fn a_run_with_a_standby_says_what_its_replay_went_through() {
        let mut report = reference_report();
        let naive = &mut report.strategies[0];
        assert!(!strategy_sentence(naive).contains("replica"));
        naive.summary.replica_max_lag_s = Some(10.06);
        naive.summary.replica_replay_waiting_s = Some(10);
        naive.summary.replica_cancelled = Some(0);
        assert!(
            strategy_sentence(naive).ends_with(
                ". On the replica: replay waited for a lock in 10 s, lag up to 10.1 s, no query \
                 cancelled."
            ),
            "{}",
            strategy_sentence(naive)
        );
        naive.summary.replica_replay_waiting_s = Some(0);
        naive.summary.replica_cancelled = Some(2);
        assert!(strategy_sentence(naive).ends_with(
            "replay never waited for a lock, lag up to 10.1 s, 2 queries cancelled (recovery \
                 conflict)."
        ));
        naive.summary.replica_zero_tps_seconds = Some(9);
        naive.summary.replica_longest_stall_s = Some(10);
        let both = strategy_sentence(naive);
        assert!(
            both.starts_with("naive: 9 s at 0 tps on the primary; "),
            "{both}"
        );
        assert!(
            both.contains(
                "On the replica: its clients 9 s at 0 tps, longest stall 10 s, replay never \
                 waited"
            ),
            "{both}"
        );
    }

    #[test]
    fn the_rankings_retry_note_says_what_its_failures_count() {
        let mut report = reference_report();
        assert_eq!(retry_note(&[&report.strategies[0]]), None);
        report.strategies[0].summary.failed_serialization = 38;
        let run = &report.strategies[0];
        assert_eq!(
            retry_note(&[run]).unwrap(),
            "naive: failed serialization 38, with no retry (--max-tries 1)."
        );
        let summary = &mut report.strategies[0].summary;
        summary.retried = 1_312;
        summary.retries = 2_024;
        summary.failed_deadlock = 1;
        let run = &report.strategies[0];
        assert_eq!(
            retry_note(&[run, run]).unwrap(),
            "naive: 2,624 transactions retried (4,048 retries) over its 2 runs; ranked by those \
             that failed after their last try: serialization 76, deadlock 2."
        );
    }

    #[test]
    fn retries_sentence_says_how_many_were_retried_and_failed_after_their_last_try() {
        let mut report = reference_report();
        let summary = &mut report.strategies[0].summary;
        assert_eq!(retries_sentence(summary), None);
        summary.transactions = 9_997;
        summary.failed = 3;
        summary.retried = 312;
        summary.retries = 1_024;
        assert_eq!(
            retries_sentence(summary).unwrap(),
            "naive: 312 transactions retried (1,024 retries, 0.10 per transaction)"
        );
        summary.failed_serialization = 2;
        summary.failed_deadlock = 1;
        assert_eq!(
            retries_sentence(summary).unwrap(),
            "naive: 312 transactions retried (1,024 retries, 0.10 per transaction); 3 failed \
             after their last try: serialization 2, deadlock 1"
        );
    }

    #[test]
    fn failures_sentence_names_the_kinds_their_share_and_when() {
        let mut report = reference_report();
        let naive = &mut report.strategies[0];
        assert_eq!(failures_sentence(naive), None);
        let last = naive.seconds.len() as u32 - 1;
        naive.failures = vec![
            failure(3, "40P01", "deadlock detected", 1),
            failure(
                13,
                "0A000",
                "cached plan must not change result type",
                3_000,
            ),
            failure(
                last,
                "0A000",
                "cached plan must not change result type",
                996,
            ),
        ];
        naive.summary.failed = 3_997;
        assert_eq!(
            failures_sentence(naive).unwrap(),
            "naive: 3,997 failed: 0A000 cached plan must not change result type (100%) \
             from 13 s to the end; 40P01 deadlock detected (<1%) from 3 s to 4 s"
        );
        let text = summary_markdown(&report);
        assert!(text.contains("naive: 3,997 failed: 0A000"), "{text}");
    }

    #[test]
    fn sentences_cover_no_ddl_and_giving_up() {
        let mut report = reference_report();
        let mut load = report.strategies[0].clone();
        load.attempts.clear();
        load.summary.ddl_attempts = 0;
        load.summary.ddl_outcome = DdlOutcome::None;
        load.summary.zero_tps_seconds = 0;
        assert_eq!(strategy_sentence(&load), "naive: 0 s at 0 tps; no DDL ran.");
        let mut open_loop = load.clone();
        open_loop.summary.failed = 12;
        open_loop.summary.timeouts = 10;
        open_loop.summary.skipped = 3;
        open_loop.summary.max_behind_schedule = 850;
        assert_eq!(
            strategy_sentence(&open_loop),
            "naive: 0 s at 0 tps; no DDL ran; 12 transactions failed (10 of them timed out); \
             3 skipped as too late to meet the latency limit; up to 850 requests queued behind schedule."
        );

        let retry = &mut report.strategies[1];
        retry.attempts.pop();
        retry.summary.ddl_attempts = 4;
        retry.summary.ddl_total_ms = 8000.0;
        retry.summary.ddl_outcome = DdlOutcome::GaveUp;
        retry.summary.lost_connections = 2;
        retry.summary.unfinished = 3;
        retry.summary.unfinished_oldest_ms = 4_060.0;
        assert_eq!(
            strategy_sentence(retry),
            "retry: 0 s at 0 tps; 4 tries, gave up after 8.0 s \
             (55P03: canceling statement due to lock timeout); they waited 2.0 s for the lock \
             and held it 0.0 s; 2 connections lost; \
             3 transactions unfinished at the end, the oldest 4.1 s."
        );
    }
}
