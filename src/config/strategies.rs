//! The `[[strategies]]` section and the strategies a command runs. Each entry
//! is checked against its kind: a key only another kind reads is an error, not
//! silently ignored. A name the workload does not define falls back to a preset.

use crate::strategy::LOAD_ONLY_STRATEGY;
use std::time::Duration;

use crate::error::Error;
use crate::strategy::{
    Backoff, Jitter, NamedStrategy, PRESET_NAMES, RetryPolicy, Schedule, ScheduledTry, Strategy,
    preset,
};
use crate::workload::{BackoffFile, StrategyFile};

use super::Mode;
use crate::duration::parse_duration;

/// The keys of `lock-timeout-retry`; `wait-for-idle` takes them too.
const RETRY_KEYS: [&str; 6] = [
    "lock_timeout",
    "statement_timeout",
    "max_tries",
    "backoff",
    "schedule",
    "set_local",
];

/// The workload's own `[[strategies]]`, each checked, with unique names.
pub(super) fn parse_strategies(
    source: &str,
    files: &[StrategyFile],
) -> Result<Vec<NamedStrategy>, Error> {
    let defined = files
        .iter()
        .map(|strategy| parse_strategy(source, strategy))
        .collect::<Result<Vec<_>, _>>()?;
    check_unique_names(source, &defined)?;
    Ok(defined)
}

/// The strategies the command runs, in order, from the workload's `defined` ones
/// and the presets; a load-only run gets one pseudo-strategy named `load`.
pub(super) fn select_strategies(
    source: &str,
    defined: Vec<NamedStrategy>,
    mode: &Mode,
) -> Result<Vec<NamedStrategy>, Error> {
    match mode {
        Mode::LoadOnly => Ok(vec![NamedStrategy {
            name: LOAD_ONLY_STRATEGY.to_string(),
            strategy: Strategy::Plain,
            ddl_steps: None,
            settings: Vec::new(),
        }]),
        Mode::Run { strategy } => Ok(vec![pick_strategy(source, &defined, strategy.trim())?]),
        Mode::Compare { strategies } if strategies.is_empty() => {
            if defined.is_empty() {
                return Err(Error::bad_input(format!(
                    "{source}: no [[strategies]] listed; add at least one, e.g. \
                     [[strategies]] name = \"naive\" kind = \"plain\""
                )));
            }
            Ok(defined)
        }
        Mode::Compare { strategies } => {
            let names = listed_names(strategies)?;
            if names.contains(&"all") {
                return every_strategy(source, defined);
            }
            names
                .iter()
                .map(|name| pick_strategy(source, &defined, name))
                .collect()
        }
    }
}

/// The names of `--strategies`, trimmed (`'naive, retry'`), each at most once.
fn listed_names(strategies: &[String]) -> Result<Vec<&str>, Error> {
    let names: Vec<&str> = strategies.iter().map(|name| name.trim()).collect();
    for (index, name) in names.iter().enumerate() {
        if names[..index].contains(name) {
            return Err(Error::bad_input(format!(
                "--strategies {}: {name} is listed twice; list each strategy once",
                strategies.join(",")
            )));
        }
    }
    Ok(names)
}

/// `--strategies all`: every preset (as the workload redefines it, if it does), then the workload's own.
fn every_strategy(source: &str, defined: Vec<NamedStrategy>) -> Result<Vec<NamedStrategy>, Error> {
    let mut all: Vec<NamedStrategy> = PRESET_NAMES
        .iter()
        .map(|name| pick_strategy(source, &defined, name))
        .collect::<Result<Vec<_>, _>>()?;
    for strategy in defined {
        if !all.iter().any(|s| s.name == strategy.name) {
            all.push(strategy);
        }
    }
    Ok(all)
}

