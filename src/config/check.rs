//! The settings of `stallbench check DIR`, read once from its flags: which
//! migrations are new, how the tool runs them, the data, the traffic, the
//! blocker, the two strategies and the budgets. Everything later trusts them.

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::choices::BlockerChoice;
use crate::choices::{FileOrder, Layout, Measure, OutOfOrder, TransactionMode};
use crate::cli::{CheckArgs, LoadArg, RowsArg};
use crate::engine::postgres::check::migrations::FolderRules;
use crate::engine::postgres::server::ServerRequest;
use crate::error::Error;
use crate::script;
use crate::strategy::{NamedStrategy, preset};

use crate::workload;

use super::load::{MAX_CLIENTS, WeightedScript, load_scripts};
use super::out_dir::parse_out_dir;
use super::server::parse_server;

/// Which migrations of the folder are new, the ones the gate checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// `--new N`: the last N in apply order.
    LastN(usize),
    /// `--since FILE`: FILE and every migration after it. FILE is a
    /// migration's file or folder name (`0005_index.sql`), its path, or its
    /// version (`5`, as written in its name).
    Since(PathBuf),
    /// `--git-base REF`: the migrations whose file was added since the merge
    /// base of REF and HEAD (what a pull request adds), committed or not,
    /// untracked files included (a migration written but not yet added is
    /// new); Sqitch's by the plan's new lines. One that sorts before an
    /// earlier one is applied after them if the tool does so (`--out-of-order`).
    GitBase(String),
}

/// The default rows per generated table.
pub const DEFAULT_ROWS: u64 = 100_000;
/// The default load clients: the reference experiment's 4.
const DEFAULT_CLIENTS: u32 = 4;
/// The default time the blocker holds its transaction open.
const DEFAULT_HOLD: Duration = Duration::from_secs(10);
/// The default longest stall the deployed migration may cause.
const DEFAULT_MAX_STALL: Duration = Duration::from_secs(1);
/// When the blocker starts, on each run's clock: after one second of steady traffic.
pub const BLOCKER_AT: Duration = Duration::from_secs(1);
/// When the migration starts: once the blocker holds its lock.
pub const DDL_AT: Duration = Duration::from_millis(1500);
/// The run goes on this long after the blocker ends: the migration's last
/// tries (`retry` sleeps at most 5 s) and the traffic's recovery.
const AFTER_BLOCKER: Duration = Duration::from_secs(4);

/// Where the rows of the earlier migrations' tables come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    /// `--seed FILE`: the user's SQL, run once the earlier migrations ran.
    Seed { path: PathBuf, sql: String },
    /// `--rows` generated from the catalogs.
    Rows(RowCounts),
}

/// How many rows to generate: `--rows N` for every table, `--rows TABLE=N` for one.
#[derive(Debug, Clone, PartialEq)]
pub struct RowCounts {
    pub every_table: u64,
    /// Tables given their own count, as named on the command line.
    pub tables: Vec<(String, u64)>,
}

/// The traffic of each measured run.
#[derive(Debug, Clone)]
pub enum LoadChoice {
    /// Reads of the tables the migration locks, writes too where it blocks them.
    Auto,
    /// `--load read`: primary-key reads only.
    Read,
    /// `--load read-write`: reads, single-row updates and inserts.
    ReadWrite,
    /// `--load FILE`: the user's pgbench script.
    Script(WeightedScript),
    /// `--load FILE.toml`: a workload file's scripts, clients and rate.
    Workload(WorkloadLoad),
}

/// The load of a workload file given as `--load FILE.toml` (e.g. one
/// `capture` wrote): its weighted `[[load.scripts]]`, its `[load] clients`
/// and open-loop `rate`. Its duration is not used: every run of a check
/// lasts as long as its blocker needs.
#[derive(Debug, Clone)]
pub struct WorkloadLoad {
    pub scripts: Vec<WeightedScript>,
    /// `[load] clients`; `--clients` wins over it.
    pub clients: u32,
    /// `[load] rate`: transactions per second over all clients; `None` for a closed loop.
    pub rate_tps: Option<f64>,
    /// `--load PATH`, as messages name it.
    pub source: String,
}

/// The limits the deployed migration must keep (each inclusive).
#[derive(Debug, Clone, PartialEq)]
pub struct Budgets {
    /// Longest stall, in whole seconds.
    pub max_stall_s: u32,
    pub max_p99_ms: Option<f64>,
    pub max_failed: Option<u64>,
}

