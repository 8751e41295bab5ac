//! A second throwaway server set up like a managed one (RDS, Cloud SQL, ...):
//! TCP on 127.0.0.1 only, TLS with a certificate signed by a test CA made
//! here with rcgen, `hostssl` lines only with scram-sha-256, and a
//! non-superuser `app` with a password owning database `shop`, which holds
//! `public.orders` with rows. Only the test's own setup uses the unix socket
//! in the server's folder, as `postgres`.
//!
//! Stopped and removed on drop (every exit path of a test, panics included);
//! the server also gets `PR_SET_PDEATHSIG`, so it dies with the test process.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use super::server::postgres_ids;

/// The password of the role `app`.
pub const APP_PASSWORD: &str = "Tls-secret-4711";
/// Rows in `public.orders` of database `shop`.
pub const ORDERS_ROWS: i64 = 1000;

/// The variables libpq reads; the runs get only those a test sets.
const LIBPQ_VARIABLES: &[&str] = &[
    "DATABASE_URL",
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGUSER",
    "PGDATABASE",
    "PGPASSWORD",
    "PGPASSFILE",
    "PGOPTIONS",
    "PGAPPNAME",
    "PGCONNECT_TIMEOUT",
    "PGSSLMODE",
    "PGSSLROOTCERT",
    "PGSSLCERT",
    "PGSSLKEY",
    "PGTARGETSESSIONATTRS",
];

/// The binary run in `dir` (where a test's scripts and `ca.pem` are) with a
/// HOME there, no libpq variable and no `STALLBENCH_PG_BIN` from the test's
/// environment: the connection is what the test gives it.
pub fn stallbench_in(dir: &Path) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::cargo_bin("stallbench").unwrap();
    for variable in LIBPQ_VARIABLES {
        command.env_remove(variable);
    }
    command
        .env_remove("STALLBENCH_PG_BIN")
        .env("HOME", dir)
        .current_dir(dir);
    command
}

/// A running TLS-only server. Dropping it stops the server and removes its folder.
pub struct ManagedServer {
    child: Option<Child>,
    /// Holds the data folder, the key and the socket (owned by `postgres` when root).
    folder: tempfile::TempDir,
    /// The port on 127.0.0.1.
    pub port: u16,
    /// The CA that signed the server's certificate (a PEM file readable by the test).
    pub ca_pem: PathBuf,
    /// Another CA, which signed nothing the server has.
    pub wrong_ca_pem: PathBuf,
}

fn as_server_user(command: &mut Command, ids: Option<(u32, u32)>) -> &mut Command {
    if let Some((uid, gid)) = ids {
        command.uid(uid).gid(gid);
    }
    command
}

fn chown(path: &Path, ids: Option<(u32, u32)>) {
    if let Some((uid, gid)) = ids {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
    }
}

/// A test CA and a server certificate for 127.0.0.1 signed by it, as PEM:
/// (CA certificate, server certificate, server key), plus an unrelated CA.
fn certificates() -> (String, String, String, String) {
    let ca = |name: &str| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), Issuer::new(params, key))
    };
    let (ca_pem, issuer) = ca("stallbench test CA");
    let (wrong_ca_pem, _) = ca("some other CA");
    let server_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "stallbench test server");
    let server_cert = params.signed_by(&server_key, &issuer).unwrap();
    (
        ca_pem,
        server_cert.pem(),
        server_key.serialize_pem(),
        wrong_ca_pem,
    )
}

/// A port on 127.0.0.1 nobody listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

impl ManagedServer {
    /// initdb, certificates, pg_hba, start, then the role, database and table.
    pub fn start() -> ManagedServer {
        let bin_dir = &super::server_binaries().bin_dir;
        let ids = postgres_ids();
        let folder = tempfile::Builder::new()
            .prefix("stallbench-tls-")
            .tempdir()
            .unwrap();
        let root = folder.path();
        chown(root, ids);
        let data = root.join("data");
        let status = as_server_user(&mut Command::new(bin_dir.join("initdb")), ids)
            .args(["--auth=trust", "--no-sync", "-U", "postgres", "-D"])
            .arg(&data)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "initdb failed");

