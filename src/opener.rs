//! Where people meet the page: the last line a command writes to stdout
//! names its results folder's `report.html` (`open DIR/report.html`), and
//! `--open` hands the page to the desktop's opener: `open` on macOS,
//! `xdg-open` elsewhere. Hand-written because it is one process started and
//! not waited for (an opener that runs the browser itself would hold the
//! command until the browser closed); where there is no opener, stderr says
//! so and the run's result stands.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::Error;
use crate::output;
use crate::results::REPORT_HTML;

/// The program that opens a file as a double-click would.
const OPENER: &str = if cfg!(target_os = "macos") {
    "open"
} else {
    "xdg-open"
};

/// Writes `open DIR/report.html` to stdout and, with `open`, starts the
/// desktop's opener on the page.
pub fn name_the_page(dir: &Path, open: bool) -> Result<(), Error> {
    let page = dir.join(REPORT_HTML);
    output::write_stdout(&format!("open {}\n", page.display()))?;
    if open {
        let started = Command::new(OPENER)
            .arg(&page)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if let Err(err) = started {
            stderrln!(
                "warning: --open: cannot start {OPENER} ({err}); open {} in a browser",
                page.display()
            );
        }
    }
    Ok(())
}
