//! Applying a migration for real, as its tool does: a transaction per step,
//! a statement outside one on its own; the error names the file and the fix.

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use super::migrations::{Migration, MigrationStep};
use crate::engine::postgres::database::{Database, error_text};
use crate::error::Error;
use crate::role::Role;

/// Applies `migration` to the current database for real, step by step as the
/// tool would: a transaction per step, a statement outside one on its own.
pub async fn apply(target: &Database, migration: &Migration) -> Result<(), Error> {
    let client = target.connect(Role::Setup).await?;
    apply_on(&client, target, migration).await
}

/// [`apply`] on `client`, a session of `target`'s current database, left
/// as a new one would be (`DISCARD ALL`): one session for many migrations
/// costs no connection each, and none sees another's settings.
pub async fn apply_on(
    client: &Client,
    target: &Database,
    migration: &Migration,
) -> Result<(), Error> {
    let applied = apply_steps(client, target, migration).await;
    let reset = reset_session(client).await;
    applied?;
    reset.map_err(|err| {
        Error::runtime(format!(
            "{}: resetting the session after it: {}",
            migration.path.display(),
            error_text(&err)
        ))
    })
}

/// `DISCARD ALL`; a transaction a step left open is rolled back first, as
/// the end of its session would.
async fn reset_session(client: &Client) -> Result<(), tokio_postgres::Error> {
    match client.batch_execute("DISCARD ALL").await {
        Err(err)
            if err.code() == Some(&SqlState::ACTIVE_SQL_TRANSACTION)
                || err.code() == Some(&SqlState::IN_FAILED_SQL_TRANSACTION) =>
        {
            client.batch_execute("ROLLBACK").await?;
            client.batch_execute("DISCARD ALL").await
        }
        other => other,
    }
}

async fn apply_steps(
    client: &Client,
    target: &Database,
    migration: &Migration,
) -> Result<(), Error> {
    for step in &migration.steps {
        apply_step(client, step).await.map_err(|err| {
            if let Some(error) = meta_command_error(migration, &error_text(&err)) {
                return error;
            }
            Error::bad_input(format!(
                "{}: applying it failed: {}; {}fix the migration (the check applies every \
                 earlier migration, and each new one before the next)",
                migration.path.display(),
                error_text(&err),
                newer_server_hint(&err, target.server_version_num)
            ))
        })?;
    }
    Ok(())
}

/// The error of `migration` when it holds a psql meta-command (which the
/// server refused with `server_error`, a syntax error at the backslash),
/// naming the command and its line.
pub fn meta_command_error(migration: &Migration, server_error: &str) -> Option<Error> {
    let (line, command) = psql_command(migration)?;
    Some(Error::bad_input(format!(
        "{} line {line}: `{command}` is a psql meta-command: the check sends SQL to the \
         server, not to psql, so a script written for psql (variables, \\gexec, \\i) cannot \
         run here ({server_error}); write the values into the SQL",
        migration.path.display(),
    )))
}

/// The first line of `migration` that is a psql meta-command (`\set x ...`,
/// `\gexec` at a statement's end), with its line number in the file.
fn psql_command(migration: &Migration) -> Option<(usize, String)> {
    migration
        .steps
        .iter()
        .flat_map(|step| &step.statements)
        .find_map(|statement| {
            statement
                .sql
                .lines()
                .enumerate()
                .find_map(|(offset, line)| {
                    let command = line.trim_start();
                    let meta = command.starts_with('\\') || command.contains(")\\g");
                    meta.then(|| (statement.line + offset, command.to_string()))
                })
        })
}

/// For a syntax error or an unsupported feature on a server older than the
/// newest major: the project may run a newer PostgreSQL (`subquery in FROM
/// must have an alias` is an error on 15, valid on 16).
fn newer_server_hint(err: &tokio_postgres::Error, server_version_num: u32) -> String {
    let major = server_version_num / 10_000;
    let syntax = err.code().is_some_and(|code| {
        *code == SqlState::SYNTAX_ERROR || *code == SqlState::FEATURE_NOT_SUPPORTED
    });
    match syntax && major < crate::engine::postgres::server::NEWEST_MAJOR {
        true => format!(
            "the throwaway server is PostgreSQL {major}; if the project runs a newer one, \
             give --pg-version {} (or the project's major), else ",
            major + 1
        ),
        false => String::new(),
    }
}

async fn apply_step(client: &Client, step: &MigrationStep) -> Result<(), tokio_postgres::Error> {
    if step.in_transaction {
        client.batch_execute("BEGIN").await?;
    }
    for statement in &step.statements {
        if let Err(err) = client.batch_execute(&statement.sql).await {
            if step.in_transaction {
                let _ = client.batch_execute("ROLLBACK").await;
            }
            return Err(err);
        }
    }
    if step.in_transaction {
        client.batch_execute("COMMIT").await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::postgres::check::migrations::MigrationStatement;

    fn migration(statements: &[(usize, &str)]) -> Migration {
        Migration {
            name: "role.sql".into(),
            path: "deploy/role.sql".into(),
            version: "role".into(),
            steps: vec![MigrationStep {
                statements: statements
                    .iter()
                    .map(|(line, sql)| MigrationStatement {
                        sql: sql.to_string(),
                        line: *line,
                    })
                    .collect(),
                in_transaction: true,
            }],
        }
    }

    #[test]
    fn a_psql_meta_command_is_found_with_its_line() {
        let script = migration(&[
            (1, "CREATE TABLE a (id int)"),
            (3, "\\set name `cat /run/secrets/name`\n\nCREATE ROLE :name"),
        ]);
        assert_eq!(
            psql_command(&script),
            Some((3, "\\set name `cat /run/secrets/name`".to_string()))
        );
        let gexec = migration(&[(2, "SELECT 'CREATE DATABASE x'\nWHERE true)\\gexec")]);
        assert_eq!(psql_command(&gexec).map(|(line, _)| line), Some(3));
        let plain = migration(&[(1, "SELECT 'a\\b' AS backslash")]);
        assert_eq!(psql_command(&plain), None);
    }
}
