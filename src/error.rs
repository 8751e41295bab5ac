//! The harness's error: bad input (exit 2), a runtime failure (exit 1), or a
//! closed stdout (exit 141, nothing printed); and every exit code the process
//! ends with, in one place ([`exit_code`]).

/// The process exit codes (README.md, "Exit codes").
pub mod exit_code {
    /// The run finished and every expectation held.
    pub const SUCCESS: i32 = 0;
    /// Server, connection or I/O failed.
    pub const RUNTIME: i32 = 1;
    /// Flags, workload file, script, or statements that cannot run on the schema.
    pub const BAD_INPUT: i32 = 2;
    /// The run finished but an expectation (or a check budget) failed.
    pub const EXPECTATION_FAILED: i32 = 3;
    /// The scenario did not run as written (the blocker failed, or the DDL
    /// failed for a reason other than its lock) and no expectation names that outcome.
    pub const INVALID: i32 = 4;
    /// The reader of stdout went away: 128 + SIGPIPE, as a shell expects.
    pub const STDOUT_CLOSED: i32 = 141;
}

/// An error that knows its exit code. Messages name the input, the problem and the fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Flags, workload file or script are wrong: exit 2.
    #[error("{0}")]
    BadInput(String),
    /// Server, connection or I/O failed: exit 1.
    #[error("{0:#}")]
    Runtime(#[from] anyhow::Error),
    /// The reader of stdout went away (`stallbench compare | head -3`): exit 141,
    /// the shell's status for a process killed by SIGPIPE; main prints nothing.
    #[error("stdout was closed by its reader")]
    StdoutClosed,
}

impl Error {
    pub fn bad_input(message: impl Into<String>) -> Error {
        Error::BadInput(message.into())
    }

    pub fn runtime(message: impl Into<String>) -> Error {
        Error::Runtime(anyhow::anyhow!(message.into()))
    }

    /// The process exit code for this error (see README.md, "Exit codes").
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::BadInput(_) => exit_code::BAD_INPUT,
            Error::Runtime(_) => exit_code::RUNTIME,
            Error::StdoutClosed => exit_code::STDOUT_CLOSED,
        }
    }

    /// Messages quote what the user wrote; a control character in it (a newline in a
    /// `--set` value, a stray `\r` in a file) is shown escaped, so the error stays one line.
    pub fn one_line(self) -> Error {
        match self {
            Error::BadInput(message) if message.contains(char::is_control) => Error::BadInput(
                message
                    .chars()
                    .map(|character| match character.is_control() {
                        true => character.escape_default().to_string(),
                        false => character.to_string(),
                    })
                    .collect(),
            ),
            other => other,
        }
    }
}
