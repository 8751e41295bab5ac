//! `stallbench check` gates examples/migrations/ on a real throwaway server:
//! the three unsafe migrations (a volatile default, a plain index, a foreign
//! key) break the budget as deployed and `retry` keeps them within it; two
//! of the same done "safely", with their own `lock_timeout`, give up behind
//! the report as deployed (the file run once): a failed deploy, which
//! `retry` applies; CONCURRENTLY passes; the traces show the rewrite, the locks and
//! what they block; the files a pipeline reads are all there. One run of the
//! whole folder on short clocks (the blocker held 3 s, 9 s per strategy;
//! `--measure flagged` leaves CONCURRENTLY, whose trace blocks nothing, to
//! its trace) serves every assertion.

use std::path::Path;

use crate::common::*;
use serde_json::Value;
use stallbench::export::csv::LockTraceRecord;

/// The example's new migrations, in order (their results folders: without `.sql`).
const NEW: [&str; 6] = [
    "0002_orders_add_tracking_token.sql",
    "0003_orders_index_created_at.sql",
    "0004_orders_customer_fk_cascade.sql",
    "0005_payments_add_reference_safely.sql",
    "0006_orders_index_status_concurrently.sql",
    "0007_payments_order_fk_not_valid.sql",
];

/// The results folder of migration `name` in `out`.
fn folder(out: &Path, name: &str) -> std::path::PathBuf {
    out.join(name.trim_end_matches(".sql"))
}

/// The element of the array `list` whose `key` is `value`; `what` names it in the panic.
fn find<'a>(list: &'a Value, key: &str, value: &str, what: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|item| item[key] == value)
        .unwrap_or_else(|| panic!("{what}"))
}

/// Migration `name` of check.json (the check_sizes tests use it too).
pub(crate) fn migration<'a>(check: &'a Value, name: &str) -> &'a Value {
    let what = format!("{name} is not in check.json");
    find(&check["migrations"], "name", name, &what)
}

/// The strongest lock `statement` (of check.json) holds on `relation`.
fn lock_on<'a>(statement: &'a Value, relation: &str) -> &'a Value {
    let what = format!("no lock on {relation}: {statement}");
    find(&statement["locks"], "relation", relation, &what)
}

/// The row of check.csv (as JSON) of `strategy` in `migration`.
fn strategy<'a>(migration: &'a Value, strategy: &str) -> &'a Value {
    let what = format!("no {strategy} row in {}", migration["name"]);
    find(&migration["strategies"], "strategy", strategy, &what)
}

/// check.json of the check whose results folder is `out`.
pub(crate) fn check_json(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("check.json")).unwrap()).unwrap()
}

/// A migrations folder `migrations` in `dir` holding `files` (name, SQL).
pub(crate) fn migrations_folder(dir: &Path, files: &[(&str, &str)]) -> std::path::PathBuf {
    let migrations = dir.join("migrations");
    std::fs::create_dir(&migrations).unwrap();
    for (name, sql) in files {
        std::fs::write(migrations.join(name), sql).unwrap();
    }
    migrations
}