        let (ca_pem, cert_pem, key_pem, wrong_ca_pem) = certificates();
        for (name, text) in [("server.crt", &cert_pem), ("server.key", &key_pem)] {
            let path = data.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            chown(&path, ids);
        }
        let hba = "local all postgres trust\n\
                   hostssl all all 127.0.0.1/32 scram-sha-256\n";
        std::fs::write(data.join("pg_hba.conf"), hba).unwrap();
        let client_side = root.join("client");
        std::fs::create_dir(&client_side).unwrap();
        let ca_path = client_side.join("ca.pem");
        let wrong_ca_path = client_side.join("wrong-ca.pem");
        std::fs::write(&ca_path, ca_pem).unwrap();
        std::fs::write(&wrong_ca_path, wrong_ca_pem).unwrap();

        let port = free_port();
        let mut command = Command::new(bin_dir.join("postgres"));
        as_server_user(&mut command, ids)
            .arg("-D")
            .arg(&data)
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", &format!("port={port}")])
            .args(["-c", &format!("unix_socket_directories={}", root.display())])
            .args(["-c", "ssl=on", "-c", "password_encryption=scram-sha-256"])
            .args(["-c", "fsync=off", "-c", "log_lock_waits=on"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(root.join("startup.log")).unwrap());
        // SAFETY: prctl is async-signal-safe; it only sets a flag of the child process.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        let server = ManagedServer {
            child: Some(child),
            folder,
            port,
            ca_pem: ca_path,
            wrong_ca_pem: wrong_ca_path,
        };
        server.wait_ready();
        let create_role = format!("CREATE ROLE app LOGIN PASSWORD '{APP_PASSWORD}'");
        server.admin_sql("postgres", &create_role);
        server.admin_sql("postgres", "CREATE DATABASE shop OWNER app");
        server.admin_sql(
            "shop",
            &format!(
                "CREATE TABLE public.orders (id bigserial PRIMARY KEY, customer_id int NOT NULL, total numeric(10,2) NOT NULL); \
                 INSERT INTO public.orders (customer_id, total) SELECT 1 + g % 100, g % 50 + 0.99 FROM generate_series(1, {ORDERS_ROWS}) g; \
                 ALTER TABLE public.orders OWNER TO app;"
            ),
        );
        server
    }

    /// `postgres://app@127.0.0.1:PORT/shop?` followed by `query`.
    pub fn url(&self, query: &str) -> String {
        format!("postgres://app@127.0.0.1:{}/shop?{query}", self.port)
    }

    /// A folder for the test's own files (results, .pgpass).
    pub fn client_dir(&self) -> PathBuf {
        self.folder.path().join("client")
    }

    /// Runs `sql` as `postgres` over the unix socket and returns the first
    /// column of the first row, as text.
    pub fn admin_sql(&self, dbname: &str, sql: &str) -> Option<String> {
        self.try_admin_sql(dbname, sql)
            .unwrap_or_else(|err| panic!("{sql}: {err:?}"))
    }

    fn try_admin_sql(
        &self,
        dbname: &str,
        sql: &str,
    ) -> Result<Option<String>, tokio_postgres::Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (client, connection) = self
                .admin_config(dbname)
                .connect(tokio_postgres::NoTls)
                .await?;
            tokio::spawn(connection);
            let messages = client.simple_query(sql).await?;
            Ok(messages.into_iter().find_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
                _ => None,
            }))
        })
    }

    fn admin_config(&self, dbname: &str) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host_path(self.folder.path())
            .port(self.port)
            .user("postgres")
            .dbname(dbname);
        config
    }

    /// Stops the server (as dropping it does) and asserts that no process runs
    /// in its folder any more and the folder is gone.
    pub fn stop_and_check(self) {
        let folder = self.folder.path().to_path_buf();
        drop(self);
        super::assert_no_process_in(&folder);
        assert!(!folder.exists(), "{} is left behind", folder.display());
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.try_admin_sql("postgres", "SELECT 1").is_err() {
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(self.folder.path().join("startup.log"));
                panic!("the TLS server accepts no login within 30 s: {log:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGINT: the fast shutdown, as pg_ctl -m fast.
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
