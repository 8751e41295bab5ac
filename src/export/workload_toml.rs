//! `workload.toml`: the run's workload fully resolved, so a results folder
//! reruns itself (`stallbench compare results/<run>/workload.toml`) on another
//! machine. It is the workload file model (`workload.rs`) built from the
//! validated `Config`: flags folded in, scripts inlined as their text, every
//! strategy spelled out (presets too), durations as text the loader reads.
//! The target is not in it: no connection string, so no password.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;

use crate::choices::{LoadOn, Side};
use crate::config::Expectation;
use crate::config::{BlockerConfig, Config, DdlConfig, LoadConfig, Protocol, ReplicaConfig};
use crate::config::{Expected, Invariant, TRANSACTIONS, Variant, WeightedScript};
use crate::expect::bounds::ExpectFile;
use crate::strategy::{Backoff, Jitter, NamedStrategy, RetryPolicy, Schedule, Strategy};
use crate::workload::{
    BackoffFile, BlockerFile, DdlFile, InvariantFile, LoadFile, PoolFile, ScriptFile, StrategyFile,
    SweepFile, VariantFile, WorkloadFile,
};

use crate::results::{OutputFile, WORKLOAD_TOML};

/// `workload.toml` of a run of `config`: a comment saying how to rerun it, then the workload.
pub fn render(config: &Config) -> anyhow::Result<OutputFile> {
    let body = toml::to_string(&resolved_workload(config))
        .with_context(|| format!("encoding {WORKLOAD_TOML}"))?;
    let header = format!(
        "# The workload of this run with its flags folded in (written by stallbench {}).\n\
         # Rerun it: stallbench compare workload.toml [--db-url URL] [--seed {}]\n\
         # (--seed {} repeats this run's random script values and jitter).\n\n",
        env!("CARGO_PKG_VERSION"),
        config.seed,
        config.seed
    );
    Ok(OutputFile {
        name: WORKLOAD_TOML.to_string(),
        bytes: format!("{header}{body}").into_bytes(),
    })
}

/// The workload file that loads back into `config`'s workload. A load-only run
/// (no migration) lists no strategies, so it reruns with `run --load-only`.
pub fn resolved_workload(config: &Config) -> WorkloadFile {
    // A variant runs as a strategy of its name: written once, as its variant.
    let strategies = match config.ddl {
        Some(_) if config.variants.is_empty() => {
            config.strategies.iter().map(strategy_file).collect()
        }
        _ => Vec::new(),
    };
    WorkloadFile {
        name: config.workload_name.clone(),
        description: config.description.clone(),
        setup: config.setup_sql.clone(),
        reset: config.reset_sql.clone(),
        load: LoadFile {
            on: load_on(ReplicaConfig::load_on(config.replica.as_ref())),
            ..load_file(&config.load, config.repeat)
        },
        blocker: config.blocker.as_ref().map(|blocker| BlockerFile {
            on: on_replica(ReplicaConfig::blocker_on(config.replica.as_ref())),
            ..blocker_file(blocker)
        }),
        ddl: config.ddl.as_ref().map(ddl_file),
        strategies,
        variants: config.variants.iter().map(variant_file).collect(),
        invariants: config.invariants.iter().map(invariant_file).collect(),
        expect: expect_tables(config),
        sweep: config.sweep.as_ref().map(|sweep| SweepFile {
            name: sweep.name(),
            values: sweep.values.clone(),
        }),
        replica: config.replica.as_ref().map(|replica| replica.file.clone()),
    }
}

/// A duration as the loader reads it back exactly, e.g. `500ms`, `1m 30s`.
fn text(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}

/// A variant with its scripts inlined.
fn variant_file(variant: &Variant) -> VariantFile {
    VariantFile {
        name: variant.name.clone(),
        isolation: variant.isolation.map(|level| level.name().to_string()),
        max_tries: variant.max_tries,
        retry_lock_timeouts: variant.retry_lock_timeouts,
        scripts: variant.scripts.iter().flatten().map(script_file).collect(),
    }
}

fn invariant_file(invariant: &Invariant) -> InvariantFile {
    InvariantFile {
        name: invariant.name.clone(),
        sql: invariant.sql.clone(),
        expect: match &invariant.expected {
            Expected::Literal(text) => text.clone(),
            Expected::Transactions => TRANSACTIONS.to_string(),
        },
        counts: (invariant.counts != "anomalies").then(|| invariant.counts.clone()),
    }
}

