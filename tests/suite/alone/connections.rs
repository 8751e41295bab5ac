//! 300 clients on the throwaway server, its sessions counted while the run
//! goes on (the rest of the topic: `crate::connections`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::*;
use stallbench::config::Mode;

#[test]
fn three_hundred_clients_run_on_the_throwaway_server() {
    // Alone: the sessions counted are those of the one server this process runs.
    let _cpus = cpus_alone();
    let mut run = ShortRun::throwaway(&small_reference());
    run.args.clients = Some(300);
    run.args.duration = Some(Duration::from_secs(3));

    // Counts the server's client sessions while the run goes on, at its busiest.
    let running = Arc::new(AtomicBool::new(true));
    let sampler = {
        let running = running.clone();
        std::thread::spawn(move || {
            let mut most = 0;
            while running.load(Ordering::Relaxed) {
                most = most.max(own_client_sessions());
                std::thread::sleep(Duration::from_millis(100));
            }
            most
        })
    };
    let report = run.execute(Mode::LoadOnly);
    running.store(false, Ordering::Relaxed);
    let most_sessions = sampler.join().unwrap();

    let load = &report.strategies[0];
    // 300 workers, the observer and the harness's admin session at once.
    assert!(
        most_sessions >= 301,
        "the server saw at most {most_sessions} client sessions"
    );
    assert_eq!(load.summary.lost_connections, 0, "{:?}", load.summary);
    assert_eq!(load.summary.failed, 0, "{:?}", load.summary);
    assert_eq!(load.seconds.len(), 3);
    assert!(
        load.seconds.iter().all(|second| second.tps > 0),
        "tps per second: {:?}",
        load.seconds.iter().map(|s| s.tps).collect::<Vec<_>>()
    );
    // Every client connected and ran: far more transactions than clients.
    assert!(load.summary.transactions >= 300, "{:?}", load.summary);
    assert_run_stopped_its_server(&run.out);
}

/// Client sessions on the unix socket of this test process's own servers now:
/// children of a postmaster the test process started whose title says `[local]`.
fn own_client_sessions() -> usize {
    children_of(std::process::id())
        .into_iter()
        .flat_map(children_of)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains("[local]"))
        })
        .count()
}
