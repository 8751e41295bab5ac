//! Hostile input never panics: arbitrary bytes and mutated real inputs go to the
//! workload loader, the script parser and the flags (through `Cli` and
//! `Config::new`, the public entry points), and each must end in `Ok` or in a
//! one-line bad-input error (exit 2) within a time bound, without a huge allocation.
//!
//! Only parsing and validation run here: no server is started. The corpus under
//! `tests/hostile/corpus/<target>/` (seeds and every input that once failed) is
//! replayed by a plain test; the property tests run `PROPTEST_CASES` cases
//! (256 by default). A long run: `PROPTEST_CASES=20000 cargo test --test hostile`; the
//! debug build is the better fuzzer, as its integer overflow checks panic.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, mpsc};
use std::time::Duration;

use clap::Parser;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use stallbench::Error;
use stallbench::cli::{Cli, Command};
use stallbench::config::{Config, MAX_CLIENTS, MAX_DURATION, Mode};
use stallbench::workload::BUNDLED;

/// Any one allocation above this fails (and aborts the test binary) instead of
/// swapping the machine: parsing a file of a few kilobytes needs nowhere near it.
const MAX_ALLOCATION_BYTES: usize = 256 << 20;

/// The system allocator with a refusal above `MAX_ALLOCATION_BYTES`.
struct BoundedAllocator;

// SAFETY: every call is passed on to `System` unchanged, or refused with null,
// which `GlobalAlloc` allows (the caller then reports the allocation error).
unsafe impl GlobalAlloc for BoundedAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION_BYTES {
            return std::ptr::null_mut();
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOCATION_BYTES {
            return std::ptr::null_mut();
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: BoundedAllocator = BoundedAllocator;

/// How long one input may take to parse before it counts as a hang.
const TIME_BOUND: Duration = Duration::from_secs(5);

const CORPUS: &str = "tests/hostile/corpus";

/// Runs `check` on its own thread: a panic or a run past `TIME_BOUND` is a
/// failure that names `what`; otherwise `check`'s own verdict.
fn bounded(
    what: &str,
    check: impl FnOnce() -> Result<(), String> + Send + 'static,
) -> Result<(), String> {
    let (done, verdict) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(check());
    });
    match verdict.recv_timeout(TIME_BOUND) {
        Ok(result) => result.map_err(|problem| format!("{what}: {problem}")),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            Err(format!("{what}: no answer within {TIME_BOUND:?} (a hang)"))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(format!("{what}: panicked (see the message above)"))
        }
    }
}

/// `Ok` within the bounds a run can afford, or a bad-input error with a one-line message.
fn clear(result: Result<Config, Error>) -> Result<(), String> {
    match result {
        Ok(config) if config.load.clients > MAX_CLIENTS => {
            Err(format!("accepted {} clients", config.load.clients))
        }
        Ok(config) if config.load.duration > MAX_DURATION => {
            Err(format!("accepted a run of {:?}", config.load.duration))
        }
        Ok(_) => Ok(()),
        Err(error) => {
            let message = error.to_string();
            if error.exit_code() != 2 {
                return Err(format!(
                    "exit code {} for bad input: {message}",
                    error.exit_code()
                ));
            }
            if message.trim().is_empty() || message.contains(char::is_control) {
                return Err(format!("not a one-line message: {message:?}"));
            }
            Ok(())
        }
    }
}

/// The workload loader and everything `Config::new` checks in the file: the
/// bytes are written to `workload.toml` in a fresh folder and loaded by path.
fn check_workload(bytes: Vec<u8>) -> Result<(), String> {
    bounded("workload", move || {
        let dir = tempfile::tempdir().map_err(|err| err.to_string())?;
        let path = dir.path().join("workload.toml");
        std::fs::write(&path, &bytes).map_err(|err| err.to_string())?;
        let workload = path.to_str().ok_or("temp path is not UTF-8")?;
        let args = Cli::try_parse_from(["stallbench", "compare", "--quiet", "--seed", "1"])
            .map_err(|err| err.to_string())?;
        let Command::Compare { common, .. } = args.command else {
            return Err("compare did not parse as compare".into());
        };
        for mode in [
            Mode::Compare {
                strategies: Vec::new(),
            },
            Mode::LoadOnly,
        ] {
            clear(Config::new(Some(workload), mode, &common))?;
        }
        Ok(())
    })
}

