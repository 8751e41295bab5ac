//! How many connections a run holds open at once, counted in one place from
//! the Config, and whether a server has that many free. PostgreSQL's default
//! `max_connections` of 100 turns `--clients 300` into "too many clients" near
//! the hundredth worker: the throwaway server is started with room for the
//! run, and a real server's free slots are compared with it before the load
//! starts, so a server that is too small fails with the numbers, not midway.
//! The harness's own open-files limit is made to fit one socket per connection.

use super::Config;
use crate::engine::postgres::server::DEFAULT_MAX_CONNECTIONS;

/// Slots the throwaway server keeps beyond the run's needs: sessions that are
/// still closing while the next ones open, and someone looking on with psql.
const THROWAWAY_MARGIN: u32 = 10;

/// Open files the harness needs beyond one per connection: the runtimes, the
/// results files, the server's logs.
const FILES_BESIDE_CONNECTIONS: u64 = 64;

/// The sessions one run holds open at its busiest moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionNeeds {
    /// The load's connections: one per client, or the pool's under `--rate`.
    pub clients: u32,
    /// Open loop (`--rate`): the clients are a pool, sized by `--pool-size` or `--clients`.
    pub open_loop: bool,
    /// One session each, by role: `blocker`, `ddl`, `killer`, `replica-watch`, `observer`, `admin`.
    pub sessions: Vec<&'static str>,
}

impl Config {
    /// The sessions this run opens at once, as `scenario::connect` opens them,
    /// plus the harness's own admin session (setup, checks, cleanup; one at a time).
    pub fn connection_needs(&self) -> ConnectionNeeds {
        let mut sessions = Vec::new();
        if self.blocker.is_some() {
            sessions.push("blocker");
        }
        if self.ddl.is_some() {
            sessions.push("ddl");
            if self.strategies.iter().any(|s| s.strategy.needs_killer()) {
                sessions.push("killer");
            }
            let watches_replica = self.strategies.iter().any(|s| s.strategy.watches_replica());
            if watches_replica && self.replica.is_some() {
                sessions.push("replica-watch");
            }
        }
        if self.observe_locks {
            sessions.push("observer");
            if self.replica.is_some() {
                sessions.push("replica-observer");
            }
        }
        sessions.push("admin");
        if self.objects.own_schema() {
            // The session that holds the schema's advisory lock for the whole run.
            sessions.push("lock");
        }
        ConnectionNeeds {
            clients: self.load.clients,
            open_loop: self.load.rate_tps.is_some(),
            sessions,
        }
    }
}

impl ConnectionNeeds {
    /// Every connection the run holds at once.
    pub fn total(&self) -> u32 {
        self.clients + self.sessions.len() as u32
    }

    /// `300 clients + blocker + ddl + observer + admin`.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("{} clients", self.clients)];
        parts.extend(self.sessions.iter().map(|session| session.to_string()));
        parts.join(" + ")
    }

    /// The throwaway server's `max_connections`: the run's needs plus a
    /// margin, never below PostgreSQL's default.
    pub fn throwaway_max_connections(&self) -> u32 {
        (self.total() + THROWAWAY_MARGIN).max(DEFAULT_MAX_CONNECTIONS)
    }

    /// The flag that sizes the load, for the fix in an error message.
    fn clients_flag(&self) -> &'static str {
        match self.open_loop {
            true => "--pool-size (or --clients)",
            false => "--clients",
        }
    }

    /// Makes room for one socket per connection: raises the soft limit of open
    /// files up to the hard one when the run needs more (a shell's soft limit
    /// is often 1024). An error names both limits and the fix.
    pub fn ensure_open_files(&self) -> Result<(), String> {
        let needed = u64::from(self.total()) + FILES_BESIDE_CONNECTIONS;
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we own.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return Err(format!(
                "cannot read the open files limit: {}",
                std::io::Error::last_os_error()
            ));
        }
        if limit.rlim_cur >= needed {
            return Ok(());
        }
        if limit.rlim_max < needed {
            return Err(format!(
                "the run needs about {needed} open files ({} connections, one socket each) \
                 and the hard limit is {} (ulimit -Hn); lower {} or raise the limit",
                self.total(),
                limit.rlim_max,
                self.clients_flag()
            ));
        }
        limit.rlim_cur = needed;
        // SAFETY: setrlimit reads the struct we own; the new soft limit is within the hard one.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            return Err(format!(
                "cannot raise the open files limit to {needed}: {}; raise it with ulimit -n",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }
}

/// A real server's connection slots before the run, not counting the session
/// that asked (the run's admin session, already in [`ConnectionNeeds`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreeSlots {
    pub max_connections: i64,
    /// `superuser_reserved_connections`, plus `reserved_connections` on 16+.
    pub reserved: i64,
    /// Client sessions open now.
    pub in_use: i64,
    /// The role's `rolconnlimit`, when set (superusers are exempt).
    pub role: Option<ConnLimit>,
    /// The database's `datconnlimit`, when set (superusers are exempt).
    pub database: Option<ConnLimit>,
}

/// A per-role or per-database connection limit and the sessions under it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnLimit {
    pub name: String,
    pub limit: i64,
    pub in_use: i64,
}

