//! README.md and docs/*.md say only what is true of the repository:
//!
//! - their links and images into the repository point at files git tracks (a
//!   chart or results folder the README shows must be committed, not only
//!   present in the working copy that wrote the README), and a link to a
//!   heading of a Markdown file finds that heading;
//! - every stallbench command they quote parses with the real command-line
//!   definition, and, where it needs no database and no file that exists only
//!   at run time, builds its `Config` (its plan, with a sweep a `Config` per value) as `stallbench::run` does (which
//!   validates the workload, the flags and the strategies without a server);
//! - the CI pipelines of examples/ they link run such commands and publish
//!   only what stallbench writes (`pipelines`).

use std::path::{Component, Path, PathBuf};

use clap::Parser;
use clap::error::ErrorKind;
use pulldown_cmark::{Event, Options, Parser as Markdown, Tag, TagEnd};
use stallbench::cli::{Cli, Command};
use stallbench::config::{CheckConfig, Mode};

/// The ways the documents start a stallbench command line; the words after
/// one are the command's arguments.
const COMMAND_PREFIXES: [&[&str]; 3] = [
    &["stallbench"],
    &["cargo", "run", "--release", "--"],
    &["target/release/stallbench"],
];

/// Placeholders of the commands table and the prose, and the value each is
/// checked with (whole words, or the start of a word for `DIR/`).
const PLACEHOLDERS: [(&str, &str); 5] = [
    ("WORKLOAD", "add-column"),
    ("NAME", "naive"),
    ("a,b", "naive,retry"),
    ("DIR", "results/example"),
    ("results/<run>/", "results/example/"),
];

/// Files the quoted commands name that exist only where a user runs them: a
/// command naming one is parsed, but its `Config` is not built (it would only
/// say that the file is missing).
const RUN_TIME_FILES: [(&str, &str); 10] = [
    (
        "sql-migrations",
        "the SQL a code-based tool recorded (docs/check.md, SQL from code-based tools)",
    ),
    (
        "read.sql",
        "the user's own script (docs/workloads.md, No TOML needed)",
    ),
    (
        "write.sql",
        "the user's own script (docs/workloads.md, No TOML needed)",
    ),
    (
        "migrate.sql",
        "the user's own migration (docs/workloads.md, No TOML needed)",
    ),
    (
        "orders-note.toml",
        "the in-place workload docs/staging.md shows as text",
    ),
    (
        "migrations",
        "a real project's migrations folder (docs/check.md, Tried on real projects)",
    ),
    (
        "db/migrations",
        "the user's own migrations folder (docs/check.md, In CI)",
    ),
    (
        "packages/prisma/migrations",
        "documenso's migrations folder (docs/benchmark.md, check on real projects)",
    ),
    (
        "tools/migrate/migrations",
        "openmeter's migrations folder (docs/benchmark.md, check on real projects)",
    ),
    (
        "my.toml",
        "the user's own MariaDB workload (docs/mariadb.md)",
    ),
];

