//! The CI pipelines of examples/, which docs/ci.md tells a CI engineer to
//! copy, cannot rot: each is read as YAML, each job once per entry of its
//! matrix (the entry's values filled in); its stallbench command parses with
//! the real command-line definition and builds its `Config` (as the quoted
//! commands of the documents do); what it uploads, publishes and posts is its
//! `--out` folder or a file stallbench writes there; and the upload and the
//! test report happen whatever the outcome.

use std::path::Path;

use stallbench::results;
use yaml_rust2::{Yaml, YamlLoader};

use super::{check_command, read, shell_words, stallbench_arguments};

/// The CI pipelines docs/ci.md tells a CI engineer to copy, each with its
/// number of job runs (a job once per matrix entry).
const PIPELINES: [(&str, usize); 4] = [
    ("examples/github-actions.yml", 2),
    ("examples/gitlab-ci.yml", 2),
    ("examples/github-check.yml", 1),
    ("examples/gitlab-check.yml", 1),
];

/// stallbench's own GitHub Action, which examples/github-check.yml uses.
const ACTION: &str = "action.yml";

/// The CI systems' own values a pipeline's commands name, and the value each
/// is checked with: the base branch of a pull or merge request.
const CI_VALUES: [(&str, &str); 2] = [
    ("${{ github.base_ref }}", "main"),
    ("$CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main"),
];

/// `text` with the CI systems' values of [`CI_VALUES`] filled in.
fn fill_ci_values(text: &str) -> String {
    CI_VALUES
        .iter()
        .fold(text.to_string(), |text, (name, value)| {
            text.replace(name, value)
        })
}

/// The YAML document of the file `path` (relative to the root).
fn yaml_document(path: &str) -> Yaml {
    let text = read(Path::new(path));
    let mut documents =
        YamlLoader::load_from_str(&text).unwrap_or_else(|err| panic!("{path}: not YAML: {err}"));
    assert_eq!(documents.len(), 1, "{path}: one YAML document");
    documents.remove(0)
}

/// The step of stallbench's action that runs `stallbench check`: the one
/// named so, whose script runs stallbench.
fn action_check_step(action: &Yaml) -> &Yaml {
    let steps = action["runs"]["steps"]
        .as_vec()
        .expect("action.yml has steps");
    steps
        .iter()
        .find(|step| {
            step["name"].as_str() == Some("stallbench check")
                && step["run"]
                    .as_str()
                    .is_some_and(|run| run.contains("stallbench "))
        })
        .expect("action.yml has a step named stallbench check that runs it")
}

/// The shell line stallbench's action runs for a step's `with:` inputs
/// (see [`action_arguments`]), its arguments quoted back into one line.
fn action_command_line(with: &Yaml) -> String {
    let arguments = action_arguments(with, Path::new("."));
    let words = arguments.iter().map(String::as_str);
    format!("stallbench {}", shlex::try_join(words).unwrap())
}

