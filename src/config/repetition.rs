//! How often and over which values a compare runs: `--repeat N` (`[load]
//! repeat`) and `--sweep NAME=V1,V2,...` (`[sweep]`). A sweep value is not
//! parsed here: each is handed to the code that reads the flag or key it
//! stands for (`--clients`, `--rate`, `--blocker-hold`, `--set`, a strategy's
//! `lock_timeout`), so a value is checked exactly as that flag would be.

use std::time::Duration;

use crate::cli::{CommonArgs, SweepArg, check_sweep_values};
use crate::duration::parse_duration;
use crate::error::Error;
use crate::workload::{LoadFile, SweepFile};

/// The most repeats a run takes: each is a whole run of every strategy.
pub const MAX_REPEATS: u32 = 100;

/// What `--sweep` varies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepSetting {
    /// A strategy's `lock_timeout` (`retry.lock_timeout`), as its workload key.
    LockTimeout { strategy: String },
    /// The blocker's hold (`blocker.hold`), as `--blocker-hold`.
    BlockerHold,
    /// The number of clients (`clients`), as `--clients`.
    Clients,
    /// The open loop's rate (`rate`), as `--rate`.
    Rate,
    /// The most tries of a transaction (`load.max_tries`), as `--max-tries`.
    MaxTries,
    /// A script variable (`scale`), as `--set NAME=VALUE`.
    Variable(String),
    /// The standby's `max_standby_streaming_delay`
    /// (`replica.max_standby_streaming_delay`), as its `[replica]` key.
    StandbyDelay,
    /// The standby's `hot_standby_feedback` (`replica.hot_standby_feedback`),
    /// as its `[replica]` key: `on` or `off`.
    StandbyFeedback,
}

/// One setting and the values a sweep runs it at, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// What the sweep varies.
    pub setting: SweepSetting,
    /// The values as written, in the order they run.
    pub values: Vec<String>,
}

impl SweepSetting {
    /// The setting a sweep's name stands for (`retry.lock_timeout`, `clients`,
    /// `scale`); `None` for a name no sweep takes.
    pub fn named(name: &str) -> Option<SweepSetting> {
        parse_setting("", name).ok()
    }

    /// Its name as written: `retry.lock_timeout`, `blocker.hold`, `clients`, `scale`.
    pub fn name(&self) -> String {
        match self {
            SweepSetting::LockTimeout { strategy } => format!("{strategy}.lock_timeout"),
            SweepSetting::BlockerHold => "blocker.hold".to_string(),
            SweepSetting::Clients => "clients".to_string(),
            SweepSetting::Rate => "rate".to_string(),
            SweepSetting::MaxTries => "load.max_tries".to_string(),
            SweepSetting::Variable(name) => name.clone(),
            SweepSetting::StandbyDelay => "replica.max_standby_streaming_delay".to_string(),
            SweepSetting::StandbyFeedback => "replica.hot_standby_feedback".to_string(),
        }
    }

    /// Whether its values are durations (the chart's x axis is then logarithmic).
    pub fn is_duration(&self) -> bool {
        matches!(
            self,
            SweepSetting::LockTimeout { .. }
                | SweepSetting::BlockerHold
                | SweepSetting::StandbyDelay
        )
    }
}

impl Sweep {
    /// The setting's name as written: `retry.lock_timeout`, `blocker.hold`, `clients`, `scale`.
    pub fn name(&self) -> String {
        self.setting.name()
    }

    /// The setting's short name, for the column of `sweep.csv` and sentences:
    /// `lock_timeout`, `hold`, `clients`, `rate`, or the variable's name.
    pub fn short_name(&self) -> &str {
        match &self.setting {
            SweepSetting::LockTimeout { .. } => "lock_timeout",
            SweepSetting::BlockerHold => "hold",
            SweepSetting::Clients => "clients",
            SweepSetting::Rate => "rate",
            SweepSetting::MaxTries => "max_tries",
            SweepSetting::Variable(name) => name,
            SweepSetting::StandbyDelay => "max_standby_streaming_delay",
            SweepSetting::StandbyFeedback => "hot_standby_feedback",
        }
    }

