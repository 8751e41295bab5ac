//! CI expectations: bounds per strategy that a run must meet.
//!
//! A workload file may hold `[expect.<strategy>]` tables and the command line
//! adds or overrides single bounds with `--expect STRATEGY.KEY=VALUE`. After
//! the run each expectation is checked against the strategy's [`Summary`] and
//! printed as pass, fail or skip; any failure makes the process exit 3
//! ([`EXIT_CODE_FAILED`]). The results folder gets `expectations.csv` and
//! `junit.xml`, and when `GITHUB_STEP_SUMMARY` names a file the summary
//! Markdown and the expectation results are appended to it.
//!
//! Everything here is plain data and text; reading flags and the environment
//! is left to the caller.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use crate::error::Error;
use crate::export::write_file;
use crate::metrics::{RunReport, Summary};

/// File name of the expectation results in the results folder.
pub const EXPECTATIONS_CSV: &str = "expectations.csv";
/// File name of the expectation results as a JUnit report, for CI test viewers.
pub const JUNIT_XML: &str = "junit.xml";
/// The exact header of `expectations.csv`.
pub const EXPECTATIONS_HEADER: [&str; 6] = [
    "strategy",
    "expectation",
    "limit",
    "measured",
    "verdict",
    "source",
];
/// The process exit code of a finished run in which an expectation failed.
pub const EXIT_CODE_FAILED: i32 = 3;
/// Every expectation key, in the order they are listed and checked.
pub const KEYS: [&str; 6] = [
    "max_zero_tps_seconds",
    "min_zero_tps_seconds",
    "max_longest_stall_s",
    "max_p99_ms",
    "ddl_outcome",
    "max_failed",
];
/// The values `ddl_outcome` can take (see [`Summary::ddl_outcome`]).
pub const DDL_OUTCOMES: [&str; 4] = ["ok", "gave_up", "error", "none"];

/// `[expect.<strategy>]` as written in a workload file; every field is optional.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExpectFile {
    /// At most this many seconds with no completed transaction.
    pub max_zero_tps_seconds: Option<u32>,
    /// At least this many seconds with no completed transaction (the outage must reproduce).
    pub min_zero_tps_seconds: Option<u32>,
    /// The longest stall is at most this many seconds.
    pub max_longest_stall_s: Option<u32>,
    /// The whole-run p99 latency is at most this many milliseconds.
    pub max_p99_ms: Option<f64>,
    /// How the DDL ended: `ok`, `gave_up`, `error` or `none`.
    pub ddl_outcome: Option<String>,
    /// At most this many failed transactions.
    pub max_failed: Option<u64>,
}

impl ExpectFile {
    /// The bounds this table sets, in the order of [`KEYS`].
    pub fn bounds(&self) -> Vec<Bound> {
        let mut bounds = Vec::new();
        if let Some(limit) = self.max_zero_tps_seconds {
            bounds.push(Bound::MaxZeroTpsSeconds(limit));
        }
        if let Some(limit) = self.min_zero_tps_seconds {
            bounds.push(Bound::MinZeroTpsSeconds(limit));
        }
        if let Some(limit) = self.max_longest_stall_s {
            bounds.push(Bound::MaxLongestStallS(limit));
        }
        if let Some(limit) = self.max_p99_ms {
            bounds.push(Bound::MaxP99Ms(limit));
        }
        if let Some(outcome) = &self.ddl_outcome {
            bounds.push(Bound::DdlOutcome(outcome.clone()));
        }
        if let Some(limit) = self.max_failed {
            bounds.push(Bound::MaxFailed(limit));
        }
        bounds
    }
}

/// One bound on one strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// The strategy name as the workload defines it.
    pub strategy: String,
    pub bound: Bound,
    /// Where it came from, for messages: `workload x.toml [expect.retry]` or `--expect`.
    pub source: String,
}

/// What one expectation requires of a strategy's summary. Limits are inclusive.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// `zero_tps_seconds <= limit`.
    MaxZeroTpsSeconds(u32),
    /// `zero_tps_seconds >= limit`.
    MinZeroTpsSeconds(u32),
    /// `longest_stall_s <= limit`.
    MaxLongestStallS(u32),
    /// `lat_p99_ms <= limit`, the measured value rounded to 3 decimals as in `summary.csv`.
    MaxP99Ms(f64),
    /// `ddl_outcome == outcome`.
    DdlOutcome(String),
    /// `failed <= limit`.
    MaxFailed(u64),
}