/// The arguments stallbench's action gives stallbench for a step's `with:`
/// inputs: its check step's `run`, run by bash in `dir` with the step's env
/// (each variable the input it names: the step's value, else the input's
/// default), `stallbench` a shell function that prints its arguments.
fn action_arguments(with: &Yaml, dir: &Path) -> Vec<String> {
    let action = yaml_document(ACTION);
    let step = action_check_step(&action);
    let run = step["run"].as_str().unwrap();
    let env = step["env"]
        .as_hash()
        .expect("the check step's inputs come as env");
    let mut bash = std::process::Command::new("bash");
    bash.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .arg("-c")
        .arg(format!("stallbench() {{ printf '%s\\0' \"$@\"; }}\n{run}"));
    for (name, value) in env {
        let (name, value) = (name.as_str().unwrap(), value.as_str().unwrap());
        let input = value
            .strip_prefix("${{ inputs.")
            .and_then(|rest| rest.strip_suffix(" }}"))
            .unwrap_or_else(|| panic!("{ACTION}: env {name} is not an input: {value}"));
        let value = with[input]
            .as_str()
            .or_else(|| action["inputs"][input]["default"].as_str())
            .unwrap_or_else(|| panic!("{ACTION}: input {input} has no value and no default"));
        bash.env(name, value);
    }
    let output = bash.output().expect("bash runs");
    assert!(
        output.status.success(),
        "{ACTION}: the check step's script failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8(output.stdout).unwrap();
    let mut arguments: Vec<String> = printed.split('\0').map(str::to_string).collect();
    assert_eq!(arguments.pop().as_deref(), Some(""), "{printed:?}");
    arguments
}

/// Whether a step's `uses:` is stallbench's own action (`OWNER/stallbench@REF`).
fn uses_stallbench_action(uses: &str) -> bool {
    uses.split_once('@')
        .is_some_and(|(path, _)| path.ends_with("/stallbench"))
}

/// One job of a pipeline with one matrix entry's values filled in.
#[derive(Debug, Default)]
struct JobRun {
    /// The job's name and matrix entry, for messages.
    name: String,
    /// Its shell lines (`run:`, `script:`, ...), `\` continuations joined.
    shell_lines: Vec<String>,
    /// What it uploads or publishes, as (what, path).
    published: Vec<(String, String)>,
    /// Every string of the job, for the paths it names elsewhere.
    text: String,
}

/// The strings of a YAML scalar or list of scalars (`paths: [a, b]` or `junit: a`).
fn strings(value: &Yaml) -> Vec<String> {
    match value {
        Yaml::Array(items) => items.iter().flat_map(strings).collect(),
        Yaml::String(text) => vec![text.clone()],
        _ => Vec::new(),
    }
}

/// Every string scalar under `value`, keys included, joined by newlines.
fn all_text(value: &Yaml) -> String {
    match value {
        Yaml::Array(items) => items.iter().map(all_text).collect::<Vec<_>>().join("\n"),
        Yaml::Hash(map) => map
            .iter()
            .flat_map(|(key, value)| [all_text(key), all_text(value)])
            .collect::<Vec<_>>()
            .join("\n"),
        Yaml::String(text) => text.clone(),
        _ => String::new(),
    }
}

/// Shell script text as lines, `\` continuations joined.
fn script_lines(script: &str) -> Vec<String> {
    script
        .replace("\\\n", " ")
        .lines()
        .map(str::to_string)
        .collect()
}

/// The matrix entries of a job (`[{}]` without a matrix), each as (name, value) pairs.
fn matrix_entries(entries: &Yaml) -> Vec<Vec<(String, String)>> {
    let Some(entries) = entries.as_vec() else {
        return vec![Vec::new()];
    };
    entries
        .iter()
        .map(|entry| {
            let map = entry.as_hash().expect("a matrix entry is a mapping");
            map.iter()
                .map(|(key, value)| {
                    let value = value.as_str().expect("a matrix value is a string");
                    (key.as_str().unwrap().to_string(), value.to_string())
                })
                .collect()
        })
        .collect()
}

/// Each job of a GitHub Actions workflow once per entry of its matrix, with
/// `${{ matrix.NAME }}` filled in.
fn github_job_runs(workflow: &Yaml) -> Vec<JobRun> {
    let mut runs = Vec::new();
    let jobs = workflow["jobs"].as_hash().expect("a workflow has jobs");
    for (name, job) in jobs {
        for entry in matrix_entries(&job["strategy"]["matrix"]["include"]) {
            let fill = |text: &str| {
                let text = entry.iter().fold(text.to_string(), |text, (key, value)| {
                    text.replace(&format!("${{{{ matrix.{key} }}}}"), value)
                });
                fill_ci_values(&text)
            };
            let mut run = JobRun {
                name: format!("job {} {entry:?}", name.as_str().unwrap()),
                text: fill(&all_text(job)),
                ..JobRun::default()
            };
            for step in job["steps"].as_vec().expect("a job has steps") {
                if let Some(script) = step["run"].as_str() {
                    run.shell_lines.extend(script_lines(&fill(script)));
                }
                let uses = step["uses"].as_str().unwrap_or_default();
                if uses_stallbench_action(uses) {
                    let line = action_command_line(&step["with"]);
                    run.shell_lines.extend(script_lines(&fill(&line)));
                }
                let published = if uses.starts_with("actions/upload-artifact@") {
                    Some(("artifact", &step["with"]["path"]))
                } else if uses.starts_with("mikepenz/action-junit-report@") {
                    Some(("test report", &step["with"]["report_paths"]))
                } else {
                    None
                };
                if let Some((what, paths)) = published {
                    let condition = step["if"].as_str().unwrap_or_default();
                    assert!(
                        condition.contains("always()"),
                        "{}: the {what} step runs only on success; add `if: always()`",
                        run.name
                    );
                    for path in strings(paths) {
                        run.published.push((what.to_string(), fill(&path)));
                    }
                }
            }
            runs.push(run);
        }
    }
    runs
}

/// Each job of a GitLab CI file once per entry of its `parallel: matrix`,
/// with `$NAME` and `${NAME}` filled in.
fn gitlab_job_runs(pipeline: &Yaml) -> Vec<JobRun> {
    let mut runs = Vec::new();
    let jobs = pipeline.as_hash().expect("a pipeline is a mapping");
    for (name, job) in jobs.iter().filter(|(_, job)| !job["script"].is_badvalue()) {
        for entry in matrix_entries(&job["parallel"]["matrix"]) {
            let fill = |text: &str| {
                let text = entry.iter().fold(text.to_string(), |text, (key, value)| {
                    text.replace(&format!("${{{key}}}"), value)
                        .replace(&format!("${key}"), value)
                });
                fill_ci_values(&text)
            };
            let mut run = JobRun {
                name: format!("job {} {entry:?}", name.as_str().unwrap()),
                text: fill(&all_text(job)),
                ..JobRun::default()
            };
            for part in ["before_script", "script", "after_script"] {
                for script in strings(&job[part]) {
                    run.shell_lines.extend(script_lines(&fill(&script)));
                }
            }
            let artifacts = &job["artifacts"];
            let published = strings(&artifacts["paths"])
                .into_iter()
                .map(|path| ("artifact", path))
                .chain(
                    strings(&artifacts["reports"]["junit"])
                        .into_iter()
                        .map(|path| ("test report", path)),
                );
            for (what, path) in published {
                run.published.push((what.to_string(), fill(&path)));
            }
            assert_eq!(
                artifacts["when"].as_str(),
                Some("always"),
                "{}: artifacts are kept only on success; add `when: always`",
                run.name
            );
            runs.push(run);
        }
    }
    runs
}

/// The job runs of the pipeline `path` (relative to the root), by its kind.
fn pipeline_job_runs(path: &str) -> Vec<JobRun> {
    let document = yaml_document(path);
    match path.contains("github") {
        true => github_job_runs(&document),
        false => gitlab_job_runs(&document),
    }
}

/// The paths a job names that start with its results folder `out`: the
/// folder itself (with or without `/`) or a file in it.
fn paths_under(text: &str, out: &str) -> Vec<String> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "-_./".contains(c);
    text.match_indices(out)
        .filter(|(start, _)| !text[..*start].ends_with(is_path_char))
        .map(|(start, _)| {
            let rest = &text[start..];
            let end = rest.find(|c| !is_path_char(c)).unwrap_or(rest.len());
            rest[..end].to_string()
        })
        .collect()
}

