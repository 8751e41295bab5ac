//! A table as plain data: the header, the rows as text, and how each column
//! is aligned. The rows of a table are typed data built once (a
//! [`SummaryRow`] per strategy, a [`RankedRow`] per place, an
//! `ExpectationRecord` per result); each format is a list of [`Column`]s that picks and formats the
//! figures it shows, and a layout (`console::render_table`,
//! `markdown::render_table`). A figure is added by one field in the row type
//! and one [`Column`] in each format that shows it.

use crate::metrics::ranking::ranks;
use crate::metrics::spread::Spread;
use crate::metrics::{RankingRow, RunReport, StrategyReport, Summary, rank_strategies};

use super::format::{format_count, format_spread};

use super::sentences::{
    decided_by_cell, headline, on_server, replica_notes, retry_note, stalled_latency_note,
    what_happened, window_note,
};

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text: padded on the right.
    Left,
    /// Numbers: padded on the left.
    Right,
}

/// One column of a table of `R` rows: its title, how it is aligned, and the
/// cell text of a row in this format.
pub struct Column<R> {
    /// The column title.
    pub title: &'static str,
    /// How the cells line up.
    pub align: Align,
    /// The text of a row's cell, unescaped.
    pub cell: fn(&R) -> String,
}

impl<R> Column<R> {
    /// A column titled `title`, aligned `align`, whose cells `cell` writes.
    pub const fn new(title: &'static str, align: Align, cell: fn(&R) -> String) -> Column<R> {
        Column { title, align, cell }
    }
}

/// One row of a ranking table: the place (1 = best), the strategy's ranking
/// figures, and what decided the place.
pub struct RankedRow {
    /// 1-based place in the ranking; places tied on every criterion share it (`1, 1, 1, 4`).
    pub rank: usize,
    /// The strategy's ranking figures.
    pub row: RankingRow,
    /// The criterion that set it apart from the place above (the first place:
    /// from the second), with both figures (see [`decided_by_cell`]).
    pub decided_by: String,
}

/// The strategy cell of a summary table: its name, `naive (partial)` for one
/// a stop cut short, `naive (invalid)` for one whose scenario did not run as written.
pub fn strategy_cell(summary: &Summary) -> String {
    if !summary.interrupted.is_empty() {
        format!("{} (partial)", summary.strategy)
    } else if !summary.invalid.is_empty() {
        format!("{} (invalid)", summary.strategy)
    } else {
        summary.strategy.clone()
    }
}

/// The ranking as every format shows it, built once: the rows best first,
/// the headline sentence, and a note per strategy measured over the whole run.
pub struct Ranking {
    /// One row per strategy, best first.
    pub rows: Vec<RankedRow>,
    /// The sentence that names the winner and its cost (see [`headline`]).
    pub headline: String,
    /// What happened to traffic under each strategy and who ranked first
    /// (see [`what_happened`]), said apart from the bounds' verdict.
    pub what_happened: String,
    /// Notes for strategies without a DDL window (see [`window_note`]), whose
    /// worst-second latency is not a second's p99 (see [`stalled_latency_note`]),
    /// on the replica, and not ranked.
    pub notes: Vec<String>,
}

/// The ranking of `report`'s strategies whose runs ended as written (a
/// partial run and an invalid one are no result: each is named apart), or
/// `None` when fewer than 2 strategies have one (however often each was repeated).
pub fn ranking(report: &RunReport) -> Option<Ranking> {
    let (whole, partial, invalid) = whole_runs(report);
    if whole.by_strategy().len() < 2 {
        return None;
    }
    let places = rank_strategies(&whole);
    let ranks = ranks(&places);
    let headline = on_server(headline(&places), &places, report.load_on);
    let what_happened = what_happened(&places);
    let notes = places
        .iter()
        .filter_map(|place| window_note(&place.row))
        .chain(
            places
                .iter()
                .filter_map(|place| stalled_latency_note(&place.row)),
        )
        .chain(replica_notes(&places, report.load_on))
        .chain(
            whole
                .by_strategy()
                .iter()
                .filter_map(|runs| retry_note(runs)),
        )
        .chain(partial.iter().map(|strategy| {
            format!(
                "{}: not ranked, its run was interrupted ({}).",
                strategy.strategy, strategy.summary.interrupted
            )
        }))
        .chain(
            invalid
                .iter()
                .map(|strategy| invalid_note(&strategy.summary)),
        )
        .collect();
    let rows = places
        .iter()
        .enumerate()
        .map(|(index, place)| {
            let versus = if index == 0 { 1 } else { index - 1 };
            RankedRow {
                rank: ranks[index],
                row: place.row.clone(),
                decided_by: decided_by_cell(place, &places[versus].row),
            }
        })
        .collect();
    Some(Ranking {
        rows,
        headline,
        what_happened,
        notes,
    })
}

