//! The settings of `stallbench check DIR`, read once from its flags: which
//! migrations are new, how the tool runs them, the data, the traffic, the
//! blocker, the two strategies and the budgets. Everything later trusts them.

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::choices::BlockerChoice;
use crate::choices::{FileOrder, Fill, Layout, Measure, OutOfOrder, TransactionMode};
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
/// The default time the blocker holds its transaction open: long enough
/// that a migration queued behind it (from 1.5 s) stalls traffic 3.5 s, well
/// over the default budget, and short enough that `retry`'s third try (at
/// 5.5 s, its report gone at 5 s) commits with 3 s of a 9 s run after it, so
/// no run is lengthened. Every run costs the gate its clock, on every pull
/// request.
const DEFAULT_HOLD: Duration = Duration::from_secs(4);
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
    /// Which tables get generated rows (`--fill`; every one for a load file,
    /// whose scripts may read any table).
    pub fill: Fill,
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
            fill: args.fill.unwrap_or(match load.is_file() {
                true => Fill::All,
                false => Fill::Locked,
            }),
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
    /// `--load FILE` or `--load FILE.toml`: the user's scripts.
    fn is_file(&self) -> bool {
        matches!(self, LoadChoice::Script(_) | LoadChoice::Workload(_))
    }

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
#[path = "check_tests.rs"]
mod tests;
