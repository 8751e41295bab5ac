//! The `[[variants]]` and `[[invariants]]` sections: variants of the load
//! compared in one run as DDL strategies are, and what each must not lose.
//!
//! A variant is one entry of the plan like a strategy: it runs as a `plain`
//! strategy (the workload's `[ddl]`, if it has one, runs as written) whose
//! load differs: its own scripts, isolation level and tries. Its isolation
//! is the session's `default_transaction_isolation` on every load
//! connection, so each transaction runs at it without the scripts saying so.
//! An invariant is SQL run after each variant's run on its data; its one
//! value must equal a literal, or a figure of the run (`:transactions`).

use crate::error::Error;
use crate::strategy::{NamedStrategy, Strategy};
use crate::workload::{InvariantFile, LoadedWorkload, VariantFile};

use super::LoadConfig;
use super::load::{WeightedScript, section_scripts};

/// An isolation level a variant's transactions run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    /// Every level, as the workload file names them.
    pub const ALL: [Isolation; 3] = [
        Isolation::ReadCommitted,
        Isolation::RepeatableRead,
        Isolation::Serializable,
    ];

    /// The name in a workload file: `read-committed`, `repeatable-read`, `serializable`.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read-committed",
            Isolation::RepeatableRead => "repeatable-read",
            Isolation::Serializable => "serializable",
        }
    }

    /// The value of PostgreSQL's `default_transaction_isolation` for this level.
    pub fn setting(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }
}

/// One variant of the load, validated.
#[derive(Debug, Clone)]
pub struct Variant {
    pub name: String,
    /// Its own scripts; `None`: `[load]`'s.
    pub scripts: Option<Vec<WeightedScript>>,
    /// Its tries of a transaction (see [`LoadConfig::max_tries`]); `None`: `[load]`'s.
    pub max_tries: Option<u32>,
    /// Whether 55P03 is tried again too (see [`LoadConfig::retry_lock_timeouts`]); `None`: `[load]`'s.
    pub retry_lock_timeouts: Option<bool>,
    /// The level its transactions run at; `None`: the server's default.
    pub isolation: Option<Isolation>,
}

impl Variant {
    /// The strategy entry the variant runs as: `plain`, its isolation as a session setting.
    pub fn as_strategy(&self) -> NamedStrategy {
        NamedStrategy {
            name: self.name.clone(),
            strategy: Strategy::Plain,
            ddl_steps: None,
            settings: self
                .isolation
                .map(|level| {
                    (
                        "default_transaction_isolation".to_string(),
                        level.setting().to_string(),
                    )
                })
                .into_iter()
                .collect(),
        }
    }

    /// `load` with this variant's scripts and tries.
    pub fn load(&self, load: &LoadConfig) -> LoadConfig {
        LoadConfig {
            scripts: self.scripts.clone().unwrap_or_else(|| load.scripts.clone()),
            max_tries: self.max_tries.unwrap_or(load.max_tries),
            retry_lock_timeouts: self.retry_lock_timeouts.unwrap_or(load.retry_lock_timeouts),
            ..load.clone()
        }
    }
}

/// What an invariant's value must equal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// This text, as the server prints the value.
    Literal(String),
    /// The transactions the run's clients completed.
    Transactions,
}

/// The figure of a run an invariant's `expect` may name.
pub const TRANSACTIONS: &str = ":transactions";

/// One invariant, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invariant {
    pub name: String,
    pub sql: String,
    pub expected: Expected,
    /// What one unit of difference is called: `lost updates`; `anomalies` if not given.
    pub counts: String,
    /// How errors name it: `workload w: [[invariants]] total conserved`.
    pub source: String,
}

/// The workload's `[[variants]]`, each checked, with unique names; they may
/// not be mixed with `[[strategies]]`.
pub(super) fn parse_variants(loaded: &LoadedWorkload) -> Result<Vec<Variant>, Error> {
    let source = &loaded.source;
    let files = &loaded.file.variants;
    if !files.is_empty() && !loaded.file.strategies.is_empty() {
        return Err(Error::bad_input(format!(
            "{source}: both [[strategies]] and [[variants]]; a run compares one or the other, \
             so keep one list (a variant runs the [ddl] as kind = \"plain\")"
        )));
    }
    let mut variants: Vec<Variant> = Vec::new();
    for file in files {
        let variant = parse_variant(loaded, file)?;
        if variants.iter().any(|other| other.name == variant.name) {
            return Err(Error::bad_input(format!(
                "{source}: [[variants]] {}: the name is used twice; give each variant its own name",
                variant.name
            )));
        }
        variants.push(variant);
    }
    Ok(variants)
}

