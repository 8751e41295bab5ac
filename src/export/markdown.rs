//! `summary.md`: a heading, one table row per strategy, one plain sentence per strategy,
//! the lock chains, and (with 2+ strategies) the ranking with its headline.
//! Tables are [`Table`]s laid out as Markdown pipe tables; [`table_cell`] is the
//! one Markdown escaper of the crate.

use std::fmt::Write as _;

use crate::choices::Side;
use crate::metrics::locks::chain;
use crate::metrics::spread::Spread;
use crate::metrics::{RunReport, StrategyReport};

use super::Exporter;
use super::format::{
    format_bytes, format_count, format_ms, format_seconds, format_spread, format_thousands,
};
use super::sentences::{
    describe_chain, failures_sentence, invalid_sentence, invariants_sentence, labelled_runs,
    migration_done_cell, opening_lines, partial_sentence, pool_sentence, retries_sentence,
    strategy_sentence, worst_latency_cell, worst_share,
};
use super::table::{
    self, Align, Column, RankedRow, Ranking, SummaryRow, Table, invalid_notes, ranking,
    strategy_cell,
};
use crate::results::{OutputFile, SUMMARY_MD};

use Align::{Left, Right};

/// Writes `summary.md`.
pub struct SummaryMarkdown;

impl Exporter for SummaryMarkdown {
    fn name(&self) -> &'static str {
        SUMMARY_MD
    }

    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>> {
        Ok(vec![OutputFile {
            name: SUMMARY_MD.to_string(),
            bytes: summary_markdown(report).into_bytes(),
        }])
    }
}

/// The whole text of `summary.md`.
pub fn summary_markdown(report: &RunReport) -> String {
    let mut text = String::new();
    // Writing into a String cannot fail, hence the ignored results.
    let _ = writeln!(text, "# {}\n", report.workload);
    for line in opening_lines(report) {
        let _ = writeln!(text, "{line}\n");
    }
    text.push_str(&summary_table(report));
    text.push('\n');
    for sentence in run_sentences(report) {
        let _ = writeln!(text, "{sentence}\n");
    }
    for strategy in &labelled_runs(report) {
        text.push_str(&lock_chain_markdown(strategy));
    }
    text.push_str(&ranking_markdown(report));
    text
}

/// What each strategy did, one sentence per strategy (a partial or an invalid
/// run says so), then its failures and its pool, as `summary.md` and
/// `report.html` say it.
pub fn run_sentences(report: &RunReport) -> Vec<String> {
    let partial = report
        .interruption
        .as_ref()
        .and_then(|interruption| interruption.partial.as_ref());
    let runs = labelled_runs(report);
    let mut sentences = Vec::new();
    for strategy in &runs {
        sentences.push(
            match partial.filter(|cut| cut.strategy == strategy.strategy) {
                Some(cut) => partial_sentence(strategy, cut),
                None if !strategy.summary.invalid.is_empty() => format!(
                    "{} {}",
                    invalid_sentence(&strategy.summary),
                    strategy_sentence(strategy)
                ),
                None => strategy_sentence(strategy),
            },
        );
    }
    sentences.extend(runs.iter().filter_map(|run| failures_sentence(run)));
    sentences.extend(runs.iter().filter_map(|run| retries_sentence(&run.summary)));
    sentences.extend(runs.iter().filter_map(|run| invariants_sentence(run)));
    sentences.extend(runs.iter().filter_map(|run| pool_sentence(&run.summary)));
    sentences
}

/// The summary figures of `summary.md` as a Markdown table, one row per
/// strategy (with repeats, each figure's median and range over them).
pub fn summary_table(report: &RunReport) -> String {
    render_table(&table::summary_table(
        SUMMARY_COLUMNS,
        &table::summary_rows(report),
    ))
}

