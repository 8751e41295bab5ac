//! Migration strategies: how the DDL injector runs the migration, as plain data,
//! the published presets, and the (lock_timeout, sleep) schedule of each try.
//! `scenario/ddl/` executes them; `presets.rs` is the table of presets, each
//! with where its numbers come from;
//! `statements.rs` reads what a DDL step's text allows inside a transaction.

mod presets;

/// The name of `run --load-only`'s one pseudo-strategy, which an expectation
/// may name too (`[expect.load]`).
pub const LOAD_ONLY_STRATEGY: &str = "load";
pub mod statements;

use std::time::Duration;

use rand::RngExt;

pub use presets::{PRESET_NAMES, PresetSource, preset, preset_source};

/// How to run the migration.
#[derive(Debug, Clone, PartialEq)]
pub enum Strategy {
    /// The statement alone, no timeouts: it waits in the lock queue as long as it takes.
    Plain,
    /// `SET lock_timeout`, give up quickly, sleep, try again.
    LockTimeoutRetry(RetryPolicy),
    /// No timeout; from `grace` after the DDL's start, every `every` terminate the
    /// sessions the server says block the DDL and whose transaction is older
    /// than `older_than`; the DDL is never given up.
    KillBlockers {
        grace: Duration,
        older_than: Duration,
        every: Duration,
    },
    /// pg-osc's `--kill-backends`: each try is `BEGIN; SET LOCAL lock_timeout;
    /// LOCK TABLE ... IN ACCESS EXCLUSIVE MODE; <ddl>; COMMIT` on the tables the DDL
    /// names; after a lock timeout, terminate every other session holding or
    /// awaiting a lock on them and try again, at most `max_tries` tries.
    KillLockHolders {
        lock_timeout: Duration,
        max_tries: u32,
    },
    /// Before each try, wait until no transaction older than `older_than`
    /// holds a lock on a workload table; then try as `retry` says.
    WaitForIdle {
        older_than: Duration,
        retry: RetryPolicy,
    },
    /// Before each try, wait (at most `wait_at_most`) while a transaction
    /// older than `older_than` on the replica holds a lock on a table the
    /// migration names, since the replica replays the migration's lock behind
    /// it; then try as `retry` says. Without a replica, `retry` alone.
    ReplicaAware {
        older_than: Duration,
        wait_at_most: Duration,
        retry: RetryPolicy,
    },
}

/// The settings of a retrying strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub schedule: Schedule,
    pub statement_timeout: Option<Duration>,
    /// Each try runs `BEGIN; SET LOCAL lock_timeout ...; <ddl>; COMMIT`
    /// (GitLab's `with_lock_retries`) instead of a session-level `SET`.
    pub set_local: bool,
}

/// The lock_timeout of each try and the sleep after it.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// The same lock_timeout every try; sleeps from a backoff rule.
    Uniform {
        lock_timeout: Duration,
        /// `u32::MAX` means no limit (the run's end stops it).
        max_tries: u32,
        backoff: Backoff,
    },
    /// An explicit list: try n uses `steps[n-1]`; the schedule ends with an error.
    Steps(Vec<ScheduledTry>),
}

/// One try of an explicit schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScheduledTry {
    pub lock_timeout: Duration,
    /// The sleep after this try fails.
    pub sleep: Duration,
}

/// The sleep between two tries.
#[derive(Debug, Clone, PartialEq)]
pub enum Backoff {
    /// `min(try * step, cap)`: the reference's `sleep min(try, 5)` is step 1 s, cap 5 s.
    Linear { step: Duration, cap: Duration },
    /// `min(base * 2^(try-1), cap)`, then jitter.
    Exponential {
        base: Duration,
        cap: Duration,
        jitter: Jitter,
    },
}

/// Randomness added to an exponential backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    None,
    /// A uniform random part of the computed sleep: `random() * sleep`.
    Full,
    /// The sleep plus up to half of it again: `sleep * (1 + random() / 2)`.
    AddUpToHalf,
}

