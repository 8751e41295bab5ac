//! Migration strategies: how the DDL injector runs the migration, as plain data,
//! and the backoff schedules between tries. `scenario/ddl.rs` executes them.

use std::time::Duration;

use rand::RngExt;

/// How to run the migration.
#[derive(Debug, Clone, PartialEq)]
pub enum Strategy {
    /// The statement alone, no timeouts: it waits in the lock queue as long as it takes.
    Plain,
    /// `SET lock_timeout`, give up quickly, sleep, try again.
    LockTimeoutRetry(RetryPolicy),
}

/// The settings of `lock-timeout-retry`.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub lock_timeout: Duration,
    /// At least 1.
    pub max_tries: u32,
    pub statement_timeout: Option<Duration>,
    pub backoff: Backoff,
}

/// The sleep between two tries.
#[derive(Debug, Clone, PartialEq)]
pub enum Backoff {
    /// `min(try * step, cap)`: the reference's `sleep min(try, 5)` is step 1 s, cap 5 s.
    Linear { step: Duration, cap: Duration },
    /// `min(base * 2^(try-1), cap)`; with full jitter a uniform random part of that.
    Exponential {
        base: Duration,
        cap: Duration,
        jitter: bool,
    },
}

impl Backoff {
    /// The sleep after failed try number `try_number` (1-based).
    pub fn sleep_after(&self, try_number: u32, rng: &mut impl rand::Rng) -> Duration {
        match self {
            Backoff::Linear { step, cap } => step.saturating_mul(try_number).min(*cap),
            Backoff::Exponential { base, cap, jitter } => {
                let doublings = try_number.saturating_sub(1).min(63);
                let factor = 1u64 << doublings;
                let full =
                    Duration::from_nanos((base.as_nanos() as u64).saturating_mul(factor)).min(*cap);
                if *jitter && !full.is_zero() {
                    Duration::from_nanos(rng.random_range(0..=full.as_nanos() as u64))
                } else {
                    full
                }
            }
        }
    }
}

/// A strategy with the name the workload or the command line gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedStrategy {
    pub name: String,
    pub strategy: Strategy,
}

impl NamedStrategy {
    /// One line for run.json and messages, e.g. `lock-timeout-retry: lock_timeout 500ms, 10 tries, linear 1s cap 5s`.
    pub fn describe(&self) -> String {
        match &self.strategy {
            Strategy::Plain => "plain: the statement alone, no timeouts".to_string(),
            Strategy::LockTimeoutRetry(policy) => {
                let backoff = match &policy.backoff {
                    Backoff::Linear { step, cap } => format!(
                        "linear backoff {} per try, cap {}",
                        humantime::format_duration(*step),
                        humantime::format_duration(*cap)
                    ),
                    Backoff::Exponential { base, cap, jitter } => format!(
                        "exponential backoff from {}, cap {}{}",
                        humantime::format_duration(*base),
                        humantime::format_duration(*cap),
                        if *jitter { ", full jitter" } else { "" }
                    ),
                };
                let statement_timeout = policy
                    .statement_timeout
                    .map(|timeout| {
                        format!(
                            ", statement_timeout {}",
                            humantime::format_duration(timeout)
                        )
                    })
                    .unwrap_or_default();
                format!(
                    "lock-timeout-retry: lock_timeout {}{}, at most {} tries, {}",
                    humantime::format_duration(policy.lock_timeout),
                    statement_timeout,
                    policy.max_tries,
                    backoff
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> rand::rngs::SmallRng {
        rand::rngs::SmallRng::seed_from_u64(7)
    }

    #[test]
    fn linear_is_the_reference_min_try_five() {
        let backoff = Backoff::Linear {
            step: Duration::from_secs(1),
            cap: Duration::from_secs(5),
        };
        let sleeps: Vec<u64> = (1..=7)
            .map(|n| backoff.sleep_after(n, &mut rng()).as_secs())
            .collect();
        assert_eq!(sleeps, vec![1, 2, 3, 4, 5, 5, 5]);
    }

    #[test]
    fn exponential_doubles_up_to_the_cap() {
        let backoff = Backoff::Exponential {
            base: Duration::from_millis(100),
            cap: Duration::from_millis(3200),
            jitter: false,
        };
        let sleeps: Vec<u128> = (1..=8)
            .map(|n| backoff.sleep_after(n, &mut rng()).as_millis())
            .collect();
        assert_eq!(sleeps, vec![100, 200, 400, 800, 1600, 3200, 3200, 3200]);
        // Far past 64 doublings it still saturates at the cap.
        assert_eq!(
            backoff.sleep_after(500, &mut rng()),
            Duration::from_millis(3200)
        );
    }

    #[test]
    fn full_jitter_stays_within_the_exponential_bound() {
        let backoff = Backoff::Exponential {
            base: Duration::from_millis(10),
            cap: Duration::from_secs(60),
            jitter: true,
        };
        let mut rng = rng();
        for try_number in 1..=12 {
            let bound = Duration::from_millis(10 * (1 << (try_number - 1)));
            let mut distinct = std::collections::BTreeSet::new();
            for _ in 0..50 {
                let sleep = backoff.sleep_after(try_number, &mut rng);
                assert!(sleep <= bound, "try {try_number}: {sleep:?} > {bound:?}");
                distinct.insert(sleep);
            }
            assert!(distinct.len() > 10, "jitter should vary: {distinct:?}");
        }
    }
}
