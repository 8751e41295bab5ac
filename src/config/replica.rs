//! `[replica]` and `--replica`: a streaming hot standby beside the throwaway
//! server, and which server the load (`[load] on`, `--load-on`) and the
//! blocker (`[blocker] on`, `--blocker-on`) run on. The DDL always runs on
//! the primary. A standby is read-only: only readers and a report (or an
//! idle transaction) go there.

use std::time::Duration;

use super::repetition::SweepSetting;
use super::{BlockerConfig, DatabaseSpec, LoadConfig, WeightedScript};
use crate::choices::{BlockerKind, LoadOn, Side, from_word};
use crate::cli::CommonArgs;
use crate::duration::parse_duration;
use crate::error::Error;
use crate::role::ClientKind;
use crate::workload::{ReplicaFile, WorkloadFile};

/// The standby of a run and who runs on it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaConfig {
    /// The servers the load's clients run on.
    pub load_on: LoadOn,
    /// The server the blocker holds its transaction on.
    pub blocker_on: Side,
    /// The standby's own settings, `name=value`, as its command line takes them.
    pub standby_settings: Vec<String>,
    /// `[replica]` as given (checked), for the resolved workload.
    pub file: ReplicaFile,
    /// `--replica-url`: the user's own standby of the `--db-url` server;
    /// `None` for the throwaway server's standby.
    pub url: Option<String>,
}

impl ReplicaConfig {
    /// The servers of the load, the primary without a replica.
    pub fn load_on(replica: Option<&ReplicaConfig>) -> LoadOn {
        replica.map_or(LoadOn::Primary, |replica| replica.load_on)
    }

    /// The server of the blocker, `Primary` without a replica.
    pub fn blocker_on(replica: Option<&ReplicaConfig>) -> Side {
        replica.map_or(Side::Primary, |replica| replica.blocker_on)
    }
}

