//! Against a server set up like a managed one (TLS only, scram-sha-256, a
//! non-superuser with a password): the outage reproduces over verified TLS
//! with the password from PGPASSWORD and then from a password file, the run
//! leaves nothing behind and never shows the password; a plain connection and
//! a wrong root certificate fail with one clear line.

use std::path::Path;

use crate::common::managed::{APP_PASSWORD, ManagedServer, ORDERS_ROWS, stallbench_in};
use crate::common::*;
use assert_cmd::Command;
use predicates::prelude::*;
use stallbench::engine::postgres::conninfo::{ConnSettings, Tls};
use stallbench::engine::postgres::pgwire::{ConnectError, WireConnection};

/// The binary in the server's client folder (where `ca.pem` is).
fn stallbench(server: &ManagedServer) -> Command {
    stallbench_in(&server.client_dir())
}

/// `run --load-only` for 2 s over `url`, with the password from PGPASSWORD,
/// into the client folder's `results`.
fn load_only_over(server: &ManagedServer, url: String) -> Command {
    let mut command = stallbench(server);
    command
        .args(["run", "--load-only", "--duration", "2s", "--quiet"])
        .arg("--db-url")
        .arg(url)
        .arg("--out")
        .arg(server.client_dir().join("results"))
        .env("PGPASSWORD", APP_PASSWORD);
    command
}

