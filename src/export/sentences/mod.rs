//! The sentences both the console and `summary.md` print: the ranking's
//! headline, its notes and completion cells, what a strategy cost the
//! clients, and the lock chain in words. The figures come from `metrics`;
//! only the words live here; what a strategy cost the clients is in `costs.rs`,
//! what its DDL did and what failed in `strategy.rs`, what a load on the
//! replica means in `replica.rs`.

mod costs;
mod happened;
mod interruption;
mod replica;
mod strategy;

use std::borrow::Cow;

pub use costs::{losses, pool_sentence, wait_and_hold};
pub use happened::{stalled_latency_note, what_happened, worst_latency_cell};
pub use interruption::{applied_clause, interruption_line, opening_lines, partial_sentence};
pub use replica::{on_server, replica_notes};
pub use strategy::{
    failures_sentence, invalid_sentence, retries_sentence, retry_note, strategy_sentence,
};

use crate::choices::Side;
use crate::metrics::invariants::InvariantCheck;
use crate::metrics::locks::ChainLink;
use crate::metrics::locks::group_repeated;
use crate::metrics::ranking::tied_first;
use crate::metrics::repeats::median_run;
use crate::metrics::spread::Spread;
use crate::metrics::{Criterion, Place, RankingRow, RunReport, StrategyReport};
use crate::role::{ClientKind, Role};

use super::format::{
    format_count, format_ms, format_percent, format_seconds, format_share_band, format_spread,
    format_thousands,
};

/// One sentence that answers "which strategy hurt traffic least, and at what
/// cost in migration time", comparing the best-ranked row with the row that
/// ran first (`run_order` 0). `places` must be in rank order, as
/// `rank_strategies` returns them.
///
/// For example: "retry kept 57% of its baseline in its worst second (naive:
/// 0%) and finished the migration 2.3 s later than naive." When the first
/// rank is shared the sentence says so, with each strategy's worst second
/// and the band it was judged on: "retry, retry-b and retry-c tie: worst
/// second 52% [48-55%] / 50% [47-56%] / 53% [49-55%] of baseline, within the
/// run's noise (naive: 0%)." A strategy whose transactions failed massively
/// gets a sentence more that says so, with the main kind of failure.
pub fn headline(places: &[Place]) -> String {
    let tied = tied_first(places);
    let first = if tied.len() > 1 {
        tie_sentence(places, tied)
    } else {
        traffic_and_migration(places)
    };
    first + &mass_failures(places) + &lost_data(places)
}

/// One sentence per strategy whose data did not hold its invariants, in
/// rank order, each with a leading space: " read-committed lost data: 312
/// lost updates (counter equals committed increments: expected 1510, found
/// 1198); it ranks below every strategy that lost none." With repeats, the
/// run with the most anomalies speaks.
fn lost_data(places: &[Place]) -> String {
    let clean = places.iter().any(|place| !place.row.lost_data());
    places
        .iter()
        .map(|place| &place.row)
        .filter(|row| row.lost_data())
        .map(|row| {
            let worst = row.runs.iter().max_by_key(|run| run.anomalies);
            let losses: Vec<String> = worst
                .iter()
                .flat_map(|run| &run.invariants)
                .filter(|check| check.anomalies > 0)
                .map(invariant_words)
                .collect();
            let rank = match clean {
                true => "; it ranks below every strategy that lost none",
                false => "",
            };
            format!(" {} lost data: {}{rank}.", row.strategy, losses.join(", "))
        })
        .collect()
}

/// An invariant's check in words: `312 lost updates (counter equals
/// committed increments: expected 1510, found 1198)`, or when it held
/// `counter equals committed increments held (1510)`.
pub fn invariant_words(check: &InvariantCheck) -> String {
    match check.anomalies {
        0 => format!("{} held ({})", check.name, check.actual),
        count => format!(
            "{} {} ({}: expected {}, found {})",
            format_thousands(count),
            check.counts,
            check.name,
            check.expected,
            check.actual
        ),
    }
}

/// What the invariants found after one run, for stdout and `summary.md`;
/// `None` without invariants: "read-committed: 312 lost updates (counter
/// equals committed increments: expected 1510, found 1198)".
pub fn invariants_sentence(run: &StrategyReport) -> Option<String> {
    if run.invariants.is_empty() {
        return None;
    }
    let words: Vec<String> = run.invariants.iter().map(invariant_words).collect();
    Some(format!("{}: {}", run.strategy, words.join("; ")))
}

/// The worst second of `row` as a share of its baseline: `57%`, `52% [48-55%]`.
pub fn worst_share(row: &RankingRow) -> String {
    format_spread(&row.worst_second_share(), format_percent, "%")
}