/// The script parser, and for a script that parses, one transaction run
/// through its steps (no server: SQL and shell steps are skipped) with hostile
/// outside variables.
fn check_script(bytes: Vec<u8>) -> Result<(), String> {
    bounded("script", move || {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let script = match stallbench::script::parse("fuzz.sql", &text) {
            Ok(script) => script,
            Err(error) => {
                let message = error.to_string();
                return match message.contains(char::is_control) {
                    true => Err(format!("not a one-line message: {message:?}")),
                    false => Ok(()),
                };
            }
        };
        let values = [
            ("x".to_string(), "9223372036854775807".to_string()),
            ("scale".to_string(), "-1e308".to_string()),
        ];
        let seeds = stallbench::script::RandomSeeds::new(1, 1);
        let (mut prng, automatic) = seeds.client(u32::MAX);
        let mut vars = script.new_vars(automatic, &values);
        let mut cursor = stallbench::script::Cursor::default();
        // Every step is bounded; a script of n commands ends within n steps.
        for _ in 0..=script.commands.len() {
            match script.step(&mut cursor, &mut vars, &mut prng) {
                Ok(stallbench::script::Step::Done) | Err(_) => break,
                Ok(_) => {}
            }
        }
        Ok(())
    })
}

/// A command line (without the program name), parsed by clap and, when clap
/// accepts it, turned into a `Config` as `stallbench compare`/`run` would.
fn check_flags(arguments: Vec<String>) -> Result<(), String> {
    let what = format!("flags {arguments:?}");
    bounded(&what, move || {
        let argv = std::iter::once("stallbench".to_string()).chain(arguments);
        let Ok(cli) = Cli::try_parse_from(argv) else {
            return Ok(());
        };
        let (workload, mode, common) = match cli.command {
            Command::Compare {
                workload,
                strategies,
                common,
            } => (workload, Mode::Compare { strategies }, common),
            Command::Run {
                workload,
                strategy,
                load_only,
                common,
            } => match (load_only, strategy) {
                (true, _) => (workload, Mode::LoadOnly, common),
                (false, Some(strategy)) => (workload, Mode::Run { strategy }, common),
                (false, None) => return Ok(()),
            },
            // check reads a folder named on the command line: not fuzzed with paths.
            Command::Plot { .. }
            | Command::Workloads
            | Command::Check { .. }
            | Command::Capture { .. } => return Ok(()),
        };
        // Only bundled workloads: a fuzzed path could name any file on the machine.
        if workload
            .as_deref()
            .is_some_and(|name| !BUNDLED.iter().any(|(bundled, _)| *bundled == name))
        {
            return Ok(());
        }
        clear(Config::new(workload.as_deref(), mode, &common))
    })
}

// Mutations of real inputs.

/// Tokens that parsers treat specially, or values at the edge of a type.
const TOKENS: &[&str] = &[
    "\\set ",
    "\\sleep ",
    "\\",
    ":x",
    ":scale",
    ":",
    "::",
    "$$",
    "$tag$",
    "$1",
    "'",
    "\"",
    "E'",
    "--",
    "/*",
    "*/",
    ";",
    "\n",
    "\r\n",
    "\t",
    "\0",
    "(",
    ")",
    ",",
    "=",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    "\"\"\"",
    "'''",
    "#",
    ".",
    "-",
    "+",
    "*",
    "/",
    "%",
    "0",
    "-1",
    "1e18",
    "1e308",
    "1e400",
    "-1e400",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551615",
    "4294967295",
    "4294967296",
    "99999999999999999999999999",
    "0.000000001",
    "-1s",
    "0s",
    "1e30s",
    "18446744073709551615s",
    "584942417355years",
    "100000000h",
    "1ns",
    "random(1, 1e18)",
    "random(-9223372036854775808, 9223372036854775807)",
    "random_gaussian(1, 10, 1e308)",
    "random_exponential(1, 10, 0.0000001)",
    "pow(10, 400)",
    "exp(1000)",
    "ln(0)",
    "sqrt(-1)",
    "int(1e300)",
    "abs(-9223372036854775808)",
    "-9223372036854775807 - 1",
    "mod(-9223372036854775808, -1)",
    "-9223372036854775808 / -1",
    "least(",
    "greatest(1,",
    "((((((((((",
    "))))))))))",
    "é",
    "日本語",
    "\u{202e}",
    "\u{feff}",
    "\u{10ffff}",
    "[load]",
    "[blocker]",
    "[ddl]",
    "[[strategies]]",
    "[[load.scripts]]",
    "[expect.retry]",
    "[expect.naive]",
    "kind = \"kill-blockers\"",
    "kind = \"idle\"",
    "schedule = [[\"1s\", \"1e30s\"]]",
    "backoff = { kind = \"exponential\", base = \"1ns\", cap = \"1e30s\", jitter = \"full\" }",
    "max_tries = 4294967295",
    "max_p99_ms = -1",
    "max_p99_ms = nan",
    "ddl_outcome = \"\"",
    "clients = 4294967295",
    "rate = nan",
    "rate = 1e308",
    "file = \"/dev/zero\"",
    "file = \".\"",
    "weight = 4294967295",
];