/// The CI pipelines of examples/, which docs/ci.md links.
#[path = "readme/pipelines.rs"]
mod pipelines;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every docs/*.md, as paths relative to the repository root.
fn documents() -> Vec<PathBuf> {
    let mut documents = vec![PathBuf::from("README.md")];
    let docs = std::fs::read_dir(root().join("docs")).expect("read the docs/ folder");
    let mut pages: Vec<PathBuf> = docs
        .map(|entry| entry.expect("list docs/").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| Path::new("docs").join(path.file_name().expect("a file name")))
        .collect();
    pages.sort();
    assert!(!pages.is_empty(), "docs/ holds no .md file");
    documents.extend(pages);
    documents
}

fn read(document: &Path) -> String {
    std::fs::read_to_string(root().join(document))
        .unwrap_or_else(|err| panic!("read {}: {err}", document.display()))
}

fn markdown(text: &str) -> Markdown<'_> {
    Markdown::new_ext(
        text,
        Options::ENABLE_TABLES | Options::ENABLE_HEADING_ATTRIBUTES,
    )
}

/// The targets of the relative Markdown links and images, `[text](target)`
/// and `![alt](target)`, with their `#anchor` if any.
fn relative_links(text: &str) -> Vec<String> {
    markdown(text)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .filter(|target| {
            let is_external = target.contains("://") || target.starts_with("mailto:");
            !is_external && !target.starts_with('#') && !target.is_empty()
        })
        .collect()
}

/// [`relative_links`] without their `#anchors`.
fn relative_link_targets(text: &str) -> Vec<String> {
    relative_links(text)
        .iter()
        .map(|target| target.split('#').next().unwrap_or_default().to_string())
        .collect()
}

/// The anchors GitHub gives the headings of a Markdown text: lower case,
/// punctuation dropped, spaces as hyphens.
fn heading_anchors(text: &str) -> Vec<String> {
    let mut anchors = Vec::new();
    let mut heading: Option<String> = None;
    for event in markdown(text) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(words) | Event::Code(words) => {
                if let Some(heading) = heading.as_mut() {
                    heading.push_str(&words);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let title = heading.take().unwrap_or_default().to_lowercase();
                let anchor: String = title
                    .chars()
                    .filter(|c| c.is_alphanumeric() || *c == '-' || *c == ' ' || *c == '_')
                    .map(|c| if c == ' ' { '-' } else { c })
                    .collect();
                anchors.push(anchor);
            }
            _ => {}
        }
    }
    anchors
}

/// `target` read from a file in `dir` (both relative to the root), as a path
/// relative to the root with `.` and `..` resolved.
fn resolve(dir: &Path, target: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    for component in dir.join(target.trim_end_matches('/')).components() {
        match component {
            Component::ParentDir => {
                assert!(
                    parts.pop().is_some(),
                    "{target} from {} leaves the repository",
                    dir.display()
                );
            }
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

fn tracked_files() -> Vec<String> {
    let tracked = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(root())
        .output()
        .expect("run git ls-files (git must be installed)");
    assert!(
        tracked.status.success(),
        "git ls-files failed in {}",
        root().display()
    );
    String::from_utf8_lossy(&tracked.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn every_file_the_documents_link_to_is_in_the_repository() {
    let tracked = tracked_files();
    let readme_targets = relative_link_targets(&read(Path::new("README.md")));
    assert!(
        readme_targets.iter().any(|t| t.ends_with(".png")),
        "README.md shows no chart; found links {readme_targets:?}"
    );
    for document in documents() {
        let dir = document.parent().expect("a document's folder");
        for link in relative_links(&read(&document)) {
            let (target, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let file = resolve(dir, target);
            let committed = tracked
                .iter()
                .any(|tracked| *tracked == file || tracked.starts_with(&format!("{file}/")));
            assert!(
                committed,
                "{} links to {link} ({file}), which git does not track; commit it (check .gitignore) or fix the link",
                document.display()
            );
            if !anchor.is_empty() && file.ends_with(".md") {
                let anchors = heading_anchors(&read(Path::new(&file)));
                assert!(
                    anchors.iter().any(|a| a == anchor),
                    "{} links to {link}, but {file} has no heading with that anchor; its anchors: {anchors:?}",
                    document.display()
                );
            }
        }
    }
}

#[test]
fn every_docs_page_is_linked_from_the_readme() {
    let readme_targets = relative_link_targets(&read(Path::new("README.md")));
    for page in documents().iter().skip(1) {
        let page = page.to_string_lossy();
        assert!(
            readme_targets.iter().any(|target| *target == page),
            "README.md does not link {page}; add it to its Documentation list"
        );
    }
}

#[test]
fn link_targets_are_found_and_external_ones_skipped() {
    let markdown = "see [a](src/a.rs), ![chart](results/x/t.png) and [web](https://example.com) [sec](#layout) [b](docs/b.md#part)";
    assert_eq!(
        relative_link_targets(markdown),
        ["src/a.rs", "results/x/t.png", "docs/b.md"]
    );
}

#[test]
fn resolve_reads_a_target_from_the_linking_file_s_folder() {
    assert_eq!(
        resolve(Path::new("docs"), "../results/example/"),
        "results/example"
    );
    assert_eq!(resolve(Path::new("docs"), "ci.md"), "docs/ci.md");
    assert_eq!(resolve(Path::new(""), "src/cli.rs"), "src/cli.rs");
}

#[test]
fn heading_anchors_follow_github() {
    let text = "# Title\n\n## Flags of `compare` and `run`\n\n## The application pool's cost\n\n## Open loop: what an application sees\n";
    assert_eq!(
        heading_anchors(text),
        [
            "title",
            "flags-of-compare-and-run",
            "the-application-pools-cost",
            "open-loop-what-an-application-sees"
        ]
    );
}

/// The words of one shell command line after the environment assignments
/// (`CI=true`), a YAML `- run:` and a `$ ` prompt; cut at a pipe, a list
/// operator or a redirection; `#` comments dropped. `None` when the line does
/// not split as a shell line.
fn shell_words(line: &str) -> Option<Vec<String>> {
    let line = line.trim();
    let line = line.strip_prefix("- run:").unwrap_or(line);
    let line = line.trim_start().strip_prefix("$ ").unwrap_or(line);
    let words = shlex::split(line)?;
    let is_assignment = |word: &String| {
        word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
    };
    let words = words.into_iter().skip_while(is_assignment);
    let operators = ["|", "||", "&&", ";", ">", ">>", "2>", "&"];
    Some(
        words
            .take_while(|word| !operators.contains(&word.as_str()))
            .collect(),
    )
}

/// The arguments of a stallbench command (the words after its prefix), or
/// `None` for a line that is no stallbench command.
fn stallbench_arguments(words: &[String]) -> Option<Vec<String>> {
    COMMAND_PREFIXES.iter().find_map(|prefix| {
        let starts = words.len() > prefix.len()
            && prefix
                .iter()
                .zip(words)
                .all(|(expected, word)| expected == word);
        starts.then(|| words[prefix.len()..].to_vec())
    })
}

/// Every stallbench command quoted in a Markdown text, in code blocks (one
/// per line, `\` continuations joined) and in inline code, as its arguments.
/// A quoted text that starts like a command but does not split as a shell
/// line is returned whole as one word, so that its check fails.
fn quoted_commands(text: &str) -> Vec<Vec<String>> {
    let mut lines: Vec<String> = Vec::new();
    let mut block: Option<String> = None;
    for event in markdown(text) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => block = Some(String::new()),
            Event::Text(text) => {
                if let Some(block) = block.as_mut() {
                    block.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                let joined = block.take().unwrap_or_default().replace("\\\n", " ");
                lines.extend(joined.lines().map(str::to_string));
            }
            Event::Code(code) => lines.push(code.to_string()),
            _ => {}
        }
    }
    lines
        .iter()
        .filter_map(|line| match shell_words(line) {
            Some(words) => stallbench_arguments(&words),
            None => {
                let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
                stallbench_arguments(&words).map(|_| vec![line.clone()])
            }
        })
        .collect()
}

/// The arguments with the placeholders of [`PLACEHOLDERS`] replaced and the
/// brackets of optional parts (`[WORKLOAD]`, `[--strategies a,b]`) dropped.
fn resolve_placeholders(arguments: &[String]) -> Vec<String> {
    arguments
        .iter()
        .map(|word| {
            let word = word.trim_start_matches('[').trim_end_matches(']');
            PLACEHOLDERS
                .iter()
                .find_map(|(placeholder, value)| {
                    if word == *placeholder {
                        Some(value.to_string())
                    } else if placeholder.ends_with('/') {
                        word.strip_prefix(placeholder)
                            .map(|rest| format!("{value}{rest}"))
                    } else {
                        word.strip_prefix(&format!("{placeholder}/"))
                            .map(|rest| format!("{value}/{rest}"))
                    }
                })
                .unwrap_or_else(|| word.to_string())
        })
        .collect()
}

/// How far a quoted command was checked.
#[derive(Debug, PartialEq)]
enum Checked {
    /// Parsed, and its `Config` built.
    Config,
    /// Parsed only: it needs a database, or names a file of [`RUN_TIME_FILES`],
    /// or is not a run (`plot`, `workloads`, `--help`).
    Parsed,
}

/// Parses one quoted command with the real CLI and, for a `compare` or `run`
/// that needs no database and no run-time file, builds its `Config` as
/// `stallbench::run` does.
fn check_command(arguments: &[String]) -> Result<Checked, String> {
    let arguments = resolve_placeholders(arguments);
    let argv = std::iter::once("stallbench".to_string()).chain(arguments.iter().cloned());
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err)
            if matches!(
                err.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) =>
        {
            return Ok(Checked::Parsed);
        }
        Err(err) => return Err(err.to_string()),
    };
    let (workload, mode, mut common) = match cli.command {
        Command::Compare {
            workload,
            strategies,
            common,
        } => {
            if let Some(checked) = check_mariadb(workload.as_deref(), &strategies, &common)? {
                return Ok(checked);
            }
            (workload, Mode::Compare { strategies }, common)
        }
        Command::Run {
            workload,
            strategy,
            load_only,
            common,
        } => {
            let names: Vec<String> = strategy.iter().cloned().collect();
            if let Some(checked) = check_mariadb(workload.as_deref(), &names, &common)? {
                return Ok(checked);
            }
            let mode = Mode::of_run(load_only, strategy).map_err(|err| err.to_string())?;
            (workload, mode, common)
        }
        Command::Plot { .. } | Command::Workloads | Command::Capture { .. } => {
            return Ok(Checked::Parsed);
        }
        Command::Check { dir, mut args } => {
            if RUN_TIME_FILES
                .iter()
                .any(|(file, _)| dir == Path::new(file))
            {
                return Ok(Checked::Parsed);
            }
            let out = tempfile::tempdir().map_err(|err| format!("a temp folder: {err}"))?;
            args.out = Some(out.path().join("results"));
            return CheckConfig::new(&dir, &args)
                .map(|_| Checked::Config)
                .map_err(|err| format!("{err:#}"));
        }
    };
    let names_run_time_file = arguments.iter().any(|word| {
        RUN_TIME_FILES
            .iter()
            .any(|(file, _)| word == file || word.starts_with(&format!("{file}@")))
    });
    if common.db_url.is_some() || names_run_time_file {
        return Ok(Checked::Parsed);
    }
    // The quoted --out folders are the committed examples, which a new run
    // refuses to write into: the config is built with an empty folder instead.
    let out = tempfile::tempdir().map_err(|err| format!("a temp folder: {err}"))?;
    if common.out.is_some() {
        common.out = Some(out.path().join("results"));
    }
    // Relative paths (a workload file) are read from the working directory,
    // which `cargo test` sets to the repository root.
    // The plan checks each value of a sweep as its flag would be checked.
    stallbench::plan::Plan::new(workload.as_deref(), mode, &common)
        .map(|_| Checked::Config)
        .map_err(|err| format!("{err:#}"))
}

/// A `compare` of a MariaDB workload: its plan, as `stallbench::run` builds
/// it before the server starts; `None` for a PostgreSQL workload.
fn check_mariadb(
    workload: Option<&str>,
    strategies: &[String],
    common: &stallbench::cli::CommonArgs,
) -> Result<Option<Checked>, String> {
    use stallbench::engine::mariadb::compare;
    let found = compare::workload_for(workload, common).map_err(|err| err.to_string())?;
    let Some(found) = found else {
        return Ok(None);
    };
    compare::plan(found, strategies, common)
        .map(|_| Some(Checked::Config))
        .map_err(|err| err.to_string())
}

#[test]
fn every_quoted_command_parses_and_builds_its_config() {
    let mut checked = Vec::new();
    let mut failures = Vec::new();
    for document in documents() {
        for arguments in quoted_commands(&read(&document)) {
            let quoted = arguments.join(" ");
            match check_command(&arguments) {
                Ok(how) => checked.push((document.display().to_string(), quoted, how)),
                Err(err) => failures.push(format!(
                    "{}: `stallbench {quoted}`: {}",
                    document.display(),
                    err.trim()
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "quoted commands that stallbench would refuse:\n{}",
        failures.join("\n")
    );
    let configs = checked
        .iter()
        .filter(|(_, _, how)| *how == Checked::Config)
        .count();
    // README.md and docs/ quoted 22 (13 with a config) when this test was written; far fewer means the extractor broke.
    assert!(
        checked.len() >= 15 && configs >= 8,
        "found only {} quoted commands ({configs} with a config): {checked:#?}",
        checked.len()
    );
}

#[test]
fn the_extractor_finds_commands_in_code_blocks_and_inline_code() {
    let text = "Run `stallbench workloads` or `stallbench` (the schema), `cargo test`.\n\n\
        | a | b |\n| --- | --- |\n| `stallbench compare \\| head -3` | x |\n\n\
        ```sh\n\
        cargo run --release -- compare      # the main job\n\
        PGPASSWORD='...' stallbench compare orders-note.toml --in-place \\\n  --strategies naive,retry\n\
        description = \"one line for `stallbench workloads`\"\n\
        ```\n\n\
        ```yaml\n- run: cargo run --release -- compare add-column --quiet --out results/ci\n```\n";
    let words = |line: &str| -> Vec<String> { line.split(' ').map(str::to_string).collect() };
    assert_eq!(
        quoted_commands(text),
        [
            words("workloads"),
            words("compare"),
            words("compare"),
            words("compare orders-note.toml --in-place --strategies naive,retry"),
            words("compare add-column --quiet --out results/ci"),
        ]
    );
}

#[test]
fn a_typo_in_a_quoted_flag_fails_the_check() {
    let typo = quoted_commands("```sh\nstallbench compare --strategis naive,retry\n```\n");
    assert_eq!(typo.len(), 1);
    let err = check_command(&typo[0]).expect_err("--strategis is no flag");
    assert!(err.contains("--strategis"), "{err}");

    let bad_value = quoted_commands("`cargo run --release -- run --strategy naive --duration 24`");
    let err = check_command(&bad_value[0]).expect_err("a duration without a unit");
    assert!(err.contains("unit"), "{err}");

    let unknown_preset = quoted_commands("`stallbench compare --strategies naive,gitlob`");
    assert!(check_command(&unknown_preset[0]).is_err());

    let unbalanced = quoted_commands("`stallbench compare --blocker \"SELECT 1`");
    assert!(check_command(&unbalanced[0]).is_err());
}

#[test]
fn placeholders_are_resolved_and_run_time_files_only_parsed() {
    let table = quoted_commands("`stallbench compare [WORKLOAD] [--strategies a,b]`");
    assert_eq!(
        resolve_placeholders(&table[0]),
        ["compare", "add-column", "--strategies", "naive,retry"]
    );
    assert_eq!(check_command(&table[0]), Ok(Checked::Config));
    let rerun = quoted_commands("`stallbench compare DIR/workload.toml`");
    assert_eq!(check_command(&rerun[0]), Ok(Checked::Config));
    let own_script = quoted_commands("`stallbench run -f read.sql@9 --load-only`");
    assert_eq!(check_command(&own_script[0]), Ok(Checked::Parsed));
}