fn parse_strategy(source: &str, file: &StrategyFile) -> Result<NamedStrategy, Error> {
    let name = &file.name;
    let what = format!("{source}: strategy {name}");
    let strategy = match file.kind.as_deref() {
        None => {
            check_keys(&what, "preset", file, &[])?;
            let named = preset(name).ok_or_else(|| {
                Error::bad_input(format!(
                    "{what}: no kind given and {name:?} is not a preset ({}); \
                     add kind = \"plain\", \"lock-timeout-retry\", \"kill-blockers\", \
                     \"kill-lock-holders\" or \"wait-for-idle\"",
                    PRESET_NAMES.join(", ")
                ))
            })?;
            named.strategy
        }
        Some(kind) => parse_kind(&what, kind, file)?,
    };
    with_ddl_and_settings(&what, strategy, file)
}

/// The strategy of an explicit `kind`, from the keys that kind reads.
fn parse_kind(what: &str, kind: &str, file: &StrategyFile) -> Result<Strategy, Error> {
    match kind {
        "plain" => {
            check_keys(what, kind, file, &[])?;
            Ok(Strategy::Plain)
        }
        "lock-timeout-retry" => {
            check_keys(what, kind, file, &RETRY_KEYS)?;
            Ok(Strategy::LockTimeoutRetry(parse_retry(what, file)?))
        }
        "kill-blockers" => {
            check_keys(what, kind, file, &["grace", "older_than", "every"])?;
            parse_kill_blockers(what, file)
        }
        "kill-lock-holders" => {
            check_keys(what, kind, file, &["lock_timeout", "max_tries"])?;
            let lock_timeout = match &file.lock_timeout {
                Some(text) => parse_lock_timeout(what, text)?,
                None => Duration::from_secs(10),
            };
            let max_tries = file.max_tries.unwrap_or(3);
            if max_tries == 0 {
                return Err(Error::bad_input(format!(
                    "{what}: max_tries = 0; need at least 1 try"
                )));
            }
            Ok(Strategy::KillLockHolders {
                lock_timeout,
                max_tries,
            })
        }
        "wait-for-idle" => {
            let mut allowed = RETRY_KEYS.to_vec();
            allowed.push("older_than");
            check_keys(what, kind, file, &allowed)?;
            Ok(Strategy::WaitForIdle {
                older_than: match &file.older_than {
                    Some(text) => parse_duration(&format!("{what}: older_than"), text)?,
                    None => Duration::from_secs(1),
                },
                retry: parse_retry(what, file)?,
            })
        }
        "replica-aware" => {
            let mut allowed = RETRY_KEYS.to_vec();
            allowed.extend(["older_than", "wait_at_most"]);
            check_keys(what, kind, file, &allowed)?;
            let duration = |key: &str, value: &Option<String>, default: u64| match value {
                Some(text) => parse_duration(&format!("{what}: {key}"), text),
                None => Ok(Duration::from_secs(default)),
            };
            Ok(Strategy::ReplicaAware {
                older_than: duration("older_than", &file.older_than, 1)?,
                wait_at_most: duration("wait_at_most", &file.wait_at_most, 30)?,
                retry: parse_retry(what, file)?,
            })
        }
        other => Err(Error::bad_input(format!(
            "{what}: unknown kind \"{other}\"; use \"plain\", \"lock-timeout-retry\", \
             \"kill-blockers\", \"kill-lock-holders\", \"wait-for-idle\" or \
             \"replica-aware\", or leave kind out to use a preset ({})",
            PRESET_NAMES.join(", ")
        ))),
    }
}

/// `kill-blockers`: `grace` (default 1 s), `older_than` (default the grace) and
/// `every` (default 100 ms).
fn parse_kill_blockers(what: &str, file: &StrategyFile) -> Result<Strategy, Error> {
    let duration = |key: &str, value: &Option<String>, default: Duration| match value {
        Some(text) => parse_duration(&format!("{what}: {key}"), text),
        None => Ok(default),
    };
    let grace = duration("grace", &file.grace, Duration::from_secs(1))?;
    let older_than = duration("older_than", &file.older_than, grace)?;
    let every = duration("every", &file.every, Duration::from_millis(100))?;
    if every.is_zero() {
        return Err(Error::bad_input(format!(
            "{what}: every = 0 would poll without pause; use e.g. every = \"100ms\""
        )));
    }
    Ok(Strategy::KillBlockers {
        grace,
        older_than,
        every,
    })
}