/// The replica of a run from `[replica]`, the placements and the flags;
/// `None` when nothing asks for one. `load` and `blocker` are the parsed
/// sections, which the standby must be able to serve.
/// `at` is the sweep value the config is built for: a sweep of the standby's
/// settings sets its `[replica]` key.
pub(super) fn parse_replica(
    source: &str,
    file: &WorkloadFile,
    args: &CommonArgs,
    (database, at): (&DatabaseSpec, Option<(&SweepSetting, &str)>),
    load: &LoadConfig,
    blocker: Option<&BlockerConfig>,
) -> Result<Option<ReplicaConfig>, Error> {
    let load_on = match (args.load_on, &file.load.on) {
        (Some(side), _) => side,
        (None, Some(word)) => from_word(&format!("{source}: [load] on"), word)?,
        (None, None) => LoadOn::Primary,
    };
    let blocker_on = match (
        args.blocker_on,
        file.blocker.as_ref().and_then(|b| b.on.as_ref()),
    ) {
        (Some(side), _) => side,
        (None, Some(word)) => from_word(&format!("{source}: [blocker] on"), word)?,
        (None, None) => Side::Primary,
    };
    let asked = args.replica || file.replica.is_some() || args.replica_url.is_some();
    let placed = [
        ("the load", load_on.on_replica()),
        ("the blocker", blocker_on == Side::Replica),
    ]
    .into_iter()
    .find(|(_, on_replica)| *on_replica);
    if let (false, Some((who, _))) = (asked, placed) {
        return Err(Error::bad_input(format!(
            "{source}: {who} runs on the replica, and there is none: add [replica] to the \
             workload or pass --replica"
        )));
    }
    if !asked {
        if let Some((setting @ (SweepSetting::StandbyDelay | SweepSetting::StandbyFeedback), _)) =
            at
        {
            return Err(Error::bad_input(format!(
                "--sweep {}: the run has no standby to set it on: add [replica] to the workload \
                 or pass --replica",
                setting.name()
            )));
        }
        return Ok(None);
    }
    let settings = at_sweep_value(file.replica.clone().unwrap_or_default(), at)?;
    let standby_settings = standby_settings(source, &settings)?;
    match (database, &args.replica_url) {
        (DatabaseSpec::Throwaway { .. }, Some(_)) => {
            return Err(Error::bad_input(
                "--replica-url names your own standby of a --db-url server, and this run has \
                 the throwaway server, whose standby --replica starts: drop --replica-url, or \
                 add --db-url"
                    .to_string(),
            ));
        }
        (DatabaseSpec::Url(_), None) => {
            return Err(Error::bad_input(
                "this run asks for a replica ([replica], --replica or a party on it) and has \
                 --db-url (or DATABASE_URL): name your hot standby of that server with \
                 --replica-url, or drop --db-url to run on a throwaway pair"
                    .to_string(),
            ));
        }
        (DatabaseSpec::Url(_), Some(_)) if !standby_settings.is_empty() => {
            return Err(Error::bad_input(format!(
                "{source}: [replica] sets the throwaway standby's settings ({}), and your \
                 standby (--replica-url) keeps its own: remove them from [replica]",
                standby_settings.join(", ")
            )));
        }
        _ => {}
    }
    let reads_only = |weighted: &&WeightedScript| {
        ClientKind::of_scripts([&weighted.script]) == ClientKind::Reader
    };
    if load_on == LoadOn::Both && !load.scripts.iter().any(|weighted| reads_only(&weighted)) {
        return Err(Error::bad_input(format!(
            "{source}: the load runs on both servers, and the replica's clients run the \
             scripts that only read: this load has none; add a script that only reads, or \
             keep the load on the primary"
        )));
    }
    let scripts = load.scripts.iter().map(|weighted| &weighted.script);
    if load_on == LoadOn::Replica && ClientKind::of_scripts(scripts) != ClientKind::Reader {
        let writers: Vec<&str> = (load.scripts.iter())
            .filter(|weighted| !reads_only(weighted))
            .map(|weighted| weighted.source.as_str())
            .collect();
        return Err(Error::bad_input(format!(
            "{source}: the load runs on the replica, which is read-only, and these scripts \
             write: {}; keep the load on the primary or give it scripts that only read",
            writers.join(", ")
        )));
    }
    if load_on == LoadOn::Both && (load.rate_tps.is_some() || load.pool.is_some()) {
        return Err(Error::bad_input(format!(
            "{source}: the load runs on both servers, which only the closed-loop clients do: \
             drop --rate (rate_tps) and the pool, or run the load on one server"
        )));
    }
    if let Some(blocker) = blocker
        && blocker_on == Side::Replica
        && blocker.kind == BlockerKind::Writer
    {
        return Err(Error::bad_input(format!(
            "{source}: the blocker runs on the replica, which is read-only, and it is a writer; \
             hold a report there (kind = \"report\") or keep the writer on the primary"
        )));
    }
    Ok(Some(ReplicaConfig {
        load_on,
        blocker_on,
        standby_settings,
        file: settings,
        url: args.replica_url.clone(),
    }))
}

/// `[replica]` with the standby's setting of a sweep value set (`at`).
fn at_sweep_value(
    mut file: ReplicaFile,
    at: Option<(&SweepSetting, &str)>,
) -> Result<ReplicaFile, Error> {
    match at {
        Some((SweepSetting::StandbyDelay, value)) => {
            file.max_standby_streaming_delay = Some(value.to_string());
        }
        Some((SweepSetting::StandbyFeedback, value)) => {
            file.hot_standby_feedback = Some(match value.trim() {
                "on" | "true" => true,
                "off" | "false" => false,
                other => {
                    return Err(Error::bad_input(format!(
                        "--sweep replica.hot_standby_feedback={other}: the values are on and off"
                    )));
                }
            });
        }
        _ => {}
    }
    Ok(file)
}