/// Whether `path` is the results folder `out` or a file stallbench writes into it.
fn is_results_path(path: &str, out: &str) -> bool {
    let Some(rest) = path.strip_prefix(out) else {
        return false;
    };
    let name = rest.trim_start_matches('/');
    name.is_empty() || (rest.starts_with('/') && results::is_run_file(name))
}

#[test]
fn the_ci_pipelines_run_real_commands_and_publish_what_stallbench_writes() {
    for (pipeline, job_runs) in PIPELINES {
        let runs = pipeline_job_runs(pipeline);
        assert_eq!(runs.len(), job_runs, "{pipeline}: {runs:#?}");
        for run in &runs {
            let commands: Vec<Vec<String>> = run
                .shell_lines
                .iter()
                .filter_map(|line| stallbench_arguments(&shell_words(line)?))
                .collect();
            assert_eq!(commands.len(), 1, "{pipeline} {}: {run:#?}", run.name);
            let arguments = &commands[0];
            let quoted = arguments.join(" ");
            assert!(!quoted.contains('$'), "{pipeline}: unfilled `{quoted}`");
            if let Err(err) = check_command(arguments) {
                panic!("{pipeline} {}: `stallbench {quoted}`: {err}", run.name);
            }
            let out = arguments
                .iter()
                .skip_while(|word| *word != "--out")
                .nth(1)
                .unwrap_or_else(|| panic!("{pipeline}: `{quoted}` has no --out"));
            let kinds: Vec<&str> = run
                .published
                .iter()
                .map(|(what, _)| what.as_str())
                .collect();
            assert!(
                kinds.contains(&"artifact") && kinds.contains(&"test report"),
                "{pipeline} {}: uploads and publishes {:?}",
                run.name,
                run.published
            );
            for (what, path) in &run.published {
                assert!(
                    is_results_path(path, out),
                    "{pipeline} {}: the {what} {path} is not {out} or a file stallbench writes there",
                    run.name
                );
                if what == "test report" {
                    assert_eq!(*path, format!("{out}/{}", results::JUNIT_XML));
                }
            }
            let named = paths_under(&run.text, out);
            for path in &named {
                assert!(
                    is_results_path(path, out),
                    "{pipeline} {}: names {path}, which stallbench does not write",
                    run.name
                );
            }
            let comment = format!("{out}/{}", results::PR_COMMENT_MD);
            assert!(
                named.contains(&comment),
                "{pipeline} {}: posts no {comment}",
                run.name
            );
        }
    }
}

