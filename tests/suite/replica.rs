//! The outage on the replica. A streaming hot standby beside the throwaway
//! server, cloned with `pg_basebackup` where the binaries have it and by a
//! cold copy where they do not (downloaded builds), replays what the primary
//! writes, refuses writes, streams under its own name, and goes with the
//! server, leaving no process and no folder. With the readers and the report
//! on it, an `ADD COLUMN` on the primary stalls the readers whether or not
//! the migration retries: its lock is taken on the primary at once, and
//! replayed behind the report.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use stallbench::choices::Side;
use stallbench::engine::postgres::server::{CloneMethod, Server, ServerBinaries};
use stallbench::export::csv::LockRecord;
use stallbench::metrics::Summary;
use stallbench::workload::ReplicaFile;
use tokio_postgres::error::SqlState;

use crate::common::workload::{self, report};
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
        .block_on(Server::start_with_standby(binaries, 100, &[]))
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
    // The suite's binaries are a full installation (scripts/test installs
    // Debian's postgresql), which has pg_basebackup: the standby is a base
    // backup. The folder without it is the next test's.
    let binaries = server_binaries();
    let basebackup = binaries.bin_dir.join("pg_basebackup");
    assert!(
        basebackup.is_file(),
        "{}: missing; the suite runs on a full PostgreSQL installation \
         (scripts/test installs Debian's postgresql)",
        basebackup.display()
    );
    streams_and_stops(binaries, CloneMethod::BaseBackup);
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

/// The reference experiment on the standby, small: readers and a report (1 s to 5 s) on the
/// standby, ADD COLUMN on the primary at 1.5 s; naive, retry and
/// replica-aware (the report is 0.5 s old at the DDL's start, so its
/// older_than is below that).
fn readers_and_report_on_the_replica() -> stallbench::workload::WorkloadFile {
    let mut workload = workload::small_reference();
    workload.replica = Some(ReplicaFile::default());
    workload.load.on = Some("replica".into());
    workload.blocker = Some(stallbench::workload::BlockerFile {
        on: Some("replica".into()),
        ..report("1s", "4s")
    });
    workload
        .strategies
        .push(stallbench::workload::StrategyFile {
            name: "replica-aware".into(),
            kind: Some("replica-aware".into()),
            older_than: Some("300ms".into()),
            lock_timeout: Some("500ms".into()),
            ..Default::default()
        });
    workload
}

#[test]
fn retry_on_the_primary_stalls_the_readers_on_the_replica_and_replica_aware_does_not() {
    // The standby replays the ADD COLUMN only once the report ends, and its
    // readers queue behind the replay; replica-aware waits for the report.
    // Readers on both servers: the primary's never stall.
    let _cpus = cpus_shared();
    let mut workload = readers_and_report_on_the_replica();
    workload.load.on = Some("both".into());
    let run = ShortRun::throwaway(&workload);
    let assert = run.command("compare").assert().success();
    let stdout = stdout_of(&assert);
    let summaries: Vec<Summary> = read_records(&run.out.join("summary.csv"));
    for summary in &summaries {
        assert_eq!(summary.ddl_outcome, "ok", "{summary:?}");
        assert_eq!(summary.ddl_attempts, 1, "one try each: {summary:?}");
    }
    let [naive, retry, aware] = ["naive", "retry", "replica-aware"]
        .map(|name| summaries.iter().find(|s| s.strategy == name).unwrap());
    // The replica's readers stall behind the replay, the primary's do not.
    assert!(
        naive.replica_zero_tps_seconds >= Some(2),
        "{naive:?}\n{stdout}"
    );
    assert!(
        retry.replica_zero_tps_seconds >= Some(2),
        "{retry:?}\n{stdout}"
    );
    assert_eq!(
        aware.replica_zero_tps_seconds,
        Some(0),
        "{aware:?}\n{stdout}"
    );
    for summary in &summaries {
        assert_eq!(summary.zero_tps_seconds, 0, "the primary's: {summary:?}");
    }
    // The replica observer saw replay wait behind the report, and lag grow.
    assert!(naive.replica_replay_waiting_s >= Some(2), "{naive:?}");
    assert!(naive.replica_max_lag_s >= Some(1.5), "{naive:?}");
    assert_eq!(aware.replica_replay_waiting_s, Some(0), "{aware:?}");
    assert_eq!(naive.replica_cancelled, Some(0), "{naive:?}");
    let attempts = std::fs::read_to_string(run.out.join("ddl_attempts.csv")).unwrap();
    let aware_try = attempts
        .lines()
        .find(|line| line.starts_with("replica-aware,"))
        .unwrap();
    let started_s: f64 = aware_try.split(',').nth(2).unwrap().parse().unwrap();
    assert!(
        started_s >= 4.5,
        "replica-aware tries once the report ends at 5 s: {aware_try}"
    );
    assert!(
        stdout.contains("Load on both servers (") && stdout.contains("): replica-aware kept"),
        "{stdout}"
    );
    let timeline = std::fs::read_to_string(run.out.join("timeline.csv")).unwrap();
    let header: Vec<&str> = timeline.lines().next().unwrap().split(',').collect();
    let replica_tps = header
        .iter()
        .position(|name| *name == "replica_tps")
        .unwrap();
    let naive_replica_tps: Vec<u64> = (timeline.lines())
        .filter(|line| line.starts_with("naive,"))
        .map(|line| line.split(',').nth(replica_tps).unwrap().parse().unwrap())
        .collect();
    assert!(
        naive_replica_tps.first() > Some(&0) && naive_replica_tps.contains(&0),
        "the replica's readers read, then stalled: {naive_replica_tps:?}"
    );
    assert!(
        stdout.contains("retry: done on the primary at ") && stdout.contains("after 1 try, yet"),
        "{stdout}"
    );
    let run_json = std::fs::read_to_string(run.out.join("run.json")).unwrap();
    assert!(run_json.contains("with a hot standby ("), "{run_json}");
    assert!(run_json.contains("\"load_on\": \"both\""), "{run_json}");
    assert!(run.out.join("replica-server.log").is_file());
    assert_the_chain_reads_across_servers(&run.out, &stdout);
    assert_run_stopped_its_server(&run.out);
}

