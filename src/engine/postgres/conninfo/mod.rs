//! Connection settings as libpq has them, parsed in one place: a URL or a
//! key=value string, with the PG* environment variables and the password file
//! filling what the string leaves out. Everyone who connects (tokio-postgres
//! for setup, observer, report and DDL; the load workers' own client) is built
//! from the one [`ConnSettings`] value this module makes, so they can never
//! disagree about where to go or how to secure the connection.
//!
//! The environment is passed in as a function (the process environment in the
//! binary, a map in the tests), so precedence can be tested without touching
//! the process's variables.

mod env;
mod parse;
mod pgpass;
mod tls;

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use tls::{Tls, certificate_failure};

/// libpq's compiled-in socket folder on Debian and Ubuntu, the host when none is given.
pub const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";
/// The port when none is given.
pub const DEFAULT_PORT: u16 = 5432;
/// The connect timeout when none is given (libpq waits forever; a benchmark should not).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where and how to connect: everything a connection needs, resolved once.
#[derive(Clone, PartialEq)]
pub struct ConnSettings {
    /// Host names, IP addresses or unix socket folders (starting with `/`), tried in order.
    pub hosts: Vec<String>,
    /// Numeric addresses given with `hostaddr`, used instead of looking the hosts up.
    pub hostaddrs: Vec<IpAddr>,
    /// One port per host.
    pub ports: Vec<u16>,
    pub user: String,
    pub dbname: String,
    pub password: Option<String>,
    /// Command-line options sent to the server (`options=-c name=value`).
    pub options: Option<String>,
    /// `application_name` or `PGAPPNAME`: put before the harness's own session names.
    pub application_name: Option<String>,
    pub connect_timeout: Duration,
    pub target_session_attrs: TargetSessionAttrs,
    pub ssl: SslSettings,
}

/// How much TLS a connection insists on, as libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// Plain first; TLS only if the server refuses the plain connection.
    Allow,
    /// TLS when the server offers it, else plain (libpq's default).
    Prefer,
    /// TLS or nothing; the certificate is checked only when a root certificate file is given.
    Require,
    /// TLS, and the certificate must chain to a trusted root (any host name).
    VerifyCa,
    /// TLS, the certificate must chain to a trusted root and name the host.
    VerifyFull,
}

/// The sslmode as it is written in a connection string.
impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        })
    }
}

/// The roots a server certificate is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCert {
    /// A PEM file of CA certificates (`sslrootcert=FILE`).
    File(PathBuf),
    /// The platform's trusted roots (`sslrootcert=system`).
    System,
}

/// The TLS part of the settings: the mode and the certificate files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SslSettings {
    pub mode: SslMode,
    /// `None`: no root certificate (only `require` and weaker work).
    pub root_cert: Option<RootCert>,
    /// The client certificate and its key, PEM files (both or neither).
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

/// Which server of several hosts is acceptable, as libpq's `target_session_attrs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetSessionAttrs {
    Any,
    ReadWrite,
    ReadOnly,
}

/// Settings resolved from a string and the environment, with what the user should hear about.
pub struct Resolved {
    pub settings: ConnSettings,
    /// Such as a password file ignored for its permissions.
    pub warnings: Vec<String>,
}

