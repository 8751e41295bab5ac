//! What the load's clients are called in `application_name`, `locks.csv` and
//! the lock chain: `reader-N` only when every statement of every load script
//! only reads, else `client-N`, so a chain never calls a writer a reader.
//! Decided from the statements' words, which is enough for a name: a
//! statement the rules below do not know counts as a write.

use crate::config::WeightedScript;
use crate::script::Command;

/// The roles of load clients, as their names start: `reader-` or `client-`.
pub const CLIENT_ROLE_PREFIXES: [&str; 2] = ["reader-", "client-"];

/// `reader` when every SQL statement of `scripts` only reads, else `client`.
pub fn client_role(scripts: &[WeightedScript]) -> &'static str {
    let reads_only = scripts.iter().all(|weighted| {
        weighted
            .script
            .commands
            .iter()
            .all(|command| match command {
                Command::Sql(sql) => !sql.compound && statement_reads_only(&sql.sql),
                _ => true,
            })
    });
    if reads_only { "reader" } else { "client" }
}

/// Whether a load client's role (`reader-3`, `client-3`) is one of the load's clients.
pub fn is_client_role(role: &str) -> bool {
    CLIENT_ROLE_PREFIXES
        .iter()
        .any(|prefix| role.starts_with(prefix))
}

/// Roles with the repeated ones said once with their count, in the order
/// they first appear: the application pool's connections all share one name,
/// so ten of them read `reader-pool ×10`, not the name ten times.
pub fn group_repeated(roles: &[String]) -> Vec<String> {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for role in roles {
        match counted.iter_mut().find(|(seen, _)| *seen == role.as_str()) {
            Some((_, count)) => *count += 1,
            None => counted.push((role, 1)),
        }
    }
    counted
        .into_iter()
        .map(|(role, count)| match count {
            1 => role.to_string(),
            _ => format!("{role} ×{count}"),
        })
        .collect()
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
        let script = |text: &str| WeightedScript {
            script: crate::script::parse("test", text).unwrap(),
            weight: 1,
            text: text.to_string(),
        };
        let read = script(
            "\\set c random(1, 1000)\nSELECT count(*) FROM orders WHERE customer_id = :c;\n",
        );
        let write = script("UPDATE orders SET total = total + 1 WHERE id = 1;\n");
        assert_eq!(client_role(std::slice::from_ref(&read)), "reader");
        assert_eq!(client_role(&[read, write]), "client");
    }

    #[test]
    fn client_roles_are_recognised() {
        assert!(is_client_role("reader-3"));
        assert!(is_client_role("client-12"));
        assert!(!is_client_role("report"));
        assert!(!is_client_role("external:42"));
    }

    #[test]
    fn repeated_roles_are_said_once_with_their_count() {
        let roles: Vec<String> = ["ddl", "reader-pool", "reader-3", "reader-pool"]
            .iter()
            .map(|role| role.to_string())
            .collect();
        assert_eq!(
            group_repeated(&roles),
            ["ddl", "reader-pool ×2", "reader-3"]
        );
        assert!(group_repeated(&[]).is_empty());
    }
}
