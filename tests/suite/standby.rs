//! A streaming hot standby beside the throwaway server, where the replica's
//! outage will be measured: cloned with `pg_basebackup` where the binaries
//! have it and by a cold copy where they do not (downloaded builds), it
//! replays what the primary writes, refuses writes, streams under its own
//! name, and goes with the server, leaving no process and no folder.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use stallbench::server::{CloneMethod, Server, ServerBinaries};
use tokio_postgres::error::SqlState;

use crate::common::*;

/// A plain client of the server `config` names.
async fn client(config: &tokio_postgres::Config) -> tokio_postgres::Client {
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// Starts `binaries` with a standby and checks that the standby replays a
/// table the primary writes after the start, refuses a write, and is the
/// primary's streaming replica; then stops the pair.
fn streams_and_stops(binaries: &ServerBinaries, method: CloneMethod) {
    let _cpus = cpus_shared();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(Server::start_with_standby(binaries, 100))
        .unwrap();
    assert_eq!(server.standby_method(), Some(method));
    runtime.block_on(async {
        let primary = client(&server.connection_config()).await;
        primary
            .batch_execute(
                "CREATE TABLE orders (id int); INSERT INTO orders SELECT generate_series(1, 1000)",
            )
            .await
            .unwrap();
        server
            .standby_caught_up(Duration::from_secs(20))
            .await
            .unwrap();
        let standby = client(&server.standby_connection_config().unwrap()).await;
        let row = standby
            .query_one("SELECT count(*), pg_is_in_recovery() FROM orders", &[])
            .await
            .unwrap();
        assert_eq!((row.get::<_, i64>(0), row.get::<_, bool>(1)), (1000, true));
        let refused = standby
            .batch_execute("INSERT INTO orders VALUES (0)")
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Some(&SqlState::READ_ONLY_SQL_TRANSACTION));
        let replica = primary
            .query_one(
                "SELECT application_name, state FROM pg_stat_replication",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(
            (replica.get::<_, &str>(0), replica.get::<_, &str>(1)),
            ("stallbench-standby", "streaming")
        );
    });
    assert!(server.standby_log_path().unwrap().is_file());
    stop_and_check(server);
}

#[test]
fn a_standby_replays_what_the_primary_writes_and_goes_with_it() {
    let binaries = server_binaries();
    streams_and_stops(binaries, CloneMethod::for_bin_dir(&binaries.bin_dir));
}

#[test]
fn binaries_without_pg_basebackup_clone_the_standby_by_a_cold_copy() {
    // The downloaded builds' shape: a folder with initdb and postgres only.
    let installed = server_binaries();
    let bin = tempfile::tempdir().unwrap();
    std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for program in ["initdb", "postgres"] {
        std::os::unix::fs::symlink(installed.bin_dir.join(program), bin.path().join(program))
            .unwrap();
    }
    let binaries = ServerBinaries {
        bin_dir: bin.path().to_path_buf(),
        ..installed.clone()
    };
    streams_and_stops(&binaries, CloneMethod::ColdCopy);
}
