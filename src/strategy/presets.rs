//! The presets: one table of every preset, in the order `--strategies all`
//! runs them, each with what it runs and where its numbers come from. A preset
//! is a promise that stallbench reproduces what a tool does to live traffic, so
//! each one names the file its values were read from, states only what that
//! file says, and says where the preset departs from it. The tests below hold
//! every preset to these values, read again from the source's own words.

use std::time::Duration;

use super::{Backoff, Jitter, NamedStrategy, RetryPolicy, Schedule, ScheduledTry, Strategy};

/// The source of a preset: the file that states its values, and those values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresetSource {
    /// The public repository (`owner/name`), or `stallbench` for a preset of its own.
    pub repository: &'static str,
    /// The file in that repository that holds the values.
    pub file: &'static str,
    /// The values as the source states them, and where the preset differs.
    pub values: &'static str,
}

/// One preset: its name, the file its values come from, and what it runs.
pub struct Preset {
    pub name: &'static str,
    pub source: PresetSource,
    /// Builds the strategy (a function, as a schedule is built at run time).
    pub strategy: fn() -> Strategy,
}

/// Every preset, in the order `--strategies all` runs them.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "naive",
        source: PresetSource {
            repository: "postgres/postgres",
            file: "src/backend/utils/misc/postgresql.conf.sample",
            values: "lock_timeout = 0 and statement_timeout = 0 (disabled) by default: the \
                     statement waits in the lock queue as long as it takes",
        },
        strategy: || Strategy::Plain,
    },
    Preset {
        name: "retry",
        source: PresetSource {
            repository: "stallbench",
            file: "workloads/add-column.toml",
            values: "the reference experiment's retry script: lock_timeout 500ms, sleep min(try, \
                     5) s after a failed try, at most 10 tries; the published lab it comes from is \
                     not named in this repository, so not verified against it",
        },
        strategy: || Strategy::LockTimeoutRetry(reference_retry()),
    },
    Preset {
        name: "gitlab",
        source: PresetSource {
            repository: "gitlabhq/gitlabhq",
            file: "lib/gitlab/database/with_lock_retries.rb",
            values: "DEFAULT_TIMING_CONFIGURATION, 41 tries of [lock_timeout, sleep after a \
                     LockWaitTimeout]: 100ms/50ms, 100ms/50ms, 200ms/50ms, 300ms/100ms, \
                     400ms/150ms, 500ms/2s x4, 1s/5s, 1s/1min, ..., 10s/10min; each try is SET \
                     LOCAL lock_timeout in a transaction; \
                     lib/gitlab/database/migrations/lock_retry_mixin.rb runs it with \
                     raise_on_exhaustion: true (AttemptsExhaustedError after the last try; the \
                     default false would make one more try without lock_timeout). That mixin \
                     retries the whole migration as one transaction; stallbench restarts the \
                     schedule for each DDL step",
        },
        strategy: || {
            Strategy::LockTimeoutRetry(RetryPolicy {
                schedule: Schedule::Steps(
                    GITLAB_STEPS_MS
                        .iter()
                        .map(|&(lock_timeout, sleep)| ScheduledTry {
                            lock_timeout: ms(lock_timeout),
                            sleep: ms(sleep),
                        })
                        .collect(),
                ),
                statement_timeout: None,
                set_local: true,
            })
        },
    },
    Preset {
        name: "pgroll",
        source: PresetSource {
            repository: "xataio/pgroll",
            file: "pkg/db/db.go",
            values: "on SQLSTATE 55P03 sleep backoff.New(1 min, 1 s).Duration() \
                     (cloudflare/backoff: a random part of min(1 s * 2^n, 1 min), n = 0, 1, ...) \
                     and retry, with no try limit and no deadline of its own: until its context is \
                     cancelled (here: until the run ends); lock_timeout 500ms is the \
                     --lock-timeout default of cmd/root.go",
        },
        strategy: || {
            uniform(
                ms(500),
                u32::MAX,
                Backoff::Exponential {
                    base: secs(1),
                    cap: secs(60),
                    jitter: Jitter::Full,
                },
            )
        },
    },
    Preset {
        name: "reshape",
        source: PresetSource {
            repository: "fabianlindfors/reshape",
            file: "src/db.rs",
            values: "SET lock_timeout = '1s' on its connection; retry_automatically: on 55P03 at \
                     most 10 attempts (MAX_ATTEMPTS), sleep min(3.2 s, 100ms * 2^(attempt-1)) plus \
                     a random jitter below half of it, then the error",
        },
        strategy: || {
            uniform(
                secs(1),
                10,
                Backoff::Exponential {
                    base: ms(100),
                    cap: ms(3_200),
                    jitter: Jitter::AddUpToHalf,
                },
            )
        },
    },
    Preset {
        name: "postgres-ai",
        source: PresetSource {
            repository: "postgres-ai/docs",
            file: "blog/20210923-zero-downtime-postgres-schema-migrations-lock-timeout-and-retries.md",
            values: "the article's DO block: lock_timeout 50ms, max_attempts 30, after failed \
                     attempt i sleep random() * least(60000, 10 * 2^i) ms, then an exception; its \
                     tries are subtransactions of one DO statement, stallbench runs each try as a \
                     statement of its own (the whole-transaction variant the article mentions)",
        },
        strategy: || {
            uniform(
                ms(50),
                30,
                Backoff::Exponential {
                    base: ms(20),
                    cap: secs(60),
                    jitter: Jitter::Full,
                },
            )
        },
    },
    Preset {
        name: "strong-migrations",
        source: PresetSource {
            repository: "ankane/strong_migrations",
            file: "lib/generators/strong_migrations/templates/initializer.rb.tt",
            values: "the initializer the gem generates recommends lock_timeout = 10.seconds (and \
                     statement_timeout = 1.hour, not set here: no run lasts an hour); the library \
                     itself (lib/strong_migrations.rb) sets no lock_timeout, and \
                     lock_timeout_retries defaults to 0 with lock_timeout_retry_delay 10 s: one \
                     try",
        },
        strategy: || {
            uniform(
                secs(10),
                1,
                Backoff::Linear {
                    step: secs(10),
                    cap: secs(10),
                },
            )
        },
    },
    Preset {
        name: "pg-osc",
        source: PresetSource {
            repository: "shayonj/pg-osc",
            file: "lib/pg_online_schema_change/query.rb",
            values: "open_lock_exclusive with --kill-backends: SET lock_timeout = \
                     '#{wait_time_for_lock}s' (--wait-time-for-lock, default 10 in \
                     lib/pg_online_schema_change/cli.rb) and LOCK TABLE <table> IN ACCESS \
                     EXCLUSIVE MODE in the transaction; on PG::LockNotAvailable kill_backends \
                     terminates every other backend with a relation lock on <table> (granted \
                     or not, no age filter) and retries while (attempts += 1) < LOCK_ATTEMPT = 4: \
                     3 tries, no sleep between, then it fails. pg-osc's own work after the lock \
                     (shadow table, swap) is replaced by the workload's DDL in the same \
                     transaction; the table is every workload table the DDL names",
        },
        strategy: || Strategy::KillLockHolders {
            lock_timeout: secs(10),
            max_tries: 3,
        },
    },
    Preset {
        name: "django-pgmigrate",
        source: PresetSource {
            repository: "Opus10/django-pgmigrate",
            file: "pgmigrate/config.py",
            values: "PGMIGRATE_LOCK_TIMEOUT defaults to None (no lock_timeout), \
                     PGMIGRATE_BLOCKING_ACTION to pgmigrate.Terminate and \
                     PGMIGRATE_BLOCKING_ACTION_INTERVAL to 1 s: pglock.prioritize \
                     (Opus10/django-pglock pglock/core.py) starts a periodic timer that, every \
                     interval after the first, terminates the sessions blocking the migration, with \
                     no age filter, until the migration ends",
        },
        strategy: || Strategy::KillBlockers {
            grace: secs(1),
            older_than: Duration::ZERO,
            every: secs(1),
        },
    },
    Preset {
        name: "kill-blockers",
        source: PresetSource {
            repository: "stallbench",
            file: "src/engine/postgres/scenario/ddl/terminate.rs",
            values: "stallbench's own variant, credited to no tool: no timeout; from the grace (1 \
                     s, the kind's grace key) after the DDL's start, every 100 ms (every), \
                     terminate the sessions blocking the DDL whose transaction is older than 1 s \
                     (older_than), never giving up. Unlike django-pgmigrate it filters by age, so \
                     a reader's short query is spared",
        },
        strategy: || Strategy::KillBlockers {
            grace: secs(1),
            older_than: secs(1),
            every: ms(100),
        },
    },
    Preset {
        name: "wait-for-idle",
        source: PresetSource {
            repository: "stallbench",
            file: "src/engine/postgres/scenario/ddl/mod.rs",
            values: "stallbench's own: before each try wait until no transaction older than \
                     older_than (1 s, the kind's older_than key) holds a lock on a workload table, \
                     then try as retry. The closest published advice, postgres-ai/docs \
                     blog/20210923-zero-downtime-postgres-schema-migrations-lock-timeout-and-retries.md, \
                     suggests checking for long-running transactions before the DDL (more than 1 \
                     minute in its example) and postponing the change or interrupting them",
        },
        strategy: || Strategy::WaitForIdle {
            older_than: secs(1),
            retry: reference_retry(),
        },
    },
    Preset {
        name: "replica-aware",
        source: PresetSource {
            repository: "stallbench",
            file: "src/engine/postgres/scenario/ddl/replica_wait.rs",
            values: "stallbench's own, credited to no tool (none of the published recipes looks at \
                     replicas): before each try wait, at most 30 s (wait_at_most, PostgreSQL's \
                     default max_standby_streaming_delay), while a transaction older than 1 s \
                     (older_than) on the replica holds a lock on a table the migration names, \
                     since the replica replays the migration's lock behind it; then try as \
                     retry. Without a replica it is retry",
        },
        strategy: || Strategy::ReplicaAware {
            older_than: secs(1),
            wait_at_most: secs(30),
            retry: reference_retry(),
        },
    },
];

