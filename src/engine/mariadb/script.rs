//! The load's scripts on MariaDB: pgbench's script language (`\set` with
//! its random functions, `\sleep`, `\if`), parsed by the same `script`
//! module as PostgreSQL's, each SQL command turned into a MariaDB statement
//! with a `?` for each variable, prepared once per connection.
//!
//! What has no meaning on MariaDB, or no counterpart in this client yet, is
//! refused when the workload is read (exit 2), naming the script's line:
//! `\shell`/`\setshell`, pipelines, `\gset`/`\aset`, several statements
//! joined with `\;`, and a variable inside a quoted literal (a prepared
//! statement cannot put a parameter there).

use super::wire::Param;
use crate::config::WeightedScript;
use crate::error::Error;
use crate::script::{
    self, Param as ScriptParam, Scalar, ScriptCommand, SqlCommand, SqlPiece, Value, Vars,
};

/// A `[[load.scripts]]` entry of a MariaDB workload file.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptFile {
    pub name: String,
    pub sql: String,
    /// Relative weight, as pgbench's `-f file@N`.
    #[serde(default = "one")]
    pub weight: u32,
}

fn one() -> u32 {
    1
}

/// A script ready to run on MariaDB: the parsed script, its weight and
/// its SQL commands as MariaDB statements (by the command's `number`).
#[derive(Debug, Clone)]
pub struct LoadScript {
    pub weighted: WeightedScript,
    pub statements: Vec<Statement>,
}

/// One SQL command as MariaDB runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// The text, a `?` for each variable.
    pub sql: String,
    /// What feeds each `?`, in order.
    pub params: Vec<ScriptParam>,
}

impl Statement {
    /// Whether it is prepared (it has parameters); one without runs as a
    /// plain query (`BEGIN`, `COMMIT`), which is one round trip too.
    pub fn is_prepared(&self) -> bool {
        !self.params.is_empty()
    }

    /// The values of its parameters from `vars`: an undefined variable is
    /// NULL (as pgbench sends it), text is sent as text, a boolean as 1 or 0.
    pub fn bind<'a>(&self, vars: &'a Vars) -> Vec<Param<'a>> {
        self.params
            .iter()
            .map(|param| match *param {
                ScriptParam::Value { slot } => match vars.get(slot) {
                    Some(Value::Scalar(scalar)) => scalar_value(*scalar),
                    Some(Value::Text(text)) => Param::Text(text),
                    None => Param::Null,
                },
                ScriptParam::Defined { slot } => Param::Int(i64::from(vars.get(slot).is_some())),
            })
            .collect()
    }
}

fn scalar_value(scalar: Scalar) -> Param<'static> {
    match scalar {
        Scalar::Null => Param::Null,
        Scalar::Bool(value) => Param::Int(i64::from(value)),
        Scalar::Int(value) => Param::Int(value),
        Scalar::Double(value) => Param::Double(value),
    }
}

/// The scripts of workload `workload`, parsed and checked for MariaDB.
pub fn parse_scripts(workload: &str, files: &[ScriptFile]) -> Result<Vec<LoadScript>, Error> {
    if files.is_empty() {
        return Err(Error::bad_input(format!(
            "workload {workload}: [load] has no [[load.scripts]]; add one with name and sql"
        )));
    }
    let total = files
        .iter()
        .try_fold(0u32, |total, file| total.checked_add(file.weight));
    if total.is_none_or(|total| total == 0) {
        return Err(Error::bad_input(format!(
            "workload {workload}: [[load.scripts]] weights add up to 0 or more than {}; \
             give each a weight from 1 (only their ratios matter)",
            u32::MAX
        )));
    }
    files
        .iter()
        .map(|file| {
            let source = format!("workload {workload}: [[load.scripts]] {}", file.name);
            let parsed = script::parse(&file.name, &file.sql)
                .map_err(|err| Error::bad_input(format!("{source}: {err}")))?;
            compile(WeightedScript {
                script: parsed,
                weight: file.weight,
                text: file.sql.clone(),
                source,
            })
        })
        .collect()
}