impl Bound {
    /// The key as written in a workload file or flag, e.g. `max_p99_ms`.
    pub fn key(&self) -> &'static str {
        match self {
            Bound::MaxZeroTpsSeconds(_) => "max_zero_tps_seconds",
            Bound::MinZeroTpsSeconds(_) => "min_zero_tps_seconds",
            Bound::MaxLongestStallS(_) => "max_longest_stall_s",
            Bound::MaxP99Ms(_) => "max_p99_ms",
            Bound::DdlOutcome(_) => "ddl_outcome",
            Bound::MaxFailed(_) => "max_failed",
        }
    }

    /// The limit for people, e.g. `<= 600 ms`, `>= 3` or `= ok`.
    pub fn limit_text(&self) -> String {
        match self {
            Bound::MaxZeroTpsSeconds(limit) => format!("<= {limit}"),
            Bound::MinZeroTpsSeconds(limit) => format!(">= {limit}"),
            Bound::MaxLongestStallS(limit) => format!("<= {limit}"),
            Bound::MaxP99Ms(limit) => format!("<= {limit} ms"),
            Bound::DdlOutcome(outcome) => format!("= {outcome}"),
            Bound::MaxFailed(limit) => format!("<= {limit}"),
        }
    }

    /// The measured value as text and whether it meets this bound.
    fn measure(&self, summary: &Summary) -> (String, bool) {
        match self {
            Bound::MaxZeroTpsSeconds(limit) => {
                let value = summary.zero_tps_seconds;
                (value.to_string(), value <= *limit)
            }
            Bound::MinZeroTpsSeconds(limit) => {
                let value = summary.zero_tps_seconds;
                (value.to_string(), value >= *limit)
            }
            Bound::MaxLongestStallS(limit) => {
                let value = summary.longest_stall_s;
                (value.to_string(), value <= *limit)
            }
            Bound::MaxP99Ms(limit) => {
                // The figure summary.csv shows, so the file and the verdict agree.
                let value = (summary.lat_p99_ms * 1000.0).round() / 1000.0;
                (format!("{value} ms"), value <= *limit)
            }
            Bound::DdlOutcome(outcome) => {
                let value = &summary.ddl_outcome;
                (value.clone(), value == outcome)
            }
            Bound::MaxFailed(limit) => {
                let value = summary.failed;
                (value.to_string(), value <= *limit)
            }
        }
    }

    /// Checks a value that parsed but may still be meaningless; the problem
    /// starts with the value, so callers can put `key = ` or `flag: ` before it.
    fn check(&self) -> Result<(), String> {
        match self {
            Bound::MaxP99Ms(limit) if !limit.is_finite() || *limit < 0.0 => Err(format!(
                "{limit} is not a latency; write milliseconds of 0 or more, like 600"
            )),
            Bound::DdlOutcome(outcome) if !DDL_OUTCOMES.contains(&outcome.as_str()) => {
                Err(format!(
                    "\"{outcome}\" is not a DDL outcome; use one of {}",
                    DDL_OUTCOMES.join(", ")
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Parses the value of `key` from a flag; the error is the problem without the flag.
fn parse_bound(key: &str, value: &str) -> Result<Bound, String> {
    let whole = |what: &str, example: &str| {
        format!("\"{value}\" is not a whole number of {what}; write one like {example}")
    };
    let bound = match key {
        "max_zero_tps_seconds" => value
            .parse()
            .map(Bound::MaxZeroTpsSeconds)
            .map_err(|_| whole("seconds", "0"))?,
        "min_zero_tps_seconds" => value
            .parse()
            .map(Bound::MinZeroTpsSeconds)
            .map_err(|_| whole("seconds", "3"))?,
        "max_longest_stall_s" => value
            .parse()
            .map(Bound::MaxLongestStallS)
            .map_err(|_| whole("seconds", "1"))?,
        "max_p99_ms" => value.parse().map(Bound::MaxP99Ms).map_err(|_| {
            format!(
                "\"{value}\" is not a number of milliseconds; write one like 600, without a unit"
            )
        })?,
        "ddl_outcome" => Bound::DdlOutcome(value.to_string()),
        "max_failed" => value
            .parse()
            .map(Bound::MaxFailed)
            .map_err(|_| whole("transactions", "0"))?,
        _ => {
            return Err(format!(
                "unknown expectation \"{key}\"; the valid keys are {}",
                KEYS.join(", ")
            ));
        }
    };
    bound.check()?;
    Ok(bound)
}

/// The verdict of one expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// The strategy did not run in this report (e.g. `run --strategy` picked another).
    Skipped,
}

impl Verdict {
    /// `pass`, `fail` or `skipped`, as in `expectations.csv`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Skipped => "skipped",
        }
    }
}

/// One expectation checked against one run of its strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectationResult {
    pub expectation: Expectation,
    /// The measured value, e.g. `512.255 ms` or `gave_up`; empty when skipped.
    pub measured: String,
    pub verdict: Verdict,
}

/// The expectations of a workload's `[expect.*]` tables (`from_file`, named by
/// `workload_source`, e.g. `workload x.toml`), then the `--expect` flags: a flag
/// replaces the bound with the same strategy and key, or adds a new one.
///
/// Bad input: a strategy name not in `known` (the strategies the workload
/// defines, plus any pseudo-strategy like `load`), a flag that is not
/// `STRATEGY.KEY=VALUE`, an unknown key, a value that does not parse, a
/// `ddl_outcome` other than ok/gave_up/error/none, a negative `max_p99_ms`, or
/// `min_zero_tps_seconds` above `max_zero_tps_seconds` for one strategy.
pub fn collect(
    workload_source: &str,
    from_file: &BTreeMap<String, ExpectFile>,
    flags: &[String],
    known: &[String],
) -> Result<Vec<Expectation>, Error> {
    let mut expectations = Vec::new();
    for (strategy, table) in from_file {
        let source = format!("{workload_source} [expect.{strategy}]");
        check_known(&source, strategy, known)?;
        for bound in table.bounds() {
            bound.check().map_err(|problem| {
                Error::bad_input(format!("{source}: {} = {problem}", bound.key()))
            })?;
            expectations.push(Expectation {
                strategy: strategy.clone(),
                bound,
                source: source.clone(),
            });
        }
    }
    for flag in flags {
        let expectation = parse_flag(flag, known)?;
        let same = expectations.iter_mut().find(|existing| {
            existing.strategy == expectation.strategy
                && existing.bound.key() == expectation.bound.key()
        });
        match same {
            Some(existing) => *existing = expectation,
            None => expectations.push(expectation),
        }
    }
    check_consistent(&expectations)?;
    Ok(expectations)
}

/// Parses one `--expect STRATEGY.KEY=VALUE`. The strategy is everything before
/// the last dot, so strategy names with dots work.
fn parse_flag(flag: &str, known: &[String]) -> Result<Expectation, Error> {
    let what = format!("--expect {flag}");
    let usage = || {
        Error::bad_input(format!(
            "{what}: expected STRATEGY.KEY=VALUE, e.g. --expect retry.max_p99_ms=600"
        ))
    };
    let (target, value) = flag.split_once('=').ok_or_else(usage)?;
    let (strategy, key) = target.rsplit_once('.').ok_or_else(usage)?;
    let (strategy, key, value) = (strategy.trim(), key.trim(), value.trim());
    if strategy.is_empty() || key.is_empty() || value.is_empty() {
        return Err(usage());
    }
    check_known(&what, strategy, known)?;
    let bound = parse_bound(key, value)
        .map_err(|problem| Error::bad_input(format!("{what}: {problem}")))?;
    Ok(Expectation {
        strategy: strategy.to_string(),
        bound,
        source: "--expect".to_string(),
    })
}

/// Refuses a strategy name that the workload does not define.
fn check_known(what: &str, strategy: &str, known: &[String]) -> Result<(), Error> {
    if known.iter().any(|name| name == strategy) {
        return Ok(());
    }
    let defined = if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    };
    Err(Error::bad_input(format!(
        "{what}: no strategy named \"{strategy}\" (the workload defines: {defined}); \
         fix the name or add a [[strategies]] entry with that name"
    )))
}