#[test]
fn a_wrong_file_or_an_unfilled_value_in_a_pipeline_is_caught() {
    assert!(is_results_path("results/ci/", "results/ci"));
    assert!(is_results_path("results/ci/junit.xml", "results/ci"));
    assert!(!is_results_path(
        "results/ci/junit-report.xml",
        "results/ci"
    ));
    assert!(!is_results_path("results/cix/junit.xml", "results/ci"));
    assert_eq!(
        paths_under(
            "cp results/ci/pr-comment.md note.md; x=old/results/ci/a",
            "results/ci"
        ),
        ["results/ci/pr-comment.md"]
    );
    let workflow = YamlLoader::load_from_str(
        "jobs:\n  j:\n    strategy:\n      matrix:\n        include:\n          - w: add-column\n\
         \x20   steps:\n      - run: stallbench compare ${{ matrix.w }} --out r\n",
    )
    .unwrap();
    let runs = github_job_runs(&workflow[0]);
    assert_eq!(
        runs[0].shell_lines,
        ["stallbench compare add-column --out r"]
    );
    let pipeline = YamlLoader::load_from_str(
        "j:\n  parallel:\n    matrix:\n      - W: create-index\n  script:\n    - stallbench compare \"$W\" --out r\n  artifacts:\n    when: always\n",
    )
    .unwrap();
    let runs = gitlab_job_runs(&pipeline[0]);
    assert_eq!(
        runs[0].shell_lines,
        ["stallbench compare \"create-index\" --out r"]
    );
}

