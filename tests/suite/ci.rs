//! stallbench as a CI job sees it, with `CI=true` in its environment: the
//! regression gate's bounds on the worst seconds fail the naive ALTER's stall
//! and pass the retry, `pr-comment.md` and the step summary put the verdict
//! first, a run without a bound says so, and no progress line or control
//! character reaches the log.

use std::path::Path;

use crate::common::*;
use stallbench::expect::Verdict;
use stallbench::export::ci::ExpectationRecord;
use stallbench::results::PR_COMMENT_MD;

/// The shortened add-column on a 6 s clock: the report holds its lock from 1 s
/// to 4 s and the ALTER starts at 1.5 s. Open loop (`--rate`), so that the
/// requests that queue behind the lock count their wait in the per-second p99.
const SIX_SECONDS: [&str; 10] = [
    "--duration",
    "6s",
    "--blocker-at",
    "1s",
    "--blocker-hold",
    "3s",
    "--ddl-at",
    "1500ms",
    "--rate",
    "200",
];

/// The short add-column on a database of its own on the shared server.
fn short_add_column() -> ShortRun {
    ShortRun::on_shared_server(&reference())
}

/// What a finished command wrote, after checking it wrote no control
/// character but newlines and no progress line.
fn plain_output(output: &std::process::Output) -> (String, String) {
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(
            !text.contains(|c: char| c.is_control() && c != '\n'),
            "a control character on {name}: {text:?}"
        );
    }
    (stdout, stderr)
}

fn progress_lines(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|line| line.starts_with("progress: "))
        .count()
}

fn read_comment(out: &Path) -> String {
    std::fs::read_to_string(out.join(PR_COMMENT_MD)).unwrap()
}

#[test]
fn the_worst_second_bounds_fail_the_stall_and_the_comment_names_them() {
    let _cpus = cpus_shared();
    let run = short_add_column();
    let summary_file = run.dir.path().join("step-summary.md");
    let assert = stallbench_command()
        .env("CI", "true")
        .env("GITHUB_STEP_SUMMARY", &summary_file)
        .arg("compare")
        .arg(&run.workload)
        .args(["--db-url", run.db_url().unwrap()])
        .args(SIX_SECONDS)
        .args(["--expect", "naive.min_worst_second_tps=1"])
        .args(["--expect", "naive.max_worst_second_p99_ms=1500"])
        .args(["--expect", "retry.min_worst_second_tps=1"])
        .args(["--expect", "retry.max_worst_second_p99_ms=1500"])
        .args(["--expect", "retry.max_ddl_s=10"])
        .arg("--out")
        .arg(&run.out)
        .timeout(std::time::Duration::from_secs(180))
        .assert();
    let (stdout, stderr) = plain_output(assert.get_output());
    assert_eq!(
        assert.get_output().status.code(),
        Some(3),
        "{stdout}\n{stderr}"
    );
    assert_eq!(progress_lines(&stderr), 0, "CI=true: {stderr}");

    let records: Vec<ExpectationRecord> = read_records(&run.out.join("expectations.csv"));
    let verdicts: Vec<(String, Verdict)> = records
        .iter()
        .map(|r| (format!("{}.{}", r.strategy, r.expectation), r.verdict))
        .collect();
    let expected = [
        ("naive.min_worst_second_tps", Verdict::Fail),
        ("naive.max_worst_second_p99_ms", Verdict::Fail),
        ("retry.min_worst_second_tps", Verdict::Pass),
        ("retry.max_worst_second_p99_ms", Verdict::Pass),
        ("retry.max_ddl_s", Verdict::Pass),
    ]
    .map(|(name, verdict)| (name.to_string(), verdict));
    assert_eq!(verdicts, expected, "{records:#?}\n{stdout}");

    let comment = read_comment(&run.out);
    let lines: Vec<&str> = comment.lines().collect();
    assert_eq!(
        lines[0], "<!-- stallbench:short-add-column -->",
        "{comment}"
    );
    assert_eq!(lines[1], "## stallbench: short-add-column", "{comment}");
    assert_eq!(lines[3], "**FAIL**: 2 of 5 bounds failed:", "{comment}");
    assert!(
        lines[5].starts_with("- `naive.min_worst_second_tps >= 1 tps`: measured 0 tps"),
        "{comment}"
    );
    assert!(
        lines[6].starts_with("- `naive.max_worst_second_p99_ms <= 1500 ms`: measured "),
        "{comment}"
    );
    assert!(comment.contains("### Ranking"), "{comment}");

    let summary = std::fs::read_to_string(&summary_file).unwrap();
    let headings: Vec<&str> = summary.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(headings[0], "## stallbench: short-add-column", "{summary}");
    assert!(
        headings[1..].iter().all(|h| h.starts_with("### ")),
        "{summary}"
    );
    let verdict = summary.split("\n\n").nth(1).unwrap();
    assert_eq!(verdict, "**FAIL**: 2 of 5 bounds failed:", "{summary}");
}

/// `run --load-only` of the short workload for 1 s with `CI=true`, plus
/// `args`, started (each on its own database).
fn load_only_in_ci(run: &ShortRun, args: &[&str]) -> std::process::Child {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("stallbench"));
    command
        .env_remove("DATABASE_URL")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("CI", "true")
        .arg("run")
        .arg(&run.workload)
        .args(["--db-url", run.db_url().unwrap()])
        .args(["--load-only", "--duration", "1s", "--out"])
        .arg(&run.out)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    command.spawn().unwrap()
}

/// What the started run wrote, once it exited 0 (see [`plain_output`]).
fn finished(child: std::process::Child) -> (String, String) {
    let output = child.wait_with_output().unwrap();
    let texts = plain_output(&output);
    assert_eq!(output.status.code(), Some(0), "{texts:?}");
    texts
}

#[test]
fn in_ci_a_run_without_bounds_says_so_and_progress_needs_the_flag() {
    let _cpus = cpus_shared();
    // The short workload has no [expect.*]. Both runs at once: no timing is checked.
    let (unbounded, bounded) = (short_add_column(), short_add_column());
    let without = load_only_in_ci(&unbounded, &[]);
    let with = load_only_in_ci(
        &bounded,
        &["--progress", "--expect", "load.min_worst_second_tps=1"],
    );

    let (_, stderr) = finished(without);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("no bounds")).collect();
    assert_eq!(
        warnings,
        [
            "warning: no bounds: the workload has no [expect.*] and no --expect was given, \
          so this run passes whatever it measured"
        ],
        "{stderr}"
    );
    assert_eq!(progress_lines(&stderr), 0, "{stderr}");
    let comment = read_comment(&unbounded.out);
    assert!(
        comment.starts_with(
            "<!-- stallbench:short-add-column -->\n## stallbench: short-add-column\n\n**no bounds**: "
        ),
        "{comment}"
    );

    let (_, stderr) = finished(with);
    assert!(!stderr.contains("no bounds"), "{stderr}");
    assert!(progress_lines(&stderr) >= 1, "--progress: {stderr}");
    let comment = read_comment(&bounded.out);
    let lines: Vec<&str> = comment.lines().collect();
    assert_eq!(lines[0], "<!-- stallbench:short-add-column -->");
    assert_eq!(
        lines[3], "**pass**: 1 of 1 bound met: the workload's expectations of each strategy hold.",
        "{comment}"
    );
    assert!(lines[5].starts_with("**What happened**: "), "{comment}");
}
