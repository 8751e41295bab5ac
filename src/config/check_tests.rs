//! The tests of `check.rs`: check's settings read from its flags.

use clap::Parser;

use super::*;
use crate::strategy::PRESET_NAMES;

fn config(args: CheckArgs) -> Result<CheckConfig, Error> {
    let dir = tempfile::tempdir().unwrap();
    let args = CheckArgs {
        out: Some(dir.path().join("out")),
        ..args
    };
    CheckConfig::new(dir.path(), &args)
}

/// `--search-path VALUE` as `check` parses it, or clap's message.
fn search_path(value: &str) -> Result<Option<String>, String> {
    let cli = crate::cli::Cli::try_parse_from(["stallbench", "check", ".", "--search-path", value])
        .map_err(|err| err.to_string())?;
    match cli.command {
        crate::cli::Command::Check { args, .. } => Ok(args.search_path),
        _ => panic!("not check"),
    }
}

#[test]
fn a_search_path_is_schema_names_and_a_bare_user_is_quoted() {
    assert_eq!(
        search_path("app,public").unwrap().as_deref(),
        Some("app, public")
    );
    assert_eq!(
        search_path("$user, public").unwrap().as_deref(),
        Some("\"$user\", public")
    );
    assert_eq!(
        search_path("\"My App\", public").unwrap().as_deref(),
        Some("\"My App\", public")
    );
    for bad in ["app; DROP TABLE x", "1app", "", "app,,public", "\"a\"b\""] {
        let err = search_path(bad).unwrap_err();
        assert!(err.contains("is not a schema name"), "{bad}: {err}");
    }
    assert_eq!(config(CheckArgs::default()).unwrap().search_path, None);
}

/// `check` parsed from `flags`, or the message of clap or of the config.
fn parsed(flags: &[&str]) -> Result<CheckConfig, String> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut line = vec!["stallbench", "check", dir.path().to_str().unwrap()];
    line.extend(flags);
    line.extend(["--out", out.to_str().unwrap()]);
    let cli = crate::cli::Cli::try_parse_from(line).map_err(|err| err.to_string())?;
    let crate::cli::Command::Check { dir, args } = cli.command else {
        panic!("not check");
    };
    CheckConfig::new(&dir, &args).map_err(|err| err.to_string())
}

#[test]
fn rows_and_production_sizes_are_per_table() {
    let config = parsed(&[
        "--rows",
        "500",
        "--rows",
        "orders=20",
        "--table-rows",
        "app.orders=50_000_000",
        "--table-rows",
        "users=1,200",
        "--sizes-from",
        "postgres://reader@staging/app",
    ])
    .unwrap();
    assert_eq!(
        config.data,
        Data::Rows(RowCounts {
            every_table: 500,
            tables: vec![("orders".to_string(), 20)]
        })
    );
    assert_eq!(
        config.table_rows,
        [
            ("app.orders".to_string(), 50_000_000),
            ("users".to_string(), 1200)
        ]
    );
    assert_eq!(
        config.sizes_from.as_deref(),
        Some("postgres://reader@staging/app")
    );
    assert_eq!(parsed(&["--trace-only"]).unwrap().measure, Measure::None);
    assert_eq!(
        parsed(&["--measure", "flagged"]).unwrap().measure,
        Measure::Flagged
    );
    let both = parsed(&["--trace-only", "--measure", "all"]).unwrap_err();
    assert!(both.contains("cannot be used with"), "{both}");
    for (flags, message) in [
        (
            &["--rows", "5", "--rows", "6"][..],
            "--rows N is given twice",
        ),
        (&["--rows", "many"], "\"many\" is not a row count"),
        (
            &["--table-rows", "orders"],
            "\"orders\" has no '='; give TABLE=N",
        ),
        (&["--table-rows", "=5"], "names no table"),
        (
            &["--table-rows", "orders=lots"],
            "\"lots\" is not a row count",
        ),
    ] {
        let error = parsed(flags).unwrap_err();
        assert!(error.contains(message), "{flags:?}: {error}");
    }
}

/// `--replica` runs the load's reads on the standby too: a script that
/// only writes has nothing to run there, and is refused naming the file.
#[test]
fn replica_needs_a_load_that_reads() {
    let dir = tempfile::tempdir().unwrap();
    let write = dir.path().join("write.sql");
    std::fs::write(&write, "UPDATE orders SET total = total WHERE id = 1;\n").unwrap();
    let read = dir.path().join("read.sql");
    std::fs::write(&read, "SELECT total FROM orders WHERE id = 1;\n").unwrap();
    let (write, read) = (write.to_str().unwrap(), read.to_str().unwrap());
    let err = parsed(&["--replica", "--load", write]).unwrap_err();
    assert_eq!(
        err,
        format!(
            "--load {write}: --replica runs the load's scripts that only read on the \
             standby too, and this load has none; add a script that only reads, or drop \
             --replica"
        )
    );
    assert!(parsed(&["--load", write]).is_ok());
    assert!(parsed(&["--replica", "--load", read]).unwrap().replica);
    assert!(!parsed(&[]).unwrap().replica);
}

/// `--since FILE` makes FILE itself new (the migrations tests check the
/// split), and its help says so.
#[test]
fn the_help_of_since_says_the_file_itself_is_new() {
    let help = <crate::cli::Cli as clap::CommandFactory>::command()
        .find_subcommand_mut("check")
        .unwrap()
        .render_long_help()
        .to_string();
    let since = &help[help.find("--since <FILE>").unwrap()..];
    let since = since.split("\n\n").next().unwrap().split_whitespace();
    let words = since.collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("This migration and every one after it are the new ones"),
        "{words}"
    );
    assert_eq!(
        parsed(&["--since", "0005_index.sql"]).unwrap().selection,
        Selection::Since(PathBuf::from("0005_index.sql"))
    );
}

