//! The run order of one `compare` or `run` as plain data, built once before
//! anything runs: every run as (sweep point, repeat, strategy). The server
//! starts and the data loads once for the whole plan; lib.rs walks the runs
//! in order, and the progress line ([`progress`]) reads where it is and what
//! is left from the same list.
//!
//! Within a point the repeats are interleaved (`naive, retry, naive, retry`),
//! each run after its reset, so that drift on the machine lands on every
//! strategy alike; the points run one after another, each complete before
//! the next, so a stopped sweep keeps whole points.

pub mod progress;

use std::path::Path;

use crate::cli::CommonArgs;
use crate::config::{Config, Mode, Sweep};
use crate::error::Error;
use crate::strategy::NamedStrategy;

/// Every run of a command and the configs they run with.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The config the command line built: its results folder holds the whole
    /// plan; it names the sweep and the repeats.
    pub base: Config,
    /// One point per sweep value, in order; without a sweep one point, the base config.
    pub points: Vec<Point>,
    /// Every run, in the order they run.
    pub runs: Vec<PlannedRun>,
}

/// One value of a sweep (or the one point of a plan without a sweep).
#[derive(Debug, Clone)]
pub struct Point {
    /// The sweep value as written; `None` without a sweep.
    pub value: Option<String>,
    /// The config of this value; its results folder is the value's folder.
    pub config: Config,
}

/// One run of one strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedRun {
    /// The index of its point in [`Plan::points`].
    pub point: usize,
    /// Which repeat of the strategy, from 1.
    pub repeat: u32,
    /// The index of the strategy in its point's config.
    pub strategy: usize,
    /// Its position among the runs of its point, from 0 (the seed's offset).
    pub index_in_point: usize,
}