/// A script inlined as its text.
fn script_file(weighted: &WeightedScript) -> ScriptFile {
    ScriptFile {
        name: Some(weighted.script.name.clone()),
        sql: Some(weighted.text.clone()),
        file: None,
        builtin: None,
        weight: weighted.weight,
    }
}

/// `[load]`, with `repeat` only when the strategies run more than once.
fn load_file(load: &LoadConfig, repeat: u32) -> LoadFile {
    LoadFile {
        clients: load.clients,
        duration: text(load.duration),
        scripts: load.scripts.iter().map(script_file).collect(),
        rate: load.rate_tps,
        client_timeout: load.client_timeout.map(text),
        latency_limit: load.latency_limit.map(text),
        max_tries: (load.max_tries != 1).then_some(load.max_tries),
        retry_lock_timeouts: load.retry_lock_timeouts.then_some(true),
        variables: load.variables.iter().cloned().collect(),
        protocol: (load.protocol != Protocol::default()).then(|| load.protocol.name().to_string()),
        pool: load.pool.as_ref().map(|pool| PoolFile {
            size: pool.size,
            timeout: Some(text(pool.wait_timeout)),
            connect_timeout: Some(text(pool.connect_timeout)),
            recycling: Some(pool.recycling.name().to_string()),
            max_in_flight: pool.max_in_flight,
        }),
        repeat: (repeat > 1).then_some(repeat),
        on: None,
    }
}

/// `on = "replica"` or `"both"`, or no key for the primary (the default).
fn load_on(load_on: LoadOn) -> Option<String> {
    load_on.on_replica().then(|| load_on.name().to_string())
}

/// `on = "replica"`, or no key for the primary (the default).
fn on_replica(side: Side) -> Option<String> {
    (side == Side::Replica).then(|| side.name().to_string())
}

fn blocker_file(blocker: &BlockerConfig) -> BlockerFile {
    BlockerFile {
        kind: Some(blocker.kind.name().to_string()),
        at: text(blocker.at),
        hold: text(blocker.hold),
        sql: blocker.sql.clone(),
        on: None,
    }
}

fn ddl_file(ddl: &DdlConfig) -> DdlFile {
    DdlFile {
        at: text(ddl.at),
        sql: None,
        steps: Some(ddl.steps.clone()),
    }
}

/// A strategy with its kind and every key it reads, so no preset is needed to load it.
fn strategy_file(named: &NamedStrategy) -> StrategyFile {
    let mut file = StrategyFile {
        name: named.name.clone(),
        ddl: named.ddl_steps.clone(),
        settings: (!named.settings.is_empty())
            .then(|| named.settings.iter().cloned().collect::<BTreeMap<_, _>>()),
        ..StrategyFile::default()
    };
    let kind = match &named.strategy {
        Strategy::Plain => "plain",
        Strategy::LockTimeoutRetry(retry) => {
            add_retry(&mut file, retry);
            "lock-timeout-retry"
        }
        Strategy::KillBlockers {
            grace,
            older_than,
            every,
        } => {
            file.grace = Some(text(*grace));
            file.older_than = Some(text(*older_than));
            file.every = Some(text(*every));
            "kill-blockers"
        }
        Strategy::KillLockHolders {
            lock_timeout,
            max_tries,
        } => {
            file.lock_timeout = Some(text(*lock_timeout));
            file.max_tries = Some(*max_tries);
            "kill-lock-holders"
        }
        Strategy::WaitForIdle { older_than, retry } => {
            file.older_than = Some(text(*older_than));
            add_retry(&mut file, retry);
            "wait-for-idle"
        }
        Strategy::ReplicaAware {
            older_than,
            wait_at_most,
            retry,
        } => {
            file.older_than = Some(text(*older_than));
            file.wait_at_most = Some(text(*wait_at_most));
            add_retry(&mut file, retry);
            "replica-aware"
        }
    };
    file.kind = Some(kind.to_string());
    file
}

