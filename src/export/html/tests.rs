//! The page without a browser: its size, that it asks for nothing, that
//! hostile text stays text; `browser_tests` opens it in chromium.

use std::path::Path;

use super::*;
use crate::export::read_report;
use crate::metrics::failures::{FailureCount, FailureKind};
use crate::metrics::locks::LockSample;
use crate::metrics::{DdlAttempt, SecondRow};
use crate::testing::reference_report;

/// The page of `results/example`, drawn from its files as `stallbench plot` does.
pub(super) fn example_page() -> String {
    example_page_of("results/example")
}

/// The page of the example folder `folder`, drawn as `stallbench plot` does.
pub(super) fn example_page_of(folder: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    run_page(
        &read_report(&dir).unwrap(),
        &crate::export::read::read_expectations(&dir).unwrap(),
    )
    .unwrap()
}

/// The JSON document of `page`, unescaped as the browser reads it.
fn page_data_of(page: &str) -> serde_json::Value {
    let start = page.find("id=\"stallbench-data\">").unwrap() + "id=\"stallbench-data\">".len();
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

#[test]
fn the_example_page_is_under_400_kb_and_holds_each_second_and_chain() {
    let page = example_page();
    assert!(page.len() < 400_000, "{} bytes", page.len());
    let data = page_data_of(&page);
    let naive = &data["strategies"][0];
    assert_eq!(naive["name"], "naive");
    assert_eq!(naive["tps"][10], 0, "{}", naive["tps"]);
    let chain_index = naive["chain_at"][10].as_i64().unwrap();
    let chain = naive["chains"][chain_index as usize].as_str().unwrap();
    assert!(
        chain.starts_with("report (pid ")
            && chain.contains("holds AccessShareLock on orders <- ddl (pid ")
            && chain.contains("reader-1..4 wait"),
        "{chain}"
    );
    assert!(page.contains("<p class=\"verdict\">retry "), "the headline");
    // results/example's three bounds, from its expectations.csv.
    assert!(
        page.contains(
            ">pass: 3 of 3 bounds met: the workload&apos;s expectations of each strategy hold. \
             <a href=\"#bounds\">"
        ),
        "the bounds' verdict"
    );
    // What happened, apart from what the bounds expected: naive's outage.
    assert!(
        page.contains(
            "<p class=\"verdict happened\">What happened: retry never stalled traffic (worst \
             second 28% of its baseline); naive stalled traffic for 10 s, 9 s of them without \
             a completed transaction. Ranked first: retry.</p>"
        ),
        "what happened"
    );
    // naive's worst second had no transaction: its latency is the stalled ones'.
    assert!(
        page.contains("<td class=\"num\">10052 stalled</td>"),
        "naive's worst-second latency"
    );
    assert_eq!(page.matches("<td>pass</td>").count(), 3, "a row per bound");
}

#[test]
fn a_one_hour_page_of_four_strategies_is_under_2_mb() {
    let mut report = reference_report();
    let template = report.strategies[0].clone();
    report.strategies = ["naive", "retry", "retry-b", "wait-for-idle"]
        .iter()
        .map(|name| {
            let mut run = template.clone();
            run.strategy = name.to_string();
            run.summary.strategy = name.to_string();
            run.seconds = (0..3600)
                .map(|second| SecondRow {
                    second,
                    tps: 2000 + u64::from(second % 97),
                    failed: 3,
                    lat_p50_ms: 1.234 + f64::from(second % 13) * 0.111,
                    lat_p99_ms: 9.876 + f64::from(second % 17),
                    lat_max_ms: 123.456 + f64::from(second % 19),
                    lock_waiters: second % 5,
                    ..template.seconds[0].clone()
                })
                .collect();
            run.failures = (0..3600)
                .flat_map(|second| {
                    [
                        ("55P03", "canceling statement due to lock timeout"),
                        ("40P01", "deadlock detected"),
                    ]
                    .map(|(code, message)| FailureCount {
                        second,
                        kind: FailureKind::from_cell(code),
                        message: message.to_string(),
                        count: 2,
                    })
                })
                .collect();
            run.attempts = (0..600)
                .map(|attempt| DdlAttempt {
                    attempt: attempt + 1,
                    started_s: f64::from(attempt) * 6.0,
                    ended_s: f64::from(attempt) * 6.0 + 1.0,
                    message: "canceling statement due to lock timeout".to_string(),
                    ..template.attempts[0].clone()
                })
                .collect();
            run.locks.samples = (0..3600)
                .flat_map(|second| {
                    let t_s = f64::from(second) + 0.5;
                    let report = sample(t_s, "report", true, &[]);
                    let ddl = sample(t_s, "ddl", false, &["report"]);
                    [report, ddl]
                })
                .collect();
            run
        })
        .collect();
    let page = run_page(&report, &[]).unwrap();
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
}

fn sample(t_s: f64, role: &str, granted: bool, blocked_by: &[&str]) -> LockSample {
    LockSample {
        t_s,
        pid: 100,
        role: role.to_string(),
        state: "active".to_string(),
        wait_event_type: "Lock".to_string(),
        wait_event: "relation".to_string(),
        lock_mode: "AccessShareLock".to_string(),
        relation: "orders".to_string(),
        granted,
        blocked_by: blocked_by.iter().map(|role| role.to_string()).collect(),
        wait_ms: 10.0,
        server: crate::choices::Side::Primary,
    }
}

#[test]
fn the_page_asks_for_nothing_and_allows_only_its_own_scripts() {
    let page = example_page();
    for request in [
        "http:", "https:", "<link", "@import", "url(", "<img", "src=",
    ] {
        assert!(!page.contains(request), "the page holds {request:?}");
    }
    assert_eq!(
        page.matches("<script").count(),
        4,
        "errors, data, uPlot, app"
    );
    let policy_start = page.find("content=\"default-src 'none'").unwrap();
    let policy = &page[policy_start..policy_start + page[policy_start..].find('>').unwrap()];
    assert_eq!(policy.matches("'sha256-").count(), 4, "{policy}");
    assert!(!policy.contains("unsafe"), "{policy}");
}

#[test]
fn the_script_puts_no_markup_on_the_page() {
    for banned in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "eval(",
        "new Function",
        "document.write",
    ] {
        assert!(!APP_JS.contains(banned), "app.js uses {banned}");
    }
}

