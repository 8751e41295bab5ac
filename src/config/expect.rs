//! Which expectations a run has: the workload file's `[expect.*]` tables,
//! then the `--expect` flags on top, checked once so that every later step
//! can trust them.

use std::collections::BTreeMap;

use crate::error::Error;
use crate::strategy::LOAD_ONLY_STRATEGY;

use crate::expect::bounds::{Bound, ExpectFile, parse_bound};

/// One bound on one strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// The strategy name as the workload defines it.
    pub strategy: String,
    /// What the strategy's summary must meet.
    pub bound: Bound,
    /// Where it came from, for messages: `workload x.toml [expect.retry]` or `--expect`.
    pub source: String,
}

impl Expectation {
    /// `retry.max_p99_ms <= 600 ms`: what a result line and a test case are called.
    pub fn label(&self) -> String {
        format!(
            "{}.{} {}",
            self.strategy,
            self.bound.key(),
            self.bound.limit_text()
        )
    }
}

/// The expectations of a workload's `[expect.*]` tables (`from_file`, named by
/// `workload_source`, e.g. `workload x.toml`), then the `--expect` flags: a flag
/// replaces the bound with the same strategy and key, or adds a new one.
///
/// Bad input: a strategy name not in `known` (the strategies the workload
/// defines and the presets) and not `load` (the load-only run's), a flag that is not
/// `STRATEGY.KEY=VALUE`, an unknown key, a value that does not parse, a
/// `ddl_outcome` other than ok/gave_up/error/none, a negative `max_p99_ms`, or
/// `min_zero_tps_seconds` above `max_zero_tps_seconds` for one strategy.
pub fn collect(
    workload_source: &str,
    from_file: &BTreeMap<String, ExpectFile>,
    flags: &[String],
    known: &[String],
) -> Result<Vec<Expectation>, Error> {
    let mut expectations = Vec::new();
    for (strategy, table) in from_file {
        let source = format!("{workload_source} [expect.{strategy}]");
        check_known(&source, strategy, known)?;
        let bounds = table
            .bounds()
            .map_err(|problem| Error::bad_input(format!("{source}: {problem}")))?;
        for bound in bounds {
            expectations.push(Expectation {
                strategy: strategy.clone(),
                bound,
                source: source.clone(),
            });
        }
    }
    for flag in flags {
        let expectation = parse_flag(flag, known)?;
        let same = expectations.iter_mut().find(|existing| {
            existing.strategy == expectation.strategy
                && existing.bound.key() == expectation.bound.key()
        });
        match same {
            Some(existing) => *existing = expectation,
            None => expectations.push(expectation),
        }
    }
    check_consistent(&expectations)?;
    Ok(expectations)
}

/// Parses one `--expect STRATEGY.KEY=VALUE`. The strategy is everything before
/// the last dot, so strategy names with dots work.
fn parse_flag(flag: &str, known: &[String]) -> Result<Expectation, Error> {
    let what = format!("--expect {flag}");
    let usage = || {
        Error::bad_input(format!(
            "{what}: expected STRATEGY.KEY=VALUE, e.g. --expect retry.max_p99_ms=600"
        ))
    };
    let (target, value) = flag.split_once('=').ok_or_else(usage)?;
    let (strategy, key) = target.rsplit_once('.').ok_or_else(usage)?;
    let (strategy, key, value) = (strategy.trim(), key.trim(), value.trim());
    if strategy.is_empty() || key.is_empty() || value.is_empty() {
        return Err(usage());
    }
    check_known(&what, strategy, known)?;
    let bound = parse_bound(key, value)
        .map_err(|problem| Error::bad_input(format!("{what}: {problem}")))?;
    Ok(Expectation {
        strategy: strategy.to_string(),
        bound,
        source: "--expect".to_string(),
    })
}

/// Refuses a strategy name that the workload does not define (the message
/// lists `known`, the strategies; `load` is a run's, not one of them).
fn check_known(what: &str, strategy: &str, known: &[String]) -> Result<(), Error> {
    if strategy == LOAD_ONLY_STRATEGY || known.iter().any(|name| name == strategy) {
        return Ok(());
    }
    let defined = if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    };
    Err(Error::bad_input(format!(
        "{what}: no strategy named \"{strategy}\" (the workload defines: {defined}); \
         fix the name or add a [[strategies]] entry with that name"
    )))
}