/// One change to a byte string; positions are fractions of its length so a
/// change applies to any input and shrinks toward the start.
#[derive(Debug, Clone)]
enum Mutation {
    Delete {
        at: f64,
        length: usize,
    },
    Duplicate {
        at: f64,
        length: usize,
    },
    Swap {
        first: f64,
        second: f64,
        length: usize,
    },
    Insert {
        at: f64,
        token: usize,
    },
    Overwrite {
        at: f64,
        byte: u8,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0..1.0f64;
    prop_oneof![
        (at.clone(), 1..64usize).prop_map(|(at, length)| Mutation::Delete { at, length }),
        (at.clone(), 1..256usize).prop_map(|(at, length)| Mutation::Duplicate { at, length }),
        (at.clone(), at.clone(), 1..64usize).prop_map(|(first, second, length)| Mutation::Swap {
            first,
            second,
            length
        }),
        (at.clone(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Insert { at, token }),
        (at, any::<u8>()).prop_map(|(at, byte)| Mutation::Overwrite { at, byte }),
    ]
}

fn position(bytes: &[u8], at: f64) -> usize {
    ((bytes.len() as f64) * at) as usize
}

fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for change in mutations {
        match *change {
            Mutation::Delete { at, length } => {
                let start = position(&bytes, at);
                let end = (start + length).min(bytes.len());
                bytes.drain(start..end);
            }
            Mutation::Duplicate { at, length } => {
                let start = position(&bytes, at);
                let end = (start + length).min(bytes.len());
                let copy = bytes[start..end].to_vec();
                bytes.splice(end..end, copy);
            }
            Mutation::Swap {
                first,
                second,
                length,
            } => {
                let (a, b) = (position(&bytes, first), position(&bytes, second));
                let (low, high) = (a.min(b), a.max(b));
                let length = length.min(high - low).min(bytes.len() - high);
                for offset in 0..length {
                    bytes.swap(low + offset, high + offset);
                }
            }
            Mutation::Insert { at, token } => {
                let start = position(&bytes, at);
                bytes.splice(start..start, TOKENS[token].bytes());
            }
            Mutation::Overwrite { at, byte } => {
                let start = position(&bytes, at);
                if start < bytes.len() {
                    bytes[start] = byte;
                }
            }
        }
    }
    bytes
}

// Seeds: the bundled workloads, their scripts, and the corpus.

fn corpus_files(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(CORPUS).join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("cannot read corpus {}: {err}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    files
}

/// Seeds are picked by index, so a saved failing case stays one short line:
/// the bundled inputs first, then the corpus files in name order.
static WORKLOAD_SEEDS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(workload_seeds);
static SCRIPT_SEEDS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(script_seeds);
static FLAG_SEEDS: LazyLock<Vec<Vec<String>>> = LazyLock::new(flag_seeds);

fn workload_seeds() -> Vec<Vec<u8>> {
    let bundled = BUNDLED.iter().map(|(_, text)| text.as_bytes().to_vec());
    let corpus = corpus_files("workload")
        .into_iter()
        .map(|path| std::fs::read(path).unwrap());
    bundled.chain(corpus).collect()
}

fn script_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (name, _) in BUNDLED {
        let loaded = stallbench::workload::load(name).unwrap();
        for script in loaded.file.load.scripts {
            seeds.extend(script.sql.map(String::into_bytes));
        }
    }
    seeds.extend(
        corpus_files("script")
            .into_iter()
            .map(|path| std::fs::read(path).unwrap()),
    );
    seeds
}

/// A flags corpus file holds one argument per line.
fn read_flags(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn flag_seeds() -> Vec<Vec<String>> {
    corpus_files("flags")
        .iter()
        .map(|path| read_flags(path))
        .collect()
}

// Flag command lines.

const FLAGS: &[&str] = &[
    "--clients",
    "--rate",
    "--pool-size",
    "--client-timeout",
    "--latency-limit",
    "--duration",
    "--set",
    "--expect",
    "--strategies",
    "--strategy",
    "--seed",
    "--load-only",
    "--quiet",
];

const FLAG_VALUES: &[&str] = &[
    "0",
    "1",
    "4",
    "-1",
    "4294967295",
    "4294967296",
    "1e18",
    "1e30",
    "NaN",
    "inf",
    "-inf",
    "0.0",
    "1e-300",
    "1e308",
    "10s",
    "1s",
    "0s",
    "-1s",
    "1e30s",
    "1.5s",
    "500ms",
    "1ns",
    "18446744073709551615s",
    "584942417355years",
    "9999999999999999999999s",
    "24 s",
    "s",
    "",
    " ",
    "=",
    "x=",
    "=1",
    "x=1",
    "scale=10",
    "scale=1e400",
    "scale=-9223372036854775808",
    "x=\n",
    "é=日本",
    "naive",
    "retry",
    "all",
    "naive,retry",
    ",",
    "load",
    "gitlab",
    "retry.max_p99_ms=600",
    "naive.min_zero_tps_seconds=5",
    "retry.max_p99_ms=-1",
    "retry.max_p99_ms=NaN",
    "retry.max_p99_ms=1e400",
    "retry.max_zero_tps_seconds=4294967296",
    "retry.ddl_outcome=",
    "retry.ddl_outcome=ok",
    "retry.nope=1",
    ".=",
    "retry.=1",
    "=.",
    "retry",
    "x.y.z=1",
    "load.max_failed=18446744073709551616",
    "retry.max_longest_stall_s=inf",
];

fn flag_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0..FLAG_VALUES.len()).prop_map(|index| FLAG_VALUES[index].to_string()),
        1 => any::<String>(),
        1 => (0..FLAG_VALUES.len(), 0..FLAG_VALUES.len())
            .prop_map(|(a, b)| format!("{}{}", FLAG_VALUES[a], FLAG_VALUES[b])),
    ]
}