/// The summary columns of `summary.md`: long titles, latencies by [`format_ms`].
pub(crate) const SUMMARY_COLUMNS: &[Column<SummaryRow>] = &[
    Column::new("strategy", Left, |r| r.text(strategy_cell)),
    Column::new("transactions", Right, |r| {
        r.cell(|s| s.transactions as f64, |n| format!("{n:.0}"))
    }),
    Column::new("mean tps", Right, |r| {
        r.cell(|s| s.mean_tps, |n| format!("{n:.1}"))
    }),
    Column::new("zero-tps s", Right, |r| {
        r.cell(|s| f64::from(s.zero_tps_seconds), format_count)
    }),
    Column::new("longest stall s", Right, |r| {
        r.cell(|s| f64::from(s.longest_stall_s), format_count)
    }),
    Column::new("p50 ms", Right, |r| r.cell(|s| s.lat_p50_ms, format_ms)),
    Column::new("p99 ms", Right, |r| r.cell(|s| s.lat_p99_ms, format_ms)),
    Column::new("p99.9 ms", Right, |r| r.cell(|s| s.lat_p999_ms, format_ms)),
    Column::new("max ms", Right, |r| r.cell(|s| s.lat_max_ms, format_ms)),
    Column::new("DDL tries", Right, |r| {
        r.cell(|s| f64::from(s.ddl_attempts), format_count)
    }),
    Column::new("DDL total s", Right, |r| {
        r.cell(|s| s.ddl_total_ms / 1000.0, format_seconds)
    }),
    Column::new("outcome", Left, |r| r.text(|s| s.ddl_outcome.to_string())),
    Column::new("DDL WAL", Right, wal_cell),
    Column::new("max lock waiters", Right, |r| {
        r.cell(|s| f64::from(s.max_lock_waiters), format_count)
    }),
    Column::new("failed", Right, |r| {
        r.cell(|s| s.failed as f64, format_count)
    }),
];

/// The WAL the strategy's DDL tries wrote (`24.8 MB`), over its runs whose
/// WAL is known; empty when none is.
fn wal_cell(row: &SummaryRow) -> String {
    let known: Vec<f64> = (row.runs.iter())
        .filter_map(|summary| summary.wal_bytes)
        .map(|bytes| bytes as f64)
        .collect();
    Spread::of(&known).map_or(String::new(), |spread| {
        format_spread(&spread, format_bytes, "")
    })
}

/// The `## Ranking` section: a table of the strategies in rank order (best first)
/// and the headline sentence; empty when the run has fewer than 2 strategies.
pub fn ranking_markdown(report: &RunReport) -> String {
    let Some(ranking) = ranking(report) else {
        return invalid_notes(report)
            .iter()
            .map(|note| format!("{note}\n\n"))
            .collect();
    };
    let mut text = String::new();
    let _ = writeln!(text, "## Ranking\n");
    text.push_str(&ranking_table(&ranking));
    text.push('\n');
    let _ = writeln!(text, "{}\n", ranking.headline);
    let _ = writeln!(
        text,
        "{RANKING_RULE} \"decided by\" names the criterion that set a place apart from \
         the one above (the first place: from the second). Worst-second figures cover each \
         strategy's DDL window (first attempt start to last attempt end plus 1 s); a \
         second's latency is its p99, or for a second in which no transaction ended, the \
         latency of the transactions stalled through it.\n"
    );
    for note in &ranking.notes {
        let _ = writeln!(text, "{note}\n");
    }
    text
}

/// The places of `ranking` as a Markdown table, best first.
pub fn ranking_table(ranking: &Ranking) -> String {
    render_table(&Table::build(RANKING_COLUMNS, &ranking.rows))
}

/// The ranking's rule in one paragraph, as `summary.md` states it (and
/// docs/reading-the-output.md explains it).
pub const RANKING_RULE: &str = "Ranked by whether the migration completed (or there was \
    none), then whether under 1% of the transactions failed, then the longest stall, then the \
    worst second as a share of the strategy's own baseline (the median TPS of its seconds \
    before the blocker started), then failed transactions, then the worst-second latency. \
    Differences within the run's noise are ties: with one run per strategy a worst second's \
    share is as uncertain as the strategy's steady seconds stray from their median (5 points \
    at least), and \
    latencies within 10% or 1 ms tie; with repeats, figures whose ranges (from 5 repeats, 95% \
    intervals for the median) overlap tie. Strategies tied on every criterion share a rank.";

