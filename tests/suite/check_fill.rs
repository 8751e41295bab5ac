//! Which tables `check` fills (`--fill`): by default those the new
//! migrations lock or name when first tried on the empty tables, with the
//! parents their foreign keys need; every table with `--fill all`, or when a
//! new migration changes rows of a table with a trigger; and a migration
//! that locks a table left empty gets no verdict.

use std::path::Path;

use crate::check::{check_json, migration, migrations_folder};
use crate::common::*;
use serde_json::Value;

/// customers and products, orders pointing at both, order_lines at orders
/// (one line per order), and audit, alone, whose trigger counts the
/// changes of customers.
const SCHEMA: &str = "\
CREATE TABLE customers (id bigint PRIMARY KEY, name text NOT NULL);
CREATE TABLE products (id bigint PRIMARY KEY, title text NOT NULL);
CREATE TABLE orders (
    id bigint PRIMARY KEY,
    customer_id bigint NOT NULL REFERENCES customers (id),
    product_id bigint NOT NULL REFERENCES products (id)
);
CREATE TABLE order_lines (id bigint PRIMARY KEY, order_id bigint NOT NULL UNIQUE REFERENCES orders (id));
CREATE TABLE audit (id bigint PRIMARY KEY, changes int NOT NULL DEFAULT 0);
";

/// `check --trace-only` of the schema and one new migration `new_sql`,
/// 500 rows a table, with `flags`: check.json, and the console and check.md as one text.
fn check_with(new_sql: &str, flags: &[&str]) -> (Value, String) {
    check_rows_with(new_sql, "500", flags)
}

/// [`check_with`], `rows` rows a table.
fn check_rows_with(new_sql: &str, rows: &str, flags: &[&str]) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(
        dir.path(),
        &[("0001_schema.sql", SCHEMA), ("0002_new.sql", new_sql)],
    );
    let out = dir.path().join("out");
    let assert = stallbench_command()
        .arg("check")
        .arg(&migrations)
        .args(["--new", "1", "--trace-only", "--rows", rows, "--out"])
        .arg(&out)
        .args(flags)
        .assert();
    let stdout = stdout_of(&assert);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    let check = check_json(&out);
    let check_md = std::fs::read_to_string(Path::new(&out).join("check.md")).unwrap();
    (check, format!("{stdout}\n{stderr}\n{check_md}"))
}

/// The tables filled and left empty, from check.json's phases.
fn filled(check: &Value) -> (u64, u64) {
    let phases = &check["phases"];
    (
        phases["fill_tables"].as_u64().unwrap(),
        phases["tables_left_empty"].as_u64().unwrap(),
    )
}

#[test]
fn the_fill_takes_the_tables_a_new_migration_locks_and_their_parents() {
    require_postgres();
    let _cpus = cpus_shared();

    // ADD COLUMN locks orders: its parents customers and products come
    // with it; order_lines and audit stay empty.
    let (check, text) = check_with("ALTER TABLE orders ADD COLUMN note text;\n", &[]);
    assert_eq!(filled(&check), (3, 2), "{text}");
    assert_eq!(
        migration(&check, "0002_new.sql")["verdict"],
        "flagged",
        "{text}"
    );
    assert!(
        text.contains("rows: 3 tables filled (those the new migrations lock or name, the tables their foreign keys need); 2 left empty (--fill all fills them)"),
        "{text}"
    );
    assert!(
        text.contains("500 generated rows per table in the 3 tables the new migrations lock or name and those their foreign keys need (2 others left empty: --fill all fills them)"),
        "{text}"
    );

    // More rows than a parent only the keys need gets (1,000): customers
    // and products get 1,000 each; orders a row per line (order_lines'
    // unique order_id is all its key), order_lines all it asked.
    let (check, text) = check_rows_with(
        "ALTER TABLE order_lines ADD COLUMN note text;\n",
        "5000",
        &[],
    );
    assert_eq!(filled(&check), (4, 1), "{text}");
    assert_eq!(check["phases"]["fill_key_tables"], 2, "{text}");
    assert_eq!(check["phases"]["fill_rows"], 12000, "{text}");
    assert!(
        text.contains("rows: 4 tables filled (those the new migrations lock or name, the tables their foreign keys need: 2 of these for their keys only, 1,000 rows each); 1 left empty (--fill all fills them)"),
        "{text}"
    );
    assert!(
        text.contains("5,000 generated rows per table in the 4 tables the new migrations lock or name and those their foreign keys need (2 of these with fewer, for their keys only, listed below; 1 other left empty: --fill all fills them)"),
        "{text}"
    );
    assert!(
        text.contains(
            "foreign keys only refer to their keys: customers (1,000 rows), products (1,000 rows)\n"
        ),
        "{text}"
    );
    assert_eq!(
        migration(&check, "0002_new.sql")["verdict"],
        "flagged",
        "{text}"
    );

    // --fill all: every table, as before.
    let (check, text) = check_with(
        "ALTER TABLE orders ADD COLUMN note text;\n",
        &["--fill", "all"],
    );
    assert_eq!(filled(&check), (5, 0), "{text}");

    // A delete on empty tables cascades nothing: the children come too
    // (orders and order_lines, and products for orders); an update of a
    // column no key refers to brings none.
    let (check, text) = check_with("DELETE FROM customers WHERE id < 0;\n", &[]);
    assert_eq!(filled(&check), (4, 1), "{text}");
    let (check, text) = check_with("UPDATE customers SET name = upper(name);\n", &[]);
    assert_eq!(filled(&check), (1, 4), "{text}");
}

#[test]
fn a_trigger_fills_every_table_and_a_table_left_empty_gets_no_verdict() {
    require_postgres();
    let _cpus = cpus_shared();

    // A trigger on a table whose rows a new migration changes may write
    // anywhere: every table is filled, and the report says why. (It
    // updates one row of audit: updating all of them once per row of
    // products cost the server 40 s of CPU per check.)
    let trigger = "\
CREATE FUNCTION count_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE audit SET changes = changes + 1 WHERE id = 1; RETURN NEW; END $$;
CREATE TRIGGER counted AFTER UPDATE ON products FOR EACH ROW EXECUTE FUNCTION count_change();
UPDATE products SET title = upper(title);
";
    let (check, text) = check_with(trigger, &[]);
    assert_eq!(filled(&check), (5, 0), "{text}");
    assert!(
        text.contains(
            "every table got rows: a new migration changes rows and table products has a trigger"
        ),
        "{text}"
    );

    // A branch that only rows take, naming its table out of sight: on the
    // empty tables it locks nothing of audit's, so audit stays empty; on
    // the filled ones it alters audit, and the migration gets no verdict.
    let hidden = "\
DO $$ BEGIN
  IF EXISTS (SELECT FROM customers) THEN
    EXECUTE 'ALTER TABLE au' || 'dit ADD COLUMN note text';
  END IF;
END $$;
";
    let (check, text) = check_with(hidden, &[]);
    assert_eq!(filled(&check), (1, 4), "{text}");
    let new = migration(&check, "0002_new.sql");
    assert_eq!(new["verdict"], "invalid", "{new:#}\n{text}");
    let invalid = new["invalid"].as_str().unwrap();
    assert!(
        invalid.contains("table audit holds no rows (not filled:")
            && invalid.contains("rerun with --fill all"),
        "{invalid}"
    );
}
