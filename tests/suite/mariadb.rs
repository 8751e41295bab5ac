//! MariaDB behind the engine seam, on a real `mariadbd` that each test
//! starts (Debian's `mariadb-server`; without it a test fails with the
//! command that installs it, it is never skipped).

use std::time::Duration;

use mysql_async::prelude::Queryable;
use stallbench::engine::mariadb::ddl::Strategy;
use stallbench::engine::mariadb::load::run_load;
use stallbench::engine::mariadb::scenario::{Outage, create_database, in_database, run_strategy};
use stallbench::engine::mariadb::script::{ScriptFile, parse_scripts};
use stallbench::engine::mariadb::server::{MariadbServer, find_binaries};
use stallbench::engine::mariadb::session::SessionRoles;
use stallbench::engine::mariadb::workload::bundled;
use stallbench::export::sentences::describe_chain;
use stallbench::metrics::AttemptOutcome;
use stallbench::metrics::locks::chain;
use stallbench::scenario::RunClock;

use crate::common::{assert_no_process_in, cpus_shared};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A throwaway server with the harness's database, or a failure naming the install command.
fn start_server(runtime: &tokio::runtime::Runtime) -> MariadbServer {
    let binaries = find_binaries().unwrap_or_else(|err| panic!("{err:#}"));
    let server = runtime
        .block_on(MariadbServer::start(&binaries, 30))
        .unwrap_or_else(|err| panic!("{err:#}"));
    runtime
        .block_on(create_database(&server.opts(None)))
        .unwrap();
    server
}

/// The reference outage on a short clock: 20,000 orders, 3 readers, the
/// report holding the table from 1 s to 4 s, the ALTER at 1.5 s, 6 s in all.
/// A naive ALTER holds every reader from 1.5 s to 4 s: seconds 2 and 3 at zero.
fn short_outage() -> Outage {
    let mut outage = Outage::add_column();
    for statement in &mut outage.setup {
        *statement = statement.replace("seq_1_to_200000", "seq_1_to_20000");
    }
    outage.clients = 3;
    outage.duration = Duration::from_secs(6);
    outage.report_at = Duration::from_secs(1);
    outage.report_hold = Duration::from_secs(3);
    outage.ddl_at = Duration::from_millis(1500);
    outage
}

#[test]
fn a_throwaway_server_runs_the_mdl_instrument_and_leaves_nothing_behind() {
    let runtime = runtime();
    let server = start_server(&runtime);
    let folder = server.folder().to_path_buf();
    let pid = server.pid().unwrap();
    let (instrument, networking): (String, i64) = runtime.block_on(async {
        let mut conn = mysql_async::Conn::new(server.opts(None)).await.unwrap();
        let row = conn
            .query_first(
                "SELECT (SELECT ENABLED FROM performance_schema.setup_instruments \
                 WHERE NAME = 'wait/lock/metadata/sql/mdl'), @@skip_networking",
            )
            .await
            .unwrap()
            .unwrap();
        conn.disconnect().await.unwrap();
        row
    });
    assert_eq!(instrument, "YES");
    assert_eq!(networking, 1, "the throwaway server opens no TCP port");
    // As root the server runs as the mysql system user.
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid_line = status
        .lines()
        .find(|line| line.starts_with("Uid:"))
        .unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert!(
            !uid_line.split_whitespace().nth(1).unwrap().eq("0"),
            "{uid_line}"
        );
    }
    drop(server);
    assert!(!folder.exists(), "{} is left behind", folder.display());
    assert_no_process_in(&folder);
}

#[test]
fn a_killed_server_is_seen_and_its_folder_removed() {
    let runtime = runtime();
    let mut server = start_server(&runtime);
    let folder = server.folder().to_path_buf();
    // SAFETY: kill(2) on the server this test started.
    unsafe { libc::kill(server.pid().unwrap() as i32, libc::SIGKILL) };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.exit_status().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the killed server is not seen as exited"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server.stop();
    assert!(!folder.exists(), "{} is left behind", folder.display());
}