/// The preset names, in the order `--strategies all` runs them.
pub const PRESET_NAMES: [&str; PRESETS.len()] = {
    let mut names = [""; PRESETS.len()];
    let mut index = 0;
    while index < PRESETS.len() {
        names[index] = PRESETS[index].name;
        index += 1;
    }
    names
};

/// The preset strategy called `name`; `None` for a name that is no preset.
pub fn preset(name: &str) -> Option<NamedStrategy> {
    let found = PRESETS.iter().find(|preset| preset.name == name)?;
    Some(NamedStrategy {
        name: name.to_string(),
        strategy: (found.strategy)(),
        ddl_steps: None,
        settings: Vec::new(),
    })
}

/// The source of the preset called `name`; `None` for a name that is no preset.
pub fn preset_source(name: &str) -> Option<PresetSource> {
    PRESETS
        .iter()
        .find(|preset| preset.name == name)
        .map(|preset| preset.source)
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

fn secs(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

/// The reference experiment's retry: lock_timeout 500ms, sleep min(try, 5) s, 10 tries.
fn reference_retry() -> RetryPolicy {
    RetryPolicy {
        schedule: Schedule::Uniform {
            lock_timeout: ms(500),
            max_tries: 10,
            backoff: Backoff::Linear {
                step: secs(1),
                cap: secs(5),
            },
        },
        statement_timeout: None,
        set_local: false,
    }
}

/// A session-level retry with one lock_timeout for every try.
fn uniform(lock_timeout: Duration, max_tries: u32, backoff: Backoff) -> Strategy {
    Strategy::LockTimeoutRetry(RetryPolicy {
        schedule: Schedule::Uniform {
            lock_timeout,
            max_tries,
            backoff,
        },
        statement_timeout: None,
        set_local: false,
    })
}

/// GitLab's `Gitlab::Database::WithLockRetries::DEFAULT_TIMING_CONFIGURATION`
/// (lib/gitlab/database/with_lock_retries.rb): (lock_timeout ms, sleep ms) per try.
const GITLAB_STEPS_MS: &[(u64, u64)] = &[
    (100, 50),
    (100, 50),
    (200, 50),
    (300, 100),
    (400, 150),
    (500, 2_000),
    (500, 2_000),
    (500, 2_000),
    (500, 2_000),
    (1_000, 5_000),
    (1_000, 60_000),
    (100, 50),
    (100, 50),
    (200, 50),
    (300, 100),
    (400, 150),
    (500, 2_000),
    (500, 2_000),
    (500, 2_000),
    (3_000, 180_000),
    (100, 50),
    (100, 50),
    (500, 2_000),
    (500, 2_000),
    (5_000, 120_000),
    (500, 500),
    (500, 500),
    (7_000, 300_000),
    (500, 500),
    (500, 500),
    (7_000, 300_000),
    (500, 500),
    (500, 500),
    (7_000, 300_000),
    (100, 50),
    (100, 50),
    (500, 2_000),
    (10_000, 600_000),
    (100, 50),
    (500, 2_000),
    (10_000, 600_000),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn strategy_of(name: &str) -> Strategy {
        preset(name).expect("a preset").strategy
    }

    #[test]
    fn every_preset_cites_a_file() {
        for name in PRESET_NAMES {
            let source = preset_source(name).unwrap_or_else(|| panic!("{name} cites nothing"));
            assert!(source.repository.contains('/') || source.repository == "stallbench");
            assert!(source.file.contains('.'), "{name}: {}", source.file);
            assert!(!source.values.is_empty());
        }
        assert!(preset_source("yolo").is_none());
    }

    #[test]
    fn the_docs_table_cites_each_presets_source() {
        let docs = include_str!("../../docs/workloads.md");
        for name in PRESET_NAMES {
            let row_start = format!("| `{name}` |");
            let row = docs
                .lines()
                .find(|line| line.starts_with(&row_start))
                .unwrap_or_else(|| {
                    panic!("docs/workloads.md has no strategy preset row for {name}")
                });
            let source = preset_source(name).expect("a source");
            assert!(
                row.contains(source.repository) && row.contains(source.file),
                "docs/workloads.md's row for {name} should cite {} {}",
                source.repository,
                source.file
            );
        }
    }

    #[test]
    fn naive_preset_matches_postgres_defaults() {
        assert_eq!(strategy_of("naive"), Strategy::Plain);
    }

    #[test]
    fn retry_preset_matches_the_reference_script() {
        let linear = Backoff::Linear {
            step: secs(1),
            cap: secs(5),
        };
        assert_eq!(strategy_of("retry"), uniform(ms(500), 10, linear));
    }

    #[test]
    fn gitlab_preset_matches_with_lock_retries_timings() {
        // DEFAULT_TIMING_CONFIGURATION as the source writes it: [lock_timeout, sleep] in seconds.
        const TIMINGS_S: [(f64, f64); 41] = [
            (0.1, 0.05),
            (0.1, 0.05),
            (0.2, 0.05),
            (0.3, 0.10),
            (0.4, 0.15),
            (0.5, 2.0),
            (0.5, 2.0),
            (0.5, 2.0),
            (0.5, 2.0),
            (1.0, 5.0),
            (1.0, 60.0),
            (0.1, 0.05),
            (0.1, 0.05),
            (0.2, 0.05),
            (0.3, 0.10),
            (0.4, 0.15),
            (0.5, 2.0),
            (0.5, 2.0),
            (0.5, 2.0),
            (3.0, 180.0),
            (0.1, 0.05),
            (0.1, 0.05),
            (0.5, 2.0),
            (0.5, 2.0),
            (5.0, 120.0),
            (0.5, 0.5),
            (0.5, 0.5),
            (7.0, 300.0),
            (0.5, 0.5),
            (0.5, 0.5),
            (7.0, 300.0),
            (0.5, 0.5),
            (0.5, 0.5),
            (7.0, 300.0),
            (0.1, 0.05),
            (0.1, 0.05),
            (0.5, 2.0),
            (10.0, 600.0),
            (0.1, 0.05),
            (0.5, 2.0),
            (10.0, 600.0),
        ];
        let steps = TIMINGS_S
            .iter()
            .map(|&(lock_timeout_s, sleep_s)| ScheduledTry {
                lock_timeout: Duration::from_secs_f64(lock_timeout_s),
                sleep: Duration::from_secs_f64(sleep_s),
            })
            .collect();
        let expected = Strategy::LockTimeoutRetry(RetryPolicy {
            schedule: Schedule::Steps(steps),
            statement_timeout: None,
            set_local: true,
        });
        assert_eq!(strategy_of("gitlab"), expected);
    }

    #[test]
    fn pgroll_preset_matches_its_backoff_and_lock_timeout_default() {
        let backoff = Backoff::Exponential {
            base: secs(1),
            cap: secs(60),
            jitter: Jitter::Full,
        };
        assert_eq!(strategy_of("pgroll"), uniform(ms(500), u32::MAX, backoff));
    }

    #[test]
    fn reshape_preset_matches_retry_automatically() {
        let backoff = Backoff::Exponential {
            base: ms(100),
            cap: ms(3_200),
            jitter: Jitter::AddUpToHalf,
        };
        assert_eq!(strategy_of("reshape"), uniform(secs(1), 10, backoff));
    }

    #[test]
    fn postgres_ai_preset_matches_the_articles_do_block() {
        // The article sleeps random() * least(60000, 10 * 2^i) ms after attempt i;
        // stallbench's exponential backoff doubles from its base after try 1: base = 10 ms * 2^1.
        let backoff = Backoff::Exponential {
            base: ms(20),
            cap: secs(60),
            jitter: Jitter::Full,
        };
        assert_eq!(strategy_of("postgres-ai"), uniform(ms(50), 30, backoff));
    }

    #[test]
    fn strong_migrations_preset_matches_the_initializer_and_no_retries() {
        // lock_timeout_retries = 0: one try; lock_timeout_retry_delay 10 s is never slept.
        let delay = Backoff::Linear {
            step: secs(10),
            cap: secs(10),
        };
        assert_eq!(
            strategy_of("strong-migrations"),
            uniform(secs(10), 1, delay)
        );
    }

    #[test]
    fn pg_osc_preset_matches_open_lock_exclusive_with_kill_backends() {
        // --wait-time-for-lock 10 (seconds); LOCK_ATTEMPT = 4 with a pre-increment: 3 tries.
        assert_eq!(
            strategy_of("pg-osc"),
            Strategy::KillLockHolders {
                lock_timeout: secs(10),
                max_tries: 3,
            }
        );
    }

    #[test]
    fn django_pgmigrate_preset_terminates_blockers_every_second_of_any_age() {
        // No lock_timeout; PGMIGRATE_BLOCKING_ACTION_INTERVAL = 1 s, first run after one interval.
        assert_eq!(
            strategy_of("django-pgmigrate"),
            Strategy::KillBlockers {
                grace: secs(1),
                older_than: Duration::ZERO,
                every: secs(1),
            }
        );
    }

    #[test]
    fn kill_blockers_preset_waits_one_second_of_grace() {
        assert_eq!(
            strategy_of("kill-blockers"),
            Strategy::KillBlockers {
                grace: secs(1),
                older_than: secs(1),
                every: ms(100),
            }
        );
    }

    #[test]
    fn wait_for_idle_preset_waits_for_transactions_older_than_one_second() {
        let Strategy::WaitForIdle { older_than, retry } = strategy_of("wait-for-idle") else {
            panic!("wait-for-idle is not a WaitForIdle strategy");
        };
        assert_eq!(older_than, secs(1));
        assert_eq!(Strategy::LockTimeoutRetry(retry), strategy_of("retry"));
    }

    #[test]
    fn replica_aware_preset_waits_at_most_thirty_seconds_for_the_replica() {
        let Strategy::ReplicaAware {
            older_than,
            wait_at_most,
            retry,
        } = strategy_of("replica-aware")
        else {
            panic!("replica-aware is not a ReplicaAware strategy");
        };
        assert_eq!((older_than, wait_at_most), (secs(1), secs(30)));
        assert_eq!(Strategy::LockTimeoutRetry(retry), strategy_of("retry"));
    }
}