impl Jitter {
    /// The names used in workload files: `none`, `full`, `add-up-to-50%`.
    pub fn parse(text: &str) -> Option<Jitter> {
        match text {
            "none" => Some(Jitter::None),
            "full" => Some(Jitter::Full),
            "add-up-to-50%" => Some(Jitter::AddUpToHalf),
            _ => None,
        }
    }
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
                let full_ns = full.as_nanos() as u64;
                match jitter {
                    Jitter::None => full,
                    Jitter::Full => Duration::from_nanos(rng.random_range(0..=full_ns)),
                    Jitter::AddUpToHalf => {
                        Duration::from_nanos(full_ns + rng.random_range(0..=full_ns / 2))
                    }
                }
            }
        }
    }
}

impl RetryPolicy {
    /// How many tries at most (`u32::MAX`: until the run ends).
    pub fn max_tries(&self) -> u32 {
        match &self.schedule {
            Schedule::Uniform { max_tries, .. } => *max_tries,
            Schedule::Steps(steps) => steps.len() as u32,
        }
    }

    /// The lock_timeout of try `try_number` (1-based).
    pub fn lock_timeout(&self, try_number: u32) -> Duration {
        match &self.schedule {
            Schedule::Uniform { lock_timeout, .. } => *lock_timeout,
            Schedule::Steps(steps) => steps[step_index(steps, try_number)].lock_timeout,
        }
    }

    /// The sleep after failed try `try_number` (1-based).
    pub fn sleep_after(&self, try_number: u32, rng: &mut impl rand::Rng) -> Duration {
        match &self.schedule {
            Schedule::Uniform { backoff, .. } => backoff.sleep_after(try_number, rng),
            Schedule::Steps(steps) => steps[step_index(steps, try_number)].sleep,
        }
    }
}

fn step_index(steps: &[ScheduledTry], try_number: u32) -> usize {
    (try_number.max(1) as usize - 1).min(steps.len().saturating_sub(1))
}

/// A strategy with the name the workload or the command line gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedStrategy {
    pub name: String,
    pub strategy: Strategy,
    /// Migration steps of this strategy's own, instead of the workload's `[ddl]`.
    pub ddl_steps: Option<Vec<String>>,
    /// `name = value` settings for every session of this strategy's run.
    pub settings: Vec<(String, String)>,
}

impl Strategy {
    /// Whether the DDL injector needs a second session to terminate the DDL's
    /// blockers while the DDL waits (`kill-blockers`; `kill-lock-holders`
    /// terminates from the DDL's own session between tries).
    pub fn needs_killer(&self) -> bool {
        matches!(self, Strategy::KillBlockers { .. })
    }

    /// Whether the DDL injector needs a session on the replica, to look
    /// there before each try (`replica-aware`).
    pub fn watches_replica(&self) -> bool {
        matches!(self, Strategy::ReplicaAware { .. })
    }
}

impl NamedStrategy {
    /// One line for run.json and messages, e.g. `lock-timeout-retry: lock_timeout 500ms, at most 10 tries, linear backoff 1s per try, cap 5s`.
    pub fn describe(&self) -> String {
        let mut text = self.describe_strategy();
        if let Some(steps) = &self.ddl_steps {
            text.push_str(&format!("; its own migration: {}", steps.join("; ")));
        }
        for (name, value) in &self.settings {
            text.push_str(&format!("; {name} = {value}"));
        }
        text
    }

