//! One PostgreSQL server per test binary, for the tests that neither stop,
//! restart nor reconfigure their server: each test gets a database of its own
//! on it, empty or cloned from a template that holds a workload's tables, so
//! a test pays neither initdb nor the loading of 200,000 rows.
//!
//! The server is the harness's own throwaway server
//! ([`stallbench::engine::postgres::server::Server`], the same settings a run gets), started by
//! the first test that asks for it. It must not outlive the test process,
//! whose statics are never dropped:
//! - it is started from a thread that never ends, so its `PR_SET_PDEATHSIG`
//!   (which fires when the thread that started it ends) fires only when the
//!   process is gone, however it ends (a panic, a signal, SIGKILL);
//! - when the process exits normally, an `atexit` handler stops it and
//!   removes its folder;
//! - a folder a killed test process leaves behind carries the harness's owner
//!   marker, so the next stallbench run removes it.
//!
//! Its socket is in its own temp folder: no other test binary sees it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use stallbench::engine::postgres::server::Server;

/// The schema of a template database that holds a setup's tables.
const PRELOADED: &str = "preloaded";

/// The binary's shared server; see the module documentation.
pub struct SharedServer {
    /// Taken out and stopped at exit.
    server: Mutex<Option<Server>>,
    /// Holds the socket (and the data folder).
    folder: PathBuf,
    /// Numbers the databases made for tests.
    next_database: AtomicU32,
    /// The template database of each setup SQL asked for, once made.
    templates: Mutex<HashMap<String, Arc<OnceLock<Template>>>>,
}

/// A template database: a setup's tables in schema `preloaded`.
#[derive(Clone)]
struct Template {
    name: String,
    /// The tables, in the order the setup made them.
    tables: Vec<String>,
}

/// A database of one test on the shared server.
pub struct TestDatabase {
    pub name: String,
    /// A libpq connection string, for `--db-url`.
    pub url: String,
    /// With a template: the setup SQL that moves its tables into the run's schema.
    setup: Option<String>,
}

static SHARED: OnceLock<SharedServer> = OnceLock::new();

/// The binary's shared server, started on first use.
pub fn shared_server() -> &'static SharedServer {
    SHARED.get_or_init(SharedServer::start)
}

/// Stops the shared server and removes its folder as the process exits.
extern "C" fn stop_shared_server() {
    if let Some(shared) = SHARED.get() {
        let server = shared
            .server
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(server);
    }
}