fn parse_variant(loaded: &LoadedWorkload, file: &VariantFile) -> Result<Variant, Error> {
    let what = format!("{}: [[variants]] {}", loaded.source, file.name);
    if file.name.trim().is_empty() {
        return Err(Error::bad_input(format!(
            "{}: [[variants]] name = \"\"; give the variant a name",
            loaded.source
        )));
    }
    let isolation = match &file.isolation {
        None => None,
        Some(word) => Some(
            Isolation::ALL
                .into_iter()
                .find(|level| level.name() == word)
                .ok_or_else(|| {
                    Error::bad_input(format!(
                        "{what}: isolation = \"{word}\"; use \"read-committed\", \
                         \"repeatable-read\" or \"serializable\""
                    ))
                })?,
        ),
    };
    let scripts = match file.scripts.is_empty() {
        true => None,
        false => Some(section_scripts(
            loaded,
            &format!("[[variants]] {} scripts", file.name),
            &file.scripts,
        )?),
    };
    if file.retry_lock_timeouts == Some(true) && file.max_tries == Some(1) {
        return Err(Error::bad_input(format!(
            "{what}: retry_lock_timeouts = true with max_tries = 1; \
             give more than one try (max_tries = 0 tries until the run ends)"
        )));
    }
    Ok(Variant {
        name: file.name.clone(),
        scripts,
        max_tries: file.max_tries,
        retry_lock_timeouts: file.retry_lock_timeouts,
        isolation,
    })
}