/// Text users write, as it could be: markup, a script end, a line separator.
pub(super) const HOSTILE: [&str; 5] = [
    "</script><script>window.__pwned=1</script>",
    "\"><img src=x onerror=window.__pwned=1>",
    "<!-- {{app}} ]]> \u{2028}\u{2029}",
    "'; window.__pwned=1; '",
    "&lt;b&gt; & <b>",
];

/// The reference report with `text` in every field the page shows.
pub(super) fn hostile_report(text: &str) -> crate::metrics::RunReport {
    let mut report = reference_report();
    report.workload = format!("w {text}");
    for (index, run) in report.strategies.iter_mut().enumerate() {
        let name = format!("s{index} {text}");
        run.strategy = name.clone();
        run.summary.strategy = name;
        for attempt in &mut run.attempts {
            attempt.message = text.to_string();
        }
        run.failures.push(FailureCount {
            second: 5,
            kind: FailureKind::from_cell("42703"),
            message: text.to_string(),
            count: 1,
        });
        for sample in &mut run.locks.samples {
            sample.relation = text.to_string();
        }
    }
    report
}

#[test]
fn hostile_text_stays_text_in_every_field() {
    for text in HOSTILE {
        let page = run_page(&hostile_report(text), &[]).unwrap();
        assert_eq!(page.matches("<script").count(), 4, "{text}: {page}");
        assert_eq!(page.matches("</script>").count(), 4, "{text}");
        assert!(!page.contains("<img"), "{text}");
        let data = page_data_of(&page);
        assert_eq!(data["workload"], format!("w {text}"), "{text}");
        assert_eq!(data["strategies"][0]["name"], format!("s0 {text}"));
        let kinds = data["strategies"][0]["failure_kinds"].to_string();
        assert!(kinds.contains("42703"), "{kinds}");
        let body_start = page.find("<body>").unwrap();
        let body_end = page.find("<aside id=\"readout\"").unwrap();
        let body = &page[body_start..body_end];
        assert!(
            !body.contains(text) || !text.contains(['<', '>', '"', '\'', '&']),
            "{body}"
        );
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Any text in the workload name and the messages: still four scripts,
    /// and the data reads back as written.
    #[test]
    fn any_text_keeps_the_page_whole(text in "\\PC{0,40}") {
        let page = run_page(&hostile_report(&text), &[]).unwrap();
        proptest::prop_assert_eq!(page.matches("<script").count(), 4);
        proptest::prop_assert_eq!(page.matches("</script>").count(), 4);
        let data = page_data_of(&page);
        proptest::prop_assert_eq!(data["workload"].as_str().unwrap(), format!("w {text}"));
    }
}

#[test]
fn samples_of_both_servers_at_one_instant_are_two_moments() {
    use crate::export::sentences::describe_chain;
    use crate::metrics::locks::{chain, reference_moment, replica_moment};
    let primary = reference_moment();
    let mut replica = replica_moment();
    let mut samples = [primary.clone(), replica.clone()].concat();
    // Both at 8.2 s, as bad as each other: the first seen stays the worst.
    let (chains, chain_at) = data::chains_per_second(&samples, 10);
    assert_eq!(chains, [describe_chain(&chain(&primary))]);
    assert_eq!(chain_at[8], 0);
    // The standby's readers waited longer: its chain is the second's.
    for sample in replica.iter_mut().filter(|s| !s.granted) {
        sample.wait_ms = 5_000.0;
    }
    samples = [primary, replica.clone()].concat();
    let (chains, chain_at) = data::chains_per_second(&samples, 10);
    assert_eq!(chains, [describe_chain(&chain(&replica))]);
    assert!(
        chains[0].starts_with("report (replica, pid 3026) holds "),
        "{chains:?}"
    );
    assert_eq!(chain_at[8], 0);
}

#[test]
fn the_page_shows_retries_and_failures_by_kind_when_there_are_any() {
    let mut report = reference_report();
    let plain = run_page(&report, &[]).unwrap();
    assert!(!plain.contains(">retried</th>"));
    let naive = &mut report.strategies[0].summary;
    naive.retried = 312;
    naive.retries = 1_024;
    naive.failed_serialization = 2;
    naive.failed = 2;
    let page = run_page(&report, &[]).unwrap();
    for title in [
        "retried",
        "retries",
        "failed serialization",
        "failed deadlock",
        "failed lock timeout",
    ] {
        assert!(
            page.contains(&format!(">{title}</th>")),
            "no column {title}"
        );
    }
    // The summary's sentence and the ranking's note.
    assert!(page.contains("naive: 312 transactions retried (1,024 retries"));
    assert!(page.contains("ranked by those that failed after their last try: serialization 2."));
}
