//! The results folder: the names of its files, a file rendered in memory
//! ([`OutputFile`]), and the one place such files touch the disk (creating the
//! folder, writing files into it).
//!
//! The renderers (`export`, `expect`) and the charts (`plot`) name their files
//! here; `config` reads the list to refuse a folder that holds an earlier run.
//! The file names are a contract: users and CI parse these files, so change
//! them only together with docs/reading-the-output.md's list of files.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::error::Error;

/// File name of the per-second timeline of every strategy.
pub const TIMELINE_CSV: &str = "timeline.csv";
/// File name of the list of DDL attempts of every strategy.
pub const ATTEMPTS_CSV: &str = "ddl_attempts.csv";
/// File name of the lock trace of every strategy's migration (locks per statement).
pub const DDL_LOCKS_CSV: &str = "ddl_locks.csv";
/// File name of the sampled lock queue (who waited for whom).
pub const LOCKS_CSV: &str = "locks.csv";
/// File name of the failed transactions by strategy, second and kind.
pub const FAILURES_CSV: &str = "failures.csv";
/// File name of the one-row-per-strategy summary table.
pub const SUMMARY_CSV: &str = "summary.csv";
/// File name of the summary with the workload name, as JSON.
pub const SUMMARY_JSON: &str = "summary.json";
/// File name of the summary for people, as Markdown.
pub const SUMMARY_MD: &str = "summary.md";
/// File name of the TPS-over-time chart.
pub const TIMELINE_PNG: &str = "timeline.png";
/// File name of the latency-by-percentile chart.
pub const LATENCY_PNG: &str = "latency.png";
/// File name of the p99-latency-over-time chart.
pub const LATENCY_TIMELINE_PNG: &str = "latency-timeline.png";
/// File name of the page a person opens: the verdict, the tables and the interactive timelines.
pub const REPORT_HTML: &str = "report.html";
/// A screenshot of `report.html` (`scripts/report-screenshot.sh`), kept in the README's example folder.
pub const REPORT_PNG: &str = "report.png";
/// The application pool's chart, written only for a run with the pool.
pub const POOL_PNG: &str = "pool.png";
/// File name of a sweep's figures, one row per value and strategy.
pub const SWEEP_CSV: &str = "sweep.csv";
/// File name of a sweep's chart: stall and migration time against the value.
pub const SWEEP_PNG: &str = "sweep.png";
/// File name of the description of the run.
pub const RUN_JSON: &str = "run.json";
/// File name of the resolved workload.
pub const WORKLOAD_TOML: &str = "workload.toml";
/// File name of the expectation results.
pub const EXPECTATIONS_CSV: &str = "expectations.csv";
/// File name of the expectation results as a JUnit report, for CI test viewers.
pub const JUNIT_XML: &str = "junit.xml";
/// File name of the pull-request comment, the verdict first, for a CI step to post.
pub const PR_COMMENT_MD: &str = "pr-comment.md";
/// The throwaway server's log: the name the server writes it under, and the
/// name the results folder keeps it under (`Database::copy_server_log`).
pub const SERVER_LOG: &str = "server.log";
/// The hot standby's log, as the results folder keeps it (its recovery
/// conflicts name the report that held replay up).
pub const REPLICA_SERVER_LOG: &str = "replica-server.log";

/// File name of `check`'s report for a pull request (Markdown, its verdict first).
pub const CHECK_MD: &str = "check.md";
/// File name of `check`'s report as JSON.
pub const CHECK_JSON: &str = "check.json";
/// File name of `check`'s figures, one row per migration and strategy.
pub const CHECK_CSV: &str = "check.csv";

/// The files `check` writes beside its migrations' folders (`junit.xml` too).
const CHECK_FILE_NAMES: [&str; 4] = [CHECK_MD, CHECK_JSON, CHECK_CSV, JUNIT_XML];

/// Every fixed file name a run writes; `latency-<strategy>.hgrm` and `.hlog` come on top.
const RUN_FILE_NAMES: [&str; 23] = [
    TIMELINE_CSV,
    ATTEMPTS_CSV,
    DDL_LOCKS_CSV,
    LOCKS_CSV,
    FAILURES_CSV,
    SUMMARY_CSV,
    SUMMARY_JSON,
    SUMMARY_MD,
    TIMELINE_PNG,
    LATENCY_PNG,
    LATENCY_TIMELINE_PNG,
    POOL_PNG,
    RUN_JSON,
    WORKLOAD_TOML,
    EXPECTATIONS_CSV,
    JUNIT_XML,
    PR_COMMENT_MD,
    SERVER_LOG,
    REPLICA_SERVER_LOG,
    SWEEP_CSV,
    SWEEP_PNG,
    REPORT_HTML,
    REPORT_PNG,
];

/// One file of a results folder, rendered in memory.
pub struct OutputFile {
    /// File name inside the results folder, e.g. `timeline.csv`.
    pub name: String,
    /// The whole file.
    pub bytes: Vec<u8>,
}