/// The workload's `[[invariants]]`, each with SQL and a name of its own.
pub(super) fn parse_invariants(
    source: &str,
    files: &[InvariantFile],
) -> Result<Vec<Invariant>, Error> {
    let mut invariants: Vec<Invariant> = Vec::new();
    for file in files {
        let what = format!("{source}: [[invariants]] {}", file.name);
        if file.name.trim().is_empty() {
            return Err(Error::bad_input(format!(
                "{source}: [[invariants]] name = \"\"; give the invariant a name"
            )));
        }
        if invariants.iter().any(|other| other.name == file.name) {
            return Err(Error::bad_input(format!(
                "{what}: the name is used twice; give each invariant its own name"
            )));
        }
        if file.sql.trim().is_empty() {
            return Err(Error::bad_input(format!(
                "{what}: sql = \"\"; give a query that returns one value, \
                 e.g. sql = \"SELECT sum(balance) FROM accounts\""
            )));
        }
        let expected = match file.expect.trim() {
            TRANSACTIONS => Expected::Transactions,
            other if other.starts_with(':') => {
                return Err(Error::bad_input(format!(
                    "{what}: expect = \"{other}\" names no figure of the run; \
                     use \"{TRANSACTIONS}\" or a literal value such as \"100000\""
                )));
            }
            other => Expected::Literal(other.to_string()),
        };
        invariants.push(Invariant {
            name: file.name.clone(),
            sql: file.sql.clone(),
            expected,
            counts: file
                .counts
                .clone()
                .unwrap_or_else(|| "anomalies".to_string()),
            source: what,
        });
    }
    Ok(invariants)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::parse;

    const BASE: &str = "name = 'x'\nsetup = 'CREATE TABLE t (n int)'\n\
        [load]\nclients = 1\nduration = '2s'\n[[load.scripts]]\nsql = 'SELECT 1;'\n";

    fn loaded(extra: &str) -> LoadedWorkload {
        let source = "workload x.toml".to_string();
        LoadedWorkload {
            file: parse(&source, &format!("{BASE}{extra}")).unwrap(),
            source,
            folder: None,
        }
    }

    fn variants_error(extra: &str) -> String {
        parse_variants(&loaded(extra)).unwrap_err().to_string()
    }

    fn invariants_error(extra: &str) -> String {
        let loaded = loaded(extra);
        parse_invariants(&loaded.source, &loaded.file.invariants)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_variant_runs_as_a_plain_strategy_at_its_isolation() {
        let loaded = loaded(
            "[[variants]]\nname = 'ser'\nisolation = 'serializable'\nmax_tries = 0\n\
             [[variants.scripts]]\nsql = 'SELECT 2;'\n[[variants]]\nname = 'plain'\n",
        );
        let variants = parse_variants(&loaded).unwrap();
        assert_eq!(variants.len(), 2);
        let strategy = variants[0].as_strategy();
        assert_eq!(strategy.name, "ser");
        assert_eq!(strategy.strategy, Strategy::Plain);
        assert_eq!(
            strategy.settings,
            [(
                "default_transaction_isolation".to_string(),
                "serializable".to_string()
            )]
        );
        assert_eq!(variants[0].max_tries, Some(0));
        assert_eq!(variants[0].scripts.as_ref().unwrap()[0].text, "SELECT 2;");
        assert!(variants[1].as_strategy().settings.is_empty());
        assert!(variants[1].scripts.is_none());
    }

    #[test]
    fn an_unknown_isolation_names_the_file_variant_and_key() {
        let message = variants_error("[[variants]]\nname = 'v'\nisolation = 'snapshot'\n");
        assert_eq!(
            message,
            "workload x.toml: [[variants]] v: isolation = \"snapshot\"; use \"read-committed\", \
             \"repeatable-read\" or \"serializable\""
        );
    }

    #[test]
    fn a_variant_may_retry_lock_timeouts_with_more_than_one_try() {
        let loaded = loaded(
            "[[variants]]\nname = 'nowait'\nmax_tries = 0\nretry_lock_timeouts = true\n\
             [[variants]]\nname = 'plain'\n",
        );
        let variants = parse_variants(&loaded).unwrap();
        let load = LoadConfig {
            clients: 1,
            duration: std::time::Duration::from_secs(2),
            scripts: Vec::new(),
            variables: Vec::new(),
            rate_tps: None,
            latency_limit: None,
            client_timeout: None,
            pool: None,
            protocol: Default::default(),
            max_tries: 1,
            retry_lock_timeouts: false,
        };
        let nowait = variants[0].load(&load);
        assert_eq!((nowait.max_tries, nowait.retry_lock_timeouts), (0, true));
        let plain = variants[1].load(&load);
        assert_eq!((plain.max_tries, plain.retry_lock_timeouts), (1, false));
        let message =
            variants_error("[[variants]]\nname = 'v'\nmax_tries = 1\nretry_lock_timeouts = true\n");
        assert_eq!(
            message,
            "workload x.toml: [[variants]] v: retry_lock_timeouts = true with max_tries = 1; \
             give more than one try (max_tries = 0 tries until the run ends)"
        );
    }

    #[test]
    fn variants_and_strategies_do_not_mix_and_names_are_unique() {
        let message = variants_error("[[variants]]\nname = 'v'\n[[strategies]]\nname = 'naive'\n");
        assert!(
            message.contains("both [[strategies]] and [[variants]]"),
            "{message}"
        );
        let message = variants_error("[[variants]]\nname = 'v'\n[[variants]]\nname = 'v'\n");
        assert!(
            message.contains("[[variants]] v: the name is used twice"),
            "{message}"
        );
        let message =
            variants_error("[[variants]]\nname = 'v'\n[[variants.scripts]]\nweight = 1\n");
        assert!(
            message
                .starts_with("workload x.toml: [[variants]] v scripts script 1: give exactly one"),
            "{message}"
        );
    }

    #[test]
    fn invariants_are_checked_one_by_one() {
        let loaded = loaded(
            "[[invariants]]\nname = 'n'\nsql = 'SELECT n FROM t'\nexpect = ':transactions'\n\
             [[invariants]]\nname = 'm'\nsql = 'SELECT 1'\nexpect = '1'\n",
        );
        let invariants = parse_invariants(&loaded.source, &loaded.file.invariants).unwrap();
        assert_eq!(invariants[0].expected, Expected::Transactions);
        assert_eq!(invariants[1].expected, Expected::Literal("1".to_string()));
        assert_eq!(invariants[1].source, "workload x.toml: [[invariants]] m");
        let message = invariants_error("[[invariants]]\nname = 'n'\nsql = ' '\nexpect = '1'\n");
        assert!(
            message.starts_with("workload x.toml: [[invariants]] n: sql = \"\""),
            "{message}"
        );
        let message =
            invariants_error("[[invariants]]\nname = 'n'\nsql = 'SELECT 1'\nexpect = ':tps'\n");
        assert!(
            message.contains("expect = \":tps\" names no figure"),
            "{message}"
        );
        let message = invariants_error(
            "[[invariants]]\nname = 'n'\nsql = 'SELECT 1'\nexpect = '1'\n\
             [[invariants]]\nname = 'n'\nsql = 'SELECT 1'\nexpect = '1'\n",
        );
        assert!(message.contains("the name is used twice"), "{message}");
    }
}