#[test]
fn the_example_migrations_are_gated_unsafe_ones_fail_and_retry_fixes_them() {
    require_postgres();
    // Beside another test: its stalls are locks' (2.5 s against a budget of 1 s), not the CPU's.
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("check");
    let step_summary = dir.path().join("step_summary.md");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/migrations");
    let assert = stallbench_command()
        .arg("check")
        .arg(&examples)
        .args([
            "--new",
            "6",
            "--hold",
            "3s",
            // retry applies behind the report at about 5.5 s: 3 s of
            // traffic must follow its commit for it to be called a fix.
            "--duration",
            "9s",
            "--rows",
            "10000",
            // CONCURRENTLY's trace flags nothing: judged from it, not run.
            "--measure",
            "flagged",
        ])
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .env("GITHUB_STEP_SUMMARY", &step_summary)
        .assert();
    let stdout = stdout_of(&assert);
    assert.code(3);

    // The verdict first, naming the three unsafe migrations, the two that
    // never applied as deployed, and what retry does.
    let check_md = std::fs::read_to_string(out.join("check.md")).unwrap();
    let verdict = check_md.lines().next().unwrap();
    assert!(
        verdict.starts_with("**FAIL**: 5 of 6 new migrations break the budget as deployed"),
        "{verdict}"
    );
    for failed in [NEW[0], NEW[1], NEW[2], NEW[3], NEW[5]] {
        assert!(verdict.contains(failed), "{verdict}");
    }
    assert!(!verdict.contains(NEW[4]), "{verdict}");
    assert!(stdout.starts_with(&verdict.replace("**", "")), "{stdout}");
    let column_add = &check_md[check_md
        .find("## 0002_orders_add_tracking_token.sql")
        .unwrap()..];
    let column_add = &column_add[..column_add[3..].find("\n## ").unwrap()];
    // The rewrite's WAL (10,000 rows: about 1.5 MB), in the statement table.
    assert!(
        column_add.contains("| ms | held ms | WAL |") && column_add.contains(" MB |\n"),
        "{column_add}"
    );
    assert!(
        column_add.contains("(a rewrite) blocks reads and writes on orders for")
            && column_add.contains("; fixed by retry: longest stall"),
        "{column_add}"
    );
    assert!(
        check_md.contains("CREATE INDEX blocks writes on orders for")
            && check_md.contains("use CREATE INDEX CONCURRENTLY"),
        "{check_md}"
    );

    let check = check_json(&out);
    assert_eq!(check["verdict"], "fail");
    // Where the time went: the fill's rows and rate, each migration's runs.
    let phases = &check["phases"];
    let seconds = |value: &Value| value.as_f64().unwrap_or_else(|| panic!("{phases:#}"));
    let filled = phases["fill_rows"].as_u64().unwrap();
    assert!(
        filled >= 10_000 && filled.is_multiple_of(10_000),
        "{phases:#}"
    );
    let rate = seconds(&phases["fill_rows_per_s"]);
    assert!((rate - filled as f64 / seconds(&phases["fill_s"])).abs() <= rate / 100.0);
    assert!(seconds(&phases["total_s"]) > seconds(&phases["fill_s"]) + 6.0 * 6.0);
    let timed: Vec<&str> = (phases["migrations"].as_array().unwrap().iter())
        .map(|migration| migration["name"].as_str().unwrap())
        .collect();
    assert_eq!(timed, NEW, "{phases:#}");
    let runs = &phases["migrations"][0]["runs"];
    assert_eq!(
        (runs[0]["strategy"].as_str(), runs[1]["strategy"].as_str()),
        (Some("naive"), Some("retry"))
    );
    assert!(
        seconds(&runs[0]["run_s"]) >= 6.0
            && seconds(&runs[0]["copy_s"]) < seconds(&runs[0]["run_s"])
    );
    for (index, name) in NEW.iter().enumerate() {
        let expected = if index == 4 { "pass" } else { "fail" };
        assert_eq!(migration(&check, name)["verdict"], expected, "{name}");
    }
    // The lock_timeout of 500 ms gives up behind the 3 s report: never applied.
    for gave_up in [NEW[3], NEW[5]] {
        let gave_up = migration(&check, gave_up);
        let broken = gave_up["broken"][0].as_str().unwrap();
        assert!(
            broken
                .starts_with("the migration did not apply: it gave up waiting for its lock (55P03"),
            "{gave_up}"
        );
        assert_eq!(gave_up["fixed_by_recommended"], true, "{gave_up}");
    }

    // The volatile default: orders rewritten under ACCESS EXCLUSIVE, held until the commit.
    let add = migration(&check, NEW[0]);
    let statement = &add["statements"][0];
    let orders = lock_on(statement, "orders");
    assert_eq!(orders["mode"], "AccessExclusiveLock");
    assert_eq!(orders["rewritten"], true);
    assert_eq!(orders["scanned"], true);
    assert_eq!(orders["blocks"], "reads_and_writes");
    // One statement in its file's transaction: held from its start to the commit.
    assert!(statement["held_ms"].as_f64() >= statement["duration_ms"].as_f64());
    // A rewrite of 10,000 rows writes them again: over a megabyte of WAL.
    assert!(
        statement["wal_bytes"].as_u64() > Some(1_000_000),
        "{statement}"
    );
    assert_eq!(strategy(add, "retry")["within_budget"], true);
    assert!(
        add["blocker"]
            .as_str()
            .unwrap()
            .starts_with("a report holding ACCESS SHARE on orders")
    );

    // The plain index: SHARE, which blocks writes and not reads, met by a writer;
    // the naive run stops every client at a write.
    let index = migration(&check, NEW[1]);
    let share = lock_on(&index["statements"][0], "orders");
    assert_eq!(share["mode"], "ShareLock");
    assert_eq!(share["blocks"], "writes");
    assert_eq!(share["rewritten"], false);
    assert!(
        index["blocker"]
            .as_str()
            .unwrap()
            .starts_with("a writer holding ROW EXCLUSIVE on orders"),
        "{}",
        index["blocker"]
    );
    assert!(
        index["load"]
            .as_str()
            .unwrap()
            .contains("updates and inserts")
    );
    let naive = strategy(index, "naive");
    assert!(naive["zero_tps_seconds"].as_u64().unwrap() >= 1, "{naive}");
    assert_eq!(naive["within_budget"], false);

    // The foreign key: SHARE ROW EXCLUSIVE on both tables, with the check's scan.
    let foreign_key = &migration(&check, NEW[2])["statements"][0];
    for table in ["orders", "customers"] {
        assert_eq!(lock_on(foreign_key, table)["mode"], "ShareRowExclusiveLock");
    }

    // The safe ones: CONCURRENTLY blocks nothing; NOT VALID gives up rather
    // than queue, VALIDATE holds a lock that blocks nothing.
    let concurrently = migration(&check, NEW[4]);
    let lock = lock_on(&concurrently["statements"][0], "orders");
    assert_eq!(lock["mode"], "ShareUpdateExclusiveLock");
    assert_eq!(lock["blocks"], "nothing");
    assert!(
        concurrently["not_measured"]
            .as_str()
            .unwrap()
            .starts_with("judged from its trace alone, which shows no lock that blocks traffic"),
        "{concurrently}"
    );
    let not_valid = migration(&check, NEW[5]);
    assert_eq!(strategy(not_valid, "naive")["within_budget"], true);

    // Each measured migration's own results folder, with its lock trace.
    let trace: Vec<LockTraceRecord> = read_records(&folder(&out, NEW[0]).join("ddl_locks.csv"));
    assert!(
        trace
            .iter()
            .any(|row| row.strategy == "naive" && row.relation == "orders" && row.rewritten),
        "{trace:?}"
    );
    for file in ["timeline.png", "summary.csv", "run.json", "workload.toml"] {
        assert!(folder(&out, NEW[1]).join(file).is_file(), "{file}");
    }

    // The page: check.md's sections, each measured migration's timelines
    // and a link to its folder's page (none for the one judged from its
    // trace); stdout's last line names it.
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        page.contains("<h2>0002_orders_add_tracking_token.sql: <strong>FAIL</strong></h2>"),
        "{page}"
    );
    assert!(
        page.contains("<a href=\"0002_orders_add_tracking_token/report.html\">"),
        "{page}"
    );
    assert!(folder(&out, NEW[0]).join("report.html").is_file());
    assert!(!page.contains(&format!("<a href=\"{}", NEW[4].replace(".sql", ""))));
    assert_eq!(page.matches(" class=\"timelines\"").count(), NEW.len() - 1);
    assert_eq!(
        stdout.lines().last().unwrap(),
        format!("open {}", out.join("report.html").display())
    );

    // check.csv: a row per migration and strategy (one for the migration not
    // run); junit.xml: a case per migration.
    let csv = std::fs::read_to_string(out.join("check.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * (NEW.len() - 1) + 1, "{csv}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), NEW.len(), "{junit}");
    assert!(junit.contains("failures=\"5\""), "{junit}");
    let summary = std::fs::read_to_string(&step_summary).unwrap();
    assert!(summary.contains(verdict), "{summary}");
}

