//! What happened to traffic, apart from whether the bounds held: the
//! sentence that says which strategy stalled the clients and for how long
//! ([`what_happened`]), and the words for a worst second in which no
//! transaction ended, whose latency is that of the transactions stalled
//! through it ([`worst_latency_cell`], [`stalled_latency_note`]).

use crate::export::format::{format_count, format_ms, format_spread};
use crate::metrics::ranking::{WorstLatency, tied_first};
use crate::metrics::{Place, RankingRow, RunFigures};

use super::{format_share, join_names, worst_share};

/// What happened to traffic under each strategy, in rank order, then who
/// ranked first: "naive stalled traffic for 10 s, 9 s of them without a
/// completed transaction; retry never stalled it (worst second 28% of its
/// baseline). Ranked first: retry." It says what the run measured, whatever
/// the workload's bounds expected of it. `places` in rank order; with one
/// place, no ranking is named.
pub fn what_happened(places: &[Place]) -> String {
    let clauses: Vec<String> = places
        .iter()
        .map(|place| traffic_clause(&place.row))
        .collect();
    let first: Vec<&str> = tied_first(places)
        .iter()
        .map(|place| place.row.strategy.as_str())
        .collect();
    let ranked = match first.len() {
        _ if places.len() < 2 => String::new(),
        1 => format!(" Ranked first: {}.", first[0]),
        _ => format!(" Ranked first, tied: {}.", join_names(&first)),
    };
    format!("{}.{ranked}", clauses.join("; "))
}

/// One strategy's part of [`what_happened`]: its stall (or that it had
/// none), then its failures and an unfinished migration, when it had them.
fn traffic_clause(row: &RankingRow) -> String {
    let name = &row.strategy;
    let stall_s = row.longest_stall_s();
    let zero_s = row.zero_tps_seconds();
    let seconds = |spread| format_spread(spread, format_count, " s");
    let mut clause = match (stall_s.median > 0.0, zero_s.median > 0.0) {
        (true, true) => format!(
            "{name} stalled traffic for {}, {} of them without a completed transaction",
            seconds(&stall_s),
            seconds(&zero_s)
        ),
        (true, false) => format!(
            "{name} stalled traffic for {} (under 10% of its baseline)",
            seconds(&stall_s)
        ),
        (false, true) => format!(
            "{name} had {} without a completed transaction",
            seconds(&zero_s)
        ),
        (false, false) => format!(
            "{name} never stalled traffic (worst second {} of its baseline)",
            worst_share(row)
        ),
    };
    if row.failed_massively() {
        clause.push_str(&format!(
            ", {} of its transactions failed",
            format_share(row.failed_share().median)
        ));
    }
    if row.did_not_finish() {
        clause.push_str(", and its migration did not finish");
    }
    clause
}

/// The worst-second latency cell of a ranking table: the figure over the
/// runs (`3.67`); `10,052 stalled` when it is the latency of transactions
/// stalled through a second in which none ended; `none completed` when none
/// of those ended before the run did (see `metrics::ranking::second_latency`).
pub fn worst_latency_cell(row: &RankingRow, number: fn(f64) -> String) -> String {
    let none_completed =
        |run: &RunFigures| matches!(run.worst_latency, WorstLatency::NoneCompleted { .. });
    if !row.runs.is_empty() && row.runs.iter().all(none_completed) {
        return "none completed".to_string();
    }
    let figure = format_spread(&row.worst_second_p99_ms(), number, "");
    match row
        .runs
        .iter()
        .all(|run| run.worst_latency == WorstLatency::SecondP99)
    {
        true => figure,
        false => format!("{figure} stalled"),
    }
}

