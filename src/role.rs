//! Who a session of a run is: its [`Role`]. A run names every session it
//! opens `<run prefix>-<role>` in `application_name`, so the lock observer and
//! the DDL injector can tell this run's sessions (and which one) from the rest,
//! and `locks.csv`, the lock chain and the server-log sentences show the role.
//!
//! The load's clients are `reader-N` only when every statement of every load
//! script only reads, else `client-N`, so a chain never calls a writer a
//! reader. Decided from the statements' words, which is enough for a name: a
//! statement the rules below do not know counts as a write.

use std::fmt;

use crate::script::{Command, Script};

/// What the load's clients are called: `reader` when they only read, else `client`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    Reader,
    Client,
}

impl ClientKind {
    /// `Reader` when every SQL statement of `scripts` only reads, else `Client`.
    pub fn of_scripts<'a>(scripts: impl IntoIterator<Item = &'a Script>) -> ClientKind {
        let reads_only = scripts.into_iter().all(|script| {
            script.commands.iter().all(|command| match command {
                Command::Sql { sql, .. } => statement_reads_only(sql),
                Command::Set { .. } | Command::Sleep { .. } => true,
            })
        });
        if reads_only {
            ClientKind::Reader
        } else {
            ClientKind::Client
        }
    }

    fn name(self) -> &'static str {
        match self {
            ClientKind::Reader => "reader",
            ClientKind::Client => "client",
        }
    }
}

impl fmt::Display for ClientKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a session is for. Its name ([`fmt::Display`]) is the suffix of its
/// `application_name` and the role the results show; [`Role::parse`] reads it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Load client `number` (from 1): `reader-3` or `client-3`.
    Client(ClientKind, u32),
    /// Every connection of the application pool, since which one serves a
    /// request changes: `reader-pool` or `client-pool`.
    Pool(ClientKind),
    /// The blocker's session: `report`.
    Report,
    /// The migration's session: `ddl`.
    Ddl,
    /// The second session `kill-blockers` terminates the DDL's blockers from: `killer`.
    Killer,
    /// The lock observer's session: `observer`.
    Observer,
    /// The target's short sessions, one at a time: `admin` (the server's
    /// version and limits), `setup`, `reset`, `cleanup` and `check`.
    Admin,
    Setup,
    Reset,
    Cleanup,
    Check,
    /// The session that holds the run's advisory lock on its schema: `lock`.
    SchemaLock,
    /// A session not of this run, by its backend pid: `external:4242`.
    External(u32),
}

/// The roles whose name is one fixed word, with that word.
const FIXED_NAMES: [(Role, &str); 10] = [
    (Role::Report, "report"),
    (Role::Ddl, "ddl"),
    (Role::Killer, "killer"),
    (Role::Observer, "observer"),
    (Role::Admin, "admin"),
    (Role::Setup, "setup"),
    (Role::Reset, "reset"),
    (Role::Cleanup, "cleanup"),
    (Role::Check, "check"),
    (Role::SchemaLock, "lock"),
];

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::Client(kind, number) => write!(f, "{kind}-{number}"),
            Role::Pool(kind) => write!(f, "{kind}-pool"),
            Role::External(pid) => write!(f, "external:{pid}"),
            fixed => {
                let (_, name) = FIXED_NAMES
                    .iter()
                    .find(|(role, _)| role == fixed)
                    .expect("every other role has a fixed name");
                f.write_str(name)
            }
        }
    }
}

impl Role {
    /// The role whose name is `name` (`reader-3`, `ddl`, `external:42`); `None`
    /// for a name no role has.
    pub fn parse(name: &str) -> Option<Role> {
        if let Some((role, _)) = FIXED_NAMES.iter().find(|(_, fixed)| *fixed == name) {
            return Some(*role);
        }
        if let Some(pid) = name.strip_prefix("external:") {
            return pid.parse().ok().map(Role::External);
        }
        let (kind, rest) = name.split_once('-')?;
        let kind = [ClientKind::Reader, ClientKind::Client]
            .into_iter()
            .find(|candidate| candidate.name() == kind)?;
        match rest {
            "pool" => Some(Role::Pool(kind)),
            number => number.parse().ok().map(|number| Role::Client(kind, number)),
        }
    }

    /// The role of a session by its `application_name`: what follows this
    /// run's `session_prefix` and a `-`, else [`Role::External`] with its `pid`.
    pub fn of_session(session_prefix: &str, application_name: &str, pid: u32) -> Role {
        application_name
            .strip_prefix(session_prefix)
            .and_then(|rest| rest.strip_prefix('-'))
            .and_then(Role::parse)
            .unwrap_or(Role::External(pid))
    }

    /// Whether this is one of the load's clients (a worker or the pool).
    pub fn is_client(self) -> bool {
        matches!(self, Role::Client(..) | Role::Pool(_))
    }
}