/// A new migration that cannot run is a row of its own, naming its file and
/// line; one on a table the generator could not fill (a CHECK it does not
/// meet) has no result either, naming the constraint; the migration between
/// them is still measured (exit 4: two have no result). When no new
/// migration can run, the check exits 2, the report written all the same.
#[test]
fn a_statement_that_cannot_run_is_a_row_naming_its_file_and_line_and_the_others_are_checked() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[
            (
                "0001_init.sql",
                "CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL);\n\
                 CREATE TABLE picks (id bigint PRIMARY KEY, a int, b int, \
                 CONSTRAINT one_of CHECK (a = 42 AND b = 43));\n",
            ),
            (
                "0002_typo.sql",
                "-- a typo in the column name\nALTER TABLE items\n  ALTER COLUMN nmae SET NOT NULL;\n",
            ),
            ("0003_note.sql", "ALTER TABLE items ADD COLUMN note text;\n"),
            (
                "0004_picks.sql",
                "ALTER TABLE picks ADD COLUMN note text;\n",
            ),
        ],
    );
    let check = |new: &str, out: &str| {
        let out = dir.path().join(out);
        let assert = stallbench_command()
            .arg("check")
            .arg(&migrations)
            .args(["--new", new, "--rows", "10", "--blocker", "none"])
            .args(["--hold", "1s", "--duration", "3s", "--quiet", "--out"])
            .arg(&out)
            .assert();
        let stdout = stdout_of(&assert);
        let code = assert.get_output().status.code();
        let json = check_json(&out);
        (code, stdout, json)
    };
    let error = format!(
        "it could not run: {} line 2: column \"nmae\" of relation \"items\" does not exist \
         (SQLSTATE 42703); the statement cannot run",
        migrations.join("0002_typo.sql").display()
    );

    let (code, stdout, json) = check("3", "three");
    assert_eq!(code, Some(4), "{stdout}");
    assert!(
        stdout.starts_with("INVALID: 2 of 3 new migrations did not run as written"),
        "{stdout}"
    );
    let typo = migration(&json, "0002_typo.sql");
    assert_eq!(typo["verdict"], "invalid", "{typo}");
    assert!(
        typo["invalid"].as_str().unwrap().starts_with(&error),
        "{typo}"
    );
    assert_eq!(
        migration(&json, "0003_note.sql")["verdict"],
        "pass",
        "{json}"
    );
    let picks = migration(&json, "0004_picks.sql");
    assert_eq!(picks["verdict"], "invalid", "{picks}");
    assert!(
        picks["invalid"]
            .as_str()
            .unwrap()
            .starts_with("table picks holds no rows (its constraint one_of "),
        "{picks}"
    );
    // Traced all the same: the trace names the lock.
    assert_eq!(
        lock_on(&picks["statements"][0], "picks")["mode"],
        "AccessExclusiveLock"
    );

    for later in ["0003_note.sql", "0004_picks.sql"] {
        std::fs::remove_file(migrations.join(later)).unwrap();
    }
    let (code, stdout, json) = check("1", "alone");
    assert_eq!(code, Some(2), "nothing could run: {stdout}");
    assert_eq!(json["verdict"], "invalid", "{json}");
}

