//! What a strategy cost the clients beyond stalls, and how its DDL spent its
//! time, in words: the losses (sessions terminated, failures, skips, the
//! open-loop queue, lost connections, unfinished transactions, the lock
//! observer's gaps), waiting for the lock against holding it, and what the
//! application pool saw. Each strategy's sentence on the console and in
//! `summary.md` is made of these.

use crate::metrics::locks::ObserverGap;
use crate::metrics::{DdlAttempt, StrategyReport, Summary, TerminatedSession};

use crate::export::format::{format_ms, format_seconds, format_thousands};

/// What the strategy cost the clients beyond stalls, as phrases for a
/// sentence: sessions it terminated, failures (timeouts among them), skips,
/// the open-loop queue, lost connections, transactions unfinished at the end,
/// the lock observer's time without a connection; empty when nothing was lost.
pub fn losses(strategy: &StrategyReport) -> Vec<String> {
    let summary = &strategy.summary;
    let mut phrases: Vec<String> = terminated(&strategy.attempts).into_iter().collect();
    if summary.failed > 0 {
        let mut phrase = format!("{} transactions failed", summary.failed);
        if summary.timeouts > 0 {
            phrase.push_str(&format!(" ({} of them timed out)", summary.timeouts));
        }
        phrases.push(phrase);
    }
    if summary.skipped > 0 {
        phrases.push(format!(
            "{} skipped as too late to meet the latency limit",
            summary.skipped
        ));
    }
    if summary.max_behind_schedule > 0 {
        phrases.push(match summary.max_behind_schedule {
            1 => "up to 1 request queued behind schedule".to_string(),
            queued => format!("up to {queued} requests queued behind schedule"),
        });
    }
    if summary.lost_connections > 0 {
        phrases.push(format!("{} connections lost", summary.lost_connections));
    }
    if summary.unfinished > 0 {
        phrases.push(format!(
            "{} transactions unfinished at the end, the oldest {} s",
            summary.unfinished,
            format_seconds(summary.unfinished_oldest_ms / 1000.0)
        ));
    }
    phrases.extend(strategy.locks.observer_gaps.iter().map(observer_gap));
    phrases
}

/// "the lock observer lost its connection at 6.2 s and was back at 8.0 s"
/// (or "... and was not back before the end"): no lock samples in between.
fn observer_gap(gap: &ObserverGap) -> String {
    let back = match gap.back_s {
        Some(back_s) => format!("was back at {} s", format_seconds(back_s)),
        None => "was not back before the end".to_string(),
    };
    format!(
        "the lock observer lost its connection at {} s and {back}",
        format_seconds(gap.lost_s)
    )
}

/// The sessions the strategy terminated, e.g. "terminated 3 sessions (report,
/// reader-2)": the count of sessions, then each role once, in the order
/// terminated (a reader that reconnected may be terminated again).
fn terminated(attempts: &[DdlAttempt]) -> Option<String> {
    let sessions: Vec<&TerminatedSession> = attempts
        .iter()
        .flat_map(|attempt| &attempt.terminated)
        .collect();
    let mut roles: Vec<&str> = Vec::new();
    for session in &sessions {
        if !roles.contains(&session.role.as_str()) {
            roles.push(&session.role);
        }
    }
    match sessions.len() {
        0 => None,
        1 => Some(format!("terminated 1 session ({})", roles[0])),
        count => Some(format!(
            "terminated {count} sessions ({})",
            roles.join(", ")
        )),
    }
}