fn add_retry(file: &mut StrategyFile, retry: &RetryPolicy) {
    file.statement_timeout = retry.statement_timeout.map(text);
    file.set_local = Some(retry.set_local);
    match &retry.schedule {
        Schedule::Uniform {
            lock_timeout,
            max_tries,
            backoff,
        } => {
            file.lock_timeout = Some(text(*lock_timeout));
            file.max_tries = Some(*max_tries);
            file.backoff = Some(backoff_file(backoff));
        }
        Schedule::Steps(steps) => {
            file.schedule = Some(
                steps
                    .iter()
                    .map(|step| (text(step.lock_timeout), text(step.sleep)))
                    .collect(),
            );
        }
    }
}

fn backoff_file(backoff: &Backoff) -> BackoffFile {
    match backoff {
        Backoff::Linear { step, cap } => BackoffFile {
            kind: "linear".to_string(),
            step: Some(text(*step)),
            base: None,
            cap: Some(text(*cap)),
            jitter: None,
        },
        Backoff::Exponential { base, cap, jitter } => BackoffFile {
            kind: "exponential".to_string(),
            step: None,
            base: Some(text(*base)),
            cap: Some(text(*cap)),
            jitter: Some(
                match jitter {
                    Jitter::None => "none",
                    Jitter::Full => "full",
                    Jitter::AddUpToHalf => "add-up-to-50%",
                }
                .to_string(),
            ),
        },
    }
}

/// `[expect.<strategy>]` tables holding every bound, those of `--expect` included,
/// of the strategies that ran (a bound on another names a strategy the file lacks).
fn expect_tables(config: &Config) -> BTreeMap<String, ExpectFile> {
    let ran = |expectation: &&Expectation| {
        config
            .strategies
            .iter()
            .any(|strategy| strategy.name == expectation.strategy)
    };
    let mut tables: BTreeMap<String, ExpectFile> = BTreeMap::new();
    for expectation in config.expectations.iter().filter(ran) {
        let table = tables.entry(expectation.strategy.clone()).or_default();
        table.insert(&expectation.bound);
    }
    tables
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command, compare_config};
    use crate::config::Mode;

    /// Writes `config`'s workload.toml into `dir` and loads it back as `compare` does.
    fn rerun(config: &Config, dir: &std::path::Path) -> (String, Config) {
        let file = render(config).unwrap();
        assert_eq!(file.name, WORKLOAD_TOML);
        let text = String::from_utf8(file.bytes).unwrap();
        let path = dir.join(WORKLOAD_TOML);
        std::fs::write(&path, &text).unwrap();
        let again = compare_config(&["stallbench", "compare", path.to_str().unwrap()]);
        (text, again)
    }

    /// The fields that make the run: everything but the target, folder and seed.
    fn assert_same_workload(before: &Config, after: &Config) {
        assert_eq!(after.workload_name, before.workload_name);
        assert_eq!(after.description, before.description);
        assert_eq!(after.setup_sql, before.setup_sql);
        assert_eq!(after.reset_sql, before.reset_sql);
        let (load, again) = (&before.load, &after.load);
        assert_eq!(again.clients, load.clients);
        assert_eq!(again.duration, load.duration);
        assert_eq!(again.rate_tps, load.rate_tps);
        assert_eq!(again.latency_limit, load.latency_limit);
        assert_eq!(again.client_timeout, load.client_timeout);
        assert_eq!(again.max_tries, load.max_tries);
        assert_eq!(again.retry_lock_timeouts, load.retry_lock_timeouts);
        assert_eq!(again.pool, load.pool);
        let sorted = |pairs: &[(String, String)]| {
            let mut pairs = pairs.to_vec();
            pairs.sort();
            pairs
        };
        assert_eq!(sorted(&again.variables), sorted(&load.variables));
        let scripts = |load: &LoadConfig| -> Vec<(String, u32, String)> {
            load.scripts
                .iter()
                .map(|s| (s.script.name.clone(), s.weight, s.text.clone()))
                .collect()
        };
        assert_eq!(scripts(again), scripts(load));
        // Where the SQL came from (flags, the file) is the one thing a rerun changes.
        let blocker = |config: &Config| {
            (config.blocker.clone()).map(|blocker| BlockerConfig {
                source: String::new(),
                ..blocker
            })
        };
        let ddl = |config: &Config| {
            (config.ddl.clone()).map(|ddl| DdlConfig {
                source: String::new(),
                ..ddl
            })
        };
        assert_eq!(blocker(after), blocker(before));
        assert_eq!(ddl(after), ddl(before));
        assert_eq!(after.strategies, before.strategies);
        let bounds = |config: &Config| {
            let mut bounds: Vec<(String, String, String)> = config
                .expectations
                .iter()
                .map(|e| (e.strategy.clone(), e.bound.key(), e.bound.limit_text()))
                .collect();
            bounds.sort();
            bounds
        };
        assert_eq!(bounds(after), bounds(before));
    }

    const WORKLOAD: &str = r#"
