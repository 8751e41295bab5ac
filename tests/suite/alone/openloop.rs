//! Each request of an open loop is sent on time (the rest of the topic:
//! `crate::openloop`).

use crate::common::*;
use stallbench::config::Mode;

#[test]
fn below_capacity_each_request_is_sent_on_time() {
    // Alone: the lag is measured in fractions of a millisecond.
    let _cpus = cpus_alone();
    let mut run = ShortRun::on_shared_server(&reference());
    run.args.rate = Some(200.0);
    run.args.duration = Some("5s".to_string());
    let report = run.execute(Mode::LoadOnly);
    let load = &report.strategies[0];

    // The steady state: the first and the last second left out. A millisecond
    // timer makes each request about 1 ms late; the benchmark script carries
    // the precise figure against pgbench -R, this bound is a loose one.
    let steady = &load.seconds[1..load.seconds.len() - 1];
    let mean_lag_ms = steady.iter().map(|row| row.lag_ms).sum::<f64>() / steady.len() as f64;
    assert!(
        mean_lag_ms < 0.5,
        "--rate 200: mean schedule lag {mean_lag_ms:.3} ms, per second {:?}",
        steady.iter().map(|row| row.lag_ms).collect::<Vec<_>>()
    );
}