impl SharedServer {
    fn start() -> SharedServer {
        super::require_postgres();
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("shared-postgres".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let server = runtime.block_on(Server::start(
                    super::server_binaries(),
                    stallbench::engine::postgres::server::DEFAULT_MAX_CONNECTIONS,
                ));
                let _ = sender.send(server);
                // The server's PR_SET_PDEATHSIG fires when this thread ends: it never does.
                loop {
                    std::thread::park();
                }
            })
            .unwrap();
        let server = receiver
            .recv()
            .unwrap()
            .expect("starting the shared server");
        // SAFETY: registers a plain extern "C" function, once (inside get_or_init).
        assert_eq!(unsafe { libc::atexit(stop_shared_server) }, 0);
        let folder = server.log_path().parent().unwrap().to_path_buf();
        SharedServer {
            server: Mutex::new(Some(server)),
            folder,
            next_database: AtomicU32::new(1),
            templates: Mutex::new(HashMap::new()),
        }
    }

    /// The folder holding the server's socket and data.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// A libpq connection string for database `dbname`, as user postgres.
    pub fn url(&self, dbname: &str) -> String {
        format!(
            "host={} port=5432 user=postgres dbname={dbname}",
            self.folder.display()
        )
    }

    /// A new empty database, for a run that loads its own data.
    pub fn empty_database(&self) -> TestDatabase {
        let name = self.new_database_name();
        self.execute("postgres", &format!("CREATE DATABASE {name}"));
        TestDatabase {
            url: self.url(&name),
            name,
            setup: None,
        }
    }

    /// A new database holding what `setup` makes, in schema `preloaded`: a
    /// copy of a template database loaded once per binary for each setup.
    /// [`TestDatabase::setup`] moves the tables into the run's schema.
    pub fn database_with(&self, setup: &str) -> TestDatabase {
        let template = self.template(setup);
        let name = self.new_database_name();
        self.execute(
            "postgres",
            &format!("CREATE DATABASE {name} TEMPLATE {}", template.name),
        );
        let moves: Vec<String> = template
            .tables
            .iter()
            .map(|table| {
                format!(
                    "ALTER TABLE {PRELOADED}.{table} SET SCHEMA {};",
                    stallbench::engine::postgres::database::SCHEMA
                )
            })
            .collect();
        TestDatabase {
            url: self.url(&name),
            name,
            setup: Some(moves.join("\n")),
        }
    }

    fn new_database_name(&self) -> String {
        format!(
            "test_{}",
            self.next_database.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// The template of `setup`, made by the first test that asks for it.
    fn template(&self, setup: &str) -> Template {
        let cell = self
            .templates
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(setup.to_string())
            .or_default()
            .clone();
        cell.get_or_init(|| self.make_template(setup)).clone()
    }

    fn make_template(&self, setup: &str) -> Template {
        let name = format!("template_{}", self.new_database_name());
        self.execute("postgres", &format!("CREATE DATABASE {name}"));
        self.execute(
            &name,
            &format!("CREATE SCHEMA {PRELOADED}; SET search_path = {PRELOADED};\n{setup}"),
        );
        // As the harness does after its setup: the copies start settled.
        self.execute(&name, "VACUUM (ANALYZE)");
        let tables = self.query_texts(
            &name,
            &format!(
                "SELECT c.relname::text FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = '{PRELOADED}' AND c.relkind = 'r' ORDER BY c.oid"
            ),
        );
        Template { name, tables }
    }

    /// Runs `sql` (one or more statements) in database `dbname`.
    pub fn execute(&self, dbname: &str, sql: &str) {
        let url = self.url(dbname);
        let sql = sql.to_string();
        on_own_runtime(async move {
            let client = super::connect(&url).await;
            client
                .batch_execute(&sql)
                .await
                .unwrap_or_else(|err| panic!("{sql}: {err:?}"));
        });
    }

    /// The first column of every row of `sql` in database `dbname`, as text.
    pub fn query_texts(&self, dbname: &str, sql: &str) -> Vec<String> {
        let url = self.url(dbname);
        let sql = sql.to_string();
        on_own_runtime(async move {
            let client = super::connect(&url).await;
            let rows = client
                .query(&sql, &[])
                .await
                .unwrap_or_else(|err| panic!("{sql}: {err:?}"));
            rows.iter().map(|row| row.get(0)).collect()
        })
    }
}

impl TestDatabase {
    /// The setup SQL for a workload run in this database: with a template,
    /// the statements that move its tables into the run's schema (no loading),
    /// else `own` (the workload's own setup).
    pub fn setup(&self, own: &str) -> String {
        self.setup.clone().unwrap_or_else(|| own.to_string())
    }
}

impl Drop for TestDatabase {
    /// Drops the database in the background (a drop waits for a checkpoint),
    /// best effort: the server and its folder go at exit anyway.
    fn drop(&mut self) {
        let url = shared_server().url("postgres");
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                if let Ok(client) = super::try_connect(&url).await {
                    let _ = client.batch_execute(&sql).await;
                }
            });
        });
    }
}

/// Runs `work` on a runtime of its own, on a thread of its own, so that a
/// test may call these helpers from inside its own runtime too.
fn on_own_runtime<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> T {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(work)
    })
    .join()
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// A transaction in another database of the shared server, a copy of the
/// same template as a run's (so its tables have the OIDs of the run's tables),
/// holding ACCESS SHARE on `preloaded.<table>`: what a strategy that looks at
/// `pg_locks` must tell apart from its own database's locks.
pub struct LockElsewhere {
    client: tokio_postgres::Client,
    runtime: tokio::runtime::Runtime,
    _database: TestDatabase,
}

impl LockElsewhere {
    /// Opens the transaction in a new copy of `setup`'s template.
    pub fn hold(setup: &str, table: &str) -> LockElsewhere {
        let database = shared_server().database_with(setup);
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let client = runtime.block_on(async {
            let client = super::connect(&database.url).await;
            client
                .batch_execute(&format!(
                    "BEGIN; LOCK TABLE {PRELOADED}.{table} IN ACCESS SHARE MODE"
                ))
                .await
                .unwrap();
            client
        });
        LockElsewhere {
            client,
            runtime,
            _database: database,
        }
    }

    /// Whether the transaction's session is still there; ends the transaction.
    pub fn still_alive(self) -> bool {
        self.runtime
            .block_on(self.client.batch_execute("COMMIT"))
            .is_ok()
    }
}