    fn describe_strategy(&self) -> String {
        match &self.strategy {
            Strategy::Plain => "plain: the statement alone, no timeouts".to_string(),
            Strategy::LockTimeoutRetry(policy) => {
                format!("lock-timeout-retry: {}", describe_retry(policy))
            }
            Strategy::KillBlockers {
                grace,
                older_than,
                every,
            } => {
                let age = if older_than.is_zero() {
                    String::new()
                } else {
                    format!(
                        " whose transaction is older than {}",
                        humantime::format_duration(*older_than)
                    )
                };
                format!(
                    "kill-blockers: no timeout; from {} after the DDL's start, every {} \
                     terminate the sessions blocking the DDL{age}",
                    humantime::format_duration(*grace),
                    humantime::format_duration(*every),
                )
            }
            Strategy::KillLockHolders {
                lock_timeout,
                max_tries,
            } => format!(
                "kill-lock-holders: LOCK TABLE ... IN ACCESS EXCLUSIVE MODE with lock_timeout {} \
                 in the DDL's transaction; after a timeout terminate every other session with a \
                 lock on the table; at most {max_tries} tries",
                humantime::format_duration(*lock_timeout)
            ),
            Strategy::WaitForIdle { older_than, retry } => format!(
                "wait-for-idle: before each try wait until no transaction older than {} holds a \
                 lock on a workload table; {}",
                humantime::format_duration(*older_than),
                describe_retry(retry)
            ),
            Strategy::ReplicaAware {
                older_than,
                wait_at_most,
                retry,
            } => format!(
                "replica-aware: before each try wait (at most {}) while a transaction older than \
                 {} on the replica holds a lock on a table the migration names; {}",
                humantime::format_duration(*wait_at_most),
                humantime::format_duration(*older_than),
                describe_retry(retry)
            ),
        }
    }
}

