//! The results folder (`--out`): decided once, before anything runs, so that a
//! folder never mixes the files of two runs. A CI job that reuses
//! `--out results/ci` would otherwise publish an earlier run's charts beside
//! the new ones. An earlier run's files are refused unless `--force`, which
//! replaces them and never touches the user's other files.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::Context;

use crate::error::Error;
use crate::expect::{EXPECTATIONS_CSV, JUNIT_XML};
use crate::export::run_json::RUN_JSON;
use crate::export::workload_toml::WORKLOAD_TOML;
use crate::export::{
    self, ATTEMPTS_CSV, FAILURES_CSV, LATENCY_PNG, LATENCY_TIMELINE_PNG, LOCKS_CSV, OutputFile,
    POOL_PNG, SUMMARY_CSV, SUMMARY_JSON, SUMMARY_MD, TIMELINE_CSV, TIMELINE_PNG,
};

/// The throwaway server's log as the results folder keeps it (`Target::copy_server_log`).
const SERVER_LOG: &str = "server.log";

/// Every fixed file name a run writes; `latency-<strategy>.hgrm` and `.hlog` come on top.
const RUN_FILE_NAMES: [&str; 16] = [
    TIMELINE_CSV,
    ATTEMPTS_CSV,
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
    SERVER_LOG,
];

/// Where a run writes its files, as `Config::new` decided it.
#[derive(Debug)]
pub(super) struct OutputConfig {
    pub(super) dir: PathBuf,
    /// Files of an earlier run in `dir` that `--force` replaces; empty without `--force`.
    pub(super) replaced_files: Vec<PathBuf>,
}

/// `--out` (refused if it holds an earlier run's files, unless `force`), else
/// `results/<workload>-<UTC timestamp>`, which is never refused.
pub(super) fn parse_output(
    out: Option<&Path>,
    force: bool,
    workload: &str,
) -> Result<OutputConfig, Error> {
    let Some(dir) = out else {
        return Ok(OutputConfig {
            dir: unused_folder(default_out_dir(workload, SystemTime::now())),
            replaced_files: Vec::new(),
        });
    };
    let given = format!("--out {}", dir.display());
    if dir.exists() && !dir.is_dir() {
        return Err(Error::bad_input(format!(
            "{given}: is a file, not a folder; choose a folder"
        )));
    }
    let earlier = earlier_run_files(dir)
        .map_err(|err| Error::bad_input(format!("{given}: cannot list it: {err}")))?;
    if !earlier.is_empty() && !force {
        let names: Vec<String> = earlier
            .iter()
            .filter_map(|path| path.file_name())
            .map(|name| name.to_string_lossy().into_owned())
            .collect();
        return Err(Error::bad_input(format!(
            "{given}: holds files of an earlier run ({}); \
             choose another folder or add --force to replace them",
            names.join(", ")
        )));
    }
    Ok(OutputConfig {
        dir: dir.to_path_buf(),
        replaced_files: earlier,
    })
}

/// Creates the results folder `dir` (and its parents), removes the files of an
/// earlier run that `--force` replaces (`replaced_files`), and writes `first_files`
/// into it. Called once the target is ready, so a run that fails before leaves no
/// folder; a folder this call made is removed again if the first files cannot be written.
pub fn create_results_folder(
    dir: &Path,
    replaced_files: &[PathBuf],
    first_files: &[OutputFile],
) -> Result<(), Error> {
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
    let written = export::write_files(dir, first_files);
    if written.is_err() && !existed {
        // Only an empty folder goes: remove_dir refuses one that holds anything.
        let _ = std::fs::remove_dir(dir);
    }
    Ok(written?)
}

/// The files of `dir` that a run writes, sorted by name; none if `dir` does not exist.
fn earlier_run_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
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

/// Whether a run writes a file of this name.
fn is_run_file(name: &str) -> bool {
    let per_strategy =
        name.starts_with("latency-") && (name.ends_with(".hgrm") || name.ends_with(".hlog"));
    per_strategy || RUN_FILE_NAMES.contains(&name)
}

/// `results/<workload>-<UTC timestamp>`, e.g. `results/add-column-20261130T131913Z`.
fn default_out_dir(workload: &str, now: SystemTime) -> PathBuf {
    let stamp: String = humantime::format_rfc3339_seconds(now)
        .to_string()
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    Path::new("results").join(format!("{workload}-{stamp}"))
}

/// `dir`, or `dir-2`, `dir-3`, ... if it exists (two runs started in the same second).
fn unused_folder(dir: PathBuf) -> PathBuf {
    let mut candidate = dir.clone();
    let mut number = 2;
    while candidate.exists() {
        candidate = PathBuf::from(format!("{}-{number}", dir.display()));
        number += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn default_out_dir_has_workload_and_utc_stamp() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_000_000);
        let dir = default_out_dir("add-column", at);
        assert_eq!(dir, Path::new("results/add-column-20261130T005320Z"));
    }

    #[test]
    fn a_taken_default_folder_gets_a_number() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("add-column-20261130T005320Z");
        assert_eq!(unused_folder(dir.clone()), dir);
        std::fs::create_dir(&dir).unwrap();
        std::fs::create_dir(parent.path().join("add-column-20261130T005320Z-2")).unwrap();
        assert_eq!(
            unused_folder(dir),
            parent.path().join("add-column-20261130T005320Z-3")
        );
    }

    #[test]
    fn every_file_an_exporter_writes_is_a_run_file() {
        let report = crate::testing::reference_report();
        for exporter in crate::export::all_exporters() {
            for file in exporter.render(&report).unwrap() {
                assert!(is_run_file(&file.name), "{} is not listed", file.name);
            }
        }
    }

    #[test]
    fn every_file_of_the_example_folder_is_a_run_file() {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/example");
        for entry in std::fs::read_dir(example).unwrap() {
            let name = entry.unwrap().file_name();
            assert!(is_run_file(&name.to_string_lossy()), "{name:?}");
        }
    }

    #[test]
    fn an_earlier_run_is_refused_and_force_replaces_only_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("ci");
        let fresh = parse_output(Some(&out), false, "w").unwrap();
        assert!(fresh.replaced_files.is_empty());
        std::fs::create_dir(&out).unwrap();
        for name in ["timeline.csv", "latency-retry.hgrm", "notes.txt"] {
            std::fs::write(out.join(name), "x").unwrap();
        }

        let message = parse_output(Some(&out), false, "w")
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            format!(
                "--out {}: holds files of an earlier run (latency-retry.hgrm, timeline.csv); \
                 choose another folder or add --force to replace them",
                out.display()
            )
        );

        let forced = parse_output(Some(&out), true, "w").unwrap();
        let run_json = OutputFile {
            name: "run.json".into(),
            bytes: b"{}".to_vec(),
        };
        create_results_folder(&out, &forced.replaced_files, &[run_json]).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["notes.txt", "run.json"]);
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
    fn a_file_is_not_a_results_folder() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out");
        std::fs::write(&file, "x").unwrap();
        let message = parse_output(Some(&file), false, "w")
            .unwrap_err()
            .to_string();
        assert!(message.ends_with("is a file, not a folder; choose a folder"));
    }
}
