//! A MariaDB workload file: the outage as TOML (`engine = "mariadb"`), and
//! the bundled ones, `mariadb-add-column` and `mariadb-add-column-writers`. Its `[expect.<strategy>]` tables
//! are the PostgreSQL workloads' own (`expect::bounds::ExpectFile`), judged by the
//! same `expect` module.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::ddl::Strategy;
use super::scenario::Outage;
use super::script::{ScriptFile, parse_scripts};
use crate::config::expect::Expectation;
use crate::error::Error;
use crate::expect::bounds::ExpectFile;

/// The bundled MariaDB workloads: (name, TOML).
pub const BUNDLED: [(&str, &str); 2] = [
    (
        "mariadb-add-column",
        include_str!("../../../workloads/mariadb-add-column.toml"),
    ),
    (
        "mariadb-add-column-writers",
        include_str!("../../../workloads/mariadb-add-column-writers.toml"),
    ),
];

/// A MariaDB workload file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    engine: String,
    description: String,
    strategies: Vec<String>,
    setup: SetupFile,
    load: LoadFile,
    blocker: BlockerFile,
    ddl: DdlFile,
    #[serde(default)]
    expect: BTreeMap<String, ExpectFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetupFile {
    sql: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadFile {
    clients: usize,
    duration_s: f64,
    scripts: Vec<ScriptFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockerFile {
    sql: String,
    at_s: f64,
    hold_s: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct DdlFile {
    sql: String,
    at_s: f64,
}

/// A MariaDB workload, validated.
#[derive(Debug, Clone)]
pub struct MariadbWorkload {
    pub name: String,
    pub description: String,
    pub outage: Outage,
    /// The strategies `compare` runs when `--strategies` names none.
    pub strategies: Vec<Strategy>,
    /// What each strategy's summary must meet.
    pub expectations: Vec<Expectation>,
}

/// The bundled workload `name`, if there is one.
pub fn bundled(name: &str) -> Option<MariadbWorkload> {
    let (name, text) = BUNDLED.iter().find(|(known, _)| *known == name)?;
    Some(parse(name, text).expect("the bundled MariaDB workloads parse"))
}

/// Whether `text` (a workload file) says `engine = "mariadb"`.
pub fn names_mariadb(text: &str) -> bool {
    toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|table| table.get("engine")?.as_str().map(str::to_owned))
        .is_some_and(|engine| engine == "mariadb")
}

/// Parses and checks a MariaDB workload file named `name`.
pub fn parse(name: &str, text: &str) -> Result<MariadbWorkload, Error> {
    let file: WorkloadFile =
        toml::from_str(text).map_err(|err| Error::bad_input(format!("workload {name}: {err}")))?;
    if file.engine != "mariadb" {
        return Err(Error::bad_input(format!(
            "workload {name}: engine = {:?}; a MariaDB workload says engine = \"mariadb\"",
            file.engine
        )));
    }
    let strategies = strategies_named(name, &file.strategies)?;
    let mut expectations = Vec::new();
    for (strategy, expect) in &file.expect {
        strategies_named(name, std::slice::from_ref(strategy))?;
        let bounds = expect.bounds().map_err(|err| {
            Error::bad_input(format!("workload {name} [expect.{strategy}]: {err}"))
        })?;
        expectations.extend(bounds.into_iter().map(|bound| Expectation {
            strategy: strategy.clone(),
            bound,
            source: format!("workload {name} [expect.{strategy}]"),
        }));
    }
    let seconds = |s: f64| Duration::from_secs_f64(s.max(0.0));
    Ok(MariadbWorkload {
        name: name.to_string(),
        description: file.description,
        outage: Outage {
            setup: file.setup.sql,
            load: parse_scripts(name, &file.load.scripts)?,
            clients: file.load.clients,
            duration: seconds(file.load.duration_s),
            report_sql: file.blocker.sql,
            report_at: seconds(file.blocker.at_s),
            report_hold: seconds(file.blocker.hold_s),
            ddl: file.ddl.sql,
            ddl_at: seconds(file.ddl.at_s),
        },
        strategies,
        expectations,
    })
}

/// The strategies `names` name; an unknown one is bad input.
pub fn strategies_named(workload: &str, names: &[String]) -> Result<Vec<Strategy>, Error> {
    names
        .iter()
        .map(|name| {
            Strategy::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = super::ddl::STRATEGIES.iter().map(|(_, n)| *n).collect();
                Error::bad_input(format!(
                    "workload {workload}: strategy {name:?} is not a MariaDB strategy; \
                     choose one of {}",
                    known.join(", ")
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_workload_is_the_reference_outage_with_its_expectations() {
        let workload = bundled("mariadb-add-column").unwrap();
        assert_eq!(workload.outage.clients, 4);
        assert_eq!(workload.outage.report_hold, Duration::from_secs(12));
        assert_eq!(workload.outage.ddl_at, Duration::from_secs(6));
        let labels: Vec<String> = workload
            .expectations
            .iter()
            .map(Expectation::label)
            .collect();
        assert!(
            labels.contains(&"naive.min_zero_tps_seconds >= 5".to_string()),
            "{labels:?}"
        );
        assert!(
            labels.contains(&"retry.max_zero_tps_seconds <= 0".to_string()),
            "{labels:?}"
        );
        assert!(names_mariadb(BUNDLED[0].1));
    }

    #[test]
    fn the_writers_workload_mixes_reads_updates_and_inserts_by_weight() {
        let workload = bundled("mariadb-add-column-writers").unwrap();
        let scripts: Vec<(&str, u32)> = workload
            .outage
            .load
            .iter()
            .map(|s| (s.weighted.script.name.as_str(), s.weighted.weight))
            .collect();
        assert_eq!(
            scripts,
            [("read-order", 5), ("update-order", 4), ("new-order", 1)]
        );
        let kind = crate::role::ClientKind::of_scripts(
            workload.outage.load.iter().map(|s| &s.weighted.script),
        );
        assert_eq!(kind, crate::role::ClientKind::Client);
        assert_eq!(
            workload.outage.load[1].statements[0].sql,
            "UPDATE orders SET total = GREATEST(total + ? / 100, 0) WHERE id = ?"
        );
        let labels: Vec<String> = workload
            .expectations
            .iter()
            .map(Expectation::label)
            .collect();
        for label in [
            "naive.min_zero_tps_seconds >= 5",
            "retry.max_zero_tps_seconds <= 0",
            "wait-retry.max_zero_tps_seconds <= 0",
        ] {
            assert!(labels.contains(&label.to_string()), "{labels:?}");
        }
    }

    #[test]
    fn a_script_mariadb_cannot_run_is_bad_input() {
        let text = BUNDLED[0].1.replace(
            "SELECT count(*), sum(total) FROM orders WHERE customer_id = :c;",
            "SELECT count(*) FROM orders WHERE customer_id = :c \\\\gset",
        );
        let err = parse("x", &text).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::exit_code::BAD_INPUT);
        assert!(err.to_string().contains("\\gset and \\aset"), "{err}");
    }

    #[test]
    fn an_unknown_strategy_is_bad_input_naming_the_known_ones() {
        let text = BUNDLED[0].1.replace("\"wait-retry\"]", "\"lock-timeout\"]");
        let err = parse("x", &text).unwrap_err().to_string();
        assert!(
            err.contains("\"lock-timeout\" is not a MariaDB strategy"),
            "{err}"
        );
        assert!(
            err.contains("naive, retry, wait-retry, nowait-retry"),
            "{err}"
        );
    }
}