/// "retry, retry-b and retry-c tie: worst second 52% [48-55%] / 50% [47-56%]
/// / 53% [49-55%] of baseline, within the run's noise (naive: 0%)." Each
/// bracket is the band the tie was judged on (see `RankingRow::share_band`).
fn tie_sentence(places: &[Place], tied: &[Place]) -> String {
    let names: Vec<&str> = tied
        .iter()
        .map(|place| place.row.strategy.as_str())
        .collect();
    let shares: Vec<String> = tied
        .iter()
        .map(|place| {
            format_share_band(
                place.row.worst_second_share().median,
                place.row.share_band(),
            )
        })
        .collect();
    let first_run = places
        .iter()
        .map(|place| &place.row)
        .find(|row| row.run_order == 0 && !names.contains(&row.strategy.as_str()));
    let compared = match first_run {
        Some(row) => format!(" ({}: {})", row.strategy, worst_share(row)),
        None => String::new(),
    };
    format!(
        "{} tie: worst second {} of baseline, within the run's noise{compared}.",
        join_names(&names),
        shares.join(" / ")
    )
}

/// `a`, `a and b`, `a, b and c`.
pub(super) fn join_names(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The headline's first sentence: traffic and migration time of the best-ranked
/// row against the row that ran first.
fn traffic_and_migration(places: &[Place]) -> String {
    let Some(first) = places.first() else {
        return "No strategy ran.".to_string();
    };
    let best = &first.row;
    let ranked: Vec<&RankingRow> = places.iter().map(|place| &place.row).collect();
    let worst_second = format!(
        "kept {} of its baseline in its worst second{}",
        worst_share(best),
        if best.window().is_none() {
            " of the whole run"
        } else {
            ""
        }
    );
    let first_run = ranked
        .iter()
        .find(|row| row.run_order == 0 && row.run_order != best.run_order);
    let Some(first_run) = first_run else {
        let subject = if ranked.len() > 1 {
            format!("{} ranked first: it", best.strategy)
        } else {
            best.strategy.clone()
        };
        return format!(
            "{subject} {worst_second} {} {}.",
            connective(best),
            migration_status(best)
        );
    };
    let compared_share = format!(
        "{} {worst_second} ({}: {})",
        best.strategy,
        first_run.strategy,
        worst_share(first_run)
    );
    match (best.migration_done_at_s(), first_run.migration_done_at_s()) {
        (Some(best_done_at_s), Some(first_done_at_s)) => {
            let difference_s = best_done_at_s.median - first_done_at_s.median;
            let magnitude = format_seconds(difference_s.abs());
            let when = if magnitude == "0.0" {
                format!("at the same time as {}", first_run.strategy)
            } else if difference_s > 0.0 {
                format!("{magnitude} s later than {}", first_run.strategy)
            } else {
                format!("{magnitude} s earlier than {}", first_run.strategy)
            };
            format!("{compared_share} and finished the migration {when}.")
        }
        _ => format!(
            "{compared_share} {} {}; {} {}.",
            connective(best),
            migration_status(best),
            first_run.strategy,
            migration_status(first_run)
        ),
    }
}

/// A fraction as a whole percentage, `<1%` for a share above 0 that rounds below 1%.
pub(super) fn format_share(share: f64) -> String {
    let percent = share * 100.0;
    if percent > 0.0 && percent < 1.0 {
        "<1%".to_string()
    } else {
        format!("{percent:.0}%")
    }
}

/// One sentence per strategy whose transactions failed massively (see
/// [`RankingRow::failed_massively`]), in rank order, each with a leading space:
/// " naive failed 68% of its transactions (0A000 cached plan must not change result type)."
fn mass_failures(places: &[Place]) -> String {
    places
        .iter()
        .map(|place| &place.row)
        .filter(|row| row.failed_massively())
        .map(|row| {
            let kind = match row.main_failure() {
                Some(kind) => format!(" ({kind})"),
                None => String::new(),
            };
            format!(
                " {} failed {} of its transactions{kind}.",
                row.strategy,
                format_share(row.failed_share().median)
            )
        })
        .collect()
}

/// "but" when the strategy's DDL ran and did not finish, "and" otherwise.
fn connective(row: &RankingRow) -> &'static str {
    if row.did_not_finish() { "but" } else { "and" }
}

