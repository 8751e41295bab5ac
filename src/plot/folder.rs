//! `stallbench plot DIR`: the charts and `report.html` of a results folder
//! drawn again from its files, without a database.

use std::path::Path;

use crate::error::Error;
use crate::metrics::RunReport;
use crate::{export, plot, results};

/// `stallbench plot DIR`: re-draws the charts and the page from the folder's
/// files; in a sweep's folder `sweep.png`, its page and the charts and page
/// of every value's folder.
pub fn redraw_charts(dir: &Path) -> Result<(), Error> {
    let bad_input = |err: anyhow::Error| Error::bad_input(format!("{err:#}"));
    let mut paths: Vec<String> = Vec::new();
    match export::sweep::read_records(dir).map_err(bad_input)? {
        Some(records) => {
            let sweep = export::sweep::sweep_of(&records).map_err(bad_input)?;
            let mut workload = String::new();
            for value in &sweep.values {
                let (drawn, report) = redraw_folder(&dir.join(sweep.folder(value)))?;
                paths.extend(drawn);
                workload = report.workload;
            }
            let path = dir.join(results::SWEEP_PNG);
            plot::draw_sweep(&records, &sweep, &path)?;
            export::html::pages::write_sweep_page(dir, &sweep, &workload, &records)
                .map_err(|err| Error::runtime(format!("{err:#}")))?;
            paths.push(path.display().to_string());
            paths.push(dir.join(results::REPORT_HTML).display().to_string());
        }
        None => paths.extend(redraw_folder(dir)?.0),
    }
    let (last, first) = paths
        .split_last()
        .expect("plot::draw_all draws at least one chart");
    stderrln!("wrote {} and {last}", first.join(", "));
    Ok(())
}

/// Re-draws the charts and the page of one results folder; the paths
/// written and the report read.
fn redraw_folder(dir: &Path) -> Result<(Vec<String>, RunReport), Error> {
    let report = export::read_report(dir).map_err(|err| Error::bad_input(format!("{err:#}")))?;
    let drawn = plot::draw_all(&report, dir)?;
    let bounds =
        export::read::read_expectations(dir).map_err(|err| Error::bad_input(format!("{err:#}")))?;
    let page = export::html::run_page_file(&report, &bounds)
        .map_err(|err| Error::runtime(format!("{err:#}")))?;
    results::write_files(dir, &[page]).map_err(|err| Error::runtime(format!("{err:#}")))?;
    let paths = (drawn.iter().copied())
        .chain([results::REPORT_HTML])
        .map(|name| dir.join(name).display().to_string())
        .collect();
    Ok((paths, report))
}