/// `weighted` as MariaDB statements, or bad input naming what cannot run.
pub fn compile(weighted: WeightedScript) -> Result<LoadScript, Error> {
    let refuse = |line: usize, what: &str, fix: &str| {
        Error::bad_input(format!(
            "{} line {line}: {what} cannot run on MariaDB; {fix}",
            weighted.source
        ))
    };
    for command in &weighted.script.commands {
        let line = command.line();
        match command {
            ScriptCommand::Shell { .. } => {
                return Err(refuse(line, "\\shell and \\setshell", "remove it"));
            }
            ScriptCommand::StartPipeline { .. }
            | ScriptCommand::SyncPipeline { .. }
            | ScriptCommand::EndPipeline { .. } => {
                return Err(refuse(
                    line,
                    "a pipeline (PostgreSQL's extended protocol)",
                    "remove \\startpipeline .. \\endpipeline",
                ));
            }
            ScriptCommand::Sql(sql) if sql.results.is_some() => {
                return Err(refuse(line, "\\gset and \\aset", "remove it"));
            }
            ScriptCommand::Sql(sql) if sql.compound => {
                return Err(refuse(
                    line,
                    "several statements joined with \\;",
                    "write each as its own statement ending in ;",
                ));
            }
            _ => {}
        }
    }
    let statements = weighted
        .script
        .sql_commands()
        .map(|sql| {
            statement_of(sql).ok_or_else(|| {
                refuse(
                    sql.line,
                    "a variable inside a quoted literal",
                    "pass the whole value as the variable (WHERE name = :name)",
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LoadScript {
        weighted,
        statements,
    })
}

/// The command with a `?` for each variable; `None` when a variable sits in
/// a quoted literal.
fn statement_of(sql: &SqlCommand) -> Option<Statement> {
    let mut text = String::with_capacity(sql.sql.len());
    let mut params = Vec::new();
    for piece in &sql.pieces {
        match piece {
            SqlPiece::Text(part) => text.push_str(part),
            SqlPiece::Variable { quoted: true, .. } | SqlPiece::Defined { quoted: true, .. } => {
                return None;
            }
            SqlPiece::Variable { slot, .. } => {
                params.push(ScriptParam::Value { slot: *slot });
                text.push('?');
            }
            SqlPiece::Defined { slot, .. } => {
                params.push(ScriptParam::Defined { slot: *slot });
                text.push('?');
            }
        }
    }
    Some(Statement { sql: text, params })
}

/// The script whose cumulative weight range holds `draw` (0..total weight).
pub fn pick(scripts: &[LoadScript], mut draw: u32) -> usize {
    for (index, script) in scripts.iter().enumerate() {
        if draw < script.weighted.weight {
            return index;
        }
        draw -= script.weighted.weight;
    }
    scripts.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, sql: &str) -> ScriptFile {
        ScriptFile {
            name: name.to_string(),
            sql: sql.to_string(),
            weight: 1,
        }
    }

    #[test]
    fn variables_become_question_marks_one_per_use() {
        let scripts = parse_scripts(
            "w",
            &[file(
                "move",
                "\\set id random(1, 100)\n\\set d random(-5, 5)\n\
                 BEGIN;\nUPDATE t SET n = n + :d WHERE id = :id;\n\
                 SELECT n FROM t WHERE id = :id AND :{?d};\nCOMMIT;\n",
            )],
        )
        .unwrap();
        let statements = &scripts[0].statements;
        assert_eq!(statements.len(), 4);
        assert_eq!(statements[0].sql, "BEGIN");
        assert!(!statements[0].is_prepared());
        assert_eq!(statements[1].sql, "UPDATE t SET n = n + ? WHERE id = ?");
        assert_eq!(statements[2].sql, "SELECT n FROM t WHERE id = ? AND ?");
        assert!(matches!(
            statements[2].params[1],
            ScriptParam::Defined { .. }
        ));
        let script = &scripts[0].weighted.script;
        let mut vars = script.new_vars(
            script::Automatic {
                client_id: 0,
                default_seed: 1,
                random_seed: 1,
            },
            &[],
        );
        let id = script.variable_slot("id").unwrap();
        vars.set(id, Value::int(42));
        // d is not set yet: NULL, as pgbench sends it.
        assert_eq!(statements[1].bind(&vars), [Param::Null, Param::Int(42)]);
        // :{?d} is whether d is set.
        assert_eq!(statements[2].bind(&vars), [Param::Int(42), Param::Int(0)]);
    }

    #[test]
    fn what_mariadb_cannot_run_is_refused_with_its_line() {
        let cases = [
            ("\\shell true\nSELECT 1;", "line 1: \\shell and \\setshell"),
            ("SELECT 1 \\gset", "line 1: \\gset and \\aset"),
            ("SELECT 1 \\; SELECT 2;", "line 1: several statements"),
            (
                "\\startpipeline\nSELECT 1;\n\\endpipeline",
                "line 1: a pipeline",
            ),
            (
                "\\set n 1\nSELECT ':n';",
                "line 2: a variable inside a quoted literal",
            ),
        ];
        for (sql, expected) in cases {
            let err = parse_scripts("w", &[file("s", sql)])
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{sql}: {err}");
            assert!(err.contains("workload w: [[load.scripts]] s"), "{err}");
        }
    }

    #[test]
    fn weights_pick_scripts_in_proportion() {
        let mut files = vec![file("a", "SELECT 1;"), file("b", "SELECT 2;")];
        files[0].weight = 3;
        let scripts = parse_scripts("w", &files).unwrap();
        let picks: Vec<usize> = (0..4).map(|draw| pick(&scripts, draw)).collect();
        assert_eq!(picks, [0, 0, 0, 1]);
        files[0].weight = 0;
        files[1].weight = 0;
        assert!(parse_scripts("w", &files).is_err());
        assert!(parse_scripts("w", &[]).is_err());
    }
}