/// The standby's settings of `[replica]`: the delay for both kinds of WAL
/// (streamed and archived), and the feedback.
fn standby_settings(source: &str, file: &ReplicaFile) -> Result<Vec<String>, Error> {
    let mut settings = Vec::new();
    if let Some(delay) = &file.max_standby_streaming_delay {
        let value = match delay.trim() {
            "-1" => "-1".to_string(),
            text => {
                let key = format!("{source}: [replica] max_standby_streaming_delay");
                let delay: Duration = parse_duration(&key, text)?;
                format!("{}ms", delay.as_millis())
            }
        };
        settings.push(format!("max_standby_streaming_delay={value}"));
        settings.push(format!("max_standby_archive_delay={value}"));
    }
    if let Some(feedback) = file.hot_standby_feedback {
        let word = if feedback { "on" } else { "off" };
        settings.push(format!("hot_standby_feedback={word}"));
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{compare_config, try_compare_config};

    /// The error `Config::new` gives a `compare` command line.
    fn refused(args: &[&str]) -> String {
        match try_compare_config(args) {
            Ok(_) => panic!("{args:?} was accepted"),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn a_party_on_a_replica_needs_one_a_throwaway_server_and_only_reads() {
        let message = refused(&[
            "stallbench",
            "compare",
            "add-column",
            "--load-on",
            "replica",
        ]);
        assert!(
            message.contains("the load runs on the replica, and there is none: add [replica]"),
            "{message}"
        );
        let message = refused(&[
            "stallbench",
            "compare",
            "replica-report",
            "--db-url",
            "postgres://db.example/app",
        ]);
        assert!(
            message.contains(
                "has --db-url (or DATABASE_URL): name your hot standby of that \
                              server with --replica-url"
            ),
            "{message}"
        );
        let message = refused(&[
            "stallbench",
            "compare",
            "replica-report",
            "--replica-url",
            "postgres://standby.example/app",
        ]);
        assert!(
            message.starts_with("--replica-url names your own standby of a --db-url server"),
            "{message}"
        );
        let message = refused(&[
            "stallbench",
            "compare",
            "pgbench",
            "--replica",
            "--load-on",
            "replica",
        ]);
        assert!(
            message.contains(
                "the load runs on the replica, which is read-only, and these scripts write"
            ),
            "{message}"
        );
        let message = refused(&[
            "stallbench",
            "compare",
            "replica-report",
            "--blocker-kind",
            "writer",
            "--blocker",
            "UPDATE orders SET total = total WHERE id = 1",
        ]);
        assert!(
            message.contains("the blocker runs on the replica"),
            "{message}"
        );
    }

    #[test]
    fn a_load_on_both_servers_is_closed_loop_and_reads_only() {
        let config = compare_config(&["stallbench", "compare", "replica-report"]);
        assert_eq!(config.replica.unwrap().load_on, LoadOn::Both);
        let message = refused(&["stallbench", "compare", "replica-report", "--rate", "100"]);
        assert!(
            message
                .contains("the load runs on both servers, which only the closed-loop clients do"),
            "{message}"
        );
        let message = refused(&[
            "stallbench",
            "compare",
            "pgbench",
            "--replica",
            "--load-on",
            "both",
        ]);
        assert!(
            message.contains(
                "the replica's clients run the scripts that only read: this load has none"
            ),
            "{message}"
        );
        let mixed = compare_config(&[
            "stallbench",
            "compare",
            "pgbench",
            "--replica",
            "--load-on",
            "both",
            "-b",
            "tpcb-like",
            "-b",
            "select-only",
        ]);
        assert_eq!(mixed.replica.unwrap().load_on, LoadOn::Both);
    }

    #[test]
    fn the_standby_settings_are_read_from_the_replica_table() {
        let file = ReplicaFile {
            max_standby_streaming_delay: Some("2s".into()),
            hot_standby_feedback: Some(true),
        };
        assert_eq!(
            standby_settings("w", &file).unwrap(),
            [
                "max_standby_streaming_delay=2000ms",
                "max_standby_archive_delay=2000ms",
                "hot_standby_feedback=on"
            ]
        );
        let forever = ReplicaFile {
            max_standby_streaming_delay: Some("-1".into()),
            hot_standby_feedback: None,
        };
        assert_eq!(
            standby_settings("w", &forever).unwrap()[0],
            "max_standby_streaming_delay=-1"
        );
        let bad = ReplicaFile {
            max_standby_streaming_delay: Some("soon".into()),
            hot_standby_feedback: None,
        };
        assert!(
            standby_settings("w", &bad)
                .unwrap_err()
                .to_string()
                .contains("w: [replica] max_standby_streaming_delay")
        );
    }

    #[test]
    fn your_own_standby_is_named_with_replica_url_beside_db_url() {
        let config = compare_config(&[
            "stallbench",
            "compare",
            "replica-report",
            "--db-url",
            "postgres://db.example/app",
            "--replica-url",
            "postgres://app:secret@standby.example/app",
        ]);
        let replica = config.replica.unwrap();
        assert_eq!(
            replica.url.as_deref(),
            Some("postgres://app:secret@standby.example/app")
        );
        assert_eq!(
            (replica.load_on, replica.blocker_on),
            (LoadOn::Both, Side::Replica)
        );
    }
}