#[test]
fn the_load_counts_point_selects_in_every_second() {
    let _cpus = cpus_shared();
    let runtime = runtime();
    let server = start_server(&runtime);
    let opts = in_database(&server.opts(None));
    let recorder = runtime.block_on(async {
        let mut conn = mysql_async::Conn::new(opts.clone()).await.unwrap();
        conn.query_drop("CREATE TABLE t (id int PRIMARY KEY, c varchar(20))")
            .await
            .unwrap();
        conn.query_drop("INSERT INTO t SELECT seq, 'x' FROM seq_1_to_1000")
            .await
            .unwrap();
        conn.disconnect().await.unwrap();
        let scripts = parse_scripts(
            "point-select",
            &[ScriptFile {
                name: "point-select".to_string(),
                sql: "\\set id random(1, 1000)\nSELECT c FROM t WHERE id = :id;\n".to_string(),
                weight: 1,
            }],
        )
        .unwrap();
        let clock = RunClock::start(Duration::from_secs(3));
        let (recorder, lost) = run_load(&opts, &SessionRoles::default(), 2, &scripts, clock)
            .await
            .unwrap();
        assert_eq!(lost, 0);
        recorder
    });
    for second in 0..3 {
        let figures = recorder.second(second).copied().unwrap_or_default();
        assert!(figures.completed > 50, "second {second}: {figures:?}");
        assert_eq!(figures.failed, 0, "second {second}: {figures:?}");
    }
}

#[test]
fn a_naive_alter_queues_the_readers_and_the_chain_names_the_report() {
    let _cpus = cpus_shared();
    let runtime = runtime();
    let server = start_server(&runtime);
    let report = runtime
        .block_on(run_strategy(
            &server.opts(None),
            &short_outage(),
            Strategy::Naive,
            1,
        ))
        .unwrap();
    let attempt = &report.attempts[0];
    assert_eq!(attempt.outcome, AttemptOutcome::Ok, "{attempt:?}");
    assert!(attempt.waited_ms >= 2000.0, "{attempt:?}");
    assert!(
        report.summary.longest_stall_s >= 2,
        "seconds 2 and 3 wait behind the ALTER: {:?}",
        report.seconds.iter().map(|row| row.tps).collect::<Vec<_>>()
    );
    let sentence = describe_chain(&chain(&report.locks.worst));
    assert!(sentence.starts_with("report (pid "), "{sentence}");
    assert!(
        sentence.contains(" holds SHARED_READ on orders <- ddl (pid ")
            && sentence.ends_with(
                " waits for EXCLUSIVE on orders, blocked by report \
             <- reader-1..3 wait for SHARED_READ on orders, blocked by ddl"
            ),
        "{sentence}"
    );
    assert!(report.summary.max_lock_waiters >= 4, "{:?}", report.summary);
}

#[test]
fn retrying_with_lock_wait_timeout_keeps_the_readers_going() {
    let _cpus = cpus_shared();
    let runtime = runtime();
    let server = start_server(&runtime);
    let report = runtime
        .block_on(run_strategy(
            &server.opts(None),
            &short_outage(),
            Strategy::Retry,
            1,
        ))
        .unwrap();
    let outcomes: Vec<AttemptOutcome> = report.attempts.iter().map(|a| a.outcome).collect();
    // 1.5-2.5 s times out after lock_wait_timeout's 1 s; the second try (3.5 s) gets the lock at 4 s.
    assert_eq!(
        outcomes,
        [AttemptOutcome::LockTimeout, AttemptOutcome::Ok],
        "{:?}",
        report.attempts
    );
    assert!(
        report.attempts[0].message.contains("(1205)"),
        "{:?}",
        report.attempts[0]
    );
    assert!(
        report.summary.longest_stall_s <= 1,
        "{:?}",
        report.seconds.iter().map(|row| row.tps).collect::<Vec<_>>()
    );
}

