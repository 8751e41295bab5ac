//! Running `\shell` and `\setshell` command lines as pgbench does, with
//! `/bin/sh -c`: `\shell` fails when the command exits non-zero; `\setshell`
//! reads the first line of its output (at most 63 bytes, as pgbench's buffer),
//! which must be an integer with nothing but white space after it.
//!
//! Only runs when the run allows it (`--allow-shell`); `config` refuses a
//! script with shell commands otherwise.

use super::eval::EvalError;

/// Bytes of `\setshell` output pgbench reads (its buffer holds 64 with the NUL).
const SETSHELL_OUTPUT_BYTES: usize = 63;

/// Runs `command`; with `capture`, returns the integer its output starts with.
pub async fn run(command: &str, capture: bool) -> Result<Option<i64>, EvalError> {
    let mut shell = tokio::process::Command::new("/bin/sh");
    shell.arg("-c").arg(command).kill_on_drop(true);
    if !capture {
        let status = shell.status().await.map_err(|err| {
            EvalError::Shell(format!("shell: could not launch shell command: {err}"))
        })?;
        return match status.success() {
            true => Ok(None),
            false => Err(EvalError::Shell(format!(
                "shell: could not launch shell command ({status})"
            ))),
        };
    }
    shell.stdin(std::process::Stdio::null());
    let output = shell.output().await.map_err(|err| {
        EvalError::Shell(format!("setshell: could not launch shell command: {err}"))
    })?;
    integer_from_output(&output.stdout).map(Some)
}

/// The integer on the first line of `\setshell` output, read as C's `strtol`
/// reads it, with only white space allowed after it.
pub fn integer_from_output(output: &[u8]) -> Result<i64, EvalError> {
    if output.is_empty() {
        return Err(EvalError::Shell(
            "setshell: could not read result of shell command".to_string(),
        ));
    }
    let first_line_end = output
        .iter()
        .position(|&byte| byte == b'\n')
        .map_or(output.len(), |newline| newline + 1);
    let kept = &output[..first_line_end.min(SETSHELL_OUTPUT_BYTES)];
    let text = String::from_utf8_lossy(kept);
    let trimmed = text.trim();
    let not_integer = || {
        EvalError::Shell(format!(
            "setshell: shell command must return an integer (not \"{}\")",
            text.trim_end_matches('\n')
        ))
    };
    if trimmed.is_empty() {
        return Err(not_integer());
    }
    trimmed.parse::<i64>().map_err(|_| not_integer())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setshell_output_is_an_integer_on_the_first_line() {
        assert_eq!(integer_from_output(b"42\n"), Ok(42));
        assert_eq!(integer_from_output(b"  -7  \nignored\n"), Ok(-7));
        assert!(integer_from_output(b"one").is_err());
        assert!(integer_from_output(b"12abc\n").is_err());
        assert!(integer_from_output(b"").is_err());
        assert!(integer_from_output(b"\n").is_err());
    }

    #[tokio::test]
    async fn shell_runs_commands_and_reports_failures() {
        assert_eq!(run("exit 0", false).await, Ok(None));
        assert!(run("exit 3", false).await.is_err());
        assert_eq!(run("echo 5432", true).await, Ok(Some(5432)));
        assert!(run("echo -n one", true).await.is_err());
    }
}
