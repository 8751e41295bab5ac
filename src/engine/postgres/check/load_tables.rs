//! `check --load FILE.toml`: the tables a workload file's scripts name must
//! be in the database check builds from the migrations folder. A captured
//! workload names production's tables; check's database holds only what the
//! earlier migrations made, so a script on any other table would only fail
//! in every run. The names come from the capture's scanner
//! ([`crate::engine::postgres::sql_scan::resolve`]), the tables from `to_regclass`
//! under the database's search_path.

use tokio_postgres::Client;

use crate::config::WorkloadLoad;
use crate::engine::postgres::database::error_text;
use crate::engine::postgres::sql_scan as parameters;
use crate::error::Error;

/// The first table a script of `workload` names that `client`'s database
/// lacks, as an exit-2 error naming the script, the table and the fix.
pub async fn check_workload_tables(client: &Client, workload: &WorkloadLoad) -> Result<(), Error> {
    for weighted in &workload.scripts {
        for name in script_tables(weighted) {
            let row = client
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&name])
                .await
                .map_err(|err| {
                    Error::runtime(format!("looking up table {name}: {}", error_text(&err)))
                })?;
            if !row.get::<_, bool>(0) {
                return Err(missing_table(workload, &weighted.script.name, &name));
            }
        }
    }
    Ok(())
}

/// The tables the script's statements name, as written (`orders`, `app.orders`).
fn script_tables(weighted: &crate::config::WeightedScript) -> Vec<String> {
    let mut names: Vec<String> = weighted
        .script
        .sql_commands()
        .flat_map(|command| parameters::resolve(&command.sql).tables)
        .map(|table| table.name)
        .collect();
    names.sort();
    names.dedup();
    names
}

fn missing_table(workload: &WorkloadLoad, script: &str, table: &str) -> Error {
    Error::bad_input(format!(
        "{}: script {script} uses table {table}, which the migrations before the new one do \
         not make (check runs the load on its own database, built from the migrations \
         folder); remove that script from the file, or capture again with --tables naming \
         the migrations' tables",
        workload.source
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WeightedScript;

    #[test]
    fn a_scripts_tables_are_the_ones_its_statements_name() {
        let text = "\\set p1 random(1, 10)\nSELECT note FROM items i JOIN app.owners o ON o.id = i.owner WHERE i.id = :p1;\nUPDATE items SET note = 'x' WHERE id = :p1;\n";
        let script = WeightedScript {
            script: crate::script::parse("s", text).unwrap(),
            weight: 1,
            text: text.to_string(),
            source: "s".to_string(),
        };
        assert_eq!(script_tables(&script), vec!["app.owners", "items"]);
    }
}
