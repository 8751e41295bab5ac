//! What a run may touch on its database. By default only a schema of the
//! harness's own, which is safe on any server; with `--in-place` the objects
//! already there, with the DDL rolled back unless `--apply`, and no row
//! written by the load unless `--allow-writes`. The flags are checked
//! together here, with the statements of the load and the blocker, so a run
//! that would touch more than was asked never starts. (Whether each DDL step
//! can be rolled back depends on the server's version:
//! `strategy::statements::check_rollback` checks that once connected.)

use crate::cli::CommonArgs;
use crate::error::Error;
use crate::role::{StatementEffect, statement_effect};
use crate::script::{ScriptCommand, SqlCommand};
use crate::strategy::statements::{column_type_changes, last_part, statement_words};

use super::{BlockerConfig, DatabaseSpec, WeightedScript};

/// Whose objects a run uses, and whether its DDL stays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Objects {
    /// The default: the harness's own schema, made by the setup SQL, set as
    /// `search_path` and dropped at the end.
    OwnSchema,
    /// `check`'s: a database of the harness's own on its own throwaway
    /// server, used as the project's migrations use one (its schemas,
    /// `public` included, and the server's `search_path`); no schema made,
    /// nothing dropped: the check drops the database's copies itself.
    OwnDatabase,
    /// `--in-place`: the objects that exist on the database; no setup, the
    /// connection's own `search_path`, nothing dropped.
    InPlace {
        /// `--apply`: each DDL step commits; otherwise it is rolled back once it finished.
        apply: bool,
        /// `--allow-writes`: the load (and the blocker) may write rows, which
        /// stay; the rows written are counted per table.
        allow_writes: bool,
    },
}

impl Objects {
    /// True when the run works in the harness's own schema (`search_path`
    /// set to it, the schema made and dropped, an advisory lock held on it).
    pub fn own_schema(self) -> bool {
        matches!(self, Objects::OwnSchema)
    }

    /// True when the objects are the harness's own (its schema, or `check`'s
    /// database), so a trace may run a migration for real and undo it.
    pub fn owned(self) -> bool {
        matches!(self, Objects::OwnSchema | Objects::OwnDatabase)
    }

    /// True for `--in-place`.
    pub fn in_place(self) -> bool {
        matches!(self, Objects::InPlace { .. })
    }

    /// True when each DDL step is rolled back (`--in-place` without `--apply`).
    pub fn rolls_back_ddl(self) -> bool {
        matches!(self, Objects::InPlace { apply: false, .. })
    }

    /// True when the load may write the user's rows (`--in-place --allow-writes`):
    /// the rows each strategy's run wrote are counted then.
    pub fn counts_writes(self) -> bool {
        matches!(
            self,
            Objects::InPlace {
                allow_writes: true,
                ..
            }
        )
    }
}