/// How the DDL's time split, over all its tries: "waited 9.7 s for the lock
/// and held it 0.1 s"; with `wait-for-idle`, "waited 10.0 s for idle, 0.2 s
/// for the lock and held it 0.1 s"; a hold with waits in it adds "(2.5 s of
/// it waiting again)". `None` when no try was timed by the lock observer and
/// none waited for idle.
pub fn wait_and_hold(attempts: &[DdlAttempt]) -> Option<String> {
    let idle_wait_ms: f64 = attempts.iter().map(|attempt| attempt.idle_wait_ms).sum();
    let phases: Option<Vec<_>> = attempts.iter().map(|attempt| attempt.lock).collect();
    let idle = format!(
        "waited {} s for idle",
        format_seconds(idle_wait_ms / 1000.0)
    );
    let Some(phases) = phases.filter(|phases| !phases.is_empty()) else {
        return (idle_wait_ms > 0.0).then_some(idle);
    };
    let wait_s = phases.iter().map(|lock| lock.wait_ms).sum::<f64>() / 1000.0;
    let held_s = phases.iter().map(|lock| lock.held_ms).sum::<f64>() / 1000.0;
    let held_waiting_s = phases.iter().map(|lock| lock.held_waiting_ms).sum::<f64>() / 1000.0;
    let mut text = if idle_wait_ms > 0.0 {
        format!("{idle}, {} s for the lock", format_seconds(wait_s))
    } else {
        format!("waited {} s for the lock", format_seconds(wait_s))
    };
    text.push_str(&format!(" and held it {} s", format_seconds(held_s)));
    if held_waiting_s >= 0.05 {
        text.push_str(&format!(
            " ({} s of it waiting again)",
            format_seconds(held_waiting_s)
        ));
    }
    Some(text)
}

