//! What both engines do alike while they run a script, around the script's
//! one interpreter ([`Script::step`], which runs `\set` and the `\if` family
//! and works out a `\sleep`'s pause): a step's failure as the transaction's
//! outcome, `\shell`/`\setshell`, storing `\gset`/`\aset` rows, and a SQL
//! command's parameters as text. Only sending the statement differs (the lean
//! connection or the pool's tokio-postgres client), and pipelines, which only
//! the lean connections run.

use super::txn::TxnOutcome;
use crate::script::{self, Cursor, Prng, ResultSet, Script, SqlCommand, Step, Value, Vars};

/// The transaction's next step that needs the engine ([`Script::step`]); a
/// failure is the script's, with its place.
#[inline]
pub fn next_step<'s>(
    script: &'s Script,
    cursor: &mut Cursor,
    vars: &mut Vars,
    prng: &mut Prng,
) -> Result<Step<'s>, TxnOutcome> {
    script
        .step(cursor, vars, prng)
        .map_err(|failure| TxnOutcome::script_failed(script, &failure))
}

/// Runs a `\shell` or `\setshell` command line (from [`Step::Shell`]); the
/// integer a `\setshell` reads goes into its variable.
pub async fn run_shell(
    script: &Script,
    command: &str,
    assign: Option<usize>,
    line: usize,
    vars: &mut Vars,
) -> Result<(), TxnOutcome> {
    match script::shell::run(command, assign.is_some()).await {
        Ok(value) => {
            if let (Some(slot), Some(value)) = (assign, value) {
                vars.set(slot, Value::int(value));
            }
            Ok(())
        }
        Err(error) => Err(TxnOutcome::script_failed(
            script,
            &script::ScriptFailure { line, error },
        )),
    }
}

/// Stores the rows of `sql`'s answer in variables, as its `\gset`/`\aset` says.
pub fn store_results(
    script: &Script,
    sql: &SqlCommand,
    results: &[ResultSet],
    vars: &mut Vars,
) -> Result<(), TxnOutcome> {
    let Some(target) = &sql.results else {
        return Ok(());
    };
    script
        .store_results(target, results, vars)
        .map_err(|error| {
            let failure = script::ScriptFailure {
                line: sql.line,
                error,
            };
            TxnOutcome::script_failed(script, &failure)
        })
}

/// A SQL command's parameters as text, reused from one statement to the next.
#[derive(Debug, Default)]
pub struct Params {
    /// The text of each parameter: `texts[n]` feeds `$(n + 1)`.
    texts: Vec<String>,
    /// The parameters that are SQL NULL (an undefined variable, as pgbench
    /// sends it); their text is empty.
    nulls: Vec<usize>,
}

impl Params {
    /// Writes the parameters of `sql` from `vars`, reusing the strings; true
    /// when none of them is NULL.
    #[inline]
    pub fn write(&mut self, sql: &SqlCommand, vars: &Vars) -> bool {
        self.texts.resize_with(sql.params.len(), String::new);
        self.nulls.clear();
        for (index, text) in self.texts.iter_mut().enumerate() {
            if !sql.write_param(index, vars, text) {
                self.nulls.push(index);
            }
        }
        self.nulls.is_empty()
    }

    /// The texts, when no parameter is NULL (see [`Params::write`]).
    pub fn texts(&self) -> &[String] {
        &self.texts
    }

    /// Each parameter's text, `None` for NULL.
    pub fn values(&self) -> impl ExactSizeIterator<Item = Option<&str>> + Clone {
        self.texts
            .iter()
            .enumerate()
            .map(|(index, text)| (!self.nulls.contains(&index)).then_some(text.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undefined_variable_is_a_null_parameter() {
        let script = script::parse("test", "SELECT :{?b}, :a, :b;\n").expect("the script parses");
        let sql = script.sql_commands().next().unwrap();
        let mut vars = script.new_vars(
            script::Automatic {
                client_id: 0,
                default_seed: 1,
                random_seed: 2,
            },
            &[("a".to_string(), "7".to_string())],
        );
        let mut params = Params::default();
        assert!(!params.write(sql, &vars));
        assert_eq!(
            params.values().collect::<Vec<_>>(),
            [Some("false"), Some("7"), None]
        );
        let b = script.variable_slot("b").unwrap();
        vars.set(b, Value::int(3));
        assert!(params.write(sql, &vars));
        assert_eq!(params.texts(), ["true", "7", "3"]);
    }
}
