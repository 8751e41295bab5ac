//! Durations as users write them (`"500ms"`, `--duration 24s`), read the same
//! way for every flag (through [`DurationParser`]) and workload key so every
//! message names its source.

use std::ffi::OsStr;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;

use crate::error::Error;

/// The longest duration any key or flag takes: a run keeps a row per second,
/// and times are added to the run's start, so a week is plenty and stays cheap.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Parses a humantime duration; `what` names the key or flag in the message.
pub fn parse_duration(what: &str, text: &str) -> Result<Duration, Error> {
    let trimmed = text.trim();
    // A flag reads `--duration 10`, a workload key `[ddl] at = "6"`.
    let given = if what.starts_with("--") {
        format!("{what} {text}")
    } else {
        format!("{what} = \"{text}\"")
    };
    if !trimmed.is_empty() && trimmed.parse::<f64>().is_ok() {
        return Err(Error::bad_input(format!(
            "{given} has no unit; write \"{trimmed}s\" (or ms, min)"
        )));
    }
    let duration = humantime::parse_duration(trimmed).map_err(|err| {
        Error::bad_input(format!(
            "{given} is not a duration ({err}); write it like \"500ms\" or \"12s\""
        ))
    })?;
    if duration > MAX_DURATION {
        return Err(Error::bad_input(format!(
            "{given} is longer than {}, the longest run, start time or timeout stallbench \
             takes; use a shorter one",
            humantime::format_duration(MAX_DURATION)
        )));
    }
    Ok(duration)
}

/// A duration flag's value: [`parse_duration`], its error on one line (see
/// [`Error::one_line`]).
pub fn parse_flag(flag: &str, text: &str) -> Result<Duration, Error> {
    parse_duration(flag, text).map_err(Error::one_line)
}

/// The clap parser of a duration flag: [`parse_duration`] with the flag's
/// name, so `--help` shows the type and clap writes the error (exit 2), in
/// the words a workload key's error uses.
#[derive(Debug, Clone, Copy)]
pub struct DurationParser;

impl TypedValueParser for DurationParser {
    type Value = Duration;

    fn parse_ref(
        &self,
        command: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<Duration, clap::Error> {
        let flag = arg
            .and_then(|arg| arg.get_long())
            .map(|long| format!("--{long}"))
            .unwrap_or_else(|| "a duration".to_string());
        let text = value.to_string_lossy();
        parse_flag(&flag, &text).map_err(|error| {
            clap::Error::raw(ErrorKind::ValueValidation, format!("{error}\n")).with_cmd(command)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_without_unit_says_how_to_write_it() {
        let message = parse_duration("[ddl] at", "6").unwrap_err().to_string();
        assert_eq!(
            message,
            "[ddl] at = \"6\" has no unit; write \"6s\" (or ms, min)"
        );
        assert!(parse_duration("x", "soon").is_err());
        assert_eq!(parse_duration("x", "7days").unwrap(), MAX_DURATION);
        let message = parse_duration("--duration", "18446744073709551615s")
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            "--duration 18446744073709551615s is longer than 7days, the longest run, start \
             time or timeout stallbench takes; use a shorter one"
        );
        assert_eq!(
            parse_duration("x", "1.5s").unwrap(),
            Duration::from_millis(1500)
        );
    }
}