/// The lock queue of the replica in `out` (the run above): the standby's
/// samples in `locks.csv`, naive's worst moment in `summary.md` read across
/// servers, and the standby's log naming the report on stdout.
fn assert_the_chain_reads_across_servers(out: &std::path::Path, stdout: &str) {
    let locks: Vec<LockRecord> = read_records(&out.join("locks.csv"));
    let on_replica = |strategy: &str, role: &str| {
        (locks.iter())
            .filter(|l| l.strategy == strategy && l.server == Side::Replica)
            .filter(|l| l.role == role || l.role.starts_with(&format!("{role}-")))
            .collect::<Vec<_>>()
    };
    let replay = on_replica("naive", "startup");
    assert!(
        replay.iter().any(|l| !l.granted
            && l.lock_mode == "AccessExclusiveLock"
            && l.blocked_by == "report"),
        "naive: replay waits for the report on the standby: {replay:?}"
    );
    let readers = on_replica("naive", "reader");
    assert!(
        readers
            .iter()
            .any(|l| !l.granted && l.blocked_by == "startup"),
        "naive: the readers wait behind replay: {readers:?}"
    );
    assert!(
        on_replica("replica-aware", "startup").is_empty(),
        "replica-aware: replay never waits"
    );
    let summary_md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let (_, worst) = summary_md
        .split_once("## naive: the lock queue at its worst (")
        .unwrap_or_else(|| panic!("{summary_md}"));
    let chain = worst.lines().nth(2).unwrap();
    assert!(
        chain.starts_with("report (replica, pid ")
            && chain.contains(" holds AccessShareLock on orders <- startup (replica, pid ")
            && chain.contains(
                " replays AccessExclusiveLock on orders from ddl (primary), blocked by report <- reader-"
            )
            && (chain.ends_with(" wait for AccessShareLock on orders, blocked by startup")
                || chain.ends_with(" waits for AccessShareLock on orders, blocked by startup")),
        "{chain}"
    );
    assert!(
        stdout.contains("naive: replica: recovery conflict on lock (")
            && stdout.contains("startup still waiting after ")
            && stdout.contains(" ms for report; finished waiting after "),
        "{stdout}"
    );
}

#[test]
fn your_own_standby_of_a_db_url_server_is_named_with_replica_url() {
    // The test's own pair stands in for a staging primary and its standby.
    let _cpus = cpus_shared();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(Server::start_with_standby(server_binaries(), 100, &[]))
        .unwrap();
    let primary = server.connection_string();
    let standby = server.standby_connection_string().unwrap();
    let mut workload = readers_and_report_on_the_replica();
    workload
        .strategies
        .retain(|strategy| strategy.name != "naive");
    let run = ShortRun::throwaway(&workload);

    // A primary named as the standby is refused before anything runs.
    let assert = run
        .command("compare")
        .args(["--db-url", &primary, "--replica-url", &primary])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        stderr.contains("that server is not a standby (pg_is_in_recovery() is false)"),
        "{stderr}"
    );

    let assert = run
        .command("compare")
        .args(["--db-url", &primary, "--replica-url", &standby])
        .assert()
        .success();
    let stdout = stdout_of(&assert);
    let summaries: Vec<Summary> = read_records(&run.out.join("summary.csv"));
    let [retry, aware] = ["retry", "replica-aware"]
        .map(|name| summaries.iter().find(|s| s.strategy == name).unwrap());
    assert!(retry.zero_tps_seconds >= 2, "{retry:?}\n{stdout}");
    assert!(retry.replica_replay_waiting_s >= Some(2), "{retry:?}");
    assert_eq!(aware.zero_tps_seconds, 0, "{aware:?}\n{stdout}");
    let run_json = std::fs::read_to_string(run.out.join("run.json")).unwrap();
    assert!(run_json.contains("\"url\": \"host="), "{run_json}");
    // No log of a standby that is not ours.
    assert!(!run.out.join("replica-server.log").exists());
    stop_and_check(server);
}

