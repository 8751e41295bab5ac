//! The load workers' lean connection against a real throwaway server: every
//! login method it claims (trust, password, md5, scram-sha-256), wrong
//! passwords, prepared statements, server errors, and the cancel request.

use std::time::{Duration, Instant};

use stallbench::engine::postgres::pgwire::{ConnectError, Statement, WireConnection, WireError};
use stallbench::engine::postgres::server::Server;
use tokio_postgres::error::SqlState;

/// Roles with a password each, and a pg_hba.conf that asks each for it by its own method.
const LOGINS: &str = "
SET password_encryption = 'scram-sha-256';
CREATE ROLE scram_user LOGIN PASSWORD 'scram secret';
CREATE ROLE plain_user LOGIN PASSWORD 'plain secret';
SET password_encryption = 'md5';
CREATE ROLE md5_user LOGIN PASSWORD 'md5 secret';
";

const HBA: &str = "local all postgres trust\n\
                   local all scram_user scram-sha-256\n\
                   local all md5_user md5\n\
                   local all plain_user password\n";

fn config_for(server: &Server, user: &str, password: Option<&str>) -> tokio_postgres::Config {
    let mut config = server.connection_config();
    config.user(user);
    if let Some(password) = password {
        config.password(password);
    }
    config
}

async fn server_with_passwords() -> Server {
    let server = Server::start(
        crate::common::server_binaries(),
        stallbench::engine::postgres::server::DEFAULT_MAX_CONNECTIONS,
    )
    .await
    .expect("starting a throwaway server");
    let (admin, connection) = server
        .connection_config()
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connecting as postgres");
    tokio::spawn(connection);
    admin.batch_execute(LOGINS).await.expect("creating roles");
    let hba_file: String = admin
        .query_one("SHOW hba_file", &[])
        .await
        .expect("asking for hba_file")
        .get(0);
    // Overwriting the file keeps its owner (the server's user when run as root).
    std::fs::write(&hba_file, HBA).expect("writing pg_hba.conf");
    admin
        .batch_execute("SELECT pg_reload_conf()")
        .await
        .expect("reloading the configuration");
    tokio::time::sleep(Duration::from_millis(300)).await;
    server
}

/// Runs `test` on a runtime of its own, beside the binary's other test.
fn run(test: impl Future<Output = ()>) {
    crate::common::require_postgres();
    let _cpus = crate::common::cpus_shared();
    tokio::runtime::Runtime::new()
        .expect("starting a tokio runtime")
        .block_on(test);
}

#[test]
fn logs_in_with_each_method_and_refuses_a_wrong_password() {
    run(logins());
}

