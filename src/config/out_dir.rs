//! The results folder (`--out`): decided once, before anything runs, so that a
//! folder never mixes the files of two runs. A CI job that reuses
//! `--out results/ci` would otherwise publish an earlier run's charts beside
//! the new ones. An earlier run's files are refused unless `--force`, which
//! replaces them and never touches the user's other files.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::Error;
use crate::results::earlier_run_files;

/// Where a run writes its files, as `Config::new` decided it.
#[derive(Debug)]
pub(crate) struct OutDir {
    pub(crate) dir: PathBuf,
    /// Files of an earlier run in `dir` that `--force` replaces; empty without `--force`.
    pub(crate) replaced_files: Vec<PathBuf>,
}

/// `--out` (refused if it holds an earlier run's files, unless `force`), else
/// `results/<workload>-<UTC timestamp>`, which is never refused.
pub(crate) fn parse_out_dir(
    out: Option<&Path>,
    force: bool,
    workload: &str,
) -> Result<OutDir, Error> {
    let Some(dir) = out else {
        return Ok(OutDir {
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
    Ok(OutDir {
        dir: dir.to_path_buf(),
        replaced_files: earlier,
    })
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
    fn an_earlier_run_is_refused_and_force_replaces_only_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("ci");
        let fresh = parse_out_dir(Some(&out), false, "w").unwrap();
        assert!(fresh.replaced_files.is_empty());
        std::fs::create_dir(&out).unwrap();
        for name in ["timeline.csv", "latency-retry.hgrm", "notes.txt"] {
            std::fs::write(out.join(name), "x").unwrap();
        }

        let message = parse_out_dir(Some(&out), false, "w")
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

        let forced = parse_out_dir(Some(&out), true, "w").unwrap();
        let run_json = crate::results::OutputFile {
            name: "run.json".into(),
            bytes: b"{}".to_vec(),
        };
        crate::results::create_results_folder(&out, &forced.replaced_files, &[run_json]).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["notes.txt", "run.json"]);
    }

    #[test]
    fn a_file_is_not_a_results_folder() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out");
        std::fs::write(&file, "x").unwrap();
        let message = parse_out_dir(Some(&file), false, "w")
            .unwrap_err()
            .to_string();
        assert!(message.ends_with("is a file, not a folder; choose a folder"));
    }
}