/// Everything `check` needs, validated.
#[derive(Debug, Clone)]
pub struct CheckConfig {
    pub dir: PathBuf,
    pub layout: Option<Layout>,
    /// `--search-path`, checked: the database's own search_path for the
    /// migrations and the traffic; `None` keeps the server's.
    pub search_path: Option<String>,
    pub selection: Selection,
    pub transaction: TransactionMode,
    /// `--files GLOB`: which files are migrations, instead of a layout's names.
    pub files: Vec<String>,
    /// `--down-files GLOB`: the down files beside them, not applied.
    pub down_files: Vec<String>,
    /// `--order`: how the files `--files` picks are ordered.
    pub order: FileOrder,
    /// `--out-of-order`: what the tool does with a new migration that sorts
    /// before an applied one; `None`: what the layout's tool does.
    pub out_of_order: Option<OutOfOrder>,
    /// `--tool-table NAME`: the migrator's own bookkeeping tables, which get
    /// no rows and no traffic.
    pub tool_tables: Vec<String>,
    pub data: Data,
    /// `--table-rows TABLE=N`: tables' rows in production, for the hold estimates.
    pub table_rows: Vec<(String, u64)>,
    /// `--sizes-from URL`: a server whose statistics give every table's rows in production.
    pub sizes_from: Option<String>,
    /// Which new migrations run under traffic (`--measure`, `--trace-only`).
    pub measure: Measure,
    pub load: LoadChoice,
    pub clients: u32,
    pub blocker: BlockerChoice,
    pub hold: Duration,
    /// Each run's load duration.
    pub duration: Duration,
    /// How the project deploys (`--deploy`) and what is measured beside it (`--recommend`).
    pub deploy: NamedStrategy,
    pub recommend: NamedStrategy,
    pub budgets: Budgets,
    pub out_dir: PathBuf,
    /// Files of an earlier check in `out_dir` that `--force` replaces.
    pub replaced_files: Vec<PathBuf>,
    pub force: bool,
    pub quiet: bool,
    /// Whether each run prints its progress line: not with `--quiet`, nor in CI.
    pub progress: bool,
    /// Whether the check runs in CI (`CI` set, see [`super::in_ci`]).
    pub ci: bool,
    pub server: ServerRequest,
    /// Seed of the load's random keys and of the generated rows.
    pub seed: u64,
    /// `--replica`: the throwaway server has a hot standby, and each measured
    /// migration runs once more per strategy with the report on the standby.
    pub replica: bool,
}

