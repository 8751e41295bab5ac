//! An interrupt never applies a migration: Ctrl-C while an `--in-place
//! --apply` ALTER waits behind the report rolls the ALTER back before the
//! report is let go, so the user's column keeps its type; the stop line says
//! that nothing was applied and that the server was left running, and stdout
//! and `summary.md` open with the line that says the run was interrupted.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// The user's table, in the test's own database: a column whose type the migration changes.
const ACCOUNTS: &str = "\
    CREATE TABLE accounts (id int PRIMARY KEY, balance numeric(10,2) NOT NULL);
    INSERT INTO accounts SELECT g, g FROM generate_series(1, 10000) g;
    ANALYZE accounts;";

/// Readers of `accounts`, a report holding it from 1 s for 20 s, and the
/// type change at 1.5 s, which queues behind the report; `reset` undoes it
/// (so `--apply` may compare two strategies).
const TYPE_CHANGE: &str = r#"
name = "type-change"
description = "a column type change queued behind a report"
setup = ""
reset = "ALTER TABLE accounts ALTER COLUMN balance TYPE numeric(10,2)"

[load]
clients = 2
duration = "30s"

[[load.scripts]]
name = "read-balance"
sql = """
\\set a random(1, 10000)
SELECT balance FROM accounts WHERE id = :a;
"""

[blocker]
at = "1s"
hold = "20s"
sql = "SELECT count(*) FROM accounts"

[ddl]
at = "1500ms"
sql = "ALTER TABLE accounts ALTER COLUMN balance TYPE numeric(20,2)"

[[strategies]]
name = "naive"
kind = "plain"

[[strategies]]
name = "retry"
kind = "lock-timeout-retry"
lock_timeout = "500ms"
max_tries = 10
backoff = { kind = "linear", step = "1s", cap = "5s" }
"#;

/// Sessions of a harness waiting for the DDL's lock.
const DDL_WAITING: &str = "SELECT count(*) FROM pg_stat_activity \
     WHERE application_name LIKE 'stallbench-%-ddl' AND wait_event_type = 'Lock'";

/// Waits for `child` to exit, up to `limit`; returns its status, stdout and stderr.
fn wait_for_exit(mut child: Child, limit: Duration) -> (Option<i32>, String, String) {
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "stallbench did not exit within {} s of the interrupt",
                limit.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.code(), stdout, stderr)
}

/// The type of `accounts.balance`, as `format_type` writes it.
fn balance_type(runtime: &tokio::runtime::Runtime, url: &str) -> String {
    runtime.block_on(async {
        connect(url)
            .await
            .query_one(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
                 WHERE attrelid = 'accounts'::regclass AND attname = 'balance'",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    })
}

#[test]
fn ctrl_c_during_a_queued_apply_alter_applies_nothing_and_every_output_says_so() {
    require_postgres();
    // Quiet: the interrupt comes while the ALTER queues, seconds into the run.
    let _cpus = cpus_quiet();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_throwaway_server(&runtime);
    let admin_url = server.connection_string();
    let url = admin_url.replace("dbname=postgres", "dbname=shop");
    runtime.block_on(async {
        connect(&admin_url)
            .await
            .batch_execute("CREATE DATABASE shop")
            .await
            .unwrap();
        connect(&url).await.batch_execute(ACCOUNTS).await.unwrap();
    });
    let run = ShortRun::of_text("type-change.toml", TYPE_CHANGE);

    let harness = std::process::Command::new(assert_cmd::cargo::cargo_bin("stallbench"))
        .env_remove("DATABASE_URL")
        .args(["compare", run.workload.to_str().unwrap(), "--quiet"])
        .args(["--in-place", "--apply", "--strategies", "naive,retry"])
        .args(["--db-url", &url, "--out"])
        .arg(&run.out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The moment the test acts on: the ALTER waits for its lock behind the report.
    runtime.block_on(async {
        let client = connect(&url).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let waiting: i64 = client.query_one(DDL_WAITING, &[]).await.unwrap().get(0);
            if waiting == 1 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the ALTER never queued behind the report"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(
        unsafe { libc::kill(harness.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let (code, stdout, stderr) = wait_for_exit(harness, Duration::from_secs(30));

    assert_eq!(code, Some(1), "Ctrl-C exits 1: {stderr}");
    assert_eq!(
        balance_type(&runtime, &url),
        "numeric(10,2)",
        "the interrupt applied the migration: {stderr}"
    );
    let stop_line = stderr
        .lines()
        .find(|line| line.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {stderr}"));
    // `host=/tmp/... port=5432 ...`: the run names the server by its host and port.
    let mut words = admin_url.split(' ');
    let host = words.next().unwrap().trim_start_matches("host=");
    let port = words.next().unwrap().trim_start_matches("port=");
    let address = format!("{host}:{port}");
    assert_eq!(
        stop_line,
        format!(
            "error: interrupted by Ctrl-C (SIGINT); nothing was applied; the server at {address} \
             was left running; --in-place made no schema of its own; results so far are in {}",
            run.out.display()
        )
    );
    let sessions_left = query_int(
        &runtime,
        &admin_url,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'stallbench-%'",
    );
    assert_eq!(sessions_left, 0, "the run's sessions are gone");

    // stdout and summary.md open with the same line, and draw no conclusion from naive.
    let opening = stdout.lines().next().unwrap_or_default();
    assert!(
        opening.starts_with("interrupted at ")
            && opening.contains(" s by Ctrl-C (SIGINT): naive is partial (")
            && opening.ends_with(" of 30 s); retry did not run"),
        "{stdout}"
    );
    assert!(stdout.contains("\nnaive (partial) "), "{stdout}");
    let summary = std::fs::read_to_string(run.out.join("summary.md")).unwrap();
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines[..3], ["# type-change", "", opening], "{summary}");
    let about_naive: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| line.starts_with("naive"))
        .collect();
    assert_eq!(about_naive.len(), 1, "one sentence about naive: {summary}");
    assert!(
        about_naive[0].starts_with("naive is partial: interrupted at ")
            && about_naive[0].contains(" s of 30 s, so nothing is concluded from it; "),
        "{summary}"
    );
    assert_ddl_row_is_kept_or_cut(&run.out);
}

/// The ALTER started in a whole second before the interrupt or in the one it
/// came in; either way no row of `ddl_attempts.csv` says it succeeded.
fn assert_ddl_row_is_kept_or_cut(out: &Path) {
    let attempts = std::fs::read_to_string(out.join("ddl_attempts.csv")).unwrap();
    assert!(
        !attempts.lines().any(|line| line.contains(",ok,")),
        "{attempts}"
    );
}
