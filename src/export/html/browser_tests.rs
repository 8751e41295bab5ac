//! `report.html` in a real browser: Debian's chromium, headless, opens the
//! page from disk with `#selftest=STRATEGY:SECOND`, and the page's own hook
//! (app.js) hovers that second and writes what it saw into `<pre
//! id="selftest">`, which `--dump-dom` prints: the errors and CSP violations
//! it caught, the requests it made, the charts that drew nothing, the
//! readout, where every synchronised chart's cursor went.
//!
//! They are the unit tier's only tests that need more than the crate: they
//! are marked `#[ignore]` so that `cargo test --lib` needs no browser, and
//! `scripts/test` (the README's test command, which CI runs) runs them with
//! `--include-ignored` after installing chromium; without chromium they fail
//! with the command that installs it. `STALLBENCH_CHROMIUM` names another
//! binary.

use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::run_page;
use super::tests::{HOSTILE, example_page, hostile_report};

/// One browser at a time: each takes a core for a second or two.
static BROWSER: Mutex<()> = Mutex::new(());

/// What the page's self-test saw.
#[derive(Debug, Deserialize)]
pub(crate) struct SelfTest {
    pub errors: Vec<String>,
    pub canvases: u32,
    pub charts: u32,
    pub blank: Vec<String>,
    pub hover: Option<Hover>,
    pub synced: Vec<Option<u32>>,
    pub resources: u32,
    pub pwned: bool,
}

/// The readout after the hover.
#[derive(Debug, Deserialize)]
pub(crate) struct Hover {
    pub strategy: Option<String>,
    pub second: f64,
    pub tps: f64,
    pub chain: String,
    pub text: String,
}

fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("STALLBENCH_CHROMIUM") {
        return PathBuf::from(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no chromium on PATH: the page tests need a real browser; install it with \
                 `apt-get install chromium` (.ci/run does) or name one in STALLBENCH_CHROMIUM"
            )
        })
}

/// Opens `page` (written into a temp folder) at `#selftest=spec` and returns
/// what the page's self-test wrote.
pub(crate) fn open(page: &str, spec: &str) -> SelfTest {
    let _browser = BROWSER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.html");
    std::fs::write(&path, page).unwrap();
    let fragment: String =
        percent_encoding::utf8_percent_encode(spec, percent_encoding::NON_ALPHANUMERIC).to_string();
    let url = format!("file://{}#selftest={fragment}", path.display());
    let dom = dump_dom(&dir.path().join("profile"), &url);
    let start = dom
        .find("<pre id=\"selftest\" hidden=\"\">")
        .map(|at| at + "<pre id=\"selftest\" hidden=\"\">".len())
        .unwrap_or_else(|| panic!("no self-test element in the page chromium printed:\n{dom}"));
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    assert!(!json.is_empty(), "the self-test did not run:\n{dom}");
    serde_json::from_str(&json).unwrap_or_else(|err| panic!("{err}: {json}"))
}

/// chromium's DOM of `url` once it loaded; killed with its whole process
/// group if it takes over a minute.
fn dump_dom(profile: &Path, url: &str) -> String {
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,2400",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|err| panic!("starting chromium: {err}"));
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            // SAFETY: kill(2) on the process group this test started.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("chromium did not finish {url} within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Its helpers (renderer, zygote) end with it; none may outlive the test.
    // SAFETY: kill(2) on the process group this test started.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    reader.join().unwrap()
}

#[test]
#[ignore = "opens chromium; scripts/test runs it (cargo test -- --include-ignored)"]
fn the_example_page_draws_every_chart_and_reads_naive_second_10() {
    let seen = open(&example_page(), "naive:10");
    assert_eq!(seen.errors, Vec::<String>::new(), "{seen:?}");
    assert_eq!(seen.resources, 0, "no request: {seen:?}");
    // Two strategies, each TPS, latency and lock waiters (no failure in the example).
    assert_eq!((seen.charts, seen.canvases), (6, 6), "{seen:?}");
    assert_eq!(seen.blank, Vec::<String>::new(), "charts that drew nothing");
    let hover = seen.hover.as_ref().expect("the hover");
    assert_eq!(hover.strategy.as_deref(), Some("naive"), "{hover:?}");
    assert_eq!((hover.second, hover.tps), (10.0, 0.0), "{hover:?}");
    assert!(
        hover.chain.starts_with("report (pid ")
            && hover.chain.contains("holds AccessShareLock on orders")
            && hover.chain.contains("ddl (pid ")
            && hover.text.contains("0 tps"),
        "{hover:?}"
    );
    assert!(
        seen.synced.iter().all(|index| *index == Some(10)),
        "every chart's cursor on second 10: {:?}",
        seen.synced
    );
    assert!(!seen.pwned);
}

#[test]
#[ignore = "opens chromium; scripts/test runs it (cargo test -- --include-ignored)"]
fn the_replica_example_page_draws_the_standby_and_reads_it_in_retry_second_10() {
    let page = super::tests::example_page_of("results/example-replica");
    let seen = open(&page, "retry:10");
    assert_eq!(seen.errors, Vec::<String>::new(), "{seen:?}");
    // Three strategies, each TPS, latency, lock waiters and the standby.
    assert_eq!((seen.charts, seen.canvases), (12, 12), "{seen:?}");
    assert_eq!(seen.blank, Vec::<String>::new(), "charts that drew nothing");
    let hover = seen.hover.as_ref().expect("the hover");
    // Readers on both servers: the primary's flow, the standby's are at 0.
    assert_eq!(hover.second, 10.0, "{hover:?}");
    assert!(hover.tps > 0.0, "the primary's readers flow: {hover:?}");
    assert!(
        hover.text.contains("replica: 0 tps, replay lag ")
            && hover
                .text
                .contains("4 waiting for a lock, replay waited for a lock")
            && hover.chain.contains("startup (replica, pid "),
        "{hover:?}"
    );
}

#[test]
#[ignore = "opens chromium; scripts/test runs it (cargo test -- --include-ignored)"]
fn a_hostile_page_runs_none_of_its_text_and_shows_it() {
    let text = HOSTILE.join(" ");
    let report = hostile_report(&text);
    let name = report.strategies[0].strategy.clone();
    let seen = open(&run_page(&report, &[]).unwrap(), &format!("{name}:5"));
    assert!(!seen.pwned, "{seen:?}");
    assert_eq!(seen.errors, Vec::<String>::new(), "{seen:?}");
    let hover = seen.hover.as_ref().expect("the hover");
    assert_eq!(hover.strategy.as_deref(), Some(name.as_str()), "{hover:?}");
    assert!(hover.text.contains(&text), "{hover:?}");
}
