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

use clap::ValueEnum;

pub use crate::choices::BlockerKind;
use crate::script::{Script, ScriptCommand};
use crate::strategy::statements::statement_words;

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
                ScriptCommand::Sql(sql) => !sql.compound && statement_effect(&sql.sql).reads_only(),
                _ => true,
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
    /// The blocker's session, named by its kind: `report`, `writer` or `idle`.
    Blocker(BlockerKind),
    /// The migration's session: `ddl`.
    Ddl,
    /// The second session `kill-blockers` terminates the DDL's blockers from: `killer`.
    Killer,
    /// The session `replica-aware` looks at the replica from: `replica-watch`.
    ReplicaWatch,
    /// The replica observer's session on the standby: `replica-observer`.
    ReplicaObserver,
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
    /// The lock trace's session, which runs the migration's statements before the run: `trace`.
    Trace,
    /// The session that watches the trace's locks during a statement outside a transaction: `trace-watcher`.
    TraceWatcher,
    /// The hot standby's startup process, which replays the primary's WAL
    /// and the locks the primary's DDL took: `startup` (no session of the
    /// run; the replica observer names it by its backend type).
    Startup,
    /// A session not of this run, by its backend pid: `external:4242`.
    External(u32),
}

/// The roles whose name is one fixed word, with that word.
const FIXED_NAMES: [(Role, &str); 14] = [
    (Role::Ddl, "ddl"),
    (Role::Killer, "killer"),
    (Role::ReplicaWatch, "replica-watch"),
    (Role::ReplicaObserver, "replica-observer"),
    (Role::Observer, "observer"),
    (Role::Admin, "admin"),
    (Role::Setup, "setup"),
    (Role::Reset, "reset"),
    (Role::Cleanup, "cleanup"),
    (Role::Check, "check"),
    (Role::SchemaLock, "lock"),
    (Role::Trace, "trace"),
    (Role::TraceWatcher, "trace-watcher"),
    (Role::Startup, "startup"),
];

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::Client(kind, number) => write!(f, "{kind}-{number}"),
            Role::Pool(kind) => write!(f, "{kind}-pool"),
            Role::External(pid) => write!(f, "external:{pid}"),
            Role::Blocker(kind) => f.write_str(kind.name()),
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
        // Each blocker is a role named as its kind.
        if let Ok(kind) = BlockerKind::from_str(name, false) {
            return Some(Role::Blocker(kind));
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

/// What a load statement does to the rows of the tables it names, read from
/// its words (`strategy::statements::statement_words`: strings, quoted names
/// and comments left out). It is no parser: a statement the rules do not know
/// may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementEffect {
    /// Transaction control and settings (`BEGIN`, `COMMIT`, `SET` ...).
    Control,
    /// Reads rows: `SELECT`, `WITH`, `VALUES`, `TABLE`, `SHOW`, `COPY ... TO`, `EXPLAIN`.
    Reads,
    /// Reads and locks rows or tables (`SELECT ... FOR UPDATE`, `FOR SHARE`,
    /// `LOCK TABLE`), changing none.
    Locks,
    /// Changes rows: `INSERT`, `UPDATE`, `DELETE`, `MERGE`, `TRUNCATE`, `COPY
    /// ... FROM`, `SELECT ... INTO`, a data-modifying `WITH`, `EXPLAIN ANALYZE` of one.
    Writes,
    /// A statement the rules do not know (`CALL`, `DO`, DDL ...): it may write.
    Unknown,
}

impl StatementEffect {
    /// Whether the statement leaves every row as it was and locks none:
    /// what makes a client a `reader`.
    pub fn reads_only(self) -> bool {
        matches!(self, StatementEffect::Control | StatementEffect::Reads)
    }

    /// Whether the statement writes rows, or may.
    pub fn may_write(self) -> bool {
        matches!(self, StatementEffect::Writes | StatementEffect::Unknown)
    }
}

/// What `sql` (one statement of a load script) does to rows; see [`StatementEffect`].
pub fn statement_effect(sql: &str) -> StatementEffect {
    let statements = statement_words(sql);
    let effects = statements.iter().map(|words| words_effect(words));
    // Several statements (not in a script, which splits them): the most a statement does.
    effects
        .max_by_key(|effect| match effect {
            StatementEffect::Control => 0,
            StatementEffect::Reads => 1,
            StatementEffect::Locks => 2,
            StatementEffect::Unknown => 3,
            StatementEffect::Writes => 4,
        })
        .unwrap_or(StatementEffect::Control)
}