/// Every input given: each becomes its flag (a list input one flag per
/// word, a glob as written even where files match it), and the command
/// parses with the real command-line definition.
#[test]
fn every_input_of_the_action_becomes_its_flag() {
    let with = YamlLoader::load_from_str(
        "migrations: db/migrations\n\
         layout: up-down\n\
         files: |\n  *.up.sql\n  0???.sql\n\
         down-files: '*.down.sql *_down.sql'\n\
         order: name\n\
         out-of-order: apply\n\
         tool-table: migrations\n\
         rows: 10000 orders=500\n\
         table-rows: orders=50000000 users=1200000\n\
         sizes-from: postgres://reader@staging/app\n\
         hold: 5s\n\
         duration: 9s\n\
         replica: 'true'\n",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("0001_init.up.sql"), "").unwrap();
    let arguments = action_arguments(&with[0], dir.path());
    let line = arguments.join(" ");
    for flags in [
        "--layout up-down",
        "--files *.up.sql --files 0???.sql",
        "--down-files *.down.sql --down-files *_down.sql",
        "--order name",
        "--out-of-order apply",
        "--tool-table migrations",
        "--rows 10000 --rows orders=500",
        "--table-rows orders=50000000 --table-rows users=1200000",
        "--sizes-from postgres://reader@staging/app",
        "--hold 5s --duration 9s --replica",
    ] {
        assert!(line.contains(flags), "{flags}: {line}");
    }
    let filled: Vec<String> = arguments.iter().map(|word| fill_ci_values(word)).collect();
    if let Err(err) = check_command(&filled) {
        panic!("{ACTION}: `{line}`: {err}");
    }
    // --seed instead of --rows, and replica false: no --replica.
    let with = YamlLoader::load_from_str("migrations: db/migrations\nseed: my seed.sql\n").unwrap();
    let arguments = action_arguments(&with[0], dir.path());
    let at = arguments.iter().position(|word| word == "--seed").unwrap();
    assert_eq!(arguments[at + 1], "my seed.sql");
    assert!(
        !arguments.contains(&"--replica".to_string()),
        "{arguments:?}"
    );
    assert!(!arguments.contains(&"--rows".to_string()), "{arguments:?}");
}

#[test]
fn the_action_builds_stallbench_from_its_own_source_and_passes_every_input_as_env() {
    let action = yaml_document(ACTION);
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    let steps = action["runs"]["steps"].as_vec().unwrap();
    let scripts: Vec<&str> = steps
        .iter()
        .filter_map(|step| step["run"].as_str())
        .collect();
    // Built from the action's folder, never from the repository that uses it.
    assert!(
        scripts
            .iter()
            .any(|run| run.contains("cargo install --path \"$GITHUB_ACTION_PATH\" --locked")),
        "{scripts:#?}"
    );
    assert!(
        !scripts.iter().any(|run| run.contains("--path .")),
        "{scripts:#?}"
    );
    // The inputs reach the shell as env, never spliced into a script, and
    // each input is used.
    for run in &scripts {
        assert!(
            !run.contains("${{"),
            "{ACTION}: an expression spliced into a script: {run}"
        );
    }
    let check = action_check_step(&action);
    let env = all_text(&check["env"]);
    for (input, _) in action["inputs"].as_hash().unwrap() {
        let input = input.as_str().unwrap();
        assert!(
            env.contains(&format!("${{{{ inputs.{input} }}}}")),
            "{ACTION}: input {input} unused"
        );
    }
    // The build is cached by stallbench's version and source alone (not by
    // the PostgreSQL major, cached apart), and the log says when it was cold.
    let caches: Vec<&Yaml> = (steps.iter())
        .filter(|step| {
            step["uses"]
                .as_str()
                .is_some_and(|uses| uses.starts_with("actions/cache@"))
        })
        .collect();
    let build = caches
        .iter()
        .find(|step| step["id"].as_str() == Some("build-cache"))
        .expect("a cache step with id build-cache");
    let key = build["with"]["key"].as_str().unwrap();
    assert!(
        key.contains("${{ steps.source.outputs.version }}")
            && key.contains("${{ steps.source.outputs.hash }}")
            && !key.contains("pg-version"),
        "{key}"
    );
    let install = (scripts.iter())
        .find(|run| run.contains("cargo install"))
        .unwrap();
    assert!(
        install.contains("cold cache") && install.contains("warm cache"),
        "{install}"
    );
    // With only the required input, the command parses and builds its config.
    let with = YamlLoader::load_from_str("migrations: db/migrations").unwrap();
    let line = fill_ci_values(&action_command_line(&with[0]));
    let arguments = stallbench_arguments(&shell_words(&line).unwrap()).unwrap();
    assert_eq!(arguments[..2], ["check", "db/migrations"], "{line}");
    if let Err(err) = check_command(&arguments) {
        panic!("{ACTION}: `{line}`: {err}");
    }
}