impl Plan {
    /// The plan of a command line: its config, and with a sweep one config per
    /// value, each checked before anything runs (a bad value is exit 2 at once).
    pub fn new(workload_arg: Option<&str>, mode: Mode, args: &CommonArgs) -> Result<Plan, Error> {
        let base = Config::new(workload_arg, mode.clone(), args)?;
        let Some(sweep) = base.sweep.clone() else {
            return Ok(Plan::single(base));
        };
        // Every value runs with the base's seed, so the seed reruns the whole sweep.
        let args = CommonArgs {
            seed: Some(base.seed),
            ..args.clone()
        };
        let points = sweep
            .values
            .iter()
            .map(|value| {
                let out_dir = base.out_dir.join(sweep.folder(value));
                let config = Config::at_sweep_value(
                    workload_arg,
                    mode.clone(),
                    &args,
                    &sweep,
                    value,
                    out_dir,
                )?;
                Ok(Point {
                    value: Some(value.clone()),
                    config,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let runs = run_order(&points, base.repeat);
        Ok(Plan { base, points, runs })
    }

    /// The plan of one config: its strategies, each repeated as it says.
    pub fn single(config: Config) -> Plan {
        let points = vec![Point {
            value: None,
            config: config.clone(),
        }];
        let runs = run_order(&points, config.repeat);
        Plan {
            base: config,
            points,
            runs,
        }
    }

    /// The sweep, if the plan has one.
    pub fn sweep(&self) -> Option<&Sweep> {
        self.base.sweep.as_ref()
    }

    /// The config `run` runs with.
    pub fn config_of(&self, run: &PlannedRun) -> &Config {
        &self.points[run.point].config
    }

    /// The strategy `run` runs.
    pub fn strategy_of(&self, run: &PlannedRun) -> &NamedStrategy {
        &self.config_of(run).strategies[run.strategy]
    }

    /// The results folder of `run`'s point (the base folder without a sweep).
    pub fn out_dir_of(&self, run: &PlannedRun) -> &Path {
        &self.config_of(run).out_dir
    }

    /// The seed of `run`: the point's seed plus its position in the point, so
    /// that without repeats strategy `i` gets `seed + i` as it always did.
    pub fn seed_of(&self, run: &PlannedRun) -> u64 {
        self.config_of(run)
            .seed
            .wrapping_add(run.index_in_point as u64)
    }

    /// Where `run` stands, as the progress line says it: `sweep 3/6
    /// lock_timeout=250ms, retry, repeat 2/3` (without a sweep or repeats,
    /// those parts are left out: `retry`).
    pub fn describe(&self, run: &PlannedRun) -> String {
        let mut parts = Vec::new();
        if let (Some(sweep), Some(value)) = (self.sweep(), &self.points[run.point].value) {
            parts.push(format!(
                "sweep {}/{} {}",
                run.point + 1,
                self.points.len(),
                sweep.label(value)
            ));
        }
        parts.push(self.strategy_of(run).name.clone());
        if self.base.repeat > 1 {
            parts.push(format!("repeat {}/{}", run.repeat, self.base.repeat));
        }
        parts.join(", ")
    }
}

/// The runs of `points`, each point in turn, and within one its strategies
/// `repeats` times, interleaved: `naive 1, retry 1, naive 2, retry 2`.
pub fn run_order(points: &[Point], repeats: u32) -> Vec<PlannedRun> {
    let mut runs = Vec::new();
    for (point, Point { config, .. }) in points.iter().enumerate() {
        let mut index_in_point = 0;
        for repeat in 1..=repeats {
            for strategy in 0..config.strategies.len() {
                runs.push(PlannedRun {
                    point,
                    repeat,
                    strategy,
                    index_in_point,
                });
                index_in_point += 1;
            }
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::compare_config;

    fn plan(line: &[&str]) -> Plan {
        let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(line).unwrap();
        let crate::cli::Command::Compare {
            workload,
            strategies,
            common,
        } = cli.command
        else {
            panic!("not a compare: {line:?}");
        };
        Plan::new(workload.as_deref(), Mode::Compare { strategies }, &common).unwrap()
    }

    #[test]
    fn repeats_interleave_the_strategies() {
        let plan = Plan::single(compare_config(&["stallbench", "compare", "--repeat", "3"]));
        let order: Vec<(u32, &str)> = plan
            .runs
            .iter()
            .map(|run| (run.repeat, plan.strategy_of(run).name.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                (1, "naive"),
                (1, "retry"),
                (2, "naive"),
                (2, "retry"),
                (3, "naive"),
                (3, "retry")
            ]
        );
        let seed = plan.base.seed;
        let seeds: Vec<u64> = plan.runs.iter().map(|run| plan.seed_of(run)).collect();
        assert_eq!(seeds, (0..6).map(|i| seed + i).collect::<Vec<_>>());
        assert_eq!(plan.describe(&plan.runs[3]), "retry, repeat 2/3");
        let once = Plan::single(compare_config(&["stallbench", "compare"]));
        assert_eq!(once.runs.len(), 2);
        assert_eq!(once.describe(&once.runs[1]), "retry");
    }

    #[test]
    fn a_sweep_has_a_point_per_value_each_in_its_own_folder() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sweep");
        let plan = plan(&[
            "stallbench",
            "compare",
            "--sweep",
            "retry.lock_timeout=100ms,1s,3s",
            "--repeat",
            "2",
            "--seed",
            "7",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(plan.points.len(), 3);
        assert_eq!(plan.runs.len(), 12);
        let point = &plan.points[1];
        assert_eq!(point.value.as_deref(), Some("1s"));
        assert_eq!(point.config.out_dir, out.join("lock_timeout=1s"));
        assert_eq!(point.config.sweep, None);
        assert_eq!(point.config.seed, 7);
        assert_eq!(
            point.config.strategies[1].describe().split(',').next(),
            Some("lock-timeout-retry: lock_timeout 1s")
        );
        // naive is untouched.
        assert_eq!(point.config.strategies[0], plan.base.strategies[0]);
        assert_eq!(
            plan.describe(&plan.runs[7]),
            "sweep 2/3 lock_timeout=1s, retry, repeat 2/2"
        );
        assert_eq!(plan.sweep().unwrap().name(), "retry.lock_timeout");
    }

    #[test]
    fn every_value_is_checked_before_anything_runs() {
        let error = |line: &[&str]| {
            let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(line).unwrap();
            let crate::cli::Command::Compare { common, .. } = cli.command else {
                unreachable!()
            };
            Plan::new(
                None,
                Mode::Compare {
                    strategies: Vec::new(),
                },
                &common,
            )
            .unwrap_err()
            .to_string()
        };
        let message = error(&[
            "stallbench",
            "compare",
            "--sweep",
            "retry.lock_timeout=1s,0s",
        ]);
        assert!(
            message.contains("lock_timeout = 0 waits forever"),
            "{message}"
        );
        let message = error(&["stallbench", "compare", "--sweep", "naive.lock_timeout=1s"]);
        assert!(
            message.contains("naive has no single lock_timeout to vary"),
            "{message}"
        );
        let message = error(&["stallbench", "compare", "--sweep", "gitlab.lock_timeout=1s"]);
        assert!(
            message.contains("gitlab is not among the strategies that run (naive, retry)"),
            "{message}"
        );
        let message = error(&["stallbench", "compare", "--sweep", "clients=2,0"]);
        assert!(
            message.contains("--clients 0: need at least 1 client"),
            "{message}"
        );
        let message = error(&["stallbench", "compare", "--sweep", "blocker.hold=2s,30s"]);
        assert!(
            message.contains("holds 30 s, so it ends at 34 s"),
            "{message}"
        );
        let message = error(&["stallbench", "compare", "--repeat", "0"]);
        assert!(
            message.contains("--repeat 0: each strategy must run at least once"),
            "{message}"
        );
    }
}