#[test]
fn kill_blockers_ends_the_report_after_one_timed_out_try() {
    let _cpus = cpus_shared();
    let runtime = runtime();
    let server = start_server(&runtime);
    let report = runtime
        .block_on(run_strategy(
            &server.opts(None),
            &short_outage(),
            Strategy::KillBlockers,
            1,
        ))
        .unwrap();
    let outcomes: Vec<AttemptOutcome> = report.attempts.iter().map(|a| a.outcome).collect();
    // 1.5-2.5 s times out; the report (in its SLEEP for 1.5 s by then) is ended; the next try gets the lock.
    assert_eq!(
        outcomes,
        [AttemptOutcome::LockTimeout, AttemptOutcome::Ok],
        "{:?}",
        report.attempts
    );
    let ended: Vec<&str> = report.attempts[0]
        .terminated
        .iter()
        .map(|session| session.role.as_str())
        .collect();
    assert_eq!(ended, ["report"], "{:?}", report.attempts[0]);
    assert!(report.attempts[1].ended_s < 3.5, "{:?}", report.attempts[1]);
}

/// A MariaDB workload file on a short clock: 20,000 orders, 3 readers, the
/// report holding the table from 1 s to 3.5 s, the ALTER at 1.2 s, 5 s per
/// strategy. naive holds every reader from 1.2 s to 3.5 s (second 2 at zero);
/// wait-retry's first try gives up at 2.2 s and its second gets the lock at 3.5 s.
const SHORT_WORKLOAD: &str = r#"
engine = "mariadb"
description = "a short outage"
strategies = ["naive", "wait-retry"]
[setup]
sql = [
  "DROP TABLE IF EXISTS orders",
  "CREATE TABLE orders (id int PRIMARY KEY AUTO_INCREMENT, customer_id int NOT NULL, total decimal(10, 2) NOT NULL, KEY (customer_id))",
  "INSERT INTO orders (customer_id, total) SELECT 1 + seq % 1000, seq % 97 FROM seq_1_to_20000",
]
[load]
clients = 3
duration_s = 5
[[load.scripts]]
name = "read-order"
sql = """
\\set c random(1, 1000)
SELECT count(*), sum(total) FROM orders WHERE customer_id = :c;
"""
[blocker]
sql = "SELECT count(*) FROM orders"
at_s = 1
hold_s = 2.5
[ddl]
sql = "ALTER TABLE orders ADD COLUMN note text"
at_s = 1.2
[expect.naive]
min_zero_tps_seconds = 1
[expect.wait-retry]
max_zero_tps_seconds = 0
"#;