/// [`statement_effect`] of one statement's upper-cased words.
fn words_effect(words: &[String]) -> StatementEffect {
    use StatementEffect::{Control, Locks, Reads, Unknown, Writes};
    let word = |index: usize| words.get(index).map_or("", String::as_str);
    let has = |wanted: &str| words.iter().any(|w| w == wanted);
    // UPDATE is a write unless it is the row lock of FOR [NO KEY] UPDATE.
    let writes = words.iter().enumerate().any(|(index, w)| match w.as_str() {
        "INSERT" | "DELETE" | "MERGE" | "TRUNCATE" | "INTO" => true,
        "UPDATE" => !matches!(index.checked_sub(1).map(word), Some("FOR" | "KEY")),
        _ => false,
    });
    let locks_rows = words.windows(2).any(|pair| {
        matches!(
            (pair[0].as_str(), pair[1].as_str()),
            ("FOR" | "KEY", "UPDATE" | "SHARE")
        )
    });
    match word(0) {
        "BEGIN" | "START" | "COMMIT" | "END" | "ROLLBACK" | "ABORT" | "SAVEPOINT" | "RELEASE"
        | "SET" | "RESET" => Control,
        "SELECT" | "WITH" | "VALUES" | "TABLE" | "SHOW" if writes => Writes,
        "SELECT" | "WITH" | "VALUES" | "TABLE" | "SHOW" if locks_rows => Locks,
        "SELECT" | "WITH" | "VALUES" | "TABLE" | "SHOW" => Reads,
        "INSERT" | "UPDATE" | "DELETE" | "MERGE" | "TRUNCATE" => Writes,
        "LOCK" => Locks,
        "EXPLAIN" if (has("ANALYZE") || has("ANALYSE")) && writes => Writes,
        "EXPLAIN" => Reads,
        // COPY (query) TO reads; COPY table FROM writes, COPY table TO reads.
        "COPY" if matches!(word(1), "SELECT" | "WITH" | "VALUES" | "TABLE") => Reads,
        "COPY" => match words.iter().find(|w| *w == "FROM" || *w == "TO") {
            Some(direction) if direction == "TO" => Reads,
            _ => Writes,
        },
        _ => Unknown,
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
            assert!(statement_effect(read).reads_only(), "{read}");
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
            assert!(!statement_effect(write).reads_only(), "{write}");
        }
    }

    #[test]
    fn writes_are_told_from_row_locks_and_reads() {
        use StatementEffect::{Control, Locks, Reads, Unknown, Writes};
        for (sql, effect) in [
            ("INSERT INTO events (kind) VALUES ($1)", Writes),
            ("insert into public.events select 1", Writes),
            (
                "UPDATE accounts SET balance = balance + 1 WHERE id = $1",
                Writes,
            ),
            ("DELETE FROM events WHERE id = $1", Writes),
            (
                "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
                Writes,
            ),
            ("TRUNCATE events", Writes),
            ("COPY events FROM STDIN", Writes),
            ("COPY events (id, from_id) FROM '/tmp/x.csv'", Writes),
            (
                "WITH moved AS (DELETE FROM a RETURNING *) SELECT count(*) FROM moved",
                Writes,
            ),
            ("SELECT * INTO copy FROM orders", Writes),
            ("EXPLAIN ANALYZE UPDATE t SET a = 1", Writes),
            ("SELECT * FROM accounts WHERE id = $1 FOR UPDATE", Locks),
            (
                "SELECT * FROM accounts FOR NO KEY UPDATE SKIP LOCKED",
                Locks,
            ),
            ("SELECT * FROM accounts FOR SHARE", Locks),
            ("LOCK TABLE accounts IN ACCESS SHARE MODE", Locks),
            (
                "SELECT note FROM events WHERE note = 'please update, delete'",
                Reads,
            ),
            ("SELECT \"delete\" FROM t", Reads),
            ("COPY events TO STDOUT", Reads),
            ("COPY (SELECT id FROM events) TO STDOUT", Reads),
            ("EXPLAIN UPDATE t SET a = 1", Reads),
            ("SELECT updated_at FROM t", Reads),
            ("BEGIN", Control),
            ("SET LOCAL statement_timeout = '1s'", Control),
            ("CALL refresh()", Unknown),
            ("DO $$ BEGIN DELETE FROM t; END $$", Unknown),
        ] {
            assert_eq!(statement_effect(sql), effect, "{sql}");
        }
        assert!(Unknown.may_write() && Writes.may_write());
        assert!(!Locks.may_write() && !Locks.reads_only());
    }

    #[test]
    fn one_writing_script_makes_the_clients_clients() {
        let script = |text: &str| crate::script::parse("test", text).unwrap();
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
        roles.extend(
            BlockerKind::value_variants()
                .iter()
                .map(|kind| Role::Blocker(*kind)),
        );
        for role in roles {
            assert_eq!(Role::parse(&role.to_string()), Some(role), "{role}");
        }
        assert_eq!(Role::Ddl.to_string(), "ddl");
        assert_eq!(Role::Blocker(BlockerKind::Report).to_string(), "report");
        assert_eq!(Role::Blocker(BlockerKind::Writer).to_string(), "writer");
        assert_eq!(Role::Blocker(BlockerKind::Idle).to_string(), "idle");
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