/// Refuses a minimum above the maximum of the same figure: no run could pass both.
fn check_consistent(expectations: &[Expectation]) -> Result<(), Error> {
    for min in expectations {
        let Bound::MinZeroTpsSeconds(low) = min.bound else {
            continue;
        };
        for max in expectations {
            if max.strategy != min.strategy {
                continue;
            }
            if let Bound::MaxZeroTpsSeconds(high) = max.bound
                && low > high
            {
                return Err(Error::bad_input(format!(
                    "expectations of {}: min_zero_tps_seconds = {low} ({}) is above \
                     max_zero_tps_seconds = {high} ({}), so no run can pass both; \
                     lower the minimum or raise the maximum",
                    min.strategy, min.source, max.source
                )));
            }
        }
    }
    Ok(())
}

/// Checks each expectation against every run of its strategy in `report`
/// (one result per run; normally exactly one). An expectation on a strategy
/// that did not run gets one `Skipped` result.
pub fn evaluate(expectations: &[Expectation], report: &RunReport) -> Vec<ExpectationResult> {
    let mut results = Vec::new();
    for expectation in expectations {
        let mut ran = false;
        for strategy in &report.strategies {
            if strategy.strategy != expectation.strategy {
                continue;
            }
            ran = true;
            let (measured, passed) = expectation.bound.measure(&strategy.summary);
            results.push(ExpectationResult {
                expectation: expectation.clone(),
                measured,
                verdict: if passed { Verdict::Pass } else { Verdict::Fail },
            });
        }
        if !ran {
            results.push(ExpectationResult {
                expectation: expectation.clone(),
                measured: String::new(),
                verdict: Verdict::Skipped,
            });
        }
    }
    results
}

/// `retry.max_p99_ms <= 600 ms`: what a result line and a test case are called.
fn label(expectation: &Expectation) -> String {
    format!(
        "{}.{} {}",
        expectation.strategy,
        expectation.bound.key(),
        expectation.bound.limit_text()
    )
}

/// One line per result for stdout:
/// `pass  retry.max_p99_ms <= 600 ms: measured 512.255 ms`,
/// `FAIL  naive.min_zero_tps_seconds >= 3: measured 0`,
/// `skip  retry.max_failed <= 0: strategy not run`.
pub fn report_lines(results: &[ExpectationResult]) -> Vec<String> {
    results
        .iter()
        .map(|result| {
            let label = label(&result.expectation);
            match result.verdict {
                Verdict::Pass => format!("pass  {label}: measured {}", result.measured),
                Verdict::Fail => format!("FAIL  {label}: measured {}", result.measured),
                Verdict::Skipped => format!("skip  {label}: strategy not run"),
            }
        })
        .collect()
}

/// Whether any result failed (the run then exits with [`EXIT_CODE_FAILED`]).
pub fn any_failed(results: &[ExpectationResult]) -> bool {
    results.iter().any(|result| result.verdict == Verdict::Fail)
}

/// Writes `expectations.csv` into `dir` (which exists): the header
/// [`EXPECTATIONS_HEADER`], then one row per result.
pub fn write_expectations_csv(dir: &Path, results: &[ExpectationResult]) -> anyhow::Result<()> {
    write_file(&dir.join(EXPECTATIONS_CSV), |out| {
        let mut writer = ::csv::Writer::from_writer(out);
        writer.write_record(EXPECTATIONS_HEADER)?;
        for result in results {
            let expectation = &result.expectation;
            writer.write_record([
                expectation.strategy.as_str(),
                expectation.bound.key(),
                expectation.bound.limit_text().as_str(),
                result.measured.as_str(),
                result.verdict.as_str(),
                expectation.source.as_str(),
            ])?;
        }
        writer.flush()?;
        Ok(())
    })
}

/// Writes `junit.xml` into `dir` (which exists): one
/// `<testsuite name="stallbench <workload>">` with one
/// `<testcase classname="<workload>.<strategy>" name="<key> <limit>">` per
/// result; a failure carries `<failure message="measured X, expected <limit>">`,
/// a skipped one `<skipped/>`.
pub fn write_junit_xml(
    dir: &Path,
    workload: &str,
    results: &[ExpectationResult],
) -> anyhow::Result<()> {
    let text = junit_text(workload, results);
    write_file(&dir.join(JUNIT_XML), |out| {
        out.write_all(text.as_bytes())?;
        Ok(())
    })
}

/// The whole text of `junit.xml`.
fn junit_text(workload: &str, results: &[ExpectationResult]) -> String {
    let count = |verdict: Verdict| {
        results
            .iter()
            .filter(|result| result.verdict == verdict)
            .count()
    };
    let mut text = String::new();
    text.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    text.push_str(&format!(
        "<testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
        xml_escape(&format!("stallbench {workload}")),
        results.len(),
        count(Verdict::Fail),
        count(Verdict::Skipped),
    ));
    for result in results {
        let expectation = &result.expectation;
        let limit = expectation.bound.limit_text();
        let open = format!(
            "  <testcase classname=\"{}\" name=\"{}\"",
            xml_escape(&format!("{workload}.{}", expectation.strategy)),
            xml_escape(&format!("{} {limit}", expectation.bound.key())),
        );
        match result.verdict {
            Verdict::Pass => {
                text.push_str(&open);
                text.push_str("/>\n");
            }
            Verdict::Fail => {
                text.push_str(&open);
                text.push_str(">\n");
                text.push_str(&format!(
                    "    <failure message=\"{}\">{}</failure>\n",
                    xml_escape(&format!("measured {}, expected {limit}", result.measured)),
                    xml_escape(&format!(
                        "{}: measured {} (from {})",
                        label(expectation),
                        result.measured,
                        expectation.source
                    )),
                ));
                text.push_str("  </testcase>\n");
            }
            Verdict::Skipped => {
                text.push_str(&open);
                text.push_str(">\n");
                text.push_str(&format!(
                    "    <skipped message=\"{}\"/>\n",
                    xml_escape(&format!("strategy {} did not run", expectation.strategy)),
                ));
                text.push_str("  </testcase>\n");
            }
        }
    }
    text.push_str("</testsuite>\n");
    text
}

/// Text safe inside an XML element or a double- or single-quoted attribute:
/// the five special characters become entities, tab and line breaks become
/// character references (so attributes keep them), and characters XML 1.0 does
/// not allow at all become U+FFFD.
fn xml_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            '\t' => escaped.push_str("&#9;"),
            '\n' => escaped.push_str("&#10;"),
            '\r' => escaped.push_str("&#13;"),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => escaped.push('\u{fffd}'),
            _ => escaped.push(c),
        }
    }
    escaped
}

