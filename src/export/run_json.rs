//! `run.json`: what was run, so a results folder explains itself later: the
//! resolved config, the target, the server and tool versions (no passwords:
//! the target is its description, never the connection string).
//!
//! The fields are in alphabetical order because the file has always listed its
//! keys that way (it was built as a sorted JSON map); keep new fields in order.
//!
//! A run stopped early writes the file again with `interrupted` (why, and the
//! strategy it cut short) and `not_run`; a finished run's file has neither key.

use anyhow::Context;
use serde::Serialize;

use crate::choices::LoadLoop;
use crate::config::{BlockerConfig, BlockerKind, Config, DdlConfig, Objects, WeightedScript};
#[cfg(doc)]
use crate::engine::postgres::database::Database;
use crate::metrics::RunReport;
use crate::strategy::NamedStrategy;

use crate::results::{OutputFile, RUN_JSON};

/// The layout of `run.json`.
#[derive(Debug, Serialize)]
pub struct RunFile<'a> {
    /// `--in-place --allow-writes`: the load could write the user's rows; absent otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_writes: bool,
    pub blocker: Option<BlockerRecord<'a>>,
    pub client_timeout_ms: Option<f64>,
    pub clients: u32,
    pub ddl: Option<DdlRecord<'a>>,
    pub description: &'a str,
    pub duration_s: f64,
    /// `rollback` (`--in-place`: every DDL step rolled back) or `apply`
    /// (`--in-place --apply`); absent for the harness's own schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_place: Option<&'static str>,
    /// Set when the run was stopped before its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<InterruptedRecord>,
    pub latency_limit_ms: Option<f64>,
    /// `closed` (each client sends its next transaction when the last ended)
    /// or `open` (`--rate`: on a schedule): what the latency percentiles can
    /// show of a stall.
    #[serde(rename = "loop")]
    pub load_loop: LoadLoop,
    /// The strategies that did not start because the run was stopped before them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
    /// The application pool (`--pool-size`); absent for the lean connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolRecord>,
    pub rate_tps: Option<f64>,
    /// The hot standby beside the throwaway server and who ran on it; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica: Option<ReplicaRecord<'a>>,
    /// How many times each strategy ran, interleaved (`--repeat`); absent for once.
    #[serde(skip_serializing_if = "ran_once")]
    pub repeat: u32,
    pub scripts: Vec<ScriptRecord<'a>>,
    pub seed: u64,
    /// How long the throwaway server took to start (initdb until it accepted
    /// connections), in seconds; absent on `--db-url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_start_s: Option<f64>,
    /// `SHOW server_version`: the exact release, e.g. `13.23` or `15.14 (Debian 15.14-0+deb12u1)`.
    pub server_version: &'a str,
    pub strategies: Vec<StrategyRecord>,
    /// The setting `--sweep` varied and its values; absent without a sweep
    /// (and in the folder of one of its values).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepSection>,
    /// Where the run went: the throwaway server or the server of `--db-url`.
    pub target: &'a str,
    pub tool: &'static str,
    pub tool_version: &'static str,
    /// `[name, value]` pairs of `--set`.
    pub variables: &'a [(String, String)],
    pub workload: &'a str,
}

/// Whether the strategies ran once each, as without `--repeat`.
fn ran_once(repeat: &u32) -> bool {
    *repeat == 1
}

/// The replica's placements and settings, in `run.json`.
#[derive(Debug, Serialize)]
pub struct ReplicaRecord<'a> {
    /// `primary` or `replica`.
    pub blocker_on: &'static str,
    pub load_on: &'static str,
    /// The standby's own settings, `name=value`.
    pub standby_settings: &'a [String],
    /// `--replica-url` without its password; absent for the throwaway's standby.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The application pool's settings, in `run.json`.
#[derive(Debug, Serialize)]
pub struct PoolRecord {
    pub connect_timeout_ms: f64,
    pub max_in_flight: Option<u32>,
    /// `fast` or `verified`.
    pub recycling: &'static str,
    pub size: u32,
    /// The wait for a connection (`--pool-timeout`).
    pub timeout_ms: f64,
}

/// Why a run stopped before its end, in `run.json`.
#[derive(Debug, Serialize)]
pub struct InterruptedRecord {
    pub reason: String,
    /// The strategy cut short (written up to its last whole second); none if
    /// the run stopped between strategies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
}

/// The blocker of `run.json`.
#[derive(Debug, Serialize)]
pub struct BlockerRecord<'a> {
    pub at_s: f64,
    pub hold_s: f64,
    pub kind: BlockerKind,
    pub sql: &'a str,
}

/// The migration of `run.json`.
#[derive(Debug, Serialize)]
pub struct DdlRecord<'a> {
    pub at_s: f64,
    pub steps: &'a [String],
}

/// One load script of `run.json` with its weight.
#[derive(Debug, Serialize)]
pub struct ScriptRecord<'a> {
    pub name: &'a str,
    pub weight: u32,
}