#[test]
fn a_file_is_refused_naming_its_folder_and_since() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("0002_note.sql");
    std::fs::write(&file, "ALTER TABLE t ADD COLUMN note text;").unwrap();
    let err = CheckConfig::new(&file, &CheckArgs::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("that is a file; check reads the whole migrations folder")
            && err.contains(&format!(
                "stallbench check {} --since 0002_note.sql",
                dir.path().display()
            )),
        "{err}"
    );
}

#[test]
fn the_defaults_gate_the_last_migration_naive_against_retry() {
    let config = config(CheckArgs::default()).unwrap();
    assert_eq!(config.selection, Selection::LastN(1));
    assert_eq!(config.transaction, TransactionMode::PerFile);
    assert_eq!(
        config.data,
        Data::Rows(RowCounts {
            every_table: 100_000,
            tables: Vec::new()
        })
    );
    assert!(config.table_rows.is_empty() && config.sizes_from.is_none());
    assert_eq!(config.measure, Measure::All);
    assert_eq!(config.hold, Duration::from_secs(4));
    assert_eq!(config.duration, Duration::from_millis(9_000));
    assert_eq!(config.clients, 4);
    let names: Vec<String> = config.strategies().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["naive", "retry"]);
    assert_eq!(
        config.budgets,
        Budgets {
            max_stall_s: 1,
            max_p99_ms: None,
            max_failed: None
        }
    );
}

#[test]
fn bad_flags_name_the_flag_and_the_fix() {
    let message = |args: CheckArgs| config(args).unwrap_err().to_string();
    let parsed = crate::cli::Cli::try_parse_from(["stallbench", "check", ".", "--deploy", "yolo"]);
    let clap_message = parsed.unwrap_err().to_string();
    assert!(
        clap_message.contains("invalid value 'yolo' for '--deploy <STRATEGY>'")
            && clap_message.contains(&PRESET_NAMES.join(", ")),
        "{clap_message}"
    );
    assert!(
        message(CheckArgs {
            max_stall: Some(Duration::from_millis(1500)),
            ..CheckArgs::default()
        })
        .contains("whole seconds")
    );
    assert!(
        message(CheckArgs {
            hold: Some(Duration::from_secs(5)),
            duration: Some(Duration::from_secs(4)),
            ..CheckArgs::default()
        })
        .contains("needs at least 6.5 s")
    );
    let error = CheckConfig::new(Path::new("/no/such/folder"), &CheckArgs::default());
    assert_eq!(error.unwrap_err().exit_code(), 2);
}

/// A workload file with two weighted scripts, `[load]` keys given by `load`.
fn workload_file(dir: &Path, load: &str) -> String {
    let path = dir.join("w.toml");
    let text = format!(
        "name = \"w\"\ndescription = \"d\"\nsetup = \"\"\n[load]\n{load}\nduration = \"60s\"\n\
         [[load.scripts]]\nname = \"read\"\nsql = \"SELECT 1;\"\nweight = 800\n\
         [[load.scripts]]\nname = \"write\"\nsql = \"SELECT 2;\"\nweight = 200\n"
    );
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_toml_load_is_a_workloads_scripts_clients_and_rate() {
    let dir = tempfile::tempdir().unwrap();
    let path = workload_file(dir.path(), "clients = 8\nrate = 450.5");
    let config = parsed(&["--load", &path]).unwrap();
    let LoadChoice::Workload(load) = &config.load else {
        panic!("not a workload: {:?}", config.load);
    };
    let scripts: Vec<(&str, u32)> = load
        .scripts
        .iter()
        .map(|s| (s.script.name.as_str(), s.weight))
        .collect();
    assert_eq!(scripts, vec![("read", 800), ("write", 200)]);
    assert_eq!(load.rate_tps, Some(450.5));
    assert_eq!(config.clients, 8);
    // --clients wins over the file's.
    assert_eq!(
        parsed(&["--load", &path, "--clients", "3"])
            .unwrap()
            .clients,
        3
    );
    // Without a rate: a closed loop.
    let path = workload_file(dir.path(), "clients = 2");
    let config = parsed(&["--load", &path]).unwrap();
    let LoadChoice::Workload(load) = &config.load else {
        panic!("not a workload");
    };
    assert_eq!((load.rate_tps, config.clients), (None, 2));
}

#[test]
fn a_bad_toml_load_names_the_file_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = workload_file(dir.path(), "clients = 0");
    let err = parsed(&["--load", &path]).unwrap_err();
    assert!(
        err.contains("[load] clients = 0; need at least 1 client"),
        "{err}"
    );
    let path = workload_file(dir.path(), "clients = 4\nrate = -1.0");
    let err = parsed(&["--load", &path]).unwrap_err();
    assert!(
        err.contains("[load] rate = -1: the rate must be a positive"),
        "{err}"
    );
    let missing = dir.path().join("none.toml");
    let err = parsed(&["--load", missing.to_str().unwrap()]).unwrap_err();
    assert!(err.contains("none.toml: no such file;"), "{err}");
    // A path not ending in .toml is still one pgbench script.
    let script = dir.path().join("read.sql");
    std::fs::write(&script, "SELECT 1;\n").unwrap();
    let config = parsed(&["--load", script.to_str().unwrap()]).unwrap();
    assert!(
        matches!(config.load, LoadChoice::Script(_)),
        "{:?}",
        config.load
    );
    assert_eq!(config.clients, DEFAULT_CLIENTS);
}