/// What became of the migration, as a verb phrase: "finished the migration at
/// 15.7 s" (with repeats, the median), "did not finish the migration", "ran
/// no migration".
fn migration_status(row: &RankingRow) -> String {
    match row.migration_done_at_s() {
        Some(done_at_s) => format!(
            "finished the migration at {} s",
            format_seconds(done_at_s.median)
        ),
        None if row.ddl_tries().median == 0.0 => "ran no migration".to_string(),
        None => "did not finish the migration".to_string(),
    }
}

/// The migration completion cell of a ranking table: `15.7` (with repeats
/// `15.7 [15.2-16.0]`, and `(2 of 3 finished)` when some did not), `did not
/// finish`, or `no DDL`.
pub fn migration_done_cell(row: &RankingRow) -> String {
    match row.migration_done_at_s() {
        Some(done_at_s) if done_at_s.count < row.repeats() => format!(
            "{} ({} of {} finished)",
            format_spread(&done_at_s, format_seconds, ""),
            done_at_s.count,
            row.repeats()
        ),
        Some(done_at_s) => format_spread(&done_at_s, format_seconds, ""),
        None if row.ddl_tries().median == 0.0 => "no DDL".to_string(),
        None => "did not finish".to_string(),
    }
}

/// The "decided by" cell of a ranking table: the criterion that set `place`
/// apart from `versus` (the place above, or for the first place the
/// second), with both figures, `place`'s first: `completed` (with repeats
/// `completed 3 of 3 vs 2 of 3`), `failed 38% of transactions vs 0%`,
/// `longest stall 9 s vs 0 s`, `worst second 2% vs 55% of baseline`,
/// `failures 7 vs 0`, `worst-second latency 12.0 vs 1.50 ms`, or `tie` when every
/// criterion tied: the place shares its rank. With repeats each figure is a
/// median with its range (`longest stall 9 [8-10] s vs 0 s`).
pub fn decided_by_cell(place: &Place, versus: &RankingRow) -> String {
    let row = &place.row;
    let Some(criterion) = place.decided_by else {
        return "tie".to_string();
    };
    let both = |figure: fn(&RankingRow) -> Spread, number: fn(f64) -> String, unit: &str| {
        format!(
            "{} vs {}",
            format_spread(&figure(row), number, unit),
            format_spread(&figure(versus), number, unit)
        )
    };
    match criterion {
        Criterion::Anomalies => format!("anomalies {}", both(RankingRow::anomalies, thousands, "")),
        Criterion::Completed if row.repeats() > 1 || versus.repeats() > 1 => format!(
            "completed {} of {} vs {} of {}",
            row.completed_runs(),
            row.repeats(),
            versus.completed_runs(),
            versus.repeats()
        ),
        Criterion::Completed => "completed".to_string(),
        Criterion::FailureShare => format!(
            "failed {} of transactions vs {}",
            format_share(row.failed_share().median),
            format_share(versus.failed_share().median)
        ),
        Criterion::LongestStall => format!(
            "longest stall {}",
            both(RankingRow::longest_stall_s, format_count, " s")
        ),
        Criterion::WorstSecondShare => format!(
            "worst second {} of baseline",
            both(RankingRow::worst_second_share, format_percent, "%")
        ),
        Criterion::Failures => format!(
            "failures {}",
            both(RankingRow::failed_transactions, thousands, "")
        ),
        Criterion::WorstSecondP99 => format!(
            "worst-second latency {} ms",
            both(RankingRow::worst_second_p99_ms, format_ms, "")
        ),
    }
}

/// A whole count with thousands separators, rounded (a median of two may end in .5).
fn thousands(value: f64) -> String {
    format_thousands(value.round() as u64)
}

/// A note for a row whose worst-second figures cover the whole run instead of a
/// DDL window, e.g. "load: no DDL attempt, so its worst-second figures cover the
/// whole run."; `None` when the row has a window.
pub fn window_note(row: &RankingRow) -> Option<String> {
    if row.window().is_some() {
        return None;
    }
    let reason = if row.ddl_tries().median == 0.0 {
        "no DDL attempt"
    } else {
        "its DDL attempts lie outside the timeline"
    };
    Some(format!(
        "{}: {reason}, so its worst-second figures cover the whole run.",
        row.strategy
    ))
}

/// The runs the per-run sentences (lock chains, server log, losses) speak of:
/// without repeats each run as it is; with repeats each strategy's median
/// repeat (see `metrics::repeats::median_run`), as a copy whose name says so
/// (`naive (repeat 2, the median of 3)`), so every sentence about it does.
/// Every run's lock samples are in `locks.csv`.
pub fn labelled_runs(report: &RunReport) -> Vec<Cow<'_, StrategyReport>> {
    let repeats = report.repeats();
    if repeats <= 1 {
        return report.strategies.iter().map(Cow::Borrowed).collect();
    }
    report
        .by_strategy()
        .iter()
        .map(|runs| {
            let middle = median_run(runs);
            let label = format!(
                "{} (repeat {}, the median of {})",
                middle.strategy,
                middle.repeat(),
                runs.len()
            );
            let mut labelled = middle.clone();
            labelled.strategy = label.clone();
            labelled.summary.strategy = label;
            Cow::Owned(labelled)
        })
        .collect()
}