/// Whether a role's name (`reader-3`, `client-pool`) is one of the load's clients.
pub fn is_client_role(name: &str) -> bool {
    Role::parse(name).is_some_and(Role::is_client)
}

/// A statement that only reads: SELECT, WITH, VALUES, TABLE or SHOW without a
/// row lock (`FOR UPDATE`, `FOR SHARE` ...), `INTO` or a data-modifying word;
/// transaction control (BEGIN, COMMIT, SET ...) neither reads nor writes.
fn statement_reads_only(sql: &str) -> bool {
    let lower = sql.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
        .collect();
    let Some(first) = words.first() else {
        return true;
    };
    match *first {
        "begin" | "start" | "commit" | "end" | "rollback" | "abort" | "savepoint" | "release"
        | "set" => true,
        "select" | "with" | "values" | "table" | "show" => {
            let writes = words
                .iter()
                .any(|word| matches!(*word, "insert" | "update" | "delete" | "merge" | "into"));
            let locks_rows = words
                .windows(2)
                .any(|pair| matches!(pair, ["for" | "key", "share"]));
            !writes && !locks_rows
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_told_from_writes() {
        for read in [
            "SELECT count(*), sum(total) FROM orders WHERE customer_id = $1",
            "  select 1",
            "WITH t AS (SELECT 1) SELECT * FROM t",
            "BEGIN",
            "SET LOCAL statement_timeout = '1s'",
            "SELECT market_share FROM shares",
        ] {
            assert!(statement_reads_only(read), "{read}");
        }
        for write in [
            "UPDATE orders SET total = total + 1 WHERE id = $1",
            "INSERT INTO orders VALUES (1)",
            "SELECT * FROM orders WHERE id = $1 FOR UPDATE",
            "SELECT * FROM orders FOR NO KEY UPDATE",
            "SELECT * FROM orders FOR SHARE",
            "SELECT * FROM orders FOR KEY SHARE",
            "WITH moved AS (DELETE FROM a RETURNING *) SELECT count(*) FROM moved",
            "SELECT * INTO copy FROM orders",
            "CALL refresh()",
        ] {
            assert!(!statement_reads_only(write), "{write}");
        }
    }

    #[test]
    fn one_writing_script_makes_the_clients_clients() {
        let script = |text: &str| crate::script::parse("test", text, &[]).unwrap();
        let read = script(
            "\\set c random(1, 1000)\nSELECT count(*) FROM orders WHERE customer_id = :c;\n",
        );
        let write = script("UPDATE orders SET total = total + 1 WHERE id = 1;\n");
        assert_eq!(ClientKind::of_scripts([&read]), ClientKind::Reader);
        assert_eq!(ClientKind::of_scripts([&read, &write]), ClientKind::Client);
    }

    #[test]
    fn every_role_reads_back_from_its_name() {
        let mut roles = vec![
            Role::Client(ClientKind::Reader, 3),
            Role::Client(ClientKind::Client, 12),
            Role::Pool(ClientKind::Reader),
            Role::Pool(ClientKind::Client),
            Role::External(4242),
        ];
        roles.extend(FIXED_NAMES.iter().map(|(role, _)| *role));
        for role in roles {
            assert_eq!(Role::parse(&role.to_string()), Some(role), "{role}");
        }
        assert_eq!(Role::Ddl.to_string(), "ddl");
        assert_eq!(Role::Report.to_string(), "report");
        assert_eq!(Role::Client(ClientKind::Reader, 3).to_string(), "reader-3");
        assert_eq!(Role::External(42).to_string(), "external:42");
        for name in ["", "reader-", "reader-x", "writer-3", "external:", "ddl-2"] {
            assert_eq!(Role::parse(name), None, "{name}");
        }
    }

    #[test]
    fn roles_come_from_the_run_prefix() {
        assert_eq!(
            Role::of_session("stallbench-abc123", "stallbench-abc123-reader-2", 7),
            Role::Client(ClientKind::Reader, 2)
        );
        assert_eq!(
            Role::of_session("stallbench-abc123", "stallbench-abc123-ddl", 7),
            Role::Ddl
        );
        assert_eq!(
            Role::of_session("stallbench-abc123", "stallbench-ffffff-ddl", 7),
            Role::External(7)
        );
        assert_eq!(
            Role::of_session("stallbench-abc123", "psql", 42),
            Role::External(42)
        );
    }

    #[test]
    fn client_roles_are_recognised() {
        assert!(is_client_role("reader-3"));
        assert!(is_client_role("client-12"));
        assert!(is_client_role("reader-pool"));
        assert!(!is_client_role("report"));
        assert!(!is_client_role("external:42"));
    }
}
