//! The one way to stdout, and the one way to stderr. `print!` and `eprint!`
//! panic ("failed printing to stdout: Broken pipe") when the reader has gone
//! (`stallbench compare | head -3`, a closed stderr pipe). A closed stdout
//! ends the program quietly with the status a shell expects, and the run's
//! cleanup still happens on the way out; a closed stderr is ignored, since
//! the run's results do not depend on anyone reading its progress.
//!
//! Nothing but text reaches either: a control character in what is written (a
//! server's message, a name from a file) is written as its escape, so no
//! output colours a terminal or a CI log or moves its cursor.

use std::borrow::Cow;
use std::io::{ErrorKind, Write};
use std::sync::Mutex;

use crate::error::Error;

/// Writes `text` to stdout and flushes it; a closed stdout is [`Error::StdoutClosed`].
pub fn write_stdout(text: &str) -> Result<(), Error> {
    write_to(&mut std::io::stdout().lock(), text)
}

/// `eprintln!` that never panics: a line to stderr through [`eprint_line`].
#[macro_export]
macro_rules! stderrln {
    ($($arg:tt)*) => {
        $crate::output::eprint_line(&format!($($arg)*))
    };
}

/// Writes `line` and a newline to stderr; a failed write is ignored (nobody can read it).
/// While a progress bar is shown (see [`set_progress_bar`]) the line goes above it.
pub fn eprint_line(line: &str) {
    let bar = PROGRESS_BAR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    match bar {
        Some(bar) => bar.suspend(|| {
            let _ = writeln!(std::io::stderr().lock(), "{}", printable(line));
        }),
        None => {
            let _ = writeln!(std::io::stderr().lock(), "{}", printable(line));
        }
    }
}

/// The progress bar at the bottom of stderr, if one is shown.
static PROGRESS_BAR: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);

/// Shows lines written through [`eprint_line`] above `bar` from now on (`None`: no bar).
pub fn set_progress_bar(bar: Option<indicatif::ProgressBar>) {
    *PROGRESS_BAR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = bar;
}

/// `text` with every control character other than a newline or a tab written
/// as its escape (`\u{1b}`, `\r`).
fn printable(text: &str) -> Cow<'_, str> {
    let is_control = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.contains(is_control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| match is_control(c) {
                true => c.escape_default().to_string(),
                false => c.to_string(),
            })
            .collect(),
    )
}

fn write_to(out: &mut impl Write, text: &str) -> Result<(), Error> {
    let text = printable(text);
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == ErrorKind::BrokenPipe => Err(Error::StdoutClosed),
        Err(err) => Err(Error::Runtime(
            anyhow::Error::new(err).context("writing to stdout"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that fails every write with `kind`.
    struct Failing(ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(self.0.into())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_broken_pipe_is_a_closed_stdout_and_other_failures_are_runtime_errors() {
        let closed = write_to(&mut Failing(ErrorKind::BrokenPipe), "x").unwrap_err();
        assert!(matches!(closed, Error::StdoutClosed), "{closed:?}");
        assert_eq!(closed.exit_code(), 141);
        let full = write_to(&mut Failing(ErrorKind::StorageFull), "x").unwrap_err();
        assert_eq!(full.exit_code(), 1);
        assert!(full.to_string().contains("writing to stdout"), "{full}");
    }

    #[test]
    fn the_text_is_written_whole() {
        let mut out = Vec::new();
        write_to(&mut out, "a\nb\tc\n").unwrap();
        assert_eq!(out, b"a\nb\tc\n");
    }

    #[test]
    fn control_characters_are_written_as_their_escapes() {
        let mut out = Vec::new();
        write_to(&mut out, "\u{1b}[31mred\u{1b}[0m\r\n").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\\u{1b}[31mred\\u{1b}[0m\\r\n"
        );
        assert!(matches!(printable("plain\n"), Cow::Borrowed(_)));
    }
}