name = "everything"
description = "every key the model has"
setup = "CREATE TABLE t (id int PRIMARY KEY, note text);"
reset = "ALTER TABLE t DROP COLUMN IF EXISTS extra;"

[load]
clients = 3
duration = "9s"
rate = 120.5
client_timeout = "1s 500ms"
latency_limit = "250ms"
variables = { scale = "2" }

[[load.scripts]]
name = "inline"
sql = """
\\set id random(1, 100 * :scale)
SELECT note FROM t WHERE id = :id;
"""
weight = 3

[[load.scripts]]
file = "write.sql"

[blocker]
kind = "writer"
at = "2s"
hold = "4s"
sql = "UPDATE t SET note = 'x' WHERE id = 1"

[ddl]
at = "3s"
steps = ["ALTER TABLE t ADD COLUMN extra int", "ALTER TABLE t DROP COLUMN extra"]

[[strategies]]
name = "steps"
kind = "lock-timeout-retry"
schedule = [["100ms", "50ms"], ["1s", "2s"]]
set_local = true
statement_timeout = "30s"
settings = { idle_in_transaction_session_timeout = "2s" }
ddl = ["ALTER TABLE t ADD COLUMN extra int"]

[[strategies]]
name = "jittered"
kind = "wait-for-idle"
older_than = "750ms"
lock_timeout = "200ms"
max_tries = 4
backoff = { kind = "exponential", base = "100ms", cap = "2s", jitter = "add-up-to-50%" }

