//! Reading `pg_stat_statements`: that it is there and readable, one
//! snapshot of the connected database's statements, the difference of two
//! snapshots (the `--window`), and which statements are users' work.

use std::collections::BTreeMap;

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use super::catalog::MARKER;
use crate::engine::postgres::database::error_text;
use crate::error::Error;

/// The figures of one statement (all users' entries of one `queryid`
/// summed): cumulative since the last reset, or over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct StatementStats {
    pub queryid: i64,
    /// The normalised text, `$n` for each constant.
    pub query: String,
    pub calls: i64,
    pub rows: i64,
}

/// Who capture is connected as, and where.
#[derive(Debug, Clone)]
pub struct CaptureSession {
    pub user: String,
    pub database: String,
}

/// The first words of the statements capture keeps: reads and writes, no
/// utility statement (`BEGIN`, `SET`, `SHOW`, DDL, `COPY`, ...).
const WORK_WORDS: &[&str] = &[
    "select", "with", "insert", "update", "delete", "merge", "values", "table",
];

/// Checks that the extension is installed in the database and its library
/// loaded; `shown` names the target in the error.
pub async fn check_extension(client: &Client, shown: &str) -> Result<CaptureSession, Error> {
    let row = client
        .query_one(
            "SELECT current_user::text, current_database()::text, \
             EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'), \
             EXISTS (SELECT 1 FROM pg_settings WHERE name LIKE 'pg\\_stat\\_statements.%')",
            &[],
        )
        .await
        .map_err(|err| Error::runtime(format!("capture: {shown}: {}", error_text(&err))))?;
    let session = CaptureSession {
        user: row.get(0),
        database: row.get(1),
    };
    let (installed, loaded): (bool, bool) = (row.get(2), row.get(3));
    let database = &session.database;
    if !loaded {
        return Err(Error::bad_input(format!(
            "--db-url {shown}: the server does not load pg_stat_statements; set \
             shared_preload_libraries = 'pg_stat_statements' in postgresql.conf, restart the \
             server, run CREATE EXTENSION pg_stat_statements in database {database}, let the \
             traffic run, then capture"
        )));
    }
    if !installed {
        return Err(Error::bad_input(format!(
            "--db-url {shown}: database {database} has no extension pg_stat_statements; run \
             CREATE EXTENSION pg_stat_statements in it (as its owner or a superuser), let the \
             traffic run, then capture"
        )));
    }
    Ok(session)
}

/// The statements of the connected database with their cumulative figures,
/// top-level only where the server tells (`toplevel`, from 14).
pub async fn snapshot(
    client: &Client,
    shown: &str,
    session: &CaptureSession,
) -> Result<Vec<StatementStats>, Error> {
    let failed = |err: tokio_postgres::Error| {
        if err.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
            return privilege_error(shown, session);
        }
        Error::runtime(format!(
            "capture: {shown}: reading pg_stat_statements: {}",
            error_text(&err)
        ))
    };
    let this_database = "s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())";
    let hidden: i64 = client
        .query_one(
            &format!(
                "{MARKER} SELECT count(*) FROM pg_stat_statements s \
                 WHERE {this_database} AND s.query = '<insufficient privilege>'"
            ),
            &[],
        )
        .await
        .map_err(failed)?
        .get(0);
    if hidden > 0 {
        return Err(privilege_error(shown, session));
    }
    let rows = client
        .query(
            &format!(
                "{MARKER} SELECT s.queryid, min(s.query), sum(s.calls)::int8, sum(s.rows)::int8 \
                 FROM pg_stat_statements s \
                 WHERE {this_database} AND s.queryid IS NOT NULL \
                 AND coalesce((to_jsonb(s) ->> 'toplevel')::bool, true) \
                 GROUP BY s.queryid"
            ),
            &[],
        )
        .await
        .map_err(failed)?;
    Ok(rows
        .iter()
        .map(|row| StatementStats {
            queryid: row.get(0),
            query: row.get(1),
            calls: row.get(2),
            rows: row.get(3),
        })
        .collect())
}

/// The other client backends connected to the database now (capture's own
/// connection not counted): the application's connections, from which
/// `[load] clients` is derived (see `write::clients`).
pub async fn client_backends(client: &Client, shown: &str) -> Result<u32, Error> {
    let row = client
        .query_one(
            &format!(
                "{MARKER} SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND backend_type = 'client backend' \
                 AND pid <> pg_backend_pid()"
            ),
            &[],
        )
        .await
        .map_err(|err| {
            Error::runtime(format!(
                "capture: {shown}: reading pg_stat_activity: {}",
                error_text(&err)
            ))
        })?;
    Ok(u32::try_from(row.get::<_, i64>(0)).unwrap_or(u32::MAX))
}