fn describe_retry(policy: &RetryPolicy) -> String {
    let format = |d: Duration| humantime::format_duration(d).to_string();
    let schedule = match &policy.schedule {
        Schedule::Uniform {
            lock_timeout,
            max_tries,
            backoff,
        } => {
            let tries = if *max_tries == u32::MAX {
                "no try limit".to_string()
            } else {
                format!("at most {max_tries} tries")
            };
            let backoff = match backoff {
                Backoff::Linear { step, cap } => {
                    format!(
                        "linear backoff {} per try, cap {}",
                        format(*step),
                        format(*cap)
                    )
                }
                Backoff::Exponential { base, cap, jitter } => format!(
                    "exponential backoff from {}, cap {}{}",
                    format(*base),
                    format(*cap),
                    match jitter {
                        Jitter::None => "",
                        Jitter::Full => ", full jitter",
                        Jitter::AddUpToHalf => ", plus up to 50% jitter",
                    }
                ),
            };
            format!("lock_timeout {}, {tries}, {backoff}", format(*lock_timeout))
        }
        Schedule::Steps(steps) => format!(
            "explicit schedule of {} tries, lock_timeout {} to {}",
            steps.len(),
            format(
                steps
                    .iter()
                    .map(|s| s.lock_timeout)
                    .min()
                    .unwrap_or_default()
            ),
            format(
                steps
                    .iter()
                    .map(|s| s.lock_timeout)
                    .max()
                    .unwrap_or_default()
            )
        ),
    };
    let statement_timeout = policy
        .statement_timeout
        .map(|timeout| format!(", statement_timeout {}", format(timeout)))
        .unwrap_or_default();
    let local = if policy.set_local {
        ", SET LOCAL in a transaction per try"
    } else {
        ""
    };
    format!("{schedule}{statement_timeout}{local}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> rand::rngs::SmallRng {
        rand::rngs::SmallRng::seed_from_u64(7)
    }

    /// (lock_timeout ms, sleep ms) of the first `tries` tries of a preset, for a fixed seed.
    fn schedule_ms(name: &str, tries: u32) -> Vec<(u128, u128)> {
        let policy = match preset(name).unwrap().strategy {
            Strategy::LockTimeoutRetry(policy)
            | Strategy::WaitForIdle { retry: policy, .. }
            | Strategy::ReplicaAware { retry: policy, .. } => policy,
            other => panic!("{name} is not a retrying strategy: {other:?}"),
        };
        let mut rng = rng();
        (1..=tries.min(policy.max_tries()))
            .map(|n| {
                (
                    policy.lock_timeout(n).as_millis(),
                    policy.sleep_after(n, &mut rng).as_millis(),
                )
            })
            .collect()
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
            jitter: Jitter::None,
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
            jitter: Jitter::Full,
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

    #[test]
    fn every_preset_name_resolves_and_describes_itself() {
        for name in PRESET_NAMES {
            let strategy = preset(name).unwrap_or_else(|| panic!("no preset {name}"));
            assert_eq!(&strategy.name, name);
            assert!(!strategy.describe().is_empty());
        }
        assert!(preset("yolo").is_none());
    }

    #[test]
    fn the_reference_retry_preset_is_the_lab_script() {
        assert_eq!(
            schedule_ms("retry", 10),
            (1..=10).map(|n| (500, 1000 * n.min(5))).collect::<Vec<_>>()
        );
    }

    #[test]
    fn gitlab_follows_with_lock_retries_and_ends() {
        let schedule = schedule_ms("gitlab", 100);
        assert_eq!(schedule.len(), 41);
        assert_eq!(
            &schedule[..11],
            &[
                (100, 50),
                (100, 50),
                (200, 50),
                (300, 100),
                (400, 150),
                (500, 2000),
                (500, 2000),
                (500, 2000),
                (500, 2000),
                (1000, 5000),
                (1000, 60000)
            ]
        );
        assert_eq!(schedule[40], (10_000, 600_000));
        let Strategy::LockTimeoutRetry(policy) = preset("gitlab").unwrap().strategy else {
            panic!()
        };
        assert!(policy.set_local);
    }

    #[test]
    fn pgroll_backs_off_exponentially_from_one_second_with_jitter_and_no_limit() {
        let schedule = schedule_ms("pgroll", 8);
        for (n, (lock_timeout, sleep)) in schedule.iter().enumerate() {
            assert_eq!(*lock_timeout, 500);
            let bound = (1000u128 << n).min(60_000);
            assert!(*sleep <= bound, "try {}: {sleep} > {bound}", n + 1);
        }
        assert_eq!(schedule.len(), 8);
        let Strategy::LockTimeoutRetry(policy) = preset("pgroll").unwrap().strategy else {
            panic!()
        };
        assert_eq!(policy.max_tries(), u32::MAX);
    }

    #[test]
    fn reshape_doubles_to_three_point_two_seconds_plus_up_to_half() {
        let schedule = schedule_ms("reshape", 20);
        assert_eq!(schedule.len(), 10);
        for (n, (lock_timeout, sleep)) in schedule.iter().enumerate() {
            assert_eq!(*lock_timeout, 1000);
            let base = (100u128 << n).min(3200);
            assert!(
                *sleep >= base && *sleep <= base + base / 2,
                "try {}: {sleep} not in [{base}, {}]",
                n + 1,
                base + base / 2
            );
        }
    }

    #[test]
    fn postgres_ai_uses_fifty_ms_and_full_jitter_of_ten_ms_times_two_to_the_try() {
        let schedule = schedule_ms("postgres-ai", 40);
        assert_eq!(schedule.len(), 30);
        for (n, (lock_timeout, sleep)) in schedule.iter().enumerate() {
            assert_eq!(*lock_timeout, 50);
            let try_number = n as u32 + 1;
            let bound = (10u128 << try_number).min(60_000);
            assert!(*sleep <= bound, "try {try_number}: {sleep} > {bound}");
        }
    }

    #[test]
    fn strong_migrations_tries_once_with_ten_seconds() {
        assert_eq!(schedule_ms("strong-migrations", 5), vec![(10_000, 10_000)]);
    }

    #[test]
    fn jitter_names_parse() {
        assert_eq!(Jitter::parse("full"), Some(Jitter::Full));
        assert_eq!(Jitter::parse("add-up-to-50%"), Some(Jitter::AddUpToHalf));
        assert_eq!(Jitter::parse("none"), Some(Jitter::None));
        assert_eq!(Jitter::parse("yes"), None);
    }
}
