//! How long the recommended strategy's run lasts when the deployed one
//! failed: long enough to show [`needed_after_commit_s`] of traffic after
//! its migration commits. A retry whose tries follow a fixed schedule
//! commits at its first try after the blocker lets go, which is known
//! before the run: such a run is made that long from the start, instead of
//! run at `--duration` and then again, longer (every default check whose
//! deploy failed ran its recommended strategy twice: the blocker lets go
//! at 11 s, `retry` commits at about 13.5 s, 1.5 s before the end of 15).
//! Any other run is lengthened after it ran, as before.

use crate::config::{CheckConfig, Config};
use crate::engine::postgres::check_verdict::applied::{needed_after_commit_s, not_applied};
use crate::engine::postgres::check_verdict::breakage::breakage;
use crate::expect;
use crate::metrics::RunReport;
use crate::strategy::{Backoff, Jitter, Strategy};

/// The length in seconds to run strategy `index` of `config` with from the
/// start, given the runs so far in `report`: `Some` when it is the
/// recommended strategy, the deployed one's run (in `report`) failed (a
/// budget, a break, a migration that did not apply), and its predicted
/// commit ([`predicted_commit_s`]) leaves less than
/// [`needed_after_commit_s`] before the end of `--duration`; at most twice
/// `--duration`, as a lengthened run.
pub(super) fn run_s_from_start(
    check: &CheckConfig,
    config: &Config,
    report: &RunReport,
    index: usize,
) -> Option<f64> {
    let (deploy, recommend) = (&check.deploy.name, &check.recommend.name);
    let strategy = config.strategies.get(index)?;
    if deploy == recommend || strategy.name != *recommend {
        return None;
    }
    let deployed = report
        .strategies
        .iter()
        .find(|run| run.strategy == *deploy)?;
    let passes = expect::evaluate(&config.expectations, report)
        .iter()
        .filter(|result| result.expectation.strategy == *deploy)
        .all(|result| result.verdict == expect::Verdict::Pass);
    if passes && breakage(deployed).is_none() && not_applied(deployed).is_none() {
        return None;
    }
    let committed_s = predicted_commit_s(config, &strategy.strategy)?;
    let planned_s = config.load.duration.as_secs_f64();
    let needed_s = needed_after_commit_s(check.budgets.max_stall_s);
    if planned_s - committed_s >= needed_s {
        return None;
    }
    Some((committed_s + needed_s + 1.0).ceil().min(2.0 * planned_s))
}

/// When a retry with a fixed schedule (no jitter) starts its first try
/// after the blocker ends, on the run clock: the try that takes the lock,
/// the blocker being made to block the migration. `None` for any other
/// strategy, a run without a blocker, or tries that run out first.
fn predicted_commit_s(config: &Config, strategy: &Strategy) -> Option<f64> {
    let Strategy::LockTimeoutRetry(policy) = strategy else {
        return None;
    };
    if let crate::strategy::Schedule::Uniform {
        backoff:
            Backoff::Exponential {
                jitter: Jitter::Full | Jitter::AddUpToHalf,
                ..
            },
        ..
    } = &policy.schedule
    {
        return None;
    }
    let blocker = config.blocker.as_ref()?;
    let released_s = (blocker.at + blocker.hold).as_secs_f64();
    let mut at_s = config.ddl.as_ref()?.at.as_secs_f64();
    // No jitter: the sleeps draw nothing from it.
    let mut rng = rand::rng();
    for try_number in 1..=policy.max_tries().min(1000) {
        if at_s >= released_s {
            return Some(at_s);
        }
        at_s += (policy.lock_timeout(try_number) + policy.sleep_after(try_number, &mut rng))
            .as_secs_f64();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::preset;

    /// The config of a check's runs, as `stallbench check` with `hold_s` and `duration_s`.
    fn run_config(hold_s: Option<u64>, duration_s: Option<u64>) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let args = crate::cli::CheckArgs {
            hold: hold_s.map(std::time::Duration::from_secs),
            duration: duration_s.map(std::time::Duration::from_secs),
            out: Some(dir.path().join("out")),
            ..Default::default()
        };
        let check = CheckConfig::new(dir.path(), &args).unwrap();
        super::super::design::base_config(&check)
    }

    #[test]
    fn the_default_retry_commits_at_its_first_try_after_the_blocker() {
        let config = run_config(None, None);
        // Tries at 1.5, 3, 5.5 s (0.5 s lock_timeout, sleeps 1, 2 s); the
        // blocker lets go at 5 s (the default 4 s hold); the third try takes the lock.
        let retry = preset("retry").unwrap().strategy;
        assert_eq!(predicted_commit_s(&config, &retry), Some(5.5));
        // With a 10 s hold the blocker lets go at 11 s and the fifth try,
        // at 13.5 s (sleeps 3 and 4 s after the third and fourth), does.
        let long = run_config(Some(10), None);
        assert_eq!(predicted_commit_s(&long, &retry), Some(13.5));
        let naive = preset("naive").unwrap().strategy;
        assert_eq!(predicted_commit_s(&config, &naive), None);
        let short = run_config(Some(3), Some(8));
        assert_eq!(predicted_commit_s(&short, &retry), Some(5.5));
    }
}