/// The ranking columns of `summary.md`, in rank order: long titles, latencies by [`format_ms`].
pub(crate) const RANKING_COLUMNS: &[Column<RankedRow>] = &[
    Column::new("rank", Right, |r| r.rank.to_string()),
    Column::new("strategy", Left, |r| r.row.strategy.clone()),
    Column::new("decided by", Left, |r| r.decided_by.clone()),
    Column::new("longest stall s", Right, |r| {
        format_spread(&r.row.longest_stall_s(), format_count, "")
    }),
    Column::new("zero-tps s", Right, |r| {
        format_spread(&r.row.zero_tps_seconds(), format_count, "")
    }),
    Column::new("worst second % of baseline", Right, |r| worst_share(&r.row)),
    Column::new("worst-second tps", Right, |r| {
        format_spread(&r.row.worst_second_tps(), thousands, "")
    }),
    Column::new("worst-second latency ms", Right, |r| {
        worst_latency_cell(&r.row, format_ms)
    }),
    Column::new("max ms in window", Right, |r| {
        format_spread(&r.row.window_max_latency_ms(), format_ms, "")
    }),
    Column::new("failed", Right, |r| {
        format_spread(&r.row.failed_transactions(), format_count, "")
    }),
    Column::new("migration done at s", Right, |r| {
        migration_done_cell(&r.row)
    }),
    Column::new("tries", Right, |r| {
        format_spread(&r.row.ddl_tries(), format_count, "")
    }),
    Column::new("blocker", Left, |r| r.row.blocker_outcome()),
];

/// A whole count with thousands separators, rounded (a median of two may end in .5).
fn thousands(value: f64) -> String {
    format_thousands(value.round() as u64)
}

/// The lock chain at its worst moment, in words and as an incident-report table,
/// plus what the server log said; empty when no session ever waited for a lock.
pub fn lock_chain_markdown(strategy: &StrategyReport) -> String {
    let locks = &strategy.locks;
    let mut text = String::new();
    if let Some(first) = locks.worst.first() {
        let links = chain(&locks.worst);
        let _ = writeln!(
            text,
            "## {}: the lock queue at its worst ({:.1} s)\n",
            strategy.strategy, first.t_s
        );
        let _ = writeln!(text, "{}\n", describe_chain(&links));
        let mut table = Table::new(&[
            ("role", Left),
            ("pid", Right),
            ("lock", Left),
            ("granted", Left),
            ("blocked by", Left),
            ("waiting ms", Right),
            ("state", Left),
            ("wait event", Left),
        ]);
        for link in &links {
            for (role, pid) in link.roles.iter().zip(&link.pids) {
                let Some(sample) = locks.worst.iter().find(|s| s.pid == *pid) else {
                    continue;
                };
                let role = match sample.server {
                    Side::Primary => role.clone(),
                    Side::Replica => format!("{role} (replica)"),
                };
                table.push(vec![
                    role,
                    pid.to_string(),
                    sample.lock_text(),
                    if sample.granted { "yes" } else { "waiting" }.to_string(),
                    sample.blocked_by.join(", "),
                    format!("{:.0}", sample.wait_ms),
                    sample.state.clone(),
                    format!("{} {}", sample.wait_event_type, sample.wait_event),
                ]);
            }
        }
        text.push_str(&render_table(&table));
        text.push('\n');
    }
    if !locks.server_log.is_empty() {
        let _ = writeln!(text, "Server log ({}):\n", strategy.strategy);
        for sentence in &locks.server_log {
            let _ = writeln!(text, "- {sentence}");
        }
        text.push('\n');
    }
    text
}

/// A Markdown pipe table: the header row, the alignment row (`:---` for
/// [`Align::Left`], `---:` for [`Align::Right`]), then one line per row, every
/// cell escaped with [`table_cell`].
pub fn render_table(table: &Table) -> String {
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut text = line(table.header.iter().map(|cell| table_cell(cell)).collect());
    text.push_str(&line(
        table
            .align
            .iter()
            .map(|align| match align {
                Align::Left => ":---".to_string(),
                Align::Right => "---:".to_string(),
            })
            .collect(),
    ));
    for row in &table.rows {
        text.push_str(&line(row.iter().map(|cell| table_cell(cell)).collect()));
    }
    text
}