    /// Whether the values are durations (the chart's x axis is then logarithmic).
    pub fn is_duration(&self) -> bool {
        self.setting.is_duration()
    }

    /// The strategy whose figures the sweep varies; `None` when it varies every strategy's.
    pub fn varied_strategy(&self) -> Option<&str> {
        match &self.setting {
            SweepSetting::LockTimeout { strategy } => Some(strategy),
            _ => None,
        }
    }

    /// The results folder of one value, inside the sweep's: `lock_timeout=250ms`,
    /// with any character but letters, digits, `.`, `-` and `_` as `_`.
    pub fn folder(&self, value: &str) -> String {
        let safe: String = value
            .chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    true => c,
                    false => '_',
                },
            )
            .collect();
        format!("{}={safe}", self.short_name())
    }

    /// `lock_timeout=250ms`, as the progress line and sentences name a value.
    pub fn label(&self, value: &str) -> String {
        format!("{}={value}", self.short_name())
    }
}

/// A sweep value as a number for a chart's x axis: a duration in seconds,
/// else the number it reads as; `None` for text that is neither.
pub fn sweep_x_value(is_duration: bool, value: &str) -> Option<f64> {
    if is_duration {
        humantime::parse_duration(value.trim())
            .ok()
            .map(|duration: Duration| duration.as_secs_f64())
    } else {
        value.trim().parse::<f64>().ok()
    }
}

/// `--repeat`, else `[load] repeat`, else 1; from 1 to [`MAX_REPEATS`].
pub(super) fn parse_repeat(source: &str, file: &LoadFile, args: &CommonArgs) -> Result<u32, Error> {
    let (given, repeat) = match (args.repeat, file.repeat) {
        (Some(repeat), _) => (format!("--repeat {repeat}"), repeat),
        (None, Some(repeat)) => (format!("{source}: [load] repeat = {repeat}"), repeat),
        (None, None) => return Ok(1),
    };
    if repeat == 0 {
        return Err(Error::bad_input(format!(
            "{given}: each strategy must run at least once; use 1 or more"
        )));
    }
    if repeat > MAX_REPEATS {
        return Err(Error::bad_input(format!(
            "{given}: more than {MAX_REPEATS} repeats; use fewer (5 give a 95% interval)"
        )));
    }
    Ok(repeat)
}

/// `--sweep NAME=V1,V2,...`, else `[sweep]`; `None` without either. The
/// flag's values were checked as clap read it ([`SweepArg::parse`]), the
/// table's are checked here the same way ([`check_sweep_values`]); each value
/// itself is checked where it is applied ([`args_at`], and a strategy's
/// `lock_timeout` in `strategies.rs`).
pub(super) fn parse_sweep(
    source: &str,
    file: Option<&SweepFile>,
    flag: Option<&SweepArg>,
) -> Result<Option<Sweep>, Error> {
    match (flag, file) {
        (Some(flag), _) => {
            let setting = parse_setting(&format!("--sweep {}", flag.written), &flag.name)?;
            Ok(Some(Sweep {
                setting,
                values: flag.values.clone(),
            }))
        }
        (None, Some(file)) => {
            let given = format!("{source}: [sweep] name = \"{}\"", file.name);
            let setting = parse_setting(&given, file.name.trim())?;
            let values: Vec<String> = file.values.iter().map(|v| v.trim().to_string()).collect();
            check_sweep_values(&values)
                .map_err(|problem| Error::bad_input(format!("{given}: {problem}")))?;
            Ok(Some(Sweep { setting, values }))
        }
        (None, None) => Ok(None),
    }
}

