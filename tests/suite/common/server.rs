//! The tests' own way into a database: a throwaway server as `--db-url` runs
//! use it, a plain client, and waiting until a run's readers are connected
//! (the moment its clock is about to start), so a test can act on the server
//! while a run goes on.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use stallbench::engine::postgres::server::{Server, ServerBinaries};

/// Counts the connected readers of the harness (by their application_name)
/// in the current database (on the shared server, other tests run in others).
pub const READERS_CONNECTED: &str = "SELECT count(*) FROM pg_stat_activity \
     WHERE application_name LIKE 'stallbench-%-reader-%' AND datname = current_database()";

/// The server binaries the tests run, found once per test binary the way
/// stallbench finds them: `STALLBENCH_PG_BIN`, `STALLBENCH_PG_VERSION` (an
/// installed server of that major, else a cached or downloaded one), else any
/// installed server. The binaries the tests start inherit the same variables,
/// so the whole suite runs on another major with one of them. Panics (never
/// skips) when there is none.
pub fn server_binaries() -> &'static ServerBinaries {
    static FOUND: OnceLock<ServerBinaries> = OnceLock::new();
    FOUND.get_or_init(|| {
        let found = stallbench::config::server_from_environment().and_then(|request| {
            stallbench::engine::postgres::server::find_binaries(&request, true)
        });
        found.unwrap_or_else(|err| {
            panic!(
                "these tests run a real PostgreSQL and none was found: {err}\n\
                 On Debian/Ubuntu: apt-get install -y postgresql"
            )
        })
    })
}

/// Starts a throwaway server with the harness's defaults, for runs given its
/// [`Server::connection_string`] as `--db-url`. Stopped on drop.
pub fn start_throwaway_server(runtime: &tokio::runtime::Runtime) -> Server {
    start_server(
        runtime,
        stallbench::engine::postgres::server::DEFAULT_MAX_CONNECTIONS,
    )
}

/// [`start_throwaway_server`] with room for `max_connections` sessions.
pub fn start_server(runtime: &tokio::runtime::Runtime, max_connections: u32) -> Server {
    runtime
        .block_on(Server::start(server_binaries(), max_connections))
        .unwrap()
}

/// A plain (no TLS) client of `url`; its connection runs on the caller's runtime.
pub async fn connect(url: &str) -> tokio_postgres::Client {
    try_connect(url)
        .await
        .unwrap_or_else(|err| panic!("{url}: {err}"))
}

/// [`connect`], for a server that may be down (restarting).
pub async fn try_connect(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) = url
        .parse::<tokio_postgres::Config>()
        .unwrap()
        .connect(tokio_postgres::NoTls)
        .await?;
    tokio::spawn(connection);
    Ok(client)
}

/// One int8 value of `sql` on the server at `url`, over a new connection.
pub fn query_int(runtime: &tokio::runtime::Runtime, url: &str, sql: &str) -> i64 {
    runtime.block_on(async { connect(url).await.query_one(sql, &[]).await.unwrap().get(0) })
}

/// Waits, up to 60 s, until at least `readers` readers of a run are connected.
pub async fn wait_for_readers(client: &tokio_postgres::Client, readers: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let connected: i64 = client
            .query_one(READERS_CONNECTED, &[])
            .await
            .unwrap()
            .get(0);
        if connected >= readers {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the harness never connected {readers} readers ({connected} connected)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The uid and gid of the `postgres` system user when the tests run as root
/// (initdb refuses root); `None` otherwise.
pub fn postgres_ids() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let name = std::ffi::CString::new("postgres").unwrap();
    // SAFETY: a valid C string; the result is read at once, before another getpw* call.
    let entry = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(
        !entry.is_null(),
        "running as root needs a `postgres` system user"
    );
    // SAFETY: checked non-null above.
    let entry = unsafe { &*entry };
    Some((entry.pw_uid, entry.pw_gid))
}