/// The name of the `.hgrm` file of `strategy`: `latency-<strategy>.hgrm`.
pub fn hgrm_file_name(strategy: &str) -> String {
    latency_file_name(strategy, "hgrm")
}

/// `latency-<strategy>.<extension>`, with any character of the strategy name other
/// than letters, digits, `-`, `_` and `.` replaced by `_`.
pub fn latency_file_name(strategy: &str, extension: &str) -> String {
    let safe: String = strategy
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("latency-{safe}.{extension}")
}

/// Whether a run (or a check) writes a file of this name.
pub fn is_run_file(name: &str) -> bool {
    let per_strategy =
        name.starts_with("latency-") && (name.ends_with(".hgrm") || name.ends_with(".hlog"));
    per_strategy || RUN_FILE_NAMES.contains(&name) || CHECK_FILE_NAMES.contains(&name)
}

/// The files of `dir` that a run writes, sorted by name; none if `dir` does not exist.
pub fn earlier_run_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if entry.file_type()?.is_file() && is_run_file(&name.to_string_lossy()) {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

/// Creates the results folder `dir` (and its parents), removes the files of an
/// earlier run that `--force` replaces (`replaced_files`), and writes `first_files`
/// into it; whether this call made the folder (for [`remove_unmeasured`]).
/// Called once the target is ready, so a run that fails before leaves no
/// folder; a folder this call made is removed again if the first files cannot be written.
pub fn create_results_folder(
    dir: &Path,
    replaced_files: &[PathBuf],
    first_files: &[OutputFile],
) -> Result<bool, Error> {
    let existed = dir.exists();
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "creating the results folder {}; choose another with --out DIR",
            dir.display()
        )
    })?;
    for file in replaced_files {
        match std::fs::remove_file(file) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::runtime(format!(
                    "removing {} of an earlier run (--force): {err}; remove it by hand",
                    file.display()
                )));
            }
            _ => {}
        }
    }
    let written = write_files(dir, first_files);
    if written.is_err() && !existed {
        // Only an empty folder goes: remove_dir refuses one that holds anything.
        let _ = std::fs::remove_dir(dir);
    }
    written?;
    Ok(!existed)
}

/// Undoes [`create_results_folder`] for a run that failed before it measured
/// anything: removes the folder if that call `created` it, else only the
/// files a run writes (the folder was there before, and what else it holds is
/// the user's).
pub fn remove_unmeasured(dir: &Path, created: bool) -> std::io::Result<()> {
    if created {
        return std::fs::remove_dir_all(dir);
    }
    for file in earlier_run_files(dir)? {
        std::fs::remove_file(file)?;
    }
    Ok(())
}

/// Creates `dir` and its parents if needed.
pub fn create_folder(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating results folder {}", dir.display()))
}

/// Writes rendered files into `dir` (the one place rendered files touch the disk).
/// Every error names the file: `writing results/x/timeline.csv: ...`.
pub fn write_files(dir: &Path, files: &[OutputFile]) -> anyhow::Result<()> {
    for file in files {
        let path = dir.join(&file.name);
        std::fs::write(&path, &file.bytes)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_the_example_folder_is_a_run_file() {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/example");
        for entry in std::fs::read_dir(example).unwrap() {
            let name = entry.unwrap().file_name();
            assert!(is_run_file(&name.to_string_lossy()), "{name:?}");
        }
    }

    #[test]
    fn a_folder_left_empty_by_a_failed_write_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("new");
        let unwritable = OutputFile {
            name: "no-such-folder/run.json".into(),
            bytes: Vec::new(),
        };
        assert!(create_results_folder(&out, &[], &[unwritable]).is_err());
        assert!(!out.exists());
    }

    #[test]
    fn a_run_that_measured_nothing_leaves_no_folder_and_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let run_json = || OutputFile {
            name: RUN_JSON.into(),
            bytes: b"{}".to_vec(),
        };
        let made = dir.path().join("new/results");
        assert!(create_results_folder(&made, &[], &[run_json()]).unwrap());
        remove_unmeasured(&made, true).unwrap();
        assert!(!made.exists());

        let existing = dir.path().join("existing");
        std::fs::create_dir(&existing).unwrap();
        std::fs::write(existing.join("notes.txt"), "mine").unwrap();
        assert!(!create_results_folder(&existing, &[], &[run_json()]).unwrap());
        remove_unmeasured(&existing, false).unwrap();
        let left: Vec<_> = std::fs::read_dir(&existing)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(left, ["notes.txt"]);
    }

    #[test]
    fn hgrm_file_names_are_safe() {
        assert_eq!(hgrm_file_name("naive"), "latency-naive.hgrm");
        assert_eq!(
            hgrm_file_name("lock timeout/2"),
            "latency-lock_timeout_2.hgrm"
        );
    }
}