/// The setting a sweep's name stands for.
fn parse_setting(given: &str, name: &str) -> Result<SweepSetting, Error> {
    let names = "a strategy's lock_timeout (retry.lock_timeout), blocker.hold, clients, rate, \
                 load.max_tries, replica.max_standby_streaming_delay, replica.hot_standby_feedback or a script \
                 variable";
    match name.split_once('.') {
        Some((strategy, "lock_timeout")) if !strategy.is_empty() => Ok(SweepSetting::LockTimeout {
            strategy: strategy.to_string(),
        }),
        Some(("blocker", "hold")) => Ok(SweepSetting::BlockerHold),
        Some(("load", "max_tries")) => Ok(SweepSetting::MaxTries),
        Some(("replica", "max_standby_streaming_delay")) => Ok(SweepSetting::StandbyDelay),
        Some(("replica", "hot_standby_feedback")) => Ok(SweepSetting::StandbyFeedback),
        Some(_) => Err(Error::bad_input(format!(
            "{given}: {name} cannot be swept; sweep {names}"
        ))),
        None if name == "clients" => Ok(SweepSetting::Clients),
        None if name == "rate" => Ok(SweepSetting::Rate),
        None if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            Ok(SweepSetting::Variable(name.to_string()))
        }
        None => Err(Error::bad_input(format!(
            "{given}: no setting named; sweep {names}"
        ))),
    }
}