/// What the application pool (`--pool-size`) saw, as one sentence; `None`
/// without a pool. For example: "naive: the pool ran dry at 6.2 s; 1,843
/// requests timed out waiting for a connection; the database itself returned
/// no error".
pub fn pool_sentence(summary: &Summary) -> Option<String> {
    let wait_p99_ms = summary.pool_wait_p99_ms?;
    let mut phrases = Vec::new();
    match summary.pool_dry_at_s {
        Some(dry_at_s) => phrases.push(format!(
            "the pool ran dry at {} s",
            format_seconds(dry_at_s)
        )),
        None => phrases.push(format!(
            "the pool never ran dry: no request timed out waiting for a connection \
             (wait p99 {} ms, worst second {} ms)",
            format_ms(wait_p99_ms),
            format_ms(summary.pool_wait_p99_worst_ms.unwrap_or(0.0))
        )),
    }
    if summary.pool_timeouts > 0 {
        phrases.push(format!(
            "{} requests timed out waiting for a connection",
            format_thousands(summary.pool_timeouts)
        ));
    }
    if summary.timeouts > 0 {
        phrases.push(format!(
            "{} hit --client-timeout",
            format_thousands(summary.timeouts)
        ));
    }
    if summary.pool_rejected > 0 {
        phrases.push(format!(
            "{} rejected at --max-in-flight",
            format_thousands(summary.pool_rejected)
        ));
    }
    let not_the_database = summary.pool_timeouts + summary.pool_rejected + summary.timeouts;
    match summary.failed.saturating_sub(not_the_database) {
        0 => phrases.push("the database itself returned no error".to_string()),
        errors => phrases.push(format!(
            "the database returned {} errors",
            format_thousands(errors)
        )),
    }
    Some(format!("{}: {}", summary.strategy, phrases.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{AttemptOutcome, LockPhases, test_attempt};
    use crate::testing::reference_report;

    #[test]
    fn the_pool_sentence_says_when_it_ran_dry_and_whose_errors_they_were() {
        let mut summary = reference_report().strategies[0].summary.clone();
        assert_eq!(pool_sentence(&summary), None);
        summary.pool_wait_p99_ms = Some(1003.0);
        summary.pool_wait_p99_worst_ms = Some(1008.1);
        summary.pool_dry_at_s = Some(6.21);
        summary.pool_timeouts = 1_843;
        summary.failed = 1_843;
        assert_eq!(
            pool_sentence(&summary).unwrap(),
            "naive: the pool ran dry at 6.2 s; 1,843 requests timed out waiting for a \
             connection; the database itself returned no error"
        );
        summary.failed = 1_850;
        summary.pool_rejected = 2;
        assert!(
            pool_sentence(&summary)
                .unwrap()
                .ends_with("; 2 rejected at --max-in-flight; the database returned 5 errors")
        );
        let calm = Summary {
            pool_timeouts: 0,
            pool_rejected: 0,
            failed: 0,
            pool_dry_at_s: None,
            pool_wait_p99_ms: Some(0.061),
            pool_wait_p99_worst_ms: Some(0.31),
            ..summary
        };
        assert_eq!(
            pool_sentence(&calm).unwrap(),
            "naive: the pool never ran dry: no request timed out waiting for a connection \
             (wait p99 0.06 ms, worst second 0.31 ms); the database itself returned no error"
        );
    }

    fn timed(
        number: u32,
        started_s: f64,
        ended_s: f64,
        outcome: AttemptOutcome,
        lock: LockPhases,
    ) -> DdlAttempt {
        DdlAttempt {
            lock: Some(lock),
            ..test_attempt(number, started_s, ended_s, outcome)
        }
    }

    fn phases(granted_s: Option<f64>, wait_ms: f64, held_ms: f64) -> LockPhases {
        LockPhases {
            granted_s,
            wait_ms,
            held_ms,
            held_waiting_ms: 0.0,
        }
    }

    #[test]
    fn waiting_and_holding_are_told_apart() {
        let rewrite = timed(
            1,
            6.0,
            14.8,
            AttemptOutcome::Ok,
            phases(Some(14.1), 8100.0, 700.0),
        );
        assert_eq!(
            wait_and_hold(std::slice::from_ref(&rewrite)).unwrap(),
            "waited 8.1 s for the lock and held it 0.7 s"
        );
        let tries = [
            timed(
                1,
                6.0,
                6.5,
                AttemptOutcome::LockTimeout,
                phases(None, 500.0, 0.0),
            ),
            timed(
                2,
                7.5,
                7.6,
                AttemptOutcome::Ok,
                phases(Some(7.5), 0.0, 100.0),
            ),
        ];
        assert_eq!(
            wait_and_hold(&tries).unwrap(),
            "waited 0.5 s for the lock and held it 0.1 s"
        );
        let after_idle = DdlAttempt {
            idle_wait_ms: 10_000.0,
            ..rewrite.clone()
        };
        assert_eq!(
            wait_and_hold(&[after_idle]).unwrap(),
            "waited 10.0 s for idle, 8.1 s for the lock and held it 0.7 s"
        );
        let mut concurrently = rewrite;
        concurrently.lock = Some(LockPhases {
            held_waiting_ms: 2500.0,
            ..phases(Some(6.0), 0.0, 8800.0)
        });
        assert_eq!(
            wait_and_hold(&[concurrently]).unwrap(),
            "waited 0.0 s for the lock and held it 8.8 s (2.5 s of it waiting again)"
        );
    }

    #[test]
    fn without_the_observer_only_the_idle_wait_is_known() {
        let unobserved = test_attempt(1, 6.0, 6.5, AttemptOutcome::Ok);
        assert_eq!(wait_and_hold(std::slice::from_ref(&unobserved)), None);
        assert_eq!(wait_and_hold(&[]), None);
        let after_idle = DdlAttempt {
            idle_wait_ms: 3_000.0,
            ..unobserved
        };
        assert_eq!(
            wait_and_hold(&[after_idle]).unwrap(),
            "waited 3.0 s for idle"
        );
    }

    #[test]
    fn losses_name_the_terminated_sessions_first() {
        let mut report = reference_report();
        let strategy = &mut report.strategies[1];
        assert!(losses(strategy).is_empty());
        let session = |role: &str, pid: u32| TerminatedSession {
            role: role.to_string(),
            pid,
        };
        strategy.attempts[0].terminated = vec![session("report", 100), session("reader-2", 102)];
        strategy.attempts[1].terminated = vec![session("reader-2", 110)];
        strategy.summary.lost_connections = 2;
        assert_eq!(
            losses(strategy),
            [
                "terminated 3 sessions (report, reader-2)",
                "2 connections lost"
            ]
        );
        strategy.attempts[0].terminated.truncate(1);
        strategy.attempts[1].terminated.clear();
        assert_eq!(losses(strategy)[0], "terminated 1 session (report)");
    }

    #[test]
    fn losses_name_the_lock_observers_time_without_a_connection() {
        let mut report = reference_report();
        let strategy = &mut report.strategies[1];
        strategy.locks.observer_gaps = vec![
            ObserverGap {
                lost_s: 6.21,
                back_s: Some(7.96),
            },
            ObserverGap {
                lost_s: 22.0,
                back_s: None,
            },
        ];
        assert_eq!(
            losses(strategy),
            [
                "the lock observer lost its connection at 6.2 s and was back at 8.0 s",
                "the lock observer lost its connection at 22.0 s and was not back before the end"
            ]
        );
    }
}