async fn logins() {
    let server = server_with_passwords().await;

    for (user, password) in [
        ("postgres", None),
        ("scram_user", Some("scram secret")),
        ("md5_user", Some("md5 secret")),
        ("plain_user", Some("plain secret")),
    ] {
        let mut connection = WireConnection::connect(
            &config_for(&server, user, password),
            &crate::common::no_tls(),
        )
        .await
        .unwrap_or_else(|err| panic!("{user} could not log in: {err}"));
        let statement = connection
            .prepare("SELECT current_user = $1")
            .await
            .unwrap_or_else(|err| panic!("{user}: prepare failed: {err}"));
        // The server expects one parameter: it refuses none (protocol violation).
        match connection.execute(&statement, &[]).await {
            Err(WireError::Server(error)) => {
                assert_eq!(error.code, SqlState::PROTOCOL_VIOLATION, "{user}: {error}");
                assert!(error.message.contains("requires 1"), "{error}");
            }
            other => panic!("{user}: a missing parameter was not reported: {other:?}"),
        }
        // The session is the user's own: the server says so in the result.
        let mut results = Vec::new();
        connection
            .run_statement_for_rows(Statement::Prepared(&statement), [Some(user)], &mut results)
            .await
            .unwrap_or_else(|err| panic!("{user}: execute failed: {err}"));
        let last_rows: Vec<&[Option<String>]> =
            results.iter().map(|set| set.last_row.as_slice()).collect();
        assert_eq!(
            last_rows,
            [[Some("t".to_string())].as_slice()],
            "{user}: SELECT current_user = '{user}' did not answer true"
        );
        connection.terminate().await;
    }

    for (user, password) in [("scram_user", "wrong"), ("md5_user", "wrong")] {
        match WireConnection::connect(
            &config_for(&server, user, Some(password)),
            &crate::common::no_tls(),
        )
        .await
        {
            Err(ConnectError::Server(error)) => {
                assert_eq!(error.code, SqlState::INVALID_PASSWORD, "{user}: {error}");
                assert!(
                    error.message.contains("password authentication failed"),
                    "{error}"
                );
            }
            Err(other) => panic!("{user}: expected the server's refusal, got {other}"),
            Ok(_) => panic!("{user} logged in with a wrong password"),
        }
    }
    match WireConnection::connect(
        &config_for(&server, "scram_user", None),
        &crate::common::no_tls(),
    )
    .await
    {
        Err(ConnectError::Settings(message)) => assert!(message.contains("password"), "{message}"),
        Err(other) => panic!("expected a missing-password error, got {other}"),
        Ok(_) => panic!("scram_user logged in without a password"),
    }
}

#[test]
fn reports_server_errors_and_goes_on_and_cancels_a_running_query() {
    run(errors_and_cancel());
}

async fn errors_and_cancel() {
    let server = Server::start(
        crate::common::server_binaries(),
        stallbench::engine::postgres::server::DEFAULT_MAX_CONNECTIONS,
    )
    .await
    .expect("starting a throwaway server");
    let mut connection =
        WireConnection::connect(&server.connection_config(), &crate::common::no_tls())
            .await
            .unwrap_or_else(|err| panic!("connecting: {err}"));

    match connection.prepare("SELEC 1").await {
        Err(WireError::Server(error)) => assert_eq!(error.code, SqlState::SYNTAX_ERROR),
        other => panic!("a syntax error was not reported: {other:?}"),
    }
    let add_one = connection.prepare("SELECT $1::int + 1").await.unwrap();
    match connection
        .execute(&add_one, &["not a number".to_string()])
        .await
    {
        Err(WireError::Server(error)) => {
            assert_eq!(error.code, SqlState::INVALID_TEXT_REPRESENTATION, "{error}");
        }
        other => panic!("a bad parameter was not reported: {other:?}"),
    }
    // The connection goes on after an error, and over many round trips.
    for value in 0..1000 {
        connection
            .execute(&add_one, &[value.to_string()])
            .await
            .unwrap_or_else(|err| panic!("round trip {value}: {err}"));
    }
    connection.simple_query("BEGIN").await.unwrap();
    match connection.simple_query("SELECT 1/0").await {
        Err(WireError::Server(error)) => assert_eq!(error.code, SqlState::DIVISION_BY_ZERO),
        other => panic!("division by zero was not reported: {other:?}"),
    }
    connection.simple_query("ROLLBACK").await.unwrap();

    // A cancel request from elsewhere ends a running query with 57014.
    let sleep = connection.prepare("SELECT pg_sleep(30)").await.unwrap();
    let cancel = connection.cancel_handle();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel_query().await
    });
    let started = Instant::now();
    match connection.execute(&sleep, &[]).await {
        Err(WireError::Server(error)) => assert_eq!(error.code, SqlState::QUERY_CANCELED),
        other => panic!("the sleep was not cancelled: {other:?}"),
    }
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(10),
        "the cancel took {waited:?} to end a 30 s sleep"
    );
    canceller
        .await
        .unwrap()
        .expect("sending the cancel request");
    connection
        .execute(&add_one, &["1".to_string()])
        .await
        .unwrap();
    connection.terminate().await;
}
