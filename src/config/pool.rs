//! The application pool (`--rate` with `--pool-size`): the settings a Rust
//! service gives deadpool-postgres, read from the flags in one place. Each
//! flag only makes sense with the pool, so one given without it is refused
//! rather than silently ignored.

use std::time::Duration;

pub use crate::choices::Recycling;
use crate::choices::from_word;
use crate::cli::CommonArgs;
use crate::error::Error;
use crate::workload::PoolFile;

use crate::duration::parse_duration;

/// How long a request waits for a connection by default: HikariCP's default
/// `connectionTimeout`, a common choice for services.
pub const DEFAULT_POOL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the pool may take to open a connection by default.
pub const DEFAULT_POOL_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The application pool of an open-loop run.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolConfig {
    /// The most connections the pool opens (`--pool-size`).
    pub size: u32,
    /// How long a request waits for a connection (`--pool-timeout`, deadpool's `timeouts.wait`).
    pub wait_timeout: Duration,
    /// How long opening a connection may take (`--pool-connect-timeout`, deadpool's `timeouts.create`).
    pub connect_timeout: Duration,
    pub recycling: Recycling,
    /// Requests waiting or running at once beyond which a new one is rejected (`--max-in-flight`).
    pub max_in_flight: Option<u32>,
}

/// The pool of the run: `Some` with `--pool-size` or `[load.pool]` (either
/// needs a rate, checked with the pacing), `None` otherwise; the pool flags
/// need one of them, and the flags win over the file's keys.
pub(super) fn parse_pool(
    source: &str,
    file: Option<&PoolFile>,
    args: &CommonArgs,
) -> Result<Option<PoolConfig>, Error> {
    let flags = &args.pool;
    let (size, size_key) = match (args.pool_size, file) {
        (Some(size), _) => (size, "--pool-size 0".to_string()),
        (None, Some(_)) if args.clients.is_some() => {
            return Err(Error::bad_input(format!(
                "--clients sizes lean connections, but {source} serves the load through \
                 [load.pool]; size the pool with --pool-size instead"
            )));
        }
        (None, Some(file)) => (file.size, format!("{source}: [load.pool] size = 0")),
        (None, None) => {
            let given = [
                ("--pool-timeout", flags.pool_timeout.is_some()),
                (
                    "--pool-connect-timeout",
                    flags.pool_connect_timeout.is_some(),
                ),
                ("--pool-recycling", flags.pool_recycling.is_some()),
                ("--max-in-flight", flags.max_in_flight.is_some()),
            ];
            if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
                return Err(Error::bad_input(format!(
                    "{flag} sets up the application pool, which runs only with --pool-size N \
                     (and --rate TPS); add --pool-size"
                )));
            }
            return Ok(None);
        }
    };
    if size == 0 {
        return Err(Error::bad_input(format!(
            "{size_key}; a pool needs at least 1 connection"
        )));
    }
    let key = |name: &str| format!("{source}: [load.pool] {name}");
    let duration = |given: &Option<Duration>,
                    name: &str,
                    in_file: Option<&String>,
                    default: Duration| match (given, in_file) {
        (Some(duration), _) => Ok(*duration),
        (None, Some(text)) => parse_duration(&key(name), text),
        (None, None) => Ok(default),
    };
    let wait_timeout = duration(
        &flags.pool_timeout,
        "timeout",
        file.and_then(|file| file.timeout.as_ref()),
        DEFAULT_POOL_TIMEOUT,
    )?;
    let connect_timeout = duration(
        &flags.pool_connect_timeout,
        "connect_timeout",
        file.and_then(|file| file.connect_timeout.as_ref()),
        DEFAULT_POOL_CONNECT_TIMEOUT,
    )?;
    for (flag, value) in [
        ("--pool-timeout", wait_timeout),
        ("--pool-connect-timeout", connect_timeout),
    ] {
        if value < Duration::from_millis(1) {
            return Err(Error::bad_input(format!(
                "{flag} must be at least 1ms, e.g. 1s"
            )));
        }
    }
    let recycling = match (
        flags.pool_recycling,
        file.and_then(|file| file.recycling.as_ref()),
    ) {
        (Some(recycling), _) => recycling,
        (None, None) => Recycling::Fast,
        (None, Some(text)) => from_word(&key("recycling"), text)?,
    };
    let max_in_flight = flags
        .max_in_flight
        .or(file.and_then(|file| file.max_in_flight));
    if max_in_flight == Some(0) {
        return Err(Error::bad_input(
            "max in flight 0 (--max-in-flight or [load.pool] max_in_flight) would reject every \
             request; give at least 1, or leave it out for no limit",
        ));
    }
    Ok(Some(PoolConfig {
        size,
        wait_timeout,
        connect_timeout,
        recycling,
        max_in_flight,
    }))
}