impl CheckConfig {
    /// Reads the flags of `check DIR`.
    pub fn new(dir: &Path, args: &CheckArgs) -> Result<CheckConfig, Error> {
        if dir.is_file() {
            let parent = dir
                .parent()
                .filter(|parent| !parent.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            return Err(Error::bad_input(format!(
                "check {}: that is a file; check reads the whole migrations folder (the earlier \
                 migrations build the schema the new one meets): pass the folder, e.g. \
                 stallbench check {} --since {}",
                dir.display(),
                parent.display(),
                dir.file_name().unwrap_or_default().to_string_lossy()
            )));
        }
        if !dir.is_dir() {
            return Err(Error::bad_input(format!(
                "check {}: no such folder; pass your project's migrations folder",
                dir.display()
            )));
        }
        let hold = args.hold.unwrap_or(DEFAULT_HOLD);
        let duration = parse_run_duration(args.duration, hold)?;
        let output = parse_out_dir(args.out.as_deref(), args.force, "check")?;
        let load = parse_load_choice(args.load.as_ref())?;
        if args.replica {
            check_replica_load(&load)?;
        }
        Ok(CheckConfig {
            dir: dir.to_path_buf(),
            layout: args.layout,
            search_path: args.search_path.clone(),
            selection: parse_selection(args),
            transaction: args.transaction.unwrap_or_default(),
            files: args.files.clone(),
            down_files: args.down_files.clone(),
            order: args.order.unwrap_or_default(),
            out_of_order: args.out_of_order,
            tool_tables: args.tool_table.clone(),
            data: parse_data(args)?,
            table_rows: args.table_rows.clone(),
            sizes_from: args.sizes_from.clone(),
            measure: match args.trace_only {
                true => Measure::None,
                false => args.measure.unwrap_or_default(),
            },
            clients: parse_clients(args.clients.or(load.file_clients()))?,
            load,
            blocker: args.blocker.unwrap_or(BlockerChoice::Auto),
            hold,
            duration,
            deploy: args.deploy.clone().unwrap_or_else(|| preset_named("naive")),
            recommend: args
                .recommend
                .clone()
                .unwrap_or_else(|| preset_named("retry")),
            budgets: parse_budgets(args)?,
            out_dir: output.dir,
            replaced_files: output.replaced_files,
            force: args.force,
            quiet: args.quiet,
            progress: !args.quiet && !super::in_ci(),
            ci: super::in_ci(),
            server: parse_server(&args.server, &|name| std::env::var(name).ok())?,
            seed: rand::random(),
            replica: args.replica,
        })
    }

    /// How to read the migrations folder: `--layout`, `--transaction`,
    /// `--files`, `--down-files`, `--order` and `--out-of-order`.
    pub fn folder_rules(&self) -> FolderRules {
        FolderRules {
            layout: self.layout,
            transaction: self.transaction,
            files: self.files.clone(),
            down_files: self.down_files.clone(),
            order: self.order,
            out_of_order: self.out_of_order,
        }
    }

    /// Whether `table` (`migrations` or `public.migrations`) is one that
    /// `--tool-table` names.
    pub fn is_tool_table(&self, table: &str) -> bool {
        (self.tool_tables.iter())
            .any(|tool| crate::engine::postgres::check_verdict::sizes::same_table(tool, table))
    }

    /// The strategies each migration runs with: deploy, then recommend (once if they are one).
    pub fn strategies(&self) -> Vec<NamedStrategy> {
        let mut strategies = vec![self.deploy.clone()];
        if self.recommend.name != self.deploy.name {
            strategies.push(self.recommend.clone());
        }
        strategies
    }
}

/// `--duration`, else the blocker's start and hold plus [`AFTER_BLOCKER`]; the
/// blocker must end before the run does.
fn parse_run_duration(given: Option<Duration>, hold: Duration) -> Result<Duration, Error> {
    let needed = BLOCKER_AT + hold + Duration::from_millis(500);
    let Some(duration) = given else {
        return Ok(BLOCKER_AT + hold + AFTER_BLOCKER);
    };
    if duration < needed {
        return Err(Error::bad_input(format!(
            "--duration {}: each run's blocker starts at {} s and holds {} s, so the run \
             needs at least {} s; lengthen --duration or shorten --hold",
            humantime::format_duration(duration),
            BLOCKER_AT.as_secs_f64(),
            hold.as_secs_f64(),
            needed.as_secs_f64()
        )));
    }
    Ok(duration)
}

/// `--replica`: the standby's clients run the load's scripts that only read,
/// in a closed loop (as `[load] on = "both"` does), so a `--load FILE` needs
/// one such script and no rate.
fn check_replica_load(load: &LoadChoice) -> Result<(), Error> {
    let (scripts, source, rate) = match load {
        LoadChoice::Script(script) => (std::slice::from_ref(script), &script.source, None),
        LoadChoice::Workload(workload) => (
            workload.scripts.as_slice(),
            &workload.source,
            workload.rate_tps,
        ),
        LoadChoice::Auto | LoadChoice::Read | LoadChoice::ReadWrite => return Ok(()),
    };
    let reads_only = |weighted: &WeightedScript| {
        crate::role::ClientKind::of_scripts([&weighted.script]) == crate::role::ClientKind::Reader
    };
    if !scripts.iter().any(reads_only) {
        return Err(Error::bad_input(format!(
            "{source}: --replica runs the load's scripts that only read on the standby too, and \
             this load has none; add a script that only reads, or drop --replica"
        )));
    }
    if rate.is_some() {
        return Err(Error::bad_input(format!(
            "{source}: --replica runs the load on both servers, which only the closed-loop \
             clients do, and this workload sets a rate; remove [load] rate, or drop --replica"
        )));
    }
    Ok(())
}

/// `--new N`, `--since FILE` or `--git-base REF` (clap allows one); the last one by default.
fn parse_selection(args: &CheckArgs) -> Selection {
    match (&args.since, &args.git_base) {
        (Some(path), _) => Selection::Since(path.clone()),
        (None, Some(base)) => Selection::GitBase(base.clone()),
        (None, None) => Selection::LastN(args.new.unwrap_or(1)),
    }
}

fn parse_data(args: &CheckArgs) -> Result<Data, Error> {
    if let Some(path) = &args.seed {
        let sql = std::fs::read_to_string(path).map_err(|err| {
            Error::bad_input(format!("--seed {}: cannot read it: {err}", path.display()))
        })?;
        return Ok(Data::Seed {
            path: path.clone(),
            sql,
        });
    }
    let mut counts = RowCounts {
        every_table: DEFAULT_ROWS,
        tables: Vec::new(),
    };
    let mut every = args.rows.iter().filter_map(|rows| match rows {
        RowsArg::Every(count) => Some(*count),
        RowsArg::Table(..) => None,
    });
    if let Some(count) = every.next() {
        counts.every_table = count;
    }
    if let Some(again) = every.next() {
        return Err(Error::bad_input(format!(
            "--rows {again}: --rows N is given twice; give one count for every table, and \
             TABLE=N for a table of its own"
        )));
    }
    for rows in &args.rows {
        if let RowsArg::Table(table, count) = rows {
            counts.tables.push((table.clone(), *count));
        }
    }
    // The generator leaves a table asked no rows alone.
    for table in &args.tool_table {
        counts.tables.push((table.clone(), 0));
    }
    Ok(Data::Rows(counts))
}

impl RowCounts {
    /// The rows asked for `table` (`orders` or `public.orders`): its own
    /// count, else the count for every table.
    pub fn of(&self, table: &str) -> u64 {
        (self.tables.iter())
            .find(|(given, _)| {
                crate::engine::postgres::check_verdict::sizes::same_table(given, table)
            })
            .map_or(self.every_table, |(_, rows)| *rows)
    }
}

impl LoadChoice {
    /// A workload file's `[load] clients`, the default of `--clients`.
    fn file_clients(&self) -> Option<u32> {
        match self {
            LoadChoice::Workload(workload) => Some(workload.clients),
            _ => None,
        }
    }
}

/// `--load`: read, read-write, a workload file (`.toml`) or a pgbench script.
fn parse_load_choice(arg: Option<&LoadArg>) -> Result<LoadChoice, Error> {
    let path = match arg {
        None => return Ok(LoadChoice::Auto),
        Some(LoadArg::Read) => return Ok(LoadChoice::Read),
        Some(LoadArg::ReadWrite) => return Ok(LoadChoice::ReadWrite),
        Some(LoadArg::Script(path)) => path,
    };
    if path.extension().is_some_and(|ext| ext == "toml") {
        return parse_workload_load(path).map(LoadChoice::Workload);
    }
    let path = path.to_string_lossy();
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|err| {
        Error::bad_input(format!(
            "--load {path}: cannot read it ({err}); give read, read-write or a pgbench script file"
        ))
    })?;
    let mut script = script::parse(path, &text).map_err(|err| Error::bad_input(err.to_string()))?;
    script.name = path.to_string();
    Ok(LoadChoice::Script(WeightedScript {
        script,
        weight: 1,
        text,
        source: format!("--load {path}"),
    }))
}

