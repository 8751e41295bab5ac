//! The SQL a fill writes besides its `COPY`: a parent's rows numbered in
//! key order, a self-reference set after the rows, a sequence moved past
//! the client's keys, and the quoting of names and values.

use super::catalog::{CatalogTable, ForeignKey};

/// `(SELECT key columns, row_number() ... FROM parent WHERE key set)`.
fn numbered_rows(table_sql: &str, columns: &[String]) -> String {
    let quoted: Vec<String> = columns.iter().map(|column| quote_ident(column)).collect();
    let set: Vec<String> = quoted
        .iter()
        .map(|column| format!("{column} IS NOT NULL"))
        .collect();
    format!(
        "(SELECT {columns}, row_number() OVER (ORDER BY {columns}) AS stallbench_row \
         FROM {table_sql} WHERE {set})",
        columns = quoted.join(", "),
        set = set.join(" AND ")
    )
}

/// Sets a nullable self-reference of each row to the row whose number is half its own.
pub(super) fn self_reference_update(table: &CatalogTable, key: &ForeignKey) -> String {
    let rows = numbered_rows(&table.sql_name, &key.parent_columns);
    let assignments: Vec<String> = key
        .columns
        .iter()
        .zip(&key.parent_columns)
        .filter_map(|(attnum, referenced)| {
            let column = table
                .columns
                .iter()
                .find(|column| column.attnum == *attnum)?;
            Some(format!(
                "{} = parent.{}",
                quote_ident(&column.name),
                quote_ident(referenced)
            ))
        })
        .collect();
    let matches: Vec<String> = key
        .parent_columns
        .iter()
        .map(|referenced| {
            let referenced = quote_ident(referenced);
            format!("child.{referenced} = me.{referenced}")
        })
        .collect();
    format!(
        "UPDATE {} AS child SET {}\nFROM {rows} AS me\n\
         JOIN {rows} AS parent ON parent.stallbench_row = me.stallbench_row / 2\nWHERE {}",
        table.sql_name,
        assignments.join(", "),
        matches.join(" AND ")
    )
}

/// Moves `sequence` past `last`, the largest value the rows took from the
/// client (no scan for it: the table's keys are not built yet): never back
/// (should another table's default share it), never below its MINVALUE (a
/// sequence that starts higher), and not at all when it counts down (its
/// values cannot meet the rows' positive ones).
pub(super) fn setval_sql(sequence: &str, last: u64) -> String {
    let sequence = literal(sequence);
    format!(
        "SELECT setval({sequence}, GREATEST({last}, pg_sequence_last_value({sequence}), s.seqmin)) \
         FROM pg_sequence s WHERE s.seqrelid = {sequence}::regclass AND s.seqincrement > 0"
    )
}

/// `value` as an SQL string literal.
fn literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// `name` as an SQL identifier, always quoted.
pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