/// The pid of the standby's postmaster among `harness`'s children, once it is up.
fn standby_of(harness: u32) -> u32 {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let standby = children_of(harness).into_iter().find(|pid| {
            // The postmaster, not pg_basebackup, which names the same folder before it.
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            cmdline
                .split('\0')
                .next()
                .unwrap_or("")
                .ends_with("/postgres")
                && cmdline.contains("/standby/data\0")
        });
        if let Some(pid) = standby {
            return pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no standby within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_standby_killed_mid_run_makes_the_run_no_result_and_leaves_nothing() {
    // The readers on the standby, the report on the primary: only the
    // standby's death can make this run no result.
    let _cpus = cpus_shared();
    let mut workload = readers_and_report_on_the_replica();
    workload
        .strategies
        .retain(|strategy| strategy.name == "naive");
    workload.blocker = Some(report("1s", "4s"));
    let run = ShortRun::throwaway(&workload);
    let tmpdir = private_tmpdir();
    let mut harness = crate::faults::stallbench()
        .arg("run")
        .arg(&run.workload)
        .args(["--strategy", "naive", "--quiet", "--out"])
        .arg(&run.out)
        .env("TMPDIR", tmpdir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let standby = standby_of(harness.id());
    // The 4 readers and the replica observer are connected: the clock starts.
    crate::faults::wait_for_sessions(standby, 5);
    std::thread::sleep(Duration::from_millis(1500));
    crate::faults::kill(standby, libc::SIGKILL);
    let status = harness.wait().unwrap();
    let stderr = crate::faults::stderr_of(&mut harness);
    assert_eq!(status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("naive: invalid: the hot standby exited during the run ("),
        "{stderr}"
    );
    let summaries: Vec<Summary> = read_records(&run.out.join("summary.csv"));
    assert!(summaries[0].invalid.starts_with("the hot standby exited"));
    assert!(summaries[0].transactions > 0, "what was measured stays");
    assert_nothing_left_in(tmpdir.path());
}

#[test]
fn a_sweep_of_the_standbys_delay_trades_stalled_readers_for_a_cancelled_report() {
    // The report on the standby from 1 s to 5 s, ADD COLUMN at 1.5 s: with a
    // 1 s delay replay cancels the report, with 30 s the readers wait for it.
    let _cpus = cpus_shared();
    let mut workload = readers_and_report_on_the_replica();
    workload
        .strategies
        .retain(|strategy| strategy.name == "naive");
    let run = ShortRun::throwaway(&workload);
    let assert = run
        .command("compare")
        .args(["--sweep", "replica.max_standby_streaming_delay=1s,30s"])
        .assert()
        .success();
    let stdout = stdout_of(&assert);
    let at = |value: &str| -> Summary {
        let folder = run.out.join(format!("max_standby_streaming_delay={value}"));
        read_records::<Summary>(&folder.join("summary.csv")).remove(0)
    };
    let (short, long) = (at("1s"), at("30s"));
    // Replay cancels the report; a reader caught mid-transaction at that
    // moment is cancelled too, so the count is at least one.
    assert!(
        short.blocker_outcome.contains("conflict with recovery"),
        "{short:?}\n{stdout}"
    );
    assert!(short.replica_cancelled >= Some(1), "{short:?}\n{stdout}");
    assert!(short.zero_tps_seconds <= 1, "{short:?}");
    assert!(
        short.invalid.is_empty(),
        "a cancelled report is the scenario's doing: {short:?}"
    );
    assert_eq!(long.replica_cancelled, Some(0), "{long:?}");
    assert_eq!(long.blocker_outcome, "ok", "{long:?}");
    assert!(long.zero_tps_seconds >= 2, "{long:?}\n{stdout}");
    let log = std::fs::read_to_string(run.out.join("sweep.csv")).unwrap();
    assert!(log.contains("max_standby_streaming_delay"), "{log}");
}