impl ConnSettings {
    /// Resolves a `--db-url` value (URL or key=value) as libpq does: the
    /// string wins, `env` fills what it leaves out, then the password file.
    /// `env` answers an environment variable's value (`PGHOST`, `HOME`, ...).
    pub fn resolve(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Resolved, String> {
        let mut values = parse::parse(text)?;
        env::fill_from_env(&mut values, env);
        let mut settings = from_values(&values, env)?;
        let mut warnings = Vec::new();
        if settings.password.is_none() {
            let path = match values.get("passfile") {
                Some(path) => Some(PathBuf::from(path)),
                None => env("HOME").map(|home| PathBuf::from(home).join(".pgpass")),
            };
            if let Some(path) = path {
                match pgpass::lookup(&path, &settings) {
                    pgpass::Lookup::Found(password) => settings.password = Some(password),
                    pgpass::Lookup::NotFound => {}
                    pgpass::Lookup::Ignored(warning) => warnings.push(warning),
                }
            }
        }
        Ok(Resolved { settings, warnings })
    }

    /// The tokio-postgres settings (TLS is [`Tls`]'s part: the mode here is
    /// only whether tokio-postgres asks the server for it).
    pub fn tokio_config(&self) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        // Hosts left empty stand for `hostaddr`s given without a name.
        for host in self.hosts.iter().filter(|host| !host.is_empty()) {
            config.host(host);
        }
        for hostaddr in &self.hostaddrs {
            config.hostaddr(*hostaddr);
        }
        for port in &self.ports {
            config.port(*port);
        }
        config
            .user(&self.user)
            .dbname(&self.dbname)
            .connect_timeout(self.connect_timeout)
            .target_session_attrs(match self.target_session_attrs {
                TargetSessionAttrs::Any => tokio_postgres::config::TargetSessionAttrs::Any,
                TargetSessionAttrs::ReadWrite => {
                    tokio_postgres::config::TargetSessionAttrs::ReadWrite
                }
                TargetSessionAttrs::ReadOnly => {
                    tokio_postgres::config::TargetSessionAttrs::ReadOnly
                }
            })
            .ssl_mode(match self.ssl.mode {
                SslMode::Disable | SslMode::Allow => tokio_postgres::config::SslMode::Disable,
                SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
                SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                    tokio_postgres::config::SslMode::Require
                }
            });
        if let Some(password) = &self.password {
            config.password(password);
        }
        if let Some(options) = &self.options {
            config.options(options);
        }
        config
    }

    /// The hosts as one name for messages: `db1,db2`.
    pub fn host_list(&self) -> String {
        self.hosts.join(",")
    }
}

/// Passwords never show in a debug print.
impl fmt::Debug for ConnSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnSettings")
            .field("hosts", &self.hosts)
            .field("hostaddrs", &self.hostaddrs)
            .field("ports", &self.ports)
            .field("user", &self.user)
            .field("dbname", &self.dbname)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("options", &self.options)
            .field("application_name", &self.application_name)
            .field("connect_timeout", &self.connect_timeout)
            .field("target_session_attrs", &self.target_session_attrs)
            .field("ssl", &self.ssl)
            .finish()
    }
}