/// `args` with the flag that `setting` stands for set to `value`, no sweep of
/// its own, writing into `out`; a strategy's `lock_timeout` and the standby's
/// settings have no flag and are applied to the strategy
/// (`strategies::with_lock_timeout`) and to `[replica]` (`replica.rs`) instead.
pub(super) fn args_at(
    setting: &SweepSetting,
    args: &CommonArgs,
    value: &str,
    out: std::path::PathBuf,
) -> Result<CommonArgs, Error> {
    let mut args = CommonArgs {
        sweep: None,
        out: Some(out),
        ..args.clone()
    };
    let not_a = |what: &str| {
        Error::bad_input(format!(
            "--sweep {}={value}: {value} is not {what}",
            setting.name()
        ))
    };
    match setting {
        SweepSetting::LockTimeout { .. }
        | SweepSetting::StandbyDelay
        | SweepSetting::StandbyFeedback => {}
        SweepSetting::BlockerHold => {
            args.workload.blocker_hold = Some(parse_duration("--blocker-hold", value)?)
        }
        SweepSetting::Clients => {
            args.clients = Some(
                value
                    .parse()
                    .map_err(|_| not_a("a whole number of clients"))?,
            );
        }
        SweepSetting::Rate => {
            args.rate = Some(
                value
                    .parse()
                    .map_err(|_| not_a("a number of transactions per second"))?,
            );
        }
        SweepSetting::MaxTries => {
            args.max_tries = Some(
                value
                    .parse()
                    .map_err(|_| not_a("a whole number of tries (0: no limit)"))?,
            );
        }
        SweepSetting::Variable(name) => args.variables.push(format!("{name}={value}")),
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--sweep flag`, read as clap reads it, then by [`parse_sweep`].
    fn sweep(flag: &str) -> Result<Sweep, String> {
        let flag = SweepArg::parse(flag)?;
        parse_sweep("w", None, Some(&flag))
            .map(Option::unwrap)
            .map_err(|error| error.to_string())
    }

    #[test]
    fn the_setting_is_named_by_the_flag_or_key_it_stands_for() {
        let lock = sweep("retry.lock_timeout=50ms, 100ms,2s").unwrap();
        assert_eq!(
            lock.setting,
            SweepSetting::LockTimeout {
                strategy: "retry".into()
            }
        );
        assert_eq!(lock.values, ["50ms", "100ms", "2s"]);
        assert_eq!(lock.name(), "retry.lock_timeout");
        assert_eq!(lock.folder("100ms"), "lock_timeout=100ms");
        assert_eq!(lock.label("2s"), "lock_timeout=2s");
        assert!(lock.is_duration());
        assert_eq!(
            sweep("blocker.hold=2s,5s").unwrap().setting,
            SweepSetting::BlockerHold
        );
        assert_eq!(sweep("clients=1,2").unwrap().setting, SweepSetting::Clients);
        let tries = sweep("load.max_tries=1,3,10").unwrap();
        assert_eq!(tries.setting, SweepSetting::MaxTries);
        assert_eq!(
            (tries.name(), tries.folder("3")),
            ("load.max_tries".into(), "max_tries=3".into())
        );
        let at = args_at(&tries.setting, &CommonArgs::default(), "3", "out".into()).unwrap();
        assert_eq!(at.max_tries, Some(3));
        let wrong = args_at(&tries.setting, &CommonArgs::default(), "x", "out".into());
        assert!(
            wrong
                .unwrap_err()
                .to_string()
                .contains("x is not a whole number of tries")
        );
        let delay = sweep("replica.max_standby_streaming_delay=1s,30s").unwrap();
        assert_eq!(delay.setting, SweepSetting::StandbyDelay);
        assert_eq!(delay.name(), "replica.max_standby_streaming_delay");
        assert_eq!(delay.folder("1s"), "max_standby_streaming_delay=1s");
        assert!(delay.is_duration());
        let feedback = sweep("replica.hot_standby_feedback=on,off").unwrap();
        assert_eq!(feedback.setting, SweepSetting::StandbyFeedback);
        assert!(!feedback.is_duration());
        assert_eq!(sweep("rate=100,200").unwrap().setting, SweepSetting::Rate);
        let scale = sweep("scale=1,5,10").unwrap();
        assert_eq!(scale.setting, SweepSetting::Variable("scale".into()));
        assert!(!scale.is_duration());
        assert_eq!(scale.folder("a/b c"), "scale=a_b_c");
        let file = SweepFile {
            name: "clients".into(),
            values: vec!["2".into(), "4".into()],
        };
        let from_file = parse_sweep("w", Some(&file), None).unwrap().unwrap();
        assert_eq!(from_file.values, ["2", "4"]);
        assert_eq!(parse_sweep("w", None, None).unwrap(), None);
    }

    #[test]
    fn a_sweep_that_cannot_run_is_explained() {
        let message = sweep("retry.max_tries=1,2").unwrap_err();
        assert!(message.starts_with("--sweep retry.max_tries=1,2: retry.max_tries cannot be swept; sweep a strategy's lock_timeout"), "{message}");
        assert!(
            sweep("clients")
                .unwrap_err()
                .contains("expected NAME=V1,V2,...")
        );
        assert!(sweep("clients=").unwrap_err().contains("no values"));
        assert!(
            sweep("clients=1,,2")
                .unwrap_err()
                .contains("an empty value")
        );
        assert!(
            sweep("clients=1,2,1")
                .unwrap_err()
                .contains("1 is listed twice")
        );
        assert!(sweep("=1,2").unwrap_err().contains("no setting named"));
        // A [sweep] table's values are checked as the flag's are.
        let file = SweepFile {
            name: "clients".into(),
            values: vec!["2".into(), " 2".into()],
        };
        assert_eq!(
            parse_sweep("w", Some(&file), None).unwrap_err().to_string(),
            "w: [sweep] name = \"clients\": 2 is listed twice; list each value once"
        );
    }

    #[test]
    fn a_value_is_applied_as_its_flag() {
        let args = CommonArgs::default();
        let out = std::path::PathBuf::from("out/clients=8");
        let at = args_at(&SweepSetting::Clients, &args, "8", out.clone()).unwrap();
        assert_eq!(
            (at.clients, at.out.as_deref()),
            (Some(8), Some(out.as_path()))
        );
        let message = args_at(&SweepSetting::Clients, &args, "x", out.clone())
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            "--sweep clients=x: x is not a whole number of clients"
        );
        let at = args_at(
            &SweepSetting::Variable("scale".into()),
            &args,
            "5",
            out.clone(),
        )
        .unwrap();
        assert_eq!(at.variables, ["scale=5"]);
        let at = args_at(&SweepSetting::BlockerHold, &args, "2s", out).unwrap();
        assert_eq!(at.workload.blocker_hold, Some(Duration::from_secs(2)));
        assert_eq!(sweep_x_value(true, "250ms"), Some(0.25));
        assert_eq!(sweep_x_value(false, "7.5"), Some(7.5));
        assert_eq!(sweep_x_value(false, "abc"), None);
    }
}