/// The file named by the `GITHUB_STEP_SUMMARY` environment variable, if it is set and not empty.
pub fn github_step_summary_path() -> Option<PathBuf> {
    std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// Appends `## stallbench: <workload>`, `summary_markdown` and a Markdown
/// table of the results to the file `path` (the value of `GITHUB_STEP_SUMMARY`,
/// see [`github_step_summary_path`]); does nothing when `path` is `None` or empty.
/// The file is created if missing and never truncated.
pub fn append_github_step_summary(
    path: Option<&Path>,
    workload: &str,
    summary_markdown: &str,
    results: &[ExpectationResult],
) -> anyhow::Result<()> {
    let Some(path) = path.filter(|path| !path.as_os_str().is_empty()) else {
        return Ok(());
    };
    let append = || -> anyhow::Result<()> {
        let mut file = OpenOptions::new().create(true).append(true).open(path)?;
        let mut text = String::new();
        // Keep our heading off the end of whatever an earlier step wrote.
        if file.metadata()?.len() > 0 {
            text.push('\n');
        }
        text.push_str(&step_summary_text(workload, summary_markdown, results));
        file.write_all(text.as_bytes())?;
        file.flush()?;
        Ok(())
    };
    append().with_context(|| {
        format!(
            "appending the run summary to {} (named by GITHUB_STEP_SUMMARY); \
             make the file writable or unset GITHUB_STEP_SUMMARY",
            path.display()
        )
    })
}

/// The Markdown appended to the GitHub step summary.
fn step_summary_text(
    workload: &str,
    summary_markdown: &str,
    results: &[ExpectationResult],
) -> String {
    let mut text = format!("## stallbench: {}\n\n", markdown_cell(workload));
    text.push_str(summary_markdown.trim_end());
    text.push_str("\n\n");
    if results.is_empty() {
        return text;
    }
    text.push_str("### Expectations\n\n");
    text.push_str("| result | strategy | expectation | limit | measured | source |\n");
    text.push_str("| :--- | :--- | :--- | :--- | :--- | :--- |\n");
    for result in results {
        let expectation = &result.expectation;
        let verdict = match result.verdict {
            Verdict::Pass => "pass",
            Verdict::Fail => "**FAIL**",
            Verdict::Skipped => "skipped",
        };
        let measured = match result.verdict {
            Verdict::Skipped => "not run",
            _ => result.measured.as_str(),
        };
        text.push_str(&format!(
            "| {verdict} | {} | {} | {} | {} | {} |\n",
            markdown_cell(&expectation.strategy),
            expectation.bound.key(),
            markdown_cell(&expectation.bound.limit_text()),
            markdown_cell(measured),
            markdown_cell(&expectation.source),
        ));
    }
    text.push('\n');
    text
}

/// Text that cannot break a Markdown table row or be read as HTML.
fn markdown_cell(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "\\|")
        .replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::StrategyReport;

    fn known() -> Vec<String> {
        vec!["naive".to_string(), "retry".to_string()]
    }

    fn flags(list: &[&str]) -> Vec<String> {
        list.iter().map(|flag| flag.to_string()).collect()
    }

    /// The tables of the module doc's example workload.
    fn example_file() -> BTreeMap<String, ExpectFile> {
        let mut tables = BTreeMap::new();
        tables.insert(
            "naive".to_string(),
            ExpectFile {
                min_zero_tps_seconds: Some(3),
                ..Default::default()
            },
        );
        tables.insert(
            "retry".to_string(),
            ExpectFile {
                max_zero_tps_seconds: Some(0),
                max_longest_stall_s: Some(1),
                max_p99_ms: Some(600.0),
                ddl_outcome: Some("ok".to_string()),
                max_failed: Some(0),
                ..Default::default()
            },
        );
        tables
    }

    fn collect_ok(
        from_file: &BTreeMap<String, ExpectFile>,
        flag_list: &[&str],
    ) -> Vec<Expectation> {
        collect("workload x.toml", from_file, &flags(flag_list), &known()).unwrap()
    }

    fn collect_err(from_file: &BTreeMap<String, ExpectFile>, flag_list: &[&str]) -> String {
        match collect("workload x.toml", from_file, &flags(flag_list), &known()) {
            Ok(expectations) => panic!("expected an error, got {expectations:?}"),
            Err(error) => {
                assert_eq!(error.exit_code(), 2, "{error}");
                error.to_string()
            }
        }
    }

    fn expectation(strategy: &str, bound: Bound) -> Expectation {
        Expectation {
            strategy: strategy.to_string(),
            bound,
            source: "--expect".to_string(),
        }
    }

    /// A summary with the figures the tests check; built by `summarize` so that
    /// fields added to `Summary` later need no change here.
    fn summary(strategy: &str) -> Summary {
        let empty = crate::metrics::new_latency_histogram();
        let mut summary = crate::metrics::summarize(
            strategy,
            &[],
            &[],
            None,
            &empty,
            &crate::metrics::RunFacts::default(),
        );
        summary.transactions = 70_000;
        summary.failed = 2;
        summary.zero_tps_seconds = 3;
        summary.longest_stall_s = 4;
        summary.lat_p99_ms = 512.2554;
        summary.ddl_outcome = "gave_up".to_string();
        summary
    }

    fn strategy_report(summary: Summary) -> StrategyReport {
        StrategyReport::from_summary(summary)
    }

    /// A run of `add-column` in which only `retry` ran, with [`summary`]'s figures.
    fn retry_only_report() -> RunReport {
        RunReport {
            workload: "add-column".to_string(),
            strategies: vec![strategy_report(summary("retry"))],
        }
    }

    fn verdict_of(bound: Bound, report: &RunReport) -> (String, Verdict) {
        let results = evaluate(&[expectation("retry", bound)], report);
        assert_eq!(results.len(), 1);
        (results[0].measured.clone(), results[0].verdict)
    }

    #[test]
    fn file_bounds_become_expectations_in_key_order() {
        let expectations = collect_ok(&example_file(), &[]);
        let got: Vec<(&str, Bound, &str)> = expectations
            .iter()
            .map(|e| (e.strategy.as_str(), e.bound.clone(), e.source.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "naive",
                    Bound::MinZeroTpsSeconds(3),
                    "workload x.toml [expect.naive]"
                ),
                (
                    "retry",
                    Bound::MaxZeroTpsSeconds(0),
                    "workload x.toml [expect.retry]"
                ),
                (
                    "retry",
                    Bound::MaxLongestStallS(1),
                    "workload x.toml [expect.retry]"
                ),
                (
                    "retry",
                    Bound::MaxP99Ms(600.0),
                    "workload x.toml [expect.retry]"
                ),
                (
                    "retry",
                    Bound::DdlOutcome("ok".to_string()),
                    "workload x.toml [expect.retry]"
                ),
                (
                    "retry",
                    Bound::MaxFailed(0),
                    "workload x.toml [expect.retry]"
                ),
            ]
        );
    }

    #[test]
    fn a_workload_file_parses_into_expect_tables() {
        #[derive(Deserialize)]
        struct Wrapper {
            expect: BTreeMap<String, ExpectFile>,
        }
        let text = "[expect.naive]\nmin_zero_tps_seconds = 3\n\
                    [expect.retry]\nmax_zero_tps_seconds = 0\nmax_longest_stall_s = 1\n\
                    max_p99_ms = 600\nddl_outcome = \"ok\"\nmax_failed = 0\n";
        let wrapper: Wrapper = toml::from_str(text).unwrap();
        // `600` is a TOML integer; serde reads it into the f64 field.
        assert_eq!(wrapper.expect, example_file());

        let error = toml::from_str::<Wrapper>("[expect.retry]\nmax_p99 = 600\n")
            .err()
            .expect("an unknown key is refused");
        let message = error.to_string();
        assert!(message.contains("max_p99"), "{message}");
        assert!(message.contains("max_p99_ms"), "{message}");
    }

    #[test]
    fn a_flag_replaces_the_file_bound_with_the_same_key_in_place() {
        let expectations = collect_ok(&example_file(), &["retry.max_p99_ms=750.5"]);
        assert_eq!(expectations.len(), 6);
        assert_eq!(
            expectations[3],
            Expectation {
                strategy: "retry".to_string(),
                bound: Bound::MaxP99Ms(750.5),
                source: "--expect".to_string(),
            }
        );
        // The other bounds keep their file source.
        assert_eq!(expectations[2].source, "workload x.toml [expect.retry]");
    }

    #[test]
    fn a_flag_adds_a_bound_and_the_last_of_two_flags_wins() {
        let expectations = collect_ok(
            &example_file(),
            &[
                "naive.ddl_outcome=ok",
                "naive.max_failed=5",
                " naive.max_failed = 7 ",
            ],
        );
        assert_eq!(expectations.len(), 8);
        assert_eq!(
            expectations[6],
            expectation("naive", Bound::DdlOutcome("ok".to_string()))
        );
        assert_eq!(expectations[7], expectation("naive", Bound::MaxFailed(7)));
    }

    #[test]
    fn flags_alone_work_and_a_strategy_name_may_contain_dots() {
        let known = vec!["retry.v2".to_string()];
        let expectations = collect(
            "workload x.toml",
            &BTreeMap::new(),
            &flags(&["retry.v2.max_zero_tps_seconds=0"]),
            &known,
        )
        .unwrap();
        assert_eq!(
            expectations,
            vec![expectation("retry.v2", Bound::MaxZeroTpsSeconds(0))]
        );
    }

    #[test]
    fn an_unknown_strategy_names_the_known_ones() {
        let mut tables = BTreeMap::new();
        tables.insert("retyr".to_string(), ExpectFile::default());
        let message = collect_err(&tables, &[]);
        assert_eq!(
            message,
            "workload x.toml [expect.retyr]: no strategy named \"retyr\" (the workload defines: \
             naive, retry); fix the name or add a [[strategies]] entry with that name"
        );

        let message = collect_err(&BTreeMap::new(), &["retyr.max_failed=0"]);
        assert!(
            message.starts_with("--expect retyr.max_failed=0: no strategy named \"retyr\""),
            "{message}"
        );
        assert!(message.contains("naive, retry"), "{message}");
    }

    #[test]
    fn an_unknown_key_lists_the_valid_keys() {
        let message = collect_err(&BTreeMap::new(), &["retry.max_p99=600"]);
        assert_eq!(
            message,
            "--expect retry.max_p99=600: unknown expectation \"max_p99\"; the valid keys are \
             max_zero_tps_seconds, min_zero_tps_seconds, max_longest_stall_s, max_p99_ms, \
             ddl_outcome, max_failed"
        );
    }

    #[test]
    fn a_value_that_does_not_parse_is_refused() {
        let message = collect_err(&BTreeMap::new(), &["retry.max_p99_ms=abc"]);
        assert_eq!(
            message,
            "--expect retry.max_p99_ms=abc: \"abc\" is not a number of milliseconds; \
             write one like 600, without a unit"
        );
        let message = collect_err(&BTreeMap::new(), &["retry.max_p99_ms=600ms"]);
        assert!(message.contains("without a unit"), "{message}");
        for flag in [
            "naive.min_zero_tps_seconds=-1",
            "naive.max_zero_tps_seconds=1.5",
            "naive.max_longest_stall_s=x",
        ] {
            let message = collect_err(&BTreeMap::new(), &[flag]);
            assert!(
                message.starts_with(&format!("--expect {flag}: ")),
                "{message}"
            );
            assert!(
                message.contains("is not a whole number of seconds"),
                "{message}"
            );
        }
        let message = collect_err(&BTreeMap::new(), &["retry.max_failed=some"]);
        assert!(
            message.contains("\"some\" is not a whole number of transactions"),
            "{message}"
        );
        let message = collect_err(&BTreeMap::new(), &["retry.max_p99_ms=-5"]);
        assert!(message.contains("-5 is not a latency"), "{message}");
        let message = collect_err(&BTreeMap::new(), &["retry.max_p99_ms=NaN"]);
        assert!(message.contains("NaN is not a latency"), "{message}");
    }

    #[test]
    fn a_flag_without_strategy_key_and_value_shows_the_form() {
        for flag in [
            "nodot",
            "nodot=3",
            "retry.max_p99_ms",
            ".max_p99_ms=1",
            "retry.=1",
            "retry.max_p99_ms=",
        ] {
            let message = collect_err(&BTreeMap::new(), &[flag]);
            assert_eq!(
                message,
                format!(
                    "--expect {flag}: expected STRATEGY.KEY=VALUE, e.g. --expect retry.max_p99_ms=600"
                )
            );
        }
    }

    #[test]
    fn a_ddl_outcome_must_be_one_of_four() {
        let message = collect_err(&BTreeMap::new(), &["retry.ddl_outcome=done"]);
        assert_eq!(
            message,
            "--expect retry.ddl_outcome=done: \"done\" is not a DDL outcome; \
             use one of ok, gave_up, error, none"
        );
        let mut tables = BTreeMap::new();
        tables.insert(
            "retry".to_string(),
            ExpectFile {
                ddl_outcome: Some("OK".to_string()),
                ..Default::default()
            },
        );
        let message = collect_err(&tables, &[]);
        assert_eq!(
            message,
            "workload x.toml [expect.retry]: ddl_outcome = \"OK\" is not a DDL outcome; \
             use one of ok, gave_up, error, none"
        );
        for outcome in DDL_OUTCOMES {
            collect_ok(&BTreeMap::new(), &[&format!("retry.ddl_outcome={outcome}")]);
        }
    }

    #[test]
    fn a_negative_latency_in_the_file_is_refused() {
        let mut tables = BTreeMap::new();
        tables.insert(
            "retry".to_string(),
            ExpectFile {
                max_p99_ms: Some(-1.0),
                ..Default::default()
            },
        );
        let message = collect_err(&tables, &[]);
        assert_eq!(
            message,
            "workload x.toml [expect.retry]: max_p99_ms = -1 is not a latency; \
             write milliseconds of 0 or more, like 600"
        );
    }

    #[test]
    fn a_minimum_above_the_maximum_is_refused_after_the_flags() {
        let message = collect_err(&example_file(), &["naive.max_zero_tps_seconds=2"]);
        assert_eq!(
            message,
            "expectations of naive: min_zero_tps_seconds = 3 (workload x.toml [expect.naive]) \
             is above max_zero_tps_seconds = 2 (--expect), so no run can pass both; \
             lower the minimum or raise the maximum"
        );
        // Equal limits are satisfiable.
        collect_ok(&example_file(), &["naive.max_zero_tps_seconds=3"]);
    }

    #[test]
    fn max_bounds_pass_at_the_limit_and_fail_above_it() {
        // summary(): zero_tps_seconds 3, longest_stall_s 4, p99 512.255 ms, failed 2.
        let report = retry_only_report();
        let cases = [
            (
                Bound::MaxZeroTpsSeconds(3),
                Bound::MaxZeroTpsSeconds(2),
                "3",
            ),
            (Bound::MaxLongestStallS(4), Bound::MaxLongestStallS(3), "4"),
            (
                Bound::MaxP99Ms(512.255),
                Bound::MaxP99Ms(512.254),
                "512.255 ms",
            ),
            (Bound::MaxFailed(2), Bound::MaxFailed(1), "2"),
        ];
        for (at_limit, below, measured) in cases {
            assert_eq!(
                verdict_of(at_limit.clone(), &report),
                (measured.to_string(), Verdict::Pass),
                "{at_limit:?}"
            );
            assert_eq!(
                verdict_of(below.clone(), &report),
                (measured.to_string(), Verdict::Fail),
                "{below:?}"
            );
        }
    }

    #[test]
    fn min_zero_tps_passes_at_the_limit_and_fails_below_it() {
        let report = retry_only_report();
        assert_eq!(
            verdict_of(Bound::MinZeroTpsSeconds(3), &report),
            ("3".to_string(), Verdict::Pass)
        );
        assert_eq!(
            verdict_of(Bound::MinZeroTpsSeconds(0), &report),
            ("3".to_string(), Verdict::Pass)
        );
        assert_eq!(
            verdict_of(Bound::MinZeroTpsSeconds(4), &report),
            ("3".to_string(), Verdict::Fail)
        );
    }

    #[test]
    fn ddl_outcome_must_match_exactly() {
        let report = retry_only_report();
        assert_eq!(
            verdict_of(Bound::DdlOutcome("gave_up".to_string()), &report),
            ("gave_up".to_string(), Verdict::Pass)
        );
        assert_eq!(
            verdict_of(Bound::DdlOutcome("ok".to_string()), &report),
            ("gave_up".to_string(), Verdict::Fail)
        );
    }

    #[test]
    fn every_bound_kind_is_skipped_when_its_strategy_did_not_run() {
        let report = retry_only_report();
        let bounds = [
            Bound::MaxZeroTpsSeconds(0),
            Bound::MinZeroTpsSeconds(3),
            Bound::MaxLongestStallS(1),
            Bound::MaxP99Ms(600.0),
            Bound::DdlOutcome("ok".to_string()),
            Bound::MaxFailed(0),
        ];
        let expectations: Vec<Expectation> = bounds
            .iter()
            .map(|bound| expectation("naive", bound.clone()))
            .collect();
        let results = evaluate(&expectations, &report);
        assert_eq!(results.len(), bounds.len());
        for result in &results {
            assert_eq!(result.verdict, Verdict::Skipped);
            assert_eq!(result.measured, "");
        }
        assert!(!any_failed(&results));
    }

    #[test]
    fn a_strategy_that_ran_twice_is_checked_twice() {
        let mut second = summary("retry");
        second.failed = 9;
        let report = RunReport {
            workload: "add-column".to_string(),
            strategies: vec![
                strategy_report(summary("retry")),
                strategy_report(summary("naive")),
                strategy_report(second),
            ],
        };
        let results = evaluate(&[expectation("retry", Bound::MaxFailed(2))], &report);
        let verdicts: Vec<Verdict> = results.iter().map(|r| r.verdict).collect();
        assert_eq!(verdicts, vec![Verdict::Pass, Verdict::Fail]);
        assert!(any_failed(&results));
    }

    #[test]
    fn the_sample_run_meets_the_example_expectations() {
        let report = crate::export::sample::reference_report();
        let expectations = collect_ok(&example_file(), &[]);
        let results = evaluate(&expectations, &report);
        let lines = report_lines(&results);
        assert!(!any_failed(&results), "{lines:#?}");
        assert_eq!(
            lines[0],
            "pass  naive.min_zero_tps_seconds >= 3: measured 9"
        );
    }

    #[test]
    fn report_lines_show_verdict_limit_and_measured_value() {
        let report = retry_only_report();
        let expectations = vec![
            expectation("retry", Bound::MaxP99Ms(600.0)),
            expectation("retry", Bound::MinZeroTpsSeconds(5)),
            expectation("naive", Bound::MaxFailed(0)),
            expectation("retry", Bound::DdlOutcome("ok".to_string())),
        ];
        let results = evaluate(&expectations, &report);
        assert_eq!(
            report_lines(&results),
            vec![
                "pass  retry.max_p99_ms <= 600 ms: measured 512.255 ms",
                "FAIL  retry.min_zero_tps_seconds >= 5: measured 3",
                "skip  naive.max_failed <= 0: strategy not run",
                "FAIL  retry.ddl_outcome = ok: measured gave_up",
            ]
        );
        assert!(any_failed(&results));
        assert!(!any_failed(&results[..1]));
        assert!(!any_failed(&[]));
    }

    /// Results of three verdicts, one with a strategy name full of XML specials.
    fn mixed_results() -> Vec<ExpectationResult> {
        let mut odd = summary("a<&\"'>b");
        odd.ddl_outcome = "x<&\"'>y".to_string();
        let report = RunReport {
            workload: "add-column".to_string(),
            strategies: vec![strategy_report(summary("retry")), strategy_report(odd)],
        };
        let expectations = vec![
            expectation("retry", Bound::MaxP99Ms(600.0)),
            expectation("retry", Bound::MaxFailed(0)),
            expectation("naive", Bound::MinZeroTpsSeconds(3)),
            expectation("a<&\"'>b", Bound::DdlOutcome("ok".to_string())),
        ];
        evaluate(&expectations, &report)
    }

    #[test]
    fn expectations_csv_has_the_exact_header_and_one_row_per_result() {
        let dir = tempfile::tempdir().unwrap();
        write_expectations_csv(dir.path(), &mixed_results()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(EXPECTATIONS_CSV)).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("strategy,expectation,limit,measured,verdict,source")
        );
        assert_eq!(
            lines.next(),
            Some("retry,max_p99_ms,<= 600 ms,512.255 ms,pass,--expect")
        );
        assert_eq!(lines.next(), Some("retry,max_failed,<= 0,2,fail,--expect"));
        assert_eq!(
            lines.next(),
            Some("naive,min_zero_tps_seconds,>= 3,,skipped,--expect")
        );

        let mut reader = ::csv::Reader::from_path(dir.path().join(EXPECTATIONS_CSV)).unwrap();
        let rows: Vec<::csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 4);
        assert_eq!(&rows[3][0], "a<&\"'>b");
        assert_eq!(&rows[3][3], "x<&\"'>y");
    }

    #[test]
    fn an_empty_expectations_csv_is_just_the_header() {
        let dir = tempfile::tempdir().unwrap();
        write_expectations_csv(dir.path(), &[]).unwrap();
        let text = std::fs::read_to_string(dir.path().join(EXPECTATIONS_CSV)).unwrap();
        assert_eq!(text, "strategy,expectation,limit,measured,verdict,source\n");
    }

    #[test]
    fn a_write_error_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        for name in [EXPECTATIONS_CSV, JUNIT_XML] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        let message = format!("{:#}", write_expectations_csv(dir.path(), &[]).unwrap_err());
        let expected = format!("writing {}", dir.path().join(EXPECTATIONS_CSV).display());
        assert!(message.starts_with(&expected), "{message}");
        let message = format!("{:#}", write_junit_xml(dir.path(), "w", &[]).unwrap_err());
        let expected = format!("writing {}", dir.path().join(JUNIT_XML).display());
        assert!(message.starts_with(&expected), "{message}");
    }

    /// One element of [`check_xml`]'s answer: its name and raw (escaped) attributes.
    #[derive(Debug)]
    struct Element {
        name: String,
        attributes: BTreeMap<String, String>,
    }

    /// Checks that an entity reference starts at `text` and returns its length.
    fn entity_len(text: &str) -> usize {
        for entity in [
            "&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#9;", "&#10;", "&#13;",
        ] {
            if text.starts_with(entity) {
                return entity.len();
            }
        }
        panic!("a bare & in {text:?}");
    }

    /// Checks character data: no `<`, and `&` only as an entity.
    fn check_chars(text: &str) {
        assert!(!text.contains('<'), "a bare < in {text:?}");
        let mut rest = text;
        while let Some(at) = rest.find('&') {
            rest = &rest[at + entity_len(&rest[at..])..];
        }
    }

    /// A tiny checker for the XML this module writes: a prolog, tags balanced
    /// and properly nested under one root, `name="value"` attributes, escaped
    /// text. Returns every start or empty element in document order.
    fn check_xml(text: &str) -> Vec<Element> {
        let prolog = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
        assert!(text.starts_with(prolog), "no XML prolog");
        let mut rest = &text[prolog.len()..];
        let mut open: Vec<String> = Vec::new();
        let mut elements = Vec::new();
        let mut roots = 0;
        while let Some(start) = rest.find('<') {
            let between = &rest[..start];
            check_chars(between);
            assert!(
                !open.is_empty() || between.trim().is_empty(),
                "text outside the root: {between:?}"
            );
            let end = rest[start..].find('>').expect("an unclosed tag") + start;
            let tag = &rest[start + 1..end];
            rest = &rest[end + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop().as_deref(), Some(name), "mismatched </{name}>");
                continue;
            }
            if open.is_empty() {
                roots += 1;
            }
            let (body, empty) = match tag.strip_suffix('/') {
                Some(body) => (body, true),
                None => (tag, false),
            };
            let (name, mut attrs) = body.split_once(' ').unwrap_or((body, ""));
            let mut attributes = BTreeMap::new();
            loop {
                attrs = attrs.trim_start();
                if attrs.is_empty() {
                    break;
                }
                let (key, after) = attrs.split_once("=\"").expect("an attribute without =\"");
                let (value, after) = after.split_once('"').expect("an unclosed attribute");
                check_chars(value);
                assert!(
                    attributes
                        .insert(key.to_string(), value.to_string())
                        .is_none(),
                    "duplicate attribute {key}"
                );
                attrs = after;
            }
            elements.push(Element {
                name: name.to_string(),
                attributes,
            });
            if !empty {
                open.push(name.to_string());
            }
        }
        assert!(rest.trim().is_empty(), "text after the root: {rest:?}");
        assert!(open.is_empty(), "unclosed elements {open:?}");
        assert_eq!(roots, 1, "one root element");
        elements
    }

    fn count(elements: &[Element], name: &str) -> usize {
        elements.iter().filter(|e| e.name == name).count()
    }

    #[test]
    fn junit_xml_is_well_formed_and_its_counts_match() {
        let dir = tempfile::tempdir().unwrap();
        let results = mixed_results();
        write_junit_xml(dir.path(), "add-column", &results).unwrap();
        let text = std::fs::read_to_string(dir.path().join(JUNIT_XML)).unwrap();
        let elements = check_xml(&text);

        let suite = &elements[0];
        assert_eq!(suite.name, "testsuite");
        assert_eq!(suite.attributes["name"], "stallbench add-column");
        assert_eq!(suite.attributes["tests"], "4");
        assert_eq!(suite.attributes["failures"], "2");
        assert_eq!(suite.attributes["skipped"], "1");
        assert_eq!(suite.attributes["errors"], "0");
        assert_eq!(count(&elements, "testcase"), 4);
        assert_eq!(count(&elements, "failure"), 2);
        assert_eq!(count(&elements, "skipped"), 1);

        let case = &elements[1];
        assert_eq!(case.attributes["classname"], "add-column.retry");
        assert_eq!(case.attributes["name"], "max_p99_ms &lt;= 600 ms");
        let failure = elements.iter().find(|e| e.name == "failure").unwrap();
        assert_eq!(
            failure.attributes["message"],
            "measured 2, expected &lt;= 0"
        );
        // The strategy and the measured outcome carry every special character.
        let odd_case = &elements[elements.len() - 2];
        assert_eq!(
            odd_case.attributes["classname"],
            "add-column.a&lt;&amp;&quot;&apos;&gt;b"
        );
        let odd_failure = &elements[elements.len() - 1];
        assert_eq!(
            odd_failure.attributes["message"],
            "measured x&lt;&amp;&quot;&apos;&gt;y, expected = ok"
        );
        assert!(text.contains(
            "a&lt;&amp;&quot;&apos;&gt;b.ddl_outcome = ok: measured x&lt;&amp;&quot;&apos;&gt;y \
             (from --expect)</failure>"
        ));
    }

    #[test]
    fn junit_xml_without_expectations_is_an_empty_suite() {
        let text = junit_text("w&w", &[]);
        let elements = check_xml(&text);
        assert_eq!(elements.len(), 1);
        assert_eq!(elements[0].attributes["name"], "stallbench w&amp;w");
        assert_eq!(elements[0].attributes["tests"], "0");
    }

    #[test]
    fn xml_escape_handles_specials_line_breaks_and_forbidden_characters() {
        assert_eq!(xml_escape("<&\"'>"), "&lt;&amp;&quot;&apos;&gt;");
        assert_eq!(xml_escape("a\tb\nc\rd"), "a&#9;b&#10;c&#13;d");
        assert_eq!(
            xml_escape("a\u{0}b\u{1b}c\u{ffff}"),
            "a\u{fffd}b\u{fffd}c\u{fffd}"
        );
        assert_eq!(xml_escape("plain ünïcode"), "plain ünïcode");
    }

    #[test]
    fn the_step_summary_is_appended_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("step_summary.md");
        std::fs::write(&path, "earlier step").unwrap();
        let results = mixed_results();
        let summary_md = "# add-column\n\n| strategy |\n| :--- |\n| retry |\n";
        append_github_step_summary(Some(&path), "add-column", summary_md, &results).unwrap();
        append_github_step_summary(Some(&path), "add-column", summary_md, &results[..1]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();

        assert!(text.starts_with("earlier step\n## stallbench: add-column\n\n# add-column\n"));
        assert_eq!(text.matches("## stallbench: add-column\n").count(), 2);
        assert_eq!(text.matches("### Expectations").count(), 2);
        assert!(text.contains(
            "| result | strategy | expectation | limit | measured | source |\n\
             | :--- | :--- | :--- | :--- | :--- | :--- |\n\
             | pass | retry | max_p99_ms | &lt;= 600 ms | 512.255 ms | --expect |\n\
             | **FAIL** | retry | max_failed | &lt;= 0 | 2 | --expect |\n\
             | skipped | naive | min_zero_tps_seconds | &gt;= 3 | not run | --expect |\n"
        ));
        assert!(
            text.contains("| a&lt;&amp;\"'&gt;b | ddl_outcome |"),
            "{text}"
        );
        // The second append added one row only.
        let second = &text[text.rfind("## stallbench").unwrap()..];
        assert_eq!(second.matches("| pass |").count(), 1);
        assert_eq!(second.matches("| **FAIL** |").count(), 0);
    }

    #[test]
    fn the_step_summary_is_created_and_skipped_when_unset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.md");
        append_github_step_summary(Some(&path), "w", "# w\n", &[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "## stallbench: w\n\n# w\n\n"
        );
        append_github_step_summary(None, "w", "# w\n", &[]).unwrap();
        append_github_step_summary(Some(Path::new("")), "w", "# w\n", &[]).unwrap();
    }

    #[test]
    fn a_step_summary_error_names_the_file_and_the_variable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-folder").join("summary.md");
        let error = append_github_step_summary(Some(&path), "w", "", &[]).unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("GITHUB_STEP_SUMMARY"), "{message}");
    }

    #[test]
    fn keys_and_limits_read_as_in_the_workload_file() {
        let bounds = [
            (Bound::MaxZeroTpsSeconds(0), "<= 0"),
            (Bound::MinZeroTpsSeconds(3), ">= 3"),
            (Bound::MaxLongestStallS(1), "<= 1"),
            (Bound::MaxP99Ms(600.0), "<= 600 ms"),
            (Bound::MaxP99Ms(0.25), "<= 0.25 ms"),
            (Bound::DdlOutcome("ok".to_string()), "= ok"),
            (Bound::MaxFailed(0), "<= 0"),
        ];
        for (bound, limit) in &bounds {
            assert_eq!(bound.limit_text(), *limit);
            assert!(KEYS.contains(&bound.key()));
        }
        // Every key parses from a flag back into the bound it names.
        for key in KEYS {
            let value = if key == "ddl_outcome" { "ok" } else { "1" };
            assert_eq!(parse_bound(key, value).unwrap().key(), key);
        }
    }
}