/// Runs the short reference workload (`strategies`) over verified TLS into
/// `out`, with `password_env` set, and checks what every such run must show.
fn compare_over_tls(
    server: &ManagedServer,
    workload: &Path,
    out: &Path,
    strategies: &str,
    password_env: (&str, &str),
) {
    let url = server.url("sslmode=verify-full&sslrootcert=ca.pem");
    let output = stallbench(server)
        .arg("compare")
        .arg(workload)
        .args([
            "--strategies",
            strategies,
            "--db-url",
            &url,
            "--quiet",
            "--out",
        ])
        .arg(out)
        .env(password_env.0, password_env.1)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "compare over TLS failed: {stderr}\n{stdout}"
    );
    assert!(!stdout.contains(APP_PASSWORD) && !stderr.contains(APP_PASSWORD));
    for file in files_under(out) {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(APP_PASSWORD),
            "{} holds the password",
            file.display()
        );
    }

    let zero_seconds = zero_tps_seconds(&out.join("timeline.csv"), "naive");
    assert!(
        zero_seconds >= 2,
        "the naive ALTER should stall the readers over TLS as on the socket: {zero_seconds} zero-tps seconds"
    );
    let schemas = server.admin_sql(
        "shop",
        "SELECT count(*) FROM pg_namespace WHERE nspname = 'stallbench'",
    );
    assert_eq!(schemas.as_deref(), Some("0"), "the run's schema is dropped");
    let rows = server.admin_sql("shop", "SELECT count(*) FROM public.orders");
    assert_eq!(
        rows,
        Some(ORDERS_ROWS.to_string()),
        "the user's table is untouched"
    );
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A TLS-only server and the reference workload, on a small table (the data is
/// not the subject, the connection is), written into its client folder.
fn server_and_workload() -> (ManagedServer, std::path::PathBuf) {
    require_postgres();
    let server = ManagedServer::start();
    let mut workload = reference();
    workload.setup = workload::small_orders(20_000);
    let workload = write_workload(&server.client_dir(), "short.toml", &workload);
    (server, workload)
}

/// One server for both password sources: its start (initdb, certificates,
/// the role) took as long as a run (15 s at load 13), and each run leaves
/// the server as it found it (`compare_over_tls` checks that).
#[test]
fn the_outage_reproduces_over_verified_tls_with_the_password_from_env_then_pgpass() {
    let _cpus = cpus_shared();
    let (server, workload) = server_and_workload();
    compare_over_tls(
        &server,
        &workload,
        &server.client_dir().join("from-env"),
        "naive,retry",
        ("PGPASSWORD", APP_PASSWORD),
    );

    let pgpass = server.client_dir().join("pgpass");
    let line = format!("127.0.0.1:{}:shop:app:{APP_PASSWORD}\n", server.port);
    std::fs::write(&pgpass, line).unwrap();
    set_mode(&pgpass, 0o644);
    // libpq's rule: a password file others can read is ignored, with a warning.
    stallbench(&server)
        .arg("compare")
        .arg(&workload)
        .args(["--strategies", "naive", "--quiet", "--db-url"])
        .arg(server.url("sslmode=verify-full&sslrootcert=ca.pem"))
        .arg("--out")
        .arg(server.client_dir().join("ignored"))
        .env("PGPASSFILE", &pgpass)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("group or world access"))
        .stderr(predicate::str::contains("chmod 0600"))
        .stderr(predicate::str::contains(APP_PASSWORD).not());
    set_mode(&pgpass, 0o600);
    compare_over_tls(
        &server,
        &workload,
        &server.client_dir().join("from-pgpass"),
        "naive",
        ("PGPASSFILE", pgpass.to_str().unwrap()),
    );
    server.stop_and_check();
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_plain_connection_or_a_wrong_root_certificate_fails_with_one_clear_line() {
    require_postgres();
    let _cpus = cpus_shared();
    let server = ManagedServer::start();

    // The server has hostssl lines only: without TLS no line lets us in.
    let plain = load_only_over(&server, server.url("sslmode=disable"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no pg_hba.conf entry"))
        .stderr(predicate::str::contains("only TLS connections"))
        .stderr(predicate::str::contains(APP_PASSWORD).not());
    let stderr = String::from_utf8_lossy(&plain.get_output().stderr).into_owned();
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");

    let wrong_root = format!(
        "sslmode=verify-full&sslrootcert={}",
        server.wrong_ca_pem.display()
    );
    let wrong = load_only_over(&server, server.url(&wrong_root))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "127.0.0.1: the server's certificate does not verify: invalid peer certificate: UnknownIssuer",
        ))
        .stderr(predicate::str::contains("sslrootcert="))
        .stderr(predicate::str::contains("sslmode=require"));
    let stderr = String::from_utf8_lossy(&wrong.get_output().stderr).into_owned();
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");

    // require encrypts without checking the certificate (no root certificate given).
    load_only_over(&server, server.url("sslmode=require"))
        .assert()
        .success();
    server.stop_and_check();
}

#[test]
fn verify_ca_checks_the_chain_verify_full_also_the_name_and_a_second_host_is_tried() {
    require_postgres();
    let _cpus = cpus_shared();
    let server = ManagedServer::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // The server's certificate names 127.0.0.1, not localhost.
    let connect = |mode: &str| {
        let text = format!(
            "postgres://app:{APP_PASSWORD}@localhost:{}/shop?sslmode={mode}&sslrootcert={}",
            server.port,
            server.ca_pem.display()
        );
        let settings = ConnSettings::resolve(&text, &|_| None).unwrap().settings;
        let tls = Tls::new(&settings.ssl).unwrap();
        runtime.block_on(WireConnection::connect(&settings.tokio_config(), &tls))
    };
    let mut connection = connect("verify-ca").expect("verify-ca does not check the name");
    runtime.block_on(async {
        let count = connection
            .prepare("SELECT count(*) FROM public.orders")
            .await
            .unwrap();
        connection.execute(&count, &[]).await.unwrap();
        connection.terminate().await;
    });
    match connect("verify-full") {
        Err(ConnectError::Settings(message)) => assert!(
            message.starts_with("localhost: the server's certificate does not verify: "),
            "{message}"
        ),
        Err(other) => panic!("expected a certificate error, got {other:?}"),
        Ok(_) => panic!("verify-full accepted a certificate for another name"),
    }

    // Several hosts, as libpq: the first does not answer, the second is writable.
    let text = format!(
        "host=127.0.0.1,127.0.0.1 port=1,{} user=app dbname=shop password={APP_PASSWORD} \
         sslmode=verify-full sslrootcert='{}' target_session_attrs=read-write",
        server.port,
        server.ca_pem.display()
    );
    let settings = ConnSettings::resolve(&text, &|_| None).unwrap().settings;
    let tls = Tls::new(&settings.ssl).unwrap();
    runtime.block_on(async {
        let connection = WireConnection::connect(&settings.tokio_config(), &tls)
            .await
            .expect("the second host answers");
        connection.terminate().await;
        let client = tls.connect(&settings.tokio_config()).await.unwrap();
        let row = client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .await
            .unwrap();
        assert!(row.get::<_, bool>(0), "this session uses TLS");
    });
    server.stop_and_check();
}