#[test]
fn a_report_terminated_mid_run_makes_the_migration_invalid_and_exit_4() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[
            (
                "0001_init.sql",
                "CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL);\n",
            ),
            ("0002_note.sql", "ALTER TABLE items ADD COLUMN note text;\n"),
        ],
    );
    let out = dir.path().join("out");
    let harness = std::process::Command::new(assert_cmd::cargo::cargo_bin("stallbench"))
        .arg("check")
        .arg(&migrations)
        .args([
            "--new",
            "1",
            "--hold",
            "3s",
            "--duration",
            "5s",
            "--rows",
            "1000",
        ])
        .args(["--quiet", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The check's own throwaway server: its socket folder and port from the postmaster's flags.
    let (postmaster, _) = postmaster_of(harness.id());
    let cmdline = std::fs::read(format!("/proc/{postmaster}/cmdline")).unwrap();
    let args: Vec<String> = String::from_utf8_lossy(&cmdline)
        .split('\0')
        .map(str::to_string)
        .collect();
    let flag = |name: &str| args.iter().skip_while(|arg| *arg != name).nth(1).cloned();
    let url = format!(
        "host={} port={} user=postgres dbname=postgres",
        flag("-k").unwrap(),
        flag("-p").unwrap()
    );
    // The first report to hold (the deployed run's) is terminated from outside, as a DBA would.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let terminated = runtime.block_on(async {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while std::time::Instant::now() < deadline {
            if let Ok(client) = try_connect(&url).await {
                let rows = client
                    .query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE application_name LIKE '%-report' AND query LIKE '%pg_sleep%'",
                        &[],
                    )
                    .await
                    .unwrap_or_default();
                if !rows.is_empty() {
                    return true;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        false
    });
    let output = harness.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(terminated, "the report was never seen: {stdout}\n{stderr}");
    assert_eq!(output.status.code(), Some(4), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("INVALID: 1 of 1 new migration did not run as written"),
        "{stdout}"
    );
    assert!(
        stdout.contains("INVALID  0002_note.sql: the report failed at "),
        "{stdout}"
    );
    let check = check_json(&out);
    assert_eq!(check["verdict"], "invalid");
    assert_eq!(migration(&check, "0002_note.sql")["verdict"], "invalid");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("errors=\"1\""), "{junit}");
}

