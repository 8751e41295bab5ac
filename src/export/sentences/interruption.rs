//! The lines stdout and `summary.md` open with: that the run was interrupted
//! (and the sentence about the strategy cut short, which draws no conclusion
//! from it; what was applied, for the stop line), and the rows the load wrote
//! to the user's tables.

use crate::metrics::{
    AppliedStep, AttemptOutcome, Interruption, PartialStrategy, RunReport, StrategyReport,
};

use super::super::format::format_seconds;

/// The line an interrupted run's outputs open with, e.g. `interrupted at 9.0 s
/// by Ctrl-C (SIGINT): naive is partial (9 of 24 s); retry did not run`, or
/// `interrupted by SIGTERM after naive: retry did not run`.
pub fn interruption_line(interruption: &Interruption) -> String {
    // A failure's message goes on with details and a fix; the line names its problem.
    let cause = match interruption.by_signal {
        true => format!("by {}", interruption.reason),
        false => format!("({})", first_clause(&interruption.reason)),
    };
    let mut parts = Vec::new();
    let head = match &interruption.partial {
        Some(partial) => {
            parts.push(format!(
                "{} is partial ({} of {} s)",
                partial.strategy, partial.kept_s, partial.planned_s
            ));
            format!("interrupted at {} s {cause}", format_seconds(partial.at_s))
        }
        None => format!("interrupted {cause} between strategies"),
    };
    if !interruption.not_run.is_empty() {
        parts.push(format!("{} did not run", and_list(&interruption.not_run)));
    }
    match parts.is_empty() {
        true => head,
        false => format!("{head}: {}", parts.join("; ")),
    }
}

/// The sentence about the strategy a stop cut short, in place of the one a
/// whole run gets: what it measured up to then, and what became of its DDL,
/// e.g. `naive is partial: interrupted at 2.7 s of 20 s, so nothing is
/// concluded from it; up to then 0 s at 0 tps; its DDL (try 1) was cancelled
/// by the interrupt.`
pub fn partial_sentence(strategy: &StrategyReport, partial: &PartialStrategy) -> String {
    let at = format_seconds(partial.at_s);
    let ddl = match &partial.last_try {
        None => "its DDL had not started".to_string(),
        Some(last) if last.outcome == AttemptOutcome::Ok => format!(
            "its DDL finished at {} s, before the interrupt",
            format_seconds(last.ended_s)
        ),
        Some(last) if last.ended_s >= partial.at_s => format!(
            "its DDL (try {}) was cancelled by the interrupt",
            last.attempt
        ),
        Some(last) => format!(
            "its DDL ended at {} s ({}{})",
            format_seconds(last.ended_s),
            match last.outcome {
                AttemptOutcome::Ok => "ok",
                AttemptOutcome::LockTimeout => "lock timeout",
                AttemptOutcome::Error => "error",
                AttemptOutcome::GaveUp => "gave up",
                AttemptOutcome::CutOff => "cut off by the run's end",
            },
            match &last.sqlstate {
                None => String::new(),
                Some(kind) => format!(": {kind} {}", last.message),
            }
        ),
    };
    format!(
        "{} is partial: interrupted at {at} s of {} s, so nothing is concluded from it; \
         up to then {} s at 0 tps; {ddl}.",
        partial.strategy, partial.planned_s, strategy.summary.zero_tps_seconds
    )
}

