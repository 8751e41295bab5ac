//! The harness's error: bad input (exit 2), a runtime failure (exit 1), or a
//! closed stdout (exit 141, nothing printed).

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
            Error::BadInput(_) => 2,
            Error::Runtime(_) => 1,
            // 128 + SIGPIPE.
            Error::StdoutClosed => 141,
        }
    }
}