/// Refuses the first key given in `file` that `kind` does not read (`allowed`).
fn check_keys(what: &str, kind: &str, file: &StrategyFile, allowed: &[&str]) -> Result<(), Error> {
    // Fields that only some kinds take; each kind says which it reads.
    let given = [
        ("lock_timeout", file.lock_timeout.is_some()),
        ("statement_timeout", file.statement_timeout.is_some()),
        ("max_tries", file.max_tries.is_some()),
        ("backoff", file.backoff.is_some()),
        ("schedule", file.schedule.is_some()),
        ("set_local", file.set_local.is_some()),
        ("grace", file.grace.is_some()),
        ("older_than", file.older_than.is_some()),
        ("every", file.every.is_some()),
        ("wait_at_most", file.wait_at_most.is_some()),
    ];
    match given
        .iter()
        .find(|(key, present)| *present && !allowed.contains(key))
    {
        Some((key, _)) => Err(Error::bad_input(format!(
            "{what}: kind \"{kind}\" takes no {key}; it takes {}",
            if allowed.is_empty() {
                "no settings".to_string()
            } else {
                allowed.join(", ")
            }
        ))),
        None => Ok(()),
    }
}

/// Adds the fields every kind takes: its own migration steps and session settings.
fn with_ddl_and_settings(
    what: &str,
    strategy: Strategy,
    file: &StrategyFile,
) -> Result<NamedStrategy, Error> {
    if file.ddl.as_ref().is_some_and(|steps| steps.is_empty()) {
        return Err(Error::bad_input(format!(
            "{what}: ddl = [] has no statements; list the migration steps or leave ddl out"
        )));
    }
    let settings: Vec<(String, String)> = file
        .settings
        .iter()
        .flatten()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    if let Some((name, _)) = settings.iter().find(|(name, _)| {
        !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    }) {
        return Err(Error::bad_input(format!(
            "{what}: settings key {name:?} is not a PostgreSQL setting name"
        )));
    }
    Ok(NamedStrategy {
        name: file.name.clone(),
        strategy,
        ddl_steps: file.ddl.clone(),
        settings,
    })
}

/// The retry settings of `lock-timeout-retry` and `wait-for-idle`: either
/// `lock_timeout` + `max_tries` + `backoff`, or an explicit `schedule`.
fn parse_retry(what: &str, file: &StrategyFile) -> Result<RetryPolicy, Error> {
    let statement_timeout = file
        .statement_timeout
        .as_deref()
        .map(|text| parse_duration(&format!("{what}: statement_timeout"), text))
        .transpose()?;
    let schedule = match &file.schedule {
        Some(pairs) => parse_schedule(what, file, pairs)?,
        None => parse_uniform(what, file)?,
    };
    Ok(RetryPolicy {
        schedule,
        statement_timeout,
        set_local: file.set_local.unwrap_or(false),
    })
}