fn command_line() -> impl Strategy<Value = Vec<String>> {
    let command = prop_oneof![Just("compare"), Just("run")];
    let workload = prop::option::of(0..BUNDLED.len());
    let flags = prop::collection::vec((0..FLAGS.len(), flag_value()), 0..6);
    (command, workload, flags).prop_map(|(command, workload, flags)| {
        let mut arguments = vec![command.to_string()];
        arguments.extend(workload.map(|index| BUNDLED[index].0.to_string()));
        for (flag, value) in flags {
            arguments.push(FLAGS[flag].to_string());
            arguments.push(value);
        }
        arguments
    })
}

// The tests.

#[test]
fn the_corpus_replays_cleanly() {
    let mut failures = Vec::new();
    for path in corpus_files("workload") {
        let bytes = std::fs::read(&path).unwrap();
        failures.extend(
            check_workload(bytes)
                .err()
                .map(|err| format!("{}: {err}", path.display())),
        );
    }
    for path in corpus_files("script") {
        let bytes = std::fs::read(&path).unwrap();
        failures.extend(
            check_script(bytes)
                .err()
                .map(|err| format!("{}: {err}", path.display())),
        );
    }
    for path in corpus_files("flags") {
        let arguments = read_flags(&path);
        failures.extend(
            check_flags(arguments)
                .err()
                .map(|err| format!("{}: {err}", path.display())),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/hostile.txt",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_as_a_workload(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_workload(bytes).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mutated_workloads(
        seed in 0..WORKLOAD_SEEDS.len(),
        mutations in prop::collection::vec(mutation(), 1..8),
    ) {
        let bytes = apply(WORKLOAD_SEEDS[seed].clone(), &mutations);
        check_workload(bytes).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn arbitrary_bytes_as_a_script(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_script(bytes).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mutated_scripts(
        seed in 0..SCRIPT_SEEDS.len(),
        mutations in prop::collection::vec(mutation(), 1..8),
    ) {
        let bytes = apply(SCRIPT_SEEDS[seed].clone(), &mutations);
        check_script(bytes).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn hostile_command_lines(arguments in command_line()) {
        check_flags(arguments).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mutated_command_lines(
        seed in 0..FLAG_SEEDS.len(),
        index in any::<prop::sample::Index>(),
        value in flag_value(),
    ) {
        let mut arguments = FLAG_SEEDS[seed].clone();
        let at = index.index(arguments.len() + 1);
        arguments.insert(at, value);
        check_flags(arguments).map_err(TestCaseError::fail)?;
    }
}
