//! Storing query results into variables, as `\gset` and `\aset` do in
//! pgbench: `\gset` takes the last query's one and only row, `\aset` the last
//! row of every query that returned one; each column becomes a variable named
//! prefix + column name, holding the value's text (NULL is empty text).

use super::eval::EvalError;
use super::meta::is_valid_variable_name;
use super::value::Vars;
use super::{ResultTarget, Script};

/// What one query of an SQL command returned, as far as `\gset`/`\aset` need it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResultSet {
    /// The column names; `None` for a command that returns no rows (UPDATE, ...).
    pub columns: Option<Vec<String>>,
    /// How many rows came.
    pub rows: usize,
    /// The last row's values (`None`: SQL NULL).
    pub last_row: Vec<Option<String>>,
}

impl Script {
    /// Stores the results of an SQL command with a `\gset`/`\aset` target.
    pub fn store_results(
        &self,
        target: &ResultTarget,
        results: &[ResultSet],
        vars: &mut Vars,
    ) -> Result<(), EvalError> {
        if !target.all_queries {
            let last = results.last().cloned().unwrap_or_default();
            if last.columns.is_none() || last.rows != 1 {
                return Err(EvalError::GsetRows { rows: last.rows });
            }
            return self.store_row(&target.prefix, &last, vars);
        }
        for result in results {
            if result.columns.is_some() && result.rows > 0 {
                self.store_row(&target.prefix, result, vars)?;
            }
        }
        Ok(())
    }

    /// One row's columns into variables; a column no command reads is only checked.
    fn store_row(
        &self,
        prefix: &str,
        result: &ResultSet,
        vars: &mut Vars,
    ) -> Result<(), EvalError> {
        let columns = result.columns.as_deref().unwrap_or_default();
        let mut name = String::new();
        for (column, value) in columns.iter().zip(&result.last_row) {
            name.clear();
            name.push_str(prefix);
            name.push_str(column);
            if !is_valid_variable_name(&name) {
                return Err(EvalError::BadColumnName { name });
            }
            if let Some(slot) = self.variable_slot(&name) {
                vars.set_text(slot, value.as_deref().unwrap_or(""));
            }
        }
        Ok(())
    }
}