/// `schedule = [["lock_timeout", "sleep"], ...]`: each try with its own timeout and sleep.
fn parse_schedule(
    what: &str,
    file: &StrategyFile,
    pairs: &[(String, String)],
) -> Result<Schedule, Error> {
    if file.lock_timeout.is_some() || file.max_tries.is_some() || file.backoff.is_some() {
        return Err(Error::bad_input(format!(
            "{what}: give either schedule = [[\"lock_timeout\", \"sleep\"], ...] or \
             lock_timeout/max_tries/backoff, not both"
        )));
    }
    if pairs.is_empty() {
        return Err(Error::bad_input(format!(
            "{what}: schedule = [] has no tries; list at least one [\"500ms\", \"1s\"]"
        )));
    }
    let steps = pairs
        .iter()
        .enumerate()
        .map(|(index, (lock_timeout, sleep))| {
            let at = format!("{what}: schedule[{index}]");
            Ok(ScheduledTry {
                lock_timeout: parse_lock_timeout(&at, lock_timeout)?,
                sleep: parse_duration(&format!("{at} sleep"), sleep)?,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(Schedule::Steps(steps))
}

/// `lock_timeout` + `max_tries` (default 10) + `backoff` (default linear 1s steps up to 5s).
fn parse_uniform(what: &str, file: &StrategyFile) -> Result<Schedule, Error> {
    let lock_timeout = match &file.lock_timeout {
        Some(text) => parse_lock_timeout(what, text)?,
        None => {
            return Err(Error::bad_input(format!(
                "{what}: needs lock_timeout (e.g. lock_timeout = \"500ms\") or a schedule"
            )));
        }
    };
    let max_tries = file.max_tries.unwrap_or(10);
    if max_tries == 0 {
        return Err(Error::bad_input(format!(
            "{what}: max_tries = 0; need at least 1 try"
        )));
    }
    let backoff = match &file.backoff {
        Some(backoff) => parse_backoff(what, backoff)?,
        None => Backoff::Linear {
            step: Duration::from_secs(1),
            cap: Duration::from_secs(5),
        },
    };
    Ok(Schedule::Uniform {
        lock_timeout,
        max_tries,
        backoff,
    })
}

fn parse_lock_timeout(what: &str, text: &str) -> Result<Duration, Error> {
    let lock_timeout = parse_duration(&format!("{what}: lock_timeout"), text)?;
    if lock_timeout.is_zero() {
        return Err(Error::bad_input(format!(
            "{what}: lock_timeout = 0 waits forever; use kind = \"plain\" for that, or a timeout like \"500ms\""
        )));
    }
    Ok(lock_timeout)
}

fn parse_backoff(what: &str, file: &BackoffFile) -> Result<Backoff, Error> {
    let duration = |key: &str, value: &Option<String>| -> Result<Duration, Error> {
        match value {
            Some(text) => parse_duration(&format!("{what}: backoff {key}"), text),
            None => Err(Error::bad_input(format!(
                "{what}: backoff kind \"{}\" needs {key}, e.g. {key} = \"1s\"",
                file.kind
            ))),
        }
    };
    let refuse = |key: &str, present: bool| -> Result<(), Error> {
        if present {
            Err(Error::bad_input(format!(
                "{what}: backoff kind \"{}\" takes no {key}",
                file.kind
            )))
        } else {
            Ok(())
        }
    };
    match file.kind.as_str() {
        "linear" => {
            refuse("base", file.base.is_some())?;
            refuse("jitter", file.jitter.is_some())?;
            Ok(Backoff::Linear {
                step: duration("step", &file.step)?,
                cap: duration("cap", &file.cap)?,
            })
        }
        "exponential" => {
            refuse("step", file.step.is_some())?;
            let jitter = match file.jitter.as_deref() {
                None => Jitter::None,
                Some(text) => Jitter::parse(text).ok_or_else(|| {
                    Error::bad_input(format!(
                        "{what}: backoff jitter = \"{text}\"; use \"none\", \"full\" or \"add-up-to-50%\""
                    ))
                })?,
            };
            Ok(Backoff::Exponential {
                base: duration("base", &file.base)?,
                cap: duration("cap", &file.cap)?,
                jitter,
            })
        }
        other => Err(Error::bad_input(format!(
            "{what}: unknown backoff kind \"{other}\"; use \"linear\" or \"exponential\""
        ))),
    }
}

fn check_unique_names(source: &str, strategies: &[NamedStrategy]) -> Result<(), Error> {
    for (index, strategy) in strategies.iter().enumerate() {
        if strategies[..index]
            .iter()
            .any(|earlier| earlier.name == strategy.name)
        {
            return Err(Error::bad_input(format!(
                "{source}: strategy {} is defined twice; give each [[strategies]] its own name",
                strategy.name
            )));
        }
    }
    Ok(())
}

/// `strategies` with the `lock_timeout` of the one named `name` set to `text`,
/// read as its workload key is (a sweep value, `--sweep NAME.lock_timeout=...`).
/// The strategy must be among those that run and have one lock_timeout for
/// every try (not an explicit schedule).
pub(super) fn with_lock_timeout(
    mut strategies: Vec<NamedStrategy>,
    name: &str,
    text: &str,
) -> Result<Vec<NamedStrategy>, Error> {
    let given = format!("--sweep {name}.lock_timeout={text}");
    let running: Vec<String> = strategies.iter().map(|s| s.name.clone()).collect();
    let Some(named) = strategies.iter_mut().find(|strategy| strategy.name == name) else {
        return Err(Error::bad_input(format!(
            "{given}: {name} is not among the strategies that run ({}); sweep one of them",
            running.join(", ")
        )));
    };
    let lock_timeout = parse_lock_timeout(&given, text)?;
    let slot = match &mut named.strategy {
        Strategy::LockTimeoutRetry(retry)
        | Strategy::WaitForIdle { retry, .. }
        | Strategy::ReplicaAware { retry, .. } => match &mut retry.schedule {
            Schedule::Uniform { lock_timeout, .. } => Some(lock_timeout),
            Schedule::Steps(_) => None,
        },
        Strategy::KillLockHolders { lock_timeout, .. } => Some(lock_timeout),
        Strategy::Plain | Strategy::KillBlockers { .. } => None,
    };
    match slot {
        Some(slot) => *slot = lock_timeout,
        None => {
            return Err(Error::bad_input(format!(
                "{given}: {name} has no single lock_timeout to vary ({}); sweep a strategy                  with lock_timeout = \"...\"",
                named.describe()
            )));
        }
    }
    Ok(strategies)
}

fn pick_strategy(
    source: &str,
    defined: &[NamedStrategy],
    name: &str,
) -> Result<NamedStrategy, Error> {
    defined
        .iter()
        .find(|strategy| strategy.name == name)
        .cloned()
        .or_else(|| preset(name))
        .ok_or_else(|| {
            Error::bad_input(format!(
                "unknown strategy {name:?}; {}",
                valid_names(source, defined)
            ))
        })
}

/// The names a command may run, each once: the workload's own, then the other presets.
fn valid_names(source: &str, defined: &[NamedStrategy]) -> String {
    let own: Vec<&str> = defined.iter().map(|s| s.name.as_str()).collect();
    let presets: Vec<&str> = PRESET_NAMES
        .iter()
        .copied()
        .filter(|preset| !own.contains(preset))
        .collect();
    match (own.is_empty(), presets.is_empty()) {
        (true, _) => format!("the presets are: {}, or all", presets.join(", ")),
        (false, true) => format!("{source} defines: {}, or all", own.join(", ")),
        (false, false) => format!(
            "{source} defines: {}; the other presets are: {}, or all",
            own.join(", "),
            presets.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_schedule_gives_each_try_its_timeout_and_sleep() {
        let file = StrategyFile {
            name: "custom".into(),
            kind: Some("lock-timeout-retry".into()),
            schedule: Some(vec![
                ("100ms".into(), "50ms".into()),
                ("1s".into(), "5s".into()),
            ]),
            set_local: Some(true),
            ..StrategyFile::default()
        };
        let strategy = parse_strategy("w", &file).unwrap();
        let Strategy::LockTimeoutRetry(policy) = strategy.strategy else {
            panic!("{strategy:?}")
        };
        assert_eq!(
            policy.schedule,
            Schedule::Steps(vec![
                ScheduledTry {
                    lock_timeout: Duration::from_millis(100),
                    sleep: Duration::from_millis(50)
                },
                ScheduledTry {
                    lock_timeout: Duration::from_secs(1),
                    sleep: Duration::from_secs(5)
                },
            ])
        );
        assert!(policy.set_local);
        let both = StrategyFile {
            lock_timeout: Some("1s".into()),
            ..file
        };
        let message = parse_strategy("w", &both).unwrap_err().to_string();
        assert!(message.contains("not both"), "{message}");
    }

    #[test]
    fn a_strategy_without_kind_must_be_a_preset() {
        let file = StrategyFile {
            name: "pgroll".into(),
            ..StrategyFile::default()
        };
        assert_eq!(
            parse_strategy("w", &file).unwrap(),
            preset("pgroll").unwrap()
        );
        let unknown = StrategyFile {
            name: "mine".into(),
            ..StrategyFile::default()
        };
        let message = parse_strategy("w", &unknown).unwrap_err().to_string();
        assert!(message.contains("is not a preset"), "{message}");
    }

    #[test]
    fn strategy_fields_must_fit_the_kind() {
        let plain_with_timeout = StrategyFile {
            name: "x".into(),
            kind: Some("plain".into()),
            lock_timeout: Some("1s".into()),
            ..StrategyFile::default()
        };
        let message = parse_strategy("w", &plain_with_timeout)
            .unwrap_err()
            .to_string();
        assert!(message.contains("takes no lock_timeout"), "{message}");

        let retry_without_timeout = StrategyFile {
            kind: Some("lock-timeout-retry".into()),
            lock_timeout: None,
            ..plain_with_timeout
        };
        let message = parse_strategy("w", &retry_without_timeout)
            .unwrap_err()
            .to_string();
        assert!(message.contains("needs lock_timeout"), "{message}");
    }

    #[test]
    fn the_killing_kinds_take_their_parameters_with_the_presets_defaults() {
        let pg_osc = StrategyFile {
            name: "pg-osc-4s".into(),
            kind: Some("kill-lock-holders".into()),
            lock_timeout: Some("4s".into()),
            ..StrategyFile::default()
        };
        assert_eq!(
            parse_strategy("w", &pg_osc).unwrap().strategy,
            Strategy::KillLockHolders {
                lock_timeout: Duration::from_secs(4),
                max_tries: 3,
            }
        );
        let with_grace = StrategyFile {
            kind: Some("kill-lock-holders".into()),
            grace: Some("1s".into()),
            ..pg_osc
        };
        let message = parse_strategy("w", &with_grace).unwrap_err().to_string();
        assert!(
            message.contains("takes no grace; it takes lock_timeout, max_tries"),
            "{message}"
        );

        let kill = StrategyFile {
            name: "kill".into(),
            kind: Some("kill-blockers".into()),
            grace: Some("2s".into()),
            ..StrategyFile::default()
        };
        assert_eq!(
            parse_strategy("w", &kill).unwrap().strategy,
            Strategy::KillBlockers {
                grace: Duration::from_secs(2),
                older_than: Duration::from_secs(2),
                every: Duration::from_millis(100),
            }
        );
        let django = StrategyFile {
            name: "django-pgmigrate".into(),
            older_than: Some("0s".into()),
            grace: Some("1s".into()),
            every: Some("1s".into()),
            ..kill
        };
        assert_eq!(
            parse_strategy("w", &django).unwrap(),
            preset("django-pgmigrate").unwrap()
        );
    }

    fn named(names: &[&str]) -> Vec<NamedStrategy> {
        names.iter().map(|name| preset(name).unwrap()).collect()
    }

    #[test]
    fn listed_strategies_are_trimmed_and_each_listed_once() {
        let mode = Mode::Compare {
            strategies: vec!["naive".into(), " retry".into()],
        };
        let picked = select_strategies("w", named(&["naive", "retry"]), &mode).unwrap();
        let names: Vec<&str> = picked.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["naive", "retry"]);

        let twice = Mode::Compare {
            strategies: vec!["naive".into(), "naive".into()],
        };
        let message = select_strategies("w", named(&["naive"]), &twice)
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            "--strategies naive,naive: naive is listed twice; list each strategy once"
        );
    }

    #[test]
    fn the_valid_names_are_listed_once() {
        let message = pick_strategy("w", &named(&["naive", "retry"]), "yolo")
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            "unknown strategy \"yolo\"; w defines: naive, retry; the other presets are: gitlab, \
             pgroll, reshape, postgres-ai, strong-migrations, pg-osc, django-pgmigrate, kill-blockers, \
             wait-for-idle, replica-aware, or all"
        );
        let message = pick_strategy("w", &[], "yolo").unwrap_err().to_string();
        assert!(
            message.ends_with(&format!(
                "the presets are: {}, or all",
                PRESET_NAMES.join(", ")
            )),
            "{message}"
        );
    }
}