/// `--in-place` and `--apply`, checked against the database, the number of
/// strategies and the workload's reset SQL.
pub(super) fn parse_objects(
    args: &CommonArgs,
    database: &DatabaseSpec,
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
    if args.allow_writes && !args.in_place {
        return Err(Error::bad_input(
            "--allow-writes needs --in-place: without it the load writes only the tables of \
             stallbench's own schema, which is dropped at the end; add --in-place to run the load \
             on your tables",
        ));
    }
    if !args.in_place {
        return Ok(Objects::OwnSchema);
    }
    if let DatabaseSpec::Throwaway { .. } = database {
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
    Ok(Objects::InPlace {
        apply: args.apply,
        allow_writes: args.allow_writes,
    })
}

/// Refuses an `--in-place` run whose load scripts or blocker write rows (or
/// may: a statement whose effect the words do not tell), unless
/// `--allow-writes`: the user's rows would change and nothing would roll
/// them back. `SELECT ... FOR UPDATE` and `LOCK TABLE` change no row.
pub(super) fn check_in_place_writes(
    objects: Objects,
    scripts: &[WeightedScript],
    blocker: Option<&BlockerConfig>,
) -> Result<(), Error> {
    if !objects.in_place() || objects.counts_writes() {
        return Ok(());
    }
    const FIX: &str = "add --allow-writes to let it (the rows it writes stay, and are counted \
                       per table), or make it read only";
    let writes = |sql: &str| {
        let effect = statement_effect(sql);
        effect.may_write().then_some(match effect {
            StatementEffect::Unknown => "may write rows (stallbench cannot tell what it does)",
            _ => "writes rows",
        })
    };
    for weighted in scripts {
        for command in &weighted.script.commands {
            let ScriptCommand::Sql(SqlCommand { sql, line, .. }) = command else {
                continue;
            };
            // A `\;` compound holds several statements: each one is judged.
            if let Some(what) = sql.split(';').find_map(writes) {
                return Err(Error::bad_input(format!(
                    "{} line {line}: \"{}\" {what}, and --in-place runs the load on your tables; \
                     {FIX}",
                    weighted.source,
                    one_line(sql)
                )));
            }
        }
    }
    if let Some(blocker) = blocker
        && let Some(what) = writes(&blocker.sql)
    {
        return Err(Error::bad_input(format!(
            "the blocker's \"{}\" {what}, and --in-place runs it on your tables, where it \
             commits; {FIX}",
            one_line(&blocker.sql)
        )));
    }
    Ok(())
}

/// What rolling each DDL step back cannot show (`--in-place` without
/// `--apply`), one line per case: a column type change under a load statement
/// that reads the column, prepared as the load's statements are, fails with
/// `0A000 cached plan must not change result type` once the change commits,
/// which a rolled-back change never does.
pub fn rollback_blind_spots(config: &super::Config) -> Vec<String> {
    let Some(ddl) = config
        .ddl
        .as_ref()
        .filter(|_| config.objects.rolls_back_ddl())
    else {
        return Vec::new();
    };
    let mut steps: Vec<&String> = ddl.steps.iter().collect();
    for strategy in &config.strategies {
        steps.extend(strategy.ddl_steps.iter().flatten());
    }
    let mut lines = Vec::new();
    for step in steps {
        for (table, column) in column_type_changes(step) {
            let Some((script, line)) = first_reader(&config.load.scripts, &table, &column) else {
                continue;
            };
            let line = format!(
                "note: --in-place rolls each DDL step back, so it cannot show what only a \
                 committed change causes: \"{}\" changes the type of {}.{}, which {script} line \
                 {line} reads with a prepared statement; if that changes the statement's result \
                 type, it fails with 0A000 cached plan must not change result type once the \
                 change commits (--apply shows it)",
                one_line(step),
                table.to_lowercase(),
                column.to_lowercase()
            );
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
    }
    lines
}

/// The first load statement (its script and line) that names `table` and
/// reads `column` (by name, or with `*`), names upper-cased.
fn first_reader(scripts: &[WeightedScript], table: &str, column: &str) -> Option<(String, usize)> {
    scripts.iter().find_map(|weighted| {
        weighted.script.commands.iter().find_map(|command| {
            let ScriptCommand::Sql(SqlCommand { sql, line, .. }) = command else {
                return None;
            };
            let words: Vec<String> = statement_words(sql).into_iter().flatten().collect();
            let names = |wanted: &str| words.iter().any(|word| last_part(word) == wanted);
            let star = sql.replace("(*)", "").contains('*');
            (names(table) && (names(column) || star)).then(|| (weighted.source.clone(), *line))
        })
    })
}

/// `sql` on one line, its whitespace runs as single spaces.
fn one_line(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_that_writes_is_refused_in_place_unless_allowed() {
        use crate::config::BlockerKind;
        let script = |text: &str| WeightedScript {
            script: crate::script::parse("workload w: [[load.scripts]] events", text).unwrap(),
            weight: 1,
            text: text.to_string(),
            source: "workload w: [[load.scripts]] events".to_string(),
        };
        let reads = script("SELECT count(*) FROM events;\n");
        let locks = script("BEGIN;\nSELECT * FROM events WHERE id = 1 FOR UPDATE;\nCOMMIT;\n");
        let writes = script("\\set k random(1, 3)\nINSERT INTO events (kind)\n  VALUES (:k);\n");
        let rollback = Objects::InPlace {
            apply: false,
            allow_writes: false,
        };
        let check = |objects, scripts: &[WeightedScript], blocker| {
            check_in_place_writes(objects, scripts, blocker)
        };
        assert!(check(rollback, &[reads.clone(), locks.clone()], None).is_ok());
        let error = check(rollback, &[reads.clone(), writes.clone()], None).unwrap_err();
        assert_eq!(error.exit_code(), 2);
        assert_eq!(
            error.to_string(),
            "workload w: [[load.scripts]] events line 2: \"INSERT INTO events (kind) VALUES ($1)\" \
             writes rows, and --in-place runs the load on your tables; add --allow-writes to let \
             it (the rows it writes stay, and are counted per table), or make it read only"
        );
        let allowed = Objects::InPlace {
            apply: false,
            allow_writes: true,
        };
        assert!(check(allowed, std::slice::from_ref(&writes), None).is_ok());
        assert!(check(Objects::OwnSchema, &[writes], None).is_ok());
        let writer = BlockerConfig {
            kind: BlockerKind::Writer,
            at: std::time::Duration::from_secs(1),
            hold: std::time::Duration::from_secs(2),
            sql: "UPDATE events SET kind = kind WHERE id = 1".to_string(),
            source: "--blocker".to_string(),
        };
        let error = check(rollback, &[reads], Some(&writer)).unwrap_err();
        assert!(
            error.to_string().starts_with(
                "the blocker's \"UPDATE events SET kind = kind WHERE id = 1\" writes rows"
            ),
            "{error}"
        );
        let call = script("CALL refresh_totals();\n");
        assert!(
            check(rollback, &[call], None)
                .unwrap_err()
                .to_string()
                .contains("may write rows (stallbench cannot tell what it does)")
        );
    }

    #[test]
    fn a_type_change_under_a_prepared_read_of_its_column_is_named_in_rollback_mode() {
        let mut flags = args(true, false);
        flags.db_url = Some("postgres://app@db/shop".to_string());
        flags.workload.ddl =
            vec!["ALTER TABLE orders ALTER COLUMN total TYPE numeric(20,2)".into()];
        let compare = crate::config::Mode::Compare {
            strategies: Vec::new(),
        };
        let config = super::super::Config::new(None, compare.clone(), &flags).unwrap();
        assert_eq!(
            rollback_blind_spots(&config),
            [
                "note: --in-place rolls each DDL step back, so it cannot show what only a committed \
              change causes: \"ALTER TABLE orders ALTER COLUMN total TYPE numeric(20,2)\" changes \
              the type of orders.total, which workload add-column (bundled): [[load.scripts]] read-order \
              line 2 reads with a prepared statement; if that changes the statement's result \
              type, it fails with 0A000 cached plan must not change result type once the change \
              commits (--apply shows it)"
            ]
        );
        // A column the load does not read, or an applied change: nothing to say.
        flags.workload.ddl = vec!["ALTER TABLE orders ALTER COLUMN id TYPE bigint".into()];
        let config = super::super::Config::new(None, compare.clone(), &flags).unwrap();
        assert!(rollback_blind_spots(&config).is_empty());
        flags.workload.ddl =
            vec!["ALTER TABLE orders ALTER COLUMN total TYPE numeric(20,2)".into()];
        flags.apply = true;
        let config = super::super::Config::new(None, compare, &flags).unwrap();
        assert!(rollback_blind_spots(&config).is_empty());
    }

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

    fn url() -> DatabaseSpec {
        DatabaseSpec::Url("postgres://app@db/shop".into())
    }

    fn throwaway() -> DatabaseSpec {
        DatabaseSpec::Throwaway {
            server: crate::engine::postgres::server::ServerRequest {
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
        let parse =
            |args: &CommonArgs, database: &DatabaseSpec| parse_objects(args, database, 2, "", "w");
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
        let message = |args: CommonArgs, database: DatabaseSpec, reset: &str| {
            let err = parse_objects(&args, &database, 2, reset, "workload w").unwrap_err();
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