/// What committed, for the stop line: `nothing was applied`, or each step
/// with when, e.g. `naive: ALTER TABLE accounts ALTER COLUMN balance TYPE
/// numeric(20,2) was applied at 7.4 s, before the interrupt`.
pub fn applied_clause(applied: &[AppliedStep]) -> String {
    if applied.is_empty() {
        return "nothing was applied".to_string();
    }
    applied
        .iter()
        .map(|step| {
            let when = match step.after_stop {
                true => "as the interrupt came, before its cancel reached it",
                false => "before the interrupt",
            };
            format!(
                "{}: {} was applied at {} s, {when}",
                step.strategy,
                step.sql.split_whitespace().collect::<Vec<_>>().join(" "),
                format_seconds(step.at_s)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The lines every output opens with: the interruption (see
/// [`interruption_line`]), then for an `--in-place --allow-writes` run the
/// rows each strategy's load wrote to the user's tables, e.g. `naive: the
/// load wrote to your tables: public.events 86330 inserted, 0 updated, 0
/// deleted`.
pub fn opening_lines(report: &RunReport) -> Vec<String> {
    let interrupted = report.interruption.as_ref().map(interruption_line);
    let written = report.strategies.iter().filter_map(|strategy| {
        let summary = &strategy.summary;
        match summary.rows_written.as_str() {
            "" => None,
            "none" => Some(format!(
                "{}: the load wrote no row to your tables",
                summary.strategy
            )),
            tables => Some(format!(
                "{}: the load wrote to your tables: {tables}",
                summary.strategy
            )),
        }
    });
    interrupted.into_iter().chain(written).collect()
}

/// An error message's problem: what comes before its first `; `.
fn first_clause(message: &str) -> &str {
    message.split("; ").next().unwrap_or(message)
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::test_attempt;
    use crate::testing::reference_report;

    fn cut(strategy: &str, at_s: f64, kept_s: u32) -> PartialStrategy {
        PartialStrategy {
            strategy: strategy.to_string(),
            at_s,
            kept_s,
            planned_s: 24,
            last_try: None,
        }
    }

    #[test]
    fn the_opening_line_names_the_cut_the_partial_strategy_and_those_not_run() {
        let mut interruption = Interruption {
            reason: "Ctrl-C (SIGINT)".to_string(),
            by_signal: true,
            partial: Some(cut("naive", 9.04, 9)),
            not_run: vec!["retry".to_string()],
            applied: Vec::new(),
        };
        assert_eq!(
            interruption_line(&interruption),
            "interrupted at 9.0 s by Ctrl-C (SIGINT): naive is partial (9 of 24 s); \
             retry did not run"
        );
        interruption.not_run = vec!["retry".into(), "gitlab".into(), "pgroll".into()];
        interruption.partial = None;
        interruption.reason = "SIGTERM".to_string();
        assert_eq!(
            interruption_line(&interruption),
            "interrupted by SIGTERM between strategies: retry, gitlab and pgroll did not run"
        );
        interruption.not_run.clear();
        interruption.by_signal = false;
        interruption.reason = "the throwaway server died (killed by signal 9) 6.2 s after it \
                               started; last lines of its log: ..."
            .to_string();
        interruption.partial = Some(cut("load", 3.2, 3));
        assert_eq!(
            interruption_line(&interruption),
            "interrupted at 3.2 s (the throwaway server died (killed by signal 9) 6.2 s after it \
             started): load is partial (3 of 24 s)"
        );
    }

    #[test]
    fn a_partial_strategy_gets_no_verdict_only_what_it_measured_and_its_ddl() {
        let naive = reference_report().strategies.remove(0);
        let mut partial = cut("naive", 9.04, 9);
        assert!(
            partial_sentence(&naive, &partial).ends_with("; its DDL had not started."),
            "{}",
            partial_sentence(&naive, &partial)
        );
        // A try of the second the stop came in: the files leave it out, the sentence does not.
        partial.last_try = Some(test_attempt(1, 9.0, 9.05, AttemptOutcome::Error));
        assert_eq!(
            partial_sentence(&naive, &partial),
            format!(
                "naive is partial: interrupted at 9.0 s of 24 s, so nothing is concluded from \
                 it; up to then {} s at 0 tps; its DDL (try 1) was cancelled by the interrupt.",
                naive.summary.zero_tps_seconds
            )
        );
        partial.last_try = Some(test_attempt(1, 6.0, 7.4, AttemptOutcome::Ok));
        assert!(
            partial_sentence(&naive, &partial)
                .ends_with("its DDL finished at 7.4 s, before the interrupt."),
        );
    }

    #[test]
    fn the_rows_the_load_wrote_open_the_outputs_after_the_interruption() {
        let mut report = reference_report();
        assert!(opening_lines(&report).is_empty());
        report.strategies[0].summary.rows_written =
            "public.events 86330 inserted, 0 updated, 0 deleted".to_string();
        report.strategies[1].summary.rows_written = "none".to_string();
        report.interruption = Some(Interruption {
            reason: "SIGTERM".to_string(),
            by_signal: true,
            partial: None,
            not_run: vec!["gitlab".to_string()],
            applied: Vec::new(),
        });
        assert_eq!(
            opening_lines(&report),
            [
                "interrupted by SIGTERM between strategies: gitlab did not run",
                "naive: the load wrote to your tables: public.events 86330 inserted, 0 updated, \
                 0 deleted",
                "retry: the load wrote no row to your tables",
            ]
        );
    }

    #[test]
    fn what_was_applied_is_named_with_when() {
        assert_eq!(applied_clause(&[]), "nothing was applied");
        let step = |at_s: f64, after_stop: bool| AppliedStep {
            strategy: "naive".to_string(),
            sql: "ALTER TABLE accounts\n  ALTER COLUMN balance TYPE numeric(20,2)".to_string(),
            at_s,
            after_stop,
        };
        assert_eq!(
            applied_clause(&[step(7.42, false), step(9.1, true)]),
            "naive: ALTER TABLE accounts ALTER COLUMN balance TYPE numeric(20,2) was applied at \
             7.4 s, before the interrupt; naive: ALTER TABLE accounts ALTER COLUMN balance TYPE \
             numeric(20,2) was applied at 9.1 s, as the interrupt came, before its cancel \
             reached it"
        );
    }
}