/// A note for a row whose worst-second latency is not a second's p99: "naive:
/// no transaction ended in second 7; its worst-second latency is the 10,052
/// ms of the transactions stalled through it, which ended in second 16." or
/// "naive: no transaction ended from second 7 to the end of the run, so no
/// latency was measured for it: those stalled through it waited at least
/// 17,000 ms."; `None` for a p99. With repeats, of the first run that had one.
pub fn stalled_latency_note(row: &RankingRow) -> Option<String> {
    let run = row
        .runs
        .iter()
        .find(|run| run.worst_latency != WorstLatency::SecondP99)?;
    let latency = format_ms(run.worst_second_p99_ms);
    let strategy = &row.strategy;
    Some(match run.worst_latency {
        WorstLatency::SecondP99 => return None,
        WorstLatency::Stalled { stalled_s, ended_s } => format!(
            "{strategy}: no transaction ended in second {stalled_s}, so it has no p99; its \
             worst-second latency is the {latency} ms of the transactions stalled through it, \
             which ended in second {ended_s}."
        ),
        WorstLatency::NoneCompleted { stalled_s } => format!(
            "{strategy}: no transaction ended from second {stalled_s} to the end of the run, so \
             none completed to measure: those stalled through it waited at least {latency} ms."
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ranking::rank_rows;
    use crate::metrics::{DdlOutcome, rank_strategies};
    use crate::testing::{neutral_row as row, reference_report};

    #[test]
    fn what_happened_names_the_outage_whatever_the_bounds_said() {
        let places = rank_strategies(&reference_report());
        assert_eq!(
            what_happened(&places),
            "retry never stalled traffic (worst second 57% of its baseline); naive stalled \
             traffic for 9 s, 9 s of them without a completed transaction. Ranked first: retry."
        );
        assert_eq!(
            what_happened(&places[1..]),
            "naive stalled traffic for 9 s, 9 s of them without a completed transaction."
        );
    }

    #[test]
    fn what_happened_names_failures_unfinished_migrations_and_ties() {
        let mut failing = row("failing", 0);
        failing.runs[0].transactions = 60_000;
        failing.runs[0].failed_transactions = 40_000;
        let mut gave_up = row("gave-up", 1);
        gave_up.runs[0].ddl_outcome = DdlOutcome::GaveUp;
        gave_up.runs[0].migration_done_at_s = None;
        gave_up.runs[0].longest_stall_s = 2;
        let places = rank_rows(vec![failing, gave_up, row("twin", 2), row("twin-b", 3)]);
        assert_eq!(
            what_happened(&places),
            "twin never stalled traffic (worst second 100% of its baseline); twin-b never \
             stalled traffic (worst second 100% of its baseline); failing never stalled \
             traffic (worst second 100% of its baseline), 40% of its transactions failed; \
             gave-up stalled traffic for 2 s (under 10% of its baseline), and its migration \
             did not finish. Ranked first, tied: twin and twin-b."
        );
    }

    #[test]
    fn a_worst_second_without_transactions_is_marked_and_explained() {
        let places = rank_strategies(&reference_report());
        let naive = &places[1].row;
        assert_eq!(worst_latency_cell(naive, format_ms), "9700 stalled");
        assert_eq!(worst_latency_cell(&places[0].row, format_ms), "420.0");
        assert_eq!(stalled_latency_note(&places[0].row), None);
        assert_eq!(
            stalled_latency_note(naive).unwrap(),
            "naive: no transaction ended in second 6, so it has no p99; its worst-second \
             latency is the 9700 ms of the transactions stalled through it, which ended in \
             second 15."
        );
        let mut none = row("naive", 0);
        none.runs[0].worst_second_p99_ms = 17_000.0;
        none.runs[0].worst_latency = WorstLatency::NoneCompleted { stalled_s: 7 };
        assert_eq!(worst_latency_cell(&none, format_ms), "none completed");
        assert_eq!(
            stalled_latency_note(&none).unwrap(),
            "naive: no transaction ended from second 7 to the end of the run, so none \
             completed to measure: those stalled through it waited at least 17000 ms."
        );
    }
}