/// `report` with only the runs that ended as written (a stop cuts the last
/// run short, so the others keep their run order), then the partial runs and
/// the invalid ones.
fn whole_runs(report: &RunReport) -> (RunReport, Vec<&StrategyReport>, Vec<&StrategyReport>) {
    let (whole, partial): (Vec<_>, Vec<_>) = report
        .strategies
        .iter()
        .partition(|strategy| strategy.summary.interrupted.is_empty());
    let (whole, invalid): (Vec<_>, Vec<_>) = whole
        .into_iter()
        .partition(|strategy| strategy.summary.invalid.is_empty());
    let whole = RunReport {
        workload: report.workload.clone(),
        strategies: whole.into_iter().cloned().collect(),
        interruption: None,
        load_on: report.load_on,
        load_loop: report.load_loop,
    };
    (whole, partial, invalid)
}

/// What happened to traffic under the runs of `report` that ended as
/// written (see [`what_happened`]); with one strategy, without a ranking.
/// `None` when no run ended as written.
pub fn what_happened_of(report: &RunReport) -> Option<String> {
    if let Some(ranking) = ranking(report) {
        return Some(ranking.what_happened);
    }
    let (whole, _, _) = whole_runs(report);
    let places = rank_strategies(&whole);
    (!places.is_empty()).then(|| what_happened(&places))
}

/// The note that sets an invalid run apart: `naive: not ranked, invalid:
/// the report failed at 4.0 s, ...` (with its repeat when it was repeated).
pub fn invalid_note(summary: &Summary) -> String {
    let repeat = match summary.repeat > 1 {
        true => format!(" (repeat {})", summary.repeat),
        false => String::new(),
    };
    format!(
        "{}{repeat}: not ranked, invalid: {}.",
        summary.strategy, summary.invalid
    )
}

/// The notes of `report`'s invalid runs, for a report too small to rank
/// (where [`ranking`] would carry them).
pub fn invalid_notes(report: &RunReport) -> Vec<String> {
    report
        .strategies
        .iter()
        .filter(|strategy| strategy.summary.interrupted.is_empty())
        .filter(|strategy| !strategy.summary.invalid.is_empty())
        .map(|strategy| invalid_note(&strategy.summary))
        .collect()
}

/// One strategy's row of a summary table: the summaries of its runs, in
/// repeat order (one without repeats). Each column writes a figure over the
/// runs with [`format_spread`], which for one run is the figure itself.
pub struct SummaryRow {
    /// The strategy's name.
    pub strategy: String,
    /// The summary of each run, in repeat order.
    pub runs: Vec<Summary>,
}

impl SummaryRow {
    /// The spread of `figure` over the runs.
    pub fn spread(&self, figure: impl Fn(&Summary) -> f64) -> Spread {
        let values: Vec<f64> = self.runs.iter().map(figure).collect();
        Spread::of(&values).unwrap_or(Spread::single(0.0))
    }

    /// The cell of `figure` over the runs, each number written by `number`.
    pub fn cell(&self, figure: impl Fn(&Summary) -> f64, number: impl Fn(f64) -> String) -> String {
        format_spread(&self.spread(figure), number, "")
    }

    /// The text of `figure`: one value, or the runs' different values joined by ` / `.
    pub fn text(&self, figure: impl Fn(&Summary) -> String) -> String {
        let mut values: Vec<String> = Vec::new();
        for summary in &self.runs {
            let value = figure(summary);
            if !values.contains(&value) {
                values.push(value);
            }
        }
        values.join(" / ")
    }
}

/// The retry columns of a summary table (`--max-tries`): the transactions
/// that needed more than one try, their extra tries, and the failures by the
/// kinds a retry is about. Shown only when a run has one of them, so a run
/// without retries reads as before.
const RETRY_COLUMNS: &[Column<SummaryRow>] = &[
    Column::new("retried", Align::Right, |r| {
        r.cell(|s| s.retried as f64, format_count)
    }),
    Column::new("retries", Align::Right, |r| {
        r.cell(|s| s.retries as f64, format_count)
    }),
    Column::new("failed serialization", Align::Right, |r| {
        r.cell(|s| s.failed_serialization as f64, format_count)
    }),
    Column::new("failed deadlock", Align::Right, |r| {
        r.cell(|s| s.failed_deadlock as f64, format_count)
    }),
    Column::new("failed lock timeout", Align::Right, |r| {
        r.cell(|s| s.failed_lock_timeout as f64, format_count)
    }),
];

/// Whether a run retried, or failed with a kind a retry is about.
pub fn has_retry_figures(summary: &Summary) -> bool {
    summary.retried
        + summary.failed_serialization
        + summary.failed_deadlock
        + summary.failed_lock_timeout
        > 0
}

