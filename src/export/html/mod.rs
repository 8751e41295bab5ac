//! `report.html`: the results folder as one page a person opens. The ranking
//! and the summary as text, then per strategy its timelines on one shared
//! time axis with a synchronised cursor (TPS, latency p50/p99/max on a log
//! axis, lock waiters, failures by kind), the blocker and every DDL try drawn
//! on them, and at any second its figures and its lock chain.
//!
//! One file, nothing fetched: the charting library, the script and the
//! styles are inline, so the page opens from a CI artifact or a local disk.
//! The library is uPlot 1.6.32 (`vendor/uplot`, MIT, its licence inlined
//! with it): 51 KB minified, no dependencies, built for time series of
//! thousands of points on canvas, with what the page needs built in (cursor
//! sync across charts, drag-zoom, a log scale, stepped paths, draw hooks for
//! the bands); Chart.js (~200 KB, no cursor sync), ECharts (~1 MB) or Plotly
//! (~3.5 MB) would take most of the 400 KB the example page may weigh.
//!
//! The page embeds text that users and pull requests write (SQL, names,
//! server messages). Text goes in escaped ([`sections::escape`]); the
//! figures go in as one JSON document inside `<script
//! type="application/json">` with `<`, `>` and `&` written as `\u003c`...,
//! so no string can close the element; the script puts text on the page
//! with `textContent` only. A Content-Security-Policy allows exactly the
//! page's three scripts and its one style (by their SHA-256) and no request.
//! A check's page holds every measured migration's timelines ([`runs_page`]);
//! a sweep's has its table and chart and links to each value's page ([`pages`]).

pub mod data;
pub mod pages;
pub mod sections;

use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::Exporter;
use super::ci::ExpectationRecord;
use crate::metrics::RunReport;
use crate::results::{OutputFile, REPORT_HTML};

/// The charting library, as the npm registry ships it.
const UPLOT_JS: &str = include_str!("../../../vendor/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../../vendor/uplot/uPlot.min.css");
const UPLOT_LICENSE: &str = include_str!("../../../vendor/uplot/LICENSE");
/// The page's own script and styles.
const APP_JS: &str = include_str!("app.js");
const PAGE_CSS: &str = include_str!("page.css");
/// The first script: counts errors for the browser tests (`#selftest`).
const ERRORS_JS: &str = "window.__errors=[];\
addEventListener('error',function(e){__errors.push(String(e.message))});\
addEventListener('unhandledrejection',function(e){__errors.push(String(e.reason))});\
addEventListener('securitypolicyviolation',function(e){__errors.push('CSP: '+e.violatedDirective)});";

/// Writes `report.html` without bounds; once the verdicts are known,
/// `ci::result_files` writes it again with them.
pub struct ReportHtml;

impl Exporter for ReportHtml {
    fn name(&self) -> &'static str {
        REPORT_HTML
    }

    fn render(&self, report: &RunReport) -> anyhow::Result<Vec<OutputFile>> {
        Ok(vec![run_page_file(report, &[])?])
    }
}

/// The whole page of a run's results folder, with its CI bounds' verdicts.
pub fn run_page(report: &RunReport, bounds: &[ExpectationRecord]) -> anyhow::Result<String> {
    let data = serde_json::to_string(&data::page_data(report))?;
    Ok(assemble(
        &format!("{} - stallbench", report.workload),
        &sections::body(report, bounds),
        &data,
    ))
}

/// One run's timelines on a page of several: drawn into the element whose
/// id is `target`, its readout naming it `label` (a check's migration).
pub struct PageRun<'a> {
    pub target: String,
    pub label: String,
    pub report: &'a RunReport,
}

/// A page whose `body` (HTML, escaped already) holds an element for each
/// run of `runs`, where the script draws that run's timelines, each with a
/// cursor of its own.
pub fn runs_page(title: &str, body: &str, runs: &[PageRun]) -> anyhow::Result<String> {
    #[derive(serde::Serialize)]
    struct PageRunJson<'a> {
        target: &'a str,
        label: &'a str,
        data: data::PageData,
    }
    #[derive(serde::Serialize)]
    struct Document<'a> {
        runs: Vec<PageRunJson<'a>>,
    }
    let document = Document {
        runs: runs
            .iter()
            .map(|run| PageRunJson {
                target: &run.target,
                label: &run.label,
                data: data::page_data(run.report),
            })
            .collect(),
    };
    Ok(assemble(title, body, &serde_json::to_string(&document)?))
}

/// `report.html` of a run's results folder, with its CI bounds' verdicts.
pub fn run_page_file(
    report: &RunReport,
    bounds: &[ExpectationRecord],
) -> anyhow::Result<OutputFile> {
    Ok(OutputFile {
        name: REPORT_HTML.to_string(),
        bytes: run_page(report, bounds)?.into_bytes(),
    })
}

/// The page: `title` and `body` are HTML (escaped already), `data` the JSON
/// document the script reads. Pieces are joined once, never substituted
/// into one another, so no text can expand into markup or script.
fn assemble(title: &str, body: &str, data: &str) -> String {
    let uplot = uplot_script();
    let style = format!("{UPLOT_CSS}\n{PAGE_CSS}");
    let policy = format!(
        "default-src 'none'; script-src {} {} {}; style-src {}; \
         base-uri 'none'; form-action 'none'",
        csp_hash(ERRORS_JS),
        csp_hash(&uplot),
        csp_hash(APP_JS),
        csp_hash(&style),
    );
    let mut page = String::with_capacity(uplot.len() + data.len() + body.len() + 40_000);
    page.push_str(&head_start(title, &policy));
    page.push_str("\n<script>");
    page.push_str(ERRORS_JS);
    page.push_str("</script>\n<style>");
    page.push_str(&style);
    page.push_str("</style>\n</head>\n<body>\n");
    page.push_str(body);
    page.push_str("<aside id=\"readout\" aria-live=\"off\" hidden></aside>\n");
    page.push_str("<pre id=\"selftest\" hidden></pre>\n");
    page.push_str("<script type=\"application/json\" id=\"stallbench-data\">");
    page.push_str(&script_json(data));
    page.push_str("</script>\n<script>");
    page.push_str(&uplot);
    page.push_str("</script>\n<script>");
    page.push_str(APP_JS);
    page.push_str("</script>\n</body>\n</html>\n");
    page
}

/// A page's opening up to its `<title>` (`title` escaped here) under the
/// Content-Security-Policy `policy`; every page of the crate starts so.
fn head_start(title: &str, policy: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>",
        sections::escape(title)
    )
}

/// uPlot with its licence in front, in place of its banner (a comment
/// holding its project's address, the page's only URL otherwise).
fn uplot_script() -> String {
    let code = match UPLOT_JS.strip_prefix("/*!") {
        Some(_) => UPLOT_JS.split_once('\n').map_or(UPLOT_JS, |(_, code)| code),
        None => UPLOT_JS,
    };
    format!("/*! uPlot 1.6.32 (vendor/uplot)\n{UPLOT_LICENSE}\n*/\n{code}")
}

/// `json` safe inside a `<script>` element: `<`, `>` and `&` (which JSON has
/// only inside strings) and the line separators U+2028/2029 as escapes.
fn script_json(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// A CSP source that allows exactly `text` as an inline script or style.
fn csp_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[cfg(test)]
pub(crate) mod browser_tests;
#[cfg(test)]
mod tests;