/// `--load FILE.toml`: the workload file's scripts, clients and rate.
fn parse_workload_load(path: &Path) -> Result<WorkloadLoad, Error> {
    let shown = path.display();
    if !path.is_file() {
        return Err(Error::bad_input(format!(
            "--load {shown}: no such file; give read, read-write, a pgbench script or a \
             workload file (.toml), e.g. one `stallbench capture` wrote"
        )));
    }
    let loaded = workload::load(&path.to_string_lossy())?;
    let scripts = load_scripts(&loaded)?;
    let file = &loaded.file.load;
    if file.clients == 0 {
        return Err(Error::bad_input(format!(
            "--load {shown}: [load] clients = 0; need at least 1 client"
        )));
    }
    if let Some(rate) = file.rate
        && !(rate.is_finite() && rate > 0.0)
    {
        return Err(Error::bad_input(format!(
            "--load {shown}: [load] rate = {rate}: the rate must be a positive number of \
             transactions per second, e.g. 200, or left out for a closed loop"
        )));
    }
    Ok(WorkloadLoad {
        scripts,
        clients: file.clients,
        rate_tps: file.rate,
        source: format!("--load {shown}"),
    })
}

fn parse_clients(clients: Option<u32>) -> Result<u32, Error> {
    match clients.unwrap_or(DEFAULT_CLIENTS) {
        0 => Err(Error::bad_input("--clients 0: need at least 1 client")),
        many if many > MAX_CLIENTS => Err(Error::bad_input(format!(
            "--clients {many}: more than {MAX_CLIENTS} clients, each a server connection; use fewer"
        ))),
        clients => Ok(clients),
    }
}

/// A strategy preset by name; `flag` names it in the message.
/// The default `--deploy` and `--recommend`, presets by name.
fn preset_named(name: &str) -> NamedStrategy {
    preset(name).expect("the defaults are presets")
}

fn parse_budgets(args: &CheckArgs) -> Result<Budgets, Error> {
    let max_stall = args.max_stall.unwrap_or(DEFAULT_MAX_STALL);
    if max_stall.subsec_nanos() != 0 {
        return Err(Error::bad_input(format!(
            "--max-stall {}: a stall is counted in whole seconds; write e.g. 1s or 2s",
            humantime::format_duration(max_stall)
        )));
    }
    let max_p99_ms = args.max_p99.map(|p99| p99.as_secs_f64() * 1000.0);
    Ok(Budgets {
        max_stall_s: max_stall.as_secs() as u32,
        max_p99_ms,
        max_failed: args.max_failed,
    })
}

#[cfg(test)]
mod tests {
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
        let cli =
            crate::cli::Cli::try_parse_from(["stallbench", "check", ".", "--search-path", value])
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
        assert_eq!(config.hold, Duration::from_secs(10));
        assert_eq!(config.duration, Duration::from_millis(15_000));
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
        let parsed =
            crate::cli::Cli::try_parse_from(["stallbench", "check", ".", "--deploy", "yolo"]);
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
}