#[test]
fn compare_on_mariadb_writes_every_file_of_the_results_folder() {
    let _cpus = cpus_shared();
    let folder = tempfile::tempdir().unwrap();
    let workload = folder.path().join("short.toml");
    std::fs::write(&workload, SHORT_WORKLOAD).unwrap();
    let out = folder.path().join("out");
    let output = crate::common::stallbench_quiet("compare", &workload, &out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("pass  naive.min_zero_tps_seconds >= 1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("pass  wait-retry.max_zero_tps_seconds <= 0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("<- reader-1..3 wait for SHARED_READ on orders, blocked by ddl"),
        "{stdout}"
    );
    for file in [
        "timeline.csv",
        "ddl_attempts.csv",
        "summary.csv",
        "summary.json",
        "summary.md",
        "locks.csv",
        "latency-naive.hgrm",
        "latency-wait-retry.hgrm",
        "timeline.png",
        "latency.png",
        "report.html",
        "run.json",
        "server.log",
        "expectations.csv",
        "junit.xml",
        "pr-comment.md",
    ] {
        let size = std::fs::metadata(out.join(file)).map_or(0, |meta| meta.len());
        assert!(size > 0, "{file} is missing or empty");
    }
    let attempts = std::fs::read_to_string(out.join("ddl_attempts.csv")).unwrap();
    assert!(attempts.contains("wait-retry,1,"), "{attempts}");
    assert!(attempts.contains("(1205)"), "{attempts}");
}

#[test]
fn a_sweep_of_the_reports_hold_writes_a_folder_per_value_and_the_sweeps_files() {
    // naive behind a report held 0.1 s (the ALTER at 1.2 s finds it gone: no
    // stall) and 2.5 s (the readers queue behind the ALTER until 3.5 s).
    let _cpus = cpus_shared();
    let folder = tempfile::tempdir().unwrap();
    let workload = folder.path().join("short.toml");
    std::fs::write(&workload, SHORT_WORKLOAD).unwrap();
    let out = folder.path().join("out");
    let output = crate::common::stallbench_quiet("compare", &workload, &out)
        .args([
            "--strategies",
            "naive",
            "--sweep",
            "blocker.hold=100ms,2500ms",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    // naive's min_zero_tps_seconds = 1 cannot hold without a stall.
    assert_eq!(
        output.status.code(),
        Some(3),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("hold=2500ms: pass  naive.min_zero_tps_seconds >= 1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("hold=100ms: FAIL  naive.min_zero_tps_seconds >= 1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("expectations failed at hold=100ms"),
        "{stdout}"
    );
    for file in [
        "sweep.csv",
        "summary.md",
        "sweep.png",
        "report.html",
        "server.log",
    ] {
        let size = std::fs::metadata(out.join(file)).map_or(0, |meta| meta.len());
        assert!(size > 0, "{file} is missing or empty");
    }
    for value in ["hold=100ms", "hold=2500ms"] {
        for file in [
            "summary.csv",
            "timeline.csv",
            "run.json",
            "expectations.csv",
        ] {
            assert!(out.join(value).join(file).is_file(), "{value}/{file}");
        }
    }
    let zero_seconds = |value: &str| -> u64 {
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(value).join("summary.json")).unwrap(),
        )
        .unwrap();
        summary["strategies"][0]["zero_tps_seconds"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(zero_seconds("hold=100ms"), 0);
    assert!(zero_seconds("hold=2500ms") >= 1);
    let sweep = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert!(sweep.starts_with("setting,value,"), "{sweep}");
    assert_eq!(sweep.lines().count(), 3, "{sweep}");
}

/// The bundled writers workload on the short clock of [`short_outage`],
/// its report held 1.5 s longer: reads, point updates and inserts of 3
/// clients, the report holding `orders` from 1 s to 5.5 s, the ALTER at
/// 1.5 s, the run 7.5 s. With the 3 s hold, in a whole suite beside three
/// other tests, naive's queue once formed only at about 2.85 s (830
/// transactions in second 2), leaving one whole second at zero where two
/// were asserted; with 4.5 s it leaves at least two even that late.
fn short_writers_outage() -> Outage {
    let mut outage = bundled("mariadb-add-column-writers").unwrap().outage;
    let short = short_outage();
    for statement in &mut outage.setup {
        *statement = statement.replace("seq_1_to_200000", "seq_1_to_20000");
    }
    outage.clients = short.clients;
    outage.report_at = short.report_at;
    outage.report_hold = short.report_hold + Duration::from_millis(1500);
    outage.duration = short.duration + Duration::from_millis(1500);
    outage.ddl_at = short.ddl_at;
    outage
}

#[test]
fn writers_queue_behind_a_naive_alter_and_keep_going_with_retries() {
    let _cpus = cpus_shared();
    let runtime = runtime();
    let server = start_server(&runtime);
    let outage = short_writers_outage();
    for strategy in [Strategy::Naive, Strategy::Retry, Strategy::WaitRetry] {
        let report = runtime
            .block_on(run_strategy(&server.opts(None), &outage, strategy, 1))
            .unwrap();
        let tps: Vec<u64> = report.seconds.iter().map(|row| row.tps).collect();
        let summary = &report.summary;
        assert_eq!(summary.failed, 0, "{}: {summary:?}", strategy.name());
        match strategy {
            // Seconds 2 to 4 wait behind the ALTER (at least two of them).
            Strategy::Naive => {
                assert!(summary.zero_tps_seconds >= 2, "naive: {tps:?}");
                let sentence = describe_chain(&chain(&report.locks.worst));
                assert!(
                    sentence
                        .contains("waits for EXCLUSIVE on orders, blocked by report <- client-"),
                    "{sentence}"
                );
            }
            _ => assert_eq!(summary.zero_tps_seconds, 0, "{}: {tps:?}", strategy.name()),
        }
        // The inserts went in (the next strategy's setup starts afresh).
        let orders: i64 = runtime.block_on(async {
            let mut conn = mysql_async::Conn::new(in_database(&server.opts(None)))
                .await
                .unwrap();
            let count = conn
                .query_first("SELECT count(*) FROM orders")
                .await
                .unwrap();
            conn.disconnect().await.unwrap();
            count.unwrap()
        });
        assert!(orders > 20_000, "{}: {orders} orders", strategy.name());
    }
}

#[test]
fn pt_online_schema_change_steps_around_the_report_with_a_one_second_wait() {
    let _cpus = cpus_shared();
    let runtime = runtime();
    let server = start_server(&runtime);
    let strategy = Strategy::from_name("pt-osc-1s").unwrap();
    // The report holds the table to 9 s: the tool (a Perl program that may
    // take seconds to start on a busy machine) meets it.
    let mut outage = short_outage();
    outage.report_hold = Duration::from_secs(8);
    outage.duration = Duration::from_secs(11);
    let report = runtime
        .block_on(run_strategy(&server.opts(None), &outage, strategy, 1))
        .unwrap_or_else(|err| panic!("{err:#}"));
    let attempt = &report.attempts[0];
    assert_eq!(attempt.outcome, AttemptOutcome::Ok, "{attempt:?}");
    // Its triggers wait for the report (to 9 s), one second at a time.
    assert!(
        attempt.message.contains("created triggers")
            && attempt.message.contains("swapped tables (RENAME TABLE)")
            && attempt.message.contains("lock_wait_timeout "),
        "{attempt:?}"
    );
    assert!(attempt.ended_s >= 9.0, "{attempt:?}");
    // The readers wait 1 s per try, not the report's 8 s (a naive ALTER
    // would leave about 7 seconds at zero). On a busy machine each try's
    // dip falls under 10% of the baseline, so the stall is not asserted.
    assert!(
        report.summary.zero_tps_seconds <= 2,
        "{:?}",
        report.seconds.iter().map(|row| row.tps).collect::<Vec<_>>()
    );
    // The swapped-in table has the column, and the tool left nothing behind.
    let tables: Vec<String> = runtime.block_on(async {
        let mut conn = mysql_async::Conn::new(in_database(&server.opts(None)))
            .await
            .unwrap();
        let note: Option<String> = conn
            .query_first("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'orders' AND COLUMN_NAME = 'note'")
            .await
            .unwrap();
        assert_eq!(note.as_deref(), Some("note"));
        let tables = conn.query("SHOW TABLES").await.unwrap();
        conn.disconnect().await.unwrap();
        tables
    });
    assert_eq!(tables, ["customers", "orders"]);
}

#[test]
fn a_pt_osc_strategy_without_the_tool_names_the_install_command() {
    let folder = tempfile::tempdir().unwrap();
    let output = crate::common::stallbench_quiet("compare", "mariadb-add-column", folder.path())
        .args(["--strategies", "naive,pt-osc"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.trim(),
        "error: --strategies pt-osc: pt-online-schema-change not found on PATH; install it \
         with apt-get install percona-toolkit"
    );
}

/// A load-only MariaDB workload file: a point select on a 1,000-row table.
const LOAD_ONLY_WORKLOAD: &str = r#"
engine = "mariadb"
description = "a point select"
strategies = ["naive"]
[setup]
sql = [
  "CREATE TABLE t (id int PRIMARY KEY, c varchar(20) NOT NULL)",
  "INSERT INTO t SELECT seq, 'x' FROM seq_1_to_1000",
]
[load]
clients = 2
duration_s = 2
[[load.scripts]]
name = "point-select"
sql = """
\\set id random(1, 1000)
SELECT c FROM t WHERE id = :id;
"""
[blocker]
sql = "SELECT 1"
at_s = 0
hold_s = 0
[ddl]
sql = "SELECT 1"
at_s = 0
"#;

#[test]
fn db_url_runs_the_load_alone_repeated_in_a_database_of_its_own_and_drops_it() {
    let _cpus = cpus_shared();
    let runtime = runtime();
    let server = start_server(&runtime);
    let folder = tempfile::tempdir().unwrap();
    let workload = folder.path().join("point.toml");
    std::fs::write(&workload, LOAD_ONLY_WORKLOAD).unwrap();
    let socket = server.socket_path();
    let url = format!("mysql://root@localhost/?socket={}", socket.display());
    let databases = |runtime: &tokio::runtime::Runtime| -> Vec<String> {
        runtime.block_on(async {
            let mut conn = mysql_async::Conn::new(server.opts(None)).await.unwrap();
            let names = conn
                .query("SHOW DATABASES LIKE 'stallbench'")
                .await
                .unwrap();
            conn.disconnect().await.unwrap();
            names
        })
    };

    // A stallbench database the harness did not make is refused, and kept.
    runtime.block_on(async {
        let mut conn = mysql_async::Conn::new(server.opts(None)).await.unwrap();
        conn.query_drop("DROP DATABASE stallbench; CREATE DATABASE stallbench")
            .await
            .unwrap();
        conn.disconnect().await.unwrap();
    });
    let out = folder.path().join("refused");
    let output = crate::common::stallbench_quiet("run", &workload, &out)
        .args(["--load-only", "--db-url", &url])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("a database named stallbench exists and was not made by stallbench"),
        "{stderr}"
    );
    assert_eq!(databases(&runtime), ["stallbench"]);

    runtime.block_on(async {
        let mut conn = mysql_async::Conn::new(server.opts(None)).await.unwrap();
        conn.query_drop("DROP DATABASE stallbench").await.unwrap();
        conn.disconnect().await.unwrap();
    });
    let out = folder.path().join("load");
    let output = crate::common::stallbench_quiet("run", &workload, &out)
        .args(["--load-only", "--repeat", "2", "--db-url", &url])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let runs: Vec<(String, u64)> = summary["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            let name = run["strategy"].as_str().unwrap().to_string();
            (name, run["repeat"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(runs, [("load".to_string(), 1), ("load".to_string(), 2)]);
    let load = &summary["strategies"][1];
    assert!(load["transactions"].as_u64().unwrap() > 100, "{load}");
    assert_eq!(load["ddl_attempts"].as_u64().unwrap_or(0), 0, "{load}");
    let run_json = std::fs::read_to_string(out.join("run.json")).unwrap();
    assert!(run_json.contains(&url), "{run_json}");
    assert!(!out.join("server.log").exists());
    assert!(databases(&runtime).is_empty(), "the run drops its database");

    // A wrong password fails to connect, and is never shown.
    let output = crate::common::stallbench_quiet("run", &workload, &folder.path().join("pw"))
        .args(["--load-only", "--db-url"])
        .arg(format!(
            "mysql://root:hunter2@localhost/?socket={}",
            socket.display()
        ))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("mysql://root:***@localhost/"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}