[expect.steps]
max_p99_ms = 600
ddl_outcome = "ok"
"#;

    #[test]
    fn a_resolved_config_reruns_from_its_workload_toml() {
        let dir = tempfile::tempdir().unwrap();
        let workload = dir.path().join("everything.toml");
        std::fs::write(&workload, WORKLOAD).unwrap();
        std::fs::write(
            dir.path().join("write.sql"),
            "UPDATE t SET note = 'y' WHERE id = 2;\n",
        )
        .unwrap();
        let config = compare_config(&[
            "stallbench",
            "compare",
            workload.to_str().unwrap(),
            "--strategies",
            "all",
            "--set",
            "other=5",
            "--expect",
            "naive.min_zero_tps_seconds=1",
            "--clients",
            "5",
            "--blocker-hold",
            "3s",
            "--max-tries",
            "10",
            "--retry-lock-timeouts",
            "--db-url",
            "postgres://app:Secret-pw@db.example.com/shop",
        ]);
        assert_eq!(config.strategies.len(), 14);
        let (text, again) = rerun(&config, dir.path());
        assert_same_workload(&config, &again);
        assert_eq!(again.load.clients, 5);
        assert_eq!(
            (again.load.max_tries, again.load.retry_lock_timeouts),
            (10, true)
        );
        assert_eq!(again.blocker.as_ref().unwrap().hold, Duration::from_secs(3));
        assert!(!text.contains("Secret-pw"), "{text}");
        assert!(!text.contains("db.example.com"), "{text}");
        assert!(text.contains("stallbench compare workload.toml"), "{text}");

        // Bounds on strategies that did not run are left out with them.
        let naive_only = compare_config(&[
            "stallbench",
            "compare",
            workload.to_str().unwrap(),
            "--strategies",
            "naive",
        ]);
        assert_eq!(naive_only.expectations.len(), 2);
        let (_, again) = rerun(&naive_only, dir.path());
        let without_bounds = Config {
            expectations: Vec::new(),
            ..naive_only
        };
        assert_same_workload(&without_bounds, &again);
        assert!(again.expectations.is_empty());
    }

    #[test]
    fn the_application_pool_reruns_from_its_workload_toml() {
        let dir = tempfile::tempdir().unwrap();
        let config = compare_config(&[
            "stallbench",
            "compare",
            "--rate",
            "200",
            "--pool-size",
            "10",
            "--pool-timeout",
            "1s",
            "--pool-recycling",
            "verified",
            "--max-in-flight",
            "500",
        ]);
        let (text, again) = rerun(&config, dir.path());
        assert!(text.contains("[load.pool]\nsize = 10\n"), "{text}");
        assert_same_workload(&config, &again);
        let pool = again.load.pool.unwrap();
        assert_eq!(
            (
                pool.size,
                pool.wait_timeout,
                pool.recycling,
                pool.max_in_flight
            ),
            (
                10,
                Duration::from_secs(1),
                crate::config::Recycling::Verified,
                Some(500)
            )
        );
        assert_eq!(again.load.clients, 10);

        // The flags win over [load.pool]; --clients does not size a pool.
        let path = dir.path().join(WORKLOAD_TOML);
        let path = path.to_str().unwrap();
        let flags_win = compare_config(&["stallbench", "compare", path, "--pool-size", "3"]);
        assert_eq!(flags_win.load.clients, 3);
        assert_eq!(
            flags_win.load.pool.unwrap().wait_timeout,
            Duration::from_secs(1)
        );
        let cli = Cli::try_parse_from(["stallbench", "compare", path, "--clients", "3"]).unwrap();
        let Command::Compare { common, .. } = cli.command else {
            panic!("not a compare command");
        };
        let message = Config::new(Some(path), Mode::LoadOnly, &common)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("size the pool with --pool-size"),
            "{message}"
        );
    }

    #[test]
    fn a_workload_from_flags_alone_reruns_from_its_workload_toml() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
        std::fs::write(
            path("read.sql"),
            "\\set c random(1, 1000)\nSELECT count(*) FROM orders WHERE customer_id = :c;\n",
        )
        .unwrap();
        std::fs::write(
            path("write.sql"),
            "UPDATE orders SET total = total WHERE id = 1;\n",
        )
        .unwrap();
        std::fs::write(
            path("migrate.sql"),
            "-- add a note; keep it short\nALTER TABLE orders ADD COLUMN note text;\n\
             CREATE INDEX orders_note ON orders (note)",
        )
        .unwrap();
        let read = format!("{}@9", path("read.sql"));
        let write = format!("{}@1", path("write.sql"));
        let config = compare_config(&[
            "stallbench",
            "compare",
            "--db-url",
            "postgres://app@staging/shop",
            "-f",
            &read,
            "-f",
            &write,
            "--ddl-file",
            &path("migrate.sql"),
            "--blocker",
            "SELECT count(*) FROM orders",
            "--strategies",
            "naive,retry,gitlab",
        ]);
        assert_eq!(config.workload_name, "flags");
        assert_eq!(config.setup_sql, "");
        let weights: Vec<u32> = config.load.scripts.iter().map(|s| s.weight).collect();
        assert_eq!(weights, [9, 1]);
        assert_eq!(config.load.scripts[0].script.name, path("read.sql"));
        let ddl = config.ddl.as_ref().unwrap();
        assert_eq!(
            ddl.steps,
            [
                "-- add a note; keep it short\nALTER TABLE orders ADD COLUMN note text",
                "CREATE INDEX orders_note ON orders (note)"
            ]
        );
        assert_eq!(ddl.at, Duration::from_secs(6));
        let blocker = config.blocker.as_ref().unwrap();
        assert_eq!(
            (blocker.at, blocker.hold),
            (Duration::from_secs(4), Duration::from_secs(12))
        );
        let names: Vec<&str> = config.strategies.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["naive", "retry", "gitlab"]);
        let (_, again) = rerun(&config, dir.path());
        assert_same_workload(&config, &again);
    }

    #[test]
    fn a_flag_workload_needs_a_migration_to_compare() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("read.sql");
        std::fs::write(&script, "SELECT 1;\n").unwrap();
        let cli =
            Cli::try_parse_from(["stallbench", "compare", "-f", script.to_str().unwrap()]).unwrap();
        let Command::Compare { common, .. } = cli.command else {
            panic!("not a compare command");
        };
        let mode = Mode::Compare {
            strategies: Vec::new(),
        };
        let message = Config::new(None, mode, &common).unwrap_err().to_string();
        assert!(
            message.starts_with("workload from flags: no [ddl] section"),
            "{message}"
        );
        assert!(message.contains("--ddl-file FILE"), "{message}");
        let config = Config::new(None, Mode::LoadOnly, &common).unwrap();
        let file = resolved_workload(&config);
        assert!(file.ddl.is_none() && file.strategies.is_empty());
    }
}
