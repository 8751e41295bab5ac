//! What a run may touch on its target. By default only a schema of the
//! harness's own, which is safe on any server; with `--in-place` the objects
//! already there, with the DDL rolled back unless `--apply`. The flags are
//! checked together here, so a run that would touch more than was asked never
//! starts. (Whether each DDL step can be rolled back depends on the server's
//! version: `strategy::statements::check_rollback` checks that once connected.)

use crate::cli::CommonArgs;
use crate::error::Error;

use super::Target;

/// Whose objects a run uses, and whether its DDL stays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Objects {
    /// The default: the harness's own schema, made by the setup SQL, set as
    /// `search_path` and dropped at the end.
    OwnSchema,
    /// `--in-place`: the objects that exist on the target; no setup, the
    /// connection's own `search_path`, nothing dropped.
    InPlace {
        /// `--apply`: each DDL step commits; otherwise it is rolled back once it finished.
        apply: bool,
    },
}

impl Objects {
    /// True for `--in-place`.
    pub fn in_place(self) -> bool {
        matches!(self, Objects::InPlace { .. })
    }

    /// True when each DDL step is rolled back (`--in-place` without `--apply`).
    pub fn rolls_back_ddl(self) -> bool {
        self == Objects::InPlace { apply: false }
    }
}

/// `--in-place` and `--apply`, checked against the target, the number of
/// strategies and the workload's reset SQL.
pub(super) fn parse_objects(
    args: &CommonArgs,
    target: &Target,
    strategy_count: usize,
    reset_sql: &str,
    source: &str,
) -> Result<Objects, Error> {
    if args.apply && !args.in_place {
        return Err(Error::bad_input(
            "--apply needs --in-place: without it the DDL runs in stallbench's own schema, \
             which is dropped at the end anyway; add --in-place to apply it to your tables",
        ));
    }
    if !args.in_place {
        return Ok(Objects::OwnSchema);
    }
    if let Target::Throwaway { .. } = target {
        return Err(Error::bad_input(
            "--in-place needs --db-url (or DATABASE_URL): the throwaway server has no tables \
             of yours to use; point --db-url at your server, or drop --in-place to run the \
             workload's setup in stallbench's own schema",
        ));
    }
    if args.apply && strategy_count > 1 && reset_sql.trim().is_empty() {
        return Err(Error::bad_input(format!(
            "--apply commits the DDL of each of the {strategy_count} strategies, and {source} \
             has no reset SQL, so every strategy after the first would meet the table the one \
             before changed; add reset = \"...\" undoing the migration, run one strategy, or \
             drop --apply (the DDL is then rolled back after each step)"
        )));
    }
    Ok(Objects::InPlace { apply: args.apply })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(in_place: bool, apply: bool) -> CommonArgs {
        use clap::Parser;
        let mut line = vec!["stallbench", "compare"];
        if in_place {
            line.push("--in-place");
        }
        if apply {
            line.push("--apply");
        }
        match crate::cli::Cli::parse_from(line).command {
            crate::cli::Command::Compare { common, .. } => common,
            _ => unreachable!("a compare command line"),
        }
    }

    fn url() -> Target {
        Target::Url("postgres://app@db/shop".into())
    }

    fn throwaway() -> Target {
        Target::Throwaway {
            server: crate::server::ServerRequest {
                pg_bin: None,
                major: None,
                offline: true,
                registry: String::new(),
                cache_home: None,
            },
        }
    }

    #[test]
    fn the_default_is_the_own_schema_and_in_place_rolls_back() {
        let parse = |args: &CommonArgs, target: &Target| parse_objects(args, target, 2, "", "w");
        assert_eq!(
            parse(&args(false, false), &throwaway()).unwrap(),
            Objects::OwnSchema
        );
        let in_place = parse(&args(true, false), &url()).unwrap();
        assert!(in_place.in_place() && in_place.rolls_back_ddl());
        let applied = parse_objects(&args(true, true), &url(), 1, "", "w").unwrap();
        assert!(applied.in_place() && !applied.rolls_back_ddl());
    }

    #[test]
    fn in_place_and_apply_are_refused_where_they_would_mislead() {
        let message = |args: CommonArgs, target: Target, reset: &str| {
            let err = parse_objects(&args, &target, 2, reset, "workload w").unwrap_err();
            assert_eq!(err.exit_code(), 2);
            err.to_string()
        };
        let text = message(args(true, false), throwaway(), "");
        assert!(
            text.contains("the throwaway server has no tables of yours"),
            "{text}"
        );
        let text = message(args(false, true), url(), "");
        assert!(text.contains("--apply needs --in-place"), "{text}");
        let text = message(args(true, true), url(), " ");
        assert!(text.contains("workload w has no reset SQL"), "{text}");
        assert!(
            parse_objects(
                &args(true, true),
                &url(),
                2,
                "ALTER TABLE t DROP COLUMN c",
                "w"
            )
            .is_ok()
        );
    }
}