fn privilege_error(shown: &str, session: &CaptureSession) -> Error {
    Error::bad_input(format!(
        "--db-url {shown}: user {} cannot see other users' statements in pg_stat_statements \
         (<insufficient privilege>); run GRANT pg_read_all_stats TO {} as a superuser, or \
         capture as a user who has it",
        session.user, session.user
    ))
}

/// The calls and rows of each statement between two snapshots; a statement
/// not in `before` started in the window. `None` when a count went down
/// (the statistics were reset, or entries evicted, during the window).
pub fn difference(
    before: &[StatementStats],
    after: &[StatementStats],
) -> Option<Vec<StatementStats>> {
    let earlier: BTreeMap<i64, &StatementStats> =
        before.iter().map(|stats| (stats.queryid, stats)).collect();
    let mut window = Vec::new();
    for stats in after {
        let (calls, rows) = match earlier.get(&stats.queryid) {
            Some(old) => (stats.calls - old.calls, stats.rows - old.rows),
            None => (stats.calls, stats.rows),
        };
        if calls < 0 {
            return None;
        }
        window.push(StatementStats {
            calls,
            rows,
            ..stats.clone()
        });
    }
    Some(window)
}

/// True for a statement of users' work: a read or a write, not a utility
/// statement, not pg_stat_statements' own functions, not capture's own queries.
pub fn is_users_work(query: &str) -> bool {
    let first = query
        .trim_start_matches(|c: char| c.is_whitespace() || c == '(')
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    WORK_WORDS.contains(&first.as_str())
        && !query.contains(MARKER)
        && !query.contains("pg_stat_statements")
}

/// What `--top` and the 95% rule keep of `statements` (any order): the most
/// called first, up to `top`, or as many as cover `share` of the calls.
pub fn most_called(
    mut statements: Vec<StatementStats>,
    top: Option<usize>,
    share: f64,
) -> Vec<StatementStats> {
    statements.retain(|stats| stats.calls > 0);
    statements.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.queryid.cmp(&b.queryid)));
    let total: i64 = statements.iter().map(|stats| stats.calls).sum();
    let keep = match top {
        Some(top) => top.min(statements.len()),
        None => {
            let mut covered = 0;
            statements
                .iter()
                .take_while(|stats| {
                    let more = (covered as f64) < share * total as f64;
                    covered += stats.calls;
                    more
                })
                .count()
        }
    };
    statements.truncate(keep);
    statements
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(queryid: i64, calls: i64) -> StatementStats {
        StatementStats {
            queryid,
            query: format!("SELECT {queryid}"),
            calls,
            rows: calls,
        }
    }

    #[test]
    fn utility_statements_and_captures_own_are_not_work() {
        assert!(is_users_work("SELECT * FROM t WHERE id = $1"));
        assert!(is_users_work("with x as (select 1) select * from x"));
        assert!(is_users_work("INSERT INTO t VALUES ($1)"));
        assert!(!is_users_work("BEGIN"));
        assert!(!is_users_work("SET search_path = app"));
        assert!(!is_users_work("SHOW work_mem"));
        assert!(!is_users_work("CREATE TABLE t (id int)"));
        assert!(!is_users_work("SELECT pg_stat_statements_reset()"));
        assert!(!is_users_work(&format!("{MARKER} SELECT min(a) FROM t")));
    }

    #[test]
    fn the_cut_covers_95_percent_of_calls_or_the_top_n() {
        let all = vec![
            stats(1, 10),
            stats(2, 600),
            stats(3, 300),
            stats(4, 90),
            stats(5, 0),
        ];
        let kept: Vec<i64> = most_called(all.clone(), None, 0.95)
            .iter()
            .map(|s| s.queryid)
            .collect();
        // 600 + 300 = 90%, + 90 = 99%: three statements.
        assert_eq!(kept, vec![2, 3, 4]);
        let kept: Vec<i64> = most_called(all.clone(), Some(1), 0.95)
            .iter()
            .map(|s| s.queryid)
            .collect();
        assert_eq!(kept, vec![2]);
        assert_eq!(most_called(all, Some(10), 0.95).len(), 4);
    }

    #[test]
    fn the_window_is_the_difference_and_a_reset_is_noticed() {
        let before = vec![stats(1, 100), stats(2, 5)];
        let after = vec![stats(1, 160), stats(2, 5), stats(3, 7)];
        let window = difference(&before, &after).unwrap();
        let calls: Vec<(i64, i64)> = window.iter().map(|s| (s.queryid, s.calls)).collect();
        assert_eq!(calls, vec![(1, 60), (2, 0), (3, 7)]);
        assert!(difference(&after, &before).is_none());
    }
}