/// A rename that every later read of the application fails on (42703) breaks
/// the gate for every strategy: retry shortens the wait, not the break, so it
/// fixes nothing, and the fix is the expand/contract way, not lock_timeout.
#[test]
fn a_rename_that_breaks_the_application_fails_and_retry_does_not_fix_it() {
    require_postgres();
    // Beside other tests: the failures follow the rename, whatever the CPUs do.
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[
            (
                "0001_init.sql",
                "CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL, \
                 hide_media boolean NOT NULL DEFAULT false);\n",
            ),
            (
                "0002_rename.sql",
                "ALTER TABLE items RENAME COLUMN hide_media TO hide_images;\n",
            ),
        ],
    );
    let out = dir.path().join("out");
    let assert = stallbench_command()
        .arg("check")
        .arg(&migrations)
        .args([
            "--rows",
            "1000",
            "--hold",
            "2s",
            "--duration",
            "5s",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .assert();
    let stdout = stdout_of(&assert);
    assert.code(3);

    let check = check_json(&out);
    let rename = migration(&check, "0002_rename.sql");
    assert_eq!(rename["verdict"], "fail", "{rename}");
    let broken = rename["broken"].to_string();
    assert!(
        broken.contains("the application broke: ")
            // A read says `column "hide_media" does not exist`, a write
            // `column "hide_media" of relation "items" does not exist`: the
            // more frequent is named, and the two are about as frequent.
            && broken.contains("(42703 column \\\"hide_media\\\" "),
        "{broken}"
    );
    let fix = rename["fixes"][0].as_str().unwrap();
    assert!(
        fix.starts_with("`ALTER TABLE items RENAME COLUMN hide_media TO hide_images` breaks")
            && fix.contains("expand/contract")
            && !fix.contains("set lock_timeout"),
        "{fix}"
    );
    let check_md = std::fs::read_to_string(out.join("check.md")).unwrap();
    assert!(
        check_md.contains("retry does not fix it: the application broke"),
        "{check_md}"
    );
    assert!(!check_md.contains("fixed by retry"), "{check_md}");
    assert!(
        stdout.contains("retry does not keep it within the budget"),
        "{stdout}"
    );
}

/// A diesel project as it is laid out (`<version>_<name>/up.sql` folders,
/// diesel's own `__diesel_schema_migrations`, `metadata.toml`), whose
/// migrations name their tables `public.person`, as pg_dump-style files do:
/// read without `--layout`, every earlier migration applied as diesel
/// applies it (one names diesel's table), and the new one measured on the
/// table it locks.
#[test]
fn a_diesel_project_with_schema_qualified_names_is_checked_as_diesel_runs_it() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = dir.path().join("migrations");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/migrations/diesel");
    copy_folder(&fixture, &migrations);
    let add = |name: &str, sql: &str| {
        std::fs::create_dir(migrations.join(name)).unwrap();
        std::fs::write(migrations.join(name).join("up.sql"), sql).unwrap();
        std::fs::write(migrations.join(name).join("down.sql"), "SELECT 1;\n").unwrap();
    };
    // As a project that forbids the diesel CLI does: a trigger on diesel's table.
    add(
        "2026-07-01-000000_watch_diesel_table",
        "CREATE FUNCTION no_cli() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;\n\
         CREATE TRIGGER no_cli BEFORE INSERT ON __diesel_schema_migrations EXECUTE FUNCTION no_cli();\n",
    );
    add(
        "2026-08-01-000000_person_note",
        "ALTER TABLE public.person ADD COLUMN note text;\n",
    );
    let out = dir.path().join("out");
    let assert = stallbench_command()
        .arg("check")
        .arg(&migrations)
        .args(["--rows", "1000", "--hold", "3s", "--duration", "5s"])
        .args(["--quiet", "--out"])
        .arg(&out)
        .assert();
    let stdout = stdout_of(&assert);
    // naive waits 2.5 s behind the 3 s report: over the 1 s budget, as deployed.
    assert.code(3);
    let check = check_json(&out);
    let note = migration(&check, "2026-08-01-000000_person_note");
    assert_eq!(note["verdict"], "fail", "{note}");
    let person = lock_on(&note["statements"][0], "person");
    assert_eq!(person["mode"], "AccessExclusiveLock", "{note}");
    let naive = strategy(note, "naive");
    assert!(
        naive["longest_stall_s"].as_f64().unwrap() >= 1.0,
        "{naive}\n{stdout}"
    );
}

/// Copies the files of `from` into the new folder `to`, sub-folders included.
fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