/// Text that cannot break a Markdown table row or be read as HTML.
pub fn table_cell(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "\\|")
        .replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::DdlOutcome;
    use crate::testing::reference_report;

    #[test]
    fn the_retry_columns_show_only_when_a_run_has_retry_figures() {
        let mut report = reference_report();
        let header = |report: &RunReport| summary_table(report).lines().next().unwrap().to_string();
        assert!(!header(&report).contains("retried"), "{}", header(&report));
        report.strategies[1].summary.failed_deadlock = 2;
        assert!(
            header(&report).ends_with(
                "| failed | retried | retries | failed serialization | failed deadlock | failed lock timeout |"
            ),
            "{}",
            header(&report)
        );
        let naive_row = summary_table(&report)
            .lines()
            .find(|line| line.starts_with("| naive "))
            .unwrap()
            .to_string();
        assert!(naive_row.ends_with("| 0 | 0 | 0 | 0 | 0 |"), "{naive_row}");
    }

    #[test]
    fn summary_md_has_heading_table_and_sentences() {
        let mut report = reference_report();
        report.strategies[0].summary.wal_bytes = Some(640);
        let files = SummaryMarkdown.render(&report).unwrap();
        assert_eq!(files[0].name, SUMMARY_MD);
        let text = String::from_utf8(files[0].bytes.clone()).unwrap();

        assert!(text.starts_with("# add-column\n"), "{text}");
        assert!(text.contains(
            "| strategy | transactions | mean tps | zero-tps s | longest stall s | p50 ms | p99 ms \
             | p99.9 ms | max ms | DDL tries | DDL total s | outcome | DDL WAL | max lock waiters \
             | failed |"
        ));
        let naive_row = text.lines().find(|l| l.starts_with("| naive |")).unwrap();
        assert!(naive_row.contains("| 9 | 9 |"), "{naive_row}");
        assert!(
            naive_row.contains("| 1 | 9.7 | ok | 640 bytes |"),
            "{naive_row}"
        );
        let retry_row = text.lines().find(|l| l.starts_with("| retry |")).unwrap();
        assert!(
            retry_row.contains("| 5 | 12.0 | ok |  |"),
            "unknown WAL: {retry_row}"
        );
        assert!(
            text.contains(
                "naive: 9 s at 0 tps; the DDL finished ok after 9.7 s; \
                 it waited 9.4 s for the lock and held it 0.3 s."
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "retry: 0 s at 0 tps; 5 tries, ok after 12.0 s; \
                 they waited 2.0 s for the lock and held it 0.0 s."
            ),
            "{text}"
        );
    }

    #[test]
    fn summary_md_ends_with_the_ranking_for_two_strategies() {
        let text = summary_markdown(&reference_report());
        let section = text.find("## Ranking\n").expect("ranking section");
        assert!(section > text.find("retry: 0 s at 0 tps").unwrap());
        let ranking = &text[section..];
        assert!(ranking.contains(
            "| rank | strategy | decided by | longest stall s | zero-tps s | worst second % of \
             baseline | worst-second tps | worst-second latency ms | max ms in window | failed \
             | migration done at s | tries | blocker |"
        ));
        let rows: Vec<&str> = ranking
            .lines()
            .filter(|line| line.starts_with("| 1 |") || line.starts_with("| 2 |"))
            .collect();
        assert_eq!(
            rows,
            [
                "| 1 | retry | longest stall 0 s vs 9 s | 0 | 0 | 57% | 1,700 | 420.0 | 500.0 | 0 | 18.0 | 5 | ok |",
                "| 2 | naive | longest stall 9 s vs 0 s | 9 | 9 | 0% | 0 | 9700 stalled | 9700 | 0 | 15.7 | 1 | ok |",
            ]
        );
        assert!(
            ranking.contains(
                "\nretry kept 57% of its baseline in its worst second (naive: 0%) \
                 and finished the migration 2.3 s later than naive.\n"
            ),
            "{ranking}"
        );
        assert!(
            ranking.contains(
                "\nnaive: no transaction ended in second 6, so it has no p99; its worst-second \
                 latency is the 9700 ms of the transactions stalled through it, which ended in \
                 second 15.\n"
            ),
            "{ranking}"
        );
    }

    #[test]
    fn one_strategy_has_no_ranking() {
        let mut report = reference_report();
        report.strategies.truncate(1);
        assert_eq!(ranking_markdown(&report), "");
        assert!(!summary_markdown(&report).contains("## Ranking"));
    }

    #[test]
    fn the_ranking_notes_a_strategy_without_ddl() {
        let mut report = reference_report();
        let load = &mut report.strategies[1];
        load.strategy = "load".to_string();
        load.summary.strategy = "load".to_string();
        load.attempts.clear();
        load.summary.ddl_attempts = 0;
        load.summary.ddl_outcome = DdlOutcome::None;
        let ranking = ranking_markdown(&report);
        assert!(
            ranking.contains("| 1 | load | longest stall 0 s vs 9 s | 0 | 0 | 57% | 1,700 | 420.0 | 500.0 | 0 | no DDL | 0 | ok |"),
            "{ranking}"
        );
        assert!(
            ranking
                .contains("load: no DDL attempt, so its worst-second figures cover the whole run."),
            "{ranking}"
        );
    }

    #[test]
    fn a_pipe_in_a_name_does_not_break_the_table() {
        assert_eq!(table_cell("a|b"), "a\\|b");
    }
}