/// The chain in words, root first:
/// `report (pid 100) holds AccessShareLock on orders <- ddl (pid 108) waits for AccessExclusiveLock on orders, blocked by report <- reader-1..4 wait for AccessShareLock on orders, blocked by ddl`.
/// Sessions of the hot standby say so, and its startup process replays the
/// DDL's lock: `report (replica, pid 3026) holds AccessShareLock on orders <-
/// startup (replica, pid 2950) replays AccessExclusiveLock on orders from ddl
/// (primary), blocked by report <- reader-1..4 (replica) wait for AccessShareLock
/// on orders, blocked by startup`.
pub fn describe_chain(links: &[ChainLink]) -> String {
    links
        .iter()
        .map(describe_link)
        .collect::<Vec<_>>()
        .join(" <- ")
}

/// One link of [`describe_chain`].
fn describe_link(link: &ChainLink) -> String {
    let on_replica = link.server == Side::Replica;
    let who = match (link.roles.len(), on_replica) {
        (1, false) => format!("{} (pid {})", link.roles[0], link.pids[0]),
        (1, true) => format!("{} (replica, pid {})", link.roles[0], link.pids[0]),
        (_, false) => compact_roles(&link.roles),
        (_, true) => format!("{} (replica)", compact_roles(&link.roles)),
    };
    let on = if link.relation.is_empty() {
        String::new()
    } else {
        format!(" on {}", link.relation)
    };
    if link.holds {
        // A holder only the standby's log named: its lock's mode is not known.
        let mode = match (link.lock_mode.is_empty(), on_replica) {
            (true, true) => "a lock",
            _ => link.lock_mode.as_str(),
        };
        return format!("{who} holds {mode}{on}");
    }
    let replays = on_replica && link.roles.iter().all(|role| role == "startup");
    let blocked_by = match (link.blocked_by.is_empty(), replays) {
        (false, _) => link.blocked_by.join(", "),
        // The conflicting session was neither sampled nor logged.
        (true, true) => "a session not seen".to_string(),
        // No blocker: the lock was being handed over at that instant.
        (true, false) => "no one (being granted)".to_string(),
    };
    if replays {
        // Replay takes the locks the primary logged: the run's DDL's.
        return format!(
            "{who} replays {}{on} from ddl (primary), blocked by {blocked_by}",
            link.lock_mode
        );
    }
    let verb = if link.roles.len() == 1 {
        "waits"
    } else {
        "wait"
    };
    if link.row_wait {
        return format!(
            "{who} {verb} for {}, blocked by {blocked_by}",
            row_wait_text(link)
        );
    }
    format!(
        "{who} {verb} for {}{on}, blocked by {blocked_by}",
        link.lock_mode
    )
}

/// What a group of row waiters waits for: `a row lock on jobs (4 sessions)`;
/// `a row lock` when the row's table was not seen.
fn row_wait_text(link: &ChainLink) -> String {
    let on = match link.relation.is_empty() {
        true => String::new(),
        false => format!(" on {}", link.relation),
    };
    match link.roles.len() {
        1 => format!("a row lock{on}"),
        sessions => format!("a row lock{on} ({sessions} sessions)"),
    }
}

/// `reader-1..4` for consecutive `reader-N` (or `client-N`) roles, else the
/// roles joined by commas, a repeated one once with its count (`reader-pool ×10`).
fn compact_roles(roles: &[String]) -> String {
    let clients: Option<Vec<(ClientKind, u32)>> = roles
        .iter()
        .map(|role| match Role::parse(role)? {
            Role::Client(kind, number) => Some((kind, number)),
            _ => None,
        })
        .collect();
    if let Some(mut clients) = clients
        && clients.len() > 1
        && clients.iter().all(|(kind, _)| *kind == clients[0].0)
    {
        clients.sort_unstable_by_key(|(_, number)| *number);
        if clients.windows(2).all(|pair| pair[1].1 == pair[0].1 + 1) {
            let (kind, first) = clients[0];
            let last = clients[clients.len() - 1].1;
            return format!("{kind}-{first}..{last}");
        }
    }
    group_repeated(roles).join(", ")
}

#[cfg(test)]
mod tests;