/// A summary table of `rows` in `columns`, with the retry columns after them
/// when a run has retry figures (see [`has_retry_figures`]).
pub fn summary_table(columns: &[Column<SummaryRow>], rows: &[SummaryRow]) -> Table {
    let mut table = Table::build(columns, rows);
    if rows.iter().flat_map(|row| &row.runs).any(has_retry_figures) {
        let retries = Table::build(RETRY_COLUMNS, rows);
        table.header.extend(retries.header);
        table.align.extend(retries.align);
        for (row, cells) in table.rows.iter_mut().zip(retries.rows) {
            row.extend(cells);
        }
    }
    table
}

/// One [`SummaryRow`] per strategy of `report`, in the order they first ran.
pub fn summary_rows(report: &RunReport) -> Vec<SummaryRow> {
    report
        .by_strategy()
        .into_iter()
        .map(|runs| SummaryRow {
            strategy: runs[0].strategy.clone(),
            runs: runs.iter().map(|run| run.summary.clone()).collect(),
        })
        .collect()
}

/// A table ready to render: one header cell, one alignment and one cell per row for each column.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Column titles, in column order.
    pub header: Vec<String>,
    /// How each column is aligned, in column order.
    pub align: Vec<Align>,
    /// The rows, each with one cell per column, unescaped.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these columns, given as `(title, alignment)`.
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            header: columns.iter().map(|(title, _)| title.to_string()).collect(),
            align: columns.iter().map(|(_, align)| *align).collect(),
            rows: Vec::new(),
        }
    }

    /// The table of `rows` in `columns`, one row per element in order.
    pub fn build<'a, R: 'a>(columns: &[Column<R>], rows: impl IntoIterator<Item = &'a R>) -> Table {
        Table {
            header: columns
                .iter()
                .map(|column| column.title.to_string())
                .collect(),
            align: columns.iter().map(|column| column.align).collect(),
            rows: rows
                .into_iter()
                .map(|row| columns.iter().map(|column| (column.cell)(row)).collect())
                .collect(),
        }
    }

    /// Appends one row; it must have one cell per column.
    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.header.len(), "one cell per column");
        self.rows.push(row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::reference_report;

    #[test]
    fn a_partial_strategy_is_not_ranked_but_named_apart() {
        let mut report = reference_report();
        let mut third = report.strategies[0].clone();
        third.strategy = "gitlab".to_string();
        third.summary.strategy = "gitlab".to_string();
        third.summary.interrupted = "Ctrl-C (SIGINT)".to_string();
        report.strategies.push(third);
        let places = ranking(&report).unwrap();
        let ranked: Vec<&str> = places
            .rows
            .iter()
            .map(|row| row.row.strategy.as_str())
            .collect();
        assert_eq!(ranked, ["retry", "naive"]);
        assert!(!places.headline.contains("gitlab"), "{}", places.headline);
        assert_eq!(
            places.notes.last().unwrap(),
            "gitlab: not ranked, its run was interrupted (Ctrl-C (SIGINT))."
        );
        assert!(
            places
                .notes
                .iter()
                .all(|note| !note.starts_with("gitlab: no "))
        );
        assert_eq!(
            strategy_cell(&report.strategies[2].summary),
            "gitlab (partial)"
        );
        assert_eq!(strategy_cell(&report.strategies[0].summary), "naive");

        // Two strategies, one partial: nothing to rank.
        report.strategies.remove(1);
        assert!(ranking(&report).is_none());
    }

    #[test]
    fn an_invalid_strategy_is_not_ranked_but_named_apart() {
        let mut report = reference_report();
        let mut third = report.strategies[0].clone();
        third.strategy = "gitlab".to_string();
        third.summary.strategy = "gitlab".to_string();
        third.summary.invalid = "the report failed at 0.0 s, 0.0 s into its 12 s hold: \
                                 relation \"acounts\" does not exist (SQLSTATE 42P01)"
            .to_string();
        report.strategies.push(third);
        let places = ranking(&report).unwrap();
        let ranked: Vec<&str> = places
            .rows
            .iter()
            .map(|row| row.row.strategy.as_str())
            .collect();
        assert_eq!(ranked, ["retry", "naive"]);
        assert!(!places.headline.contains("gitlab"), "{}", places.headline);
        let note = "gitlab: not ranked, invalid: the report failed at 0.0 s, 0.0 s into its 12 s \
                    hold: relation \"acounts\" does not exist (SQLSTATE 42P01).";
        assert_eq!(places.notes.last().unwrap(), note);
        assert_eq!(
            strategy_cell(&report.strategies[2].summary),
            "gitlab (invalid)"
        );

        // Two strategies, one invalid: nothing to rank, the note stays.
        report.strategies.remove(1);
        assert!(ranking(&report).is_none());
        assert_eq!(invalid_notes(&report), [note]);
    }
}