/// The sweep of `run.json`.
#[derive(Debug, Serialize)]
pub struct SweepSection {
    /// The setting as `--sweep` names it, e.g. `retry.lock_timeout`.
    pub name: String,
    /// Its values in the order they ran; each has a folder of its own.
    pub values: Vec<String>,
}

/// One strategy of `run.json`: its name and a one-line description.
#[derive(Debug, Serialize)]
pub struct StrategyRecord {
    pub name: String,
    pub strategy: String,
}

impl<'a> RunFile<'a> {
    /// The description of a run of `config` against `target` (its
    /// [`Database::description`]) running PostgreSQL `server_version`.
    pub fn new(config: &'a Config, target: &'a str, server_version: &'a str) -> RunFile<'a> {
        let load = &config.load;
        RunFile {
            allow_writes: config.objects.counts_writes(),
            blocker: config.blocker.as_ref().map(BlockerRecord::new),
            client_timeout_ms: load
                .client_timeout
                .map(|timeout| timeout.as_secs_f64() * 1000.0),
            clients: load.clients,
            ddl: config.ddl.as_ref().map(DdlRecord::new),
            description: &config.description,
            duration_s: load.duration.as_secs_f64(),
            in_place: match config.objects {
                Objects::OwnSchema | Objects::OwnDatabase => None,
                Objects::InPlace { apply: false, .. } => Some("rollback"),
                Objects::InPlace { apply: true, .. } => Some("apply"),
            },
            interrupted: None,
            latency_limit_ms: load.latency_limit.map(|limit| limit.as_secs_f64() * 1000.0),
            load_loop: LoadLoop::of_rate(load.rate_tps),
            not_run: Vec::new(),
            pool: load.pool.as_ref().map(|pool| PoolRecord {
                connect_timeout_ms: pool.connect_timeout.as_secs_f64() * 1000.0,
                max_in_flight: pool.max_in_flight,
                recycling: pool.recycling.name(),
                size: pool.size,
                timeout_ms: pool.wait_timeout.as_secs_f64() * 1000.0,
            }),
            rate_tps: load.rate_tps,
            replica: config.replica.as_ref().map(|replica| ReplicaRecord {
                blocker_on: replica.blocker_on.name(),
                load_on: replica.load_on.name(),
                standby_settings: &replica.standby_settings,
                url: replica
                    .url
                    .as_deref()
                    .map(crate::engine::postgres::database::redact_url),
            }),
            repeat: config.repeat,
            scripts: load.scripts.iter().map(ScriptRecord::new).collect(),
            seed: config.seed,
            server_start_s: None,
            server_version,
            strategies: config.strategies.iter().map(StrategyRecord::new).collect(),
            sweep: config.sweep.as_ref().map(|sweep| SweepSection {
                name: sweep.name(),
                values: sweep.values.clone(),
            }),
            target,
            tool: "stallbench",
            tool_version: env!("CARGO_PKG_VERSION"),
            variables: &load.variables,
            workload: &config.workload_name,
        }
    }

    /// The file of a run stopped by `error` after `report`'s runs: the one
    /// marked interrupted in its summary is named with its reason (else the
    /// reason is `error`), the runs missing from `report` are listed as not run
    /// (`retry`, with repeats `retry (repeat 3)`).
    pub fn stopped_early(self, report: &RunReport, error: &str) -> RunFile<'a> {
        let interrupted = report
            .strategies
            .iter()
            .find(|strategy| !strategy.summary.interrupted.is_empty());
        let mut not_run = Vec::new();
        for repeat in 1..=self.repeat {
            for planned in &self.strategies {
                let ran = report
                    .strategies
                    .iter()
                    .any(|run| run.strategy == planned.name && run.repeat() == repeat);
                if !ran {
                    not_run.push(match self.repeat {
                        1 => planned.name.clone(),
                        _ => format!("{} (repeat {repeat})", planned.name),
                    });
                }
            }
        }
        RunFile {
            interrupted: Some(InterruptedRecord {
                reason: interrupted
                    .map_or(error, |strategy| &strategy.summary.interrupted)
                    .to_string(),
                strategy: interrupted.map(|strategy| match self.repeat {
                    1 => strategy.strategy.clone(),
                    _ => format!("{} (repeat {})", strategy.strategy, strategy.repeat()),
                }),
            }),
            not_run,
            ..self
        }
    }

    /// The sweep's own file of a sweep stopped by `error`: the reason, and the
    /// values not started (`lock_timeout=2s`) as not run; each started value's
    /// folder says what of it ran.
    pub fn sweep_stopped(self, error: &str, not_started: Vec<String>) -> RunFile<'a> {
        RunFile {
            interrupted: Some(InterruptedRecord {
                reason: error.to_string(),
                strategy: None,
            }),
            not_run: not_started,
            ..self
        }
    }

    /// The whole file, pretty-printed with a final newline.
    pub fn render(&self) -> anyhow::Result<OutputFile> {
        let mut bytes =
            serde_json::to_vec_pretty(self).with_context(|| format!("encoding {RUN_JSON}"))?;
        bytes.push(b'\n');
        Ok(OutputFile {
            name: RUN_JSON.to_string(),
            bytes,
        })
    }
}

