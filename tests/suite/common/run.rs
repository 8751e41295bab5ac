//! Running stallbench the ways the tests do (the binary, or `execute`
//! in-process) and reading its results folder back, so each test file states
//! its scenario and its assertions, not the plumbing.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Stdio;

use serde::de::DeserializeOwned;
use stallbench::config::Mode;
use stallbench::export::csv::TimelineRecord;
use stallbench::metrics::{RunReport, StrategyReport};

/// The binary with no `DATABASE_URL`, `GITHUB_STEP_SUMMARY` or `CI` (which
/// turns the progress line off) from the test's environment.
/// `STALLBENCH_PG_BIN` and `STALLBENCH_PG_VERSION` pass through: the throwaway
/// servers run the major they choose, as the tests' own servers do (see
/// [`super::server_binaries`]).
pub fn stallbench_command() -> assert_cmd::Command {
    let mut command = assert_cmd::Command::cargo_bin("stallbench").unwrap();
    command
        .env_remove("DATABASE_URL")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("CI");
    command
}

/// `stallbench SUBCOMMAND WORKLOAD --quiet --out OUT` (see [`stallbench_command`]);
/// the caller adds flags and asserts. `workload` is a file or a bundled name.
pub fn stallbench_quiet(
    subcommand: &str,
    workload: impl AsRef<OsStr>,
    out: &Path,
) -> assert_cmd::Command {
    let mut command = stallbench_command();
    command
        .arg(subcommand)
        .arg(workload)
        .args(["--quiet", "--out"])
        .arg(out);
    command
}

/// `stallbench run WORKLOAD --load-only --quiet` for `duration` against
/// `db_url` (or a throwaway server), writing into `out`, as a child process
/// with stderr piped (to start it, act meanwhile, then wait for it).
pub fn load_only_process(
    workload: &Path,
    db_url: Option<&str>,
    duration: &str,
    out: &Path,
) -> std::process::Command {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("stallbench"));
    command
        .env_remove("DATABASE_URL")
        .args(["run", workload.to_str().unwrap(), "--load-only", "--quiet"])
        .args(["--duration", duration]);
    if let Some(url) = db_url {
        command.args(["--db-url", url]);
    }
    command
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// What a finished command wrote to stdout, as text.
pub fn stdout_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(assert.get_output().stdout.clone()).expect("stdout is UTF-8")
}

/// Every row of a CSV file of a results folder, as its record type.
pub fn read_records<R: DeserializeOwned>(path: &Path) -> Vec<R> {
    csv::Reader::from_path(path)
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
        .deserialize()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// Seconds of `strategy` in a timeline.csv with no completed transaction.
pub fn zero_tps_seconds(timeline: &Path, strategy: &str) -> usize {
    read_records::<TimelineRecord>(timeline)
        .iter()
        .filter(|row| row.strategy == strategy && row.tps == 0)
        .count()
}

/// `compare` with the workload's own strategies.
pub fn compare_all() -> Mode {
    Mode::Compare {
        strategies: Vec::new(),
    }
}

/// `compare --strategies NAMES` (presets or the workload's own).
pub fn compare_only(names: &[&str]) -> Mode {
    Mode::Compare {
        strategies: names.iter().map(|name| name.to_string()).collect(),
    }
}

/// The report of the strategy called `name`; panics naming it when the run has none.
pub fn strategy_named<'a>(report: &'a RunReport, name: &str) -> &'a StrategyReport {
    report
        .strategies
        .iter()
        .find(|s| s.strategy == name)
        .unwrap_or_else(|| panic!("no strategy {name} in the report"))
}