impl FreeSlots {
    /// Why the run does not fit, with the numbers and the fix; `None` when it fits.
    pub fn shortage(&self, needs: &ConnectionNeeds) -> Option<String> {
        let needed = i64::from(needs.total());
        let need = format!("the run needs {needed} connections ({})", needs.describe());
        let lower = format!("lower {}", needs.clients_flag());
        let server_free = self.max_connections - self.reserved - self.in_use;
        if server_free < needed {
            return Some(format!(
                "{need}, the server has {} free (max_connections {}, {} reserved, {} in use); \
                 {lower} or raise max_connections",
                server_free.max(0),
                self.max_connections,
                self.reserved,
                self.in_use
            ));
        }
        let limits = [
            ("role", "ROLE", &self.role),
            ("database", "DATABASE", &self.database),
        ];
        for (kind, keyword, limit) in limits {
            let Some(limit) = limit else { continue };
            let free = limit.limit - limit.in_use;
            if free < needed {
                return Some(format!(
                    "{need}, the {kind} {} may open {} more (CONNECTION LIMIT {}, {} in use); \
                     {lower} or raise the limit (ALTER {keyword} {} CONNECTION LIMIT {})",
                    limit.name,
                    free.max(0),
                    limit.limit,
                    limit.in_use,
                    limit.name,
                    limit.in_use + needed
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::CommonArgs;
    use crate::config::Mode;

    fn args(clients: u32) -> CommonArgs {
        CommonArgs {
            clients: Some(clients),
            quiet: true,
            seed: Some(1),
            ..CommonArgs::default()
        }
    }

    fn needs(clients: u32, sessions: &[&'static str]) -> ConnectionNeeds {
        ConnectionNeeds {
            clients,
            open_loop: false,
            sessions: sessions.to_vec(),
        }
    }

    #[test]
    fn a_compare_counts_clients_blocker_ddl_observer_and_admin() {
        let compare = Mode::Compare {
            strategies: Vec::new(),
        };
        let config = Config::new(None, compare, &args(300)).unwrap();
        let needs = config.connection_needs();
        assert_eq!(needs.total(), 305);
        assert_eq!(
            needs.describe(),
            "300 clients + blocker + ddl + observer + admin + lock"
        );
        assert_eq!(needs.throwaway_max_connections(), 315);

        let kill = Mode::Compare {
            strategies: vec!["naive".into(), "kill-blockers".into()],
        };
        let config = Config::new(None, kill, &args(4)).unwrap();
        assert_eq!(
            config.connection_needs().sessions,
            ["blocker", "ddl", "killer", "observer", "admin", "lock"]
        );
    }

    #[test]
    fn load_only_without_observer_needs_the_clients_and_admin() {
        let mut flags = args(1000);
        flags.no_observer = true;
        let config = Config::new(None, Mode::LoadOnly, &flags).unwrap();
        let needs = config.connection_needs();
        assert_eq!(needs.total(), 1002);
        assert_eq!(needs.describe(), "1000 clients + admin + lock");
        assert_eq!(needs.throwaway_max_connections(), 1012);
    }

    #[test]
    fn the_throwaway_server_never_goes_below_the_default() {
        assert_eq!(needs(4, &["admin"]).throwaway_max_connections(), 100);
        assert_eq!(needs(89, &["admin"]).throwaway_max_connections(), 100);
        assert_eq!(needs(90, &["admin"]).throwaway_max_connections(), 101);
    }

    fn slots(max_connections: i64, reserved: i64, in_use: i64) -> FreeSlots {
        FreeSlots {
            max_connections,
            reserved,
            in_use,
            role: None,
            database: None,
        }
    }

    #[test]
    fn a_short_server_is_named_with_its_numbers_and_the_fix() {
        let needs = needs(300, &["blocker", "ddl", "observer", "admin"]);
        let message = slots(100, 3, 0).shortage(&needs).unwrap();
        assert_eq!(
            message,
            "the run needs 304 connections (300 clients + blocker + ddl + observer + admin), \
             the server has 97 free (max_connections 100, 3 reserved, 0 in use); \
             lower --clients or raise max_connections"
        );
        assert_eq!(slots(400, 3, 93).shortage(&needs), None);
        assert!(slots(400, 3, 94).shortage(&needs).is_some());
    }

    #[test]
    fn role_and_database_limits_count_too() {
        let needs = ConnectionNeeds {
            clients: 8,
            open_loop: true,
            sessions: vec!["admin"],
        };
        let mut free = slots(100, 3, 10);
        free.role = Some(ConnLimit {
            name: "app".into(),
            limit: 10,
            in_use: 2,
        });
        assert_eq!(
            free.shortage(&needs).unwrap(),
            "the run needs 9 connections (8 clients + admin), the role app may open 8 more \
             (CONNECTION LIMIT 10, 2 in use); lower --pool-size (or --clients) or raise the \
             limit (ALTER ROLE app CONNECTION LIMIT 11)"
        );
        free.role = None;
        free.database = Some(ConnLimit {
            name: "shop".into(),
            limit: 5,
            in_use: 0,
        });
        let message = free.shortage(&needs).unwrap();
        assert!(
            message.contains("the database shop may open 5 more"),
            "{message}"
        );
        free.database = None;
        assert_eq!(free.shortage(&needs), None);
    }
}