impl<'a> BlockerRecord<'a> {
    fn new(blocker: &'a BlockerConfig) -> BlockerRecord<'a> {
        BlockerRecord {
            at_s: blocker.at.as_secs_f64(),
            hold_s: blocker.hold.as_secs_f64(),
            kind: blocker.kind,
            sql: &blocker.sql,
        }
    }
}

impl<'a> DdlRecord<'a> {
    fn new(ddl: &'a DdlConfig) -> DdlRecord<'a> {
        DdlRecord {
            at_s: ddl.at.as_secs_f64(),
            steps: &ddl.steps,
        }
    }
}

impl<'a> ScriptRecord<'a> {
    fn new(weighted: &'a WeightedScript) -> ScriptRecord<'a> {
        ScriptRecord {
            name: &weighted.script.name,
            weight: weighted.weight,
        }
    }
}

impl StrategyRecord {
    fn new(strategy: &NamedStrategy) -> StrategyRecord {
        StrategyRecord {
            name: strategy.name.clone(),
            strategy: strategy.describe(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::compare_config;

    /// Renders run.json for `folder` (under results/) from `flags`, with the
    /// seed and the server's start time of the run kept there (facts of that
    /// run, not of the command); returns it with the kept file.
    fn rerendered(folder: &str, flags: &[&str]) -> (String, String) {
        let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("results")
            .join(folder)
            .join(RUN_JSON);
        let example = std::fs::read_to_string(example).unwrap();
        let kept = serde_json::from_str::<serde_json::Value>(&example).unwrap();
        let seed = kept["seed"].to_string();
        let mut args = vec!["stallbench", "compare"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--seed", &seed]);
        let file = RunFile {
            server_start_s: kept["server_start_s"].as_f64(),
            ..RunFile::new(
                &compare_config(&args),
                kept["target"].as_str().unwrap(),
                "15.18 (Debian 15.18-0+deb12u1)",
            )
        }
        .render()
        .unwrap();
        assert_eq!(file.name, RUN_JSON);
        (String::from_utf8(file.bytes).unwrap(), example)
    }

    #[test]
    fn the_example_run_json_renders_again_byte_for_byte() {
        let (rendered, example) = rerendered("example", &["add-column"]);
        assert_eq!(rendered, example);
    }

    #[test]
    fn the_replica_example_run_json_renders_again_byte_for_byte() {
        let (rendered, example) = rerendered("example-replica", &["replica-report"]);
        assert_eq!(rendered, example);
        assert!(
            example.contains("with a hot standby (basebackup)"),
            "{example}"
        );
    }

    #[test]
    fn the_pool_example_run_json_renders_again_byte_for_byte() {
        let flags = ["--rate", "200", "--pool-size", "10", "--pool-timeout", "1s"];
        let (rendered, example) = rerendered("example-pool", &flags);
        assert_eq!(rendered, example);
    }

    #[test]
    fn a_stopped_run_names_the_interrupted_strategy_and_those_not_run() {
        let config = compare_config(&["stallbench", "compare", "add-column"]);
        let facts = crate::metrics::RunFacts {
            interrupted: Some("Ctrl-C (SIGINT)".to_string()),
            ..Default::default()
        };
        let empty = crate::metrics::new_latency_histogram();
        let summary = crate::metrics::summarize("naive", &[], &[], None, &empty, &facts);
        let report = RunReport {
            workload: "add-column".to_string(),
            strategies: vec![crate::metrics::StrategyReport::from_summary(summary)],
            interruption: None,
            load_on: crate::choices::LoadOn::Primary,
            load_loop: crate::choices::LoadLoop::Closed,
        };
        let file = RunFile::new(&config, "throwaway server", "15.18")
            .stopped_early(
                &report,
                "interrupted by Ctrl-C (SIGINT); results so far are in x",
            )
            .render()
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&file.bytes).unwrap();
        assert_eq!(
            json["interrupted"],
            serde_json::json!({"reason": "Ctrl-C (SIGINT)", "strategy": "naive"})
        );
        assert_eq!(json["not_run"], serde_json::json!(["retry"]));

        let before_any = RunReport {
            workload: "add-column".to_string(),
            strategies: Vec::new(),
            interruption: None,
            load_on: crate::choices::LoadOn::Primary,
            load_loop: crate::choices::LoadLoop::Closed,
        };
        let file = RunFile::new(&config, "throwaway server", "15.18")
            .stopped_early(&before_any, "setup SQL failed")
            .render()
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&file.bytes).unwrap();
        assert_eq!(
            json["interrupted"],
            serde_json::json!({"reason": "setup SQL failed"})
        );
        assert_eq!(json["not_run"], serde_json::json!(["naive", "retry"]));
    }
}
