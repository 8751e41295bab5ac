//! The blocker's run as plain data: when its transaction held the table,
//! and how it ended. Each engine runs the blocker its own way (PostgreSQL's
//! in `engine::postgres::scenario::blocker`).

use crate::metrics::BlockerWindow;

/// How the blocker's run went.
#[derive(Debug, Clone)]
pub struct BlockerResult {
    pub window: BlockerWindow,
    /// The server's error if the report failed (cancelled at the end of the run, terminated, ...).
    pub error: Option<String>,
}