/// Refuses a minimum above the maximum of the same figure: no run could pass both.
fn check_consistent(expectations: &[Expectation]) -> Result<(), Error> {
    for min in expectations {
        let Bound::MinZeroTpsSeconds(low) = min.bound else {
            continue;
        };
        for max in expectations {
            if max.strategy != min.strategy {
                continue;
            }
            if let Bound::MaxZeroTpsSeconds(high) = max.bound
                && low > high
            {
                return Err(Error::bad_input(format!(
                    "expectations of {}: min_zero_tps_seconds = {low} ({}) is above \
                     max_zero_tps_seconds = {high} ({}), so no run can pass both; \
                     lower the minimum or raise the maximum",
                    min.strategy, min.source, max.source
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Expectations shared by the tests of this module and of `expect`.

    use std::collections::BTreeMap;

    use super::{Expectation, collect};
    use crate::expect::bounds::{Bound, ExpectFile};

    pub fn known() -> Vec<String> {
        vec!["naive".to_string(), "retry".to_string()]
    }
    pub fn flags(list: &[&str]) -> Vec<String> {
        list.iter().map(|flag| flag.to_string()).collect()
    }
    /// The tables of the module doc's example workload.
    pub fn example_file() -> BTreeMap<String, ExpectFile> {
        let mut tables = BTreeMap::new();
        tables.insert(
            "naive".to_string(),
            ExpectFile {
                min_zero_tps_seconds: Some(3),
                ..Default::default()
            },
        );
        tables.insert(
            "retry".to_string(),
            ExpectFile {
                max_zero_tps_seconds: Some(0),
                max_longest_stall_s: Some(1),
                max_p99_ms: Some(600.0),
                ddl_outcome: Some("ok".to_string()),
                max_failed: Some(0),
                ..Default::default()
            },
        );
        tables
    }
    pub fn collect_ok(
        from_file: &BTreeMap<String, ExpectFile>,
        flag_list: &[&str],
    ) -> Vec<Expectation> {
        collect("workload x.toml", from_file, &flags(flag_list), &known()).unwrap()
    }
    pub fn collect_err(from_file: &BTreeMap<String, ExpectFile>, flag_list: &[&str]) -> String {
        match collect("workload x.toml", from_file, &flags(flag_list), &known()) {
            Ok(expectations) => panic!("expected an error, got {expectations:?}"),
            Err(error) => {
                assert_eq!(error.exit_code(), 2, "{error}");
                error.to_string()
            }
        }
    }
    pub fn expectation(strategy: &str, bound: Bound) -> Expectation {
        Expectation {
            strategy: strategy.to_string(),
            bound,
            source: "--expect".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::fixtures::*;
    use super::*;
    use crate::metrics::DdlOutcome;

    #[test]
    fn file_bounds_become_expectations_in_key_order() {
        let expectations = collect_ok(&example_file(), &[]);
        let got: Vec<(&str, Bound, &str)> = expectations
            .iter()
            .map(|e| (e.strategy.as_str(), e.bound.clone(), e.source.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "naive",
                    Bound::MinZeroTpsSeconds(3),
                    "workload x.toml [expect.naive]"
                ),
                (
                    "retry",
                    Bound::MaxZeroTpsSeconds(0),
                    "workload x.toml [expect.retry]"
                ),
                (
                    "retry",
                    Bound::MaxLongestStallS(1),
                    "workload x.toml [expect.retry]"
                ),
                (
                    "retry",
                    Bound::MaxP99Ms(600.0),
                    "workload x.toml [expect.retry]"
                ),
                (
                    "retry",
                    Bound::DdlOutcome(DdlOutcome::Ok),
                    "workload x.toml [expect.retry]"
                ),
                (
                    "retry",
                    Bound::MaxFailed(0),
                    "workload x.toml [expect.retry]"
                ),
            ]
        );
    }

    #[test]
    fn a_workload_file_parses_into_expect_tables() {
        #[derive(Deserialize)]
        struct Wrapper {
            expect: BTreeMap<String, ExpectFile>,
        }
        let text = "[expect.naive]\nmin_zero_tps_seconds = 3\n\
                    [expect.retry]\nmax_zero_tps_seconds = 0\nmax_longest_stall_s = 1\n\
                    max_p99_ms = 600\nddl_outcome = \"ok\"\nmax_failed = 0\n";
        let wrapper: Wrapper = toml::from_str(text).unwrap();
        // `600` is a TOML integer; serde reads it into the f64 field.
        assert_eq!(wrapper.expect, example_file());

        let error = toml::from_str::<Wrapper>("[expect.retry]\nmax_p99 = 600\n")
            .err()
            .expect("an unknown key is refused");
        let message = error.to_string();
        assert!(message.contains("max_p99"), "{message}");
        assert!(message.contains("max_p99_ms"), "{message}");
    }

    #[test]
    fn a_flag_replaces_the_file_bound_with_the_same_key_in_place() {
        let expectations = collect_ok(&example_file(), &["retry.max_p99_ms=750.5"]);
        assert_eq!(expectations.len(), 6);
        assert_eq!(
            expectations[3],
            Expectation {
                strategy: "retry".to_string(),
                bound: Bound::MaxP99Ms(750.5),
                source: "--expect".to_string(),
            }
        );
        // The other bounds keep their file source.
        assert_eq!(expectations[2].source, "workload x.toml [expect.retry]");
    }

    #[test]
    fn a_flag_adds_a_bound_and_the_last_of_two_flags_wins() {
        let expectations = collect_ok(
            &example_file(),
            &[
                "naive.ddl_outcome=ok",
                "naive.max_failed=5",
                " naive.max_failed = 7 ",
            ],
        );
        assert_eq!(expectations.len(), 8);
        assert_eq!(
            expectations[6],
            expectation("naive", Bound::DdlOutcome(DdlOutcome::Ok))
        );
        assert_eq!(expectations[7], expectation("naive", Bound::MaxFailed(7)));
    }

    #[test]
    fn flags_alone_work_and_a_strategy_name_may_contain_dots() {
        let known = vec!["retry.v2".to_string()];
        let expectations = collect(
            "workload x.toml",
            &BTreeMap::new(),
            &flags(&["retry.v2.max_zero_tps_seconds=0"]),
            &known,
        )
        .unwrap();
        assert_eq!(
            expectations,
            vec![expectation("retry.v2", Bound::MaxZeroTpsSeconds(0))]
        );
    }

    #[test]
    fn an_unknown_strategy_names_the_known_ones() {
        let mut tables = BTreeMap::new();
        tables.insert("retyr".to_string(), ExpectFile::default());
        let message = collect_err(&tables, &[]);
        assert_eq!(
            message,
            "workload x.toml [expect.retyr]: no strategy named \"retyr\" (the workload defines: \
             naive, retry); fix the name or add a [[strategies]] entry with that name"
        );

        let message = collect_err(&BTreeMap::new(), &["retyr.max_failed=0"]);
        assert!(
            message.starts_with("--expect retyr.max_failed=0: no strategy named \"retyr\""),
            "{message}"
        );
        assert!(message.contains("naive, retry"), "{message}");
    }

    #[test]
    fn load_is_accepted_but_not_listed_as_a_strategy() {
        let expectations = collect_ok(&BTreeMap::new(), &["load.max_failed=0"]);
        assert_eq!(expectations[0].strategy, "load");
        let message = collect_err(&BTreeMap::new(), &["nosuch.max_failed=0"]);
        assert!(
            message.contains("(the workload defines: naive, retry);"),
            "{message}"
        );
    }

    #[test]
    fn an_unknown_key_lists_the_valid_keys() {
        let message = collect_err(&BTreeMap::new(), &["retry.max_p99=600"]);
        assert_eq!(
            message,
            "--expect retry.max_p99=600: unknown expectation \"max_p99\"; the valid keys are \
             max_zero_tps_seconds, min_zero_tps_seconds, max_replica_zero_tps_seconds, \
             min_replica_zero_tps_seconds, max_longest_stall_s, min_worst_second_tps, max_worst_second_p99_ms, max_p99_ms, max_ddl_s, \
             ddl_outcome, max_failed, max_pool_timeouts, max_pool_wait_p99_ms, max_anomalies, \
             min_anomalies, min_deadlock_seconds, \
             max_failed_<class> (a SQLSTATE class of 2 characters, like max_failed_0A)"
        );
    }

    #[test]
    fn a_value_that_does_not_parse_is_refused() {
        let message = collect_err(&BTreeMap::new(), &["retry.max_p99_ms=abc"]);
        assert_eq!(
            message,
            "--expect retry.max_p99_ms=abc: \"abc\" is not a number of milliseconds; \
             write one like 600, without a unit"
        );
        let message = collect_err(&BTreeMap::new(), &["retry.max_p99_ms=600ms"]);
        assert!(message.contains("without a unit"), "{message}");
        for flag in [
            "naive.min_zero_tps_seconds=-1",
            "naive.max_zero_tps_seconds=1.5",
            "naive.max_longest_stall_s=x",
        ] {
            let message = collect_err(&BTreeMap::new(), &[flag]);
            assert!(
                message.starts_with(&format!("--expect {flag}: ")),
                "{message}"
            );
            assert!(
                message.contains("is not a whole number of seconds"),
                "{message}"
            );
        }
        let message = collect_err(&BTreeMap::new(), &["retry.max_failed=some"]);
        assert!(
            message.contains("\"some\" is not a whole number of transactions"),
            "{message}"
        );
        let message = collect_err(&BTreeMap::new(), &["retry.max_p99_ms=-5"]);
        assert!(message.contains("-5 is not a latency"), "{message}");
        let message = collect_err(&BTreeMap::new(), &["retry.max_p99_ms=NaN"]);
        assert!(message.contains("NaN is not a latency"), "{message}");
    }

    #[test]
    fn a_flag_without_strategy_key_and_value_shows_the_form() {
        for flag in [
            "nodot",
            "nodot=3",
            "retry.max_p99_ms",
            ".max_p99_ms=1",
            "retry.=1",
            "retry.max_p99_ms=",
        ] {
            let message = collect_err(&BTreeMap::new(), &[flag]);
            assert_eq!(
                message,
                format!(
                    "--expect {flag}: expected STRATEGY.KEY=VALUE, e.g. --expect retry.max_p99_ms=600"
                )
            );
        }
    }

    #[test]
    fn a_ddl_outcome_must_be_one_of_four() {
        let message = collect_err(&BTreeMap::new(), &["retry.ddl_outcome=done"]);
        assert_eq!(
            message,
            "--expect retry.ddl_outcome=done: \"done\" is not a DDL outcome; \
             use one of ok, gave_up, cut_off, error, none"
        );
        let mut tables = BTreeMap::new();
        tables.insert(
            "retry".to_string(),
            ExpectFile {
                ddl_outcome: Some("OK".to_string()),
                ..Default::default()
            },
        );
        let message = collect_err(&tables, &[]);
        assert_eq!(
            message,
            "workload x.toml [expect.retry]: ddl_outcome = \"OK\" is not a DDL outcome; \
             use one of ok, gave_up, cut_off, error, none"
        );
        for outcome in DdlOutcome::ALL {
            collect_ok(&BTreeMap::new(), &[&format!("retry.ddl_outcome={outcome}")]);
        }
    }

    #[test]
    fn a_negative_latency_in_the_file_is_refused() {
        let mut tables = BTreeMap::new();
        tables.insert(
            "retry".to_string(),
            ExpectFile {
                max_p99_ms: Some(-1.0),
                ..Default::default()
            },
        );
        let message = collect_err(&tables, &[]);
        assert_eq!(
            message,
            "workload x.toml [expect.retry]: max_p99_ms = -1 is not a latency; \
             write milliseconds of 0 or more, like 600"
        );
    }

    #[test]
    fn a_minimum_above_the_maximum_is_refused_after_the_flags() {
        let message = collect_err(&example_file(), &["naive.max_zero_tps_seconds=2"]);
        assert_eq!(
            message,
            "expectations of naive: min_zero_tps_seconds = 3 (workload x.toml [expect.naive]) \
             is above max_zero_tps_seconds = 2 (--expect), so no run can pass both; \
             lower the minimum or raise the maximum"
        );
        // Equal limits are satisfiable.
        collect_ok(&example_file(), &["naive.max_zero_tps_seconds=3"]);
    }
}
