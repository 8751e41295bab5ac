//! `stallbench check DIR`: the migration gate. Each new migration
//! of a project's migrations folder is traced (the locks each statement
//! takes, rewrites, scans) and measured under traffic, the way it is
//! deployed and the recommended way, with the same Database, Scenario,
//! RunReport and exporters as `compare`: one engine, two front doors.
//!
//! - [`migrations`]: reading a migrations folder (layouts, order, which
//!   migrations are new, statements and their transactions);
//! - [`rows`]: generating rows for the schema the earlier migrations built;
//! - [`fill`]: which tables get rows, the fill's connections, what it says;
//! - [`course`]: the check's course on one throwaway server (trace, design,
//!   measure, apply, migration by migration);
//! - [`design`]: a migration's trace -> the `Config` of its measured run;
//! - [`load_tables`]: `--load FILE.toml`'s tables must be in check's database;
//! - [`apply`]: a migration applied for real, for the next one;
//! - [`replay`]: the statement to blame for a break the failure's message does not name.
//!
//! What it found is the `check_verdict` stage's plain data (`check_verdict::checked`), judged
//! there (`check_verdict::verdict`, with `check_verdict::sizes` and `check_verdict::breakage`); its files
//! (`check.csv`, `check.json`, `junit.xml`, `check.md`, `pr-comment.md`,
//! `report.html`) are rendered by `export::check_report`; this module only
//! writes them and prints the verdict.

pub mod apply;
mod calibrate;
pub mod course;
pub mod design;
mod fill;
mod lengthen;
pub mod load_tables;
pub mod migrations;
pub mod replay;
pub mod rows;
mod runs;
pub mod scope;

use std::future::Future;
use std::time::Instant;

use crate::config::CheckConfig;
use crate::engine::postgres::check_verdict::phases::seconds;
use crate::error::Error;
use crate::export::check_report::phase_lines::phase_lines;
use crate::export::check_report::{CheckReport, check_md, check_page, pr_comment};
use crate::export::ci;
use crate::scenario::Interrupt;
use crate::stop::{self, Ending, StopCause};
use crate::{output, results};

use crate::engine::postgres::check_verdict::verdict::MigrationVerdict;

/// `stallbench check`: runs the check, writes its files, prints the verdict,
/// a line per migration and the page's name on stdout (`open` starts the
/// desktop's opener on it); exit code 3 when a migration breaks a budget as
/// deployed, else 0.
pub fn check(config: &CheckConfig, open: bool) -> Result<i32, Error> {
    let started = Instant::now();
    let existed = config.out_dir.exists();
    let result = stop::on_runtime(run_until_stopped(config, stop::stop_signal()));
    let run = match result.and_then(|run| run) {
        Ok(run) => run,
        Err(error) => {
            // The results folder made for this check, still empty: nothing to keep.
            if !existed {
                let _ = std::fs::remove_dir(&config.out_dir);
            }
            return Err(error);
        }
    };
    let reporting = Instant::now();
    let report = CheckReport::new(config, run);
    let exit_code = report.exit_code();
    write_report(config, report, (started, reporting))?;
    crate::opener::name_the_page(&config.out_dir, open)?;
    Ok(exit_code)
}

/// The check, unless `stop` (Ctrl-C, SIGTERM) comes first: then the run in
/// progress is ended, written up to its last whole second, and the stop is the error.
async fn run_until_stopped(
    config: &CheckConfig,
    stop: impl Future<Output = String>,
) -> Result<crate::engine::postgres::check_verdict::checked::CheckRun, Error> {
    let interrupt = Interrupt::default();
    let running = course::run_check(config, &interrupt);
    let never_fails = std::future::pending::<Error>();
    let reason = match stop::until_stopped(running, &interrupt, stop, never_fails).await {
        Ending::Finished(result) => return result,
        Ending::Stopped {
            cause: StopCause::Signal(reason),
            ..
        } => reason,
        Ending::Stopped {
            cause: StopCause::Failure(error),
            ..
        } => error.to_string(),
    };
    let measured = std::fs::read_dir(&config.out_dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.path().is_dir())
                .count()
        })
        .unwrap_or(0);
    let kept = match measured {
        0 => {
            // The folder made for the results, still empty.
            let _ = std::fs::remove_dir(&config.out_dir);
            "no migration was measured yet, so nothing was written".to_string()
        }
        count => format!(
            "the {count} migration{} measured so far {} in {}, each in its folder (no check.md: \
             run the check again to judge them)",
            if count == 1 { "" } else { "s" },
            if count == 1 { "is" } else { "are" },
            config.out_dir.display()
        ),
    };
    Err(Error::runtime(format!(
        "interrupted by {reason}; the server was stopped; {kept}"
    )))
}

/// Writes check.md, pr-comment.md, report.html, check.csv, check.json and junit.xml, appends check.md to
/// the GitHub step summary when `GITHUB_STEP_SUMMARY` is set, and prints the
/// verdict and one line per migration.
/// The report's time (`reporting` on) and the whole check's (`started` on)
/// are in check.json's phases, rendered last, and in the console's last lines.
fn write_report(
    config: &CheckConfig,
    mut report: CheckReport,
    (started, reporting): (Instant, Instant),
) -> Result<(), Error> {
    let report = &mut report;
    let mut files = vec![
        check_md::check_md(report),
        pr_comment::pr_comment(report),
        check_page::check_page(report)?,
    ];
    report.phases.report_s = seconds(reporting.elapsed());
    report.phases.total_s = seconds(started.elapsed());
    files.extend(report.files()?);
    results::create_folder(&config.out_dir)?;
    for replaced in &config.replaced_files {
        let _ = std::fs::remove_file(replaced);
    }
    results::write_files(&config.out_dir, &files)?;
    ci::append_to_step_summary(
        ci::github_step_summary_path().as_deref(),
        &check_md::check_text(report),
    )?;
    let mut lines = format!("{}\n", report.verdict_line().replace("**", ""));
    for (checked, judged) in &report.migrations {
        let not_measured = (judged.verdict == MigrationVerdict::NotMeasured)
            .then_some(judged.not_measured.as_ref())
            .flatten();
        let detail = (judged.invalid.iter())
            .chain(not_measured)
            .chain(&judged.flags)
            .chain(&judged.fixes)
            .chain(&judged.recommended)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("; ");
        let verdict = judged.verdict.words();
        lines.push_str(&match detail.is_empty() {
            true => format!("{verdict}  {}\n", checked.migration.name),
            false => format!("{verdict}  {}: {detail}\n", checked.migration.name),
        });
    }
    output::write_stdout(&lines)?;
    if !config.quiet {
        stderrln!("{}", phase_lines(&report.phases).trim_end());
        stderrln!(
            "report: {}",
            config.out_dir.join(crate::results::CHECK_MD).display()
        );
    }
    Ok(())
}