/// Builds the settings from the merged `keyword -> value` pairs, with libpq's defaults.
fn from_values(
    values: &HashMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ConnSettings, String> {
    let get = |key: &str| values.get(key).filter(|value| !value.is_empty());
    let hosts = match get("host") {
        Some(list) => list.split(',').map(str::to_string).collect(),
        None => Vec::new(),
    };
    let hostaddrs = match get("hostaddr") {
        Some(list) => list
            .split(',')
            .map(|addr| {
                addr.parse::<IpAddr>().map_err(|_| {
                    format!("hostaddr={addr}: not an IP address; write it like 10.0.0.5")
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let hosts = match (hosts.is_empty(), hostaddrs.len()) {
        (true, 0) => vec![DEFAULT_SOCKET_DIR.to_string()],
        (true, count) => vec![String::new(); count],
        (false, _) => hosts,
    };
    let ports = ports_for(get("port").map(String::as_str), hosts.len())?;
    let user = match get("user").cloned().or_else(|| env("USER")) {
        Some(user) => user,
        None => return Err("no user name; add user=NAME (or set PGUSER)".into()),
    };
    let dbname = get("dbname").cloned().unwrap_or_else(|| user.clone());
    let connect_timeout = match get("connect_timeout") {
        Some(seconds) => match seconds.trim().parse::<u64>() {
            // libpq: 0 waits forever, and less than 2 s counts as 2 s.
            Ok(0) => DEFAULT_CONNECT_TIMEOUT,
            Ok(seconds) => Duration::from_secs(seconds.max(2)),
            Err(_) => {
                return Err(format!(
                    "connect_timeout={seconds}: not a whole number of seconds; write connect_timeout=10"
                ));
            }
        },
        None => DEFAULT_CONNECT_TIMEOUT,
    };
    let target_session_attrs = match get("target_session_attrs").map(String::as_str) {
        None | Some("any") => TargetSessionAttrs::Any,
        Some("read-write") => TargetSessionAttrs::ReadWrite,
        Some("read-only") => TargetSessionAttrs::ReadOnly,
        Some(other) => {
            return Err(format!(
                "target_session_attrs={other}: not supported; use any, read-write or read-only"
            ));
        }
    };
    Ok(ConnSettings {
        hosts,
        hostaddrs,
        ports,
        user,
        dbname,
        password: get("password").cloned(),
        options: get("options").cloned(),
        application_name: get("application_name").cloned(),
        connect_timeout,
        target_session_attrs,
        ssl: ssl_settings(values, env)?,
    })
}

/// One port per host: a single port serves them all, else one each (an empty one is the default).
fn ports_for(list: Option<&str>, host_count: usize) -> Result<Vec<u16>, String> {
    let Some(list) = list else {
        return Ok(vec![DEFAULT_PORT; host_count]);
    };
    let ports = list
        .split(',')
        .map(|port| match port.trim() {
            "" => Ok(DEFAULT_PORT),
            port => port
                .parse::<u16>()
                .ok()
                .filter(|port| *port > 0)
                .ok_or_else(|| format!("port={port}: not a port number; write port=5432")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    match ports.len() {
        1 => Ok(vec![ports[0]; host_count]),
        count if count == host_count => Ok(ports),
        count => Err(format!(
            "port={list}: {count} ports for {host_count} hosts; give one port, or one per host"
        )),
    }
}

/// The sslmode and certificate files, with libpq's defaults from `~/.postgresql/`.
fn ssl_settings(
    values: &HashMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<SslSettings, String> {
    let get = |key: &str| values.get(key).filter(|value| !value.is_empty());
    let in_home = |name: &str| {
        env("HOME")
            .map(|home| PathBuf::from(home).join(".postgresql").join(name))
            .filter(|path| path.exists())
    };
    let root_cert = match get("sslrootcert").map(String::as_str) {
        Some("system") => Some(RootCert::System),
        Some(path) => Some(RootCert::File(PathBuf::from(path))),
        None => in_home("root.crt").map(RootCert::File),
    };
    let mode = match get("sslmode").map(String::as_str) {
        // libpq: the platform's roots only make sense with the host name checked.
        None if root_cert == Some(RootCert::System) => SslMode::VerifyFull,
        None | Some("prefer") => SslMode::Prefer,
        Some("disable") => SslMode::Disable,
        Some("allow") => SslMode::Allow,
        Some("require") => SslMode::Require,
        Some("verify-ca") => SslMode::VerifyCa,
        Some("verify-full") => SslMode::VerifyFull,
        Some(other) => {
            return Err(format!(
                "sslmode={other}: unknown; use disable, allow, prefer, require, verify-ca or verify-full"
            ));
        }
    };
    if root_cert == Some(RootCert::System) && mode != SslMode::VerifyFull {
        return Err(
            "sslrootcert=system: the platform's roots need the host name checked; \
             use sslmode=verify-full (or leave sslmode out)"
                .into(),
        );
    }
    let cert = get("sslcert")
        .map(PathBuf::from)
        .or_else(|| in_home("postgresql.crt"));
    let key = get("sslkey")
        .map(PathBuf::from)
        .or_else(|| in_home("postgresql.key"));
    let client_cert = match (cert, key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        (Some(cert), None) => {
            return Err(format!(
                "sslcert={}: a client certificate needs its key; add sslkey=FILE",
                cert.display()
            ));
        }
        (None, Some(key)) => {
            return Err(format!(
                "sslkey={}: a key needs its client certificate; add sslcert=FILE",
                key.display()
            ));
        }
    };
    Ok(SslSettings {
        mode,
        root_cert,
        client_cert,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str, env: &[(&str, &str)]) -> Result<ConnSettings, String> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        ConnSettings::resolve(text, &|name| env.get(name).cloned()).map(|r| r.settings)
    }

    #[test]
    fn the_string_wins_and_the_environment_fills_the_rest() {
        let env = [
            ("PGHOST", "envhost"),
            ("PGPORT", "6543"),
            ("PGUSER", "envuser"),
            ("PGDATABASE", "envdb"),
            ("PGPASSWORD", "envpw"),
            ("PGSSLMODE", "require"),
            ("PGAPPNAME", "nightly"),
            ("PGCONNECT_TIMEOUT", "9"),
            ("PGTARGETSESSIONATTRS", "read-write"),
        ];
        let settings = resolve("postgres://app@db.example/shop", &env).unwrap();
        assert_eq!(settings.hosts, ["db.example"]);
        assert_eq!(settings.ports, [6543]);
        assert_eq!(settings.user, "app");
        assert_eq!(settings.dbname, "shop");
        assert_eq!(settings.password.as_deref(), Some("envpw"));
        assert_eq!(settings.ssl.mode, SslMode::Require);
        assert_eq!(settings.application_name.as_deref(), Some("nightly"));
        assert_eq!(settings.connect_timeout, Duration::from_secs(9));
        assert_eq!(settings.target_session_attrs, TargetSessionAttrs::ReadWrite);

        let settings = resolve("postgres://", &env).unwrap();
        assert_eq!(settings.hosts, ["envhost"]);
        assert_eq!(settings.user, "envuser");
        assert_eq!(settings.dbname, "envdb");

        let settings = resolve("host=h sslmode=disable password=own", &env).unwrap();
        assert_eq!(settings.hosts, ["h"]);
        assert_eq!(settings.ssl.mode, SslMode::Disable);
        assert_eq!(settings.password.as_deref(), Some("own"));
    }

    #[test]
    fn defaults_are_libpqs() {
        let settings = resolve("", &[("USER", "me")]).unwrap();
        assert_eq!(settings.hosts, [DEFAULT_SOCKET_DIR]);
        assert_eq!(settings.ports, [5432]);
        assert_eq!(settings.user, "me");
        assert_eq!(settings.dbname, "me");
        assert_eq!(settings.ssl.mode, SslMode::Prefer);
        assert_eq!(settings.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(
            resolve("", &[]).unwrap_err(),
            "no user name; add user=NAME (or set PGUSER)"
        );
    }

    #[test]
    fn several_hosts_get_one_port_each() {
        let settings = resolve("postgres://u@h1:5433,h2,[::1]:5435/db", &[]).unwrap();
        assert_eq!(settings.hosts, ["h1", "h2", "::1"]);
        assert_eq!(settings.ports, [5433, 5432, 5435]);
        let settings = resolve("host=a,b port=7 user=u", &[]).unwrap();
        assert_eq!(settings.ports, [7, 7]);
        let err = resolve("host=a,b,c port=1,2 user=u", &[]).unwrap_err();
        assert!(err.contains("2 ports for 3 hosts"), "{err}");
        let config = resolve("host=a,b port=1,2 user=u", &[])
            .unwrap()
            .tokio_config();
        assert_eq!(config.get_ports(), [1, 2]);
        assert_eq!(config.get_hosts().len(), 2);
    }

    #[test]
    fn sslmode_follows_libpq() {
        let mode = |text: &str| resolve(text, &[("USER", "u")]).map(|s| s.ssl.mode);
        assert_eq!(mode("sslmode=verify-ca"), Ok(SslMode::VerifyCa));
        assert_eq!(mode("sslmode=allow"), Ok(SslMode::Allow));
        assert_eq!(mode("sslrootcert=system"), Ok(SslMode::VerifyFull));
        assert!(
            mode("sslrootcert=system sslmode=require")
                .unwrap_err()
                .contains("verify-full")
        );
        assert!(mode("sslmode=strict").unwrap_err().contains("verify-full"));
        let settings = resolve("sslcert=c.pem sslkey=k.pem", &[("USER", "u")]).unwrap();
        assert_eq!(
            settings.ssl.client_cert,
            Some((PathBuf::from("c.pem"), PathBuf::from("k.pem")))
        );
        assert!(mode("sslcert=c.pem").unwrap_err().contains("sslkey"));
    }

    #[test]
    fn a_password_never_shows_in_a_debug_print() {
        let settings = resolve("postgres://u:s3cret@h/db", &[]).unwrap();
        assert_eq!(settings.password.as_deref(), Some("s3cret"));
        assert!(!format!("{settings:?}").contains("s3cret"));
    }
}
